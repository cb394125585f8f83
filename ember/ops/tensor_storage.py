"""Tensor methods about a tensor's memory and class, as torch's CPU tensors have them:
storage() / storage_type() (a TypedStorage and its legacy class, core/typed_storage.py),
share_memory_() / is_shared(), pin_memory() (ember has no accelerator, so it raises torch's
error), as_subclass(cls), and the view op slice_inverse (torch.slice_inverse).
"""
import warnings

from ..core import typed_storage as _ts
from ..core.strides import strided_view
from ..core.tensor import Tensor, make_view, _init
from ..autograd.grad_mode import state
from ..autograd import graph
from ..dispatch_args import int_arg, tensor_args
from .registry import OpDef, VIEW, register, METHODS
from .view import _ALIAS



def storage(self):
    """The TypedStorage of self's storage (deprecated in torch, with its warning)."""
    _ts.warn_typed_storage_removal(stacklevel=2)
    return _ts.typed_storage_of(self)


def storage_type(self):
    """The legacy storage class of self's dtype (``ember.FloatStorage`` for float32)."""
    _ts.warn_typed_storage_removal(stacklevel=2)
    return _ts.STORAGE_CLASSES[self.dtype]


def share_memory_(self):
    """Move self's storage (and so every view of it) to shared memory; returns self."""
    _ts.share_storage(self._storage_obj())
    return self


def is_shared(self):
    return _ts.is_shared(self._storage_obj())


def pin_memory(self, device=None):
    """torch pins memory for the current accelerator; ember has none, so this raises
    torch's error for a machine without one."""
    if device is not None:
        warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please do "
                      "not pass this argument.", DeprecationWarning, stacklevel=2)
        from ..core.device import device as _device
        if _device(device).type == "cpu":
            raise RuntimeError("CPU device type not an accelerator.")
    raise RuntimeError("Cannot access accelerator device when none is available.")


def as_subclass(self, cls):
    """A `cls` instance with self's data, attached to self's graph (an alias of self)."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    base = make_view(self, self._data.view())
    out = Tensor.__new__(cls)
    _init(out, base._data, self.dtype)
    out._storage, out._base, out._inference = base._storage, base._base, base._inference
    if self._requires_grad and state.enabled:
        graph.record(_ALIAS, (self,), out, {"shape": self._data.shape,
                                               "view_fn": lambda a: a.view()})
    return out


def _sliced(g, dim, start, end, step):
    idx = [slice(None)] * g.ndim
    idx[dim] = slice(start, end, step)
    return g[tuple(idx)]


def _slice_inverse_jvp(tan, result, self, src, dim=0, start=None, end=None, step=1):
    ts, tsrc = tan(self), tan(src)
    if ts is None and tsrc is None:
        return None
    base = tsrc if tsrc is not None else result.new_zeros(result.shape)
    part = ts if ts is not None else _sliced(result, dim, start, end, step).new_zeros(self.shape)
    return base.slice_scatter(part, dim, start, end, step)


# torch's derivative: self gets the slice of the gradient, src the rest (the result is, in
# value, src with its slice replaced by self: the two share storage where it is used)
_SLICE_INVERSE = OpDef(
    "slice_inverse", VIEW, inputs=("self", "src"),
    attrs={"dim": 0, "start": None, "end": None, "step": 1, "self_shape": None},
    grads={"self": lambda g, dim, start, end, step: _sliced(g, dim, start, end, step),
           "src": lambda g, self_shape, dim, start, end, step: g.slice_scatter(
               g.new_zeros(self_shape), dim, start, end, step)},
    jvp=_slice_inverse_jvp)


def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """The inverse of ``src.slice(dim, start, end, step)``: self (such a slice) viewed with
    src's sizes, strides and storage offset, as torch's slice_inverse does."""
    tensor_args("slice_inverse", ("input", 1, self), ("src", 2, src))
    dim, step = int_arg(dim, "slice_inverse", "dim", 3), int_arg(step, "slice_inverse", "step", 6)
    start = None if start is None else int_arg(start, "slice_inverse", "start", 4)
    end = None if end is None else int_arg(end, "slice_inverse", "end", 5)
    size, stride, off = tuple(src.shape), src.stride(), src.storage_offset()
    storage = self._storage_obj()
    need = off + sum((s - 1) * st for s, st in zip(size, stride)) + 1 if all(size) else 0
    if need > storage.data.size:
        item = self.dtype.itemsize
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {off}, and itemsize {item} requiring a storage size of "
                           f"{need * item} are out of bounds for storage of size "
                           f"{storage.data.size * item}")
    out = make_view(self, strided_view(storage.data[off:], size, stride))
    if state.enabled and (self._requires_grad or src._requires_grad):
        d = dim + src.ndim if dim < 0 else dim
        graph.record(_SLICE_INVERSE, (self, src), out,
                     {"dim": d, "start": start, "end": end, "step": step,
                      "self_shape": tuple(self.shape)})
    return out


slice_inverse = register(_SLICE_INVERSE, slice_inverse)

for _fn in (storage, storage_type, share_memory_, is_shared, pin_memory, as_subclass):
    METHODS[_fn.__name__] = _fn
