"""TypedStorage (what ``Tensor.storage()`` returns), torch's legacy storage classes
(``ember.FloatStorage``: what ``Tensor.storage_type()`` returns) and shared memory
(``share_memory_``/``is_shared``).

A TypedStorage is a typed window on a tensor's Storage (core/storage.py): it reads and
writes the storage's flat buffer through the tensor's dtype, so writes show in the tensor.

Shared memory: `share_storage` copies a Storage's buffer once into an anonymous MAP_SHARED
mapping (which a forked child process shares with its parent, as torch's shared CPU memory
is shared) and repoints the Storage and every tensor that views it at the new buffer, as
torch moves the storage behind all its views. Arrays handed out earlier (``.numpy()``)
keep the old memory.
"""
import gc
import mmap
import warnings

import numpy as np

from . import dtype as _dt
from .meta import MetaArray
from .storage import Storage

_warned = [False]


def warn_typed_storage_removal(stacklevel=2):
    """torch's deprecation warning, given once per process as torch gives it."""
    if _warned[0]:
        return
    _warned[0] = True
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=stacklevel + 1)


# ---- shared memory ----

def is_shared(storage):
    return type(storage.data) is not MetaArray and _in_mmap(storage.data)


def _in_mmap(arr):
    a = arr
    while a is not None:
        if isinstance(a, mmap.mmap):
            return True
        a = getattr(a, "base", None) if isinstance(a, np.ndarray) else (
            a.obj if isinstance(a, memoryview) else None)
    return False


def share_storage(storage):
    """Move `storage`'s buffer to shared memory (no-op when it is there already)."""
    old = storage.data
    if type(old) is MetaArray:
        raise RuntimeError("_share_fd_: only available on CPU")
    if _in_mmap(old):
        return storage
    from .tensor import Tensor
    buf = mmap.mmap(-1, max(old.nbytes, 1))          # MAP_SHARED | MAP_ANONYMOUS
    new = np.ndarray(old.shape, old.dtype, buffer=buf)
    new[...] = old
    old_ptr = old.ctypes.data
    viewers = [o for o in gc.get_referrers(storage)
               if isinstance(o, Tensor) and o._storage is storage]
    for t in viewers:
        arr = t._data
        off = arr.ctypes.data - old_ptr if arr.size else 0
        moved = np.ndarray(arr.shape, arr.dtype, buffer=buf, offset=max(0, min(off, len(buf))),
                           strides=arr.strides)
        if not arr.flags.writeable:
            moved.flags.writeable = False
        t._data = moved
    storage.data = new
    return storage


# ---- TypedStorage ----

class TypedStorage:
    """A typed view of a storage: ``t.storage()``; ``ember.TypedStorage(3)`` (zeros, in the
    default dtype), ``ember.TypedStorage([1, 2], dtype=ember.int32)``."""
    is_sparse = False

    def __new__(cls, *args, dtype=None, device=None, wrap_storage=None):
        self = object.__new__(TypedStorage)
        if wrap_storage is not None:
            self._untyped, self.dtype = wrap_storage, dtype or _dt.get_default_dtype()
            return self
        dt = dtype or getattr(cls, "dtype", None) or _dt.get_default_dtype()
        if not isinstance(dt, _dt.dtype):
            dt = _dt.get_default_dtype()
        if not args:
            data = np.zeros(0, dt.np)
        elif len(args) == 1 and isinstance(args[0], int):
            data = np.zeros(args[0], dt.np)
        elif len(args) == 1:
            data = np.asarray(list(args[0])).astype(dt.np)
        else:
            raise TypeError("TypedStorage(): expected a size or a sequence")
        self._untyped, self.dtype = Storage(data), dt
        return self

    @property
    def _flat(self):
        data = self._untyped.data
        return data if data.dtype == self.dtype.np else data.view(self.dtype.np)

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self):
        return False

    def untyped(self):
        return self._untyped

    def size(self):
        return self._untyped.nbytes() // self.dtype.itemsize

    def __len__(self):
        return self.size()

    def element_size(self):
        return self.dtype.itemsize

    def nbytes(self):
        return self._untyped.nbytes()

    def data_ptr(self):
        return self._untyped.data_ptr()

    def _index(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise RuntimeError(f"can't index a {TypedStorage!r} with {type(idx)}")
        n = self.size()
        i = idx + n if idx < 0 else idx
        if not 0 <= i < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return i

    def __getitem__(self, idx):
        return self._flat[self._index(idx)].item()

    def __setitem__(self, idx, value):
        self._flat[self._index(idx)] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._flat.tolist()

    def fill_(self, value):
        self._flat[...] = value
        return self

    def is_shared(self):
        return is_shared(self._untyped)

    def share_memory_(self):
        share_storage(self._untyped)
        return self

    def is_pinned(self, device="cuda"):
        return False

    def _get_legacy_storage_class(self):
        return STORAGE_CLASSES.get(self.dtype)

    def type(self):
        """The legacy class's name (``"ember.FloatStorage"``). (torch's conversion form,
        ``type(dtype)``, copies the untyped bytes and fails on a size mismatch; ember has
        none.)"""
        cls = self._get_legacy_storage_class()
        return f"ember.{cls.__name__}" if cls is not None else "ember.TypedStorage"

    def __str__(self):
        body = " " + "\n ".join(str(self[i]) for i in range(self.size()))
        return (body + f"\n[ember.storage.TypedStorage(dtype={self.dtype}, "
                f"device={self.device}) of size {self.size()}]")

    __repr__ = __str__


class _LegacyStorageMeta(type):
    def __instancecheck__(cls, instance):
        if type(instance) is TypedStorage:
            return instance.device.type == "cpu" and instance.dtype == cls.dtype
        return issubclass(type(instance), cls)


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    """torch's legacy per-dtype storage classes: ``ember.FloatStorage(3)`` builds a
    float32 TypedStorage; ``isinstance(t.storage(), ember.FloatStorage)``."""


_LEGACY = {"Bool": _dt.bool_, "Byte": _dt.uint8, "Char": _dt.int8, "Short": _dt.int16,
           "Int": _dt.int32, "Long": _dt.int64, "Half": _dt.float16, "BFloat16": _dt.bfloat16,
           "Float": _dt.float32, "Double": _dt.float64, "ComplexFloat": _dt.complex64,
           "ComplexDouble": _dt.complex128}
STORAGE_CLASSES = {}
for _n, _d in _LEGACY.items():
    _cls = _LegacyStorageMeta(_n + "Storage", (_LegacyStorage,), {"dtype": _d,
                                                                  "__module__": "ember"})
    STORAGE_CLASSES[_d] = _cls
    globals()[_n + "Storage"] = _cls


__all__ = ["TypedStorage"] + [c.__name__ for c in STORAGE_CLASSES.values()]


def typed_storage_of(t):
    """The TypedStorage of tensor `t` (shares t's Storage)."""
    return TypedStorage(wrap_storage=t._storage_obj(), dtype=t.dtype)
