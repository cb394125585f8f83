"""RAdam: Adam with the variance of the adaptive learning rate rectified."""

import numpy as np

from .adam import _check_adam_args
from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _lerp_, _scalar,
                        _step_tensor, _zeros_like, _eval_closure)


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                step = _incr_step(st["step"])
                g = _regularized_grad(g, x, wd, maximize, lr, decoupled)
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                _lerp_(m, g, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * g * g
                bc1 = 1 - beta1 ** step
                bc2 = 1 - beta2 ** step
                upd = m / bc1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
                upd *= lr
                if rho_t > 5.0:
                    # rectified step: adaptive lr times the variance rectification term
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    denom = np.sqrt(v)
                    denom += eps
                    upd *= bc2 ** 0.5 / denom
                    upd *= rect
                x -= upd
                p._bump_version()
        return loss
