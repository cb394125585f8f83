"""Grad modes: one thread-local state that dispatch reads on every op call.

`state.enabled` says whether ops record graph nodes; `state.inference` marks inference
mode (no version bumps, no view tracking, results are inference tensors); `state.modes`
is the stack of dispatch modes (tracing, autocast, profiling) — empty on the hot path.
"""
import functools
import inspect
import threading

from ..core import tensor as _tensor_module


class _State(threading.local):
    enabled = True
    inference = False
    anomaly = False
    anomaly_check_nan = True
    modes = ()
    autocast_enabled = False   # ember.autocast: listed ops cast their inputs (ember/amp/policy.py)
    autocast_dtype = None      # the lower-precision dtype of the innermost autocast region
    grad_layout_enforced = True  # a first .grad is laid out like its leaf (engine.accumulate_into)

    def __init__(self):
        # (run once per thread) every field in this thread's own dict: a read then finds it
        # at the first lookup instead of missing there and falling back to the class, ~40 %
        # cheaper, and hot paths may read several fields from `state.__dict__` at once
        d = self.__dict__
        for k in _FIELDS:
            d[k] = getattr(_State, k)


_FIELDS = ("enabled", "inference", "anomaly", "anomaly_check_nan", "modes", "autocast_enabled",
           "autocast_dtype", "grad_layout_enforced")


state = _State()
# the data layer reads the state through this slot (ember/core/tensor.py names no layer above)
_tensor_module.grad_mode_state = state


# ---- the mode seam: tracing, profiling, autocast-like interceptors ----
def call_mode(op, fn, args, kwargs):
    """Hand one op call to the innermost active mode. The mode gets the op (an OpDef, or the
    method's name for helpers outside the registry) and `fn`, which runs the op normally;
    while the mode runs, it is popped off the stack, so calling `fn` does not recurse."""
    saved = state.modes
    mode = saved[-1]
    state.modes = saved[:-1]
    try:
        return mode.call(op, fn, args, kwargs)
    finally:
        state.modes = saved


def is_grad_enabled():
    """True when ops record the autograd graph (the default)."""
    return state.enabled


def is_inference_mode_enabled():
    return state.inference


class _DecoratorContextManager:
    """Base for grad-mode contexts that also work as decorators (generators included: the
    mode is entered around each step, so the caller's mode applies between steps)."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError("grad-mode decorators apply to functions, not classes")
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            step, value = gen.send, None
            while True:
                try:
                    with self.clone():
                        out = step(value)
                except StopIteration as stop:
                    return stop.value
                try:
                    value, step = (yield out), gen.send
                except GeneratorExit:
                    with self.clone():
                        gen.close()
                    raise
                except BaseException as e:  # noqa: BLE001 - forwarded into the generator
                    value, step = e, gen.throw
        return wrapper

    def clone(self):
        return self.__class__()


class _NoParamDecorator(_DecoratorContextManager):
    """Also usable bare: ``@ember.no_grad`` as well as ``@ember.no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):
    """Disable graph recording: ``with ember.no_grad(): y = x * 2`` gives ``y.requires_grad == False``."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev


class enable_grad(_NoParamDecorator):
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

    def __call__(self, fn):
        state.enabled = self.prev   # used as a decorator: the mode applies inside calls only
        return super().__call__(fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):
    """``enforce_grad_layout_policy(False)`` relaxes the gradient layout contract, now or for
    a ``with`` block: a leaf's first gradient that nobody else holds is then kept as it came
    (its own strides) instead of being copied into the leaf's layout. Copies the engine must
    make anyway are unaffected. Thread-local, like the grad mode."""

    def __init__(self, enable=True):
        self.prev = state.grad_layout_enforced
        self.mode = enable
        state.grad_layout_enforced = bool(enable)

    def __call__(self, fn):
        state.grad_layout_enforced = self.prev   # as a decorator: applies inside calls only
        return super().__call__(fn)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.grad_layout_enforced = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad`` and cheaper: tensors made inside are inference tensors, which autograd
    refuses to record later. ``inference_mode(False)`` is a no-op region."""

    def __new__(cls, mode=True):
        if mode is not True:
            if callable(mode):   # bare ``@inference_mode``
                return cls()(mode)
            mode = bool(mode)
        # everything is set here, with no __init__: one Python call per ``with`` block
        self = object.__new__(cls)
        self.mode = mode
        return self

    def __enter__(self):
        # this thread's state as a plain dict: one thread-local lookup for the whole block
        # (each `state.x` access is one), which keeps inference_mode cheaper than no_grad
        d = self._dict = state.__dict__
        self._prev = d["enabled"], d["inference"]
        d["enabled"] = not self.mode
        d["inference"] = self.mode

    def __exit__(self, typ, value, tb):
        d = self._dict
        d["enabled"], d["inference"] = self._prev

    def clone(self):
        return self.__class__(self.mode)
