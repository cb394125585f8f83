"""Reductions: sum, mean, nansum, nanmean, prod, all/any, count_nonzero, var/std (and their
`_mean` pairs), logsumexp, and sum_to_size (the engine uses it to reduce broadcast
gradients). Each takes `dim` as int, tuple or None, negative dims and `keepdim`, with
PyTorch's result dtypes (integer sums give int64). Norms live in norms.py, max/min-like
reductions in selection.py, cumulative ops in scan.py; shared helpers in reduce_common.py.
"""
import builtins
import math
import warnings

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..dispatch import wrap, torch_name
from ..dispatch_args import int_arg
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OPS
from ..autograd.derivative import Derivative
from .registry import OpDef, REDUCTION, FP32, LINEAR, register, register_each
from . import meta_rules as M
from . import batch_rules as _br
from . import lowering_pointwise as _lw
from .reduce_common import (dims as _dims, axis as _axis, expand_grad as _expand_grad, restore,
                            reduced_count, kernel_dtype, multi_output, grad_at, write_out,
                            reduce_result as _reduce, sum_dtype as _sum_dtype, ALL_DIMS)

INF = math.inf


_SUM = Derivative("sum", attrs={"shape": None, "dims": None, "keepdim": False},
                  grads={"self": lambda g, shape, dims, keepdim: _expand_grad(g, shape, dims,
                                                                              keepdim)},
                  node_name="SumBackward0")
_FAST_SUM = (D.float32, D.float64)
_SUM_DIM = Derivative("sum_dim", of="sum", attrs=_SUM.attrs, grads=_SUM.grads,
                      node_name="SumBackward1")


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of elements, over all dims or over `dim` (int or tuple)."""
    if dim is None and not keepdim and dtype is None and out is None and input.dtype in _FAST_SUM:
        # the common whole-tensor float sum: one NumPy reduction, nothing to normalise
        res = wrap(np.add.reduce(input._data, axis=None), input.dtype)
        if input._requires_grad and state.enabled:
            graph.record(_SUM, (input,), res, {"shape": input._data.shape, "dims": None,
                                               "keepdim": False})
        return res
    dims = _dims(dim, input._data.ndim)
    dt = _sum_dtype(input, dtype)
    a = input._data if dtype is None else input._data.astype(dt.np)
    r = np.sum(a, axis=_axis(dims, a.ndim), keepdims=keepdim, dtype=kernel_dtype(dt))
    op = _SUM if dim is None else _SUM_DIM
    res = _reduce(op, input, dims, keepdim, r, dt,
                  {"shape": input._data.shape, "dims": dims, "keepdim": keepdim})
    return write_out(out, res)


def _nansum_grad(g, self, dims, keepdim):
    return _expand_grad(g, self._data.shape, dims, keepdim) * self.isnan().logical_not()


_NANSUM = Derivative("nansum", attrs={"dims": None, "keepdim": False},
                     grads={"self": _nansum_grad}, node_name="NansumBackward0")


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero."""
    if input.dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    dims = _dims(dim, input._data.ndim)
    dt = _sum_dtype(input, dtype)
    # (cast first: np.nansum does not see NaN in ml_dtypes' bfloat16)
    a = input._data.astype(kernel_dtype(dt))
    r = np.nansum(a, axis=_axis(dims, a.ndim), keepdims=keepdim)
    return write_out(out, _reduce(_NANSUM, input, dims, keepdim, r, dt,
                                  {"dims": dims, "keepdim": keepdim}))


def _mean_dtype(input, dtype, name="mean"):
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if dt._kind < 2:
            raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: {torch_name(dt)}")
        return dt
    if input.dtype._kind < 2:
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {torch_name(input.dtype)}")
    return input.dtype


_MEAN = Derivative("mean", attrs={"shape": None, "dims": None, "keepdim": False, "n": 1},
                   grads={"self": lambda g, shape, dims, keepdim, n: _expand_grad(g / n, shape, dims,
                                                                                  keepdim)},
                   node_name="MeanBackward0")
