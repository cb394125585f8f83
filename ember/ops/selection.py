"""Reductions that select elements: max/min (whole tensor, with dim, or elementwise with a
second tensor), amax/amin, aminmax, argmax/argmin, median/nanmedian, mode, kthvalue,
quantile/nanquantile.

Gradients follow PyTorch's choices: ops with `dim` that return indices send the gradient to
the chosen index; whole-tensor max/min/median and amax/amin share it evenly among ties.
NaN counts as the extreme value (max, argmax) and sorts last (median, kthvalue, quantile).
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap
from ..dispatch_args import int_arg
from ..autograd.grad_mode import state
from ..autograd import graph
from .. import return_types as RT
from .registry import OPS
from ..autograd.derivative import Derivative
from .registry import OpDef, REDUCTION, FP32, register
from . import meta_rules as M
from . import lowering_pointwise as _lw
from .reduce_common import ALL_DIMS
from .reduce_common import (dims as _dims, axis as _axis, restore, LOWP, selecting_op,
                            select_values, index_tensor, multi_output, grad_at, write_out,
                            take_along, picked_jvp, refuse_complex)


def _sortable(a, dt):
    """NumPy sorts/argmaxes float16 fine; bfloat16 (ml_dtypes) goes through float32."""
    refuse_complex("sort", dt)
    return a.astype(np.float32) if dt in LOWP else a


def _nonempty(name, a, d):
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _need_dim(name, a):
    if a.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")


def _record(op, input, out, attrs):
    if state.enabled and input._requires_grad and input.dtype._kind >= 2:
        graph.record(op, (input,), out, attrs)
    return out


def _evenly(g, self, result):
    """Whole-tensor max/min/median: the gradient is shared among the elements equal to the
    result (NaN matching NaN)."""
    mask = (self == result) | (self.isnan() & result.isnan())
    return mask * (g / mask.sum())


def _even_op(name, node_name):
    return Derivative(name, grads={"self": _evenly}, node_name=node_name)


# ---- max / min ----
_MAX_ALL, _MIN_ALL = _even_op("max", "MaxBackward1"), _even_op("min", "MinBackward1")
_MAX_DIM = selecting_op("max_dim", "MaxBackward0", "max")
_MIN_DIM = selecting_op("min_dim", "MinBackward0", "min")


def _first_extreme(a, dt, d, largest):
    """Kept-dim index of the first max (min) along d; the first NaN wins, as in PyTorch."""
    if a.ndim == 0:     # (a meta input: a meta index)
        return np.zeros((), np.int64) if type(a) is not M.MetaArray else \
            M.out_array((), np.int64)
    return np.expand_dims((np.argmax if largest else np.argmin)(_sortable(a, dt), axis=d), d)


def _extreme(name, largest):
    def fn(input, dim=ALL_DIMS, keepdim=False, *, other=None, out=None):
        if other is not None or isinstance(dim, Tensor):
            from .pointwise_arith import maximum, minimum
            return (maximum if largest else minimum)(input, dim if other is None else other,
                                                     out=out)
        if dim is None:        # (torch's parser: no overload takes dim=None)
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(Tensor, NoneType), but expected one of: * (Tensor input, *, "
                            f"Tensor out = None) * (Tensor input, Tensor other, *, Tensor out "
                            f"= None) * (Tensor input, int dim, bool keepdim = False, *, "
                            f"tuple of Tensors out = None)")
        a = input._data
        refuse_complex(name + "_all", input.dtype)
        if dim is ALL_DIMS:
            _need_dim(name, a)
            r = wrap(np.max(a) if largest else np.min(a), input.dtype)
            return write_out(out, _record(_MAX_ALL if largest else _MIN_ALL, input, r, {}))
        d = S.wrap_dim(dim, a.ndim)
        _nonempty(name, a, d)
        idx = _first_extreme(a, input.dtype, d, largest)
        values = select_values(_MAX_DIM if largest else _MIN_DIM, input, idx, d, keepdim)
        res = (RT.max if largest else RT.min)(values, index_tensor(idx, d, keepdim, a.ndim))
        return write_out(out, res)
    fn.__name__ = name
    fn.__doc__ = (f"``{name}(x)``: the {name}imum element; ``{name}(x, dim, keepdim)``: "
                  f"(values, indices) along dim; ``{name}(x, other)``: elementwise "
                  f"{name}imum.")
    return fn


max = _extreme("max", True)
min = _extreme("min", False)


# ---- amax / amin / aminmax ----
def _amax_grad(g, self, result, dims, keepdim):
    shape = self._data.shape
    g, r = restore(g, shape, dims, keepdim), restore(result, shape, dims, keepdim)
    mask = self == r
    return mask * (g / mask.sum(dims, keepdim=True))


_AMAX = Derivative("amax", attrs={"dims": None, "keepdim": False},
                   grads={"self": _amax_grad}, node_name="AmaxBackward0")
_AMIN = Derivative("amin", attrs=_AMAX.attrs, grads={"self": _amax_grad},
                   node_name="AminBackward0")


def _check_extent(name, a, dims):
    if dims is None:
        _need_dim(name, a)
    else:
        for d in dims:
            _nonempty(name, a, d)


def _a_extreme(name, largest):
    def fn(input, dim=(), keepdim=False, *, out=None):
        a = input._data
        refuse_complex("max_values_cpu" if largest else "min_values_cpu", input.dtype)
        dims = _dims(dim, a.ndim)
        _check_extent(name, a, dims)
        r = (np.max if largest else np.min)(a, axis=_axis(dims, a.ndim), keepdims=keepdim)
        return write_out(out, _record(_AMAX if largest else _AMIN, input, wrap(r, input.dtype),
                                      {"dims": dims, "keepdim": keepdim}))
    fn.__name__ = name
    fn.__doc__ = (f"The {name[1:]}imum over `dim` (int, tuple, or all); ties share the "
                  "gradient evenly.")
    return fn


amax = _a_extreme("amax", True)
amin = _a_extreme("amin", False)


def _aminmax_grad(gs, self, result, dims, keepdim):
    gmin, gmax = grad_at(gs, 0), grad_at(gs, 1)
    total = None
    if gmin is not None:
        total = _amax_grad(gmin, self, result, dims, keepdim)
    if gmax is not None:
        top = self.detach().amax(() if dims is None else dims, keepdim=keepdim)
        part = _amax_grad(gmax, self, top, dims, keepdim)
        total = part if total is None else total + part
    return total


_AMINMAX = multi_output(Derivative("aminmax", attrs=_AMAX.attrs,
                                   grads={"self": _aminmax_grad}, node_name="AminmaxBackward0"))


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(min, max) together, over all elements or one `dim`."""
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    refuse_complex("aminmax_cpu", input.dtype)
    a = input._data
    dims = _dims(dim, a.ndim)
    if dims is not None and a.ndim and a.shape[dims[0]] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero size.")
    if a.size == 0 and dims is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    ax = _axis(dims, a.ndim)
    lo = wrap(np.min(a, axis=ax, keepdims=keepdim), input.dtype)
    hi = wrap(np.max(a, axis=ax, keepdims=keepdim), input.dtype)
    if state.enabled and input._requires_grad and input.dtype._kind >= 2:
        graph.record_multi(_AMINMAX, (input,), (lo, hi), {"dims": dims, "keepdim": keepdim})
    return write_out(out, RT.aminmax(lo, hi))


