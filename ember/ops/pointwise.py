"""Pointwise ops: one table row each — kernel, dtype rule, derivative formulas.

Formulas are written with ember ops on the incoming gradient `g`; their parameter names say
what they read (inputs by name, `result`, or attributes), which is all the node saves. The
engine reduces broadcast gradients back to each input's shape, so formulas never do.
"""
import math

import numpy as np

from .. import dispatch
from ..core import dtype as D
from ..dispatch import (rule_promote, rule_float, rule_compare, rule_to_bool, rule_integral,
                        rule_no_bool, torch_name, not_implemented, checked_scalar)
from .registry import OpDef, POINTWISE, register, METHODS as _METHODS
from .lowering import Lower, NO_INT, COSTLY
from . import lowering_pointwise as _lw


def defpw(name, ufunc=None, kernel=None, inputs=("self", "other"), rule=rule_promote,
          grads=None, attrs=None, names=None, method_names=None, inplace=True, precheck=None,
          exact_scalar=False, native_lowp=False, scalars_promote=True, **kw):
    """Define a pointwise op. `precheck(values, metas, promoted_dtype, attrs)`, if given, runs
    on the raw operands before conversion (checks that need scalars or per-operand dtypes).
    float16/bfloat16 compute in float32 with Python scalars first rounded to the low dtype,
    as PyTorch does, except with `exact_scalar` (mul, div keep the scalar exact) or
    `native_lowp` (the kernel runs on the low-precision array itself). Without
    `scalars_promote`, Python-scalar operands take no part in type promotion (lerp's weight)."""
    if kernel is None:
        kernel = (lambda xp, *a, _u=ufunc: _u(*a))
    op = OpDef(name, POINTWISE, kernel=kernel, ufunc=ufunc, inputs=inputs, dtype_rule=rule,
               grads=grads, attrs=attrs, inplace=inplace, **kw)
    op.precheck = precheck
    op.exact_scalar = exact_scalar
    op.native_lowp = native_lowp
    op.scalars_promote = scalars_promote
    fn, inplace_fn = dispatch.make_pointwise(op)
    register(op, fn, names=names, method_names=method_names,
             inplace_fn=inplace_fn if inplace else None)
    return fn


def _zeros(g):
    return g.mul(0)


KINDS = "bif"   # dtype kinds: bool, integral, floating


def only(kinds, kernel_name, base=rule_promote):
    """A dtype rule: PyTorch's NotImplementedError (naming its CPU kernel) unless the promoted
    dtype's kind is in `kinds` ("b" bool, "i" integral, "f" floating); then `base` decides."""
    def rule(dt, name):
        if KINDS[dt._kind] not in kinds:
            raise not_implemented(kernel_name, dt)
        return base(dt, name)
    return rule


def _np_torch_name(a):
    return torch_name(D.FROM_NP[a.dtype])


# ---- arithmetic ----
def _add_kernel(xp, a, b, alpha=1):
    return xp.add(a, xp.multiply(b, alpha) if alpha != 1 else b)


def _sub_kernel(xp, a, b, alpha=1):
    return xp.subtract(a, xp.multiply(b, alpha) if alpha != 1 else b)


def _check_alpha(values, metas, dt, attrs):
    alpha = attrs.get("alpha", 1)
    if isinstance(alpha, bool) and dt is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not dt.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def _check_sub(values, metas, dt, attrs):
    nbool = sum(d is D.bool_ for d, _ in metas)   # a bool Python scalar counts too
    if nbool == 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if nbool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    _check_alpha(values, metas, dt, attrs)


add = defpw("add", np.add, _add_kernel, attrs={"alpha": 1}, precheck=_check_alpha,
            lower=Lower("(({T})({a} + {b}))"),
            grads={"self": lambda g: g, "other": lambda g, alpha: g if alpha == 1 else g * alpha})
sub = defpw("sub", None, _sub_kernel, attrs={"alpha": 1}, names=("sub", "subtract"),
            lower=Lower("(({T})({a} - {b}))"),
            precheck=_check_sub,
            grads={"self": lambda g: g, "other": lambda g, alpha: -g if alpha == 1 else g * -alpha})
mul = defpw("mul", np.multiply, names=("mul", "multiply"), exact_scalar=True,
            scalars_as_tensors=True, lower=Lower("(({T})({a} * {b}))"),
            grads={"self": lambda g, other: g * other, "other": lambda g, self: g * self})
