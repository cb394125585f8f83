"""cross_entropy and nll_loss as COMPOSITE ops (see nn_ops.py for how a composite picks its
path), with the reduction helpers the other losses of nn.functional share.

cross_entropy's fast path — (N, C) float32/float64 logits, class-index targets, no class
weights, no label smoothing — computes the loss in NumPy and records one node, whose
backward is the closed form

    d loss / d x = (softmax(x) - one_hot(target)) * keep * g * scale

(keep: the targets that are not ignore_index; scale: 1 / their count for 'mean', else 1).
softmax(x) comes from the saved per-row log-sum-exp. When the backward itself is recorded
(create_graph) or traced it runs in ember ops from x, so double backward works.
"""
import warnings

import numpy as np

from ..core import dtype as D
from ..core.tensor import Tensor
from .. import dispatch
from ..dispatch import wrap
from ..dispatch_args import tensor_args, ARG_ERRORS, raise_as_torch
from ..autograd.grad_mode import state
from ..autograd import graph
from ..core.meta import MetaArray, MetaData
from .registry import FP32
from . import batch_rules as _br
from .nn_ops import E, FLOATS, composite, under_mode, decomposing, softmax, log_softmax, \
    one_hot
from .dtype_support import FLOATING, check_dtype

_HALF = (D.float16, D.bfloat16)


