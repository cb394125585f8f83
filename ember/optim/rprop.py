"""Rprop: resilient backpropagation, a per-element step size grown (etaplus) while the
gradient keeps its sign and shrunk (etaminus) when it flips; only the sign of the gradient
is used."""
import numpy as np

from ..core.tensor import Tensor
from .optimizer import Optimizer, _grads, _incr_step, _scalar, _step_tensor, _zeros_like, \
    _eval_closure


class Rprop(Optimizer):
    """``Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50))``.

    >>> opt = ember.optim.Rprop(model.parameters())
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if not st:
                    st["step"] = _step_tensor()
                    st["prev"] = _zeros_like(p)
                    ss = _zeros_like(p)
                    ss._data[...] = _scalar(group["lr"])
                    st["step_size"] = ss
                _incr_step(st["step"])
                if group["maximize"]:
                    g = -g
                prev, size = st["prev"]._data, st["step_size"]._data
                sign = np.asarray(np.sign(g * prev))   # (0-d for a 0-dim parameter)
                factor = sign.copy()       # torch's in-place rewrite, NaN left as is
                factor[sign > 0] = etaplus
                factor[sign < 0] = etaminus
                factor[sign == 0] = 1
                size *= factor
                np.clip(size, lo, hi, out=size)
                g = np.array(g)
                g[factor == factor.dtype.type(etaminus)] = 0   # no step where the sign flipped
                x -= np.sign(g) * size
                np.copyto(prev, g)
                st["prev"]._bump_version()
                st["step_size"]._bump_version()
                p._bump_version()
        return loss
