"""torch's top-level settings, constructors and glue that were missing: the warn-always and
deterministic-debug flags, the legacy autocast and anomaly setters,
set_default_tensor_type, asarray / frombuffer / from_file / empty_permuted, to_dlpack,
gradient, norm_except_dim, and the eager forms of torch.cond / torch.while_loop.

Settings with no effect on NumPy kernels are still recorded and read back as torch does, or
answer as torch does on a machine without the feature (set_flush_denormal returns False: NumPy
cannot flush denormals). (The float32 matmul precision is ember.backends'.)
ember/__init__.py publishes `__all__`.
"""
import builtins
import warnings

import numpy as np

from .core import dtype as D
from .core.tensor import Tensor
from .core.storage import Storage
from .ops.registry import FUNCTIONS as F
from .autograd.grad_mode import state as _grad_state
from .amp import autocast_mode as _amp, policy as _policy

_settings = {"warn_always": False, "deterministic": False,
             "warn_only": False}


# ---- settings -----------------------------------------------------------------------------
def set_warn_always(b):
    """Make warnings that torch shows once show every time (the flag is recorded)."""
    _settings["warn_always"] = builtins.bool(b)


def is_warn_always_enabled():
    return _settings["warn_always"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """ember's CPU kernels are deterministic; the flags are recorded for the ops and
    settings that consult them (get_deterministic_debug_mode)."""
    _settings["deterministic"] = builtins.bool(mode)
    _settings["warn_only"] = builtins.bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _settings["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _settings["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """0 / "default": off; 1 / "warn": deterministic, warning only; 2 / "error": on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _settings["deterministic"]:
        return 0
    return 1 if _settings["warn_only"] else 2


def set_flush_denormal(mode):
    """False: NumPy's kernels cannot be told to flush denormals (torch answers the same
    on a machine without the feature)."""
    return False


def init_num_threads():
    """Nothing to initialise: ember's thread pools start on first use."""


def set_default_tensor_type(t):
    """The legacy form of set_default_dtype: a float tensor type or its name."""
    if isinstance(t, str):
        dt = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
              "BFloat16Tensor": D.bfloat16}.get(t.split(".")[-1])
    else:
        dt = getattr(t, "dtype", None)       # ember.DoubleTensor.dtype is float64
    if dt is None or not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    D.set_default_dtype(dt)


def set_autocast_cpu_enabled(enabled):
    _amp.set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype):
    _amp.set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    _amp.set_autocast_dtype("cuda", dtype)


def get_autocast_gpu_dtype():
    return _amp.get_autocast_dtype("cuda")


