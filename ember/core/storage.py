"""Storage: one flat 1-D buffer that tensors view, plus the version counter they share.

A Tensor keeps a strided backend array (`_data`) that views this buffer; the Storage is
made lazily, the first time someone needs to know the buffer (a view, an in-place op,
`storage_offset()`), so fresh results of ops pay nothing for it.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided


class Storage:
    """A flat buffer (``data``: a 1-D backend array) and the version counter of its views."""
    __slots__ = ("data", "version", "__weakref__")

    def __init__(self, data=()):
        if type(data) is int or type(data) in (list, tuple):
            # torch's public forms: UntypedStorage(nbytes) (zeros here; torch leaves the
            # bytes uninitialised) and UntypedStorage([byte values])
            data = (np.zeros(data, np.uint8) if type(data) is int else
                    np.array(data, dtype=np.uint8).reshape(-1))
        self.data = data
        self.version = 0

    @property
    def device(self):
        from .meta import MetaArray, META
        if type(self.data) is MetaArray:
            return META
        from .device import CPU
        return CPU

    def nbytes(self):
        return self.data.nbytes

    def size(self):
        return self.data.size

    def data_ptr(self):
        from .meta import MetaArray
        if type(self.data) is MetaArray:
            return 0    # torch: a meta storage has no address
        return self.data.ctypes.data if self.data.size else 0

    def __len__(self):
        return self.nbytes()

    def __repr__(self):
        return f"ember.Storage(nbytes={self.nbytes()}, dtype={self.data.dtype})"


def storage_for(arr):
    """Build a Storage whose flat buffer spans the memory `arr` views (no copy)."""
    item = arr.itemsize
    if arr.flags.c_contiguous and (arr.base is None or (
            arr.size and type(arr) is np.ndarray and min(arr.strides, default=0) >= 0)):
        # a contiguous array spans exactly its own elements: the flat view of them is the
        # buffer the strided walk below would build (a reshaped product, e.g. linear's
        # output, is such a view of its array), at a fraction of as_strided's cost
        return Storage(arr.reshape(-1))
    if arr.size == 0:  # an empty buffer at arr's address, so views keep their offsets
        return Storage(as_strided(arr, shape=(0,), strides=(item,), subok=True))
    span = 1
    for size, st in zip(arr.shape, arr.strides):
        if st < 0 or st % item:
            raise ValueError("cannot view an array with negative or unaligned strides")
        span += (size - 1) * (st // item)
    return Storage(as_strided(arr, shape=(span,), strides=(item,), subok=True))


def offset_in(storage, arr):
    """Element offset of `arr`'s first element inside `storage`."""
    return (arr.ctypes.data - storage.data.ctypes.data) // arr.itemsize
