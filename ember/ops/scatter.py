"""Gathering and scattering by index tensors: index_select, gather, scatter (and its add and
reduce forms), index_add/copy/fill/put, masked_scatter/select, take/put, nonzero.

Every kernel is one vectorised NumPy call (fancy indexing, np.take_along_axis, or ufunc.at
for accumulation, which adds duplicates in index order, so results are deterministic).
Indices are bounds-checked first and never wrap silently. Each derivative is the adjoint op:
gather <-> scatter_add, index_select <-> index_add, take <-> put(accumulate=True), ...
"""
import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from .registry import OpDef, EXTERN, register, METHODS
from .linalg import finish, _out

INT_INDEX = (D.int64, D.int32)


# ---- helpers -------------------------------------------------------------------------------
def _wrap_dim(dim, t):
    return S.wrap_dim(dim, t._data.ndim)


def _bounds(idx, size, dim, exc=RuntimeError, prefix="", negative=False):
    """Raise `exc` naming the first index outside [0, size) (or [-size, size))."""
    low = -size if negative else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        v = int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])
        raise exc(f"{prefix}index {v} is out of bounds for dimension {dim} with size {size}")


def _zeros(shape, dt):
    from . import creation       # the registered op, so a compiler trace records it
    return creation.zeros(shape, dtype=dt)


def _pad_to(t, shape):
    """`t` extended with zeros to `shape` (for sources larger than their index)."""
    from .joining import cat
    for k, (have, want) in enumerate(zip(t.shape, shape)):
        if have != want:
            zshape = list(t.shape)
            zshape[k] = want - have
            t = cat([t, _zeros(zshape, t.dtype)], k)
    return t


def _grid(index, d):
    """A NumPy index tuple addressing, for each element of `index`, its own position with
    dim `d` replaced by the index value (what scatter/gather address)."""
    idx = index._data.astype(np.int64)
    nd = idx.ndim
    out = []
    for k in range(nd):
        if k == d:
            out.append(idx)
        else:
            shape = [1] * nd
            shape[k] = idx.shape[k]
            out.append(np.arange(idx.shape[k]).reshape(shape))
    return tuple(out)


def _as1(a):
    return a.reshape(1) if a.ndim == 0 else a


# ---- index_select / index_add ---------------------------------------------------------------
def _index_vector(name, index, dtypes=INT_INDEX, msg=None, exc=RuntimeError):
    if index.dtype not in dtypes:
        raise exc(msg or f"{name}(): Expected dtype int32 or int64 for index")
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    return index._data.reshape(-1).astype(np.int64)


_INDEX_SELECT = OpDef("index_select", EXTERN, attrs={"shape": (), "dim": 0, "index": None},
                      grads={"self": lambda g, shape, dim, index:
                             index_add(_zeros(shape, g.dtype), dim, index, g)})


def index_select(input, dim, index, *, out=None):
    """The slices of `input` along `dim` at the positions in the 1-D `index`."""
    idx = _index_vector("index_select", index)
    d = _wrap_dim(dim, input)
    a = _as1(input._data)
    if input.dim() == 0 and idx.size != 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    if idx.size and (idx.min() < 0 or idx.max() >= a.shape[d]):
        raise IndexError("index out of range in self")
    r = np.take(a, idx, axis=d)
    if input.dim() == 0:
        r = r.reshape(())
    res = finish(_INDEX_SELECT, (input,), r, input.dtype,
                 {"shape": input._data.shape, "dim": d, "index": index})
    return _out(res, out)


def _index_add_src_grad(g, dim, index, alpha):
    r = index_select(g, dim, index)
    return r * alpha if alpha != 1 else r


_INDEX_ADD = OpDef("index_add", EXTERN, inputs=("self", "source"),
                   attrs={"dim": 0, "index": None, "alpha": 1},
                   grads={"self": lambda g: g, "source": _index_add_src_grad})


def _check_source(name, input, d, idx, source):
    if input.dtype is not source.dtype:
        raise RuntimeError(f"{name}(): self ({torch_name(input.dtype)}) and source "
                           f"({torch_name(source.dtype)}) must have the same scalar type")
    ss, si = source._data.shape, input._data.shape
    if len(ss) != len(si) or any(a != b for k, (a, b) in enumerate(zip(ss, si)) if k != d):
        if not (len(si) <= 1 and len(ss) <= 1):
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding "
                               f"the specified dimension. Got self.shape = {list(si)} "
                               f"source.shape = {list(ss)}")
    n = ss[d] if len(ss) else 1
    if idx.size != n:
        raise RuntimeError(f"{name}(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({n}), for dim: {d}")


