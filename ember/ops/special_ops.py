"""Pointwise special functions: the gamma family (lgamma, digamma, polygamma, mvlgamma),
xlogy / xlog1py, the incomplete gamma functions, the modified Bessel functions of torch's
top level (i0) and of torch.special (i0e, i1, i1e), the normal distribution's functions
(ndtr, ndtri, log_ndtr), erfcx, entr, sinc and the Hurwitz zeta function.

One `defpw` row each (ember/ops/pointwise.py): kernel, dtype rule, derivative formulas.
Where NumPy has no kernel, SciPy's `scipy.special` ufuncs are (imported on first use; without
SciPy these ops raise an ImportError that says so). Edge values follow torch where SciPy's
convention differs (lgamma(-inf) is inf, trigamma at the poles, zeta(s, inf)): each such
place says so. Ops that exist only in torch.special are registered as ``special_<name>``
and published by ember/special/ (bessel and polynomial ops: ember/ops/special_poly.py).
"""
import math

import numpy as np

from ..core import dtype as D
from ..dispatch import rule_float, not_implemented
from ..dispatch_args import int_arg
from .registry import FUNCTIONS as _FUNCTIONS
from .pointwise import defpw, _unary, where
from .pointwise_math import exp, log, sin, cos


def scipy_special(op_name):
    """SciPy's special-function module, or torch-like guidance when it is not installed."""
    try:
        import scipy.special as sp
    except ImportError:
        raise ImportError(f"ember's {op_name} needs SciPy for its kernel: pip install scipy "
                          "(or pip install ember[fast])") from None
    return sp


def _sp_unary(op_name, fname):
    """A kernel that applies scipy.special.<fname> and keeps the array's dtype."""
    def kernel(xp, a):
        return getattr(scipy_special(op_name), fname)(a).astype(a.dtype, copy=False)
    return kernel


def real(kernel_name, half=True):
    """A dtype rule: torch's NotImplementedError (naming its CPU kernel) for complex inputs
    and, unless `half=False`, for float16/bfloat16 (torch has no loop for them), else float
    results (integers and bools compute in the default float dtype)."""
    def rule(dt, name):
        if dt.is_complex or (half and dt in (D.float16, D.bfloat16)):
            raise not_implemented(kernel_name, dt)
        return rule_float(dt, name)
    return rule


def _no_derivative(what):
    """A derivative slot whose use raises torch's NotImplementedError (torch has none)."""
    def formula(g):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
    return formula


SQRT_2PI = math.sqrt(2 * math.pi)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


# ---- the gamma family -------------------------------------------------------------------
def _lgamma_kernel(xp, a):
    r = scipy_special("lgamma").gammaln(a)
    return np.where(a == -np.inf, np.inf, r).astype(a.dtype, copy=False)  # torch: inf


