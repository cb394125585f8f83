"""Adamax: Adam with the infinity norm in place of the second moment."""
import numpy as np

from .adam import _check_adam_args
from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _lerp_, _scalar,
                        _step_tensor, _zeros_like, _eval_closure)


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_inf"] = _zeros_like(p)
                step = _incr_step(st["step"])
                g = _regularized_grad(g, x, wd, maximize)
                m, u = st["exp_avg"]._data, st["exp_inf"]._data
                _lerp_(m, g, 1 - beta1)
                u *= beta2
                np.maximum(u, np.abs(g) + eps, out=u)
                clr = lr / (1 - beta1 ** step)
                x += -clr * (m / u)
                p._bump_version()
        return loss
