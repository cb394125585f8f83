"""Adadelta: unit-corrected adaptive steps from running averages of g^2 and dx^2."""
import numpy as np

from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _scalar, _step_tensor,
                        _zeros_like, _eval_closure)


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, capturable=capturable, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            rho, eps = group["rho"], group["eps"]
            wd, maximize = group["weight_decay"], group["maximize"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["square_avg"] = _zeros_like(p)
                    st["acc_delta"] = _zeros_like(p)
                _incr_step(st["step"])
                g = _regularized_grad(g, x, wd, maximize)
                sq, acc = st["square_avg"]._data, st["acc_delta"]._data
                sq *= rho
                sq += (1 - rho) * g * g
                std = np.sqrt(sq + eps)
                delta = np.sqrt(acc + eps)
                delta /= std
                delta *= g
                acc *= rho
                acc += (1 - rho) * delta * delta
                x += (-lr) * delta
                p._bump_version()
        return loss
