"""Tensor methods and flags of torch's that were missing: the legacy `new` constructor,
resize_ / resize_as_, apply_ / map_ / map2_ (Python callables, element by element, as torch
runs them on CPU), dim_order, is_set_to, const_data_ptr, to_dense on a dense tensor, and the
flags that are False for every ember tensor (is_nested, is_quantized, is_sparse,
is_sparse_csr, is_xla, is_pinned, is_distributed; is_shared is in tensor_storage.py).

Methods go through the registry's METHODS table; the flags are read-only properties set
on Tensor here, as torch's are properties.
"""
import numpy as np

from ..core.tensor import Tensor
from .registry import FUNCTIONS as F, METHODS


def new(self, *args, **kwargs):
    """The legacy constructor: ``x.new(2, 3)`` (uninitialised) or ``x.new(data)``, in
    self's dtype and device; ``x.new()`` is empty."""
    dtype = kwargs.pop("dtype", self.dtype)
    device = kwargs.pop("device", self.device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].detach()
    if len(args) == 1 and not isinstance(args[0], int):
        data = args[0]
        if isinstance(data, (tuple, list)) and all(isinstance(d, int) for d in data) and \
                type(data).__name__ == "Size":
            return F["empty"](tuple(data), dtype=dtype, device=device)
        return F["tensor"](data, dtype=dtype, device=device)
    return F["empty"](args if args else (0,), dtype=dtype, device=device)


def _check_resizable(self, name):
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")


def resize_(self, *sizes, memory_format=None):
    """Make self contiguous of shape `sizes`, keeping its elements in flat order (new ones
    uninitialised: ember zeroes them)."""
    _check_resizable(self, "resize_")
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    n = int(np.prod(shape)) if shape else 1
    if tuple(self.shape) == tuple(shape) and self._data.flags.c_contiguous:
        return self
    old = np.ascontiguousarray(self._data).reshape(-1)
    if n <= old.size and self._data.flags.c_contiguous:
        self._data = self._data.reshape(-1)[:n].reshape(shape)   # the same memory
    else:
        data = np.zeros(n, self.dtype.np)
        k = min(n, old.size)
        data[:k] = old[:k]
        self._data = data.reshape(shape)
        self._storage = None
    self._bump_version()
    return self


def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape))


def apply_(self, callable):
    """Replace each element x by callable(x) (a Python call per element, as torch's)."""
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                           "var.detach().apply_() instead.")
    flat = self._data.reshape(-1) if self._data.flags.c_contiguous else None
    vals = [callable(v) for v in self._data.reshape(-1).tolist()]
    out = np.asarray(vals).astype(self.dtype.np).reshape(self._data.shape)
    if flat is not None:
        flat[...] = out.reshape(-1)
    else:
        np.copyto(self._data, out)
    self._bump_version()
    return self


def map_(self, tensor, callable):
    """self[i] = callable(self[i], tensor[i]), tensor broadcast to self's shape."""
    other = np.broadcast_to(tensor._data, self._data.shape)
    vals = [callable(a, b) for a, b in zip(self._data.reshape(-1).tolist(),
                                           other.reshape(-1).tolist())]
    np.copyto(self._data, np.asarray(vals).astype(self.dtype.np).reshape(self._data.shape))
    self._bump_version()
    return self


def map2_(self, x, y, callable):
    """self[i] = callable(self[i], x[i], y[i])."""
    xs = np.broadcast_to(x._data, self._data.shape).reshape(-1).tolist()
    ys = np.broadcast_to(y._data, self._data.shape).reshape(-1).tolist()
    vals = [callable(a, b, c) for a, b, c in zip(self._data.reshape(-1).tolist(), xs, ys)]
    np.copyto(self._data, np.asarray(vals).astype(self.dtype.np).reshape(self._data.shape))
    self._bump_version()
    return self


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride)."""
    strides = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: (-strides[d], d)))


def is_set_to(self, tensor):
    """Whether both tensors view the same storage with the same offset, shape and strides."""
    return (self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
            and self.storage_offset() == tensor.storage_offset()
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


def const_data_ptr(self):
    return self.data_ptr()


def to_dense(self, dtype=None, *, masked_grad=None):
    """A dense tensor is its own dense form (in `dtype` if given)."""
    return self if dtype is None or dtype is self.dtype else self.to(dtype)


def resize(self, *sizes):
    """Deprecated out-of-place resize: a differentiable reshape to `sizes` (same numel)."""
    import warnings
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    n = int(np.prod(shape)) if shape else 1
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, "
                           "while preserving the number of elements. ")
    return self.contiguous().view(*shape)


def resize_as(self, tensor):
    """Deprecated out-of-place resize_as: resize(tensor.size())."""
    return resize(self, tuple(tensor.shape))


def module_load(self, other, assign=False):
    """How load_state_dict puts `other` into this parameter: other.detach() with assign,
    else self.copy_(other).detach()."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def as_strided_(self, size, stride, storage_offset=None):
    """Make self, in place, the as_strided view of its storage."""
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    v = self.as_strided(size, stride, storage_offset)
    self._data = v._data           # the same storage, new shape, strides and offset
    return self


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self view `source`: another tensor's memory (same shape, strides, offset), a
    storage (from storage_offset, with `size` and `stride` in elements), or nothing (an
    empty tensor)."""
    if source is None:
        self._data = np.empty((0,), self.dtype.np)
        self._storage = None
    elif isinstance(source, Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} or an "
                               f"UntypedStorage, but got type {source.dtype} for argument 1 "
                               "'storage'")
        self._data = source._data
        self._storage = source._storage_obj()
    else:
        buf = source.data.reshape(-1).view(self.dtype.np)
        size = (buf.size - storage_offset,) if size is None else tuple(size)
        if stride is None:
            stride, acc = [], 1
            for n in reversed(size):
                stride.insert(0, acc)
                acc *= max(n, 1)
        item = buf.itemsize
        self._data = np.lib.stride_tricks.as_strided(
            buf[storage_offset:], size, tuple(st * item for st in stride))
        self._storage = source
    self._bump_version()
    return self


def reinforce(self, reward):
    """Removed from torch: raises torch's RuntimeError pointing to torch.distributions."""
    raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.\nSee "
                       "https://pytorch.org/docs/main/distributions.html")


def _volatile(self):
    import warnings
    warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
    return False


def _false(self):
    return False


for _fn in (new, resize_, resize_as_, apply_, map_, map2_, dim_order, is_set_to,
            const_data_ptr, to_dense, resize, resize_as, module_load, as_strided_, set_,
            reinforce):
    METHODS[_fn.__name__] = _fn
for _name in ("is_pinned", "is_distributed"):
    METHODS[_name] = _false
# torch's flags that are properties; none holds for an ember tensor
for _name in ("is_nested", "is_quantized", "is_sparse", "is_sparse_csr", "is_xla"):
    setattr(Tensor, _name, property(_false, doc=f"False: ember has no {_name[3:]} tensors."))
Tensor.volatile = property(_volatile, doc="False, with torch's removal warning.")
Tensor.output_nr = property(lambda self: getattr(self, "_output_nr", 0) or 0,
                            doc="Which output of its grad_fn this tensor is (0 for leaves).")
