"""Pointwise unary math: exponentials and logarithms, trigonometric and hyperbolic functions,
sigmoid and logit, the error functions (a blocked float32 erf within 3 ulp of torch's),
and the unary ops that keep the input's dtype (neg, abs, sign, rounding, relu, nan_to_num).
One `_unary` row each (ember/ops/pointwise.py)."""
import math

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from .. import dispatch
from ..core import dtype as D
from ..dispatch import rule_promote
from .registry import METHODS as _METHODS
from .lowering import Lower, NO_INT, COSTLY
from . import lowering_pointwise as _lw
from . import complex_ops as _cx
from .pointwise import defpw, only, _zeros, _unary, _np_torch_name, where, no_complex
from .native_pointwise import threshold_backward as _native_threshold_backward


# ---- unary math: float results for integer inputs ----
LN2 = math.log(2.0)
LN10 = math.log(10.0)


exp = _unary("exp", np.exp, lambda g, result: g * result, lower=_lw.cmath("em_exp"),
             onnx="Exp")
exp2 = _unary("exp2", np.exp2, lambda g, result: g * result * LN2)
expm1 = _unary("expm1", np.expm1, lambda g, result: g * (result + 1),
               lower=_lw.cmath("em_expm1"),
               onnx=_ox.expm1)
log = _unary("log", np.log, lambda g, self: g / self, lower=_lw.cmath("em_log"),
             onnx="Log")
log2 = _unary("log2", np.log2, lambda g, self: g / (self * LN2))
log10 = _unary("log10", np.log10, lambda g, self: g / (self * LN10))
log1p = _unary("log1p", np.log1p, lambda g, self: g / (self + 1), lower=_lw.cmath("em_log1p"),
               onnx=_ox.log1p)
sqrt = _unary("sqrt", np.sqrt, lambda g, result: g / (2 * result),
              lower=Lower("sqrt{f}({a})", c_int=NO_INT, cost=COSTLY),
              onnx="Sqrt")
rsqrt = _unary("rsqrt", None, lambda g, result: -0.5 * g * result * result * result,
               kernel=lambda xp, a: 1 / xp.sqrt(a),
               lower=Lower("((({T})1) / sqrt{f}({a}))", c_int=NO_INT, cost=COSTLY),
               onnx=_ox.rsqrt)
# sin and cos are libm's (scalar) in C
sin = _unary("sin", np.sin, lambda g, self: g * self.cos(), lower=_lw.cmath("sin"),
             onnx="Sin")
cos = _unary("cos", np.cos, lambda g, self: -g * self.sin(), lower=_lw.cmath("cos"),
             onnx="Cos")
tan = _unary("tan", np.tan, lambda g, result: g * (1 + result * result),
             onnx="Tan")
asin = _unary("asin", np.arcsin, lambda g, self: g / (1 - self * self).sqrt(),
              names=("asin", "arcsin"),
              onnx="Asin")
acos = _unary("acos", np.arccos, lambda g, self: -g / (1 - self * self).sqrt(),
              names=("acos", "arccos"),
              onnx="Acos")
atan = _unary("atan", np.arctan, lambda g, self: g / (1 + self * self), names=("atan", "arctan"),
              onnx="Atan")
sinh = _unary("sinh", np.sinh, lambda g, self: g * self.cosh(),
              onnx="Sinh")
cosh = _unary("cosh", np.cosh, lambda g, self: g * self.sinh(),
              onnx="Cosh")
tanh = _unary("tanh", np.tanh, lambda g, result: g * (1 - result * result),
              lower=_lw.cmath("em_tanh"),
              onnx="Tanh")
asinh = _unary("asinh", np.arcsinh, lambda g, self: g / (self * self + 1).sqrt(),
               names=("asinh", "arcsinh"),
               onnx="Asinh")
acosh = _unary("acosh", np.arccosh, lambda g, self: g / (self * self - 1).sqrt(),
               names=("acosh", "arccosh"),
               onnx="Acosh")
atanh = _unary("atanh", np.arctanh, lambda g, self: g / (1 - self * self),
               names=("atanh", "arctanh"),
               onnx="Atanh")


def _sigmoid_kernel(xp, a):
    return 1 / (1 + xp.exp(-a))


