"""Ordering ops: sort, argsort, msort, topk, unique, unique_consecutive, searchsorted,
bucketize, histc, bincount.

Sorting is always stable here (PyTorch only promises it with ``stable=True``), NaN sorts as
the largest value, and a descending sort keeps equal elements in their original order. The
gradients of sort and topk go back through their indices (reduce_common.put_along).
"""
import builtins

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..dispatch_args import int_arg
from ..autograd.grad_mode import state
from ..autograd import graph
from .. import return_types as RT
from . import meta_rules as M
from .registry import OpDef, REDUCTION, OPS, register, register_each
from ..autograd.derivative import Derivative
from .reduce_common import (LOWP, selecting_op, select_values, index_tensor, write_out,
                            picked_jvp, refuse_complex)


def _argsort(a, dt, d, descending):
    """Stable argsort along d; descending keeps equal elements in their original order."""
    refuse_complex("sort", dt)
    if dt in LOWP:
        a = a.astype(np.float32)
    if not descending:
        return np.argsort(a, axis=d, kind="stable")
    # sort the reversed array ascending (stable), then reverse: ties stay in input order
    rev = np.argsort(np.flip(a, d), axis=d, kind="stable")
    return a.shape[d] - 1 - np.flip(rev, d)


_SORT = selecting_op("sort", "SortBackward0")
_SORT_STABLE = selecting_op("sort_stable", "SortBackward1", "sort")
_TOPK = selecting_op("topk", "TopkBackward0")


def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    """(values, indices) sorted along `dim` (ascending unless `descending`)."""
    if input.dtype.is_complex:
        raise RuntimeError("Sort does not support complex dtypes on CPU")
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    idx = np.zeros((), np.int64) if a.ndim == 0 else _argsort(a, input.dtype, d, descending)
    values = select_values(_SORT_STABLE if stable else _SORT, input, idx, d, True)
    return write_out(out, RT.sort(values, index_tensor(idx, d, True, a.ndim)))


def argsort(input, dim=-1, descending=False, *, stable=False):
    """Indices that sort `input` along `dim`."""
    return sort(input, dim, descending, stable=stable).indices


def msort(input, *, out=None):
    """`input` sorted along its first dim."""
    return write_out(out, sort(input, 0).values)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """(values, indices) of the k largest (or smallest) elements along `dim`, in order."""
    k = int_arg(k, "topk", "k", 2)
    if input.dtype.is_complex:
        raise RuntimeError("topk does not support complex dtypes on CPU")
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if input.dtype is D.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if a.ndim == 0:
        idx = M.zero_index(a)
    else:
        idx = np.take(_argsort(a, input.dtype, d, largest), np.arange(k), axis=d)
    values = select_values(_TOPK, input, idx, d, True)
    return write_out(out, RT.topk(values, index_tensor(idx, d, True, a.ndim)))


# ---- unique ----
def _no_derivative(name):
    def formula(g):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
    return formula


_UNIQUE = Derivative("_unique2", of="unique", grads={"self": _no_derivative("_unique2")},
                     node_name="Unique2Backward0")
_UNIQUE_DIM = Derivative("unique_dim", of="unique", grads={"self": _no_derivative("unique_dim")},
                         node_name="UniqueDimBackward0")
_UNIQUE_CONSEC = Derivative("unique_consecutive",
                            grads={"self": _no_derivative("unique_consecutive")},
                            node_name="UniqueConsecutiveBackward0")


def _unique_result(op, input, values, inverse, counts, return_inverse, return_counts):
    out = wrap(values, input.dtype)
    if state.enabled and input._requires_grad:
        graph.record(op, (input,), out, {})
    extra = []
    if return_inverse:
        extra.append(wrap(np.array(inverse, np.int64, order="C"), D.int64))
    if return_counts:
        extra.append(wrap(np.array(counts, np.int64, order="C"), D.int64))
    return (out, *extra) if extra else out


