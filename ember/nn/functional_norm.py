"""Normalisation functions of nn.functional: batch, layer, group, instance, RMS and local
response norm. Each is a composition of ember ops (autograd gives the derivative); running
statistics are updated in place under no_grad, as PyTorch does.

    y = F.layer_norm(x, (64,), weight, bias)
    y = F.batch_norm(x, running_mean, running_var, training=True, momentum=0.1)
"""
import numpy as np
from numpy import ndarray

from ..autograd.grad_mode import no_grad, state
from ..core import dtype as D
from ..core.tensor import channels_last, channels_last_3d
from ..core.tensor import Tensor
from ..dispatch import wrap
from ..ops.native_pointwise import channel_affine as _channel_affine
from ..ops.creation import zeros as _zeros
from ..ops.joining import cat
# layer_norm and rms_norm are composite ops, defined once in ember/ops (each an OpDef with its
# decomposition and, for layer_norm, the fast path and its fused kernels)
from ..ops.nn_norm_ops import layer_norm, rms_norm  # noqa: F401
from ..ops.nn_norm_ops import _ln_forward_kernel, _ln_dx_kernel, _ln_dweight_kernel  # noqa: F401

_FLOATS = (D.float32, D.float64)

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm"]


def _channel_shape(input):
    """Shape that broadcasts a per-channel (dim 1) vector against `input`."""
    return (1, -1) + (1,) * (input.dim() - 2)


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update_running(running, stat, momentum):
    """``running = (1 - momentum) * running + momentum * stat`` in place, outside autograd."""
    with no_grad():
        running.mul_(1 - momentum).add_(stat.detach().to(running.dtype) * momentum)


# ---- eval-mode batch_norm ----------------------------------------------------------------
# With running statistics the op is a per-channel affine map, as torch's CPU kernel computes
# it: alpha = weight / sqrt(var + eps), beta = bias - mean * alpha (C-length vectors), then
# out = x * alpha + beta: one pass of a C kernel (ember/ops/native_pointwise.py, NumPy's bits)
# or two NumPy passes, instead of the composition's ~5. When autograd
# must record, it runs as (x - mean) * alpha + bias in ember ops (three passes), so that the
# weight's gradient is sum(g * (x - mean)) * invstd, torch's form, not a difference of two
# large sums. Anything unusual (a dispatch mode, meta tensors, mixed dtypes, wrong sizes)
# takes the composition below.
_CL_PERM = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}     # NCHW -> NHWC, NCDHW -> NDHWC
_CL_INV = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}


def _strides_like_channels_last(a):
    """torch's test of strides ordered as channels_last (C fastest, then W, H, (D,) N),
    ambiguous cases counting as contiguous; its output then is channels_last."""
    order = (1,) + tuple(range(a.ndim - 1, 1, -1)) + (0,)
    st, low = a.strides, 0
    if st[1] == 0:
        return False
    for d in order:
        if a.shape[d] == 0 or st[d] < low or (d == 0 and low == st[1]):
            return False
        low = st[d] * max(a.shape[d], 1)
    return True


def _bn_channels_last(a):
    """Whether torch gives batch_norm's output of input array `a` the channels_last layout
    (else it is contiguous): a C-contiguous input stays so, one with channels_last-like
    strides (a channels_last tensor, a slice of one, a permutation that is channels_last
    once its size-1 dims are ignored) gets channels_last, anything else
    (a transposed or permuted input) contiguous."""
    if a.ndim not in _CL_PERM or a.flags.c_contiguous:
        return False
    # (NumPy's flags ignore the strides of size-1 dims, as torch's is_contiguous does)
    return a.transpose(_CL_PERM[a.ndim]).flags.c_contiguous or _strides_like_channels_last(a)


def _bn_eval_ok(input, stats):
    if state.modes or not isinstance(input, Tensor):
        return False
    a = input._data
    if type(a) is not ndarray or a.ndim < 2 or not a.size or input.dtype not in _FLOATS:
        return False
    c = a.shape[1]
    for t in stats:
        if t is not None and (not isinstance(t, Tensor) or t.dtype is not input.dtype
                              or type(t._data) is not ndarray or t._data.shape != (c,)):
            return False
    return True


