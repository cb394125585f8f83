"""layer_norm and rms_norm as COMPOSITE ops (see nn_ops.py for how a composite picks its
path): each one OpDef with its decomposition in ember ops; layer_norm also has an eager fast
path (one NumPy computation, or fused C kernels for big inputs) that records one node with
PyTorch's closed-form derivative. nn.functional publishes both (ember/nn/functional_norm.py).
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap
from ..dispatch_args import tensor_args
from ..core.meta import MetaData
from ..autograd.grad_mode import state
from ..autograd import graph
from . import batch_rules as _br
from .dtype_support import COMPLEX, FLOATING, check_dtype
from .nn_ops import FLOATS, FusedKernel, composite, under_mode
from .native_nn import layer_norm_rows as _layer_norm_rows


# ---- layer_norm, rms_norm ---------------------------------------------------------------
# The composition costs ~8 passes forward and ~15 backward. The fast path (float32/float64,
# weight and bias of the input's dtype and the normalized shape) records one node whose
# backward is PyTorch's closed form in ember ops:
#     dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = g * weight
# Big inputs run forward and backward as fused C kernels made from the compositions below;
# the node then keeps each row's mean and rstd, as PyTorch does. Otherwise one NumPy
# computation runs and xhat is kept. While the backward itself is recorded (create_graph)
# the statistics are recomputed from the input with ember ops, so that double backward sees
# how they depend on it.
def _norm_shape(normalized_shape):
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


def _check_norm_shape(input, shape):
    """The normalized dims of `input`; PyTorch's error when its trailing sizes differ."""
    ishape = input._data.shape if isinstance(input, Tensor) else tuple(input.shape)
    nd = len(ishape)
    if tuple(ishape[nd - len(shape):]) != shape or len(shape) > nd:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    return tuple(range(nd - len(shape), nd))


def _check_affine(shape, weight, bias, input=None):
    for t, n in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {n} to be of same shape as normalized_shape, but got "
                               f"{n} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
        if t is not None and input is not None and t.dtype is not input.dtype and not (
                input.dtype in (D.float16, D.bfloat16) and t.dtype is D.float32 and (
                    weight is None or bias is None or weight.dtype is bias.dtype)):
            # torch's CPU kernel: parameters of the input's dtype (or float32 for a 16-bit one)
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of "
                               "Float")


def _layer_norm_decomp(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = _check_norm_shape(input, _norm_shape(normalized_shape))
    _check_affine(_norm_shape(normalized_shape), weight, bias)
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, correction=0, keepdim=True)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


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
_ln_forward_kernel = FusedKernel(_ln_forward, "layer_norm", min_elements=32768)
_ln_dx_kernel = FusedKernel(_ln_dx, "layer_norm_backward_input")
_ln_dweight_kernel = FusedKernel(_ln_dweight, "layer_norm_backward_weight")


