"""Meta rules' layouts: the strides NumPy gives a cpu kernel's result, read off NumPy itself
run on tiny stand-in arrays of the same dim order (at most 2 elements per dim), which is
exact and costs microseconds (ember/ops/meta_rules.py uses them).

NumPy orders a result's dims like its operands' (order "K"), so a transposed input gives a
transposed result; linalg gufuncs (np.linalg.inv, solve) do so over the batch dims and lay
each matrix out C-contiguous.
"""
import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from ..core import strides as S
from ..dispatch import wrap


def _proxy(shape, strides, keep=()):
    """A tiny real array with `shape`'s dims clipped to 2 (but those in `keep`) and the dim
    order of `strides` (stride-0 dims stay stride 0)."""
    small = tuple(min(s, 2) if d not in keep else s for d, s in enumerate(shape))
    order = sorted(range(len(shape)), key=lambda d: (abs(strides[d]), -d))
    st, acc = [0] * len(shape), 1
    for d in order:
        if strides[d] == 0 and shape[d] != 1:
            continue
        st[d] = acc
        acc *= small[d]
    base = np.zeros(max(acc, 1), np.int8)
    return _np_as_strided(base, small, tuple(st))


def _strides_from(small_result, shape):
    """Element strides for `shape` in the dim order of NumPy's tiny result."""
    rs = small_result.strides
    order = sorted(range(len(shape)), key=lambda d: (rs[d], 0 if small_result.shape[d] == 1
                                                     else 1))
    st, acc = [0] * len(shape), 1
    for d in order:
        st[d] = acc
        acc *= shape[d]
    return tuple(st)


@functools.lru_cache(maxsize=4096)
def _layout(operands, shape, axis, keepdims):
    proxies = [_proxy(s, st) for s, st in operands]
    if axis is False:
        small = np.add(*proxies) if len(proxies) == 2 else \
            (np.positive(proxies[0]) if len(proxies) == 1 else proxies[0] + sum(proxies[1:]))
        if small.shape != tuple(min(s, 2) for s in shape):      # scalars broadcast against
            small = np.positive(np.broadcast_to(small, tuple(min(s, 2) for s in shape)))
    else:
        small = np.add.reduce(proxies[0], axis=axis, keepdims=keepdims)
    return _strides_from(small, shape)


def numpy_layout(tensors, shape):
    """Element strides NumPy gives an elementwise result of `shape` over `tensors`."""
    if len(shape) < 2:
        return S.contiguous_strides(shape)
    n = len(shape)
    ops = tuple(((1,) * (n - t._data.ndim) + tuple(t._data.shape),
                 (0,) * (n - t._data.ndim) + t.stride()) for t in tensors
                if t._data.ndim and t._data.size)
    ops = ops or ((tuple(shape), S.contiguous_strides(shape)),)
    if len(ops) > 3:
        ops = ops[:3]
    return _layout(ops, tuple(shape), False, False)


def joined_layout(np_join, tensors, shape, axis):
    """Element strides of np.concatenate / np.stack (`np_join`) of `tensors` along `axis`:
    NumPy orders the result's dims like its operands' (order "K"), read off tiny stand-ins."""
    if len(shape) < 2:
        return S.contiguous_strides(shape)
    small = np_join([_proxy(tuple(t._data.shape), t.stride()) for t in tensors], axis=axis)
    return _strides_from(small, tuple(shape))


def reduction_layout(t, axis, keepdim, shape):
    """Element strides of NumPy's reduction of `t` over `axis`."""
    if t._data.ndim < 2 or not t._data.size or len(shape) < 2:
        return S.contiguous_strides(shape)
    return _layout(((tuple(t._data.shape), t.stride()),), tuple(shape),
                   axis if axis is None else tuple(axis), bool(keepdim))


def standin(t, fill=0):
    """A tiny cpu tensor with `t`'s dtype and dim order (each dim at most 2 long, stride-0
    dims kept): the cpu op run on stand-ins shows its result's layout (`standin_layout`)."""
    p = _proxy(tuple(t._data.shape), t.stride())
    npdt = t.dtype.np
    base = np.full(1 + sum((n - 1) * st for n, st in zip(p.shape, p.strides) if n), fill,
                   npdt)
    arr = _np_as_strided(base, p.shape, tuple(st * base.itemsize for st in p.strides))
    return wrap(arr, t.dtype)



def standin_layout(small, shape):
    """Element strides for `shape` in the dim order of `small`, the cpu op's result on
    stand-ins (`standin`)."""
    return _strides_from(small._data, tuple(shape)) if len(shape) > 1 else \
        S.contiguous_strides(shape)



def cross_layout(a, b, shape, d):
    """Element strides of np.cross(broadcast a, broadcast b, axis=d) (ember's cpu kernel),
    read off tiny stand-ins (dim `d`, the 3-vectors, kept whole)."""
    n = len(shape)
    if n < 2 or 0 in shape:
        return None
    small = tuple(min(s, 2) if k != d else s for k, s in enumerate(shape))
    px = [np.broadcast_to(_proxy((1,) * (n - t.dim()) + tuple(t._data.shape),
                                 (0,) * (n - t.dim()) + t.stride(), (d,)), small)
          for t in (a, b)]
    return _strides_from(np.cross(px[0], px[1], axis=d), tuple(shape))



def gufunc_layout(operands, batch, core):
    """Element strides of a NumPy linalg gufunc's result (np.linalg.inv, solve): the batch
    dims in the operands' dim order (order "K" over their batch parts), each matrix
    C-contiguous. `operands`: (tensor, its core ndim) pairs."""
    batch, core = tuple(batch), tuple(core)
    nb, csize = len(batch), 1
    for c in core:
        csize *= c
    ops = []
    for t, nc in operands:
        shape, st = tuple(t._data.shape), t.stride()
        shape, st = shape[:len(shape) - nc], st[:len(st) - nc]
        if shape and 0 not in shape:
            ops.append(((1,) * (nb - len(shape)) + shape, (0,) * (nb - len(shape)) + st))
    if nb < 2 or not csize or 0 in batch or not ops:
        return S.contiguous_strides(batch + core)
    bst = _layout(tuple(ops[:3]), batch, False, False)
    return tuple(x * csize for x in bst) + S.contiguous_strides(core)
