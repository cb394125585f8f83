"""Creation ops: tensors from data (`tensor`, `as_tensor`, `from_numpy`) and from shapes
(`zeros`, `ones`, `full`, `arange`, `linspace`, `eye`, ... and their `_like` forms).

dtype inference is PyTorch's: Python ints give int64, floats the default dtype, bools bool;
NumPy arrays keep their dtype.
"""
import math
import numbers

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core.device import to_device, resolve_device, _default as _default_device
from ..core.meta import MetaArray
from ..core.tensor import empty_meta
from ..core.tensor import Tensor, _init, preserve_format, channels_last, channels_last_3d
from ..core import strides as S
from ..core import tensor as _tensor_module
from ..core import memory_stats
from numpy.lib.stride_tricks import as_strided as _as_strided
from ..dispatch import wrap, fill_scalar
from ..dispatch_args import int_arg, bounds_args, is_int, Omitted
from ..autograd.grad_mode import state
from .registry import OpDef, CREATION, register, register_each, METHODS, OPS


def _infer_dtype(data):
    """PyTorch's dtype for nested data: the promotion of all the elements' dtypes, where Python
    bools are bool, ints int64 and floats the default dtype, and NumPy values and tensors keep
    their own (``[1, np.float16(2)]`` gives float16)."""
    dt = None
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        if isinstance(x, Tensor):
            d = x.dtype
        elif isinstance(x, (np.ndarray, np.generic)):
            d = D.from_numpy_dtype(x.dtype)
        elif isinstance(x, bool):
            d = D.bool_
        elif isinstance(x, int):
            d = D.int64
        elif isinstance(x, float):
            d = D.get_default_dtype()
        elif isinstance(x, complex):
            d = D.default_complex_dtype()
        elif isinstance(x, str):
            raise ValueError("too many dimensions 'str'")
        elif hasattr(x, "__array__"):
            d = D.from_numpy_dtype(np.asarray(x).dtype)
        elif hasattr(x, "__len__") and hasattr(x, "__getitem__") and \
                not isinstance(x, (dict, bytes)):
            stack.extend(x[i] for i in range(len(x)))   # any sequence (deque, range...)
            continue
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
        dt = d if dt is None else D.promote_types(dt, d)
    return dt or D.get_default_dtype()


def _to_nested(x):
    if isinstance(x, Tensor):
        if x._data.ndim == 0:
            return x._data.item() if x.dtype is not D.bfloat16 else float(x._data)
        return [_to_nested(r) for r in x.unbind(0)] if x._data.ndim else x.item()
    if isinstance(x, (list, tuple)):
        return [_to_nested(v) for v in x]
    return x


def _array_from_data(data, dt):
    if isinstance(data, Tensor):
        return data._data.astype(dt.np)
    if isinstance(data, np.ndarray):
        return data.astype(dt.np)
    if isinstance(data, (list, tuple)) and _contains_tensor(data):
        data = _to_nested(data)
    try:
        arr = np.array(data, dtype=dt.np if dt is not D.bfloat16 else np.float64)
    except ValueError:
        raise _shape_error(data) from None
    except OverflowError:
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow") \
            from None
    if arr.dtype == object:
        raise ValueError("expected a rectangular nested sequence of numbers")
    return arr.astype(dt.np) if arr.dtype != dt.np else arr


# the legacy constructor Tensor(data) reads nested data through this slot of the data layer
_tensor_module.array_from_data = _array_from_data


def _shape_error(data):
    """PyTorch's error for a ragged nested sequence; the shape comes from the first items."""
    shape, x = [], data
    while isinstance(x, (list, tuple)):
        shape.append(len(x))
        if not x:
            break
        x = x[0]

    def walk(x, d):
        if d == len(shape):
            return TypeError(f"'{type(x).__name__}' object cannot be interpreted as a number") \
                if isinstance(x, (list, tuple)) else None
        if not isinstance(x, (list, tuple)):
            return TypeError("not a sequence")
        if len(x) != shape[d]:
            return ValueError(f"expected sequence of length {shape[d]} at dim {d} "
                              f"(got {len(x)})")
        for y in x:
            err = walk(y, d + 1)
            if err is not None:
                return err
        return None
    return walk(data, 0) or ValueError("expected a rectangular nested sequence of numbers")