true_div = defpw("div", np.true_divide, rule=rule_float, errstate=True, exact_scalar=True,
                 scalars_as_tensors=True,
                 lower=Lower("({a} / {b})", c_int=NO_INT, cost=COSTLY),
                 names=("true_divide",), method_names=("true_divide",),
                 grads={"self": lambda g, other: g / other,
                        "other": lambda g, self, other: -g * self / (other * other)})


def _div_trunc_kernel(xp, a, b):
    if a.dtype.kind == "f" if isinstance(a, np.ndarray) else isinstance(a, float):
        return xp.trunc(xp.true_divide(a, b))
    q = xp.floor_divide(a, b)
    fix = (xp.remainder(a, b) != 0) & ((xp.asarray(a) < 0) != (xp.asarray(b) < 0))
    return q + fix


def _div_floor_kernel(xp, a, b):
    return xp.floor_divide(a, b)


_div_trunc = defpw("_div_trunc", None, _div_trunc_kernel, errstate=True, int_div_check=True,
                   rule=only("if", "div_trunc_cpu"),
                   function=False, method=False, node_name="DivBackward2", inplace=True,
                   grads={"self": lambda g: _zeros(g), "other": lambda g: _zeros(g)})
floor_divide = defpw("floor_divide", np.floor_divide, errstate=True, int_div_check=True,
                     rule=only("if", "div_floor_cpu"),
                     grads={"self": lambda g: _zeros(g), "other": lambda g: _zeros(g)})


