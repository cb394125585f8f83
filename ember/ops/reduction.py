"""Reductions: sum, mean, prod, amax/amin, all/any, and sum_to_size (the engine uses it to
reduce broadcast gradients). Each takes `dim` as int, tuple or None, negative dims and
`keepdim`, with PyTorch's result dtypes (integer sums give int64).
"""
import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, REDUCTION, register


def _dims(dim, ndim):
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        return S.wrap_dims(dim, ndim)
    return (S.wrap_dim(dim, ndim),)


def _axis(dims, ndim):
    if dims is None or ndim == 0:
        return None
    return dims


def _expand_grad(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input's `shape`."""
    if not keepdim and dims is not None and len(shape) > 0:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    elif not keepdim and dims is None and len(shape) > 0:
        g = g.reshape((1,) * len(shape))
    return g.expand(shape)


def _reduce(op, input, dims, keepdim, arr, dt, attrs):
    out = wrap(arr, dt)
    if state.enabled and input._requires_grad and dt.is_floating_point:
        graph.record(op, (input,), out, attrs)
    return out


_SUM = OpDef("sum", REDUCTION, attrs={"shape": None, "dims": None, "keepdim": False},
             grads={"self": lambda g, shape, dims, keepdim: _expand_grad(g, shape, dims,
                                                                         keepdim)},
             node_name="SumBackward0")
_SUM_DIM = OpDef("sum_dim", REDUCTION, attrs=_SUM.attrs, grads=_SUM.grads,
                 node_name="SumBackward1")


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of elements, over all dims or over `dim` (int or tuple)."""
    dims = _dims(dim, input._data.ndim)
    a = input._data
    if dtype is not None:
        dt = D.to_dtype(dtype)
        a = a.astype(dt.np)
    elif not input.dtype.is_floating_point:
        dt = D.int64
    else:
        dt = input.dtype
    kdt = np.float32 if dt in (D.float16, D.bfloat16) else dt.np
    r = np.sum(a, axis=_axis(dims, a.ndim), keepdims=keepdim, dtype=kdt)
    op = _SUM if dim is None else _SUM_DIM
    res = _reduce(op, input, dims, keepdim, r, dt,
                  {"shape": input._data.shape, "dims": dims, "keepdim": keepdim})
    if out is not None:
        from ..dispatch import copy_into_out
        return copy_into_out(out, res)
    return res


_MEAN = OpDef("mean", REDUCTION, attrs={"shape": None, "dims": None, "keepdim": False, "n": 1},
              grads={"self": lambda g, shape, dims, keepdim, n: _expand_grad(g / n, shape, dims,
                                                                             keepdim)},
              node_name="MeanBackward0")
_MEAN_DIM = OpDef("mean_dim", REDUCTION, attrs=_MEAN.attrs, grads=_MEAN.grads,
                  node_name="MeanBackward1")


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Arithmetic mean over all elements or over `dim`."""
    dt = D.to_dtype(dtype) if dtype is not None else input.dtype
    if not dt.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {torch_name(dt)}")
    dims = _dims(dim, input._data.ndim)
    a = input._data
    kdt = np.float32 if dt in (D.float16, D.bfloat16) else dt.np
    with np.errstate(all="ignore"):
        r = np.mean(a, axis=_axis(dims, a.ndim), keepdims=keepdim, dtype=kdt)
    shape = a.shape
    n = int(np.prod([shape[d] for d in dims])) if dims is not None else a.size
    op = _MEAN if dim is None else _MEAN_DIM
    return _reduce(op, input, dims, keepdim, r, dt,
                   {"shape": shape, "dims": dims, "keepdim": keepdim, "n": n})


def _bool_reduce(np_fn, name):
    def fn(input, dim=None, keepdim=False, *, out=None):
        dims = _dims(dim, input._data.ndim)
        r = np_fn(input._data, axis=_axis(dims, input._data.ndim), keepdims=keepdim)
        dt = D.uint8 if input.dtype is D.uint8 else D.bool_
        return wrap(r, dt)
    fn.__name__ = name
    return fn


all = _bool_reduce(np.all, "all")
any = _bool_reduce(np.any, "any")


def sum_to_size(self, *size):
    """Sum `self` down to `size`, which must broadcast to self's shape (the reverse of expand)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = self._data.shape
    if tuple(size) == shape:
        return self
    lead = len(shape) - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = list(range(lead))
    for i, s in enumerate(size):
        if s == 1 and shape[lead + i] != 1:
            dims.append(lead + i)
        elif s != shape[lead + i]:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                               f"{{{list(shape)}}}.")
    r = sum(self, tuple(dims), keepdim=True) if dims else self
    if lead:
        r = r.reshape(tuple(size))
    return r


for _f in (sum, mean, all, any):
    register(OpDef(_f.__name__, REDUCTION), _f)
register(OpDef("sum_to_size", REDUCTION, function=False), sum_to_size)
