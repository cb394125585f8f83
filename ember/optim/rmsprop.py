"""RMSprop (optionally centered, with momentum)."""
import numpy as np

from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _lerp_, _scalar,
                        _step_tensor, _zeros_like, _eval_closure)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
            momentum, centered, maximize = group["momentum"], group["centered"], group["maximize"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        st["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        st["grad_avg"] = _zeros_like(p)
                _incr_step(st["step"])
                g = _regularized_grad(g, x, wd, maximize)
                sq = st["square_avg"]._data
                sq *= alpha
                sq += (1 - alpha) * g * g
                if centered:
                    ga = st["grad_avg"]._data
                    _lerp_(ga, g, 1 - alpha)
                    avg = np.sqrt(sq + (-1) * ga * ga)
                else:
                    avg = np.sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf = st["momentum_buffer"]._data
                    buf *= momentum
                    buf += g / avg
                    x += (-lr) * buf
                else:
                    x += (-lr) * (g / avg)
                p._bump_version()
        return loss