def div(input, other, *, rounding_mode=None, out=None):
    """Divide: true division by default, or rounded with ``rounding_mode='trunc'|'floor'``.

    >>> ember.div(ember.tensor([7, -7]), 2, rounding_mode="trunc")
    tensor([ 3, -3])
    """
    if rounding_mode is None:
        return true_div(input, other, out=out)
    if rounding_mode == "trunc":
        return _div_trunc(input, other, out=out)
    if rounding_mode == "floor":
        return floor_divide(input, other, out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return self.true_divide_(other)
    if rounding_mode == "trunc":
        return _DIV_TRUNC_INPLACE(self, other)
    if rounding_mode == "floor":
        return self.floor_divide_(other)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


_DIV_TRUNC_INPLACE = _METHODS.pop("_div_trunc_")
for _n in ("div", "divide"):
    # with a rounding_mode keyword the call stays unfused; without, it is true division
    register(OpDef(_n, POINTWISE, method=True, lower=Lower(prim="div")), div, names=(_n,))
    _METHODS[_n + "_"] = div_

remainder = defpw("remainder", np.remainder, errstate=True, int_div_check=True,
                  rule=only("if", "remainder_cpu"),
                  grads={"self": lambda g: g,
                         "other": lambda g, self, other: -g * self.div(other,
                                                                      rounding_mode="floor")})
fmod = defpw("fmod", np.fmod, errstate=True, int_div_check=True, rule=only("if", "fmod_cpu"),
             grads={"self": lambda g: g,
                    "other": lambda g, self, other: -g * self.div(other, rounding_mode="trunc")})


def _check_pow(values, metas, dt, attrs):
    (a, (da, ca)), (b, (db, cb)) = zip(values, metas)
    if ca == 2 or cb == 2:                 # a Python scalar base or exponent
        if da is D.bool_ and db is D.bool_:
            if cb == 2:
                return                     # bool_tensor ** True stays bool
            raise not_implemented("pow", dt)
        if cb == 2 and not dt.is_floating_point and isinstance(b, int) and \
                not isinstance(b, bool):
            if b < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            if da is not D.bool_:
                info = np.iinfo(da.np)
                if not info.min <= b <= info.max:
                    raise RuntimeError(f"value cannot be converted to type {da.np.name}_t "
                                       "without overflow")
    elif dt is D.bool_:
        raise not_implemented("pow", dt)


def _pow_kernel(xp, a, b):
    if getattr(a, "dtype", None) == np.bool_ and isinstance(b, bool):
        return a.copy() if b else xp.ones_like(a)
    b_arr = xp.asarray(b)
    if b_arr.dtype.kind in "iu" and np.asarray(a).dtype.kind in "iub" and (b_arr < 0).any():
        # integer powers with negative integer tensor exponents, like PyTorch: 1 ** -n == 1,
        # (-1) ** -n == +-1 by parity, anything else (0 included) ** -n == 0
        neg = b_arr < 0
        r = xp.power(a, xp.where(neg, 0, b_arr))
        odd = (b_arr % 2) != 0
        inv = xp.where(xp.asarray(a) == 1, 1, xp.where(xp.asarray(a) == -1,
                                                       xp.where(odd, -1, 1), 0))
        return xp.where(neg, inv, r).astype(r.dtype, copy=False)
    return xp.power(a, b)


def _pow_self_grad(g, self, exponent):
    if not hasattr(exponent, "_data"):
        if exponent == 0:
            return _zeros(g)
        return g * exponent * self.pow(exponent - 1)
    return where(exponent == 0, 0.0, g * exponent * self.pow(exponent - 1))


def _pow_exp_grad(g, self, exponent, result):
    if not hasattr(self, "_data"):
        return g * result * math.log(self) if self > 0 else g * result * float("nan") \
            if self < 0 else _zeros(g)
    mask = (self == 0) & (exponent >= 0)
    return where(mask, 0.0, g * result * self.log())


pow = defpw("pow", None, _pow_kernel, inputs=("self", "exponent"), errstate=True,
            lower=Lower(_lw.pow_c, cost=COSTLY),
            precheck=_check_pow,
            grads={"self": _pow_self_grad, "exponent": _pow_exp_grad})
float_power = defpw("float_power", None,
                    lambda xp, a, b: xp.power(np.asarray(a, np.float64), b), errstate=True,
                    inputs=("self", "exponent"), inplace=False,
                    grads={"self": _pow_self_grad, "exponent": _pow_exp_grad})

atan2 = defpw("atan2", np.arctan2, rule=rule_float, names=("atan2", "arctan2"),
              grads={"self": lambda g, self, other: g * other / (self * self + other * other),
                     "other": lambda g, self, other: -g * self / (self * self + other * other)})
hypot = defpw("hypot", np.hypot, rule=only("f", "hypot_cpu"),
              grads={"self": lambda g, self, result: g * self / result,
                     "other": lambda g, other, result: g * other / result})


def _copysign_grad(g, self, result):
    return g * where(self == 0, 0.0, result / self)


copysign = defpw("copysign", np.copysign, rule=rule_float,
                 grads={"self": _copysign_grad, "other": lambda g: _zeros(g)})


def _max_grad(g, self, other, mine):
    half = where(self == other, g / 2, g)
    return half.masked_fill(self < other if mine else self > other, 0)


def _min_grad(g, self, other, mine):
    half = where(self == other, g / 2, g)
    return half.masked_fill(self > other if mine else self < other, 0)


maximum = defpw("maximum", np.maximum, inplace=False,   # NaN in either argument gives NaN
                lower=Lower("(({a} > {b} || {a} != {a}) ? {a} : {b})",
                            c_int="({a} > {b} ? {a} : {b})"),
                grads={"self": lambda g, self, other: _max_grad(g, self, other, True),
                       "other": lambda g, self, other: _max_grad(g, self, other, False)})
minimum = defpw("minimum", np.minimum, inplace=False,
                lower=Lower("(({a} < {b} || {a} != {a}) ? {a} : {b})",
                            c_int="({a} < {b} ? {a} : {b})"),
                grads={"self": lambda g, self, other: _min_grad(g, self, other, True),
                       "other": lambda g, self, other: _min_grad(g, self, other, False)})
fmax = defpw("fmax", np.fmax, inplace=False,
             grads={"self": lambda g, self, other: g.masked_fill(
                 ((self >= other) | other.isnan()).logical_not(), 0),
                 "other": lambda g, self, other: g.masked_fill((self >= other) | other.isnan(), 0)})
fmin = defpw("fmin", np.fmin, inplace=False,
             grads={"self": lambda g, self, other: g.masked_fill(
                 ((self <= other) | other.isnan()).logical_not(), 0),
                 "other": lambda g, self, other: g.masked_fill((self <= other) | other.isnan(), 0)})


# ---- ternary ----
def _lerp_kernel(xp, a, b, w):
    w = xp.asarray(w, dtype=a.dtype) if not isinstance(w, np.ndarray) else w
    return xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


# PyTorch names dtypes by their C++ types in some messages
CPP_NAMES = D.CPP_NAMES


def _check_lerp(values, metas, dt, attrs):
    # no promotion between input and end (or a weight with dims); a 0-dim weight may differ
    (d0, _), (d1, _), (d2, c2) = metas
    for what, d in (("end", d1), ("weight", d2 if c2 == 0 else d0)):
        if d is not d0:
            raise RuntimeError(f"expected dtype {CPP_NAMES[d0.name]} for `{what}` but got dtype "
                               f"{CPP_NAMES[d.name]}")
    if not d0.is_floating_point:
        raise not_implemented("lerp_kernel_scalar" if c2 == 2 else "lerp_kernel_tensor", d0)


lerp = defpw("lerp", None, _lerp_kernel, inputs=("self", "end", "weight"), errstate=True,
             precheck=_check_lerp, scalars_promote=False,
             grads={"self": lambda g, weight: g * (1 - weight),
                    "end": lambda g, weight: g * weight,
                    "weight": lambda g, self, end: g * (end - self)})


def _addcmul_kernel(xp, a, t1, t2, value=1):
    dt = xp.result_type(a, t1, t2)
    if dt.kind in "iu" and value != 1:
        # PyTorch converts `value` to the integral result type (-1 wraps for uint8)
        value = xp.asarray(int(value)).astype(dt)
    return a + value * (t1 * t2) if value != 1 else a + t1 * t2


def _addcdiv_kernel(xp, a, t1, t2, value=1):
    return a + value * (t1 / t2)


def _check_value(values, metas, dt, attrs):
    checked_scalar(attrs.get("value", 1), dt)     # `value` must fit the result dtype


def _check_addcdiv(values, metas, dt, attrs):
    _check_value(values, metas, dt, attrs)
    if metas[1][0]._kind < 2 and metas[2][0]._kind < 2:   # bool or integral tensor1, tensor2
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float "
                           "inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")