sigmoid = _unary("sigmoid", None, lambda g, result: g * result * (1 - result),
                 kernel=_sigmoid_kernel, lower=_lw.cmath("em_sigmoid"),
                 onnx="Sigmoid")


def _logit_kernel(xp, a, eps=None):
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    return xp.log(a / (1 - a))


def _logit_grad(g, self, eps):
    if eps is None:
        return g / (self * (1 - self))
    inside = (self >= eps) & (self <= 1 - eps)
    return where(inside, g / (self * (1 - self)), 0.0)


logit = _unary("logit", None, _logit_grad, kernel=_logit_kernel, attrs={"eps": None},
               rule=only("bif", "logit_cpu", dispatch.rule_float))

_SQRT_PI = math.sqrt(math.pi)


def _erfc_positive(x):
    """erfc for x >= 3 by its continued fraction, evaluated from the tail (fixed depth:
    at x = 3, 60 levels reach double precision)."""
    t = x.copy()
    for k in range(60, 0, -1):
        t = x + (0.5 * k) / t
    return np.exp(-x * x) / (_SQRT_PI * t)


def erf_numpy(x):
    """erf in float64 with NumPy alone (used when SciPy is absent): below 3 the all-positive
    series erf(x) = 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (2n+1)!!, which has no
    cancellation; above, 1 - erfc from its continued fraction. Accurate to a few ulp."""
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    out = np.ones_like(ax)
    small = ax < 3.0
    xs = ax[small]
    x2 = xs * xs
    term = xs.copy()
    total = xs.copy()
    n = 0
    while term.size and n < 200:
        n += 1
        term *= 2.0 * x2 / (2 * n + 1)
        total += term
        if n % 8 == 0 and not np.any(term > 1e-17 * total):
            break
    out[small] = (2.0 / _SQRT_PI) * np.exp(-x2) * total
    big = ~small & (ax < 6.0)        # erf(6) rounds to 1 in float64
    out[big] = 1.0 - _erfc_positive(ax[big])
    return np.where(np.isnan(x), np.nan, np.copysign(out, x))


def erfc_numpy(x):
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    pos = np.where(ax >= 3.0, _erfc_positive(np.maximum(ax, 3.0)), 1.0 - erf_numpy(ax))
    return np.where(np.isnan(x), np.nan, np.where(x < 0, 2.0 - pos, pos))


try:  # SciPy's erf is the same function, ~10x faster; it is used when installed
    from scipy.special import erf as _erf_f64, erfc as _erfc_f64
except ImportError:
    _erf_f64, _erfc_f64 = erf_numpy, erfc_numpy


# float32 erf from NumPy's SIMD ufuncs, on a = |x|: a * P(a^2) for a < 1, and
# 1 - exp(-a^2) * Q(1 / (1 + a/2)) for 1 <= a <= 4 (erf rounds to 1 beyond), then x's sign.
# P and Q are least-squares fits (relative weight, Chebyshev nodes) to erf(sqrt(s))/sqrt(s)
# and erfc(a)*exp(a^2); evaluated in float32 the result is within 3 ulp of the exact erf
# (tests/ops/test_erf_float32.py). Cache-sized blocks, branch-free selects (a masked copy
# costs ten multiplies): about 3x faster than SciPy's erf on big float32 arrays.
_ERF_P = tuple(np.float32(c) for c in (
    1.1283791065216064, -0.37612318992614746, 0.11280130594968796, -0.02670994959771633,
    0.004916023463010788, -0.0005625396152026951))
_ERF_Q = tuple(np.float32(c) for c in (
    0.0012184159131720662, 0.26564621925354004, 0.37359389662742615, -0.01955215446650982,
    0.5935987830162048, -0.21440832316875458))
_ERF_BLOCK = 32768
_F32_ONE, _F32_HALF, _F32_FOUR = np.float32(1), np.float32(0.5), np.float32(4)
_SIGN_BIT = np.int32(-2 ** 31)


def _horner(coefs, x, out):
    """coefs[0] + coefs[1] * x + ... into `out`, with no temporaries."""
    np.multiply(x, coefs[-1], out=out)
    for c in coefs[-2:0:-1]:
        np.add(out, c, out=out)
        np.multiply(out, x, out=out)
    np.add(out, coefs[0], out=out)
    return out


