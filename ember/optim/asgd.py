"""ASGD: averaged stochastic gradient descent (Polyak-Ruppert averaging, with torch's
decaying step size eta and averaging weight mu kept per parameter)."""
import numpy as np

from ..core import dtype as _dt
from ..core.tensor import Tensor
from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _scalar,
                        _step_tensor, _zeros_like, _eval_closure)


def _f32(value):
    # torch keeps eta and mu as float32 0-dim tensors
    return Tensor._make(np.array(value, np.float32), _dt.float32)


class ASGD(Optimizer):
    """``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0)``: SGD whose
    parameter decays by ``1 - lambd * eta``; ``state["ax"]`` is the running average of the
    parameter (from step t0 on).

    >>> opt = ember.optim.ASGD(model.parameters(), lr=0.01)
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["eta"] = _f32(lr)
                    st["mu"] = _f32(1.0)
                    st["ax"] = _zeros_like(p)
                step = _incr_step(st["step"])
                g = _regularized_grad(g, x, group["weight_decay"], group["maximize"])
                eta = float(st["eta"]._data)
                x *= 1 - lambd * eta
                x += (-eta) * g
                ax, mu = st["ax"]._data, float(st["mu"]._data)
                if mu != 1:
                    ax += (x - ax) * mu
                else:
                    np.copyto(ax, x)
                st["eta"]._data[...] = lr / ((1 + lambd * lr * step) ** alpha)
                st["mu"]._data[...] = 1 / max(1, step - t0)
                for k in ("eta", "mu", "ax"):
                    st[k]._bump_version()
                p._bump_version()
        return loss
