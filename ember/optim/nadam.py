"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""
import numpy as np

from ..core import dtype as _dt
from ..core.tensor import Tensor
from .adam import _check_adam_args
from .optimizer import (Optimizer, _regularized_grad, _grads, _incr_step, _lerp_, _scalar,
                        _step_tensor, _zeros_like, _eval_closure)


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
            psi, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    # running product of the momentum coefficients, float32 like PyTorch's
                    st["mu_product"] = Tensor._make(np.ones((), np.float32), _dt.float32)
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                step = _incr_step(st["step"])
                bc2 = 1 - beta2 ** step
                g = _regularized_grad(g, x, wd, maximize, lr, decoupled)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
                mp = st["mu_product"]._data
                mp *= mu
                mu_product = float(mp)
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                _lerp_(m, g, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * g * g
                denom = np.sqrt(v / bc2)
                denom += eps
                x += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (g / denom)
                x += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (m / denom)
                p._bump_version()
        return loss