def _unique_dim_check(a, dim):
    if a.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = S.wrap_dim(dim, a.ndim)
    if builtins.sum(s == 0 for s in a.shape) > 1:
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot "
                           "be applied ")
    if a.shape[d] != 0 and a.size == 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return d


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along `dim`), sorted; optionally each element's index
    into them (`return_inverse`) and how often each occurs (`return_counts`)."""
    a = input._data
    if dim is None:
        x = _sortable(a, input.dtype).reshape(-1)
        vals, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, equal_nan=False)
        return _unique_result(_UNIQUE, input, vals.astype(a.dtype), inv.reshape(a.shape), cnt,
                              return_inverse, return_counts)
    d = _unique_dim_check(a, dim)
    if a.shape[d] == 0:
        empty = np.zeros(0, np.int64)
        return _unique_result(_UNIQUE_DIM, input, a.copy(), empty, empty, return_inverse,
                              return_counts)
    x = np.moveaxis(_sortable(a, input.dtype), d, 0)
    rows = np.ascontiguousarray(x.reshape(x.shape[0], -1))
    _, first, inv, cnt = np.unique(rows, axis=0, return_index=True, return_inverse=True,
                                   return_counts=True)
    vals = np.take(a, first, axis=d)
    return _unique_result(_UNIQUE_DIM, input, vals, inv.reshape(-1), cnt, return_inverse,
                          return_counts)


def _sortable(a, dt):
    refuse_complex("unique", dt)
    return a.astype(np.float32) if dt in LOWP else a


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along `dim`) into one."""
    a = input._data
    if dim is None:
        rows, d = a.reshape(-1, 1), 0
        flat = True
    else:
        d = _unique_dim_check(a, dim)
        rest = int(np.prod(a.shape, dtype=np.int64)) // a.shape[d] if a.shape[d] else 0
        rows = np.moveaxis(a, d, 0).reshape(a.shape[d], rest)
        flat = False
    n = rows.shape[0]
    start = np.ones(n, bool)
    if n:
        start[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    first = np.flatnonzero(start)
    inv = np.cumsum(start) - 1
    cnt = np.diff(np.append(first, n))
    if flat:
        vals, inv = a.reshape(-1)[first], inv.reshape(a.shape)
    else:
        vals = np.take(a, first, axis=d)
    return _unique_result(_UNIQUE_CONSEC, input, vals, inv, cnt, return_inverse, return_counts)


# ---- searchsorted / bucketize ----
def _batched_search(seq, vals, right):
    """Per row b: how many of seq[b] are < vals[b, j] (<= when `right`); rows sorted."""
    B, n = seq.shape
    m = vals.shape[1]
    if B * n == 0 or m == 0:
        return np.zeros((B, m), np.int64)
    dt = np.result_type(seq, vals)
    keys = np.concatenate([seq.astype(dt), vals.astype(dt)], axis=1).ravel()
    is_query = np.zeros((B, n + m), bool)
    is_query[:, n:] = True
    is_query = is_query.ravel()
    row = np.repeat(np.arange(B), n + m)
    # one stable sort of everything by (row, value, tie): on equal values a query goes
    # before the boundaries (left) or after them (right)
    tie = is_query if right else ~is_query
    order = np.lexsort((tie, keys, row))
    is_seq = ~is_query[order]
    before = np.cumsum(is_seq) - is_seq - row[order] * n
    out = np.empty(B * (n + m), np.int64)
    out[order] = before
    return out.reshape(B, n + m)[:, n:]


def _common_dtype(seq, v):
    """The dtype torch promotes the boundaries and the values to (a Python number counts as a
    wrapped scalar)."""
    ops = [(seq.dtype, 0 if seq._data.ndim else 1)]
    if isinstance(v, Tensor):
        ops.append((v.dtype, 0 if v._data.ndim else 1))
    else:
        kind = (D.bool_ if isinstance(v, (bool, np.bool_)) else
                D.int64 if isinstance(v, (int, np.integer)) else
                D.complex64 if isinstance(v, (complex, np.complexfloating)) else D.float32)
        ops.append((kind, 2))
    return D.result_type_of(ops)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices where `input` would be inserted into `sorted_sequence` (its last dim) to keep
    it sorted: the first such place, or the last with ``right=True`` / ``side='right'``."""
    seq = sorted_sequence._data
    name = "torch.searchsorted()"
    if seq.ndim == 0:
        raise RuntimeError(f"{name}: boundaries tensor should have positive dimension, but got "
                           "0 dimension")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{name}: side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{name}: side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    if scalar and (isinstance(input, (str, bytes)) or not np.isscalar(input)):
        raise TypeError(f"searchsorted() received an invalid combination of arguments - got "
                        f"(Tensor, {type(input).__name__}), but expected one of: * (Tensor "
                        "sorted_sequence, Tensor input) * (Tensor sorted_sequence, Number self)")
    v = np.asarray(input) if scalar else input._data
    common = _common_dtype(sorted_sequence, input)    # (torch compares in the promoted dtype)
    if common is D.bool_ or common.is_complex:
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for "
                                  f"'{torch_name(common)}'")
    if v.ndim == 0 and seq.ndim != 1:
        raise RuntimeError(f"{name}: input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.ndim}) and "
                           f"input value's dim({v.ndim}) numel(1)")
    if seq.ndim > 1 and (v.ndim != seq.ndim or v.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"{name}: boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, "
                           f"but we got boundaries tensor {list(seq.shape)} and input value "
                           f"tensor {list(v.shape)}")
    if sorter is not None:
        s = sorter._data
        if s.shape != seq.shape:
            raise RuntimeError(f"{name}: boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)}and got sorter tensor "
                               f"{list(s.shape)}")
        if s.size and (s.min() < 0 or s.max() >= seq.shape[-1]):
            raise RuntimeError(f"{name}: sorter index out of range")
        seq = np.take_along_axis(seq, s, -1)
    if seq.dtype == np.bool_ or sorted_sequence.dtype in LOWP:
        seq = seq.astype(np.float32)
    if not scalar and input.dtype in LOWP:
        v = v.astype(np.float32)
    if seq.ndim == 1:
        r = np.searchsorted(seq, v, side="right" if right else "left")
    else:
        rows = int(np.prod(seq.shape[:-1]))
        r = _batched_search(seq.reshape(rows, seq.shape[-1]), v.reshape(rows, v.shape[-1]),
                            right).reshape(v.shape)
    dt = D.int32 if out_int32 else D.int64
    return write_out(out, wrap(np.asarray(r, dt.np), dt))


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """Index of the bucket of each element: boundaries[i-1] < x <= boundaries[i]
    (``right=True``: boundaries[i-1] <= x < boundaries[i])."""
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"bucketize() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(boundaries).__name__}), but expected "
                        "one of: * (Tensor input, Tensor boundaries) * (Number self, Tensor "
                        "boundaries)")
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# ---- histograms ----
def histc(input, bins=100, min=0, max=0, *, out=None):
    """Histogram of `input` in `bins` equal-width bins over [min, max] (the data's range when
    both are equal); elements outside are ignored."""
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    a = input._data.reshape(-1)
    x = a.astype(np.float32) if input.dtype is D.bfloat16 else a
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    # PyTorch's order of checks: the range is converted to the input's type, then the kernel
    # (float only) is looked up, then the range must be finite
    if input.dtype in (D.uint8, D.int8, D.int16, D.int32, D.int64):
        info = np.iinfo(input.dtype.np)
        if not (info.min <= lo <= info.max and info.min <= hi <= info.max):
            raise RuntimeError(f"value cannot be converted to type "
                               f"{D.CPP_TYPES[input.dtype.name]} without overflow")
    if not input.dtype.is_floating_point:
        kernel = "linspace_cpu" if input.dtype is D.bool_ else "histogram_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{torch_name(input.dtype)}'")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_num(lo)}, {_num(hi)}] is not finite")
    lo_t, hi_t = x.dtype.type(lo), x.dtype.type(hi)
    x = x[(x >= lo_t) & (x <= hi_t)]
    # the bin, computed in the input's precision as PyTorch does; max itself goes in the last
    with np.errstate(all="ignore"):
        pos = ((x - lo_t) * x.dtype.type(bins) / (hi_t - lo_t)).astype(np.int64)
    pos = np.clip(pos, 0, bins - 1)
    counts = np.bincount(pos, minlength=bins)[:bins]
    return write_out(out, wrap(counts.astype(input.dtype.np), input.dtype))


def _num(v):
    return "-nan" if np.isnan(v) else f"{v:g}"


def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs in the 1-D `input` (or the sum of its
    `weights`); the result has max(input) + 1 entries, at least `minlength`."""
    if input.dtype.is_floating_point or input.dtype is D.bool_:
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{torch_name(input.dtype)}'")
    a = input._data
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if a.ndim != 1 or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None or a.size == 0:     # (an empty input ignores the weights)
        return wrap(np.bincount(a, minlength=minlength).astype(np.int64), D.int64)
    w = weights._data
    if w.ndim != 1 or w.shape[0] != a.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = D.float32 if weights.dtype is D.float32 else D.float64
    r = np.bincount(a, weights=w.astype(np.float64), minlength=minlength)
    return wrap(r.astype(dt.np), dt)


# forward mode: the values' tangent is the input's tangent picked at the indices
sort = register(OpDef("sort", REDUCTION, jvp=picked_jvp(0, -1),
                      onnx=_ox.sort), sort)
topk = register(OpDef("topk", REDUCTION, jvp=picked_jvp(1, -1),
                      onnx=_ox.topk), topk)
register_each(globals(), REDUCTION, (argsort, msort, unique, unique_consecutive, histc, bincount))
OPS["argsort"].onnx = _ox.argsort
register_each(globals(), REDUCTION, (searchsorted, bucketize), method=False)
# meta rules (ember/ops/meta_rules.py); unique, unique_consecutive and bincount have none:
# their result's shape depends on the values
for _n in ("sort", "topk", "argsort", "msort", "histc", "searchsorted", "bucketize"):
    OPS[_n].meta = getattr(M, _n)