def _contains_tensor(data):
    for x in data:
        if isinstance(x, Tensor):
            return True
        if isinstance(x, (list, tuple)) and _contains_tensor(x):
            return True
    return False


def on_meta(device):
    """Whether a factory called with `device` (None: the default device) makes meta tensors."""
    if device is None:
        d = _default_device[0]
        return d is not None and d.type == "meta"
    return resolve_device(device).type == "meta"


def meta_factory(shape, dt, requires_grad=False, strides=None):
    """A factory's result on the meta device: metadata only, nothing allocated."""
    return empty_meta(shape, dt, strides, requires_grad=requires_grad)


def _finish(arr, dt, requires_grad=False, device=None):
    if device is not None or _default_device[0] is not None:
        dev = resolve_device(device)
        if dev.type == "meta":
            return meta_factory(arr.shape, dt, requires_grad)
        if dev.type != "cpu":
            from ..cuda import check_available
            check_available()
    t = wrap(np.ascontiguousarray(arr) if arr.ndim else np.asarray(arr), dt)
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Copy `data` (nested lists, numbers, NumPy arrays, tensors) into a new tensor.

    >>> ember.tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than ember.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    dt = D.to_dtype(dtype) if dtype is not None else (
        data.dtype if isinstance(data, Tensor) else _infer_dtype(data))
    arr = _array_from_data(data, dt)
    t = _finish(np.array(arr, copy=True), dt, requires_grad, device)
    if isinstance(data, np.ndarray) and not data.size:
        t._data = arr  # PyTorch keeps an empty NumPy array's (zero) strides
    return t


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a tensor or NumPy array when it can."""
    if isinstance(data, Tensor):
        return data if dtype is None or D.to_dtype(dtype) is data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or
                                         D.to_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array: writes are seen both ways."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = D.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    if not ndarray.flags.writeable:
        import warnings
        warnings.warn("The given NumPy array is not writable, and ember does not support "
                      "non-writable tensors.", UserWarning, stacklevel=2)
    if not ndarray.dtype.isnative:
        raise TypeError("can't convert a byte-swapped NumPy array")
    t = Tensor._make(ndarray, dt)
    t._data = ndarray  # even an empty array keeps its strides, as in PyTorch
    return t


def from_dlpack(ext):
    """A tensor sharing memory with any object that speaks DLPack (NumPy arrays, tensors)."""
    if isinstance(ext, Tensor):
        return ext
    if type(ext).__name__ == "PyCapsule":     # a capsule from to_dlpack (a CPU tensor's)
        ext = _Capsule(ext)
    elif not hasattr(ext, "__dlpack__"):      # (torch hands anything else to its C++ side)
        raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor "
                           "capsules can be consumed only once, so you might have already "
                           "constructed a tensor from it once.")
    return from_numpy(np.from_dlpack(ext))


class _Capsule:
    """A bare DLPack capsule dressed as an exporter (NumPy takes only exporters)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)      # kDLCPU


