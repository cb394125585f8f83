"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
import numpy as np

from ..core.tensor import Tensor
from .fused_steps import fusable, sgd_step
from .optimizer import Optimizer, _regularized_grad, _grads, _scalar, _eval_closure


def _check_common(lr, weight_decay):
    if _scalar(lr) < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if weight_decay < 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class SGD(Optimizer):
    """p <- p - lr * v, v the (optionally momentum-averaged, Nesterov) gradient."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check_common(lr, weight_decay)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            momentum, dampening = group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            fused = []
            for p, x, g in _grads(group):
                if self._queue_fused(p, x, g, momentum, fused):
                    continue
                g = _regularized_grad(g, x, wd, maximize)
                if momentum != 0:
                    st = self.state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        # first step: the buffer starts as a copy of the gradient
                        st["momentum_buffer"] = buf = Tensor._make(np.array(g, copy=True),
                                                                   p.dtype)
                        b = buf._data
                    else:
                        b = buf._data
                        b *= momentum
                        if dampening:
                            b += (1 - dampening) * g
                        else:
                            b += g          # the default: no temporary
                        buf._bump_version()
                    g = g + momentum * b if nesterov else b
                x += (-lr) * g
                p._bump_version()
            if fused:
                sgd_step(fused, lr=lr, momentum=momentum, dampening=dampening,
                         weight_decay=wd, nesterov=nesterov, maximize=maximize)
        return loss

    def _queue_fused(self, p, x, g, momentum, fused):
        """Queue p's update for the group's one C call (fused_steps.py: bitwise the NumPy
        path); False where that kernel does not apply."""
        buf, first = None, False
        if momentum != 0:
            st = self.state[p]
            buf = st.get("momentum_buffer")
            if buf is None:
                if not fusable(x, g):
                    return False
                first = True          # (the kernel sets it to the gradient, as below)
                st["momentum_buffer"] = buf = Tensor._make(np.array(g, copy=True), p.dtype)
            elif not fusable(x, g, buf._data):
                return False
            else:
                buf._bump_version()
        elif not fusable(x, g):
            return False
        fused.append((x, g, None if buf is None else buf._data, first))
        p._bump_version()
        return True