def _erf_f32_block(x, out, tmp):
    a, s, q, m = tmp
    np.abs(x, out=a)
    np.minimum(a, _F32_FOUR, out=a)        # keeps inf out of the polynomials; NaN stays
    np.multiply(a, a, out=s)
    # big |x|: 1 - exp(-a^2) * Q(t), t = 1 / (1 + a/2)
    np.multiply(a, _F32_HALF, out=m)
    np.add(m, _F32_ONE, out=m)
    np.reciprocal(m, out=m)
    _horner(_ERF_Q, m, q)
    np.negative(s, out=m)
    np.exp(m, out=m)
    np.multiply(q, m, out=q)
    np.subtract(_F32_ONE, q, out=q)
    # small |x|: a * P(a^2), a^2 clamped so the unused values stay small and finite
    np.minimum(s, _F32_ONE, out=s)
    _horner(_ERF_P, s, out)
    np.multiply(out, a, out=out)
    # select with a 0/1 weight w = min(floor(a), 1): exact, and NaN-propagating
    np.floor(a, out=m)
    np.minimum(m, _F32_ONE, out=m)
    np.multiply(q, m, out=q)
    np.subtract(_F32_ONE, m, out=m)
    np.multiply(out, m, out=out)
    np.add(out, q, out=out)
    # erf is odd: copy x's sign bit onto the (non-negative) result
    bits = out.view(np.int32)
    sign = m.view(np.int32)
    np.bitwise_and(x.view(np.int32), _SIGN_BIT, out=sign)
    np.bitwise_or(bits, sign, out=bits)


def _erf_f32(a):
    """erf of a float32 array (any shape and strides) as a new contiguous float32 array."""
    flat = np.ascontiguousarray(a).reshape(-1)
    out = np.empty(flat.shape, np.float32)
    n = flat.size
    m = min(n, _ERF_BLOCK)
    tmp = tuple(np.empty(m, np.float32) for _ in range(4))
    for i in range(0, n, _ERF_BLOCK):
        j = min(i + _ERF_BLOCK, n)
        t = tmp if j - i == m else tuple(b[:j - i] for b in tmp)
        _erf_f32_block(flat[i:j], out[i:j], t)
    return out.reshape(a.shape)


def _erf_kernel(xp, a):
    # (type: a meta array takes the ufunc path, which refuses it; ascontiguousarray would
    # read its absent data)
    if a.dtype == np.float32 and a.size >= 4096 and type(a) is np.ndarray:
        return _erf_f32(a)
    return np.asarray(_erf_f64(a.astype(np.float64))).astype(a.dtype, copy=False)


def _erfc_kernel(xp, a):
    return np.asarray(_erfc_f64(a.astype(np.float64))).astype(a.dtype, copy=False)


def _erfinv_kernel(xp, a):
    """Inverse error function: an initial guess refined by Newton steps on math.erf."""
    x64 = a.astype(np.float64, copy=False)      # (astype: a meta array raises, as it must)
    with np.errstate(all="ignore"):
        w = np.log((1.0 - x64) * (1.0 + x64))   # ln(1 - x^2) <= 0 in the initial guess
        y = np.sign(x64) * np.sqrt(np.sqrt((2 / (math.pi * 0.147) + w / 2) ** 2 - w / 0.147)
                                   - (2 / (math.pi * 0.147) + w / 2))
        for _ in range(3):
            ok = np.isfinite(y)
            err = np.where(ok, _erf_f64(np.where(ok, y, 0)) - x64, 0)
            y = np.where(ok, y - err / (2 / math.sqrt(math.pi) * np.exp(-y * y)), y)
        y = np.where(x64 == 1, np.inf, np.where(x64 == -1, -np.inf, y))
        y = np.where(np.abs(x64) > 1, np.nan, y)
    return y.astype(a.dtype, copy=False)


TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
erf = _unary("erf", None, lambda g, self: g * TWO_OVER_SQRT_PI * (-(self * self)).exp(),
             kernel=_erf_kernel, lower=_lw.cmath("em_erf"),
             rule=only("bif", "erf_vml_cpu", dispatch.rule_float),
             onnx="Erf")