addcmul = defpw("addcmul", None, _addcmul_kernel, inputs=("self", "tensor1", "tensor2"),
                attrs={"value": 1}, rule=only("if", "addcmul_cpu_out"), precheck=_check_value,
                grads={"self": lambda g: g,
                       "tensor1": lambda g, tensor2, value: g * tensor2 * value,
                       "tensor2": lambda g, tensor1, value: g * tensor1 * value})
addcdiv = defpw("addcdiv", None, _addcdiv_kernel, inputs=("self", "tensor1", "tensor2"),
                attrs={"value": 1}, errstate=True, precheck=_check_addcdiv,
                grads={"self": lambda g: g,
                       "tensor1": lambda g, tensor2, value: g * value / tensor2,
                       "tensor2": lambda g, tensor1, tensor2, value:
                           -g * value * tensor1 / (tensor2 * tensor2)})


# ---- unary math: float results for integer inputs ----
LN2 = math.log(2.0)
LN10 = math.log(10.0)


def _unary(name, ufunc, grad, rule=rule_float, errstate=True, names=None, kernel=None, **kw):
    return defpw(name, ufunc, kernel, inputs=("self",), rule=rule, errstate=errstate,
                 grads={"self": grad} if grad else None, names=names, **kw)


exp = _unary("exp", np.exp, lambda g, result: g * result, lower=_lw.cmath("em_exp"))
exp2 = _unary("exp2", np.exp2, lambda g, result: g * result * LN2)
expm1 = _unary("expm1", np.expm1, lambda g, result: g * (result + 1),
               lower=_lw.cmath("em_expm1"))
log = _unary("log", np.log, lambda g, self: g / self, lower=_lw.cmath("em_log"))
log2 = _unary("log2", np.log2, lambda g, self: g / (self * LN2))
log10 = _unary("log10", np.log10, lambda g, self: g / (self * LN10))
log1p = _unary("log1p", np.log1p, lambda g, self: g / (self + 1), lower=_lw.cmath("em_log1p"))
sqrt = _unary("sqrt", np.sqrt, lambda g, result: g / (2 * result),
              lower=Lower("sqrt{f}({a})", c_int=NO_INT, cost=COSTLY))
rsqrt = _unary("rsqrt", None, lambda g, result: -0.5 * g * result * result * result,
               kernel=lambda xp, a: 1 / xp.sqrt(a),
               lower=Lower("((({T})1) / sqrt{f}({a}))", c_int=NO_INT, cost=COSTLY))
