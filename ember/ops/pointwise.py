"""Pointwise ops: one table row each — kernel, dtype rule, derivative formulas.

Formulas are written with ember ops on the incoming gradient `g`; their parameter names say
what they read (inputs by name, `result`, or attributes), which is all the node saves. The
engine reduces broadcast gradients back to each input's shape, so formulas never do.
"""
import math

import numpy as np

from .. import dispatch
from ..dispatch import (rule_promote, rule_float, rule_compare, rule_to_bool, rule_integral,
                        rule_no_bool)
from .registry import OpDef, POINTWISE, register


def defpw(name, ufunc=None, kernel=None, inputs=("self", "other"), rule=rule_promote,
          grads=None, attrs=None, names=None, method_names=None, inplace=True, **kw):
    if kernel is None:
        kernel = (lambda xp, *a, _u=ufunc: _u(*a))
    op = OpDef(name, POINTWISE, kernel=kernel, ufunc=ufunc, inputs=inputs, dtype_rule=rule,
               grads=grads, attrs=attrs, inplace=inplace, **kw)
    fn, inplace_fn = dispatch.make_pointwise(op)
    register(op, fn, names=names, method_names=method_names,
             inplace_fn=inplace_fn if inplace else None)
    return fn


def _zeros(g):
    return g.mul(0)


# ---- arithmetic ----
def _add_kernel(xp, a, b, alpha=1):
    return xp.add(a, xp.multiply(b, alpha) if alpha != 1 else b)


def _sub_kernel(xp, a, b, alpha=1):
    if isinstance(a, np.ndarray) and a.dtype == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return xp.subtract(a, xp.multiply(b, alpha) if alpha != 1 else b)


add = defpw("add", np.add, _add_kernel, attrs={"alpha": 1},
            grads={"self": lambda g: g, "other": lambda g, alpha: g if alpha == 1 else g * alpha})
sub = defpw("sub", None, _sub_kernel, attrs={"alpha": 1}, names=("sub", "subtract"),
            grads={"self": lambda g: g, "other": lambda g, alpha: -g if alpha == 1 else g * -alpha})
mul = defpw("mul", np.multiply, names=("mul", "multiply"),
            grads={"self": lambda g, other: g * other, "other": lambda g, self: g * self})
true_div = defpw("div", np.true_divide, rule=rule_float, errstate=True,
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
                   function=False, method=False, node_name="DivBackward2", inplace=False,
                   grads={"self": lambda g: _zeros(g), "other": lambda g: _zeros(g)})
