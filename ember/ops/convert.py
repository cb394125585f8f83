"""Copies and conversions: `to`, `clone`, `contiguous`, `copy_`, `fill_`, `zero_`, and the
dtype shorthands (`float()`, `long()`, ...). Each is differentiable where PyTorch's is.
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core.lowp_cast import astype
from ..core.device import device as Device, to_device
from ..core.tensor import Tensor, contiguous_format, preserve_format
from ..core.meta import MetaArray, copy_out_error
from ..core.tensor import empty_meta
from .creation import strided_array, layout_for, wrap_strided
from ..core import strides as S
from ..dispatch import wrap, torch_name, fill_scalar, check_overlap
from ..autograd.grad_mode import state
from ..autograd import graph
from . import batch_rules as _br
from .registry import OPS
from ..autograd.derivative import Derivative
from .registry import (OpDef, COMPOSITE, POINTWISE, VIEW, LINEAR, register, register_each,
                       METHODS)

def _to_copy_grad(g, dtype):
    # a real tensor converted to complex gets the real part of the complex gradient
    if g.dtype.is_complex and not dtype.is_complex:
        g = g.real
    return g.to(dtype)


_TO_COPY = Derivative("_to_copy", of="to", attrs={"dtype": None},
                      grads={"self": _to_copy_grad}, node_name="ToCopyBackward0")
_CLONE = Derivative("clone", grads={"self": lambda g: g})


def _record(op, args, out, attrs):
    if state.enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
        graph.record(op, args, out, attrs)
    return out


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, (D.dtype, type)) or (isinstance(a, str) and a in D._NAMES):
            dtype = a
        elif isinstance(a, (str, Device, int)):
            dev = a
        elif isinstance(a, bool):
            pass
        else:
            dtype = a
    return (D.to_dtype(dtype) if dtype is not None else None,
            to_device(dev) if dev is not None else None, copy)


def to(self, *args, **kwargs):
    """Convert dtype and/or device: ``x.to(ember.float64)``, ``x.to("cpu")``, ``x.to(other)``.
    Returns `self` when nothing changes (unless ``copy=True``)."""
    dtype, dev, copy = _parse_to(args, kwargs)
    meta = type(self._data) is MetaArray
    if dev is not None and dev.type != ("meta" if meta else "cpu"):
        if meta:        # meta -> cpu: there is no data to copy (torch's error)
            raise copy_out_error()
        if dev.type == "meta":     # cpu -> meta: the metadata, in the same layout
            return _record(_TO_COPY, (self,), empty_meta(
                self._data.shape, dtype or self.dtype,
                S.dense_strides_like(self._data.shape, self.stride())), {"dtype": self.dtype}) \
                if (dtype or self.dtype).is_floating_point else \
                empty_meta(self._data.shape, dtype or self.dtype)
        from ..cuda import check_available
        check_available()
    if (dtype is None or dtype is self.dtype) and not copy:
        return self
    dt = dtype or self.dtype
    arr = self._data
    if self.dtype.is_complex and not dt.is_complex:
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=2)
        arr = arr.real
    out = wrap(astype(arr, dt.np), dt)
    if dt._kind >= 2:       # floating and complex results are differentiable
        return _record(_TO_COPY, (self,), out, {"dtype": self.dtype})
    return out


def _to_dtype(name):
    def convert(self, memory_format=None):
        return to(self, D._NAMES[name])
    convert.__name__ = name
    return convert


def type_(self, dtype=None, non_blocking=False, **kw):
    if dtype is None:
        return f"torch.{torch_name(self.dtype)}Tensor"
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        name = dtype.split(".")[-1][:-6]
        inv = {v: k for k, v in D.TORCH_NAMES.items()}
        return to(self, D._NAMES[inv[name]])
    return to(self, dtype)


def type_as(self, other):
    return to(self, other.dtype)


def _plain(arr):
    """Exactly contiguous strides (NumPy's flag also lets size-1 dims have any stride)."""
    return arr.flags.c_contiguous and arr.size and 1 not in arr.shape


def _copy_in_layout(t, memory_format):
    arr = t._data
    if type(arr) is MetaArray:      # a copy of a meta tensor: its metadata in the layout
        return empty_meta(arr.shape, t.dtype, S.contiguous_strides(arr.shape)
                          if memory_format is contiguous_format else layout_for(t, memory_format))
    if memory_format in (None, preserve_format, contiguous_format) and _plain(arr):
        return wrap(arr.copy(), t.dtype)
    st = layout_for(t, memory_format)
    if arr.size and st == S.contiguous_strides(arr.shape):
        return wrap(np.array(arr, order="C"), t.dtype)  # always a copy
    c = strided_array(arr.shape, st, arr.dtype)
    np.copyto(c, arr)
    return wrap_strided(c, t.dtype)


def clone(input, *, memory_format=None):
    """A copy that keeps the graph (``CloneBackward0``). By default (preserve_format) a dense
    layout such as a transpose keeps its strides; others get dense strides in stride order."""
    return _record(_CLONE, (input,), _copy_in_layout(input, memory_format), {})


def contiguous(self, memory_format=contiguous_format):
    """`self` if already contiguous (in `memory_format`), else a copy laid out that way."""
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if memory_format is contiguous_format and type(self._data) is not MetaArray:
        # the common case. NumPy's C-contiguous flag is torch's rule (size-1 dims and empty
        # arrays ignored), so it alone decides: self, or one C-order copy
        if self._data.flags.c_contiguous:
            return self
        return _record(_CLONE, (self,), wrap(np.ascontiguousarray(self._data), self.dtype), {})
    if (self._data.flags.c_contiguous and memory_format is contiguous_format) or \
            self.is_contiguous(memory_format):
        return self
    return _record(_CLONE, (self,), _copy_in_layout(self, memory_format), {})


# ---- in-place writes ----
_COPY = Derivative("copy_", inputs=("self", "src"),
                   grads={"self": lambda g: g.mul(0), "src": lambda g: g},
                   node_name="CopyBackwards")
_FILL = Derivative("fill_", inputs=("self", "value"),
                   grads={"self": lambda g: g.mul(0), "value": lambda g: g.sum()},
                   node_name="FillBackward0")


def copy_(self, src, non_blocking=False):
    """Copy `src` into `self` in place, broadcasting and converting dtype."""
    graph.check_inplace(self)
    check_overlap(self)      # no copy into an expanded tensor, like PyTorch
    if isinstance(src, Tensor) and type(src._data) is MetaArray and \
            type(self._data) is not MetaArray:
        raise copy_out_error()
    s = src._data if isinstance(src, Tensor) else src
    if type(self._data) is MetaArray:   # into a meta tensor: nothing to write (torch's no-op)
        self._bump_version()
        if state.enabled and isinstance(src, Tensor) and (src._requires_grad or
                                                          self._requires_grad):
            graph.record_inplace(_COPY, (self, src if src.dtype is self.dtype else
                                         to(src, self.dtype)), self, {}, None)
        return self
    try:
        b = np.broadcast_to(s, self._data.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}"
                           f") must match the size of tensor b ({np.shape(s)[-1]}) at "
                           f"non-singleton dimension {self._data.ndim - 1}") from None
    needs = state.enabled and isinstance(src, Tensor) and (src._requires_grad or
                                                            self._requires_grad)
    if np.shares_memory(self._data, s) if isinstance(src, Tensor) else False:
        b = b.copy()
    np.copyto(self._data, b, casting="unsafe")
    if not (state.inference and self._inference):
        self._bump_version()
    if needs:
        src_arg = src if src.dtype is self.dtype else to(src, self.dtype)
        graph.record_inplace(_COPY, (self, src_arg), self, {}, None)
    return self