# sin and cos are libm's (scalar) in C
sin = _unary("sin", np.sin, lambda g, self: g * self.cos(), lower=_lw.cmath("sin"))
cos = _unary("cos", np.cos, lambda g, self: -g * self.sin(), lower=_lw.cmath("cos"))
tan = _unary("tan", np.tan, lambda g, result: g * (1 + result * result))
asin = _unary("asin", np.arcsin, lambda g, self: g / (1 - self * self).sqrt(),
              names=("asin", "arcsin"))
acos = _unary("acos", np.arccos, lambda g, self: -g / (1 - self * self).sqrt(),
              names=("acos", "arccos"))
atan = _unary("atan", np.arctan, lambda g, self: g / (1 + self * self), names=("atan", "arctan"))
sinh = _unary("sinh", np.sinh, lambda g, self: g * self.cosh())
cosh = _unary("cosh", np.cosh, lambda g, self: g * self.sinh())
tanh = _unary("tanh", np.tanh, lambda g, result: g * (1 - result * result),
              lower=_lw.cmath("em_tanh"))
asinh = _unary("asinh", np.arcsinh, lambda g, self: g / (self * self + 1).sqrt(),
               names=("asinh", "arcsinh"))
acosh = _unary("acosh", np.arccosh, lambda g, self: g / (self * self - 1).sqrt(),
               names=("acosh", "arccosh"))
atanh = _unary("atanh", np.arctanh, lambda g, self: g / (1 - self * self),
               names=("atanh", "arctanh"))


def _sigmoid_kernel(xp, a):
    return 1 / (1 + xp.exp(-a))


sigmoid = _unary("sigmoid", None, lambda g, result: g * result * (1 - result),
                 kernel=_sigmoid_kernel, lower=_lw.cmath("em_sigmoid"))


def _logit_kernel(xp, a, eps=None):
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    return xp.log(a / (1 - a))


def _logit_grad(g, self, eps):
    if eps is None:
        return g / (self * (1 - self))
    inside = (self >= eps) & (self <= 1 - eps)
    return where(inside, g / (self * (1 - self)), 0.0)


logit = _unary("logit", None, _logit_grad, kernel=_logit_kernel, attrs={"eps": None})

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
    if a.dtype == np.float32 and a.size >= 4096:
        return _erf_f32(a)
    return np.asarray(_erf_f64(a.astype(np.float64))).astype(a.dtype, copy=False)


def _erfc_kernel(xp, a):
    return np.asarray(_erfc_f64(a.astype(np.float64))).astype(a.dtype, copy=False)


def _erfinv_kernel(xp, a):
    """Inverse error function: an initial guess refined by Newton steps on math.erf."""
    x64 = np.asarray(a, np.float64)
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
             kernel=_erf_kernel, lower=_lw.cmath("em_erf"))
erfc = _unary("erfc", None, lambda g, self: -g * TWO_OVER_SQRT_PI * (-(self * self)).exp(),
              kernel=_erfc_kernel)
erfinv = _unary("erfinv", None,
                lambda g, result: g * (math.sqrt(math.pi) / 2) * (result * result).exp(),
                kernel=_erfinv_kernel)


# ---- unary, same dtype as input ----
def _neg_kernel(xp, a):
    if a.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return xp.negative(a)


neg = _unary("neg", None, lambda g: -g, rule=rule_promote, errstate=False, kernel=_neg_kernel,
             names=("neg", "negative"), lower=Lower("(({T})-{a})"))
abs = _unary("abs", np.abs, lambda g, self: g * self.sign(), rule=only("if", "abs_cpu"),
             errstate=False, names=("abs", "absolute"),
             lower=Lower("fabs{f}({a})", c_int="(({T})({a} < 0 ? -{a} : {a}))"))


def _sign_kernel(xp, a):
    if a.dtype == np.bool_:
        return a.copy()
    r = xp.sign(a)
    return xp.where(xp.isnan(a), 0, r).astype(a.dtype) if a.dtype.kind == "f" else r


def _rule_square(dt, name):
    # square is pow(x, 2): a bool tensor with the int 2 promotes to int64
    return (D.int64, D.int64) if dt is D.bool_ else (dt, dt)


sign = _unary("sign", None, lambda g: _zeros(g), rule=rule_promote, kernel=_sign_kernel,
             lower=Lower(_lw.sign_c))
