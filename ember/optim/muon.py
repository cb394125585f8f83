"""Muon: SGD-momentum whose update is orthogonalised by a Newton-Schulz iteration (run in
bfloat16, as torch does), for the 2-D weights of hidden layers."""
import math

import numpy as np

from ..core.tensor import Tensor
from ..ops.registry import FUNCTIONS
from .optimizer import Optimizer, _grads, _lerp_, _scalar, _zeros_like, _eval_closure

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """The quintic Newton-Schulz iteration towards the orthogonal factor U V^T of `grad`
    (in bfloat16; the result is U S' V^T with S' near 1, which is what Muon wants)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.bfloat16()
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    addmm = FUNCTIONS["addmm"]
    for _ in range(ns_steps):
        gram = x @ x.T
        x = addmm(x, addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    A, B = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """``Muon(params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None)``:
    2-D parameters only (use AdamW for the others).

    >>> opt = ember.optim.Muon([p for p in model.parameters() if p.ndim == 2], lr=0.02)
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        loss = _eval_closure(closure)
        for group in self.param_groups:
            lr, wd, mom = _scalar(group["lr"]), group["weight_decay"], group["momentum"]
            for p, x, g in _grads(group):
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = _zeros_like(p)
                buf = st["momentum_buffer"]._data
                _lerp_(buf, g, 1 - mom)
                if group["nesterov"]:
                    upd = np.array(g)
                    _lerp_(upd, buf, mom)
                else:
                    upd = buf
                o = _zeropower_via_newtonschulz(Tensor._make(np.array(upd), p.dtype),
                                                group["ns_coefficients"], group["ns_steps"],
                                                group["eps"])
                step = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                x *= 1 - lr * wd
                x += (-step) * o.float().numpy().astype(x.dtype)
                st["momentum_buffer"]._bump_version()
                p._bump_version()
        return loss