erfc = _unary("erfc", None, lambda g, self: -g * TWO_OVER_SQRT_PI * (-(self * self)).exp(),
              kernel=_erfc_kernel, rule=only("bif", "erfc_vml_cpu", dispatch.rule_float),
              onnx=_ox.erfc)
erfinv = _unary("erfinv", None,
                lambda g, result: g * (math.sqrt(math.pi) / 2) * (result * result).exp(),
                kernel=_erfinv_kernel, rule=only("bif", "erfinv_vml_cpu", dispatch.rule_float))


# ---- unary, same dtype as input ----
def _neg_kernel(xp, a):
    if a.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return xp.negative(a)


neg = _unary("neg", None, lambda g: -g, rule=rule_promote, errstate=False, kernel=_neg_kernel,
             names=("neg", "negative"), lower=Lower("(({T})-{a})"),
             onnx="Neg")
# for complex z: |z| is real and its gradient g * z / |z| (ops/complex_ops.py)
abs = _unary("abs", np.abs, lambda g, self: g * self.sgn(), rule=_cx.abs_rule,
             errstate=False, names=("abs", "absolute"), holomorphic=False,
             lower=Lower("fabs{f}({a})", c_int="(({T})({a} < 0 ? -{a} : {a}))"),
             onnx="Abs")


def _sign_kernel(xp, a):
    if a.dtype == np.bool_:
        return a.copy()
    r = xp.sign(a)
    return xp.where(xp.isnan(a), 0, r).astype(a.dtype) if a.dtype.kind == "f" else r


def _rule_square(dt, name):
    # square is pow(x, 2): a bool tensor with the int 2 promotes to int64
    return (D.int64, D.int64) if dt is D.bool_ else (dt, dt)


sign = _unary("sign", None, lambda g: _zeros(g), kernel=_sign_kernel,
             rule=no_complex("Unlike NumPy, torch.sign is not intended to support complex "
                             "numbers. Please use torch.sgn instead.", rule_promote),
             lower=Lower(_lw.sign_c),
             onnx="Sign")


def _sgn_kernel(xp, a):
    return _cx.sgn_kernel(xp, a) if a.dtype.kind == "c" else _sign_kernel(xp, a)


sgn = _unary("sgn", None, _cx.sgn_grad, rule=rule_promote, kernel=_sgn_kernel,
             holomorphic=False)
square = _unary("square", np.square, lambda g, self: 2 * g * self, rule=_rule_square,
                errstate=False, node_name="PowBackward0", lower=Lower("(({T})({a} * {a}))"),
                onnx=_ox.square)
reciprocal = _unary("reciprocal", np.reciprocal, lambda g, result: -g * result * result,
                    kernel=lambda xp, a: 1 / a, lower=Lower("((({T})1) / {a})", cost=COSTLY),
                    onnx="Reciprocal")


def _int_identity(f):
    return lambda xp, a: a.copy() if a.dtype.kind in "iub" else f(a)


floor = _unary("floor", None, lambda g: _zeros(g), rule=only("if", "floor_vml_cpu"),
               kernel=_int_identity(np.floor), lower=Lower("floor{f}({a})", c_int="{a}"),
               onnx="Floor")
ceil = _unary("ceil", None, lambda g: _zeros(g), rule=only("if", "ceil_vml_cpu"),
              kernel=_int_identity(np.ceil), lower=Lower("ceil{f}({a})", c_int="{a}"),
              onnx="Ceil")
trunc = _unary("trunc", None, lambda g: _zeros(g), rule=only("if", "trunc_vml_cpu"),
               kernel=_int_identity(np.trunc), names=("trunc", "fix"),
               lower=Lower("trunc{f}({a})", c_int="{a}"))
frac = _unary("frac", None, lambda g: g, rule=only("f", "frac_cpu"),
              kernel=lambda xp, a: a - xp.trunc(a))


def _round_kernel(xp, a, decimals=None):
    # `decimals` defaults to None, not 0: like PyTorch, round(int_tensor) is the identity but
    # round(int_tensor, decimals=0) has no integer kernel
    if a.dtype.kind in "iub":
        if decimals is not None:
            raise NotImplementedError(f'"round_cpu" not implemented for \'{_np_torch_name(a)}\'')
        return a.copy()
    return xp.round(a, decimals or 0)


