"""``ember.autocast``: regions where listed ops run in a lower-precision dtype.

    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = model(x)          # Linear/conv/matmul in bfloat16, losses in float32
    loss.backward()           # gradients reach float32 parameters in float32

The state is the thread-local ``grad_mode.state`` (``autocast_enabled``/``autocast_dtype``);
which op casts what lives in ``policy.py``. Regions nest, ``enabled=False`` turns autocast off
inside an enabled region, and every exit restores the previous state. ember computes on the
CPU, so a "cuda" region is disabled with PyTorch's warning (as on a machine without CUDA).
"""
import functools
import inspect
import warnings

from ..core import dtype as D
from ..autograd.grad_mode import state
from . import policy

_DEFAULT_DTYPE = {"cpu": D.bfloat16, "cuda": D.float16}
_KNOWN = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
          "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
          "privateuseone")
_cuda_dtype = D.float16   # set_autocast_dtype("cuda", ...) is remembered, never used


class autocast:
    """Context manager and decorator: ``with autocast("cpu"):`` or ``@autocast("cpu")``."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _KNOWN:
            raise RuntimeError(f"Expected one of {', '.join(_KNOWN)} device type at start of "
                               f"device string: {device_type}")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        # None: the current setting (ember.set_autocast_cache_enabled), read here as PyTorch
        self._cache_enabled = policy.cache.enabled if cache_enabled is None else \
            bool(cache_enabled)
        self._args = (device_type, dtype, enabled, cache_enabled)
        if device_type == "cpu":
            if self._enabled and self.fast_dtype not in (D.bfloat16, D.float16):
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              "ember.bfloat16, ember.float16 currently.")
                self._enabled = False
        elif self._enabled:
            warnings.warn(f"User provided device_type of '{device_type}', but ember only "
                          "computes on the CPU. Disabling autocast.")
            self._enabled = False
        self._prev = []

    def __enter__(self):
        c = policy.cache
        self._prev.append((state.autocast_enabled, state.autocast_dtype, c.enabled))
        if c.depth == 0:
            c.casts = {}
        c.depth += 1
        if self.device == "cpu":   # other devices leave the (CPU) state alone
            state.autocast_enabled = self._enabled
            state.autocast_dtype = self.fast_dtype
            c.enabled = self._cache_enabled
        return self

    def __exit__(self, *exc):
        c = policy.cache
        state.autocast_enabled, state.autocast_dtype, c.enabled = self._prev.pop()
        c.depth -= 1
        if c.depth == 0:
            c.casts = None   # PyTorch frees the weight-cast cache on leaving the outermost region
        return False

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn) or isinstance(fn, type):
            raise TypeError("autocast decorates plain functions")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(*self._args):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type`; with no argument, for CUDA (as PyTorch),
    which ember never enables."""
    if device_type is None or device_type != "cpu":
        return False
    return state.autocast_enabled


def is_autocast_cpu_enabled():
    return state.autocast_enabled


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:   # the old one-argument form set CUDA's flag
        return
    if device_type == "cpu":
        state.autocast_enabled = bool(enabled)
        if state.autocast_dtype is None:
            state.autocast_dtype = D.bfloat16
        if policy.cache.casts is None:
            policy.cache.casts = {}


def get_autocast_dtype(device_type):
    if device_type == "cpu":
        return state.autocast_dtype if state.autocast_dtype is not None else D.bfloat16
    if device_type == "cuda":
        return _cuda_dtype
    return _DEFAULT_DTYPE.get(device_type, D.bfloat16)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_dtype(device_type, dtype):
    global _cuda_dtype
    if device_type == "cpu":
        state.autocast_dtype = dtype
    elif device_type == "cuda":
        _cuda_dtype = dtype


def is_autocast_cache_enabled():
    return policy.cache.enabled


def clear_autocast_cache():
    if policy.cache.casts is not None:
        policy.cache.casts.clear()