_MEAN_DIM = Derivative("mean_dim", of="mean", attrs=_MEAN.attrs, grads=_MEAN.grads,
                       node_name="MeanBackward1")


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Arithmetic mean over all elements or over `dim`."""
    dt = _mean_dtype(input, dtype)
    dims = _dims(dim, input._data.ndim)
    a = input._data
    shape = a.shape
    n = reduced_count(shape, dims)
    if n:
        r = np.mean(a, axis=_axis(dims, a.ndim), keepdims=keepdim, dtype=kernel_dtype(dt))
    else:                                  # the mean of nothing is NaN
        r = np.full(np.sum(a, axis=_axis(dims, a.ndim), keepdims=keepdim).shape, np.nan,
                    kernel_dtype(dt))
    op = _MEAN if dim is None else _MEAN_DIM
    return write_out(out, _reduce(op, input, dims, keepdim, r, dt,
                                  {"shape": shape, "dims": dims, "keepdim": keepdim,
                                   "n": n}))


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements (composite: nansum / count, as in PyTorch)."""
    if input.dtype._kind < 2:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {torch_name(input.dtype)}")
    x = input if dtype is None else input.to(_mean_dtype(input, dtype, "nanmean"))
    count = x.isnan().logical_not().sum(dim, keepdim=keepdim)
    return write_out(out, nansum(x, dim, keepdim=keepdim) / count)


# ---- prod: the gradient is the product of the other elements, safe at zeros ----
def _exclusive_cumprod(x, d):
    """[1, x0, x0*x1, ...] along d."""
    from .joining import cat
    from .scan import cumprod
    n = x._data.shape[d]
    shifted = cat([x.narrow(d, 0, 1).mul(0).add(1), x.narrow(d, 0, n - 1)], d)
    return cumprod(shifted, d)


def prod_of_others(x, d):
    """Product of every element but itself along `d`, without dividing (zeros are fine)."""
    from .reduce_common import flip
    return _exclusive_cumprod(x, d) * flip(_exclusive_cumprod(flip(x, (d,)), d), (d,))


def _prod_grad(g, self, result, dim, keepdim):
    shape = self._data.shape
    if len(shape) == 0 or self._data.size == 0:
        return _expand_grad(g, shape, None, False)
    if dim is None:
        g, result = g.reshape((1,) * len(shape)), result.reshape((1,) * len(shape))
    else:
        g, result = restore(g, shape, (dim,), keepdim), restore(result, shape, (dim,), keepdim)
    if not np.any(self._data == 0):
        return g * result / self
    if dim is None:
        return g * prod_of_others(self.reshape(-1), 0).reshape(shape)
    return g * prod_of_others(self, dim)


_PROD = Derivative("prod", attrs={"dim": None, "keepdim": False},
                   grads={"self": _prod_grad}, node_name="ProdBackward0")
_PROD_DIM = Derivative("prod_dim", of="prod", attrs=_PROD.attrs, grads=_PROD.grads,
                       node_name="ProdBackward1")


def prod(input, dim=ALL_DIMS, keepdim=False, *, dtype=None, out=None):
    """Product of all elements, or along one `dim` (an int, as in PyTorch; no overload takes
    ``dim=None``)."""
    if dim is ALL_DIMS:
        dim = None
    elif dim is None or not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"prod() received an invalid combination of arguments - got (Tensor, "
                        f"{type(dim).__name__}), but expected one of: (Tensor input, *, dtype) "
                        "or (Tensor input, int dim, bool keepdim, *, dtype)")
    dims = _dims(dim, input._data.ndim)
    dt = _sum_dtype(input, dtype)
    a = input._data if dtype is None else input._data.astype(dt.np)
    r = np.prod(a, axis=_axis(dims, a.ndim), keepdims=keepdim, dtype=kernel_dtype(dt))
    d = dims[0] if dims is not None else None
    return write_out(out, _reduce(_PROD if dim is None else _PROD_DIM, input, dims, keepdim, r,
                                  dt, {"dim": d, "keepdim": keepdim}))


# ---- boolean reductions and counting ----
def _bool_reduce(np_fn, name):
    def fn(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, (list, tuple)) and len(dim) == 0:
            ax = ()                       # PyTorch: dim=() reduces over nothing here
        else:
            ax = _axis(_dims(dim, input._data.ndim), input._data.ndim)
        r = np_fn(input._data, axis=ax, keepdims=keepdim)
        dt = D.uint8 if input.dtype is D.uint8 else D.bool_
        return write_out(out, wrap(r, dt))
    fn.__name__ = name
    fn.__doc__ = f"Whether {name} elements (over `dim`, int or tuple) are nonzero."
    return fn


all = _bool_reduce(np.all, "all")
any = _bool_reduce(np.any, "any")


def count_nonzero(input, dim=None):
    """Number of nonzero elements, over all dims or `dim` (int or tuple); int64."""
    dims = _dims(dim, input._data.ndim)
    r = np.count_nonzero(input._data, axis=_axis(dims, input._data.ndim))
    return wrap(np.asarray(r, np.int64), D.int64)


