"""Gathering and scattering along a dim by index tensors: index_select, gather, scatter (and
its add and reduce forms), index_add/copy/fill. Positional forms (index_put, masked_scatter/
select, take/put, nonzero) are in ops/scatter_flat.py.

Every kernel is one vectorised NumPy call (fancy indexing, np.take_along_axis, or ufunc.at
for accumulation, which adds duplicates in index order, so results are deterministic).
Indices are bounds-checked first and never wrap silently. Each derivative is the adjoint op:
gather <-> scatter_add, index_select <-> index_add, take <-> put(accumulate=True), ...
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name, checked_scalar
from ..autograd.grad_mode import state
from ..autograd import graph
from . import meta_rules as M
from .registry import OpDef, EXTERN, LINEAR, register, register_each, METHODS
from ..autograd.derivative import Derivative
from . import batch_rules as _br
from .registry import OPS
from .matmul import finish, _out

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


def _zeros(shape, dt, device=None):
    from . import creation       # the registered op, so a compiler trace records it
    return creation.zeros(shape, dtype=dt, device=device)


def _pad_to(t, shape):
    """`t` extended with zeros to `shape` (for sources larger than their index)."""
    from .joining import cat
    for k, (have, want) in enumerate(zip(t.shape, shape)):
        if have != want:
            zshape = list(t.shape)
            zshape[k] = want - have
            t = cat([t, _zeros(zshape, t.dtype, t.device)], k)
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


_INDEX_SELECT = Derivative("index_select", attrs={"shape": (), "dim": 0, "index": None},
                           grads={"self": lambda g, shape, dim, index:
                                  index_add(_zeros(shape, g.dtype, g.device), dim, index, g)})


def _index_select_meta(input, dim, index, *, out=None):
    """index_select on meta: the slices' metadata (the index's values are not checked)."""
    if index.dim() > 1:
        _index_vector("index_select", index)
    d = _wrap_dim(dim, input)
    shape = list(input._data.shape)
    if shape:
        shape[d] = index.numel()
    r = M.result(shape, input.dtype)
    if state.enabled and input._requires_grad:
        graph.record(_INDEX_SELECT, (input,), r,
                     {"shape": input._data.shape, "dim": d, "index": index})
    return r if out is None else M.write_out(out, r)


def _gather_layout(index, d):
    """The strides of the cpu gather's result: np.take_along_axis orders its result's dims
    like the index's (its int64 copy, order "K"), read off tiny stand-ins."""
    shape = tuple(index._data.shape)
    if len(shape) < 2 or not index._data.size:
        return None
    idx = M._proxy(shape, index.stride()).astype(np.int64)
    src = np.zeros(idx.shape[:d] + (1,) + idx.shape[d + 1:], np.int8)
    return M._strides_from(np.take_along_axis(src, idx, axis=d), shape)


def _gather_meta(input, dim, index, *, sparse_grad=False, out=None):
    d = _wrap_dim(dim, input)
    if index.dim() != input.dim() and not (index.dim() <= 1 and input.dim() <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    r = M.result(index._data.shape, input.dtype, _gather_layout(index, d))
    if state.enabled and input._requires_grad:
        graph.record(_GATHER, (input,), r,
                     {"shape": input._data.shape, "dim": d, "index": index})
    return r if out is None else M.write_out(out, r)


def index_select(input, dim, index, *, out=None):
    """The slices of `input` along `dim` at the positions in the 1-D `index`."""
    idx = _index_vector("index_select", index)
    d = _wrap_dim(dim, input)
    a = _as1(input._data)
    if input.dim() == 0 and idx.size != 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    if idx.size and not a.size:    # (torch's kernel for an empty self checks its own way)
        if a.shape[d] == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        bad = (idx < 0) | (idx >= a.shape[d])
        if bad.any():
            raise RuntimeError(f"INDICES element is out of DATA bounds, id="
                               f"{idx[np.argmax(bad)]} axis_dim={a.shape[d]}")
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


_INDEX_ADD = Derivative("index_add", inputs=("self", "source"),
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
    if a.size:                   # (torch checks no index of an empty self)
        _bounds(idx, a.shape[d], d)
    r = a.copy()
    src = _as1(source._data)
    if alpha != 1:
        src = src * alpha
    if a.size:
        _add_at(np.moveaxis(r, d, 0), idx, np.moveaxis(src.astype(r.dtype, copy=False), d, 0))
    res = finish(_INDEX_ADD, (input, source), r.reshape(input._data.shape), input.dtype,
                 {"dim": d, "index": index, "alpha": alpha})
    return _out(res, out)


# ---- index_copy / index_fill ------------------------------------------------------------------
_INDEX_COPY = Derivative("index_copy", inputs=("self", "source"),
                         attrs={"dim": 0, "index": None},
                         grads={"self": lambda g, dim, index: index_fill(g, dim, index, 0),
                                "source": lambda g, dim, index: index_select(g, dim, index)})


def index_copy(input, dim, index, source):
    """`input` with the slices at `index` along `dim` replaced by `source`'s slices."""
    d = _wrap_dim(dim, input)
    # torch's checks, in its order: the index's and source's dims (IndexError), the dtypes,
    # the slice shapes, the number of indices (IndexError)
    if index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.dim()})")
    n = index.numel()
    if source.dim() == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {n})")
    if source.dim() != input.dim() and source.dim() and input.dim():
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.dim()}), "
                         f"destination dimensionality ({input.dim()})")
    if index.dtype is not D.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{torch_name(index.dtype)}")
    if input.dtype is not source.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {torch_name(input.dtype)} and (source) "
                           f"{torch_name(source.dtype)}")
    si, ss = list(input.shape), list(source.shape)
    si, ss = si[:d] + si[d + 1:], ss[:d] + ss[d + 1:]   # (an empty list stays empty)
    if si != ss:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, si))} at "
                           f"dimension {d} and source slice shape: {' '.join(map(str, ss))} "
                           f"at dimension 0.")
    if source.dim() and n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")
    idx = _index_vector("index_copy", index)
    a = _as1(input._data)
    _bounds(idx, a.shape[d], d, IndexError, "index_copy_(): ")
    r = a.copy()
    np.moveaxis(r, d, 0)[idx] = np.moveaxis(_as1(source._data), d, 0)
    return finish(_INDEX_COPY, (input, source), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index})


