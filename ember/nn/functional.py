"""nn.functional: the stateless layer functions (activations, linear, embedding, dropout,
distances, one_hot). Each is a composition of ember ops, so autograd (and the compiler) get
its derivative for free.

    import ember.nn.functional as F
    y = F.gelu(F.linear(x, w, b))
"""
import math
import warnings
from collections.abc import Callable  # noqa: F401  (names torch.nn.functional carries)
from typing import TYPE_CHECKING, Optional  # noqa: F401

from ..core.dtype import bool_, torch_name as _torch_name
from ..core.tensor import Tensor
from ..ops.creation import empty, empty_like
from ..ops.joining import broadcast_tensors
from ..ops.pointwise import clamp_max, where
from ..ops.pointwise_math import relu as _relu
from ..ops.reshaping import one_hot  # noqa: F401  (defined with the reshaping ops)
from ..ops.nn_ops import composition as _composition  # (registers a function as its op)
from ..ops.registry import FP32 as _FP32, LOWER_PRECISION as _LOWP
from ..ops import nn_ops as _nn_ops
# the composite ops are defined once, in ember/ops (each an OpDef with its decomposition and
# fast path); nn.functional publishes them
from ..ops.nn_ops import gelu, embedding  # noqa: F401,E402
from ..ops.nn_ops import _gelu_kernel, _gelu_backward_kernel  # noqa: F401  (the fused kernels)


def _inplace(fn, input, inplace):
    """``fn(input)``, or written back into `input` for ``inplace=True`` (the computation runs on
    a clone when autograd needs the original values)."""
    if not inplace:
        return fn(input)
    src = input.clone() if input.requires_grad else input
    return input.copy_(fn(src))


def _floating_only(kernel_name, input):
    """torch's NotImplementedError for an activation whose CPU kernel has no integral or bool
    loop (``"elu_cpu" not implemented for 'Long'``)."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise _not_implemented(kernel_name, input.dtype)


# ---- linear maps ----
from ..ops.linalg import linear as _linear_op  # noqa: E402
from ..dispatch import not_implemented as _not_implemented  # noqa: E402
from ..ops.dtype_support import FLOATING  # noqa: E402


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    >>> F.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    for i, (name, t) in enumerate((("input", input), ("weight", weight))):
        if not isinstance(t, Tensor):
            raise TypeError(f"linear(): argument '{name}' (position {i + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
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
    return input.relu_() if inplace else _relu(input)


def relu_(input):
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to ``[min_val, max_val]``; the gradient is zero at and beyond the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if isinstance(input, Tensor) and input.dtype is bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        # integers keep their dtype (the bounds are converted to it, as torch does)
        return _inplace(lambda x: x.clamp(int(min_val), int(max_val)), input, inplace)
    return _inplace(lambda x: where(x <= min_val, min_val,
                                    where(x >= max_val, max_val, x)),
                    input, inplace)


def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, ``negative_slope * input`` elsewhere."""
    _floating_only("leaky_relu_cpu", input)
    return _inplace(lambda x: where(x > 0, x, x * negative_slope), input, inplace)


def prelu(input, weight):
    """Leaky ReLU with a learned slope per channel (dim 1) or one shared slope."""
    if isinstance(input, Tensor) and isinstance(weight, Tensor) and input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{_torch_name(input.dtype)} and {_torch_name(weight.dtype)}")
    if weight.numel() == 1:
        w = weight.reshape(())
    else:   # channels are dim 1; an input of fewer than 2 dims has one channel
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != weight.numel():
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        w = weight.reshape(-1, *([1] * (input.dim() - 2)))
    return where(input > 0, input, w * input)