def _add_at(r, idx, src):
    """r[idx[k]] += src[k] for every k, duplicates adding up in index order. For many
    indices of whole rows (an embedding's backward) the rows are grouped by a stable sort and
    each group summed at once: 3x faster than np.add.at, which adds row by row."""
    if idx.size < 256 or src[0].size < 16:
        np.add.at(r, idx, src)
        return
    order = np.argsort(idx, kind="stable")
    s = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    r[s[starts]] += np.add.reduceat(src[order], starts, axis=0)


def index_add(input, dim, index, source, *, alpha=1, out=None):
    """`input` with ``alpha * source`` slices added at `index` along `dim` (duplicates add up,
    in index order)."""
    if index.dtype not in INT_INDEX:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{torch_name(index.dtype)}")
    idx = _index_vector("index_add", index)
    d = _wrap_dim(dim, input)
    _check_source("index_add_", input, d, idx, source)
    a = _as1(input._data)
    _bounds(idx, a.shape[d], d)
    r = a.copy()
    src = _as1(source._data)
    if alpha != 1:
        src = src * alpha
    _add_at(np.moveaxis(r, d, 0), idx, np.moveaxis(src.astype(r.dtype, copy=False), d, 0))
    res = finish(_INDEX_ADD, (input, source), r.reshape(input._data.shape), input.dtype,
                 {"dim": d, "index": index, "alpha": alpha})
    return _out(res, out)


# ---- index_copy / index_fill ------------------------------------------------------------------
_INDEX_COPY = OpDef("index_copy", EXTERN, inputs=("self", "source"),
                    attrs={"dim": 0, "index": None},
                    grads={"self": lambda g, dim, index: index_fill(g, dim, index, 0),
                           "source": lambda g, dim, index: index_select(g, dim, index)})


def index_copy(input, dim, index, source):
    """`input` with the slices at `index` along `dim` replaced by `source`'s slices."""
    if index.dtype is not D.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{torch_name(index.dtype)}")
    idx = _index_vector("index_copy", index)
    d = _wrap_dim(dim, input)
    _check_source("index_copy_", input, d, idx, source)
    a = _as1(input._data)
    _bounds(idx, a.shape[d], d, IndexError, "index_copy_(): ")
    r = a.copy()
    np.moveaxis(r, d, 0)[idx] = np.moveaxis(_as1(source._data), d, 0)
    return finish(_INDEX_COPY, (input, source), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index})


_INDEX_FILL = OpDef("index_fill", EXTERN, inputs=("self", "value"),
                    attrs={"dim": 0, "index": None},
                    grads={"self": lambda g, dim, index: index_fill(g, dim, index, 0),
                           "value": lambda g, dim, index: index_select(g, dim, index).sum()})


def index_fill(input, dim, index, value):
    """`input` with the slices at `index` along `dim` set to `value` (negatives wrap)."""
    if index.dtype is not D.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    idx = _index_vector("index_fill", index, (D.int64,))
    d = _wrap_dim(dim, input)
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    a = _as1(input._data)
    _bounds(idx, a.shape[d], d, IndexError, negative=True)
    r = a.copy()
    v = value._data if isinstance(value, Tensor) else value
    np.moveaxis(r, d, 0)[idx] = v
    return finish(_INDEX_FILL, (input, value), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index})


# ---- gather / scatter ------------------------------------------------------------------------
def _gather_grad(g, shape, dim, index):
    return scatter_add(_zeros(shape, g.dtype), dim, index, g)


_GATHER = OpDef("gather", EXTERN, attrs={"shape": (), "dim": 0, "index": None},
                grads={"self": _gather_grad})


def _check_scatter_index(name, input, d, index, src=None):
    if index.dtype not in INT_INDEX:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    ni, nx = index.dim(), input.dim()
    if ni != nx and not (ni <= 1 and nx <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if name == 'gather' else 'self'} tensor")
    ish, xsh = _as1(index._data).shape, _as1(input._data).shape
    if name == "gather":
        for k in range(len(ish)):
            if k != d and ish[k] > xsh[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index "
                                   f"{list(index.shape)} to be no larger than self "
                                   f"{list(input.shape)} apart from dimension {d}")
    else:
        ssh = _as1(src._data).shape if isinstance(src, Tensor) else None
        for k in range(len(ish)):
            if (k != d and ish[k] > xsh[k]) or (ssh is not None and ish[k] > ssh[k]):
                raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than "
                                   f"self {list(input.shape)} apart from dimension {d}"
                                   + (f" and to be no larger size than src {list(src.shape)}"
                                      if ssh is not None else ""))
    _bounds(index._data, xsh[d] if len(xsh) else 1, d)


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """``out[i][j] = input[index[i][j]][j]`` (for dim 0): values picked along `dim`."""
    d = _wrap_dim(dim, input)
    _check_scatter_index("gather", input, d, index)
    a, idx = _as1(input._data), _as1(index._data).astype(np.int64)
    sub = a[tuple(slice(0, idx.shape[k]) if k != d else slice(None) for k in range(a.ndim))]
    r = np.take_along_axis(sub, idx, axis=d).reshape(index._data.shape)
    res = finish(_GATHER, (input,), r, input.dtype,
                 {"shape": input._data.shape, "dim": d, "index": index})
    return _out(res, out)