# ---- argmax / argmin ----
def _arg_extreme(name, largest):
    def fn(input, dim=None, keepdim=False, *, out=None):
        if input.dtype is D.bool_ or input.dtype.is_complex:
            what = "bool" if input.dtype is D.bool_ else "complex"
            raise RuntimeError(f"{name}(): does not support {what} input")
        a = input._data
        if dim is None:
            if a.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            i = (np.argmax if largest else np.argmin)(_sortable(a, input.dtype).reshape(-1))
            r = np.full((1,) * a.ndim if keepdim else (), i, np.int64)
            return write_out(out, wrap(r, D.int64))
        d = S.wrap_dim(dim, a.ndim)
        _nonempty(name, a, d)
        idx = _first_extreme(a, input.dtype, d, largest)
        return write_out(out, index_tensor(idx, d, keepdim, a.ndim))
    fn.__name__ = name
    fn.__doc__ = f"Index of the first {name[3:]}imum (over all elements, flattened, or `dim`)."
    return fn


argmax = _arg_extreme("argmax", True)
argmin = _arg_extreme("argmin", False)


# ---- median / nanmedian / kthvalue / mode: order statistics ----
def _no_bool(name, input):
    if input.dtype is D.bool_:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'Bool\'')


def _kth_positions(a, dt, d, ignore_nan, k=None):
    """(stable argsort along d, kept-dim position in sorted order of the median / k-th)."""
    order = np.argsort(_sortable(a, dt), axis=d, kind="stable")
    n = a.shape[d]
    kept = list(a.shape)
    kept[d] = 1
    if k is not None:
        return order, np.full(kept, k, np.int64)
    if a.dtype.kind != "f" and dt not in LOWP:
        return order, np.full(kept, (n - 1) // 2, np.int64)
    nan = np.sum(np.isnan(_sortable(a, dt)), axis=d, keepdims=True)
    if ignore_nan:                  # lower median of the non-NaN values (index 0 if none)
        return order, np.maximum((n - nan - 1) // 2, 0)
    return order, np.where(nan > 0, n - nan, (n - 1) // 2)   # a NaN if there is one


_MEDIAN_ALL = _even_op("median", "MedianBackward0")
_NANMEDIAN_ALL = _even_op("nanmedian", "NanmedianBackward0")
_MEDIAN_DIM = selecting_op("median_dim", "MedianBackward1", "median")
_NANMEDIAN_DIM = selecting_op("nanmedian_dim", "NanmedianBackward1", "nanmedian")
_KTHVALUE = selecting_op("kthvalue", "KthvalueBackward0")
_MODE = selecting_op("mode", "ModeBackward0")


def _median(name, input, dim, keepdim, out, ignore_nan):
    a = input._data
    if dim is None and a.size == 0:            # PyTorch: NaN, cast to the dtype
        with np.errstate(all="ignore"):
            return wrap(np.array(np.nan).astype(input.dtype.np), input.dtype)
    if dim is not None:
        _nonempty(name, a, S.wrap_dim(dim, a.ndim))
    if input.dtype is D.bool_:
        raise NotImplementedError(f'"median_{"cpu" if dim is None else "out"}" not implemented '
                                  "for 'Bool'")
    op_all, op_dim = ((_NANMEDIAN_ALL, _NANMEDIAN_DIM) if ignore_nan else
                      (_MEDIAN_ALL, _MEDIAN_DIM))
    if dim is None:
        flat = a.reshape(-1)
        order, pos = _kth_positions(flat, input.dtype, 0, ignore_nan)
        r = wrap(flat[order[pos[0]]], input.dtype)
        return write_out(out, _record(op_all, input, r, {}))
    d = S.wrap_dim(dim, a.ndim)
    _nonempty(name, a, d)
    if a.ndim == 0:
        idx = M.zero_index(a)
    else:
        order, pos = _kth_positions(a, input.dtype, d, ignore_nan)
        idx = np.take_along_axis(order, pos, d)
    values = select_values(op_dim, input, idx, d, keepdim)
    rt = RT.nanmedian if ignore_nan else RT.median
    return write_out(out, rt(values, index_tensor(idx, d, keepdim, a.ndim)))


def _median_dim(name, dim):
    """dim as _median takes it: None for all elements (the default); an explicit None is
    torch's TypeError (no overload of median takes one)."""
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not NoneType")
    return None if dim is ALL_DIMS else dim


def median(input, dim=ALL_DIMS, keepdim=False, *, out=None):
    """The lower median (of all elements, or (values, indices) along `dim`); NaN if any."""
    return _median("median", input, _median_dim("median", dim), keepdim, out, False)


def nanmedian(input, dim=ALL_DIMS, keepdim=False, *, out=None):
    """Like `median`, ignoring NaN."""
    return _median("nanmedian", input, _median_dim("nanmedian", dim), keepdim, out, True)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """(values, indices) of the k-th smallest element (1-based) along `dim`."""
    k = int_arg(k, "kthvalue", "k", 2)
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    _nonempty("kthvalue", a, d)
    n = a.shape[d] if a.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if a.ndim == 0:
        idx = M.zero_index(a)
    else:
        _no_bool("kthvalue", input)
        order, pos = _kth_positions(a, input.dtype, d, False, k - 1)
        idx = np.take_along_axis(order, pos, d)
    values = select_values(_KTHVALUE, input, idx, d, keepdim)
    return write_out(out, RT.kthvalue(values, index_tensor(idx, d, keepdim, a.ndim)))


def mode(input, dim=-1, keepdim=False, *, out=None):
    """(values, indices): the most frequent value along `dim` (the smallest on ties) and the
    last index where it occurs."""
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    _nonempty("mode", a, d)
    if a.ndim == 0:
        idx = M.zero_index(a)
    else:
        n = a.shape[d]
        rows = np.moveaxis(_sortable(a, input.dtype), d, -1).reshape(-1, n)
        order = np.argsort(rows, axis=1, kind="stable")
        srt = np.take_along_axis(rows, order, 1)
        start = np.ones(srt.shape, bool)           # where a run of equal values begins
        start[:, 1:] = srt[:, 1:] != srt[:, :-1]
        run = np.cumsum(start.ravel()) - 1         # run ids, unique across rows
        count = np.bincount(run, minlength=1)[run].reshape(srt.shape)
        b = np.arange(srt.shape[0])
        first = np.argmax(count, axis=1)           # first (smallest) of the longest runs
        last = first + count[b, first] - 1         # stable sort: its last original index
        flat = order[b, last] if srt.shape[0] else np.zeros(0, np.int64)
        idx = np.expand_dims(flat.reshape(np.delete(a.shape, d)), d)
    values = select_values(_MODE, input, idx, d, keepdim)
    return write_out(out, RT.mode(values, index_tensor(idx, d, keepdim, a.ndim)))


# ---- quantile: composite of a gather at sorted positions and lerp ----
_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    if dim is not None and not isinstance(dim, int):
        q_t = "Tensor" if isinstance(q, Tensor) else type(q).__name__
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{q_t}, dim={type(dim).__name__}), but expected int dim")
    if input._data.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        qa = np.array([q], input.dtype.np)
    else:
        if q._data.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qa = q._data.reshape(-1)
        if type(qa) is not M.MetaArray and np.any((qa < 0) | (qa > 1)):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        scalar_q = q._data.ndim == 0
    if interpolation not in _INTERP:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    nd = input._data.ndim
    if dim is None or nd == 0:
        x, d = input.reshape(-1), 0
    else:
        x, d = input, S.wrap_dim(dim, nd)
    a = x._data
    if type(a) is M.MetaArray or type(qa) is M.MetaArray:
        return _quantile_meta(name, input, q, dim, keepdim, interpolation, ignore_nan,
                              len(qa), scalar_q, d)
    n = a.shape[d]
    order = np.argsort(a, axis=d, kind="stable")
    nan = np.sum(np.isnan(a), axis=d, keepdims=True)[None]            # (1, kept...)
    qb = qa.reshape((-1,) + (1,) * a.ndim)                            # (nq, 1...)
    valid = (n - nan) if ignore_nan else np.full(nan.shape, n)
    rank = np.maximum(qb * (valid - 1).astype(a.dtype), 0)
    if not ignore_nan:
        rank = np.where(nan > 0, n - 1, rank)                         # lands on a NaN
    lo, hi = np.floor(rank), np.ceil(rank)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = np.round(rank)                                      # half to even
    full = (len(qa),) + a.shape
    xs = x.unsqueeze(0).expand(full)
    order = np.broadcast_to(order[None], full)

    def at(pos):
        return take_along(xs, np.take_along_axis(order, pos.astype(np.int64), d + 1), d + 1)
    r = at(lo)
    if interpolation in ("linear", "midpoint"):
        w = rank - lo if interpolation == "linear" else np.full(rank.shape, 0.5, a.dtype)
        r = r.lerp(at(hi), wrap(w.astype(a.dtype), input.dtype))
    if not keepdim:
        r = r.squeeze(d + 1)
    elif dim is None or nd == 0:
        r = r.reshape((len(qa),) + (1,) * nd)
    return r.squeeze(0) if scalar_q else r


def _quantile_meta(name, input, q, dim, keepdim, interpolation, ignore_nan, nq, scalar_q, d):
    """quantile on meta: the shape from the arguments, the strides those of the cpu op on
    stand-ins (meta_rules.standin)."""
    M.check_meta_devices((input, q), {})
    nd = input._data.ndim
    if dim is None or nd == 0:
        kept = (1,) * nd if keepdim else ()
    else:
        kept = tuple(1 if k == d else s for k, s in enumerate(input._data.shape)
                     if keepdim or k != d)
    shape = kept if scalar_q else (nq,) + kept
    small_q = q if not isinstance(q, Tensor) else M.standin(q, 0.5)
    small = _quantile(name, M.standin(input), small_q, dim, keepdim, interpolation, ignore_nan)
    return M.result(shape, input.dtype, M.standin_layout(small, shape))


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles along `dim` (or of all elements); NaN where a slice has a NaN."""
    return write_out(out, _quantile("quantile", input, q, dim, keepdim, interpolation, False))


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """Like `quantile`, ignoring NaN."""
    return write_out(out, _quantile("nanquantile", input, q, dim, keepdim, interpolation, True))


# ---- meta rules (ember/ops/meta_rules.py) ----
def _extreme_meta(name, largest):
    def meta(input, dim=None, keepdim=False, *, other=None, out=None):
        if other is not None or isinstance(dim, Tensor):
            from .pointwise_arith import maximum, minimum
            return (maximum if largest else minimum)(input, dim if other is None else other,
                                                     out=out)
        a = input._data
        if dim is None:
            _need_dim(name, a)
            res = M.result((), input.dtype)
            if state.enabled and input._requires_grad and input.dtype.is_floating_point:
                graph.record(_MAX_ALL if largest else _MIN_ALL, (input,), res, {})
            return write_out(out, res)
        d = S.wrap_dim(dim, a.ndim)
        _nonempty(name, a, d)
        values = M.reduce_to(input, d, keepdim, input.dtype)[0]
        return write_out(out, (RT.max if largest else RT.min)(
            values, M.reduce_to(input, d, keepdim, D.int64)[0]))
    return meta


def _a_extreme_meta(name, largest):
    def meta(input, dim=(), keepdim=False, *, out=None):
        dims = _dims(dim, input._data.ndim)
        _check_extent(name, input._data, dims)
        res = M.reduce_to(input, dim, keepdim, input.dtype)[0]
        return write_out(out, _record(_AMAX if largest else _AMIN, input, res,
                                      {"dims": dims, "keepdim": keepdim}))
    return meta


def _arg_meta(name):
    def meta(input, dim=None, keepdim=False):
        if dim is None:
            _need_dim(name, input._data)
        else:
            _nonempty(name, input._data, S.wrap_dim(dim, input._data.ndim))
        return M.reduce_to(input, dim, keepdim, D.int64)[0]
    return meta


_META = {max: _extreme_meta("max", True), min: _extreme_meta("min", False),
         amax: _a_extreme_meta("amax", True), amin: _a_extreme_meta("amin", False),
         argmax: _arg_meta("argmax"), argmin: _arg_meta("argmin")}
_LOWER = {amax: _lw.AMAX, amin: _lw.AMIN}   # how fused kernels reduce a row
_JVP = {kthvalue: picked_jvp(1, -1), mode: picked_jvp(0, -1)}   # forward-mode rules
_ONNX = {max: _ox.max_, min: _ox.min_, amax: _ox.amax, amin: _ox.amin, argmax: _ox.argmax,
         argmin: _ox.argmin}
for _f in (max, min, amax, amin, aminmax, argmax, argmin, median, nanmedian, kthvalue, mode):
    globals()[_f.__name__] = register(OpDef(_f.__name__, REDUCTION, lower=_LOWER.get(_f),
                                            meta=_META.get(_f),
                                            jvp=_JVP.get(_f),
                                            onnx=_ONNX.get(_f)), _f)
# autocast runs the quantiles in float32
quantile = register(OpDef("quantile", REDUCTION, amp=FP32), quantile)
nanquantile = register(OpDef("nanquantile", REDUCTION, amp=FP32), nanquantile)
# meta rules (ember/ops/meta_rules.py) of the ops registered just above
OPS["kthvalue"].meta = M.kthvalue
OPS["mode"].meta = M.mode
OPS["median"].meta = M.median_of("median")
OPS["nanmedian"].meta = M.median_of("nanmedian")
OPS["aminmax"].meta = M.aminmax