prelu = _composition("prelu", prelu, amp=_LOWP,
    dtypes=FLOATING, dtype_kernel="prelu_cpu", dtypes_of="matching")


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere."""
    _floating_only("elu_cpu", input)
    # clamp before expm1: the unused branch must not overflow (inf * 0 = nan in backward)
    return _inplace(lambda x: where(x > 0, x, clamp_max(x, 0).expm1() * alpha),
                    input, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * elu(input, alpha)`` with the self-normalising constants."""
    _floating_only("elu_cpu", input)
    return _inplace(lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, input, inplace)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _floating_only("elu_cpu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _inplace(lambda x: where(x > 0, x, (clamp_max(x, 0) / alpha).expm1()
                                          * alpha), input, inplace)


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (swish)."""
    _floating_only("silu_cpu", input)
    return _inplace(lambda x: x * x.sigmoid(), input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    _floating_only("softplus_cpu", input)
    z = input * beta
    soft = clamp_max(z, threshold).exp().log1p() / beta
    return where(z > threshold, input, soft)


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    _floating_only("mish_cpu", input)
    return _inplace(lambda x: x * softplus(x).tanh(), input, inplace)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    _floating_only("hardswish_cpu", input)
    return _inplace(lambda x: where(x <= -3, 0.0, where(x >= 3, x, x * (x + 3) / 6)),
                    input, inplace)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    _floating_only("hardsigmoid_cpu", input)
    return _inplace(lambda x: where(x <= -3, 0.0, where(x >= 3, 1.0, x / 6 + 0.5)),
                    input, inplace)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def logsigmoid(input):
    """``log(sigmoid(x))``, computed stably as ``-softplus(-x)``."""
    _floating_only("log_sigmoid_cpu", input)
    return -softplus(-input)


def threshold(input, threshold, value, inplace=False):
    """``input`` where ``input > threshold``, else `value`."""
    return _inplace(lambda x: where(x > threshold, x, value), input, inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, True)


def glu(input, dim=-1):
    """Gated linear unit: split `dim` in halves ``a, b`` and return ``a * sigmoid(b)``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _floating_only("glu_cpu", input)
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
    _floating_only("softshrink_check", input)
    # NaN compares false everywhere: it falls through to the last branch and stays NaN
    return where(input > lambd, input - lambd,
                 where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    """``input`` outside ``[-lambd, lambd]``, else 0."""
    _floating_only("hardshrink_cpu", input)
    # NaN stays NaN, as in torch: only values inside the band become 0
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def selu_(input):
    return selu(input, True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


# ---- softmax family ----
def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` over `dim`, computed stably.

    >>> F.softmax(ember.tensor([1., 2., 3.]), dim=0).sum()
    tensor(1.)
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _nn_ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x)`` over `dim`, computed stably."""
    if not hasattr(input, "log_softmax"):     # (torch's F calls input.log_softmax)
        raise AttributeError(f"'{type(input).__name__}' object has no attribute 'log_softmax'")
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _nn_ops.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x)`` over `dim`."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return softmax(-input, dim)


# ---- dropout (dropout, dropout1d/2d/3d are in functional_dropout.py) ----
from .functional_dropout import (dropout, dropout1d, dropout2d, dropout3d,  # noqa: E402,F401
                                 _check_p, _feature_mask)


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
                          lambda: empty_like(input).bernoulli_(1 - p))


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
    x1, x2 = broadcast_tensors(x1, x2)

    def unit(x):
        n = x.norm(2, dim, keepdim=True)
        # PyTorch clamps the norms without recording it: the gradient flows as if unclamped
        return x / (n + (n.clamp_min(eps) - n).detach())
    return (unit(x1) * unit(x2)).sum(dim)



from .functional_norm import *  # noqa: F401,F403,E402  (normalisation functions)
from .functional_loss import *  # noqa: F401,F403,E402  (loss functions)
from .functional_attention import *  # noqa: F401,F403,E402  (attention functions)
from .functional_conv import *  # noqa: F401,F403,E402  (convolution, pooling, resampling)
from .functional_embedding import *  # noqa: F401,F403,E402  (embedding_bag, gumbel_softmax)
from .functional_extra import *  # noqa: F401,F403,E402  (lp_pool, fractional pooling, ...)
from .functional_lce import *  # noqa: F401,F403,E402  (linear_cross_entropy)
from .functional_grouped import grouped_mm  # noqa: F401,E402
# the __torch_function__ protocol's helpers, as torch.nn.functional exports them
from ..autograd.overrides import (handle_torch_function, has_torch_function,  # noqa: F401,E402
                                  has_torch_function_unary, has_torch_function_variadic)
from .functional_notes import (BroadcastingList1, BroadcastingList2,  # noqa: F401,E402
                               BroadcastingList3, DType, reproducibility_notes,
                               sparse_support_notes, tf32_notes)
