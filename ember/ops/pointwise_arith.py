"""Pointwise arithmetic: add, sub, mul, div (and its rounding modes), remainder, pow, the
binary math functions (atan2, hypot, copysign, maximum, minimum, ...) and the ternary ops
(addcmul, addcdiv, lerp). One `defpw` row each (ember/ops/pointwise.py)."""
import math

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core import strides as S
from ..dispatch import rule_float, rule_promote, not_implemented, checked_scalar, broadcast_error
from .registry import OpDef, POINTWISE, register, op_for, METHODS as _METHODS
from .lowering import Lower, NO_INT, COSTLY
from . import lowering_pointwise as _lw
from .pointwise import defpw, only, _zeros, where, no_complex


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
            grads={"self": lambda g: g, "other": lambda g, alpha: g if alpha == 1 else g * alpha},
            onnx=_ox.add)
def _rule_sub(dt, name):
    # (a bool result dtype is refused here too, so two bool tensors stay off the fast path,
    # which skips the precheck: they reach it, and its message)
    if dt is D.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    return rule_promote(dt, name)


sub = defpw("sub", np.subtract, _sub_kernel, attrs={"alpha": 1}, names=("sub", "subtract"),
            lower=Lower("(({T})({a} - {b}))"), rule=_rule_sub,
            precheck=_check_sub,
            grads={"self": lambda g: g, "other": lambda g, alpha: -g if alpha == 1 else g * -alpha},
            onnx=_ox.sub)
mul = defpw("mul", np.multiply, names=("mul", "multiply"), exact_scalar=True,
            scalars_as_tensors=True, lower=Lower("(({T})({a} * {b}))"),
            grads={"self": lambda g, other: g * other, "other": lambda g, self: g * self},
            onnx="Mul")
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
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return self.true_divide_(other)
    if rounding_mode == "trunc":
        return _DIV_TRUNC_INPLACE(self, other)
    if rounding_mode == "floor":
        return self.floor_divide_(other)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


_DIV_TRUNC_INPLACE = _METHODS.pop("_div_trunc_")
# `div` is the true-division op's own record, published with the rounding_mode function
# (one OpDef: the kernel, derivative and C lowering are true division's; a call with a
# rounding_mode keyword stays unfused)
_div = div
_TRUE_DIV = op_for("true_divide")
_TRUE_DIV.onnx = _ox.div
div = register(_TRUE_DIV, _div, names=("div",))
register(OpDef("divide", POINTWISE, lower=Lower(prim="div"),
               onnx=_ox.div), _div, names=("divide",))
_METHODS["div_"] = _METHODS["divide_"] = div_

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
        if cb == 2 and dt._kind < 2 and isinstance(b, int) and \
                not isinstance(b, bool):
            if b < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            if da is not D.bool_:
                info = np.iinfo(da.np)
                if not info.min <= b <= info.max:
                    raise RuntimeError(f"value cannot be converted to type {da.np.name}_t "
                                       "without overflow")
    elif dt is D.bool_:
        broadcast_error([a, b])     # (torch broadcasts the tensors before it picks a kernel)
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
    mask = (self == 0) & (exponent.real >= 0)      # (.real: a complex exponent's part)
    return where(mask, 0.0, g * result * self.log())


pow = defpw("pow", None, _pow_kernel, inputs=("self", "exponent"), errstate=True,
            lower=Lower(_lw.pow_c, cost=COSTLY),
            precheck=_check_pow,
            grads={"self": _pow_self_grad, "exponent": _pow_exp_grad},
            onnx=_ox.pow_)
def _rule_float64(dt, name):
    # float_power computes and returns float64 whatever the inputs (torch's double-precision
    # pow); complex128 for complex ones
    return (D.complex128, D.complex128) if dt.is_complex else (D.float64, D.float64)


def _float_power_kernel(xp, a, b):
    wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64
    return xp.power(np.asarray(a, wide), b)