sgn = _unary("sgn", None, lambda g: _zeros(g), rule=rule_promote, kernel=_sign_kernel)
square = _unary("square", np.square, lambda g, self: 2 * g * self, rule=_rule_square,
                errstate=False, node_name="PowBackward0", lower=Lower("(({T})({a} * {a}))"))
reciprocal = _unary("reciprocal", np.reciprocal, lambda g, result: -g * result * result,
                    kernel=lambda xp, a: 1 / a, lower=Lower("((({T})1) / {a})", cost=COSTLY))


def _int_identity(f):
    return lambda xp, a: a.copy() if a.dtype.kind in "iub" else f(a)


floor = _unary("floor", None, lambda g: _zeros(g), rule=only("if", "floor_vml_cpu"),
               kernel=_int_identity(np.floor), lower=Lower("floor{f}({a})", c_int="{a}"))
ceil = _unary("ceil", None, lambda g: _zeros(g), rule=only("if", "ceil_vml_cpu"),
              kernel=_int_identity(np.ceil), lower=Lower("ceil{f}({a})", c_int="{a}"))
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
               lower=Lower("rint{f}({a})", c_int="{a}"))   # half to even, like torch


# relu's zero in each dtype: a same-dtype scalar is NumPy's cheapest second operand
_ZERO_OF = {np.dtype(t): np.dtype(t).type(0) for t in
            (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8)}


def _relu_kernel(xp, a):
    zero = _ZERO_OF.get(a.dtype)
    if zero is not None:
        return xp.maximum(a, zero)
    if a.dtype == np.bool_:
        raise RuntimeError('"clamp_min_cpu" not implemented for \'Bool\'')
    return xp.maximum(a, 0)


def _mask_positive(g, r):
    out = g * (r > 0)            # ~7x faster than np.where here
    # a non-finite sum flags inf/NaN (or an overflow: then the exact path is merely slower)
    if out.dtype.kind == "f" and not math.isfinite(np.add.reduce(out, axis=None)):
        out = np.where(r > 0, g, 0)   # inf * 0 made NaN where the mask is off: be exact
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


relu = _unary("relu", None, _relu_grad, rule=rule_promote, errstate=False, kernel=_relu_kernel,
              lower=Lower("({a} < 0 ? ({T})0 : {a})"))   # keeps NaN (and -0.0) like torch


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

def positive(input):
    """``+x``: `x` itself (bool tensors have no unary plus in PyTorch)."""
    if input.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _invert(input):
    """``~x``: bitwise_not, but a TypeError (not bitwise_not's error) for floating tensors."""
    if input.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(input)


register(OpDef("positive", POINTWISE), positive)
register(OpDef("_invert", POINTWISE, method=False), _invert)

# ---- predicates and comparisons (boolean results, not differentiable) ----
isnan = _unary("isnan", np.isnan, None, rule=rule_to_bool, errstate=False, inplace=False,
               lower=Lower("((uint8_t)({a} != {a}))"))
isinf = _unary("isinf", np.isinf, None, rule=rule_to_bool, errstate=False, inplace=False)
isfinite = _unary("isfinite", np.isfinite, None, rule=rule_to_bool, errstate=False,
                  inplace=False)
isposinf = _unary("isposinf", np.isposinf, None, rule=rule_to_bool, errstate=False,
                  inplace=False)
isneginf = _unary("isneginf", np.isneginf, None, rule=rule_to_bool, errstate=False,
                  inplace=False)
signbit = _unary("signbit", np.signbit, None, rule=rule_to_bool, errstate=False, inplace=False)
logical_not = _unary("logical_not", np.logical_not, None, rule=rule_to_bool, errstate=False,
                     lower=Lower("((uint8_t)({a} == 0))"))
eq = defpw("eq", np.equal, rule=rule_compare, lower=_lw.compare("=="))
ne = defpw("ne", np.not_equal, rule=rule_compare, names=("ne", "not_equal"),
           lower=_lw.compare("!="))
lt = defpw("lt", np.less, rule=rule_compare, names=("lt", "less"), lower=_lw.compare("<"))
le = defpw("le", np.less_equal, rule=rule_compare, names=("le", "less_equal"),
           lower=_lw.compare("<="))
