"""Normalisation functions of nn.functional: batch, layer, group, instance, RMS and local
response norm. Each is a composition of ember ops (autograd gives the derivative); running
statistics are updated in place under no_grad, as PyTorch does.

    y = F.layer_norm(x, (64,), weight, bias)
    y = F.batch_norm(x, running_mean, running_var, training=True, momentum=0.1)
"""
import numpy as np

import ember
from ember.core import dtype as _D
from ember.core.tensor import Tensor
from ember.dispatch import wrap as _wrap
from ember.autograd.grad_mode import state as _state
from ember.autograd import graph as _graph
from ember.amp.policy import state as _amp
from ember.ops.registry import OpDef, EXTERN
from ember.compiler.eager import EagerKernel

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
    with ember.no_grad():
        running.mul_(1 - momentum).add_(stat.detach().to(running.dtype) * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims.

    Training (or no running stats): use the batch statistics, and fold them into
    `running_mean` / `running_var` (unbiased variance) with `momentum`. Eval: use the running
    statistics.
    """
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


def _norm_shape(normalized_shape):
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dims; then ``* weight + bias``."""
    shape = _norm_shape(normalized_shape)
    ishape = input._data.shape if isinstance(input, Tensor) else tuple(input.shape)
    nd = len(ishape)
    if tuple(ishape[nd - len(shape):]) != shape or len(shape) > nd:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(nd - len(shape), nd))
    if _fused_ok(input, weight, bias, shape):
        return _layer_norm_fused(input, weight, bias, dims, eps)
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, correction=0, keepdim=True)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing dims; eps defaults to the
    dtype's machine epsilon."""
    shape = _norm_shape(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape):]) != shape or len(shape) > input.dim():
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        eps = ember.finfo(input.dtype).eps
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


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
    zeros = ember.zeros((input.shape[0],) + tuple(input.shape[2:]), dtype=input.dtype)
    pad = ember.cat([zeros.unsqueeze(1)] * before + [sq] + [zeros.unsqueeze(1)] * after, 1)
    acc = pad.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + pad.narrow(1, i, c)
    div = (acc * (alpha / size) + k).pow(beta)
    return input / div


# ---- layer_norm's eager fast path ---------------------------------------------------------
# The composition above costs ~8 passes forward and ~15 backward. Eagerly (no dispatch mode
# active: tracers and profilers see the composition), float32/float64 layer_norm records one
# node, whose backward is PyTorch's closed form in ember ops:
#     dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = g * weight
# Big inputs run forward and backward as fused C kernels generated from the compositions
# below (compiler/eager.py); the node then keeps each row's mean and rstd, as PyTorch does.
# Otherwise one NumPy computation runs and xhat is kept. While the backward itself is
# recorded (create_graph) the statistics are recomputed from the input with ember ops, so
# that double backward sees how they depend on it.
_FUSED_DTYPES = (_D.float32, _D.float64)


def _fused_ok(input, weight, bias, shape):
    if _state.modes or _amp.autocast_enabled or not isinstance(input, Tensor) or \
            input.dtype not in _FUSED_DTYPES or not input._data.size:
        return False
    for p in (weight, bias):
        if p is not None and (not isinstance(p, Tensor) or p.dtype is not input.dtype
                              or tuple(p._data.shape) != shape):
            return False
    return True


def _ln_forward(x, weight, bias, dims, eps):
    """layer_norm as (out, mean, rstd): the composition the forward kernel is made of."""
    mean = x.mean(dims, keepdim=True)
    xc = x - mean
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    out = xc * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def _ln_dx_of(g, xhat, weight, rstd, dims):
    """PyTorch's closed form of layer_norm's input gradient."""
    dxhat = g if weight is None else g * weight
    return (dxhat - dxhat.mean(dims, keepdim=True)
            - xhat * (dxhat * xhat).mean(dims, keepdim=True)) * rstd


