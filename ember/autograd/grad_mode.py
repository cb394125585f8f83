"""Grad modes: one thread-local state that dispatch reads on every op call.

`state.enabled` says whether ops record graph nodes; `state.inference` marks inference
mode (no version bumps, no view tracking, results are inference tensors); `state.modes`
is the stack of dispatch modes (tracing, autocast, profiling) — empty on the hot path.
"""
import functools
import threading


class _State(threading.local):
    enabled = True
    inference = False
    anomaly = False
    anomaly_check_nan = True
    modes = ()


state = _State()


def is_grad_enabled():
    """True when ops record the autograd graph (the default)."""
    return state.enabled


def is_inference_mode_enabled():
    return state.inference


class _DecoratorContextManager:
    """Base for grad-mode contexts that also work as decorators."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError("grad-mode decorators apply to functions, not classes")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable graph recording: ``with ember.no_grad(): y = x * 2`` gives ``y.requires_grad == False``."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Re-enable graph recording inside a ``no_grad`` region."""

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """``set_grad_enabled(False)`` turns recording off now, or for a ``with`` block."""

    def __init__(self, mode):
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad`` and cheaper: tensors made inside are inference tensors, which autograd
    refuses to record later. ``inference_mode(False)`` is a no-op region."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __call__(self, fn=None):
        if isinstance(fn, bool):
            return inference_mode(fn)
        return super().__call__(fn)

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled = False
            state.inference = True
        else:
            state.enabled = True
            state.inference = False

    def __exit__(self, *exc):
        state.enabled, state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)