def _sizes(sizes, size):
    """The size of a factory called as ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError("got multiple values for argument 'size'")
    return (size,)


def _size_args(size):
    if not size:
        raise TypeError('missing 1 required positional arguments: "size"')
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    if size and size[0].__class__ is bool:     # (torch's parser: a bool first is no size)
        raise TypeError("zeros(): argument 'size' (position 1) must be tuple of ints, not bool")
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not hasattr(s, "__index__"):
            raise TypeError(f"zeros(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__}")
        s = s.__index__()
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(s)
    return tuple(out)


def _dtype_or_default(dtype):
    return D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()


def _cannot_allocate(shape, dt):
    """torch's RuntimeError (not Python's MemoryError) for a tensor too big to allocate."""
    n = dt.itemsize
    for d in shape:
        n *= d
    return RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                        f"{n} bytes.")


def _filled(fill, size, dtype, device, requires_grad, out):
    dt = _dtype_or_default(dtype)
    shape = _size_args(size)
    if (device is not None or _default_device[0] is not None) and out is None and \
            on_meta(device):
        return meta_factory(shape, dt, requires_grad)
    try:
        arr = np.full(shape, fill, dtype=dt.np) if fill else np.zeros(shape, dtype=dt.np)
    except MemoryError:
        raise _cannot_allocate(shape, dt) from None
    if out is not None:
        out._data = arr
        out._storage = None
        memory_stats.note(arr)
        return out
    return _finish(arr, dt, requires_grad, device)


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False):
    """A tensor of zeros: ``ember.zeros(2, 3)`` or ``ember.zeros((2, 3), dtype=ember.int64)``."""
    return _filled(0, _sizes(sizes, size), dtype, device, requires_grad, out)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False):
    """A tensor of ones."""
    return _filled(1, _sizes(sizes, size), dtype, device, requires_grad, out)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False, memory_format=None):
    """An uninitialised tensor (ember fills it with zeros, so reads are deterministic)."""
    return _filled(0, _sizes(sizes, size), dtype, device, requires_grad, out)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None,
         layout=None, pin_memory=False):
    """A tensor filled with `fill_value`; its dtype follows the value (bool, int64, float)."""
    if dtype is None:
        if isinstance(fill_value, Tensor):
            fill_value = fill_value.item()
        dtype = D.scalar_dtype(fill_value)
        if dtype is D.float64:
            dtype = D.get_default_dtype()
        elif dtype is D.complex128 and isinstance(fill_value, complex):
            dtype = D.default_complex_dtype()
    dt = D.to_dtype(dtype)
    shape = _size_args((size,) if isinstance(size, int) else (tuple(size),))
    if on_meta(device):
        return meta_factory(shape, dt, requires_grad)
    arr = np.full(shape, fill_scalar(fill_value, dt), dtype=dt.np)
    return _finish(arr, dt, requires_grad, device)



# ---- memory layouts of copies (clone, *_like, contiguous) ----
def strided_array(shape, stride, np_dtype, fill=0):
    """A fresh backend array of `shape` laid out in memory with element strides `stride`."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    buf = np.full(span, fill, np_dtype) if fill else np.zeros(span, np_dtype)
    return _as_strided(buf, tuple(shape), tuple(s * buf.itemsize for s in stride))


def layout_for(t, memory_format):
    """Element strides of a copy of `t` in `memory_format` (None means preserve_format)."""
    shape = t._data.shape
    if memory_format is None or memory_format is preserve_format:
        return S.dense_strides_like(shape, t.stride())
    if memory_format is channels_last or memory_format is channels_last_3d:
        if len(shape) != (4 if memory_format is channels_last else 5):
            raise RuntimeError(f"required rank {4 if memory_format is channels_last else 5} "
                               f"tensor to use {memory_format.name} format")
        return S.channels_last_strides(shape)
    return S.contiguous_strides(shape)


def wrap_strided(arr, dt):
    """Wrap a fresh array keeping its strides (wrap gives empty arrays contiguous ones)."""
    t = wrap(arr, dt)
    t._data = arr
    return t


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False, **kw):
    """A tensor with the given sizes and strides (ember zero-fills it)."""
    for k in kw:
        if k not in ("layout", "pin_memory"):
            raise TypeError(f"empty_strided() got an unexpected keyword argument '{k}'")
    dt = _dtype_or_default(dtype)
    if len(tuple(size)) != len(tuple(stride)):
        raise RuntimeError(f"dimensionality of sizes ({len(tuple(size))}) must match "
                           f"dimensionality of strides ({len(tuple(stride))})")
    if on_meta(device):
        return meta_factory(_size_args((tuple(size),)), dt, requires_grad, tuple(stride))
    t = wrap_strided(strided_array(_size_args((tuple(size),)), tuple(stride), dt.np), dt)
    if requires_grad:
        t.requires_grad = True
    return t


