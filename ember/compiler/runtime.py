"""Small functions that captured graphs call at replay (named in printed graphs)."""
from ..autograd.engine import accumulate_into


def accumulate_grad(var, g):
    """Add gradient `g` into leaf `var`'s ``.grad`` by the autograd engine's rule (the first
    gradient is taken over when it has `var`'s layout, else copied into it; later ones are
    added in place); returns the ``.grad`` tensor."""
    accumulate_into(var, g, not g._requires_grad, False)
    return var._grad


def grad_of(t):
    """``t.grad`` read inside a compiled function."""
    return t._grad
