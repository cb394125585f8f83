"""Adafactor: Adam-like steps with the second moment of a matrix kept as a row and a column
factor (memory O(n + m) instead of O(nm)), a relative step size and update clipping."""
import math

import numpy as np

from ..core.tensor import Tensor
from .optimizer import Optimizer, _grads, _incr_step, _lerp_, _scalar, _step_tensor, \
    _zeros_like, _eval_closure


class Adafactor(Optimizer):
    """``Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
    weight_decay=0.0)`` (torch's variant: the update is scaled by the parameter's RMS).

    >>> opt = ember.optim.Adafactor(model.parameters())
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            eps1, eps2 = group["eps"]
            d, wd, decay = group["d"], group["weight_decay"], group["beta2_decay"]
            for p, x, g in _grads(group):
                if getattr(p.dtype, "is_complex", False):
                    raise RuntimeError("Adafactor does not support complex parameters")
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    if g.ndim > 1:
                        row = Tensor._make(np.zeros(g.shape[:-1] + (1,), g.dtype), p.dtype)
                        col = Tensor._make(np.zeros(g.shape[:-2] + (1, g.shape[-1]), g.dtype),
                                           p.dtype)
                        st["row_var"], st["col_var"] = row, col
                    else:
                        st["variance"] = _zeros_like(p)
                if group["maximize"]:
                    g = -g
                e1 = float(np.finfo(x.dtype).eps) if eps1 is None else eps1
                t = _incr_step(st["step"])
                beta = t ** decay
                rho = min(lr, 1 / t ** 0.5)
                alpha = max(eps2, float(np.linalg.norm(x.ravel())) / math.sqrt(x.size)) * rho
                if wd != 0:
                    x *= 1 - lr * wd
                if g.ndim > 1:
                    row, col = st["row_var"]._data, st["col_var"]._data
                    _lerp_(row, np.square(np.sqrt(np.sum(g * g, axis=-1, keepdims=True)))
                           / g.shape[-1], beta)
                    _lerp_(col, np.square(np.sqrt(np.sum(g * g, axis=-2, keepdims=True)))
                           / g.shape[-2], beta)
                    est = row @ col
                    est /= np.maximum(row.mean(axis=-2, keepdims=True), e1)
                    st["row_var"]._bump_version()
                    st["col_var"]._bump_version()
                else:
                    v = st["variance"]._data
                    _lerp_(v, g * g, beta)
                    est = v.copy()
                    st["variance"]._bump_version()
                update = 1 / np.sqrt(np.maximum(est, e1 * e1))
                update *= g
                denom = max(1.0, float(np.linalg.norm(update.ravel()))
                            / (math.sqrt(update.size) * d))
                x += (-alpha / denom) * update
                p._bump_version()
        return loss
