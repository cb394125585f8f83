"""torch.special's Bessel and Airy functions and its orthogonal polynomials, as pointwise ops
registered as ``special_<name>`` (published by ember/special/).

torch defines no derivative for any of these: their results do not require grad, as torch's
do not. Bessel kernels are SciPy's ufuncs. The polynomials P_n(x) take a tensor (or number)
degree n, truncated to an integer as torch does; a negative degree gives 0. They are
evaluated by their three-term recurrences, with torch's closed forms where torch uses them
(x = +-1, and cos/sin of n arccos x inside (-1, 1) for high degrees), so the values agree
with torch's to rounding.
"""
import numpy as np

from ..core.meta import meta_array
from ..core.tensor import Tensor
from .pointwise import defpw, _unary
from .registry import OPS
from . import meta_rules as _M
from .special_ops import scipy_special, real


def _no_tangent(tan, result, *args, **kwargs):
    """OpDef.jvp: torch differentiates none of these ops, so their results carry no
    tangent in forward mode either (None: zero)."""
    return None


def _bessel(name, fname, pick=None):
    def kernel(xp, a):
        r = getattr(scipy_special("special." + name), fname)(a)
        r = pick(r) if pick else r
        return np.asarray(r).astype(a.dtype, copy=False)
    return _unary("special_" + name, None, None, kernel=kernel, function=False,
                  method=False, inplace=False, jvp=_no_tangent, rule=real(name + "_cpu"))


bessel_j0 = _bessel("bessel_j0", "j0")
bessel_j1 = _bessel("bessel_j1", "j1")
bessel_y0 = _bessel("bessel_y0", "y0")
bessel_y1 = _bessel("bessel_y1", "y1")
modified_bessel_i0 = _bessel("modified_bessel_i0", "i0")
modified_bessel_i1 = _bessel("modified_bessel_i1", "i1")
modified_bessel_k0 = _bessel("modified_bessel_k0", "k0")
modified_bessel_k1 = _bessel("modified_bessel_k1", "k1")
scaled_modified_bessel_k0 = _bessel("scaled_modified_bessel_k0", "k0e")
scaled_modified_bessel_k1 = _bessel("scaled_modified_bessel_k1", "k1e")
airy_ai = _bessel("airy_ai", "airy", pick=lambda r: r[0])


def _spherical_j0_kernel(xp, a):
    # sin(x) / x, 1 at 0; torch gives 0 for infinite x (SciPy too)
    with np.errstate(all="ignore"):
        r = np.where(a == 0, 1, np.sin(a) / np.where(a == 0, 1, a))
    return np.where(np.isinf(a), 0, r).astype(a.dtype, copy=False)


spherical_bessel_j0 = _unary("special_spherical_bessel_j0", None, None,
                             kernel=_spherical_j0_kernel, function=False, method=False,
                             inplace=False, jvp=_no_tangent,
                             rule=real("spherical_bessel_j0_cpu"))


# ---- orthogonal polynomials ---------------------------------------------------------------
def _recurrence(x, n, first, second, step):
    """P_n(x) for per-element degrees n >= 0 (others: 0): P_0 = first(x), P_1 = second(x),
    P_{k+1} = step(k, x, P_k, P_{k-1}); one vectorised step per degree up to max(n)."""
    out = np.where(n == 0, first(x), np.where(n == 1, second(x), 0)).astype(x.dtype)
    top = int(n.max()) if n.size else 0
    p, q = first(x), second(x)
    live = n > 1
    for k in range(1, top):       # a loop over the degree
        p, q = q, step(k, x, q, p)
        out = np.where(live & (n == k + 1), q, out)
    return out.astype(x.dtype, copy=False)


def _degrees(x, n):
    # asanyarray, not asarray: a meta input stays a MetaArray, so the first computation
    # raises MetaData (and the derived pointwise meta rule runs) instead of reading zeros
    x, n = np.broadcast_arrays(np.asanyarray(x), np.asanyarray(n))
    with np.errstate(all="ignore"):
        k = np.where(np.isfinite(n), n, -1).astype(np.int64)   # truncation, as torch's cast
    if x.dtype.kind != "f":
        x = x.astype(np.result_type(n.dtype, np.float32))
    return np.array(x, copy=True), k


def _one(x):
    return np.ones_like(x)


