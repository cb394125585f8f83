"""Gathering and scattering by element positions rather than along one dim: index_put (a
tuple of index tensors, ``x[i, j] = v``), masked_scatter/masked_select (a bool mask),
take/put (flat positions), take_along_dim, nonzero/argwhere.

As in ops/scatter.py (whose helpers these share): one vectorised NumPy call per kernel,
indices bounds-checked first, and each derivative the adjoint op (take <-> put(accumulate=True),
masked_select <-> masked_scatter).
"""
import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from . import meta_rules as M
from .registry import OPS
from ..autograd.derivative import Derivative
from .registry import OpDef, EXTERN, LINEAR, register, register_each, METHODS
from .matmul import finish, _out
from .scatter import gather, _wrap_dim, _zeros, _inplace


# ---- index_put ------------------------------------------------------------------------------
def _np_indices(indices):
    out = []
    for t in indices:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {len(out)} in argument 0, but got "
                            f"{type(t).__name__}")
        if t.dtype not in (D.int64, D.int32, D.uint8, D.bool_, D.int16, D.int8):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        out.append(t._data.astype(bool) if t.dtype is D.uint8 else t._data)
    return tuple(out)


def _index_put_self_grad(g, indices, accumulate):
    return g if accumulate else index_put(g, indices, _zeros((), g.dtype))


_INDEX_PUT = Derivative("index_put", inputs=("self", "values"),
                        attrs={"indices": (), "accumulate": False},
                        grads={"self": _index_put_self_grad,
                               "values": lambda g, indices: g[tuple(indices)]})


def index_put(input, indices, values, accumulate=False):
    """`input` with `values` written at the positions selected by the tuple of index tensors
    (advanced indexing); accumulate=True adds instead, duplicates included."""
    indices = tuple(indices)
    idx = _np_indices(indices)
    if not accumulate and len(indices) == 1 and indices[0].dtype in (D.bool_, D.uint8) and \
            values.numel() == 1 and indices[0].dim() <= input.dim():
        # torch's kernel hands one mask and a one-element value to masked_fill_(mask,
        # value.item()), which converts the value to input's dtype (no dtype check there)
        # and refuses a uint8 mask
        mask = indices[0]
        for j in range(mask.dim()):
            if mask.shape[j] != input.shape[j]:
                raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does "
                                 f"not match the shape of the indexed tensor "
                                 f"{list(input.shape)} at index {j}")
        if mask.dtype is D.uint8:
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with "
                               "dtype unsigned char")
        values = values.to(input.dtype)
    if values.dtype is not input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_name(input.dtype)} for the destination and "
                           f"{torch_name(values.dtype)} for the source.")
    a = input._data
    try:
        target_shape = a[idx].shape
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None
    try:
        v = np.broadcast_to(values._data, target_shape)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(target_shape)}"
                           ) from None
    r = a.copy()
    if accumulate:
        np.add.at(r, idx, v)
    else:
        r[idx] = v
    return finish(_INDEX_PUT, (input, values), r, input.dtype,
                  {"indices": indices, "accumulate": accumulate})


# ---- masked_scatter / masked_select ---------------------------------------------------------
def _masked_source_grad(g, mask, src_shape):
    from .joining import cat
    sel = masked_select(g, mask)
    n = int(np.prod(src_shape, dtype=np.int64))
    return cat([sel, _zeros((n - sel.numel(),), g.dtype)]).reshape(src_shape)


_MASKED_SCATTER = Derivative("masked_scatter", inputs=("self", "source"),
                             attrs={"mask": None, "src_shape": ()},
                             grads={"self": lambda g, mask: g.masked_fill(mask, 0),
                                    "source": _masked_source_grad})


def masked_scatter(input, mask, source):
    """`input` with the places where `mask` holds filled, in order, from `source`'s elements."""
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {torch_name(mask.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{torch_name(input.dtype)} and {torch_name(source.dtype)}")
    shape = S.broadcast_shapes(input._data.shape, mask._data.shape)
    r = np.broadcast_to(input._data, shape).copy()
    m = np.broadcast_to(mask._data, shape)
    k = int(m.sum())
    if source.numel() < k:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    r[m] = source._data.reshape(-1)[:k]
    return finish(_MASKED_SCATTER, (input, source), r, input.dtype,
                  {"mask": mask, "src_shape": source._data.shape})


_MASKED_SELECT = Derivative("masked_select", attrs={"mask": None, "shape": ()},
                            grads={"self": lambda g, mask, shape:
                                   masked_scatter(_zeros(shape, g.dtype), mask, g)})


def masked_select(input, mask, *, out=None):
    """The elements of `input` where `mask` holds (both broadcast), as a 1-D tensor."""
    if mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = S.broadcast_shapes(mask._data.shape, input._data.shape)   # (torch's order)
    r = np.broadcast_to(input._data, shape)[np.broadcast_to(mask._data, shape)]
    res = finish(_MASKED_SELECT, (input,), r, input.dtype, {"mask": mask, "shape": shape})
    return _out(res, out)


# ---- take / put ------------------------------------------------------------------------------
def _flat_index(name, input, index, exc_dtype=RuntimeError):
    if index.dtype is not D.int64:
        raise exc_dtype(f"{name}(): Expected a long tensor for index, but got "
                        f"{torch_name(index.dtype)}")
    n = input.numel()
    idx = index._data
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        v = int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} "
                         "elements.")
    return np.where(idx < 0, idx + n, idx)