floor_divide = defpw("floor_divide", np.floor_divide, errstate=True, int_div_check=True,
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
    return self.copy_(div(self, other, rounding_mode=rounding_mode))


for _n in ("div", "divide"):
    register(OpDef(_n, POINTWISE, method=True), div, names=(_n,))
    from .registry import METHODS as _M
    _M[_n + "_"] = div_

remainder = defpw("remainder", np.remainder, errstate=True, int_div_check=True,
                  grads={"self": lambda g: g,
                         "other": lambda g, self, other: -g * self.div(other,
                                                                      rounding_mode="floor")})
fmod = defpw("fmod", np.fmod, errstate=True, int_div_check=True,
             grads={"self": lambda g: g,
                    "other": lambda g, self, other: -g * self.div(other, rounding_mode="trunc")})


def _pow_kernel(xp, a, b):
    a_int = (a.dtype.kind in "iub") if isinstance(a, np.ndarray) else isinstance(a, int)
    b_arr = np.asarray(b)
    if a_int and b_arr.dtype.kind in "iu" and np.any(b_arr < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return xp.power(a, b)


def _pow_self_grad(g, self, exponent):
    from .. import where
    if not hasattr(exponent, "_data"):
        if exponent == 0:
            return _zeros(g)
        return g * exponent * self.pow(exponent - 1)
    return where(exponent == 0, 0.0, g * exponent * self.pow(exponent - 1))


def _pow_exp_grad(g, self, exponent, result):
    from .. import where
    if not hasattr(self, "_data"):
        return g * result * math.log(self) if self > 0 else g * result * float("nan") \
            if self < 0 else _zeros(g)
    mask = (self == 0) & (exponent >= 0)
    return where(mask, 0.0, g * result * self.log())


pow = defpw("pow", None, _pow_kernel, inputs=("self", "exponent"), errstate=True,
            grads={"self": _pow_self_grad, "exponent": _pow_exp_grad})
float_power = defpw("float_power", None,
                    lambda xp, a, b: xp.power(np.asarray(a, np.float64), b), errstate=True,
                    inputs=("self", "exponent"), inplace=False,
                    grads={"self": _pow_self_grad, "exponent": _pow_exp_grad})

atan2 = defpw("atan2", np.arctan2, rule=rule_float, names=("atan2", "arctan2"),
              grads={"self": lambda g, self, other: g * other / (self * self + other * other),
                     "other": lambda g, self, other: -g * self / (self * self + other * other)})
hypot = defpw("hypot", np.hypot, rule=rule_float,
              grads={"self": lambda g, self, result: g * self / result,
                     "other": lambda g, other, result: g * other / result})


def _copysign_grad(g, self, result):
    from .. import where
    return g * where(self == 0, 0.0, result / self)


copysign = defpw("copysign", np.copysign, rule=rule_float,
                 grads={"self": _copysign_grad, "other": lambda g: _zeros(g)})


def _max_grad(g, self, other, mine):
    from .. import where
    half = where(self == other, g / 2, g)
    return half.masked_fill(self < other if mine else self > other, 0)


def _min_grad(g, self, other, mine):
    from .. import where
    half = where(self == other, g / 2, g)
    return half.masked_fill(self > other if mine else self < other, 0)


maximum = defpw("maximum", np.maximum, inplace=False,
                grads={"self": lambda g, self, other: _max_grad(g, self, other, True),
                       "other": lambda g, self, other: _max_grad(g, self, other, False)})
minimum = defpw("minimum", np.minimum, inplace=False,
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


lerp = defpw("lerp", None, _lerp_kernel, inputs=("self", "end", "weight"), errstate=True,
             grads={"self": lambda g, weight: g * (1 - weight),
                    "end": lambda g, weight: g * weight,
                    "weight": lambda g, self, end: g * (end - self)})


def _addcmul_kernel(xp, a, t1, t2, value=1):
    return a + value * (t1 * t2) if value != 1 else a + t1 * t2


def _addcdiv_kernel(xp, a, t1, t2, value=1):
    if all(isinstance(x, np.ndarray) and x.dtype.kind in "iub" for x in (t1, t2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float "
                           "inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    return a + value * (t1 / t2)


addcmul = defpw("addcmul", None, _addcmul_kernel, inputs=("self", "tensor1", "tensor2"),
                attrs={"value": 1},
                grads={"self": lambda g: g,
                       "tensor1": lambda g, tensor2, value: g * tensor2 * value,
                       "tensor2": lambda g, tensor1, value: g * tensor1 * value})
addcdiv = defpw("addcdiv", None, _addcdiv_kernel, inputs=("self", "tensor1", "tensor2"),
                attrs={"value": 1}, errstate=True,
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


exp = _unary("exp", np.exp, lambda g, result: g * result)
exp2 = _unary("exp2", np.exp2, lambda g, result: g * result * LN2)
expm1 = _unary("expm1", np.expm1, lambda g, result: g * (result + 1))
log = _unary("log", np.log, lambda g, self: g / self)
log2 = _unary("log2", np.log2, lambda g, self: g / (self * LN2))
log10 = _unary("log10", np.log10, lambda g, self: g / (self * LN10))
log1p = _unary("log1p", np.log1p, lambda g, self: g / (self + 1))
sqrt = _unary("sqrt", np.sqrt, lambda g, result: g / (2 * result))
rsqrt = _unary("rsqrt", None, lambda g, result: -0.5 * g * result * result * result,
               kernel=lambda xp, a: 1 / xp.sqrt(a))
sin = _unary("sin", np.sin, lambda g, self: g * self.cos())
cos = _unary("cos", np.cos, lambda g, self: -g * self.sin())
tan = _unary("tan", np.tan, lambda g, result: g * (1 + result * result))
asin = _unary("asin", np.arcsin, lambda g, self: g / (1 - self * self).sqrt(),
              names=("asin", "arcsin"))
acos = _unary("acos", np.arccos, lambda g, self: -g / (1 - self * self).sqrt(),
              names=("acos", "arccos"))
atan = _unary("atan", np.arctan, lambda g, self: g / (1 + self * self), names=("atan", "arctan"))
sinh = _unary("sinh", np.sinh, lambda g, self: g * self.cosh())
cosh = _unary("cosh", np.cosh, lambda g, self: g * self.sinh())
tanh = _unary("tanh", np.tanh, lambda g, result: g * (1 - result * result))
asinh = _unary("asinh", np.arcsinh, lambda g, self: g / (self * self + 1).sqrt(),
               names=("asinh", "arcsinh"))
acosh = _unary("acosh", np.arccosh, lambda g, self: g / (self * self - 1).sqrt(),
               names=("acosh", "arccosh"))
atanh = _unary("atanh", np.arctanh, lambda g, self: g / (1 - self * self),
               names=("atanh", "arctanh"))


def _sigmoid_kernel(xp, a):
    return 1 / (1 + xp.exp(-a))


sigmoid = _unary("sigmoid", None, lambda g, result: g * result * (1 - result),
                 kernel=_sigmoid_kernel)


def _logit_kernel(xp, a, eps=None):
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    return xp.log(a / (1 - a))


def _logit_grad(g, self, eps):
    if eps is None:
        return g / (self * (1 - self))
    from .. import where
    inside = (self >= eps) & (self <= 1 - eps)
    return where(inside, g / (self * (1 - self)), 0.0)


logit = _unary("logit", None, _logit_grad, kernel=_logit_kernel, attrs={"eps": None})

_erf_v = np.vectorize(math.erf, otypes=[np.float64])
_erfc_v = np.vectorize(math.erfc, otypes=[np.float64])


def _erf_kernel(xp, a):
    return _erf_v(a).astype(a.dtype, copy=False) if a.size else a.copy()


def _erfc_kernel(xp, a):
    return _erfc_v(a).astype(a.dtype, copy=False) if a.size else a.copy()


def _erfinv_kernel(xp, a):
    """Inverse error function: an initial guess refined by Newton steps on math.erf."""
    x64 = np.asarray(a, np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - x64) * (1.0 + x64))
        y = np.sign(x64) * np.sqrt(np.sqrt((2 / (math.pi * 0.147) + w / 2) ** 2 - w / 0.147)
                                   - (2 / (math.pi * 0.147) + w / 2))
        for _ in range(3):
            ok = np.isfinite(y)
            err = np.where(ok, _erf_v(np.where(ok, y, 0)) - x64, 0)
            y = np.where(ok, y - err / (2 / math.sqrt(math.pi) * np.exp(-y * y)), y)
        y = np.where(x64 == 1, np.inf, np.where(x64 == -1, -np.inf, y))
        y = np.where(np.abs(x64) > 1, np.nan, y)
    return y.astype(a.dtype, copy=False)


TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
erf = _unary("erf", None, lambda g, self: g * TWO_OVER_SQRT_PI * (-(self * self)).exp(),
             kernel=_erf_kernel)
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
             names=("neg", "negative"))
abs = _unary("abs", np.abs, lambda g, self: g * self.sign(), rule=rule_promote, errstate=False,
             names=("abs", "absolute"))
sign = _unary("sign", np.sign, lambda g: _zeros(g), rule=rule_promote, errstate=False)
sgn = _unary("sgn", np.sign, lambda g: _zeros(g), rule=rule_promote, errstate=False)
square = _unary("square", np.square, lambda g, self: 2 * g * self, rule=rule_promote,
                errstate=False)
reciprocal = _unary("reciprocal", np.reciprocal, lambda g, result: -g * result * result,
                    kernel=lambda xp, a: 1 / a)


def _int_identity(f):
    return lambda xp, a: a.copy() if a.dtype.kind in "iub" else f(a)


floor = _unary("floor", None, lambda g: _zeros(g), rule=rule_promote, kernel=_int_identity(np.floor))
ceil = _unary("ceil", None, lambda g: _zeros(g), rule=rule_promote, kernel=_int_identity(np.ceil))
trunc = _unary("trunc", None, lambda g: _zeros(g), rule=rule_promote,
               kernel=_int_identity(np.trunc), names=("trunc", "fix"))
frac = _unary("frac", None, lambda g: g, rule=rule_promote,
              kernel=lambda xp, a: a - xp.trunc(a))


def _round_kernel(xp, a, decimals=0):
    if a.dtype.kind in "iub":
        return a.copy()
    return xp.round(a, decimals)


round = _unary("round", None, lambda g: _zeros(g), rule=rule_promote, kernel=_round_kernel,
               attrs={"decimals": 0})


def _relu_kernel(xp, a):
    if a.dtype == np.bool_:
        raise RuntimeError('"clamp_min_cpu" not implemented for \'Bool\'')
    return xp.maximum(a, 0)


relu = _unary("relu", None, lambda g, result: g * (result > 0), rule=rule_promote,
              errstate=False, kernel=_relu_kernel)


def _nan_to_num_kernel(xp, a, nan=0.0, posinf=None, neginf=None):
    if a.dtype.kind in "iub":
        return a.copy()
    return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


nan_to_num = _unary("nan_to_num", None, lambda g, self: g * self.isfinite(), rule=rule_promote,
                    kernel=_nan_to_num_kernel, attrs={"nan": 0.0, "posinf": None, "neginf": None})

# ---- predicates and comparisons (boolean results, not differentiable) ----
isnan = _unary("isnan", np.isnan, None, rule=rule_to_bool, errstate=False, inplace=False)
isinf = _unary("isinf", np.isinf, None, rule=rule_to_bool, errstate=False, inplace=False)
isfinite = _unary("isfinite", np.isfinite, None, rule=rule_to_bool, errstate=False,
                  inplace=False)
isposinf = _unary("isposinf", np.isposinf, None, rule=rule_to_bool, errstate=False,
                  inplace=False)
isneginf = _unary("isneginf", np.isneginf, None, rule=rule_to_bool, errstate=False,
                  inplace=False)
signbit = _unary("signbit", np.signbit, None, rule=rule_to_bool, errstate=False, inplace=False)
logical_not = _unary("logical_not", np.logical_not, None, rule=rule_to_bool, errstate=False)
eq = defpw("eq", np.equal, rule=rule_compare)
ne = defpw("ne", np.not_equal, rule=rule_compare, names=("ne", "not_equal"))
lt = defpw("lt", np.less, rule=rule_compare, names=("lt", "less"))
le = defpw("le", np.less_equal, rule=rule_compare, names=("le", "less_equal"))
gt = defpw("gt", np.greater, rule=rule_compare, names=("gt", "greater"))
ge = defpw("ge", np.greater_equal, rule=rule_compare, names=("ge", "greater_equal"))
logical_and = defpw("logical_and", np.logical_and, rule=rule_to_bool)
logical_or = defpw("logical_or", np.logical_or, rule=rule_to_bool)
logical_xor = defpw("logical_xor", np.logical_xor, rule=rule_to_bool)
bitwise_and = defpw("bitwise_and", np.bitwise_and, rule=rule_integral)
bitwise_or = defpw("bitwise_or", np.bitwise_or, rule=rule_integral)
bitwise_xor = defpw("bitwise_xor", np.bitwise_xor, rule=rule_integral)
bitwise_not = _unary("bitwise_not", np.invert, None, rule=rule_integral, errstate=False)
bitwise_left_shift = defpw("bitwise_left_shift", np.left_shift, rule=rule_integral)
bitwise_right_shift = defpw("bitwise_right_shift", np.right_shift, rule=rule_integral)


def _isclose_kernel(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


isclose = defpw("isclose", None, _isclose_kernel, rule=rule_compare, inplace=False,
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
    from .. import zeros_like
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
        from .. import tensor
        condition = tensor(condition)
    return _where_call(condition, input, other, out)


def _where_call(condition, input, other, out):
    # the condition takes no part in type promotion: promote input/other, then select
    from .. import core
    vals = [dispatch.operand(x) for x in (input, other)]
    dt = core.dtype.result_type_of([(d, c) for _, d, c in vals])
    from ..core.tensor import Tensor
    a = input.to(dt) if isinstance(input, Tensor) else input
    b = other.to(dt) if isinstance(other, Tensor) else other
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        from .. import tensor
        a = tensor(a, dtype=dt)
    cond = condition if condition.dtype.name == "bool" else condition.bool()
    r = _where(cond, a, b, out=out)
    return r


register(OpDef("where", POINTWISE), where, method_names=("where",))


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


_clamp = defpw("_clamp", None, _clamp_kernel, inputs=("self", "min", "max"), function=False,
               method=False, node_name="ClampBackward1", inplace=True,
               grads={"self": _clamp_self_grad, "min": _clamp_min_grad, "max": _clamp_max_grad})


def clamp(input, min=None, max=None, *, out=None):
    """Limit every element to ``[min, max]`` (either bound may be None, a number or a tensor).

    >>> ember.tensor([-2., 0.5, 3.]).clamp(0, 1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(input, min, max, out=out)


def clamp_(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _CLAMP_INPLACE(self, min, max)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


from .registry import METHODS as _METHODS  # noqa: E402
_CLAMP_INPLACE = _METHODS.pop("_clamp_", None)
for _n in ("clamp", "clip"):
    register(OpDef(_n, POINTWISE), clamp, names=(_n,))
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
        v = value.to(input.dtype)
    else:
        from .creation import tensor
        v = tensor(value, dtype=input.dtype)
    r = _where(mask, v, input)
    if tuple(r.shape) != tuple(input.shape):
        r = r.expand(input.shape) if False else r
        if tuple(r.shape) != tuple(input.shape):
            raise RuntimeError(f"The size of tensor a ({input.shape[-1]}) must match the size "
                               f"of tensor b ({mask.shape[-1]}) at non-singleton dimension 0")
    return r


def masked_fill_(self, mask, value):
    return self.copy_(masked_fill(self, mask, value))


register(OpDef("masked_fill", POINTWISE), masked_fill)
_METHODS["masked_fill_"] = masked_fill_
