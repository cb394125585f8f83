"""Adam and AdamW (Adam with decoupled weight decay), with amsgrad and maximize."""
import math

import numpy as np

from .fused_steps import adam_step, fusable
from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _lerp_, _scalar,
                        _step_tensor, _zeros_like, _eval_closure)


def _check_adam_args(lr, betas, eps, weight_decay):
    if not 0.0 <= _scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= _scalar(betas[0]) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= _scalar(betas[1]) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """Adam: bias-corrected first/second moment estimates; `decoupled_weight_decay=True`
    shrinks the weights directly (AdamW) instead of adding wd * p to the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            eps, wd = group["eps"], group["weight_decay"]
            amsgrad, maximize = group["amsgrad"], group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            fused = []
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        st["max_exp_avg_sq"] = _zeros_like(p)
                step = _incr_step(st["step"])
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                vmax = st["max_exp_avg_sq"]._data if amsgrad else None
                if fusable(x, g, m, v, vmax):
                    fused.append((x, g, m, v, vmax, step))    # for the group's one C call,
                    p._bump_version()                        # bitwise the NumPy path below
                    continue
                g = _regularized_grad(g, x, wd, maximize, lr, decoupled)
                _lerp_(m, g, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * g * g
                step_size = lr / (1 - beta1 ** step)
                bc2_sqrt = math.sqrt(1 - beta2 ** step)
                if amsgrad:
                    np.maximum(vmax, v, out=vmax)
                    denom = np.sqrt(vmax)
                else:
                    denom = np.sqrt(v)
                denom /= bc2_sqrt
                denom += eps
                x += (-step_size) * (m / denom)
                p._bump_version()
            if fused:
                adam_step(fused, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=wd,
                          decoupled=decoupled, maximize=maximize)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default weight_decay=1e-2)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
