"""Legacy autograd names real code still uses: ``Variable`` (a tensor since torch 0.4),
``variable`` (refused, as in torch), and the engine's flags (multithreading, view replay,
kineto).

    from ember.autograd import Variable
    w = Variable(ember.randn(3), requires_grad=True)   # just a leaf tensor
    isinstance(ember.ones(1), Variable)                # True, every tensor is one
"""
import warnings

from ..core.tensor import Tensor
from ..core.dtype import float32
from ..ops.creation import empty

__all__ = ["Variable", "variable", "is_multithreading_enabled", "set_multithreading_enabled",
           "is_view_replay_enabled", "kineto_available"]


class VariableMeta(type):
    """Makes every Tensor an instance of Variable and ``Variable(...)`` return a Tensor."""

    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)

    def __call__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            return empty(0, dtype=float32)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()        # shares data's memory, a new leaf
        if requires_grad:
            out.requires_grad_(True)
        return out


class Variable(metaclass=VariableMeta):
    """``Variable(tensor, requires_grad=False)``: the tensor's data as a new leaf (torch's
    pre-0.4 wrapper, now an alias of Tensor).

    >>> Variable(ember.ones(2), requires_grad=True).is_leaf
    True
    """


def variable(*args, **kwargs):
    """torch refuses this old constructor; so does ember."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")


_multithreading = True


def is_multithreading_enabled():
    """Whether backward may run on device threads (torch's default: True). ember's engine
    runs every backward in the calling thread, so the flag changes nothing here."""
    return _multithreading


class set_multithreading_enabled:
    """Context manager (or call) that sets `is_multithreading_enabled()`."""

    def __init__(self, mode):
        global _multithreading
        self.prev = _multithreading
        self.mode = bool(mode)
        _multithreading = self.mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        global _multithreading
        _multithreading = self.prev

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.mode):
                return fn(*args, **kwargs)
        return wrapper


def is_view_replay_enabled():
    """False: ember rebuilds a view's graph from its base's node, never by replaying view
    ops (torch's default is False too)."""
    return False


def kineto_available():
    """False: ember's profiler (ember.profiler) is its own, not Kineto."""
    return False
