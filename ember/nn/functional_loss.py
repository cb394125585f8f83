"""Loss functions of nn.functional. Each is a composition of ember ops (autograd gives the
derivative), written in the numerically stable form (log-sum-exp with the max subtracted,
log-sigmoid via ``max(-x, 0)``). Half-precision inputs are computed in float32 and the result
cast back, as PyTorch's kernels accumulate in float32.

    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
    loss.backward()
"""
import math
import warnings

import numpy as np

from ..core.tensor import Size, Tensor
from ..ops.creation import arange, full as _full, full_like, tensor
from ..ops.joining import broadcast_tensors, cat
from ..ops.pointwise import where
from ..ops.pointwise_arith import maximum, minimum
from ..ops.nn_ops import composition as _composition, whole_call as _whole_call
from ..core.dtype import torch_name as _torch_name
from ..dispatch import not_implemented as _not_implemented
from ..dispatch_args import tensor_args as _tensor_args
from ..ops.registry import FP32 as _FP32, LOWER_PRECISION as _LOWP, NO_FORWARD_AD as _NO_FORWARD_AD
# cross_entropy and nll_loss are composite ops, defined once in ember/ops; the reduction
# helpers the other losses share live with them
from ..ops.nn_loss_ops import (cross_entropy, nll_loss, _legacy_reduction, _reduce,  # noqa: F401
                               _up, _down, _HALF)
from ..ops.dtype_support import FLOAT32_64, FLOATING  # noqa: E402

__all__ = ["pairwise_distance", "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "smooth_l1_loss",
           "huber_loss", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
           "multilabel_soft_margin_loss", "soft_margin_loss", "ctc_loss"]

# OpDef.torch_python of the losses whose torch function is Python code that reads
# input.size() and target.size() first (a str or list there: torch's AttributeError)
_SIZES_FIRST = ("size", (0, 1))


def _check_same_size(input, target, name=None):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({Size(target.shape)}) that is different to "
                      f"the input size ({Size(input.shape)}). This will likely lead to "
                      "incorrect results due to broadcasting. Please ensure they have the same "
                      "size.", stacklevel=3)
        input, target = broadcast_tensors(input, target)
    return input, target


# ---- classification ----
def _log_sigmoid_pair(x):
    """(log(sigmoid(x)), log(1 - sigmoid(x))) computed without overflow."""
    m = (-x).clamp_min(0)
    lse = m + ((-m).exp() + (-x - m).exp()).log()        # log(1 + exp(-x))
    return -lse, -x - lse


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-(t * log(x) + (1 - t) * log(1 - x)) * weight`` with the logs clamped at -100."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({Size(target.shape)}) that is different "
                         f"to the input size ({Size(input.shape)}) is deprecated. Please "
                         "ensure they have the same size.")
    if target.dtype != input.dtype:    # torch's kernel takes one dtype, it does not promote
        raise RuntimeError(f"Found dtype {_torch_name(target.dtype)} but expected "
                           f"{_torch_name(input.dtype)}")
    (input, target, weight), dt = _up(input, target, weight)
    loss = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log().clamp_min(
        -100))
    if weight is not None:
        loss = loss * weight
    return _down(_reduce(loss, reduction), dt)