gt = defpw("gt", np.greater, rule=rule_compare, names=("gt", "greater"), lower=_lw.compare(">"))
ge = defpw("ge", np.greater_equal, rule=rule_compare, names=("ge", "greater_equal"),
           lower=_lw.compare(">="))
logical_and = defpw("logical_and", np.logical_and, rule=rule_to_bool,
                    lower=Lower("((uint8_t)(({a} != 0) & ({b} != 0)))", compare=True))
logical_or = defpw("logical_or", np.logical_or, rule=rule_to_bool,
                   lower=Lower("((uint8_t)(({a} != 0) | ({b} != 0)))", compare=True))
logical_xor = defpw("logical_xor", np.logical_xor, rule=rule_to_bool)
bitwise_and = defpw("bitwise_and", np.bitwise_and, rule=rule_integral)
bitwise_or = defpw("bitwise_or", np.bitwise_or, rule=rule_integral)
bitwise_xor = defpw("bitwise_xor", np.bitwise_xor, rule=rule_integral)
bitwise_not = _unary("bitwise_not", np.invert, None, rule=rule_integral, errstate=False)
# NumPy, like PyTorch, gives 0 (or the sign for >>) for shifts by a negative or >= width count
bitwise_left_shift = defpw("bitwise_left_shift", np.left_shift, rule=only("i", "lshift_cpu"))
bitwise_right_shift = defpw("bitwise_right_shift", np.right_shift, rule=only("i", "rshift_cpu"))


