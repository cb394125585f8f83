"""Pure functions on shapes and strides, shared by eager views, meta rules and the tracer.

Strides are in elements, as in PyTorch. Every rule here is PyTorch's: which reshapes can be
views, what "contiguous" means (size-1 dims don't count), how shapes broadcast, and the
messages of the errors each raises.
"""
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided


def contiguous_strides(shape):
    """Row-major strides: contiguous_strides((2, 3, 4)) == (12, 4, 1)."""
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def is_contiguous(shape, stride):
    """PyTorch's rule: empty tensors are contiguous, and size-1 dims may have any stride."""
    if 0 in shape:
        return True
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size != 1:
            if st != expected:
                return False
            expected *= size
    return True


def is_non_overlapping_and_dense(shape, stride):
    """True when the elements fill a block of memory exactly, in some order of the dims."""
    dims = sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: stride[d])
    required = 1
    for d in dims:
        if stride[d] != required:
            return False
        required *= shape[d]
    return True


def dense_strides_like(shape, stride):
    """PyTorch's preserve_format: the strides of a copy (clone, empty_like) of a tensor.

    A dense layout is kept as it is; otherwise the dims are laid out densely in the order of
    their strides (smallest innermost), where stride-0 dims keep their place and equal strides
    put the larger dim outside.
    """
    if 0 in shape or is_non_overlapping_and_dense(shape, stride):
        return tuple(stride)
    n = len(shape)
    perm = list(range(n - 1, -1, -1))  # innermost first

    def order(a, b):  # > 0: dim a belongs outside dim b
        if stride[a] == 0 or stride[b] == 0:
            return 0
        if stride[a] != stride[b]:
            return 1 if stride[a] > stride[b] else -1
        return 1 if shape[a] > shape[b] else 0
    for i in range(1, n):  # insertion sort that leaves "0" (incomparable) pairs alone
        j = i
        for k in range(i - 1, -1, -1):
            c = order(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    out, acc = [0] * n, 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def channels_last_strides(shape):
    """Strides of channels_last (4-D: N, C, H, W stored as N, H, W, C) or channels_last_3d."""
    if len(shape) not in (4, 5):
        raise RuntimeError(f"required rank {4 if len(shape) < 5 else 5} tensor to use "
                           "channels_last format")
    order = [1] + list(range(len(shape) - 1, 1, -1)) + [0]  # innermost first: C, W, H, (D), N
    out, acc = [0] * len(shape), 1
    for d in order:  # unlike contiguous strides, a size of 0 is not counted as 1 here
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def is_channels_last_contiguous(shape, stride):
    """PyTorch's is_contiguous(memory_format=channels_last[_3d]): C innermost, then W, H, (D),
    N outermost; size-1 dims may have any stride."""
    if len(shape) not in (4, 5):
        return False
    expected = 1
    for d in [1] + list(range(len(shape) - 1, 1, -1)) + [0]:
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True


def numel(shape):
    return math.prod(shape)


def wrap_dim(dim, ndim, scalar_ok=True):
    """Normalise a possibly negative dim; 0-dim tensors accept -1 and 0 like PyTorch."""
    if type(dim) is not int:
        # torch refuses bools and floats as dims (TypeError); integer-likes are read with
        # __index__ (a bool must not pass as 0/1: caches keyed on dims would confuse them)
        if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
            raise TypeError(f"a dimension must be int, not {type(dim).__name__}")
        dim = int(dim.__index__())
    n = ndim if ndim > 0 or not scalar_ok else 1
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim):
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out[0]} appears multiple times in the list of dims")
    return out


def infer_size(shape, numel_):
    """Resolve one -1 in `shape` for a tensor of `numel_` elements (view/reshape)."""
    neg = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if neg is not None:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if neg is None:
        if known != numel_:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel_}")
        return tuple(shape)
    if known == 0 or numel_ % known != 0:
        if known == 0 and numel_ == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               "because the unspecified dimension size -1 can be any value and "
                               "is ambiguous")
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel_}")
    shape = list(shape)
    shape[neg] = numel_ // known
    return tuple(shape)


def view_strides(old_shape, old_stride, new_shape):
    """Strides that let `new_shape` view memory laid out as (old_shape, old_stride), or None.

    The same chunking rule as PyTorch's: the old dims are grouped into runs that are
    contiguous with each other, and each run must be reshaped into whole new dims.
    """
    if math.prod(old_shape) == 0 or len(old_shape) == 0:
        if math.prod(old_shape) == 0 and len(old_shape) > 0:  # any strides would do
            return tuple(old_stride) if tuple(old_shape) == tuple(new_shape) else \
                contiguous_strides(new_shape)
        return tuple(1 for _ in new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def broadcast_shapes(*shapes):
    """The broadcast of several shapes, with PyTorch's error naming the clashing sizes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, size in enumerate(s):
            j = off + i
            if size == out[j] or size == 1:
                continue
            if out[j] == 1:
                out[j] = size
            else:
                raise RuntimeError(f"The size of tensor a ({out[j]}) must match the size of "
                                   f"tensor b ({size}) at non-singleton dimension {j}")
    return tuple(out)


def expand_strides(shape, stride, new_shape):
    """Strides of `expand(new_shape)`: new and size-1 broadcast dims get stride 0."""
    if len(new_shape) < len(shape):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(new_shape)}): "
                           "the number of sizes provided "
                           f"({len(new_shape)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    off = len(new_shape) - len(shape)
    out_shape, out_stride = [0] * len(new_shape), [0] * len(new_shape)
    # right to left, like PyTorch: a new leading dim of size 1 gets the stride it would have
    # in a contiguous layout of the dims to its right (any stride is valid for size 1)
    for i in range(len(new_shape) - 1, -1, -1):
        size, j = new_shape[i], i - off
        if j < 0:
            if size < 0:
                raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in "
                                   f"a leading, non-existing dimension {i}")
            old = 1
            st = out_shape[i + 1] * out_stride[i + 1] if i + 1 < len(new_shape) else 0
        else:
            old, st = shape[j], stride[j]
            if size == -1:
                size = old
        if old != size:
            if old != 1:
                raise RuntimeError(f"The expanded size of the tensor ({size}) must match the "
                                   f"existing size ({old}) at non-singleton dimension {i}.  "
                                   f"Target sizes: {list(new_shape)}.  Tensor sizes: "
                                   f"{list(shape)}")
            st = 0
        out_shape[i], out_stride[i] = size, st
    return tuple(out_shape), tuple(out_stride)


# ---- backend views (the arrays behind strided tensors) ----

def strided_view(arr, shape, stride):
    """A backend view of `arr`'s memory with element strides `stride` (from arr's start)."""
    item = arr.itemsize
    strides = tuple(s * item for s in stride)
    if arr.flags.c_contiguous and arr.size and type(arr) is np.ndarray:
        # np.ndarray over the buffer is ~5x cheaper than as_strided, and still aliases `arr`
        return np.ndarray(tuple(shape), arr.dtype, buffer=arr, strides=strides)
    # subok: a view of a meta array (ember/core/meta.py) stays one
    return _np_as_strided(arr, shape=tuple(shape), strides=strides, writeable=True, subok=True)


def storage_positions(t):
    """For each element of tensor `t`, its position in its storage's flat buffer."""
    st = t.stride()
    off = t.storage_offset()
    full = np.arange(t._storage_obj().data.size, dtype=np.int64)
    return strided_view(full[off:], t._data.shape, st) if t._data.size else \
        np.zeros(t._data.shape, np.int64)
