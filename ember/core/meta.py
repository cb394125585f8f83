"""The meta device: tensors with shape, dtype, strides and storage offset, and no data.

A meta tensor is an ordinary Tensor whose backend array is a `MetaArray`: a NumPy array
subclass laid over one shared, read-only, never-touched virtual mapping (`_root`), so it has
real shape/strides/offset bookkeeping and costs no memory. Every NumPy *view* of it (slicing,
transpose, reshape where a view exists, as_strided) is again a MetaArray, which is why ember's
own view code runs unchanged on meta tensors: views of meta tensors have exactly the shapes,
strides and errors of views of cpu tensors.

Anything that would compute with the data (a ufunc, np.sum, np.copyto, item()...) raises
`MetaData` before any work is done. The op layer catches it at the op's entry (ember/dispatch.py)
and runs the op's meta rule instead (OpDef.meta, ember/ops/meta_rules.py). On the cpu path the
catch is a `try` block, which costs nothing in CPython 3.11+ unless something raises.

>>> x = ember.empty(2, 3, device="meta")
>>> (x + 1).t().shape, x.is_meta
(ember.Size([3, 2]), True)
"""
import mmap

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from .device import device

META = device("meta")
_ROOT_BYTES = 1 << 40      # virtual address space only: never backed by memory
_root = [None]             # the shared uint8 mapping, made on first use
_roots = {}                # numpy dtype -> the mapping viewed as that dtype


class MetaData(RuntimeError):
    """Raised when code tries to compute with a meta tensor's (absent) data. Ops catch it at
    their entry and run their meta rule; escaping to the user it reads as torch's error."""


def _refuse(what="this operation"):
    raise MetaData(f"{what} needs the data of a meta tensor, and meta tensors have none")


# NumPy functions that only read or build metadata: allowed on meta arrays
_METADATA_FUNCTIONS = {np.shape, np.ndim, np.size, np.may_share_memory, np.shares_memory,
                       np.broadcast_to, np.broadcast_arrays, np.transpose, np.swapaxes,
                       np.moveaxis, np.expand_dims, np.squeeze, np.diagonal, np.result_type,
                       np.atleast_1d, np.atleast_2d, np.atleast_3d}


class MetaArray(np.ndarray):
    """A NumPy array with metadata only (see the module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _refuse(f"np.{ufunc.__name__}")

    def __array_function__(self, func, types, args, kwargs):
        if func in _METADATA_FUNCTIONS:
            r = super().__array_function__(func, types, args, kwargs)
            if func in (np.broadcast_to, np.broadcast_arrays):
                r = (tuple(_as_meta(x) for x in r) if isinstance(r, (list, tuple))
                     else _as_meta(r))
            return r
        _refuse(f"np.{func.__name__}")

    def __getitem__(self, index):
        items = index if isinstance(index, tuple) else (index,)
        for i in items:
            if not (i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))) \
                    or isinstance(i, (bool, np.bool_)):
                _refuse("advanced indexing")
        return super().__getitem__(index)

    def __setitem__(self, index, value):
        _refuse("writing into a tensor")

    def __array__(self, dtype=None, copy=None):
        _refuse("converting to a NumPy array")

    def reshape(self, *shape, order="C"):
        """A view where NumPy has one, else a fresh contiguous meta array (a copy's
        metadata), so reshape never reads or allocates."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        try:
            return super().reshape(shape, order=order, copy=False)
        except ValueError:
            shape = tuple(shape)
            if -1 in shape:
                known = 1
                for s in shape:
                    known *= s if s != -1 else 1
                shape = tuple(self.size // known if s == -1 else s for s in shape)
            n = 1
            for s in shape:
                n *= s
            if n != self.size:
                raise
            return meta_array(shape, self.dtype, None, _beyond(self))

    def astype(self, dtype, *args, **kwargs):
        return meta_array(self.shape, np.dtype(dtype), None)

    def copy(self, order="C"):
        return meta_array(self.shape, self.dtype, None)

    def item(self, *args):
        _refuse("item()")

    def tolist(self):
        _refuse("tolist()")

    def fill(self, value):
        _refuse("fill()")

    def tobytes(self, order="C"):
        _refuse("tobytes()")

    def __reduce__(self):
        _refuse("pickling")

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides})"

    __str__ = __repr__


def _beyond(a):
    """An element offset into the shared mapping past `a`'s memory, so that a fresh "copy"
    of `a` does not overlap it (ember's view code asks NumPy whether a reshape shares memory
    to tell a view from a copy)."""
    root = _root_for(a.dtype)
    start = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    extent = a.itemsize + sum((n - 1) * abs(st) for n, st in zip(a.shape, a.strides) if n)
    off = (start + extent) // a.itemsize + 1
    return off if (off + a.size) * a.itemsize < _ROOT_BYTES else 0


def _as_meta(a):
    return a if type(a) is MetaArray else a.view(MetaArray)


def _root_for(np_dtype):
    r = _roots.get(np_dtype)
    if r is None:
        if _root[0] is None:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0)
            mm = mmap.mmap(-1, _ROOT_BYTES, flags=flags, prot=mmap.PROT_READ)
            _root[0] = np.frombuffer(mm, dtype=np.uint8)     # read-only, all zero pages
        r = _roots[np_dtype] = _root[0].view(np_dtype)
    return r


def meta_array(shape, np_dtype, strides=None, offset=0):
    """A MetaArray of `shape` with element `strides` (contiguous when None), starting
    `offset` elements into its storage. No memory is touched or allocated."""
    np_dtype = np.dtype(np_dtype)
    shape = tuple(int(s) for s in shape)
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        strides = tuple(reversed(strides))
    root = _root_for(np_dtype)
    item = np_dtype.itemsize
    base = root[offset:] if offset else root
    a = _np_as_strided(base, shape=shape, strides=tuple(int(s) * item for s in strides),
                       subok=False, writeable=False)
    return a.view(MetaArray)


def is_meta_array(a):
    return type(a) is MetaArray


# ---- what torch says when data is read from a meta tensor ----
def item_error():
    return RuntimeError("Tensor.item() cannot be called on meta tensors")


def copy_out_error():
    return NotImplementedError("Cannot copy out of meta tensor; no data!")


def numpy_error():
    return TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy "
                     "the tensor to host memory first.")


def device_mismatch(found, expected):
    """torch's error for an op over tensors of two devices."""
    return RuntimeError(f"Tensor on device {found} is not on the expected device {expected}!")


def meta_repr(t):
    """torch's repr of a meta tensor: ``tensor(..., device='meta', size=(2, 3))``."""
    from . import dtype as D
    parts = ["...", "device='meta'", f"size={tuple(t._data.shape)}"]
    if t.dtype is not D.get_default_dtype():     # torch names int64 and bool here too
        parts.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        parts.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        parts.append("requires_grad=True")
    return "tensor(" + ", ".join(parts) + ")"