binary_cross_entropy = _composition("binary_cross_entropy", binary_cross_entropy, amp=_FP32,
    dtypes=FLOATING, dtype_kernel="binary_cross_entropy", dtypes_of="matching",
    torch_python=("size", (0, 1, 2)))   # (torch's Python reads their size() first)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from the logits;
    `pos_weight` scales the positive term."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({Size(target.shape)}) must be the same as input "
                         f"size ({Size(input.shape)})")
    if not input.dtype.is_floating_point:
        raise _not_implemented("log_sigmoid_cpu", input.dtype)
    if not target.dtype.is_floating_point:   # torch computes into a copy of (1 - target)
        raise RuntimeError(f"result type {_torch_name(input.dtype)} can't be cast to the "
                           f"desired output type {_torch_name(target.dtype)}")
    dt = target.dtype                  # torch's result has the target's dtype
    (input, target, weight, pos_weight), _ = _up(input, target, weight, pos_weight)
    log_p, log_q = _log_sigmoid_pair(input)
    if pos_weight is None:
        loss = -(target * log_p + (1 - target) * log_q)
    else:
        loss = -(pos_weight * target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    loss = _reduce(loss, reduction)
    return loss if loss.dtype == dt else loss.to(dt)
binary_cross_entropy_with_logits = _composition(
    "binary_cross_entropy_with_logits", binary_cross_entropy_with_logits, amp=_FP32,
    torch_python=_SIZES_FIRST)


# ---- regression ----
def _pointwise_loss(fn, input, target, size_average, reduce, reduction, bool_ok=True):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _check_same_size(input, target)
    (input, target), dt = _up(input, target)
    if bool_ok and isinstance(input, Tensor) and isinstance(target, Tensor) and \
            (input.dtype.name == "bool") != (target.dtype.name == "bool"):
        # torch's loss kernels subtract in the promoted dtype, where one bool operand is no
        # error (the `-` operator refuses a bool; l1_loss, torch's composition, uses it)
        if input.dtype.name == "bool":
            input = input.to(target.dtype)
        else:
            target = target.to(input.dtype)
    return _down(_reduce(fn(input - target), reduction), dt)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """``(input - target) ** 2``, reduced."""
    if weight is not None:
        return _pointwise_loss(lambda d: d * d * weight, input, target, size_average, reduce,
                               reduction)
    return _pointwise_loss(lambda d: d * d, input, target, size_average, reduce, reduction)
mse_loss = _composition("mse_loss", mse_loss, amp=_FP32,
    dtypes=FLOATING, dtype_kernel="mse_cpu", dtypes_of="promoted", torch_python=_SIZES_FIRST)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """``|input - target|``, reduced."""
    if weight is not None:
        return _pointwise_loss(lambda d: d.abs() * weight, input, target, size_average, reduce,
                               reduction, bool_ok=False)
    return _pointwise_loss(lambda d: d.abs(), input, target, size_average, reduce, reduction,
                           bool_ok=False)
l1_loss = _composition("l1_loss", l1_loss, amp=_FP32, torch_python=_SIZES_FIRST)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, size_average, reduce, reduction)

    def fn(d):
        a = d.abs()
        return where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)
    return _pointwise_loss(fn, input, target, size_average, reduce, reduction)
smooth_l1_loss = _composition("smooth_l1_loss", smooth_l1_loss, amp=_FP32,
    dtypes=FLOATING, dtype_kernel="smooth_l1_cpu", dtypes_of="promoted",
    torch_python=_SIZES_FIRST)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        if isinstance(target, Tensor) and target.dtype.is_floating_point:
            raise RuntimeError(f"result type {_torch_name(target.dtype)} can't be cast to the "
                               f"desired output type {_torch_name(input.dtype)}")
        raise _not_implemented("huber_cpu", input.dtype)

    def fn(d):
        a = d.abs()
        out = where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
        return out if weight is None else out * weight
    return _pointwise_loss(fn, input, target, None, None, reduction)
huber_loss = _composition("huber_loss", huber_loss, amp=_FP32, torch_python=_SIZES_FIRST)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """``target * (log(target) - input)`` with `input` given as log-probabilities (and
    `target` too when `log_target`). 'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.")
    for t in (input, target):
        if isinstance(t, Tensor) and t.dtype.is_complex:
            raise RuntimeError("kl_div: Complex inputs not supported.")
    for t in (input, target):
        if isinstance(t, Tensor) and not t.dtype.is_floating_point:
            raise RuntimeError("kl_div: Integral inputs not supported.")
    (input, target), dt = _up(input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        safe = where(pos, target, 1.0)
        loss = where(pos, target * safe.log(), 0.0) - target * input
    if reduction == "batchmean":
        out = loss.sum() / input.shape[0] if input.dim() else loss.sum()
        return _down(out, dt)
    return _down(_reduce(loss, reduction), dt)
kl_div = _composition("kl_div", kl_div, amp=_FP32)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """``exp(input) - target * input`` (log_input) or ``input - target * log(input + eps)``;
    `full` adds Stirling's approximation of ``log(target!)`` where target > 1."""
    _tensor_args("poisson_nll_loss", ("input", 1, input), ("target", 2, target))
    reduction = _legacy_reduction(size_average, reduce, reduction)
    (input, target), dt = _up(input, target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        t = where(big, target, 2.0)
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + where(big, stirling, 0.0)
    return _down(_reduce(loss, reduction), dt)
poisson_nll_loss = _composition("poisson_nll_loss", poisson_nll_loss, amp=_FP32)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)**2 / var)`` (+ 0.5 log(2 pi) when `full`); `var`
    is clamped at `eps` without affecting its gradient, as PyTorch does."""
    if isinstance(var, (int, float)):
        var = full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    (input, target, var), dt = _up(input, target, var)
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _down(_reduce(loss, reduction), dt)


# ---- embedding / ranking ----
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    dim = input1.dim() - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    m1 = (input1 * input1).sum(dim) + eps
    m2 = (input2 * input2).sum(dim) + eps
    cos = prod / (m1 * m2).sqrt()
    loss = (where(target == 1, 1 - cos, 0.0)
            + where(target == -1, (cos - margin).clamp_min(0), 0.0))
    return _reduce(loss, reduction)
cosine_embedding_loss = _composition("cosine_embedding_loss", cosine_embedding_loss, amp=_FP32)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {Size(input1.shape)}, "
                           f"input2: {Size(input2.shape)}, target: "
                           f"{Size(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)
margin_ranking_loss = _composition("margin_ranking_loss", margin_ranking_loss, amp=_FP32,
    torch_python=("dim", (0, 1, 2)))   # (torch's Python reads their dim() first)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """`input` where target is 1, ``max(0, margin - input)`` where target is -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    integral = not (input.dtype.is_floating_point or input.dtype.is_complex)
    if integral:    # (torch computes in the input's integer dtype: the margin truncated)
        margin = int(margin)
    zero = 0 if integral else 0.0
    loss = (where(target != 1, (margin - input).clamp_min(0), zero)
            + where(target != -1, input, zero))
    return _reduce(loss, reduction)