def _trigamma(x):
    """polygamma(1, x) the way torch computes it (reflection below 1/2, six recurrence
    steps, then the asymptotic series), so that the poles give torch's large finite values
    rather than SciPy's inf."""
    x = np.copy(x)      # (np.array would read a meta array's mapping; np.copy raises MetaData)
    result = np.zeros_like(x)
    sign = np.ones_like(x)
    small = x < 0.5
    s = np.sin(np.pi * x)
    result = np.where(small, result - (np.pi * np.pi) / (s * s), result)
    sign = np.where(small, -sign, sign)
    x = np.where(small, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x
    return (sign * result).astype(x.dtype, copy=False)


def _polygamma_kernel(xp, a, n=0):
    if n == 0:
        return scipy_special("polygamma").psi(a).astype(a.dtype, copy=False)
    if n == 1:
        return _trigamma(a)
    # (-1)^(n+1) n! zeta(n+1, x); torch's zeta(s, inf) is NaN (SciPy's 0)
    z = scipy_special("polygamma").zeta(float(n + 1), a)
    r = (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * z
    return np.where(a == np.inf, np.nan, r).astype(a.dtype, copy=False)


def _check_polygamma(values, metas, dt, attrs):
    n = attrs.get("n", 0)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if dt.is_complex:     # torch names the kernel of each order
        raise not_implemented(("digamma", "trigamma")[n] if n < 2 else "polygamma", dt)


lgamma = _unary("lgamma", None, lambda g, self: g * digamma(self), kernel=_lgamma_kernel,
                rule=real("lgamma_vml_cpu", half=False))
digamma = _unary("digamma", None, lambda g, self: g * _polygamma_op(self, n=1),
                 kernel=_sp_unary("digamma", "psi"), rule=real("digamma", half=False))
# polygamma(n, input): n comes first in torch's function but it is an attribute of the op;
# the generated function takes (input, n=), the method x.polygamma(n) too
_polygamma_op = _unary("polygamma", None,
                       lambda g, self, n: g * _polygamma_op(self, n=n + 1),
                       kernel=_polygamma_kernel, attrs={"n": 0}, function=False,
                       precheck=_check_polygamma, rule=real("polygamma", half=False))
# (the rule keeps complex input off the fast path, which skips the precheck when n is the
# default 0: the precheck then names the kernel of each order, digamma's for n=0)


def polygamma(n, input, *, out=None):
    """The n-th derivative of the digamma function (``polygamma(0, x)`` is digamma).

    >>> ember.polygamma(1, ember.tensor([1.0]))       # pi^2 / 6
    tensor([1.6449])
    """
    n = int_arg(n, "polygamma", "n", 1)
    return _polygamma_op(input, n=n, out=out)


polygamma._dispatches = True   # the generated op it calls checks the mode stack
_FUNCTIONS["polygamma"] = polygamma


def _mvlgamma_kernel(xp, a, p=None):
    # (lgamma's kernel, not SciPy's gammaln: its convention at -inf is not torch's)
    r = sum(_lgamma_kernel(xp, a - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(
        math.pi)
    return np.asarray(r).astype(a.dtype, copy=False)


def _check_mvlgamma(values, metas, dt, attrs):
    p = attrs.get("p")
    if p is None:
        raise TypeError("mvlgamma() missing 1 required positional arguments: \"p\"")
    int_arg(p, "mvlgamma", "p", 2)    # (a loop of p terms: 2**63 would never end)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if metas[0][0] is D.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    # (torch 2.x no longer checks that every element exceeds (p - 1) / 2)


def _mvlgamma_grad(g, self, p):
    total = digamma(self)
    for j in range(1, p):
        total = total + digamma(self - j / 2)
    return g * total


mvlgamma = _unary("mvlgamma", None, _mvlgamma_grad, kernel=_mvlgamma_kernel,
                  attrs={"p": None}, precheck=_check_mvlgamma, rule=real("arange_cpu", half=False))


# ---- xlogy, xlog1py, entr -----------------------------------------------------------------
def _xlogy_kernel(xp, x, y):
    # 0 * log(y) is 0 for every y but NaN
    r = np.where(x == 0, 0, x * np.log(y))
    return np.where(np.isnan(y), np.nan, r).astype(np.result_type(x, y), copy=False)


def _xlog1py_kernel(xp, x, y):
    r = np.where(x == 0, 0, x * np.log1p(y))
    return np.where(np.isnan(y), np.nan, r).astype(np.result_type(x, y), copy=False)


xlogy = defpw("xlogy", None, _xlogy_kernel, rule=real("xlogy_cpu", half=False), errstate=True,
              grads={"self": lambda g, self, other:
                     where((self == 0) & (other <= 0), 0.0, xlogy(g, other)),
                     "other": lambda g, self, other: g * self / other})
xlog1py = defpw("special_xlog1py", None, _xlog1py_kernel, rule=real("xlog1py_cpu", half=False),
                errstate=True,
                function=False, method=False, inplace=False,
                grads={"self": lambda g, self, other:
                       where((self == 0) & (other <= -1), 0.0, xlog1py(g, other)),
                       "other": lambda g, self, other: g * self / (other + 1)})


def _entr_kernel(xp, a):
    r = np.where(a > 0, -a * np.log(np.where(a > 0, a, 1)), np.where(a == 0, 0, -np.inf))
    return np.where(np.isnan(a), np.nan, r).astype(a.dtype, copy=False)


entr = _unary("special_entr", None, lambda g, self: g * -(1 + log(self)),
              kernel=_entr_kernel, function=False, method=False, inplace=False,
              rule=real("entr_cpu", half=False))


# ---- incomplete gamma and zeta: no derivative for the first argument (torch neither) ------
def _sp_binary(op_name, fname):
    def kernel(xp, a, b):
        return np.asarray(getattr(scipy_special(op_name), fname)(a, b)).astype(
            np.result_type(a, b), copy=False)
    return kernel


def _igamma_kernel(op_name, fname):
    """SciPy's regularized incomplete gamma, with torch's order of tests: x == 0 and
    x == inf give 0 and 1 (igammac: 1 and 0) before a NaN `a` is looked at."""
    sp = _sp_binary(op_name, fname)

    def kernel(xp, a, b):
        r = sp(xp, a, b)
        fix = np.isnan(a) & ((b == 0) | (b == np.inf))
        if fix.any():
            r = np.where(fix, (b == np.inf) if fname == "gammainc" else (b == 0), r).astype(
                r.dtype, copy=False)
        return r
    return kernel


def _igamma_x_grad(g, self, other):
    return g * exp((self - 1) * log(other) - other - lgamma(self))


def _float_only(kernel_name):
    def rule(dt, name):
        if not dt.is_floating_point:
            raise not_implemented(kernel_name, dt)
        return dt, dt
    return rule


igamma = defpw("igamma", None, _igamma_kernel("igamma", "gammainc"),
               rule=_float_only("igamma_cpu"), errstate=True, tensor_only=True,
               grads={"self": _no_derivative("igamma: input"), "other": _igamma_x_grad})
igammac = defpw("igammac", None, _igamma_kernel("igammac", "gammaincc"),
                rule=_float_only("igammac_cpu"), errstate=True, tensor_only=True,
                grads={"self": _no_derivative("igammac: input"),
                       "other": lambda g, self, other: -_igamma_x_grad(g, self, other)})


def _zeta_kernel(xp, x, q):
    r = np.asarray(scipy_special("zeta").zeta(x, q))
    return np.where(q == np.inf, np.nan, r).astype(np.result_type(x, q), copy=False)  # torch


zeta = defpw("special_zeta", None, _zeta_kernel, rule=real("zeta_cpu"), errstate=True,
             function=False, method=False, inplace=False,
             grads={"self": _no_derivative("zeta"),
                    "other": lambda g, self, other: g * -self * zeta(self + 1, other)})


# ---- modified Bessel functions of order 0 and 1 -------------------------------------------
def _i1_grad(g, self, result):
    # i1'(x) = i0(x) - i1(x) / x, which is 1/2 at 0
    return g * where(self == 0, 0.5, i0(self) - result / self)


def _i1e_grad(g, self, result):
    return g * where(self == 0, 0.5, i0e(self) - result * (self.sign() + 1 / self))


i0 = _unary("i0", None, lambda g, self: g * i1(self), kernel=_sp_unary("i0", "i0"),
            rule=real("i0_vml_cpu", half=False))
i0e = _unary("special_i0e", None, lambda g, self, result: g * (i1e(self) - self.sign() * result),
             kernel=_sp_unary("special.i0e", "i0e"), function=False, method=False,
             inplace=False, rule=real("i0e_cpu", half=False))
i1 = _unary("special_i1", None, _i1_grad, kernel=_sp_unary("special.i1", "i1"),
            function=False, method=False, inplace=False, rule=real("i1_cpu", half=False))
i1e = _unary("special_i1e", None, _i1e_grad, kernel=_sp_unary("special.i1e", "i1e"),
             function=False, method=False, inplace=False, rule=real("i1e_cpu", half=False))


# ---- the normal distribution, erfcx, sinc -------------------------------------------------
ndtr = _unary("special_ndtr", None, lambda g, self: g * exp(-0.5 * self * self) / SQRT_2PI,
              kernel=_sp_unary("special.ndtr", "ndtr"), function=False, method=False,
              inplace=False, rule=real("erf_vml_cpu", half=False))
ndtri = _unary("special_ndtri", None,
               lambda g, result: g * SQRT_2PI * exp(0.5 * result * result),
               kernel=_sp_unary("special.ndtri", "ndtri"), function=False, method=False,
               inplace=False, rule=real("ndtri_cpu"))
log_ndtr = _unary("special_log_ndtr", None,
                  lambda g, self, result: g / SQRT_2PI * exp(-(result + self * self / 2)),
                  kernel=_sp_unary("special.log_ndtr", "log_ndtr"), function=False,
                  method=False, inplace=False, rule=real("log_ndtr_cpu"))
erfcx = _unary("special_erfcx", None,
               lambda g, self, result: g * (2 * self * result - TWO_OVER_SQRT_PI),
               kernel=_sp_unary("special.erfcx", "erfcx"), function=False, method=False,
               inplace=False, rule=real("erfcx_cpu"))


def _sinc_kernel(xp, a):
    return np.sinc(a).astype(a.dtype, copy=False)


def _sinc_grad(g, self):
    px = math.pi * self
    return g * where(self == 0, 0.0, (px * cos(px) - sin(px)) / (px * self))


sinc = _unary("sinc", None, _sinc_grad, kernel=_sinc_kernel)
