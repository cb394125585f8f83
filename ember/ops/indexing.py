"""`tensor[index]` and `tensor[index] = value` with PyTorch's rules.

Basic indices (ints, slices with positive steps, None, Ellipsis) give views. Integer tensors,
lists and boolean masks (advanced indexing) give copies, following the same rules as NumPy's
advanced indexing (broadcast index arrays; separated advanced indices move to the front).
Out-of-range indices raise IndexError, never wrap.
"""
import warnings

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core.tensor import Tensor, make_view
from ..dispatch import wrap
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, VIEW, METHODS, register
from ..autograd.derivative import Derivative
from . import batch_rules as _br
from .view import apply_view, view_op, _view_scatter, strided_view, repoint
from .view import _SELECT, _SLICE, _UNSQUEEZE, _ALIAS
from .view_common import ints_first as _ints_first
from ..core.meta import MetaArray
from . import meta_rules as M

_INDEX = Derivative("index", of="__getitem__", attrs={"shape": None, "view_fn": None},
                    grads={"self": lambda g, shape, view_fn: _view_scatter(g, shape, view_fn)},
                    node_name="IndexBackward0")


def _convert(index):
    """Normalise one index to what NumPy takes; report whether it is advanced."""
    if isinstance(index, Tensor):
        arr = index._data
        if index.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if arr.dtype == np.uint8:   # torch reads a byte tensor as a mask (deprecated)
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                          "dtype torch.bool instead.", UserWarning, stacklevel=4)
            arr = arr.astype(np.bool_)
        return arr, True
    if isinstance(index, (list, np.ndarray)):
        arr = np.asarray(index)
        if arr.dtype == object:
            arr = np.asarray([np.asarray(x._data if isinstance(x, Tensor) else x)
                              for x in index])
        if arr.dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if arr.size == 0 and arr.dtype.kind not in "iub":
            arr = arr.astype(np.int64)
        return arr, True
    if isinstance(index, slice):
        vals = [v.__index__() if v is not None and hasattr(v, "__index__") else v
                for v in (index.start, index.stop, index.step)]
        if vals[2] is not None and vals[2] <= 0:
            raise ValueError("step must be greater than zero")
        return slice(*vals), False
    if index is None or index is Ellipsis:
        return index, False
    if isinstance(index, bool):
        return np.asarray(index), True
    if hasattr(index, "__index__"):
        return index.__index__(), False
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     "Variables are valid indices (got " + type(index).__name__ + ")")


def _normalise(self, index):
    if not isinstance(index, tuple):
        index = (index,)
    out, advanced = [], False
    for i in index:
        v, adv = _convert(i)
        advanced |= adv
        out.append(v)
    if not any(v is Ellipsis for v in out):
        out.append(Ellipsis)   # so an int index gives a 0-d view, not a NumPy scalar
    n_dims = sum(1 for v in out if v is not None and v is not Ellipsis and
                 not (isinstance(v, np.ndarray) and v.dtype == np.bool_))
    n_dims += sum(v.ndim for v in out if isinstance(v, np.ndarray) and v.dtype == np.bool_)
    if n_dims > self._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim}")
    return tuple(out), advanced


def _check_bounds(arr, idx):
    try:
        arr[idx]
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None


def _basic_node(shape, idx):
    """The view op PyTorch would name for a basic index: its last non-trivial component
    (``x[0]`` -> SelectBackward0, ``x[1:]`` -> SliceBackward0, ``x[None]`` ->
    UnsqueezeBackward0, ``x[:, :]`` -> AliasBackward0; a bare slice, even ``x[:]``, is always
    SliceBackward0); the gradient rule is the same for all."""
    op, d = _ALIAS, 0
    n_used = sum(1 for v in idx if v is not None and v is not Ellipsis)
    for v in idx:
        if v is None:
            op = _UNSQUEEZE
        elif v is Ellipsis:
            d += len(shape) - n_used
        elif isinstance(v, slice):
            if v.indices(shape[d]) != (0, shape[d], 1):
                op = _SLICE
            d += 1
        else:
            op, d = _SELECT, d + 1
    return op