def fill_(self, value):
    graph.check_inplace(self)
    v = value
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        v = value._data
        check_overlap(self)   # a tensor value is copied, and copies refuse expanded tensors
    else:
        v = fill_scalar(value, self.dtype)   # like PyTorch: fill_(300) on uint8 raises
    if type(self._data) is MetaArray:       # nothing to write
        self._bump_version()
        return self
    self._data[...] = np.asarray(v).astype(self.dtype.np) if self.dtype is not D.bool_ else \
        bool(v)
    if not (state.inference and self._inference):
        self._bump_version()
    if state.enabled and (self._requires_grad or (isinstance(value, Tensor) and
                                                  value._requires_grad)):
        graph.record_inplace(_FILL, (self, value), self, {}, None)
    return self


def zero_(self):
    return fill_(self, 0)


# kind VIEW: each may return its input itself (same dtype, already contiguous), so the
# compiler treats the result as sharing the input's memory; recomputing them saves nothing
register_each(globals(), VIEW, (to, type_as, contiguous), function=False, recompute=False,
              onnx=_ox.as_output_dtype)
clone = register(OpDef("clone", COMPOSITE, jvp=LINEAR,
                       onnx=_ox.as_output_dtype), clone)
# forward mode (autograd/forward_rules.py): self's new tangent after each in-place write
copy_.jvp = lambda tan, result, self, src, non_blocking=False: tan(src)
fill_.jvp = lambda tan, result, self, value: tan(value)
# (fill_ has no OpDef: its fact for bad input is on the function, which its seam reads, see
# OpDef's docstring) value is a Scalar, where torch's parser takes an int up to 2**64 - 1
fill_.uint64_scalars = frozenset({"value"})
zero_.jvp = lambda tan, result, self: None
# vmap batching rules (ember/ops/batch_rules.py)
for _n in ("to", "type_as", "contiguous", "clone"):
    OPS[_n].batch = _br.direct
copy_.batch = fill_.batch = zero_.batch = _br.inplace
METHODS["type"] = type_
METHODS["copy_"] = copy_
METHODS["fill_"] = fill_
METHODS["zero_"] = zero_
for _n, _d in (("float", "float32"), ("double", "float64"), ("half", "float16"),
               ("bfloat16", "bfloat16"), ("int", "int32"), ("long", "int64"),
               ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool")):
    METHODS[_n] = _to_dtype(_d)
    METHODS[_n].batch = _br.direct        # vmap: a conversion per element
    METHODS[_n].onnx = _ox.as_output_dtype  # ONNX: a Cast to the result's dtype
type_.batch = _br.direct
type_.onnx = _ox.as_output_dtype


def cpu(self, memory_format=None):
    if type(self._data) is MetaArray:
        raise copy_out_error()
    return self


def cuda(self, device=None, non_blocking=False, memory_format=None):
    from ..cuda import check_available
    check_available()


METHODS["cpu"] = cpu
METHODS["cuda"] = cuda