# ---- shared by the losses ---------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction):
    """The deprecated size_average/reduce pair mapped to a reduction string."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.".format(
                      "none" if reduce is False else
                      ("sum" if size_average is False else "mean")))
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _up(*ts):
    """Half-precision tensors promoted to float32 (others unchanged), and the dtype to cast
    the result back to."""
    out_dtype = ts[0].dtype
    return [t.float() if isinstance(t, Tensor) and t.dtype in _HALF else t
            for t in ts], out_dtype


def _down(loss, dtype):
    return loss.to(dtype) if dtype in _HALF else loss


# ---- nll_loss ---------------------------------------------------------------------------
def _nll_loss_decomp(input, target, weight=None, size_average=None, ignore_index=-100,
                     reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        if target.dim() != 0:
            raise ValueError(f"Expected input batch_size ({1}) to match target batch_size "
                             f"({target.shape[0] if target.dim() else 1}).")
        input, target, squeeze = input.unsqueeze(0), target.unsqueeze(0), True
    else:
        squeeze = False
        if input.shape[0] != (target.shape[0] if target.dim() else -1):
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                             f"batch_size ({target.shape[0] if target.dim() else 1}).")
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}"
                               f", got {list(target.shape)}")
    if target.dtype.is_floating_point:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{dispatch.torch_name(target.dtype)}")
    c = input.shape[1]
    keep = target != ignore_index
    safe = E.where(keep, target, 0)
    t_np = safe._data      # a bounds check only: a compiler trace need not break here
    # (meta targets have no values to check)
    if t_np.size and type(t_np) is not MetaArray and (t_np.min() < 0 or t_np.max() >= c):
        bad = t_np[(t_np < 0) | (t_np >= c)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = -input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = (E.ones((), dtype=input.dtype) if weight is None
         else weight.to(input.dtype)[safe.reshape(-1)].reshape(safe.shape))
    w = E.where(keep, w, 0.0).to(input.dtype)
    loss = picked * w
    if squeeze:
        loss, w = loss.squeeze(0), w.squeeze(0)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """``-input[n, target[n]] * weight[target[n]]``; input is (N, C, d1, ...) or (C,) of
    log-probabilities. 'mean' divides by the summed weights of the non-ignored targets."""
    try:
        check_dtype(NLL_LOSS, input)
        if state.autocast_enabled:    # NLL_LOSS.amp: float32
            return dispatch.autocast_hook(NLL_LOSS, nll_loss, (), dict(locals()))
        if state.modes:
            return under_mode(NLL_LOSS, nll_loss, (input, target, weight, size_average,
                                                   ignore_index, reduce, reduction))
        return _nll_loss_decomp(input, target, weight, size_average, ignore_index, reduce,
                                reduction)
    except ARG_ERRORS as exc:    # (a choice function is its own seam: free until it raises)
        raise_as_torch(NLL_LOSS, nll_loss, (input, target, weight), {}, exc)


NLL_LOSS = composite("nll_loss", nll_loss, _nll_loss_decomp, function=False, method=False,
                     amp=FP32,
    dtypes=FLOATING, dtype_kernel="nll_loss_out_frame")


# ---- cross_entropy ----------------------------------------------------------------------
def _cross_entropy_composition(input, target, weight, ignore_index, reduction,
                               label_smoothing):
    (input, weight), dt = _up(input, weight)
    cdim = 1 if input.dim() >= 2 else 0
    c = input.shape[cdim] if input.dim() else 1
    logp = log_softmax(input, cdim)
    wshape = [1] * input.dim()
    if weight is not None:
        wshape[cdim] = c
        wb = weight.reshape(wshape)
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected target size {list(input.shape)}, got "
                               f"{list(target.shape)}")
        target = target.to(input.dtype)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        prod = logp * target if weight is None else logp * target * wb
        loss = -prod.sum(cdim)
        if reduction == "mean":
            n = input.numel() // c if input.dim() else 1
            return _down(loss.sum() / n, dt)
        return _down(_reduce(loss, reduction), dt)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return _down(nll, dt)
    keep = target != ignore_index
    smooth = -(logp if weight is None else logp * wb).sum(cdim)
    smooth = E.where(keep, smooth, 0.0)
    if reduction == "mean":
        if weight is None:
            smooth = smooth.sum() / keep.sum()
        else:
            safe = E.where(keep, target, 0)
            smooth = smooth.sum() / E.where(keep, weight[safe], 0.0).sum()
    else:
        smooth = _reduce(smooth, reduction)
    return _down((1 - label_smoothing) * nll + smooth * (label_smoothing / c), dt)


def _check_label_smoothing(label_smoothing):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _cross_entropy_decomp(input, target, weight=None, size_average=None, ignore_index=-100,
                          reduce=None, reduction="mean", label_smoothing=0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_label_smoothing(label_smoothing)
    return _cross_entropy_composition(input, target, weight, ignore_index, reduction,
                                      label_smoothing)


def _fast_ok(input, target, weight, reduction, label_smoothing):
    return (weight is None and label_smoothing == 0.0 and reduction in ("mean", "sum", "none")
            and isinstance(input, Tensor) and isinstance(target, Tensor)
            and input.dtype in FLOATS and input._data.ndim == 2 and input._data.size
            and target._data.ndim == 1 and target.dtype in (D.int64, D.int32)
            and target._data.shape[0] == input._data.shape[0])


def _input_grad(g, self, target, lse, ignore_index, reduction, count):
    keep = target != ignore_index
    safe = E.where(keep, target, 0)
    c = self.shape[1]
    if state.enabled or (state.modes and decomposing()):   # recorded or traced: ember ops
        p = softmax(self, 1)                 # not the saved lse: it depends on x
        d = (p - one_hot(safe, c).to(self.dtype)) * keep.unsqueeze(1).to(self.dtype)
        gs = g.unsqueeze(1) if reduction == "none" else g
        # all targets ignored: d is 0 and so is the gradient (as PyTorch), never 0/0
        return d * gs / max(count, 1) if reduction == "mean" else d * gs
    x, k = self._data, keep._data
    d = np.exp(x - lse._data[:, None])
    d[np.arange(x.shape[0]), safe._data] -= 1
    d *= k[:, None]
    gv = g._data
    if reduction == "none":
        d *= gv[:, None]
    else:
        d *= (gv / max(count, 1)) if reduction == "mean" else gv
    return wrap(d, self.dtype)


def _cross_entropy_fast(input, target, ignore_index, reduction):
    x, t = input._data, target._data
    n, c = x.shape
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = safe[(safe < 0) | (safe >= c)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    m = x.max(axis=1)
    lse = np.log(np.add.reduce(np.exp(x - m[:, None]), axis=1))
    lse += m
    per_row = (lse - x[np.arange(n), safe]) * keep
    count = int(keep.sum())
    if reduction == "none":
        loss = per_row.astype(x.dtype, copy=False)
    elif reduction == "sum":
        loss = np.asarray(per_row.sum(), dtype=x.dtype)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):    # all ignored: nan, as torch
            loss = np.asarray(per_row.sum() / x.dtype.type(count), dtype=x.dtype)
    res = wrap(loss, input.dtype)
    if state.enabled and input._requires_grad:
        graph.record(CROSS_ENTROPY, (input, target), res,
                     {"lse": wrap(lse, input.dtype), "ignore_index": ignore_index,
                      "reduction": reduction, "count": count})
    return res


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, class dim), target)`` for class-index targets, or
    ``-sum(target * log_softmax(input))`` for class-probability targets; `label_smoothing`
    mixes the targets with the uniform distribution."""
    tensor_args("cross_entropy_loss", ("input", 1, input), ("target", 2, target))
    check_dtype(CROSS_ENTROPY, input)
    if state.autocast_enabled:    # CROSS_ENTROPY.amp: float32
        return dispatch.autocast_hook(CROSS_ENTROPY, cross_entropy, (), dict(locals()))
    if state.modes:
        return under_mode(CROSS_ENTROPY, cross_entropy,
                          (input, target, weight, size_average, ignore_index, reduce,
                           reduction, label_smoothing))
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_label_smoothing(label_smoothing)
    if _fast_ok(input, target, weight, reduction, label_smoothing):
        try:
            return _cross_entropy_fast(input, target, ignore_index, reduction)
        except MetaData:    # a meta input: the composition is its meta rule
            pass
    return _cross_entropy_composition(input, target, weight, ignore_index, reduction,
                                      label_smoothing)


CROSS_ENTROPY = composite("cross_entropy", cross_entropy, _cross_entropy_decomp, amp=FP32,
                          dtypes=FLOATING, dtype_kernel="log_softmax_lastdim_kernel_impl",
                          fused=_cross_entropy_fast, inputs=("self", "target"),
                          attrs={"lse": None, "ignore_index": -100, "reduction": "mean",
                                 "count": 1},
                          grads={"self": _input_grad}, node_name="NllLossBackward0",
                          function=False, method=False)

# vmap batching rule (ember/ops/batch_rules.py)
NLL_LOSS.batch = CROSS_ENTROPY.batch = _br.loss_batch