def _isclose_kernel(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _check_same_dtype(values, metas, dt, attrs):
    (da, _), (db, _) = metas
    if da is not db:
        raise RuntimeError(f"{torch_name(da)} did not match {torch_name(db)}")


isclose = defpw("isclose", None, _isclose_kernel, rule=rule_compare, inplace=False,
                precheck=_check_same_dtype,
                attrs={"rtol": 1e-05, "atol": 1e-08, "equal_nan": False})


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every element of `input` is close to `other` (see ``isclose``)."""
    return bool(isclose(input, other, rtol=rtol, atol=atol, equal_nan=equal_nan).all())


def equal(input, other):
    """True if both tensors have the same shape and the same elements."""
    if input.shape != other.shape:
        return False
    return bool(eq(input, other).all())


register(OpDef("allclose", POINTWISE), allclose)
register(OpDef("equal", POINTWISE), equal)


# ---- where and clamp: inputs that are optional or not promoted ----
def _where_kernel(xp, cond, a, b):
    return xp.where(cond, a, b)


def _where_rule_check(cond):
    from ..core.tensor import Tensor
    if isinstance(cond, Tensor) and cond.dtype.name not in ("bool", "uint8"):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {dispatch.torch_name(cond.dtype)}")


_where = defpw("_where", None, _where_kernel, inputs=("condition", "self", "other"),
               function=False, method=False, inplace=False, node_name="WhereBackward0",
               grads={"self": lambda g, condition: _where_grad(g, condition, True),
                      "other": lambda g, condition: _where_grad(g, condition, False)})


def _where_grad(g, condition, first):
    from .creation import zeros_like
    z = zeros_like(g)
    return _where(condition, g, z) if first else _where(condition, z, g)


def where(condition, input=None, other=None, *, out=None):
    """``where(cond, x, y)`` picks from `x` where `cond` holds, else from `y`;
    ``where(cond)`` is ``nonzero(cond, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    _where_rule_check(condition)
    from ..core.tensor import Tensor
    if not isinstance(condition, Tensor):
        from .creation import tensor
        condition = tensor(condition)
    return _where_call(condition, input, other, out)


def _where_call(condition, input, other, out):
    # the condition takes no part in type promotion: promote input/other, then select
    from .. import core
    vals = [dispatch.operand(x) for x in (input, other)]
    dt = core.dtype.result_type_of([(d, c) for _, d, c in vals])
    from ..core.tensor import Tensor
    # Python scalars must fit the result dtype (where(c, 128, int8_tensor) is an error)
    a = input.to(dt) if isinstance(input, Tensor) else checked_scalar(input, dt)
    b = other.to(dt) if isinstance(other, Tensor) else checked_scalar(other, dt)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        from .creation import tensor
        a = tensor(a, dtype=dt)
    cond = condition if condition.dtype.name == "bool" else condition.bool()
    r = _where(cond, a, b, out=out)
    return r


def _where_method(self, condition, other):
    """``x.where(cond, y)`` is ``where(cond, x, y)``."""
    return where(condition, self, other)


register(OpDef("where", POINTWISE, method=False, inputs=("condition", "input", "other"),
              lower=Lower("({a} ? {b} : {c})", build=_lw.where_ir, np=_lw.where_np)), where)
_METHODS["where"] = _where_method


def _clamp_kernel(xp, a, lo, hi):
    if lo is not None:
        a = xp.maximum(a, lo)
    if hi is not None:
        a = xp.minimum(a, hi)
    return a


def _clamp_self_grad(g, self, min, max):
    mask = None
    if min is not None:
        mask = self >= min
    if max is not None:
        m2 = self <= max
        mask = m2 if mask is None else mask & m2
    return g * mask


def _clamp_min_grad(g, self, min):
    return g * (self < min)


def _clamp_max_grad(g, self, max):
    return g * (self > max)


def _check_clamp(values, metas, dt, attrs):
    # bool has only PyTorch's one-tensor-bound kernels (they are maximum/minimum)
    bounds = [c for _, c in metas[1:] if c >= 0]
    if dt is D.bool_ and (len(bounds) != 1 or bounds[0] == 2):
        raise not_implemented("clamp_scalar_cpu" if 2 in bounds else "clamp_cpu", dt)
    for v, (_, c) in zip(values[1:], metas[1:]):
        if c == 2:
            checked_scalar(v, dt)     # Python bounds must fit the result dtype


_clamp = defpw("_clamp", None, _clamp_kernel, inputs=("self", "min", "max"), function=False,
               precheck=_check_clamp,
               method=False, node_name="ClampBackward1", inplace=True,
               grads={"self": _clamp_self_grad, "min": _clamp_min_grad, "max": _clamp_max_grad})


def clamp(input, min=None, max=None, *, out=None):
    """Limit every element to ``[min, max]`` (either bound may be None, a number or a tensor).

    >>> ember.tensor([-2., 0.5, 3.]).clamp(0, 1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    min, max = _check_bounds(min, max)
    return _clamp(input, min, max, out=out)


def _check_bounds(min, max):
    """PyTorch has clamp(Tensor, Number?, Number?) and clamp(Tensor, Tensor?, Tensor?): a
    tensor bound with a number bound is a TypeError, unless it is 0-dim (then a number)."""
    from ..core.tensor import Tensor
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None and \
            max is not None:
        if (min if isinstance(min, Tensor) else max).dim() != 0:
            raise TypeError("clamp() received an invalid combination of arguments: min and max "
                            "must both be numbers or both be tensors")
        min, max = (b.item() if isinstance(b, Tensor) else b for b in (min, max))
    return min, max


def clamp_(self, min=None, max=None):
    min, max = _check_bounds(min, max)
    return _CLAMP_INPLACE(self, min, max)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


_CLAMP_INPLACE = _METHODS.pop("_clamp_", None)
for _n in ("clamp", "clip"):
    register(OpDef(_n, POINTWISE, lower=Lower(build=_lw.clamp_ir, kwargs=("min", "max"))),
             clamp, names=(_n,))
    _METHODS[_n + "_"] = clamp_
register(OpDef("clamp_min", POINTWISE), clamp_min)
register(OpDef("clamp_max", POINTWISE), clamp_max)
_METHODS["clamp_min_"] = lambda self, min: clamp_(self, min=min)
_METHODS["clamp_max_"] = lambda self, max: clamp_(self, max=max)


def masked_fill(input, mask, value):
    """`input` with `value` written where the boolean `mask` holds (mask broadcasts)."""
    from ..core.tensor import Tensor
    if mask.dtype.name != "bool":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{dispatch.torch_name(mask.dtype)}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.dim()} dimension(s).")
        checked_scalar(value.item(), input.dtype)
        v = value.to(input.dtype)
    else:
        v = dispatch.wrap(np.asarray(checked_scalar(value, input.dtype)).astype(input.dtype.np),
                          input.dtype)
    return _where(mask, v, input)     # input and mask broadcast together


def masked_fill_(self, mask, value):
    r = masked_fill(self, mask, value)
    if tuple(r.shape) != tuple(self.shape):   # in place, the mask may not grow self
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(r.shape)}")
    return self.copy_(r)


register(OpDef("masked_fill", POINTWISE), masked_fill)
_METHODS["masked_fill_"] = masked_fill_