def sum_to_size(self, *size):
    """Sum `self` down to `size`, which must broadcast to self's shape (the reverse of expand)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = self._data.shape
    if tuple(size) == shape and builtins.all(type(s) is int for s in size):
        return self              # (the engine's common call: no more checks than this)
    for k, s in enumerate(size):
        if type(s) is not int:   # torch's parser: TypeError (ValueError beyond int64)
            int_arg(s, "sum_to_size", "size", k + 1, "tuple of ints")
        elif not -2 ** 63 <= s < 2 ** 63:
            raise TypeError(f"sum_to_size(): argument 'size' failed to unpack the object at pos "
                            f"{k + 1} with error \"Overflow when unpacking long long\"")
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


# ---- variance and standard deviation ----
def _correction(name, dim, unbiased, correction, keepdim=False):
    """(dim, correction) from PyTorch's overloads: var(x, dim, unbiased, keepdim),
    var(x, unbiased) and var(x, dim, *, correction). The `unbiased` overload takes nothing
    else: var(x, True, True) matches none (torch's TypeError)."""
    if isinstance(dim, bool):
        if unbiased is not None or keepdim or correction is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(Tensor, bool, ...), but expected one of: * (Tensor input, tuple "
                            f"of ints dim, bool unbiased = True, bool keepdim = False) * "
                            f"(Tensor input, bool unbiased = True)")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: pass either "
                        "unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


def _var_kernel(name, a, dims, correction, keepdim):
    n = reduced_count(a.shape, dims)
    dof = n - correction
    if dof <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)
    ax = _axis(dims, a.ndim)
    kdt = np.float32 if a.dtype.itemsize < 4 else a.dtype
    if n == 0:
        m = np.full(np.sum(a, axis=ax, keepdims=keepdim).shape, np.nan, kdt)
        return m, m
    with np.errstate(all="ignore"):
        m = np.mean(a, axis=ax, keepdims=True, dtype=kdt)
        v = np.sum(np.square(a - m), axis=ax, keepdims=keepdim) / builtins.max(dof, 0)
    return v, (m if keepdim or a.ndim == 0 else np.squeeze(m, ax))


def _var_grad_of(g, self, dims, keepdim, dof):
    # d var / d x = 2 (x - mean) / (N - correction)
    g = restore(g, self._data.shape, dims, keepdim)
    factor = 2.0 / dof if dof > 0 else INF
    return g * factor * (self - self.mean(dims, keepdim=True))


def _std_grad_of(g, self, result, dims, keepdim, dof):
    # std = sqrt(var); where std is 0 PyTorch's gradient is 0 (not inf)
    return _var_grad_of((g / (2 * result)).masked_fill(result == 0, 0), self, dims, keepdim, dof)


def _mean_grad_of(g, self, dims, keepdim):
    shape = self._data.shape
    return _expand_grad(g / reduced_count(shape, dims), shape, dims, keepdim)


_VAR = Derivative("var", attrs={"dims": None, "keepdim": False, "dof": 1},
                  grads={"self": _var_grad_of}, node_name="VarBackward0")
_STD = Derivative("std", attrs=_VAR.attrs, grads={"self": _std_grad_of},
                  node_name="StdBackward0")


def _pair_grad(first):
    def formula(gs, self, result, dims, keepdim, dof):
        gd, gm = grad_at(gs, 0), grad_at(gs, 1)
        total = None
        if gd is not None:
            total = (_var_grad_of(gd, self, dims, keepdim, dof) if first == "var" else
                     _std_grad_of(gd, self, result, dims, keepdim, dof))
        if gm is not None:
            gmean = _mean_grad_of(gm, self, dims, keepdim)
            total = gmean if total is None else total + gmean
        return total
    return formula


_VAR_MEAN = multi_output(Derivative("var_mean", attrs=_VAR.attrs,
                                    grads={"self": _pair_grad("var")},
                                    node_name="VarMeanBackward0"))
_STD_MEAN = multi_output(Derivative("std_mean", attrs=_VAR.attrs,
                                    grads={"self": _pair_grad("std")},
                                    node_name="StdMeanBackward0"))


def _complex_var_std(name, input, dim, unbiased, keepdim, correction, with_mean):
    """A complex input's variance is its parts' variances summed (a real result); the mean
    stays complex. Written in ember ops, so it is differentiable through the part views."""
    v = (_var_std("var", input.real, dim, unbiased, keepdim, correction, False) +
         _var_std("var", input.imag, dim, unbiased, keepdim, correction, False))
    if name.startswith("std"):
        v = v.sqrt()
    if not with_mean:
        return v
    return v, input.mean(dim if dim is not None else None, keepdim=keepdim)


