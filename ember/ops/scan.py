"""Cumulative ops along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp.

Their derivatives are scans too: cumsum's is the reversed cumsum of the gradient, cummax's
sends each gradient to the index that held the running maximum, cumprod's is a product of
the other elements (exact at zeros), logcumsumexp's a reversed logcumsumexp split by sign.
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core import strides as S
from ..dispatch import wrap, torch_name
from ..autograd.grad_mode import state
from ..autograd import graph
from .. import return_types as RT
from ..core.meta import MetaData
from . import meta_rules as M
from .registry import OPS
from ..autograd.derivative import Derivative
from .registry import OpDef, REDUCTION, LINEAR, register, register_each, METHODS
from .reduce_common import (flip, kernel_dtype, selecting_op, select_values, index_tensor,
                            write_out, sum_dtype as _sum_dtype, picked_jvp)
from .dtype_support import ALL_BUT_COMPLEX


def _record(op, input, out, attrs):
    if state.enabled and input._requires_grad and out.dtype._kind >= 2:
        graph.record(op, (input,), out, attrs)
    return out


def _scan(name, input, dim, dtype, np_fn):
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    dt = _sum_dtype(input, dtype)
    a = a.astype(kernel_dtype(dt), copy=False)
    try:
        r = a.copy() if a.ndim == 0 else np_fn(a, axis=d)
    except MetaData:    # meta input: the result's metadata (ember/ops/meta_rules.py)
        r = M.out_array(a.shape, a.dtype, input, like=input)
    return wrap(r, dt), d


def _rev_cumsum(t, d):
    return flip(cumsum(flip(t, (d,)), d), (d,))


_CUMSUM = Derivative("cumsum", attrs={"dim": 0},
                     grads={"self": lambda g, dim: g if g._data.ndim == 0 else _rev_cumsum(g, dim)},
                     node_name="CumsumBackward0")


def cumsum(input, dim, *, dtype=None, out=None):
    """Running sums along `dim` (integers and bool accumulate in int64)."""
    r, d = _scan("cumsum", input, dim, dtype, np.cumsum)
    return write_out(out, _record(_CUMSUM, input, r, {"dim": d}))


def _cumprod_grad(g, self, result, dim):
    if self._data.ndim == 0 or self._data.size == 0:
        return g
    if not np.any(self._data == 0):
        return _rev_cumsum(g * result, dim) / self
    # With zeros, no division: grad_k = sum_{i >= k} g_i * prod_{j <= i, j != k} x_j, from the
    # cumprods of n copies of x, copy k having x_k replaced by 1 (n x n per slice).
    from .pointwise import where
    n = self._data.shape[dim]
    x = self.movedim(dim, -1).unsqueeze(-2)                       # (..., 1, n)
    eye = wrap(np.eye(n, dtype=bool), D.bool_)
    partial = cumprod(where(eye, 1.0, x), -1)                     # (..., k, i)
    upper = wrap(np.triu(np.ones((n, n), dtype=bool)), D.bool_)  # i >= k
    gi = g.movedim(dim, -1).unsqueeze(-2)
    return (partial * gi).masked_fill(upper.logical_not(), 0).sum(-1).movedim(-1, dim)


_CUMPROD = Derivative("cumprod", attrs={"dim": 0}, grads={"self": _cumprod_grad},
                      node_name="CumprodBackward0")


def cumprod(input, dim, *, dtype=None, out=None):
    """Running products along `dim` (integers and bool accumulate in int64)."""
    r, d = _scan("cumprod", input, dim, dtype, np.cumprod)
    return write_out(out, _record(_CUMPROD, input, r, {"dim": d}))


def _inplace_scan(fn, name):
    def method(self, dim, *, dtype=None):
        if dtype is not None and D.to_dtype(dtype) is not self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype "
                               f"{D.CPP_NAMES[self.dtype.name]} and output tensor dtype "
                               f"{D.CPP_NAMES[D.to_dtype(dtype).name]} should match")
        if self.dtype is D.bool_ and self._data.ndim and self._data.size:
            raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
        return self.copy_(fn(self, dim, dtype=self.dtype))
    method.__name__ = name + "_"
    return method


# ---- cummax / cummin: values with the index that last attained them ----
_CUMMAX = selecting_op("cummax", "CummaxBackward0")
_CUMMIN = selecting_op("cummin", "CumminBackward0")


def _cum_extreme(input, dim, largest):
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        idx = M.zero_index(a)
    else:
        x = a.astype(np.float32) if input.dtype in (D.float16, D.bfloat16) else a
        vals = (np.maximum if largest else np.minimum).accumulate(x, axis=d)
        hit = x == vals
        if x.dtype.kind == "f":              # NaN propagates, and each new NaN takes over
            hit |= np.isnan(x) & np.isnan(vals)
        shape = [1] * a.ndim
        shape[d] = a.shape[d]
        pos = np.where(hit, np.arange(a.shape[d]).reshape(shape), 0)
        idx = np.maximum.accumulate(pos, axis=d) if a.size else pos.astype(np.int64)
    op = _CUMMAX if largest else _CUMMIN
    values = select_values(op, input, idx, d, True)
    return (RT.cummax if largest else RT.cummin)(values, index_tensor(idx, d, True, a.ndim))


def cummax(input, dim, *, out=None):
    """(values, indices) of the running maximum along `dim`; ties take the later index."""
    return write_out(out, _cum_extreme(input, dim, True))


def cummin(input, dim, *, out=None):
    """(values, indices) of the running minimum along `dim`; ties take the later index."""
    return write_out(out, _cum_extreme(input, dim, False))


# ---- logcumsumexp ----
def _logcumsumexp_grad(g, self, result, dim):
    # grad_k = sum_{i >= k} g_i exp(x_k - out_i); done in log space for g > 0 and g < 0
    # separately so nothing overflows (the split used by TensorFlow's gradient).
    if self._data.ndim == 0:
        return g
    low = float(D.finfo(self.dtype).min)
    log_abs = g.abs().log()

    def part(mask):
        lg = log_abs.masked_fill(mask.logical_not(), low) - result
        return (flip(logcumsumexp(flip(lg, (dim,)), dim), (dim,)) + self).exp()
    return part(g > 0) - part(g < 0)


_LOGCUMSUMEXP = Derivative("logcumsumexp", attrs={"dim": 0},
                           grads={"self": _logcumsumexp_grad}, node_name="LogcumsumexpBackward0")


def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along `dim`, computed stably."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{torch_name(input.dtype)}'")
    a = input._data
    d = S.wrap_dim(dim, a.ndim)
    x = a.astype(kernel_dtype(input.dtype), copy=False)
    with np.errstate(all="ignore"):
        r = x.copy() if a.ndim == 0 else np.logaddexp.accumulate(x, axis=d)
    return write_out(out, _record(_LOGCUMSUMEXP, input, wrap(r, input.dtype), {"dim": d}))


cumsum = register(OpDef("cumsum", REDUCTION, jvp=LINEAR,
                        onnx=_ox.cumsum), cumsum)
register_each(globals(), REDUCTION, (cumprod,))
register_each(globals(), REDUCTION, (cummax, cummin), jvp=picked_jvp(0, None),
    dtypes=ALL_BUT_COMPLEX)


def _logcumsumexp_jvp(tan, result, input, dim, *, out=None):
    """Forward mode: sum_{j<=i} exp(x_j - y_i) t_j, shifted by the (constant) max."""
    m = input.detach().amax(dim, keepdim=True) if input.numel() else input.detach()
    return (tan(input) * (input - m).exp()).cumsum(dim) / (result - m).exp()


logcumsumexp = register(OpDef("logcumsumexp", REDUCTION, jvp=_logcumsumexp_jvp), logcumsumexp)
METHODS["cumsum_"] = _inplace_scan(cumsum, "cumsum")
METHODS["cumprod_"] = _inplace_scan(cumprod, "cumprod")
# meta rules (ember/ops/meta_rules.py)
OPS["cummax"].meta = M.cumulative_pair("cummax")
OPS["cummin"].meta = M.cumulative_pair("cummin")
OPS["logcumsumexp"].meta = M.logcumsumexp