def _chebyshev(kind, shift):
    """T, U, V, W (first to fourth kinds), or the shifted ones on [0, 1] (x -> 2x - 1)."""
    second = {"t": lambda y: y, "u": lambda y: 2 * y, "v": lambda y: 2 * y - 1,
              "w": lambda y: 2 * y + 1}[kind]

    def kernel(xp, x, n):
        x, n = _degrees(x, n)
        y = 2 * x - 1 if shift else x
        r = _recurrence(y, n, _one, second, lambda k, y, q, p: 2 * y * q - p)
        odd = n % 2 == 1
        with np.errstate(all="ignore"):
            if kind == "t":   # T_n(1) = 1, T_n(-1) = (-1)^n; cos(n acos y) inside
                ends = np.where((y > 0) | ~odd, 1.0, -1.0)
                trig = np.cos(n * np.arccos(y))
                big = 6
            elif kind == "u":
                ends = np.where((y > 0) | ~odd, n + 1.0, -(n + 1.0))
                th = np.arccos(y)
                trig = np.sin((n + 1) * th) / np.sin(th)
                big = 8
            elif kind == "v":
                ends = np.where(y > 0, 1.0, np.where(odd, -(2 * n + 1.0), 2 * n + 1.0))
                th = np.arccos(y)
                trig = np.cos((n + 0.5) * th) / np.cos(th / 2)
                big = 8
            else:
                ends = np.where(y > 0, 2 * n + 1.0, np.where(odd, -1.0, 1.0))
                th = np.arccos(y)
                trig = np.sin((n + 0.5) * th) / np.sin(th / 2)
                big = 8
        inside = (np.abs(y) < 1) & (n > big) & np.isfinite(trig)
        r = np.where(inside, trig, r)
        r = np.where((np.abs(y) == 1) & (n >= 0), ends, r)
        return np.where(n < 0, 0, r).astype(x.dtype, copy=False)
    name = ("shifted_" if shift else "") + "chebyshev_polynomial_" + kind
    return _poly(name, kernel)


def _poly_meta(op):
    """The derived pointwise rule, with the layout of the kernel's NumPy calls: the degrees
    become a full array first (`_degrees`: NumPy's layout of n broadcast alone), which then
    comes first in every np.where, so the result follows its dim order, then x's."""
    rule = _M.pointwise(op)

    def meta(input, n, **kwargs):
        res = rule(input, n, **kwargs)
        shape = tuple(res._data.shape)
        ts = [t for t in (n, input) if isinstance(t, Tensor)]
        if isinstance(n, Tensor):
            ts[0] = _M.result(shape, n.dtype, _M.numpy_layout([n], shape))
        res._data = meta_array(shape, res._data.dtype, _M.numpy_layout(ts, shape))
        return res
    return meta


def _poly(name, kernel):
    fn = _poly_def(name, kernel)
    OPS["special_" + name].meta = _poly_meta(OPS["special_" + name])
    return fn


def _poly_def(name, kernel):
    return defpw("special_" + name, None, kernel, inputs=("self", "n"), rule=real(name + "_cpu"),
                 errstate=True, function=False, method=False, inplace=False, jvp=_no_tangent)


def _hermite_h(xp, x, n):
    x, n = _degrees(x, n)
    r = _recurrence(x, n, _one, lambda x: 2 * x, lambda k, x, q, p: 2 * x * q - 2 * k * p)
    return np.where(n < 0, 0, r).astype(x.dtype, copy=False)


def _hermite_he(xp, x, n):
    x, n = _degrees(x, n)
    r = _recurrence(x, n, _one, lambda x: x, lambda k, x, q, p: x * q - k * p)
    return np.where(n < 0, 0, r).astype(x.dtype, copy=False)


def _laguerre(xp, x, n):
    x, n = _degrees(x, n)
    r = _recurrence(x, n, _one, lambda x: 1 - x,
                    lambda k, x, q, p: ((2 * k + 1 - x) * q - k * p) / (k + 1))
    r = np.where((x == 0) & (n >= 0), 1, r)
    return np.where(n < 0, 0, r).astype(x.dtype, copy=False)


def _legendre(xp, x, n):
    x, n = _degrees(x, n)
    r = _recurrence(x, n, _one, lambda x: x,
                    lambda k, x, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1))
    ends = np.where((x > 0) | (n % 2 == 0), 1.0, -1.0)
    r = np.where((np.abs(x) == 1) & (n >= 0), ends, r)
    return np.where(n < 0, 0, r).astype(x.dtype, copy=False)


chebyshev_polynomial_t = _chebyshev("t", False)
chebyshev_polynomial_u = _chebyshev("u", False)
chebyshev_polynomial_v = _chebyshev("v", False)
chebyshev_polynomial_w = _chebyshev("w", False)
shifted_chebyshev_polynomial_t = _chebyshev("t", True)
shifted_chebyshev_polynomial_u = _chebyshev("u", True)
shifted_chebyshev_polynomial_v = _chebyshev("v", True)
shifted_chebyshev_polynomial_w = _chebyshev("w", True)
hermite_polynomial_h = _poly("hermite_polynomial_h", _hermite_h)
hermite_polynomial_he = _poly("hermite_polynomial_he", _hermite_he)
laguerre_polynomial_l = _poly("laguerre_polynomial_l", _laguerre)
legendre_polynomial_p = _poly("legendre_polynomial_p", _legendre)
