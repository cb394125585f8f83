"""Top-level pointwise ops that were missing: logaddexp, logaddexp2, heaviside, gcd, lcm,
nextafter, deg2rad, rad2deg (one `defpw` row each, ember/ops/pointwise.py), ldexp (torch's
composite, input * 2**other), frexp (two results) and float_power_.

Dtype rules follow torch's CPU kernels: logaddexp and nextafter refuse integers, gcd/lcm
take integers only, heaviside wants both operands of one dtype, deg2rad / rad2deg / ldexp
give floats for integer inputs.
"""
import math

import numpy as np

from ..core import dtype as D
from ..core.tensor import Tensor
from ..core.meta import MetaData
from ..dispatch import wrap, rule_float
from ..return_types import _make
from .registry import OpDef, EXTERN, COMPOSITE, FUNCTIONS, METHODS, register
from .pointwise import defpw, _unary, only, _zeros
from .pointwise_math import exp
from .matmul import record_fn
from . import meta_rules as M

frexp_t = _make("frexp", ("mantissa", "exponent"))
LN2 = math.log(2.0)


def _float_only(kernel_name):
    return only("f", kernel_name)


def _int_only(kernel_name):
    return only("i", kernel_name)


# ---- logaddexp / logaddexp2 ---------------------------------------------------------------
def _logaddexp_kernel(xp, a, b):
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        # log(e^a + e^b) = m + log(e^(a-m) + e^(b-m)), m the operand of larger real part
        hi = np.where(np.real(a) >= np.real(b), a, b)
        lo = np.where(np.real(a) >= np.real(b), b, a)
        return hi + np.log1p(np.exp(lo - hi))
    return np.logaddexp(a, b)


logaddexp = defpw("logaddexp", None, _logaddexp_kernel, rule=only("fc", "logaddexp_cpu"),
                  errstate=True, tensor_only=True,
                  grads={"self": lambda g, self, other: g / (1 + exp(other - self)),
                         "other": lambda g, self, other: g / (1 + exp(self - other))})
logaddexp2 = defpw("logaddexp2", np.logaddexp2, rule=_float_only("logaddexp2_cpu"),
                   errstate=True, tensor_only=True,
                   grads={"self": lambda g, self, other: g / (1 + exp((other - self) * LN2)),
                          "other": lambda g, self, other: g / (1 + exp((self - other) * LN2))})


# ---- heaviside, nextafter -----------------------------------------------------------------
def _heaviside_kernel(xp, a, v):
    # torch: values where a == 0, else (a > 0); NaN counts as not positive
    return np.where(a == 0, v, a > 0).astype(np.result_type(a, v), copy=False)


def _check_same_dtype(what):
    def precheck(values, metas, dt, attrs):
        if dt.is_complex:
            raise RuntimeError(f"{what} is not yet implemented for complex tensors.")
        if metas[0][0] is not metas[1][0]:
            raise RuntimeError(f"{what} is not yet implemented for tensors with different "
                               "dtypes.")
    return precheck


# torch defines no derivative: its result requires grad and backward raises; ember's result
# does not require grad (backward then raises "does not require grad", also a RuntimeError)
heaviside = defpw("heaviside", None, _heaviside_kernel, tensor_only=True,
                  precheck=_check_same_dtype("heaviside"), inputs=("self", "values"))
nextafter = defpw("nextafter", np.nextafter, rule=_float_only("nextafter_cpu"),
                  tensor_only=True, grads={"self": lambda g: g, "other": lambda g: _zeros(g)})


# ---- gcd, lcm -----------------------------------------------------------------------------
def _lcm_kernel(xp, a, b):
    return np.abs(np.lcm(a, b))


gcd = defpw("gcd", np.gcd, rule=_int_only("gcd_cpu"), tensor_only=True)
lcm = defpw("lcm", None, _lcm_kernel, rule=_int_only("lcm_cpu"), tensor_only=True)


# ---- degrees and radians ------------------------------------------------------------------
DEG = math.pi / 180.0


def _real_float(what):
    def rule(dt, name):
        if dt.is_complex:
            raise RuntimeError(f"{what} is not supported for complex tensors.")
        return rule_float(dt, name)
    return rule


deg2rad = _unary("deg2rad", None, lambda g: g * DEG, errstate=False, rule=_real_float("deg2rad"),
                 kernel=lambda xp, a: a * a.dtype.type(DEG))
rad2deg = _unary("rad2deg", None, lambda g: g / DEG, errstate=False, rule=_real_float("rad2deg"),
                 kernel=lambda xp, a: a * a.dtype.type(1 / DEG))


# ---- ldexp: torch's composite input * 2 ** other -------------------------------------------
def ldexp(input, other, *, out=None):
    """``input * 2 ** other`` (float results for integer inputs).

    >>> ember.ldexp(ember.tensor([1.0, 3.0]), ember.tensor([2, 1]))
    tensor([4., 6.])
    """
    for n, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"ldexp(): argument '{n}' must be Tensor, not {type(x).__name__}")
    if other.dtype is D.bool_:
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    return FUNCTIONS["mul"](input, FUNCTIONS["pow"](2.0, other), out=out)


def ldexp_(self, other):
    return self.mul_(FUNCTIONS["pow"](2.0, other))


ldexp = register(OpDef("ldexp", COMPOSITE, decomp=ldexp, inputs=("self", "other")), ldexp)
METHODS["ldexp_"] = ldexp_


# ---- frexp --------------------------------------------------------------------------------
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1.

    >>> ember.frexp(ember.tensor([8.0])).exponent
    tensor([4], dtype=ember.int32)
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    a = input._data
    try:
        m, e = np.frexp(a.astype(np.float32) if input.dtype in (D.float16, D.bfloat16) else a)
    except MetaData:    # a meta input: the results' metadata (NumPy keeps the dim order)
        m = M.out_array(a.shape, input.dtype.np, input, like=input)
        e = M.out_array(a.shape, np.int32, input, like=input)
    # (np.frexp's exponent is int32 already where C's int is; MetaArray.astype drops layout)
    mant, expo = wrap(m, input.dtype), wrap(e if e.dtype == np.int32 else e.astype(np.int32),
                                            D.int32)

    def backward(grads, needs, expo):
        g = grads[0]
        return (None if g is None else g / FUNCTIONS["exp2"](expo.to(g.dtype)),)
    record_fn("FrexpBackward0", (input,), (mant,), backward, (expo,))
    if out is not None:
        out[0].copy_(mant)
        out[1].copy_(expo)
        return frexp_t(out[0], out[1])
    return frexp_t(mant, expo)


frexp = register(OpDef("frexp", EXTERN), frexp)


# ---- float_power_: in place, the result dtype is float64 -------------------------------------
def float_power_(self, exponent):
    """In-place float_power: self must already have the result's dtype, float64, or
    complex128 when either operand is complex (torch's rule)."""
    cplx = self.dtype.is_complex or (isinstance(exponent, Tensor) and exponent.dtype.is_complex
                                     ) or isinstance(exponent, complex)
    want = D.complex128 if cplx else D.float64
    if self.dtype is not want:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{D.torch_name(self.dtype)} but the operation's result requires "
                           f"dtype {D.torch_name(want)}")
    return self.copy_(FUNCTIONS["float_power"](self, exponent))


METHODS["float_power_"] = float_power_
