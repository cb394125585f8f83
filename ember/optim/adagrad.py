"""Adagrad: per-coordinate learning rates from the sum of squared gradients."""
import numpy as np

from ..core.tensor import Tensor
from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _scalar, _step_tensor,
                        _eval_closure)


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # Adagrad's state exists from construction (the accumulator has an initial value).
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = _step_tensor()
                st["sum"] = Tensor._make(
                    np.full(p._data.shape, group["initial_accumulator_value"], p._data.dtype),
                    p.dtype)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            lr_decay, eps = group["lr_decay"], group["eps"]
            wd, maximize = group["weight_decay"], group["maximize"]
            for p, x, g in _grads(group):
                st = self.state[p]
                step = _incr_step(st["step"])
                g = _regularized_grad(g, x, wd, maximize)
                clr = lr / (1 + (step - 1) * lr_decay)
                s = st["sum"]._data
                s += g * g
                std = np.sqrt(s)
                std += eps
                x += (-clr) * (g / std)
                p._bump_version()
        return loss