def _torch_geometry(a, idx):
    """Element strides and byte offset PyTorch gives `a[idx]` (basic idx). NumPy agrees except
    that it gives new (None) dims stride 0, and leaves an empty slice's stride and offset."""
    st = [s // a.itemsize for s in a.strides]
    n_ell = a.ndim - sum(1 for i in idx if i is not None and i is not Ellipsis)
    out, d, off = [], 0, 0
    for i in idx:
        if i is None:  # like unsqueeze before dim d of the (not yet indexed) tensor
            out.append(a.shape[d] * st[d] if d < a.ndim else 1)
        elif i is Ellipsis:
            out.extend(st[d:d + n_ell])
            d += n_ell
        elif isinstance(i, slice):
            off += i.indices(a.shape[d])[0] * st[d]
            out.append(st[d] * (i.step or 1))
            d += 1
        else:
            off += (i + a.shape[d] if i < 0 else i) * st[d]
            d += 1
    return out, off * a.itemsize


_PLAIN = (int, type(None))


def _basic_view(a, idx):
    r = a[idx]
    if r.size and None not in idx:  # the common case: NumPy's view is already PyTorch's
        return r
    st, off = _torch_geometry(a, idx)
    if [s // a.itemsize for s in r.strides] != st:
        r = strided_view(r, r.shape, st)
    return repoint(r, a, off)


def _meta_advanced(a, idx):
    """The metadata of `a[idx]` for a meta `a` and a normalised advanced `idx` (no ints:
    `_ints_first` applied them), by NumPy's rules: index arrays broadcast; their dims go
    where the first one stands when they are adjacent, else to the front. A bool mask
    needs its values (the count of True): a meta one is torch's NotImplementedError (its
    meta nonzero), a cpu one counts. The strides are those of NumPy's copy of the same
    index on a tiny stand-in of `a` (at most 2 per dim, `a`'s dim order)."""
    n_used = sum(1 if not isinstance(v, np.ndarray) or v.dtype != np.bool_ else v.ndim
                 for v in idx if v is not None and v is not Ellipsis)
    shape, small_idx, adv_shapes = [], [], []
    first = sep = None      # result position of the advanced dims; whether they are split
    d, last_adv = 0, None
    for k, v in enumerate(idx):
        if isinstance(v, np.ndarray):
            if v.dtype == np.bool_:
                if type(v) is MetaArray:
                    if v.ndim == 0:
                        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
                    raise NotImplementedError(
                        "aten::nonzero: a boolean mask index on meta tensors: the result's "
                        "shape depends on the mask's values (torch's meta refuses it too)")
                for j in range(v.ndim):
                    if v.shape[j] != a.shape[d + j]:
                        raise IndexError(f"The shape of the mask {list(v.shape)} at index "
                                         f"{j} does not match the shape of the indexed tensor "
                                         f"{list(a.shape)} at index {d + j}")
                count = int(np.count_nonzero(v))
                parts, d = (count,), d + v.ndim
                small_idx.extend([np.zeros(min(count, 2), np.intp)] * v.ndim if v.ndim
                                 else [v])
            else:
                if type(v) is not MetaArray and v.size:       # a cpu index: its bounds
                    n = a.shape[d]
                    lo, hi = int(v.min()), int(v.max())
                    if hi >= n or lo < -n:
                        bad = hi if hi >= n else lo
                        raise IndexError(f"index {bad} is out of bounds for dimension {d} "
                                         f"with size {n}")
                parts, d = v.shape, d + 1
                small_idx.append(np.zeros(tuple(min(s, 2) for s in v.shape), np.intp))
            adv_shapes.append(tuple(parts))
            if first is None:
                first = len(shape)
            elif last_adv != k - 1:
                sep = True
            last_adv = k
            continue
        if v is None:
            shape.append(1)
            small_idx.append(None)
        elif v is Ellipsis:
            n_ell = a.ndim - n_used
            shape.extend(a.shape[d:d + n_ell])
            small_idx.append(Ellipsis)
            d += n_ell
        else:                       # a slice
            shape.append(len(range(*v.indices(a.shape[d]))))
            small_idx.append(slice(None))
            d += 1
    try:
        bshape = np.broadcast_shapes(*adv_shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         "with shapes " + " ".join(str(list(s)) for s in adv_shapes)) from None
    at = 0 if sep else first
    shape[at:at] = bshape
    proxy = M._proxy(a.shape, [s // a.itemsize for s in a.strides])
    small = np.array(proxy[tuple(small_idx)], copy=True)
    return M.meta_array(shape, a.dtype, M._strides_from(small, tuple(shape)))


def getitem(self, index):
    split = _ints_first(index)
    if split is not None:
        return getitem(getitem(self, split[0]), split[1])
    if type(index) is slice and index.step is None and self._data.ndim and \
            type(index.start) in _PLAIN and type(index.stop) in _PLAIN:
        # fast path for x[a:b]: NumPy's view is PyTorch's whenever it is not empty
        r = self._data[index]
        if r.size:
            out = make_view(self, r)
            if self._requires_grad and state.enabled:
                graph.record(_SLICE, (self,), out, {"shape": self._data.shape,
                                                    "view_fn": lambda a: a[index]})
            return out
    idx, advanced = _normalise(self, index)
    if not advanced:
        try:
            op = _SLICE if isinstance(index, slice) else _basic_node(self._data.shape, idx)
            return apply_view(op, self,
                              lambda a: _basic_view(a, idx))
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None
    if type(self._data) is MetaArray:
        out = wrap(_meta_advanced(self._data, idx), self.dtype)
    else:
        try:
            r = self._data[idx]
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None
        out = wrap(np.array(r, copy=True), self.dtype)
    if state.enabled and self._requires_grad:
        graph.record(_INDEX, (self,), out, {"shape": self._data.shape,
                                            "view_fn": lambda a: a[idx]})
    return out


_INDEX_PUT = Derivative("index_put_", inputs=("self", "values"),
                        attrs={"view_fn": None},
                        grads={"self": lambda g, view_fn: _zero_at(g, view_fn),
                               "values": lambda g, view_fn: _gather_adv(g, view_fn)},
                        node_name="IndexPutBackward0")


def _zero_at(g, view_fn):
    arr = np.array(g._data, copy=True)
    arr[view_fn.idx] = 0
    mask = np.ones(g._data.shape, g.dtype.np)
    mask[view_fn.idx] = 0
    return g * wrap(mask, g.dtype)


def _gather_adv(g, view_fn):
    return getitem(g, view_fn.raw)


class _IndexFn:
    """The index of an advanced setitem, kept for its derivative."""

    def __init__(self, idx, raw):
        self.idx, self.raw = idx, raw

    def __call__(self, a):
        return a[self.idx]


def _strip_leading_ones(value, ndim):
    """torch drops a value's leading size-1 dims beyond the target's rank before it
    broadcasts (``x[0] = ember.tensor([5.0])`` writes one element)."""
    while value._data.ndim > ndim and value._data.shape[0] == 1:
        value = value.squeeze(0)
    return value


def setitem(self, index, value):
    if isinstance(index, Tensor) and index.dtype is D.uint8 and not isinstance(value, Tensor):
        # torch fills through masked_fill_ here, which takes bool masks only
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    split = _ints_first(index)
    if split is not None:   # x[0, :, idx] = v writes into the view x[0] (torch's order)
        return setitem(getitem(self, split[0]), split[1], value)
    idx, advanced = _normalise(self, index)
    if not advanced:
        view = getitem(self, index)
        if isinstance(value, Tensor):
            view.copy_(_strip_leading_ones(value, view._data.ndim))
        else:
            view.fill_(value) if view._data.ndim == 0 or not isinstance(
                value, (list, tuple)) else view.copy_(wrap(np.asarray(value), self.dtype))
        return
    graph.check_inplace(self)
    try:
        target = self._data[idx]
        if isinstance(value, Tensor):
            value = _strip_leading_ones(value, target.ndim)
        v = value._data if isinstance(value, Tensor) else value
        np.broadcast_to(v, target.shape)
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(np.shape(v))} cannot be "
                           f"broadcast to indexing result of shape {list(target.shape)}") from None
    self._data[idx] = v
    self._bump_version()
    if state.enabled and (self._requires_grad or (isinstance(value, Tensor) and
                                                  value._requires_grad)):
        val = value if isinstance(value, Tensor) else wrap(np.asarray(v), self.dtype)
        graph.record_inplace(_INDEX_PUT, (self, val), self, {"view_fn": _IndexFn(idx, index)},
                             None)


# basic indexing returns a view: the compiler treats every result as sharing self's memory
getitem = register(OpDef("__getitem__", VIEW, function=False, recompute=False,
                         batch=_br.getitem_batch,
                         onnx=_ox.getitem), getitem)
setitem.batch = _br.setitem_batch     # vmap (ember/ops/batch_rules.py)


def _setitem_jvp(tan, result, self, index, value):
    """Forward mode: self's new tangent, with value's tangent (or 0) written at `index`."""
    t = tan(self)
    new = self.new_zeros(self.shape) if t is None else t.clone()
    tv = tan(value)
    new[index] = tv if tv is not None else 0
    return new


setitem.jvp = _setitem_jvp
METHODS["__setitem__"] = setitem
