"""Pointwise predicates and comparisons (boolean results, not differentiable), logical and
bitwise ops, isclose/allclose/equal, and unary plus and ``~``. One row each (ember/ops/
pointwise.py)."""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..dispatch import rule_compare, rule_integral, torch_name
from .registry import OpDef, POINTWISE, register
from .lowering import Lower
from . import lowering_pointwise as _lw
from .pointwise import defpw, only, _unary, no_complex


# ---- predicates and comparisons (boolean results, not differentiable) ----
isnan = _unary("isnan", np.isnan, None, rule=rule_compare, errstate=False, inplace=False,
               lower=Lower("((uint8_t)({a} != {a}))"),
               onnx="IsNaN")
isinf = _unary("isinf", np.isinf, None, rule=rule_compare, errstate=False, inplace=False,
               onnx="IsInf")
isfinite = _unary("isfinite", np.isfinite, None, rule=rule_compare, errstate=False,
                  inplace=False)
isposinf = _unary("isposinf", np.isposinf, None, errstate=False,
                  rule=no_complex("isposinf does not support complex inputs.", rule_compare,
                                  RuntimeError),
                  inplace=False)
isneginf = _unary("isneginf", np.isneginf, None, errstate=False,
                  rule=no_complex("isneginf does not support complex inputs.", rule_compare,
                                  RuntimeError),
                  inplace=False)
signbit = _unary("signbit", np.signbit, None, errstate=False, inplace=False,
                 rule=no_complex("signbit is not implemented for complex tensors.", rule_compare))
logical_not = _unary("logical_not", np.logical_not, None, rule=rule_compare, errstate=False,
                     lower=Lower("((uint8_t)({a} == 0))"),
                     onnx="Not")
eq = defpw("eq", np.equal, rule=rule_compare, lower=_lw.compare("=="),
           onnx="Equal")
ne = defpw("ne", np.not_equal, rule=rule_compare, names=("ne", "not_equal"),
           lower=_lw.compare("!="),
           onnx=_ox.ne)
# the order comparisons have no complex kernel in torch
lt = defpw("lt", np.less, rule=only("bif", "lt_cpu", rule_compare), names=("lt", "less"),
           lower=_lw.compare("<"),
           onnx="Less")
le = defpw("le", np.less_equal, rule=only("bif", "le_cpu", rule_compare),
           names=("le", "less_equal"), lower=_lw.compare("<="),
           onnx="LessOrEqual")
gt = defpw("gt", np.greater, rule=only("bif", "gt_cpu", rule_compare), names=("gt", "greater"),
           lower=_lw.compare(">"),
           onnx="Greater")
ge = defpw("ge", np.greater_equal, rule=only("bif", "ge_cpu", rule_compare),
           names=("ge", "greater_equal"), lower=_lw.compare(">="),
           onnx="GreaterOrEqual")
logical_and = defpw("logical_and", np.logical_and, tensor_only=True, rule=rule_compare,
                    lower=Lower("((uint8_t)(({a} != 0) & ({b} != 0)))", compare=True),
                    onnx="And")
logical_or = defpw("logical_or", np.logical_or, tensor_only=True, rule=rule_compare,
                   lower=Lower("((uint8_t)(({a} != 0) | ({b} != 0)))", compare=True),
                   onnx="Or")
logical_xor = defpw("logical_xor", np.logical_xor, tensor_only=True, rule=rule_compare,
                    onnx="Xor")
bitwise_and = defpw("bitwise_and", np.bitwise_and, rule=rule_integral,
                    onnx=_ox.bitwise_and)
bitwise_or = defpw("bitwise_or", np.bitwise_or, rule=rule_integral,
                   onnx=_ox.bitwise_or)
bitwise_xor = defpw("bitwise_xor", np.bitwise_xor, rule=rule_integral,
                    onnx=_ox.bitwise_xor)
bitwise_not = _unary("bitwise_not", np.invert, None, rule=rule_integral, errstate=False,
                     onnx=_ox.bitwise_not)
# NumPy, like PyTorch, gives 0 (or the sign for >>) for shifts by a negative or >= width count
bitwise_left_shift = defpw("bitwise_left_shift", np.left_shift, rule=only("i", "lshift_cpu"))
bitwise_right_shift = defpw("bitwise_right_shift", np.right_shift, rule=only("i", "rshift_cpu"))


def _isclose_kernel(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _check_same_dtype(values, metas, dt, attrs):
    (da, _), (db, _) = metas
    if da is not db:
        raise RuntimeError(f"{torch_name(da)} did not match {torch_name(db)}")
    for k in ("rtol", "atol"):
        v = attrs.get(k, 0.0)
        if v < 0:
            raise RuntimeError(f"{k} must be greater than or equal to zero, but got {v:g}")


isclose = defpw("isclose", None, _isclose_kernel, tensor_only=True, rule=rule_compare,
                inplace=False,
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


allclose = register(OpDef("allclose", POINTWISE), allclose)
equal = register(OpDef("equal", POINTWISE), equal)



def positive(input):
    """``+x``: `x` itself (bool tensors have no unary plus in PyTorch)."""
    if input.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _invert(input):
    """``~x``: bitwise_not, but a TypeError (not bitwise_not's error) for floating and
    complex tensors."""
    if input.dtype.is_floating_point or input.dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(input)


positive = register(OpDef("positive", POINTWISE), positive)
_invert = register(OpDef("_invert", POINTWISE, method=False,
                         onnx=_ox.bitwise_not), _invert)
