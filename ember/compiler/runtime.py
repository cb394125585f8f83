"""Small functions that captured graphs call at replay (named in printed graphs)."""
from ..core.tensor import Tensor


def accumulate_grad(var, g):
    """Add gradient `g` into leaf `var`'s ``.grad`` as the autograd engine does (the first
    gradient is taken over, later ones are added in place); returns the ``.grad`` tensor."""
    if var._grad is None:
        if g._base is not None or g._requires_grad or not g._data.flags.c_contiguous:
            g = g.detach().clone()
        var._grad = g
    else:
        var._grad._data += g._data
        var._grad._bump_version()
    return var._grad


def grad_of(t):
    """``t.grad`` read inside a compiled function."""
    return t._grad