def _ln_dx(g, x, weight, mean, rstd, dims):
    return _ln_dx_of(g, (x - mean) * rstd, weight, rstd, dims)


def _ln_dweight(g, x, mean, rstd, shape):
    return (g * ((x - mean) * rstd)).sum_to_size(shape)


# NumPy's layer_norm forward is only ~4 passes: the kernel wins from ~32k elements on
_ln_forward_kernel = EagerKernel(_ln_forward, "layer_norm", min_elements=32768)
_ln_dx_kernel = EagerKernel(_ln_dx, "layer_norm_backward_input")
_ln_dweight_kernel = EagerKernel(_ln_dweight, "layer_norm_backward_weight")


def _ln_stats(self, dims, eps, xhat, rstd, mean):
    """(xhat, rstd): the saved ones (xhat from the saved mean), or, while the backward is
    recorded, fresh ones in ember ops (differentiable with respect to `self`)."""
    if not _state.enabled:
        return (xhat if xhat is not None else (self - mean) * rstd), rstd
    mean = self.mean(dims, keepdim=True)
    rstd = (self.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    return (self - mean) * rstd, rstd


def _ln_input_grad(g, self, weight, dims, eps, xhat, rstd, mean):
    if xhat is None and not _state.enabled:
        r = _ln_dx_kernel(g, self, weight, mean, rstd, dims)
        if r is not None:
            return r
    xhat, rstd = _ln_stats(self, dims, eps, xhat, rstd, mean)
    return _ln_dx_of(g, xhat, weight, rstd, dims)


def _ln_weight_grad(g, self, weight, dims, eps, xhat, rstd, mean):
    if xhat is None and not _state.enabled:
        r = _ln_dweight_kernel(g, self, mean, rstd, tuple(weight.shape))
        if r is not None:
            return r
    xhat, _ = _ln_stats(self, dims, eps, xhat, rstd, mean)
    return (g * xhat).sum_to_size(weight.shape)


def _ln_bias_grad(g, bias):
    return g.sum_to_size(bias.shape)


_LAYER_NORM = OpDef("layer_norm", EXTERN, inputs=("self", "weight", "bias"),
                    attrs={"dims": None, "eps": 1e-5, "xhat": None, "rstd": None,
                           "mean": None},
                    grads={"self": _ln_input_grad, "weight": _ln_weight_grad,
                           "bias": _ln_bias_grad},
                    node_name="NativeLayerNormBackward0")


def _layer_norm_fused(input, weight, bias, dims, eps):
    dt = input.dtype
    args = (input, weight, bias)
    fused = _ln_forward_kernel(input, weight, bias, dims, eps)
    if fused is not None:
        res, mean, rstd = fused
        if _state.enabled and any(t is not None and t._requires_grad for t in args):
            _graph.record(_LAYER_NORM, args, res, {"dims": dims, "eps": eps, "xhat": None,
                                                   "rstd": rstd, "mean": mean})
        return res
    a = input._data
    n = 1
    for d in dims:
        n *= a.shape[d]
    xc = a - np.add.reduce(a, axis=dims, keepdims=True) / n
    var = np.add.reduce(np.square(xc), axis=dims, keepdims=True) / n
    rstd = 1 / np.sqrt(var + eps)
    xhat = np.multiply(xc, rstd, out=xc)
    if weight is not None:
        out = np.multiply(xhat, weight._data)
        if bias is not None:
            np.add(out, bias._data, out=out)
    elif bias is not None:
        out = np.add(xhat, bias._data)
    else:
        out = xhat.copy()
    res = _wrap(out, dt)
    if _state.enabled and any(t is not None and t._requires_grad for t in args):
        _graph.record(_LAYER_NORM, args, res, {"dims": dims, "eps": eps,
                                               "xhat": _wrap(xhat, dt), "rstd": _wrap(rstd, dt),
                                               "mean": None})
    return res