def _like(input, dtype, fill, requires_grad, memory_format=None, device=None):
    dt = D.to_dtype(dtype) if dtype is not None else input.dtype
    a = input._data
    plain = a.flags.c_contiguous and a.size and 1 not in a.shape and \
        memory_format not in (channels_last, channels_last_3d)
    st = None if plain else layout_for(input, memory_format)  # a dense layout is kept, etc.
    # the result lives on `device`, else on input's device (a meta input: a meta result)
    if (to_device(device).type == "meta") if device is not None else type(a) is MetaArray:
        return meta_factory(a.shape, dt, requires_grad, st)
    if plain or (a.size and st == S.contiguous_strides(a.shape)):
        if fill:
            arr = np.empty(a.shape, dt.np)      # empty + fill: np.full's work, in C alone
            arr.fill(fill)
        else:
            arr = np.zeros(a.shape, dt.np)
    else:
        arr = strided_array(a.shape, st, dt.np, fill)
    return _finish_like(arr, dt, requires_grad)


def _finish_like(arr, dt, requires_grad):
    t = wrap_strided(arr, dt)
    if requires_grad:
        t.requires_grad = True
    return t


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(input, dtype, 0, requires_grad, memory_format, device)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(input, dtype, 1, requires_grad, memory_format, device)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(input, dtype, 0, requires_grad, memory_format, device)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    if fill_value is None or isinstance(fill_value, (str, list, tuple, dict)):
        raise TypeError(f"full_like(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    fill_value = fill_scalar(fill_value, D.to_dtype(dtype) if dtype is not None
                              else input.dtype)
    return _like(input, dtype, fill_value, requires_grad, memory_format, device)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
           out=None, layout=None):
    """Values from `start` up to (not including) `end` by `step`; length ceil((end-start)/step).

    >>> ember.arange(0, 1, 0.25)
    tensor([0.0000, 0.2500, 0.5000, 0.7500])
    """
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in vals) else D.int64
    dt = D.to_dtype(dtype)
    if any(type(v) is int and not -2 ** 63 <= v < 2 ** 63 for v in vals) and \
            not dt.is_floating_point:    # (a uint64 Scalar: the sign check, then int64's)
        if (step > 0 and start > end) or (step < 0 and start < end):
            raise RuntimeError("upper bound and lower bound inconsistent with step sign")
        raise RuntimeError(f"value cannot be converted to type {D.CPP_TYPES[dt.name]} without "
                           f"overflow")
    if dt is D.int64:  # PyTorch truncates each bound to int64 first (other dtypes: below)
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = max(math.ceil((end - start) / step), 0)
    if dt.is_floating_point:
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    else:  # the length comes from the real bounds, the values from truncated start and step
        arr = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(dt.np)
    return _finish(arr, dt, requires_grad, device)


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated ``torch.range``: like arange but includes `end`."""
    if end is None:      # (torch.range has no one-argument form)
        raise TypeError("range(): argument 'end' (position 2) must be Number, not NoneType")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    n = int(math.floor((end - start) / step)) + 1
    arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    return _finish(arr, dt, requires_grad, device)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None,
             layout=None):
    """`steps` evenly spaced values from `start` to `end`, both included."""
    bounds_args("linspace", start, end, steps)
    if type(steps) is not int:
        steps = int_arg(steps, "linspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    if dtype is not None:
        dt = D.to_dtype(dtype)
    elif isinstance(start, complex) or isinstance(end, complex):
        dt = D.default_complex_dtype()     # complex bounds give a complex result, as torch
    else:
        dt = D.get_default_dtype()
    if dt._kind == 3:
        start, end = complex(start), complex(end)
    elif not dt.is_floating_point:  # PyTorch truncates the bounds first, then the values
        start, end = int(start), int(end)
    arr = _linspace_values(start, end, steps)
    if dt._kind < 2:
        arr = np.trunc(arr)
    return _finish(arr.astype(dt.np), dt, requires_grad, device)


def _linspace_values(start, end, steps):
    # PyTorch fills the first half from `start` and the second half from `end`
    if steps == 1:
        return np.array([start], dtype=np.float64)
    i = np.arange(steps, dtype=np.float64)
    step = (end - start) / (steps - 1)
    half = steps // 2
    return np.where(i < half, start + step * i, end - step * (steps - 1 - i))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False,
             out=None, layout=None):
    bounds_args("logspace", start, end, steps)
    if type(steps) is not int:
        steps = int_arg(steps, "logspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    arr = np.power(base, _linspace_values(start, end, steps))
    return _finish(arr.astype(dt.np), dt, requires_grad, device)


_SQUARE = Omitted("m = n")      # eye's default m: torch has no overload taking m=None


def eye(n, m=_SQUARE, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """The identity matrix (n x m; m defaults to n).

    >>> ember.eye(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    n = int_arg(n, "eye", "n", 1)
    if m is _SQUARE:
        m = n
    elif not is_int(m):
        raise TypeError(f"eye() received an invalid combination of arguments - got (int, "
                        f"{type(m).__name__}), but expected one of: * (int n, *, Tensor out = "
                        f"None, torch.dtype dtype = None, ...) * (int n, int m, *, Tensor out = "
                        f"None, torch.dtype dtype = None, ...)")
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dt = _dtype_or_default(dtype)
    return _finish(np.eye(n, int(m), dtype=dt.np), dt, requires_grad, device)


# ---- new_* methods take dtype/device from self ----
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad,
                  device=device or self.device)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad,
                 device=device or self.device)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad,
                device=device or self.device)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(*size, dtype=dtype or self.dtype, requires_grad=requires_grad,
                 device=device or self.device)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    if fill_value is None or isinstance(fill_value, (str, bytes, list, tuple, dict)):
        raise TypeError(f"new_full(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad,
                device=device or self.device)


