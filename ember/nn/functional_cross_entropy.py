"""cross_entropy's eager fast path: one NumPy computation and one graph node.

The composition in functional_loss.py (log_softmax, then nll_loss) records ~12 nodes; for the
common case — (N, C) float32/float64 logits, class-index targets, no class weights, no label
smoothing, no dispatch mode active (tracers and profilers see the composition) — the loss is
computed directly and one node is recorded, whose backward is the closed form

    d loss / d x = (softmax(x) - one_hot(target)) * keep * g * scale

(keep: the targets that are not ignore_index; scale: 1 / their count for 'mean', else 1).
softmax(x) comes from the saved per-row log-sum-exp. When the backward itself is recorded
(create_graph) it runs in ember ops from x, so double backward works.
"""
import numpy as np

import ember
from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap
from ..autograd.grad_mode import state
from ..autograd import graph
from ..amp.policy import state as _amp
from ..ops.registry import OpDef, EXTERN

_FLOATS = (D.float32, D.float64)


def fused_ok(input, target, weight, reduction, label_smoothing):
    return (not state.modes and not _amp.autocast_enabled and weight is None
            and label_smoothing == 0.0 and reduction in ("mean", "sum", "none")
            and isinstance(input, Tensor) and isinstance(target, Tensor)
            and input.dtype in _FLOATS and input._data.ndim == 2 and input._data.size
            and target._data.ndim == 1 and target.dtype in (D.int64, D.int32)
            and target._data.shape[0] == input._data.shape[0])


def _input_grad(g, self, target, lse, ignore_index, reduction, count):
    keep = target != ignore_index
    safe = ember.where(keep, target, 0)
    c = self.shape[1]
    if state.enabled or state.modes:        # recorded (create_graph) or traced: ember ops
        p = ember.nn.functional.softmax(self, 1)      # not the saved lse: it depends on x
        d = (p - ember.nn.functional.one_hot(safe, c).to(self.dtype)) * \
            keep.unsqueeze(1).to(self.dtype)
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


_CROSS_ENTROPY = OpDef("cross_entropy", EXTERN, inputs=("self", "target"),
                       attrs={"lse": None, "ignore_index": -100, "reduction": "mean",
                              "count": 1},
                       grads={"self": _input_grad}, node_name="NllLossBackward0")


def cross_entropy_fused(input, target, ignore_index, reduction):
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
        graph.record(_CROSS_ENTROPY, (input, target), res,
                     {"lse": wrap(lse, input.dtype), "ignore_index": ignore_index,
                      "reduction": reduction, "count": count})
    return res