hinge_embedding_loss = _composition("hinge_embedding_loss", hinge_embedding_loss, amp=_FP32)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, d(a, p) - d(a, n) + margin)`` with the pairwise p-norm distance; `swap` uses
    ``min(d(a, n), d(p, n))`` as the negative distance."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.dim()}D, "
                           f"positive {positive.dim()}D, and negative {negative.dim()}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)
triplet_margin_loss = _composition("triplet_margin_loss", triplet_margin_loss, amp=_FP32)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C`` (times ``weight[y]``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    t = target.reshape(-1)
    c = x.shape[1]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    xy = x.gather(1, t.unsqueeze(1))
    z = (margin - xy + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[t].unsqueeze(1)
    not_y = arange(c, device=x.device).unsqueeze(0) != t.unsqueeze(1)
    loss = where(not_y, z, 0.0).sum(1) / c
    if squeeze:
        loss = loss.reshape(target.shape if target.dim() else ())
    return _reduce(loss, reduction)
# it reads index values in Python: a tracer records each call whole
multi_margin_loss = _whole_call("multi_margin_loss", multi_margin_loss, amp=_FP32,
    dtypes=FLOAT32_64, dtype_kernel="multi_margin_loss_cpu_kernel")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x[j] - x[i])) / C``; the
    targets of a sample are its `target` entries up to the first -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise _not_implemented("multilabel_margin_loss_forward_out_frame", input.dtype)
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    t = target.reshape(x.shape).numpy()
    n, c = x.shape
    valid = np.cumprod(t != -1, axis=1).astype(bool)
    is_t = np.zeros((n, c), dtype=bool)
    rows = np.nonzero(valid)
    is_t[rows[0], t[rows]] = True
    pair = tensor(is_t[:, :, None] & ~is_t[:, None, :])
    z = (1 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)
    loss = where(pair, z, 0.0).sum((1, 2)) / c
    if squeeze:
        loss = loss.reshape(() if input.dim() == 1 else input.shape[:-1])
    return _reduce(loss, reduction)
# it reads index values in Python: a tracer records each call whole
multilabel_margin_loss = _whole_call("multilabel_margin_loss", multilabel_margin_loss, amp=_FP32,
    dtypes=FLOAT32_64,
    dtype_kernel="multilabel_margin_loss_forward_out_frame")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Mean over classes of the binary cross-entropy of ``sigmoid(input)`` against `target`."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    log_p, log_q = _log_sigmoid_pair(input)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):   # (torch's out= rule)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_torch_name(input.dtype)}")
    log_p, _ = _log_sigmoid_pair(target * input)
    return _reduce(-log_p, reduction)
soft_margin_loss = _composition("soft_margin_loss", soft_margin_loss, amp=_FP32)