round = _unary("round", None, lambda g: _zeros(g), rule=only("if", "round_vml_cpu"),
               kernel=_round_kernel, attrs={"decimals": None},
               lower=Lower("rint{f}({a})", c_int="{a}"),
               onnx="Round")   # half to even, like torch


# relu's zero in each dtype, as a read-only 0-d array: NumPy's cheapest second operand
# (a NumPy scalar there costs ~0.3 us more per call: the ufunc converts it first)
def _zero_array(t):
    z = np.zeros((), t)
    z.flags.writeable = False
    return z


_ZERO_OF = {np.dtype(t): _zero_array(t) for t in
            (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8)}


def _relu_kernel(xp, a):
    zero = _ZERO_OF.get(a.dtype)
    if zero is not None:
        return xp.maximum(a, zero)
    if a.dtype == np.bool_:
        raise RuntimeError('"clamp_min_cpu" not implemented for \'Bool\'')
    return xp.maximum(a, 0)


def _mask_positive(g, r):
    out = _native_threshold_backward(g, r)     # one C pass (ember/ops/native_pointwise.py)
    if out is not None:
        return out
    # g where r is not <= 0: a NaN output passes its gradient, as torch's threshold_backward
    keep = np.logical_not(r <= 0)
    out = g * keep               # ~7x faster than np.where here
    # a non-finite sum flags inf/NaN (or an overflow: then the exact path is merely slower)
    if out.dtype.kind == "f" and not math.isfinite(np.add.reduce(out, axis=None)):
        out = np.where(keep, g, 0)    # inf * 0 made NaN where the mask is off: be exact
    return out


# relu's derivative as one op: g where the output is positive (PyTorch's threshold_backward);
# a plain function in the `ufunc` slot takes dispatch's fast path for same-dtype tensors
_relu_backward = defpw("threshold_backward", _mask_positive, inputs=("self", "result"),
                       function=False, method=False, inplace=False,
                       node_name="ThresholdBackwardBackward0", lower=Lower(build=_lw.threshold_ir),
                       grads={"self": lambda g, result: _relu_backward(g, result),
                              "result": lambda g: _zeros(g)})
_PLAIN_MASK = (D.float32, D.float64)


def _relu_grad(g, result):
    if (g.dtype is result.dtype and g.dtype in _PLAIN_MASK and not dispatch.state.enabled
            and not dispatch.state.modes):
        # nothing to record, no mode watching: threshold_backward's own fast path, called
        # directly
        return dispatch.wrap(_mask_positive(g._data, result._data), g.dtype)
    return _relu_backward(g, result)


relu = _unary("relu", None, _relu_grad, errstate=False, kernel=_relu_kernel,
              rule=no_complex("clamp is not supported for complex types", rule_promote),
              lower=Lower("({a} < 0 ? ({T})0 : {a})"),
              onnx="Relu")   # keeps NaN (and -0.0) like torch


def _nan_to_num_kernel(xp, a, nan=0.0, posinf=None, neginf=None):
    # runs on float16/bfloat16 arrays as they are: infinities become *their* largest values
    if a.dtype.kind in "iub":
        return a.copy()
    info = D.finfo(D.FROM_NP[a.dtype])
    r = xp.where(xp.isnan(a), nan, a)
    r = xp.where(a == np.inf, info.max if posinf is None else posinf, r)
    r = xp.where(a == -np.inf, info.min if neginf is None else neginf, r)
    return r.astype(a.dtype, copy=False)


nan_to_num = _unary("nan_to_num", None, lambda g, self: g * self.isfinite(), rule=rule_promote,
                    native_lowp=True,                    kernel=_nan_to_num_kernel, attrs={"nan": 0.0, "posinf": None, "neginf": None})

_NAN_TO_NUM_INPLACE = _METHODS["nan_to_num_"]


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    if not self.dtype.is_floating_point:
        # PyTorch copies an integral tensor onto itself: nothing changes but the version
        self._bump_version()
        return self
    return _NAN_TO_NUM_INPLACE(self, nan=nan, posinf=posinf, neginf=neginf)


_METHODS["nan_to_num_"] = nan_to_num_