def _var_std(name, input, dim, unbiased, keepdim, correction, with_mean):
    if isinstance(dim, (float, str)) or (isinstance(dim, (list, tuple)) and builtins.any(
            isinstance(d, (float, str)) for d in dim)):     # torch's parser: no overload
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{type(dim).__name__}), but expected one of: * (Tensor input, tuple of "
                        f"ints dim, bool unbiased = True, bool keepdim = False) * (Tensor input, "
                        f"bool unbiased = True)")
    if input.dtype.is_complex:
        return _complex_var_std(name, input, dim, unbiased, keepdim, correction, with_mean)
    if not input.dtype.is_floating_point:
        what = "std and var" if name in ("var", "std") else name
        raise RuntimeError(f"{what} only support floating point and complex dtypes")
    dim, correction = _correction(name, dim, unbiased, correction, keepdim)
    dims = _dims(dim, input._data.ndim)
    v, m = _var_kernel(name, input._data, dims, correction, keepdim)
    if name.startswith("std"):
        v = np.sqrt(v)
    dt = input.dtype
    attrs = {"dims": dims, "keepdim": keepdim,
             "dof": reduced_count(input._data.shape, dims) - correction}
    res = wrap(v, dt)
    if not with_mean:
        if state.enabled and input._requires_grad:
            graph.record(_VAR if name == "var" else _STD, (input,), res, attrs)
        return res
    mres = wrap(m, dt)
    if state.enabled and input._requires_grad:
        graph.record_multi(_VAR_MEAN if name == "var_mean" else _STD_MEAN, (input,),
                           (res, mres), attrs)
    return res, mres


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over `dim` with Bessel's `correction` (default 1; ``unbiased=False`` is 0)."""
    return write_out(out, _var_std("var", input, dim, unbiased, keepdim, correction, False))


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation: the square root of `var` (same arguments)."""
    return write_out(out, _var_std("std", input, dim, unbiased, keepdim, correction, False))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) in one pass."""
    return _var_std("var_mean", input, dim, unbiased, keepdim, correction, True)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) in one pass."""
    return _var_std("std_mean", input, dim, unbiased, keepdim, correction, True)


# ---- logsumexp ----
def _logsumexp_grad(g, self, result, dims, keepdim):
    shape = self._data.shape
    w = (self - restore(result, shape, dims, keepdim)).exp()
    return restore(g, shape, dims, keepdim) * w


_LOGSUMEXP = Derivative("logsumexp", attrs={"dims": None, "keepdim": False},
                        grads={"self": _logsumexp_grad}, node_name="LogsumexpBackward0")


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over `dim`, computed stably (shifting by the max)."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(D.get_default_dtype())
    a = input._data
    dims = _dims(dim, a.ndim)
    ax = _axis(dims, a.ndim)
    a = a.astype(kernel_dtype(input.dtype), copy=False)
    with np.errstate(all="ignore"):   # (complex input: shifted by the max real part)
        re = a.real if input.dtype.is_complex else a
        m = np.max(re, axis=ax, keepdims=True, initial=-np.inf) if a.size else \
            np.zeros(np.sum(re, axis=ax, keepdims=True).shape, re.dtype)
        m = np.where(np.isfinite(m), m, 0)
        r = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
    if not keepdim:
        r = np.squeeze(r, ax) if ax is not None else r.reshape(())
    return write_out(out, _reduce(_LOGSUMEXP, input, dims, keepdim, r, input.dtype,
                                  {"dims": dims, "keepdim": keepdim}))


_LOWER = {sum: _lw.SUM, mean: _lw.MEAN, var: _lw.VAR}   # how fused kernels reduce a row
def _var_tangent(tan, input, dim, unbiased, correction):
    """Forward mode of var: 2 <x - mean, t> / (n - correction) over `dim`, and n - corr."""
    if isinstance(dim, bool):          # var(x, True): the `unbiased` overload
        dim, unbiased = None, dim
    if isinstance(dim, (list, tuple)) and not dim:
        dim = None
    c = correction if correction is not None else (0 if unbiased is False else 1)
    m = input.mean(dim, keepdim=True)
    n = input.numel() // max(m.numel(), 1)
    return (input - m) * tan(input), dim, n - c


def _var_jvp(tan, result, input, dim=None, unbiased=None, keepdim=False, *, correction=None,
             out=None):
    p, dim, dof = _var_tangent(tan, input, dim, unbiased, correction)
    return p.sum(dim, keepdim=keepdim) * (2.0 / dof if dof else float("inf"))


def _std_jvp(tan, result, input, dim=None, unbiased=None, keepdim=False, *, correction=None,
             out=None):
    p, dim, dof = _var_tangent(tan, input, dim, unbiased, correction)
    return p.sum(dim, keepdim=keepdim) / (result * dof)


def _logsumexp_jvp(tan, result, input, dim, keepdim=False, *, out=None):
    r = result
    if not keepdim and input.dim():
        for d in sorted(d % input.dim() for d in ((dim,) if isinstance(dim, int) else dim)):
            r = r.unsqueeze(d)
    return (tan(input) * (input - r).exp()).sum(dim, keepdim=keepdim)


# ---- meta rules (ember/ops/meta_rules.py): the result's metadata, and the node ----
def _record_sum(input, res, dims, keepdim, dim):
    graph.record(_SUM if dim is None else _SUM_DIM, (input,), res,
                 {"shape": input._data.shape, "dims": dims, "keepdim": keepdim})


def _record_mean(input, res, dims, keepdim, dim):
    graph.record(_MEAN if dim is None else _MEAN_DIM, (input,), res,
                 {"shape": input._data.shape, "dims": dims, "keepdim": keepdim,
                  "n": reduced_count(input._data.shape, dims)})


def _var_std_meta(name):
    def meta(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        if not input.dtype.is_floating_point:
            raise RuntimeError("std and var only support floating point and complex dtypes")
        dim, correction = _correction(name, dim, unbiased, correction, keepdim)
        res, dims = M.reduce_to(input, dim, keepdim, input.dtype)
        if state.enabled and input._requires_grad:
            graph.record(_VAR if name == "var" else _STD, (input,), res,
                         {"dims": dims, "keepdim": keepdim,
                          "dof": reduced_count(input._data.shape, dims) - correction})
        return write_out(out, res)
    return meta


def _count_nonzero_meta(input, dim=None):
    return M.reduce_to(input, dim, False, D.int64)[0]


def _logsumexp_meta(input, dim, keepdim=False, *, out=None):
    dt = input.dtype if input.dtype.is_floating_point else D.get_default_dtype()
    return write_out(out, M.reduce_to(input, dim, keepdim, dt)[0])


_META = {sum: M.reduction(M.sum_dtype, _record_sum),
         mean: M.reduction(_mean_dtype, _record_mean),
         nansum: M.reduction(M.sum_dtype), all: M.reduction(M.bool_dtype),
         any: M.reduction(M.bool_dtype), count_nonzero: _count_nonzero_meta,
         var: _var_std_meta("var"), std: _var_std_meta("std"), logsumexp: _logsumexp_meta}

# forward mode (autograd/forward_rules.py): sum and mean are linear, the others have rules
_JVP = {sum: LINEAR, mean: LINEAR, var: _var_jvp, std: _std_jvp, logsumexp: _logsumexp_jvp}
_ONNX = {sum: _ox.sum_, mean: _ox.mean, all: _ox.all_, any: _ox.any_, var: _ox.var,
         std: _ox.std, logsumexp: _ox.logsumexp}
for _f in (sum, mean, nansum, nanmean, all, any, count_nonzero, var, std, logsumexp):
    globals()[_f.__name__] = register(OpDef(_f.__name__, REDUCTION, lower=_LOWER.get(_f),
                                            meta=_META.get(_f),
                                            jvp=_JVP.get(_f),
                                            onnx=_ONNX.get(_f)), _f)
# std(x, True) is unbiased=True: torch has an overload taking a bool where another takes
# an int (dim), so a bool there is no wrong type (dispatch_args.internal_error)
OPS["var"].bool_overload = OPS["std"].bool_overload = True
prod = register(OpDef("prod", REDUCTION, amp=FP32,
                      meta=M.reduction(M.sum_dtype),
                      onnx=_ox.prod), prod)     # autocast: in float32
register_each(globals(), REDUCTION, (var_mean, std_mean), method=False,
              bool_overload=True)     # (as var and std: x, unbiased)
# meta rules of var_mean / std_mean (ember/ops/meta_rules.py)
OPS["var_mean"].meta = OPS["std_mean"].meta = M.var_std_mean
sum_to_size = register(OpDef("sum_to_size", REDUCTION, function=False, jvp=LINEAR,
                             batch=_br.sum_to_size_batch,
                             lower=_lw.SUM_TO_SIZE),
                       sum_to_size)

# ember.linalg reaches the vector norm through this module
from .norms import vector_norm, matrix_norm, norm  # noqa: E402,F401