# ---- CTC ----
def _as_long(x):
    if isinstance(x, Tensor):
        return x.numpy().astype(np.int64).reshape(-1)
    return np.asarray(x, dtype=np.int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification loss: ``-log p(target | log_probs)`` summed
    over all alignments, by the forward (alpha) recursion in log space. `log_probs` is
    (T, N, C) (or (T, C) unbatched); `targets` is (N, S) padded or the targets of all
    samples concatenated. Vectorised over the batch and the extended labels; loops over time.
    'mean' divides each loss by its target length, then averages over the batch."""
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    t_len, n, c = log_probs.shape
    in_len = _as_long(input_lengths)
    tg_len = _as_long(target_lengths)
    if len(in_len) != n or len(tg_len) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, {n}")
    if (in_len > t_len).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {t_len}, but got "
                           f"value {in_len.max()}")
    tg = targets.numpy().astype(np.int64)
    s_max = int(tg_len.max()) if n else 0
    padded = np.full((n, s_max), blank, dtype=np.int64)
    if tg.ndim == 1:                      # concatenated targets
        offsets = np.concatenate([[0], np.cumsum(tg_len)[:-1]])
        for i in range(n):
            padded[i, :tg_len[i]] = tg[offsets[i]:offsets[i] + tg_len[i]]
    else:
        for i in range(n):
            padded[i, :tg_len[i]] = tg[i, :tg_len[i]]
    L = 2 * s_max + 1
    ext = np.full((n, L), blank, dtype=np.int64)
    ext[:, 1::2] = padded
    skip = np.zeros((n, L), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    neg = -1e30          # "log 0": finite, so the gradients of impossible paths stay 0
    dtype = log_probs.dtype
    # log-probabilities of the extended labels at every step: (T, N, L)
    idx = tensor(np.broadcast_to(ext, (t_len, n, L)).copy())
    lp = log_probs.gather(2, idx)
    init_ok = np.zeros((n, L), dtype=bool)
    init_ok[:, 0] = True
    if L > 1:
        init_ok[:, 1] = tg_len > 0
    negt = _full((n, 1), neg, dtype=dtype)
    alpha = where(tensor(init_ok[:, :L]), lp[0], neg) if t_len else None
    skip_t = tensor(skip)
    for t in range(1, t_len):
        a1 = cat([negt, alpha[:, :-1]], 1)
        a2 = where(skip_t, cat([negt, negt, alpha[:, :-2]], 1) if L > 2
                         else alpha, neg)
        m = maximum(maximum(alpha, a1), a2).detach()
        s = ((alpha - m).exp() + (a1 - m).exp() + (a2 - m).exp()).log() + m + lp[t]
        alpha = where(tensor((t < in_len)[:, None]), s, alpha)
    ends = tensor(np.stack([2 * tg_len, np.maximum(2 * tg_len - 1, 0)], 1))
    fin = alpha.gather(1, ends)
    fin_last = fin[:, 0]
    fin_prev = where(tensor(tg_len > 0), fin[:, 1], neg)
    m = maximum(fin_last, fin_prev).detach()
    ll = ((fin_last - m).exp() + (fin_prev - m).exp()).log() + m
    feasible = ll > neg / 2
    # PyTorch's CTC gradient w.r.t. log_probs is ``exp(log_probs) - occupancy`` (it assumes
    # log_softmax outputs; through log_softmax both give the same logits gradient). The
    # zero-valued term below adds the exp(log_probs) part over each sample's valid steps.
    valid = tensor((np.arange(t_len)[:, None] < in_len[None, :])[:, :, None])
    mass = where(valid, log_probs.exp(), 0.0).sum((0, 2))
    loss = where(feasible, -ll + (mass - mass.detach()),
                 0.0 if zero_infinity else float("inf"))
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "mean":
        return (loss / tensor(np.maximum(tg_len, 1).reshape(loss.shape), dtype=dtype)
                ).mean()
    return _reduce(loss, reduction)
# it reads index values in Python: a tracer records each call whole
# forward AD refuses it as torch does: its backward is torch's formula (the gradient with
# respect to the logits behind log_softmax), not the derivative of the computation above
ctc_loss = _whole_call("ctc_loss", ctc_loss, amp=_FP32, jvp=_NO_FORWARD_AD,
    dtypes=FLOAT32_64, dtype_kernel="ctc_loss_cpu")


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim."""
    d = max(x1.dim(), x2.dim())
    return (x1 - x2 + eps).norm(p, d - 1 if d else 0, keepdim=keepdim)