float_power = defpw("float_power", None, _float_power_kernel, errstate=True,
                    inputs=("self", "exponent"), inplace=False, rule=_rule_float64,
                    grads={"self": _pow_self_grad, "exponent": _pow_exp_grad})

atan2 = defpw("atan2", np.arctan2, tensor_only=True, rule=only("bif", "atan2_cpu", rule_float),
              names=("atan2", "arctan2"),
              grads={"self": lambda g, self, other: g * other / (self * self + other * other),
                     "other": lambda g, self, other: -g * self / (self * self + other * other)})
hypot = defpw("hypot", np.hypot, tensor_only=True, rule=only("f", "hypot_cpu"),
              grads={"self": lambda g, self, result: g * self / result,
                     "other": lambda g, other, result: g * other / result})


def _copysign_grad(g, self, result):
    return g * where(self == 0, 0.0, result / self)


copysign = defpw("copysign", np.copysign, rule=only("bif", "copysign_cpu", rule_float),
                 grads={"self": _copysign_grad, "other": lambda g: _zeros(g)})


def _max_grad(g, self, other, mine):
    half = where(self == other, g / 2, g)
    return half.masked_fill(self < other if mine else self > other, 0)


def _min_grad(g, self, other, mine):
    half = where(self == other, g / 2, g)
    return half.masked_fill(self > other if mine else self < other, 0)


# NaN in either argument gives NaN
maximum = defpw("maximum", np.maximum, inplace=False, tensor_only=True,
                rule=no_complex("maximum not implemented for complex tensors.", rule_promote,
                                RuntimeError),
                lower=Lower("(({a} > {b} || {a} != {a}) ? {a} : {b})",
                            c_int="({a} > {b} ? {a} : {b})"),
                grads={"self": lambda g, self, other: _max_grad(g, self, other, True),
                       "other": lambda g, self, other: _max_grad(g, self, other, False)},
                onnx="Max")
minimum = defpw("minimum", np.minimum, inplace=False, tensor_only=True,
                rule=no_complex("minimum not implemented for complex tensors.", rule_promote,
                                RuntimeError),
                lower=Lower("(({a} < {b} || {a} != {a}) ? {a} : {b})",
                            c_int="({a} < {b} ? {a} : {b})"),
                grads={"self": lambda g, self, other: _min_grad(g, self, other, True),
                       "other": lambda g, self, other: _min_grad(g, self, other, False)},
                onnx="Min")
fmax = defpw("fmax", np.fmax, inplace=False, tensor_only=True,
             rule=no_complex("fmax not implemented for complex tensors.", rule_promote,
                             RuntimeError),
             grads={"self": lambda g, self, other: g.masked_fill(
                 ((self >= other) | other.isnan()).logical_not(), 0),
                 "other": lambda g, self, other: g.masked_fill((self >= other) | other.isnan(), 0)})
fmin = defpw("fmin", np.fmin, inplace=False, tensor_only=True,
             rule=no_complex("fmin not implemented for complex tensors.", rule_promote,
                             RuntimeError),
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
    S.broadcast_shapes(*[v.shape for v in values if hasattr(v, "shape")])   # (torch's first)
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
                attrs={"value": 1}, rule=only("ifc", "addcmul_cpu_out"), precheck=_check_value,
                grads={"self": lambda g: g,
                       "tensor1": lambda g, tensor2, value: g * tensor2 * value,
                       "tensor2": lambda g, tensor1, value: g * tensor1 * value})
addcdiv = defpw("addcdiv", None, _addcdiv_kernel, inputs=("self", "tensor1", "tensor2"),
                attrs={"value": 1}, errstate=True, precheck=_check_addcdiv,
                grads={"self": lambda g: g,
                       "tensor1": lambda g, tensor2, value: g * value / tensor2,
                       "tensor2": lambda g, tensor1, tensor2, value:
                           -g * value * tensor1 / (tensor2 * tensor2)})