_INDEX_FILL = Derivative("index_fill", inputs=("self", "value"),
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
    # (a Python number as c10 converts it: overflow refused, negatives wrap into unsigned)
    v = value._data if isinstance(value, Tensor) else np.asarray(
        checked_scalar(value, input.dtype)).astype(a.dtype)
    np.moveaxis(r, d, 0)[idx] = v
    return finish(_INDEX_FILL, (input, value), r.reshape(input._data.shape), input.dtype,
                  {"dim": d, "index": index})


# ---- gather / scatter ------------------------------------------------------------------------
def _gather_grad(g, shape, dim, index):
    return scatter_add(_zeros(shape, g.dtype, g.device), dim, index, g)


_GATHER = Derivative("gather", attrs={"shape": (), "dim": 0, "index": None},
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


_SCATTER = Derivative("scatter", inputs=("self", "src"),
                      attrs={"dim": 0, "index": None, "src_shape": (), "reduce": None},
                      grads={"self": _scatter_self_grad, "src": _src_grad_or_fail})
_SCATTER_ADD = Derivative("scatter_add", inputs=("self", "src"),
                          attrs={"dim": 0, "index": None, "src_shape": ()},
                          grads={"self": lambda g: g, "src": _scatter_src_grad})


def _scatter_prep(name, input, dim, index, src):
    d = _wrap_dim(dim, input)
    _check_scatter_index(name, input, d, index, src)
    if isinstance(src, Tensor):
        if src.dtype is not input.dtype:
            # (torch names scatter() for every scatter variant here)
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
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
    if not isinstance(src, (Tensor, int, float, bool, complex, np.generic)):  # the parser
        raise TypeError(f"scatter() received an invalid combination of arguments - got "
                        f"(Tensor, int, Tensor, {type(src).__name__}), but expected one of: "
                        f"* (Tensor input, int dim, Tensor index, Tensor src) "
                        f"* (Tensor input, int dim, Tensor index, Number value)")
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
    base = _zeros(self.shape, self.dtype, self.device) + (1 if include_self else 0)
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
_SCATTER_REDUCE = Derivative("scatter_reduce", inputs=("self", "src"),
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


# ---- registration: functions, methods, in-place forms (copy_ into self) ----------------------
register_each(globals(), EXTERN, (index_select, gather, index_add, index_copy, scatter_add),
              jvp=LINEAR)     # linear in self and source together
register_each(globals(), EXTERN, (index_fill, scatter, scatter_reduce))
OPS["index_select"].onnx, OPS["gather"].onnx = _ox.index_select, _ox.gather


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _f in (index_add, index_copy, index_fill, scatter, scatter_add, scatter_reduce):
    METHODS[_f.__name__ + "_"] = _inplace(_f)

# meta rules (ember/ops/meta_rules.py)
OPS["index_select"].meta = _index_select_meta
OPS["gather"].meta = _gather_meta
for _n in ("index_add", "index_copy", "index_fill", "scatter", "scatter_add", "scatter_reduce"):
    OPS[_n].meta = M.same_as_input     # the result has self's metadata
# vmap batching rules (ember/ops/batch_rules.py)
OPS["index_select"].batch = _br.index_select_batch
OPS["gather"].batch = _br.gather_batch