register_each(globals(), CREATION, (
    tensor, as_tensor, from_numpy, from_dlpack, zeros, ones, empty, empty_strided, full,
    zeros_like, ones_like, empty_like, full_like, arange, linspace, logspace, eye), method=False)
range_ = register(OpDef("range", CREATION, method=False), range_, names=("range",))
register_each(globals(), CREATION, (
    new_tensor, new_zeros, new_ones, new_empty, new_full), function=False)
# ONNX mappings (a graph reaches these only when a size varies; fixed ones are folded)
for _f, _m in ((zeros, _ox.zeros), (ones, _ox.ones), (empty, _ox.empty), (full, _ox.full),
               (zeros_like, _ox.zeros_like), (ones_like, _ox.ones_like),
               (full_like, _ox.full_like), (arange, _ox.arange), (new_zeros, _ox.new_zeros),
               (new_ones, _ox.new_ones), (new_full, _ox.new_full)):
    OPS[_f.__name__].onnx = _m
# Scalar parameters: torch's parser takes an int up to 2**64 - 1 there (uint64), so the
# op's own error stands for 2**63 ("value cannot be converted to type int64_t ...")
for _f, _names in ((full, {"fill_value"}), (new_full, {"fill_value"}),
                   (full_like, {"fill_value"}), (arange, {"start", "end", "step"})):
    OPS[_f.__name__].uint64_scalars = frozenset(_names)
# torch's from_dlpack answers a non-tensor itself (a RuntimeError about the capsule, from
# its C++ side, where a parser's TypeError would name the argument)
OPS["from_dlpack"].own_type_check = True