_TAKE = Derivative("take", attrs={"index": None, "shape": ()},
                   grads={"self": lambda g, index, shape:
                          put(_zeros(shape, g.dtype), index, g, accumulate=True)})


def take(input, index):
    """Elements of the flattened `input` at `index` (negatives count from the end)."""
    idx = _flat_index("take", input, index)
    r = input._data.reshape(-1)[idx]
    return finish(_TAKE, (input,), r, input.dtype, {"index": index, "shape": input._data.shape})


def _put_self_grad(g, index, accumulate):
    return g if accumulate else put(g, index, _zeros(index.shape, g.dtype))


_PUT = Derivative("put", inputs=("self", "source"),
                  attrs={"index": None, "accumulate": False, "src_shape": ()},
                  grads={"self": _put_self_grad,
                         "source": lambda g, index, src_shape: take(g, index).reshape(src_shape)})


def put(input, index, source, accumulate=False):
    """`input` (as if flattened) with `source`'s elements written (or added) at `index`."""
    idx = _flat_index("put_", input, index)
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {torch_name(input.dtype)} and source.dtype = "
                           f"{torch_name(source.dtype)}")
    r = np.array(input._data, copy=True, order="C")
    flat = r.reshape(-1)   # a view: r is C-contiguous
    src = source._data.reshape(-1)
    if accumulate:
        np.add.at(flat, idx.reshape(-1), src)
    else:
        flat[idx.reshape(-1)] = src
    return finish(_PUT, (input, source), r, input.dtype,
                  {"index": index, "accumulate": accumulate, "src_shape": source._data.shape})


def take_along_dim(input, indices, dim=None, *, out=None):
    """Pick values along `dim` at `indices` (broadcast with `input` in the other dims); with
    dim=None, from the flattened input."""
    if indices.dtype is not D.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{torch_name(indices.dtype)}")
    if dim is None:
        return _out(gather(input.reshape(-1), 0, indices.reshape(-1)), out)
    if input.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.dim()} dimensions for input, "
                           f"and {indices.dim()} dimensions for indices")
    d = _wrap_dim(dim, input)
    xs, ish = list(input.shape), list(indices.shape)
    xs[d] = ish[d] = 1
    b = S.broadcast_shapes(tuple(xs), tuple(ish))
    xe = list(b)
    xe[d] = input.shape[d]
    ie = list(b)
    ie[d] = indices.shape[d]
    return _out(gather(input.expand(xe), d, indices.expand(ie)), out)


# ---- nonzero / argwhere ----------------------------------------------------------------------
def nonzero(input, *, as_tuple=False, out=None):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim
    with as_tuple=True."""
    a = input._data
    if as_tuple:
        if a.ndim == 0:
            return (wrap(np.zeros(int(a != 0), np.int64), D.int64),)
        return tuple(wrap(np.ascontiguousarray(i), D.int64) for i in np.nonzero(a))
    if a.ndim == 0:
        return _out(wrap(np.zeros((int(a != 0), 0), np.int64), D.int64), out)
    return _out(wrap(np.ascontiguousarray(np.argwhere(a)), D.int64), out)


def argwhere(input):
    return nonzero(input)


# ---- registration: functions, methods, in-place forms (copy_ into self) ----------------------
register_each(globals(), EXTERN, (
    index_put, masked_scatter, masked_select, take, take_along_dim),
    jvp=LINEAR)     # linear in their floating-point tensors together
# integer results, no tangent (not linear: applied to a tangent they would give the tangent's
# own non-zero pattern, which linearize would record and replay)
register_each(globals(), EXTERN, (nonzero, argwhere))
put = register(OpDef("put", EXTERN, jvp=LINEAR), put)
for _f in (index_put, masked_scatter, put):
    METHODS[_f.__name__ + "_"] = _inplace(_f)
# meta rules (ember/ops/meta_rules.py); masked_select has none (its shape is the mask's count)
OPS["take"].meta = M.take
OPS["put"].meta = OPS["index_put"].meta = OPS["masked_scatter"].meta = M.same_as_input