def set_autocast_cache_enabled(enabled):
    _policy.cache.enabled = builtins.bool(enabled)


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off (the function form of set_detect_anomaly)."""
    _grad_state.anomaly = builtins.bool(enabled)
    _grad_state.anomaly_check_nan = builtins.bool(check_nan)


def is_anomaly_check_nan_enabled():
    return _grad_state.anomaly_check_nan


# ---- construction ---------------------------------------------------------------------------
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from `obj`, sharing its memory when it can (a tensor or NumPy array of the
    dtype asked for) unless copy=True; copy=False refuses to copy."""
    if isinstance(obj, Tensor):
        r = obj if dtype is None or obj.dtype is dtype else obj.to(dtype)
        if copy:
            r = r.clone() if r is obj else r
        elif copy is False and r is not obj:
            raise ValueError("can't alias tensor from device 'cpu' to device 'cpu' with a "
                             "different dtype")
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__") or \
            hasattr(obj, "__array__"):
        a = np.asarray(obj)
        if dtype is not None and a.dtype != dtype.np:
            if copy is False:
                raise ValueError("can't alias NumPy array with a different dtype")
            a = a.astype(dtype.np)
        elif copy:
            a = a.copy()
        r = F["from_numpy"](a) if a.dtype in D.FROM_NP else F["tensor"](a, dtype=dtype)
    else:
        if copy is False:
            raise ValueError("can't alias a Python sequence: copy=False cannot be honoured")
        r = F["tensor"](obj, dtype=dtype)
    if device is not None and str(r.device) != str(device):
        r = r.to(device)
    return r.requires_grad_() if requires_grad else r


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor viewing the bytes of a Python buffer (no copy; it shares the memory)."""
    if count == 0 or len(memoryview(buffer)) == 0:
        raise ValueError("both buffer length (0) and count (0) must not be 0")
    a = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    if not a.flags.writeable:     # (torch shares it anyway; writing to it is undefined)
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors.")
    r = F["from_numpy"](a)
    return r.requires_grad_() if requires_grad else r


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """A 1-d tensor of `size` elements read from a binary file (memory-mapped, writes going
    to the file, with shared=True)."""
    dt = dtype or D.get_default_dtype()
    if shared:
        a = np.memmap(filename, dtype=dt.np, mode="r+", shape=(size,))
        r = F["from_numpy"](np.ndarray(a.shape, a.dtype, a, 0))
    else:
        a = np.fromfile(filename, dtype=dt.np, count=size)
        if a.size < size:
            raise RuntimeError(f"unexpected EOF, expected {size - a.size} more bytes. The file "
                               "might be corrupted.")
        r = F["from_numpy"](a)
    return r.requires_grad_() if requires_grad else r


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose dims are laid out in memory in the order
    `physical_layout` (outermost first)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"Dimension out of range / not a permutation: {list(order)}")
    phys = F["empty"]([size[d] for d in order], dtype=dtype, device=device)
    inverse = [order.index(d) for d in range(len(size))]
    r = phys.permute(*inverse)
    return r.requires_grad_() if requires_grad else r


def is_storage(obj):
    """Whether `obj` is a storage (ember.UntypedStorage or a TypedStorage)."""
    from .core.typed_storage import TypedStorage
    return isinstance(obj, (Storage, TypedStorage))


def get_device_module(device=None):
    """The module of a device's helpers: ``ember.cpu`` for "cpu" and, ember having no
    accelerator, for None; ``ember.cuda`` for "cuda" (torch.get_device_module)."""
    from . import cpu, cuda
    from .core.device import device as _device
    if isinstance(device, _device):
        name = device.type
    elif isinstance(device, str):
        name = _device(device).type
    elif device is None:
        name = "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           "None")
    module = {"cpu": cpu, "cuda": cuda}.get(name)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'torch.{name}'.")
    return module


class _ClassProperty:
    """The descriptor `classproperty` returns: reading it on the class or an instance calls
    the wrapped function with the class."""

    def __init__(self, method):
        self._method = method

    def __get__(self, instance, owner=None):
        cls = type(instance) if owner is None else owner
        return self._method.__get__(instance, cls)()


def classproperty(func):
    """A read-only property of the class (torch.classproperty): ``@classproperty def
    name(cls): ...`` reads as ``C.name``; a staticmethod or classmethod is taken as is."""
    return _ClassProperty(func if isinstance(func, (classmethod, staticmethod))
                          else classmethod(func))


def is_distributed(input):
    """False: ember tensors are never distributed tensors."""
    return False


def to_dlpack(tensor):
    """A DLPack capsule sharing the tensor's memory (from_dlpack reads it back)."""
    return tensor._data.__dlpack__()


