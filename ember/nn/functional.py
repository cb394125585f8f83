"""nn.functional: the stateless layer functions (activations, linear, embedding, dropout,
distances, one_hot). Each is a composition of ember ops, so autograd (and the compiler) get
its derivative for free.

    import ember.nn.functional as F
    y = F.gelu(F.linear(x, w, b))
"""
import math
import warnings

import numpy as np

import ember
from ..ops.joining import one_hot  # noqa: F401  (defined with the joining ops)
from ..amp.policy import state as _amp, cast_inputs as _amp_cast, run_fp32 as _amp_fp32  # noqa: F401,E501
from ..compiler.eager import EagerKernel
from ..autograd.grad_mode import state as _state
from ..autograd import graph as _graph
from ..dispatch import wrap as _wrap
from ..ops.pointwise import _erf_kernel


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _inplace(fn, input, inplace):
    """``fn(input)``, or written back into `input` for ``inplace=True`` (the computation runs on
    a clone when autograd needs the original values)."""
    if not inplace:
        return fn(input)
    src = input.clone() if input.requires_grad else input
    return input.copy_(fn(src))


# ---- linear maps ----
from ..ops.linalg import linear as _linear_op  # noqa: E402


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("linear", input, weight, bias)
    return _linear_op(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``; weight is (out, in1, in2)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and "
                           f"{input2.dim()}")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    # (..., in1) @ (in1, out*in2) -> (..., out, in2), then contract in2 with input2
    t = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    out = (t.reshape(*input1.shape[:-1], out_f, in2) * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


# ---- activations ----
def relu(input, inplace=False):
    """``max(input, 0)``."""
    return input.relu_() if inplace else ember.relu(input)


def relu_(input):
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to ``[min_val, max_val]``; the gradient is zero at and beyond the bounds."""
    if min_val > max_val:
        raise RuntimeError("min_val cannot be greater than max_val")
    return _inplace(lambda x: ember.where(x <= min_val, min_val,
                                          ember.where(x >= max_val, max_val, x)),
                    input, inplace)


def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, ``negative_slope * input`` elsewhere."""
    return _inplace(lambda x: ember.where(x > 0, x, x * negative_slope), input, inplace)


def prelu(input, weight):
    """Leaky ReLU with a learned slope per channel (dim 1) or one shared slope."""
    if _amp.autocast_enabled: input, weight = _amp_cast("prelu", input, weight)
    if weight.numel() == 1:
        w = weight.reshape(())
    else:   # channels are dim 1; an input of fewer than 2 dims has one channel
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != weight.numel():
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        w = weight.reshape(-1, *([1] * (input.dim() - 2)))
    return ember.where(input > 0, input, w * input)


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere."""
    # clamp before expm1: the unused branch must not overflow (inf * 0 = nan in backward)
    return _inplace(lambda x: ember.where(x > 0, x, ember.clamp_max(x, 0).expm1() * alpha),
                    input, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * elu(input, alpha)`` with the self-normalising constants."""
    return _inplace(lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, input, inplace)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _inplace(lambda x: ember.where(x > 0, x, (ember.clamp_max(x, 0) / alpha).expm1()
                                          * alpha), input, inplace)


def gelu(input, approximate="none"):
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""
    if approximate == "none":
        if _gelu_fused_ok(input):
            return _gelu_fused(input)
        return _gelu_exact(input)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (1.0 + inner.tanh())
    raise RuntimeError("approximate argument must be either none or tanh.")


# gelu's eager fast path: with no dispatch mode active (tracers and profilers see the
# composition above), float32/float64 gelu records one node whose backward, in ember ops, is
# g * (Phi(x) + x * phi(x)). Big tensors run both directions as fused C kernels generated
# from these same compositions (compiler/eager.py); otherwise NumPy computes Phi(x), kept
# for the backward. While the backward itself is recorded (create_graph) it runs in ember
# ops from x, so double backward sees its dependence on x.
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_exact(x):
    return x * 0.5 * (1.0 + (x * _SQRT1_2).erf())


def _gelu_grad_of(g, x, cdf):
    """g * (Phi(x) + x * phi(x)), given Phi(x)."""
    return g * (cdf + x * ((x * x * -0.5).exp() * _INV_SQRT_2PI))


def _gelu_backward(g, x):
    return _gelu_grad_of(g, x, (x * _SQRT1_2).erf() * 0.5 + 0.5)


_gelu_kernel = EagerKernel(_gelu_exact, "gelu")
_gelu_backward_kernel = EagerKernel(_gelu_backward, "gelu_backward")


def _gelu_fused_ok(input):
    return (not _state.modes and not _amp.autocast_enabled and isinstance(input, ember.Tensor)
            and input.dtype in (ember.float32, ember.float64))


def _gelu_grad(g, self, cdf):
    if cdf is None or _state.enabled:
        if not _state.enabled:
            r = _gelu_backward_kernel(g, self)
            if r is not None:
                return r
        return _gelu_backward(g, self)
    return _gelu_grad_of(g, self, cdf)


def _gelu_fused(input):
    res = _gelu_kernel(input)
    cdf = None
    if res is None:
        a = input._data
        c = _erf_kernel(np, a * a.dtype.type(_SQRT1_2))
        if c.dtype != a.dtype or not c.flags.writeable:
            c = c.astype(a.dtype)
        np.multiply(c, 0.5, out=c)
        np.add(c, 0.5, out=c)
        res = _wrap(a * c, input.dtype)
        cdf = _wrap(c, input.dtype)
    if _state.enabled and input._requires_grad:
        _graph.record(_GELU, (input,), res, {"cdf": cdf})
    return res


def _make_gelu_op():
    from ..ops.registry import OpDef, EXTERN
    return OpDef("gelu", EXTERN, attrs={"cdf": None}, grads={"self": _gelu_grad},
                 node_name="GeluBackward0")


_GELU = _make_gelu_op()


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (swish)."""
    return _inplace(lambda x: x * x.sigmoid(), input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    z = input * beta
    soft = ember.clamp_max(z, threshold).exp().log1p() / beta
    return ember.where(z > threshold, input, soft)


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _inplace(lambda x: x * softplus(x).tanh(), input, inplace)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    return _inplace(lambda x: ember.where(x <= -3, 0.0, ember.where(x >= 3, x, x * (x + 3) / 6)),
                    input, inplace)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    return _inplace(lambda x: ember.where(x <= -3, 0.0, ember.where(x >= 3, 1.0, x / 6 + 0.5)),
                    input, inplace)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def logsigmoid(input):
    """``log(sigmoid(x))``, computed stably as ``-softplus(-x)``."""
    return -softplus(-input)


def threshold(input, threshold, value, inplace=False):
    """``input`` where ``input > threshold``, else `value`."""
    return _inplace(lambda x: ember.where(x > threshold, x, value), input, inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, True)


def glu(input, dim=-1):
    """Gated linear unit: split `dim` in halves ``a, b`` and return ``a * sigmoid(b)``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{dim % input.dim()} is size {n}")
    a, b = input.split(n // 2, dim)
    return a * b.sigmoid()


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    """Shrink towards 0 by `lambd`; 0 inside ``[-lambd, lambd]``."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return ember.where(input > lambd, input - lambd,
                       ember.where(input < -lambd, input + lambd, 0.0))


def hardshrink(input, lambd=0.5):
    """``input`` outside ``[-lambd, lambd]``, else 0."""
    return ember.where((input > lambd) | (input < -lambd), input, 0.0)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


# ---- softmax family ----
def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _shifted(input, dim, dtype):
    """`input` (cast to `dtype`) minus its max over `dim`: exp() of it cannot overflow. The
    max is detached; softmax does not change under a shift, so the gradient is exact."""
    if dtype is not None:
        input = input.to(dtype)
    if input.numel() == 0:
        return input
    with ember.no_grad():
        m = input.amax(dim, keepdim=True) if input.dim() else input.detach()
    return input - m


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` over `dim`, computed stably.

    >>> F.softmax(ember.tensor([1., 2., 3.]), dim=0).sum()
    tensor(1.)
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    e = _shifted(input, dim, dtype).exp()
    return e / e.sum(dim, keepdim=True)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` over `dim`, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    z = _shifted(input, dim, dtype)
    return z - z.exp().sum(dim, keepdim=True).log()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x)`` over `dim`."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return softmax(-input, dim)


# ---- embedding ----
def _embedding_renorm_(weight, input, max_norm, norm_type):
    with ember.no_grad():
        rows = ember.unique(input.reshape(-1))
        w = weight[rows]
        norms = w.norm(norm_type, 1, keepdim=True)
        scale = ember.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = w * scale


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the integer tensor `input`; output shape
    ``input.shape + (embedding_dim,)``. Row `padding_idx` gets no gradient; with `max_norm`,
    the looked-up rows of `weight` are first renormalised in place.

    >>> F.embedding(ember.tensor([0, 2]), ember.eye(3))
    """
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type()} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    if input.numel():
        # the bounds check reads the indices directly (a compiler trace does not break on
        # it: it only raises); the per-index counts shape the result, so they read via
        # numpy(), which a trace sees as a graph break
        idx = input.detach().numpy() if scale_grad_by_freq else input._data
        if idx.min() < 0 or idx.max() >= n:
            raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if padding_idx is None and not scale_grad_by_freq and weight.dim() == 2 and \
            not _state.modes and isinstance(weight, ember.Tensor):
        # the eager fast path: one NumPy gather and one EmbeddingBackward0 node
        out = _wrap(np.take(weight._data, input._data, axis=0), weight.dtype)
        if _state.enabled and weight._requires_grad:
            _graph.record(_EMBEDDING, (weight, input), out, {"shape": weight._data.shape})
        return out
    # index_select's backward (index_add into zeros) takes the indices as a tensor, so a
    # compiler trace records a backward that reads each call's indices
    out = weight.index_select(0, input.reshape(-1)).reshape(*input.shape, weight.shape[1]) \
        if weight.dim() == 2 else weight[input]
    if padding_idx is not None:
        # the forward value is the row itself; only its gradient is cut
        out = ember.where((input == padding_idx).unsqueeze(-1), weight.detach()[input], out)
    if scale_grad_by_freq and out.requires_grad and input.numel():
        _, inv, counts = np.unique(idx.reshape(-1), return_inverse=True, return_counts=True)
        freq = ember.tensor(counts[inv].reshape(*idx.shape, 1), dtype=out.dtype)
        out.register_hook(lambda g: g / freq)
    return out


def _embedding_grad(g, indices, shape):
    d = shape[1]
    return ember.zeros(shape, dtype=g.dtype).index_add(0, indices.reshape(-1),
                                                       g.reshape(-1, d))


def _make_embedding_op():
    from ..ops.registry import OpDef, EXTERN
    return OpDef("embedding", EXTERN, inputs=("weight", "indices"), attrs={"shape": None},
                 grads={"weight": _embedding_grad}, node_name="EmbeddingBackward0")


_EMBEDDING = _make_embedding_op()


# ---- dropout ----
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability `p` and scale the rest by ``1 / (1 - p)``
    (identity when not `training`).

    >>> F.dropout(ember.ones(4), 0.5)    # e.g. tensor([2., 0., 2., 2.])
    """
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    mask = ember.empty_like(input).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


def _feature_mask(input, batched, p):
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)
    return ember.empty(shape, dtype=input.dtype).bernoulli_(1 - p)


def _feature_dropout(input, p, training, inplace, batched):
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    mask = _feature_mask(input, batched, p).div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability `p`."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability `p` (3-D input is taken as
    (N, C, L), as in PyTorch)."""
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).")
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change in "
                      "a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.")
    return _feature_dropout(input, p, training, inplace, input.dim() >= 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability `p`."""
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).")
    return _feature_dropout(input, p, training, inplace, input.dim() != 4)


_ALPHA = 1.7580993408473766     # -SELU's negative saturation value (scale * alpha)


def _alpha_dropout(input, p, training, inplace, mask_fn):
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    keep = mask_fn()
    # kept: a * x + a*alpha*p ; dropped: the saturation value, affinely corrected
    b = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    return _inplace(lambda x: x * (keep * a) + b, input, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalisation: dropped units take the negative saturation
    value and the result is rescaled to keep mean 0 and variance 1."""
    return _alpha_dropout(input, p, training, inplace,
                          lambda: ember.empty_like(input).bernoulli_(1 - p))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1)."""
    return _alpha_dropout(input, p, training, inplace,
                          lambda: _feature_mask(input, True, p))


# ---- distances ----
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p over dim, eps)``.

    >>> F.normalize(ember.tensor([[3., 4.]]))
    tensor([[0.6000, 0.8000]])
    """
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        return out.copy_(input / denom)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` over `dim` (broadcasting)."""
    x1, x2 = ember.broadcast_tensors(x1, x2)

    def unit(x):
        n = x.norm(2, dim, keepdim=True)
        # PyTorch clamps the norms without recording it: the gradient flows as if unclamped
        return x / (n + (n.clamp_min(eps) - n).detach())
    return (unit(x1) * unit(x2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim."""
    d = max(x1.dim(), x2.dim())
    return (x1 - x2 + eps).norm(p, d - 1 if d else 0, keepdim=keepdim)
from .functional_norm import *  # noqa: F401,F403,E402  (normalisation functions)
from .functional_loss import *  # noqa: F401,F403,E402  (loss functions)
from .functional_attention import *  # noqa: F401,F403,E402  (attention functions)
from .functional_conv import *  # noqa: F401,F403,E402  (convolution, pooling, resampling)
from .functional_embedding import *  # noqa: F401,F403,E402  (embedding_bag, gumbel_softmax)


# ---- what the compiler's tracer records as one call ----
# These functions run kernels that are not ops of the registry (convolutions, pooling, the
# fused linear) or read index values in Python (embedding, the losses with class targets),
# so a tracer records each call whole rather than what happens inside it.
def _seam_functions():
    import sys
    from ..dispatch import with_mode_seam
    names = ("unfold", "fold",
             "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_max_pool1d",
             "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d",
             "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pad",
             "grid_sample", "affine_grid", "embedding_bag", "ctc_loss",
             "multilabel_margin_loss", "multi_margin_loss", "pixel_shuffle", "pixel_unshuffle")
    here = sys.modules[__name__]
    # the convolution kernels (forward, and the two adjoints its backward calls) are
    # recorded as calls; what surrounds them (bias, batching) is recorded op by op
    from . import functional_conv as conv
    for name in ("_conv", "_conv_tr", "_conv_wgrad", "_max_pool_select", "_tap_gather",
                 "_tap_scatter", "_max_pool_indices"):
        setattr(conv, name, with_mode_seam("F" + name, getattr(conv, name)))
    for name in names:
        fn = getattr(here, name)
        seamed = with_mode_seam("F." + name, fn)
        setattr(here, name, seamed)
        mod = sys.modules.get(fn.__module__)
        if mod is not None and getattr(mod, name, None) is fn:
            setattr(mod, name, seamed)


_seam_functions()