def _scatter_src_grad(g, dim, index, src_shape):
    return _pad_to(gather(g, dim, index), src_shape)


def _scatter_self_grad(g, dim, index, reduce):
    if reduce is not None:
        raise RuntimeError("the derivative for 'scatter' with reduce is not implemented")
    return scatter(g, dim, index, 0)


def _src_grad_or_fail(g, dim, index, src_shape, reduce):
    if reduce is not None:
        raise RuntimeError("the derivative for 'scatter' with reduce is not implemented")
    return _scatter_src_grad(g, dim, index, src_shape)


_SCATTER = OpDef("scatter", EXTERN, inputs=("self", "src"),
                 attrs={"dim": 0, "index": None, "src_shape": (), "reduce": None},
                 grads={"self": _scatter_self_grad, "src": _src_grad_or_fail})
_SCATTER_ADD = OpDef("scatter_add", EXTERN, inputs=("self", "src"),
                     attrs={"dim": 0, "index": None, "src_shape": ()},
                     grads={"self": lambda g: g, "src": _scatter_src_grad})


def _scatter_prep(name, input, dim, index, src):
    d = _wrap_dim(dim, input)
    _check_scatter_index(name, input, d, index, src)
    if isinstance(src, Tensor):
        if src.dtype is not input.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
        s = _as1(src._data)
        v = s[tuple(slice(0, n) for n in _as1(index._data).shape)]
    else:
        v = np.asarray(src).astype(input.dtype.np)
    pos = _grid(wrap(_as1(index._data), index.dtype), d)
    return d, _as1(input._data).copy(), pos, v


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """`input` with `src` (a tensor, or a number `value`) written at the `index` positions along
    `dim`; reduce='add'|'multiply' combines instead of overwriting."""
    if src is None:
        src = value
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    d, r, pos, v = _scatter_prep("scatter", input, dim, index, src)
    if reduce == "add":
        np.add.at(r, pos, np.broadcast_to(v, pos[d].shape))
    elif reduce == "multiply":
        np.multiply.at(r, pos, np.broadcast_to(v, pos[d].shape))
    else:
        r[pos] = v
    src_shape = src._data.shape if isinstance(src, Tensor) else ()
    return finish(_SCATTER, (input, src), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index, "src_shape": src_shape, "reduce": reduce})


def scatter_add(input, dim, index, src):
    """`input` with `src` added at the `index` positions along `dim` (duplicates add up)."""
    d, r, pos, v = _scatter_prep("scatter_add", input, dim, index, src)
    np.add.at(r, pos, v)
    return finish(_SCATTER_ADD, (input, src), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index, "src_shape": src._data.shape})


# ---- scatter_reduce ----------------------------------------------------------------------------
def _scattered_mask(shape, dim, index, dt):
    """1.0 where some index element lands, else 0.0 (as a tensor of `shape`)."""
    m = np.zeros(_as1(np.zeros(shape)).shape, dt.np)
    m[_grid(wrap(_as1(index._data), index.dtype), dim)] = 1
    return wrap(m.reshape(shape), dt)


def _sr_self_grad(g, self, src, result, dim, index, reduce, include_self):
    hit = _scattered_mask(self.shape, dim, index, g.dtype)
    if reduce in ("sum", "mean"):
        gs = g if include_self else g * (1 - hit)
        return gs / _sr_count(self, dim, index, include_self) if reduce == "mean" else gs
    if reduce == "prod":
        gs = g * result / self
        return gs if include_self else gs * (1 - hit)
    ties = _sr_ties(self, src, result, dim, index, include_self)
    own = (self == result) * (1 - hit if not include_self else 1)
    return g * own / ties


def _sr_src_grad(g, self, src, result, dim, index, reduce, include_self):
    if reduce == "sum":
        return _scatter_src_grad(g, dim, index, src.shape)
    if reduce == "mean":
        return _scatter_src_grad(g / _sr_count(self, dim, index, include_self), dim, index,
                                 src.shape)
    if reduce == "prod":
        return _scatter_src_grad(g * result, dim, index, src.shape) / src
    ties = _sr_ties(self, src, result, dim, index, include_self)
    srcp = src[tuple(slice(0, n) for n in index.shape)] if src.dim() else src
    picked = gather(g / ties, dim, index) * (srcp == gather(result, dim, index))
    return _pad_to(picked, src.shape)