# ---- numerical gradient, norm_except_dim ----------------------------------------------------------
def _one_dim_gradient(f, dim, h, coords, edge_order):
    n = f.shape[dim]
    if n < edge_order + 1:
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")

    def sl(a, b):
        return f.narrow(dim, a, b - a)
    if coords is None:   # uniform spacing h
        interior = (sl(2, n) - sl(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            first = (-1.5 * sl(0, 1) + 2 * sl(1, 2) - 0.5 * sl(2, 3)) / h
            last = (0.5 * sl(n - 3, n - 2) - 2 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / h
        return F["cat"]([first, interior, last], dim)
    x = coords.to(f.dtype)
    shape = [1] * f.dim()
    shape[dim] = -1
    dx = (x[1:] - x[:-1])
    a, b = dx[:-1].reshape(shape), dx[1:].reshape(shape)
    interior = (a * a * sl(2, n) - b * b * sl(0, n - 2) + (b * b - a * a) * sl(1, n - 1)) / \
        (a * b * (a + b))
    if edge_order == 1:
        first = (sl(1, 2) - sl(0, 1)) / dx[0]
        last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dx[-1]
    else:
        h1, h2 = dx[0], dx[1]
        first = (-(2 * h1 + h2) / (h1 * (h1 + h2)) * sl(0, 1) + (h1 + h2) / (h1 * h2) *
                 sl(1, 2) - h1 / (h2 * (h1 + h2)) * sl(2, 3))
        h1, h2 = dx[-2], dx[-1]
        last = (h2 / (h1 * (h1 + h2)) * sl(n - 3, n - 2) - (h1 + h2) / (h1 * h2) *
                sl(n - 2, n - 1) + (2 * h2 + h1) / (h2 * (h1 + h2)) * sl(n - 1, n))
    return F["cat"]([first, interior, last], dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of sampled values along each dim (second-order central differences
    inside, one-sided at the edges), as torch.gradient / numpy.gradient: a tuple of tensors.

    >>> ember.gradient(ember.tensor([1., 4., 9., 16.]))
    (tensor([3., 4., 6., 7.]),)
    """
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.dim())) if dim is None else \
        ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.dim() for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar "
                               f"or it's spacing and dim arguments to have the same length, "
                               f"but got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        hs = list(spacing)
    else:
        hs = [spacing] * len(dims)
    f = input if input.dtype._kind >= 2 else input.to(D.get_default_dtype())
    out = []
    for d, h in zip(dims, hs):
        coords = h if isinstance(h, Tensor) and h.dim() == 1 else None
        step = h.item() if isinstance(h, Tensor) and h.dim() == 0 else h
        out.append(_one_dim_gradient(f, d, step, coords, edge_order))
    return tuple(out)


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm over every dim but `dim`, shaped to broadcast against v (dim=-1: the
    norm of all of v), as weight normalisation uses it."""
    if dim == -1:
        return F["norm"](v, pow)
    d = dim % v.dim()
    others = tuple(k for k in range(v.dim()) if k != d)
    return F["norm"](v, pow, others, True) if others else v.abs() if pow else v


# ---- randomized low-rank SVD / PCA ---------------------------------------------------------
def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) of a rank-q approximation of A - M by randomized subspace iteration
    (Halko, Martinsson and Tropp), niter power iterations; A ~ U diag(S) V^T."""
    from .ops.registry import OPS
    qr, svd = OPS["linalg_qr"].fn, OPS["linalg_svd"].fn
    X = A if M is None else A - M
    n = X.shape[-1]
    R = F["randn"](*X.shape[:-2], n, q, dtype=X.dtype)
    Q = qr(X @ R).Q
    for _ in range(niter):        # power iterations sharpen the basis
        Q = qr(X.mT @ Q).Q
        Q = qr(X @ Q).Q
    U, S, Vh = svd(Q.mT @ X, full_matrices=False)
    return Q @ U, S, Vh.mT


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the principal components of A's rows: svd_lowrank of A minus its column
    means (with center=True); q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    M = A.mean(-2, keepdim=True) if center else None
    return svd_lowrank(A, q, niter, M)


# ---- control flow, eagerly -------------------------------------------------------------------
def cond(pred, true_fn, false_fn, operands=()):
    """Run true_fn(*operands) if `pred` (a bool or a one-element tensor) holds, else
    false_fn(*operands): torch.cond's eager semantics."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        pred = builtins.bool(pred.item())
    elif not isinstance(pred, (bool, int)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    return (true_fn if pred else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """While cond_fn(*carried) holds, carried = body_fn(*carried); returns the final carried
    values (a tuple): torch.while_loop's eager semantics."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list but got "
                           f"{type(carried_inputs)}")
    carried = tuple(carried_inputs)
    while cond(cond_fn(*carried), lambda: True, lambda: False):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return carried


__all__ = ["set_warn_always",
           "is_warn_always_enabled", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_flush_denormal", "init_num_threads",
           "set_default_tensor_type", "set_autocast_cpu_enabled", "set_autocast_cpu_dtype",
           "set_autocast_gpu_dtype", "get_autocast_gpu_dtype", "set_autocast_cache_enabled",
           "set_anomaly_enabled", "is_anomaly_check_nan_enabled", "asarray", "frombuffer",
           "from_file", "empty_permuted", "is_storage", "is_distributed", "to_dlpack",
           "gradient", "norm_except_dim", "classproperty", "get_device_module", "cond", "while_loop", "svd_lowrank", "pca_lowrank"]