def _batch_norm_eval(input, running_mean, running_var, weight, bias, eps):
    """Eval-mode batch_norm, or None when the composition must run."""
    stats = (running_mean, running_var, weight, bias)
    if not _bn_eval_ok(input, stats):
        return None
    a = input._data
    cl = _bn_channels_last(a)
    if state.enabled and any(t is not None and t._requires_grad for t in (input,) + stats):
        return _batch_norm_eval_graph(input, running_mean, running_var, weight, bias, eps, cl)
    npdt = input.dtype.np
    alpha = 1 / np.sqrt(running_var._data + npdt.type(eps))
    if weight is not None:
        alpha *= weight._data
    beta = -running_mean._data * alpha
    if bias is not None:
        beta += bias._data
    if cl:
        # computed in the NHWC view, where alpha and beta broadcast along the fastest axis
        perm = _CL_PERM[a.ndim]
        at = a.transpose(perm)
        buf = np.empty(at.shape, npdt)
        if not (at.flags.c_contiguous and _channel_affine(at.reshape(-1, a.shape[1], 1), alpha,
                                                          beta, buf.reshape(-1, a.shape[1], 1))
                is not None):
            np.multiply(at, alpha, out=buf)
            np.add(buf, beta, out=buf)
        out = buf.transpose(_CL_INV[a.ndim])
    else:
        out = np.empty(a.shape, npdt)
        c = a.shape[1]
        if not (a.flags.c_contiguous and _channel_affine(a.reshape(a.shape[0], c, -1), alpha,
                                                         beta, out.reshape(a.shape[0], c, -1))
                is not None):
            shape = (-1,) + (1,) * (a.ndim - 2)
            np.multiply(a, alpha.reshape(shape), out=out)
            np.add(out, beta.reshape(shape), out=out)
    return wrap(out, input.dtype)


def _batch_norm_eval_graph(input, running_mean, running_var, weight, bias, eps, cl):
    """The recorded form, in ember ops, with the output layout of the NumPy path."""
    shape = (-1,) + (1,) * (input._data.ndim - 2)
    if cl:
        fmt = channels_last if input._data.ndim == 4 else channels_last_3d
        if not input.is_contiguous(memory_format=fmt):
            input = input.contiguous(memory_format=fmt)
    elif not input._data.flags.c_contiguous:
        input = input.contiguous()
    alpha = (running_var + eps).rsqrt()
    if weight is not None:
        alpha = alpha * weight
    out = (input - running_mean.reshape(shape)) * alpha.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims.

    Training (or no running stats): use the batch statistics, and fold them into
    `running_mean` / `running_var` (unbiased variance) with `momentum`. Eval: use the running
    statistics.
    """
    if isinstance(input, Tensor) and input.dim() > 1:    # (torch's checks, in its order)
        c = input.shape[1]
        for name, t in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
            if isinstance(t, Tensor) and t.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training and running_mean is not None and running_var is not None:
        out = _batch_norm_eval(input, running_mean, running_var, weight, bias, eps)
        if out is not None:
            return out
    if training:
        size = input.numel() // input.shape[1] if input.dim() > 1 else 0
        if size == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
    dims = (0,) + tuple(range(2, input.dim()))
    shape = _channel_shape(input)
    if training or running_mean is None or running_var is None:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if training and running_mean is not None:
            n = input.numel() // input.shape[1]
            _update_running(running_mean, mean.reshape(-1), momentum)
            _update_running(running_var, var.reshape(-1) * (n / max(n - 1, 1)), momentum)
    else:
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels (dim 1) into `num_groups` groups and normalise each group of each
    sample over its channels and spatial dims; then a per-channel affine map."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(2, keepdim=True)
    var = x.var(2, correction=0, keepdim=True)
    out = ((x - mean) * (var + eps).rsqrt()).reshape(input.shape)
    return _affine(out, weight, bias, _channel_shape(input))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims. With running stats and
    `use_input_stats`, the batch-averaged statistics update them; without `use_input_stats`
    the running statistics are used instead."""
    dims = tuple(range(2, input.dim()))
    shape = _channel_shape(input)
    if use_input_stats:
        if input.numel() // (input.shape[0] * input.shape[1]) == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if running_mean is not None:
            n = input.numel() // (input.shape[0] * input.shape[1])
            _update_running(running_mean, mean.reshape(input.shape[:2]).mean(0), momentum)
            _update_running(running_var, (var * (n / max(n - 1, 1))).reshape(
                input.shape[:2]).mean(0), momentum)
    else:
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x**2 over a window of `size` channels) ** beta``; the window
    is zero-padded, size//2 channels before and (size-1)//2 after."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} "
                         "dimensions)")
    if input.numel() == 0:
        return input.clone()
    sq = input * input
    c = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    zeros = _zeros((input.shape[0],) + tuple(input.shape[2:]), dtype=input.dtype)
    pad = cat([zeros.unsqueeze(1)] * before + [sq] + [zeros.unsqueeze(1)] * after, 1)
    acc = pad.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + pad.narrow(1, i, c)
    div = (acc * (alpha / size) + k).pow(beta)
    return input / div