def _ln_stats(self, dims, eps, xhat, rstd, mean):
    """(xhat, rstd): the saved ones (xhat from the saved mean), or, while the backward is
    recorded, fresh ones in ember ops (differentiable with respect to `self`)."""
    if not state.enabled:
        return (xhat if xhat is not None else (self - mean) * rstd), rstd
    mean = self.mean(dims, keepdim=True)
    rstd = (self.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    return (self - mean) * rstd, rstd


def _ln_input_grad(g, self, weight, dims, eps, xhat, rstd, mean):
    if xhat is None and not state.enabled:
        r = _ln_dx_kernel.run(g, self, weight, mean, rstd, dims)
        if r is not None:
            return r
    xhat, rstd = _ln_stats(self, dims, eps, xhat, rstd, mean)
    return _ln_dx_of(g, xhat, weight, rstd, dims)


def _ln_weight_grad(g, self, weight, dims, eps, xhat, rstd, mean):
    if xhat is None and not state.enabled:
        r = _ln_dweight_kernel.run(g, self, mean, rstd, tuple(weight.shape))
        if r is not None:
            return r
    xhat, _ = _ln_stats(self, dims, eps, xhat, rstd, mean)
    return (g * xhat).sum_to_size(weight.shape)


def _ln_bias_grad(g, bias):
    return g.sum_to_size(bias.shape)


def _layer_norm_fast(input, weight, bias, dims, eps):
    dt = input.dtype
    args = (input, weight, bias)
    recorded = state.enabled and any(t is not None and t._requires_grad for t in args)
    if not recorded and input._data.size < _ln_forward_kernel.min_elements:
        # no node to save statistics for (inference): one C sweep per row, where NumPy
        # takes ~8 passes that on a few rows cost more in calls than in arithmetic
        n = 1
        for d in dims:
            n *= input._data.shape[d]
        r = _layer_norm_rows(input._data, None if weight is None else weight._data,
                             None if bias is None else bias._data, n, eps)
        if r is not None:
            return wrap(r, dt)
    fused = _ln_forward_kernel.run(input, weight, bias, dims, eps)
    if fused is not None:
        res, mean, rstd = fused
        if state.enabled and any(t is not None and t._requires_grad for t in args):
            graph.record(LAYER_NORM, args, res, {"dims": dims, "eps": eps, "xhat": None,
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
    res = wrap(out, dt)
    if state.enabled and any(t is not None and t._requires_grad for t in args):
        graph.record(LAYER_NORM, args, res, {"dims": dims, "eps": eps,
                                             "xhat": wrap(xhat, dt), "rstd": wrap(rstd, dt),
                                             "mean": None})
    return res


def _layer_norm_fast_ok(input, weight, bias, shape):
    # (no autocast policy: under autocast layer_norm runs in its input's dtype)
    if not isinstance(input, Tensor) or input.dtype not in FLOATS or not input._data.size:
        return False
    for p in (weight, bias):
        if p is not None and (not isinstance(p, Tensor) or p.dtype is not input.dtype
                              or tuple(p._data.shape) != shape):
            return False
    return True


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dims; then ``* weight + bias``."""
    tensor_args("layer_norm", ("input", 1, input))
    check_dtype(LAYER_NORM, input)
    if state.modes:
        return under_mode(LAYER_NORM, layer_norm, (input, normalized_shape, weight, bias, eps))
    shape = _norm_shape(normalized_shape)
    dims = _check_norm_shape(input, shape)
    _check_affine(shape, weight, bias, input)
    if _layer_norm_fast_ok(input, weight, bias, shape):
        try:
            return LAYER_NORM.fused(input, weight, bias, dims, eps)
        except MetaData:    # a meta input: the decomposition is its meta rule
            pass
    return LAYER_NORM.decomp(input, normalized_shape, weight, bias, eps)


LAYER_NORM = composite("layer_norm", layer_norm, _layer_norm_decomp, fused=_layer_norm_fast,
                       dtypes=FLOATING, dtype_kernel="LayerNormKernelImpl",
                       inputs=("self", "weight", "bias"),
                       attrs={"dims": None, "eps": 1e-5, "xhat": None, "rstd": None,
                              "mean": None},
                       grads={"self": _ln_input_grad, "weight": _ln_weight_grad,
                              "bias": _ln_bias_grad},
                       node_name="NativeLayerNormBackward0", function=False, method=False,
                       onnx=_ox.layer_norm)


def _rms_norm_decomp(input, normalized_shape, weight=None, eps=None):
    shape = _norm_shape(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape):]) != shape or len(shape) > input.dim():
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size"   # (torch's)
                           f"{list(input.shape)}")
    check_dtype(RMS_NORM, input)     # (after the shape, as torch checks them)
    if eps is None:
        eps = D.finfo(input.dtype).eps
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing dims; eps defaults to the
    dtype's machine epsilon."""
    tensor_args("rms_norm", ("input", 1, input), *(() if weight is None else
                                                    (("weight", 3, weight),)))
    if state.modes:
        return under_mode(RMS_NORM, rms_norm, (input, normalized_shape, weight, eps))
    return _rms_norm_decomp(input, normalized_shape, weight, eps)


RMS_NORM = composite("rms_norm", rms_norm, _rms_norm_decomp, function=False, method=False,
                     onnx=_ox.rms_norm, dtypes=FLOATING | COMPLEX, dtype_kernel="rms_norm")


# vmap batching rules (ember/ops/batch_rules.py): see nn_ops.py
LAYER_NORM.batch = RMS_NORM.batch = _br.norm_batch