def _sr_count(self, dim, index, include_self):
    ones = wrap(np.ones(_as1(index._data).shape, self.dtype.np).reshape(index._data.shape),
                self.dtype)
    base = _zeros(self.shape, self.dtype) + (1 if include_self else 0)
    c = scatter_add(base, dim, index, ones)
    return c.masked_fill(c == 0, 1)


def _sr_ties(self, src, result, dim, index, include_self):
    # PyTorch counts an equal `self` among the ties even when include_self=False (its
    # gradient is then zero, so the shares do not sum to 1); we match it
    own = (self == result).to(self.dtype)
    srcp = src[tuple(slice(0, n) for n in index.shape)] if src.dim() else src
    eq = (srcp == gather(result, dim, index)).to(self.dtype)
    t = scatter_add(own, dim, index, eq)
    return t.masked_fill(t == 0, 1)


_SR_ARGS = ("self", "src", "result", "dim", "index", "reduce", "include_self")
_SCATTER_REDUCE = OpDef("scatter_reduce", EXTERN, inputs=("self", "src"),
                        attrs={"dim": 0, "index": None, "reduce": "sum", "include_self": True},
                        grads={"self": _sr_self_grad, "src": _sr_src_grad},
                        node_name="ScatterReduceBackward0")

_IDENTITY = {"sum": 0, "mean": 0, "prod": 1}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Combine `src` into `input` at the `index` positions with sum, prod, mean, amax or amin;
    with include_self=False the scattered-to elements of `input` are left out."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d, r, pos, v = _scatter_prep("scatter_reduce", input, dim, index, src)
    if not include_self:
        if reduce in _IDENTITY:
            r[pos] = _IDENTITY[reduce]
        else:
            info = np.finfo(r.dtype) if r.dtype.kind == "f" else np.iinfo(r.dtype)
            r[pos] = (-np.inf if reduce == "amax" else np.inf) if r.dtype.kind == "f" else (
                info.min if reduce == "amax" else info.max)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    ufunc.at(r, pos, v)
    if reduce == "mean":
        cnt = np.full(r.shape, 1 if include_self else 0, np.int64)
        np.add.at(cnt, pos, 1)
        cnt = np.maximum(cnt, 1)
        r = r / cnt if r.dtype.kind == "f" else np.floor_divide(r, cnt)
    return finish(_SCATTER_REDUCE, (input, src), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index, "reduce": reduce, "include_self": include_self})


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


_INDEX_PUT = OpDef("index_put", EXTERN, inputs=("self", "values"),
                   attrs={"indices": (), "accumulate": False},
                   grads={"self": _index_put_self_grad,
                          "values": lambda g, indices: g[tuple(indices)]})


def index_put(input, indices, values, accumulate=False):
    """`input` with `values` written at the positions selected by the tuple of index tensors
    (advanced indexing); accumulate=True adds instead, duplicates included."""
    indices = tuple(indices)
    idx = _np_indices(indices)
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


_MASKED_SCATTER = OpDef("masked_scatter", EXTERN, inputs=("self", "source"),
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


_MASKED_SELECT = OpDef("masked_select", EXTERN, attrs={"mask": None, "shape": ()},
                       grads={"self": lambda g, mask, shape:
                              masked_scatter(_zeros(shape, g.dtype), mask, g)})


def masked_select(input, mask, *, out=None):
    """The elements of `input` where `mask` holds (both broadcast), as a 1-D tensor."""
    if mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = S.broadcast_shapes(input._data.shape, mask._data.shape)
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


_TAKE = OpDef("take", EXTERN, attrs={"index": None, "shape": ()},
              grads={"self": lambda g, index, shape:
                     put(_zeros(shape, g.dtype), index, g, accumulate=True)})


def take(input, index):
    """Elements of the flattened `input` at `index` (negatives count from the end)."""
    idx = _flat_index("take", input, index)
    r = input._data.reshape(-1)[idx]
    return finish(_TAKE, (input,), r, input.dtype, {"index": index, "shape": input._data.shape})


def _put_self_grad(g, index, accumulate):
    return g if accumulate else put(g, index, _zeros(index.shape, g.dtype))


_PUT = OpDef("put", EXTERN, inputs=("self", "source"),
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
for _f in (index_select, gather, index_add, index_copy, index_fill, scatter, scatter_add,
           scatter_reduce, index_put, masked_scatter, masked_select, take, take_along_dim,
           nonzero, argwhere):
    register(OpDef(_f.__name__, EXTERN), _f)
register(OpDef("put", EXTERN), put)


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _f in (index_add, index_copy, index_fill, scatter, scatter_add, scatter_reduce, index_put,
           masked_scatter, put):
    METHODS[_f.__name__ + "_"] = _inplace(_f)
