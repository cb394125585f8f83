"""Samples of the special-function ops (ember/ops/special_ops.py, special_poly.py) and of the
linear-algebra ops of ember/ops/linalg_more.py whose arguments the generic pointwise
samplers do not fit: polygamma's leading order, mvlgamma's dimension, the first arguments
of igamma/igammac/zeta (no derivative, so grad=False), the polynomials' integer degrees.

DOMAINS rows (merged into samples.DOMAINS) keep the generic samplers inside each op's
smooth domain, so gradcheck's finite differences are meaningful.
"""
try:
    from ._make import S, Sample, Sm, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import S, Sample, Sm, T

POS = dict(lo=0.2, hi=3.0)
INF = float("inf")
x34 = T((3, 4))

DOMAINS = {
    "lgamma": [POS], "digamma": [POS], "xlogy": [{}, POS],
    "special_xlog1py": [{}, dict(lo=-0.5, hi=2.0)], "special_entr": [POS],
    "special_ndtri": [dict(lo=0.05, hi=0.95)],
}


def _poly(name):
    """A polynomial P_n(x): integer degrees (0 to 12 and negative), a scalar degree, float
    degrees (truncated), x on the closed interval and beyond, integer x, infinities."""
    lo, hi = (0.0, 1.0) if name.startswith("special_shifted") else (-1.0, 1.0)
    dom = dict(lo=lo, hi=hi)
    return [S(T((3, 4), **dom), T((3, 4), "int64", lo=-1, hi=12)),
            S(T((2, 3), "float64", "T", **dom), T((3,), "float64", values=[0.0, 5.0, 11.5])),
            S(T((4,), "float64", lo=-3, hi=3), 3),
            S(T((2, 2), "float64", values=[[lo, hi], [hi, lo]]), T((2, 1), "int64",
                                                                  values=[[7], [10]])),
            S(T((0, 3)), T((3,), "int64", lo=0, hi=3)),
            S(T((3,), "int64", lo=-2, hi=2), T((3,), "int64", lo=0, hi=4)),
            # infinities and signed zeros; not NaN: torch returns uninitialised memory for
            # P_n(NaN) with n >= 2 in most of these kernels (ember returns NaN)
            Sample((T((2, 3), values=[[INF, -INF, 0.0], [-0.0, 1.0, 0.5]]),
                    T((2, 3), "int64", lo=0, hi=6)), grad=False),
            S(0.5, T((4,), "int64", lo=0, hi=9))]


def _no_first_grad(name, dom0, dom1):
    """Two-input ops with no derivative for the first input (igamma, igammac, zeta)."""
    a, b = dict(dom0, grad=False), dom1
    return [S(T((3, 4), **a), T((3, 4), **b)),
            S(T((2, 3, 1), "float64", "T", **a), T((4,), "float64", **b)),
            S(T((0, 3), **a), T((3,), **b)),
            S(T((), "float64", **a), T((2, 2), "float64", "expand", **b)),
            Sample((T((2, 3), make="specials"), T((2, 3), **b)), grad=False),
            S(T((2, 2), "int64", lo=1, hi=3), T((2, 2), "int64", lo=1, hi=3)),
            S(T((2, 2), "float64", **a), T((2, 2), "float32", **b))]


SPECIAL = {
    "polygamma": [S(0, T((3, 4), **POS)), S(1, T((2, 3), "float64", "T", **POS)),
                  S(2, T((0, 3))), S(3, T((), "float64", **POS)),
                  Sample((1, T((2, 3), make="specials")), grad=False),
                  S(1, T((3, 2), "int64", "offset")), S(4, T((3,), "float64", lo=-2.5, hi=-0.1)),
                  S(-1, x34), Sm(T((2, 3), "float64", **POS), 2)],
    "mvlgamma": [S(T((3, 4), lo=1.2, hi=3.0), 2), S(T((2, 3), "float64", "T", lo=1.6, hi=3.0), 3),
                 S(T((0, 3)), 1), S(T((2,), lo=-1.0, hi=0.0), 2), S(x34, 0),
                 S(T((2, 2), "int64", lo=2, hi=4), 2), Sm(T((3,), "float64", lo=2.0, hi=4.0), 4)],
    "igamma": _no_first_grad("igamma", POS, POS),
    "igammac": _no_first_grad("igammac", POS, POS),
    "special_zeta": _no_first_grad("special_zeta", dict(lo=1.5, hi=4.0), POS)
    + [S(T((3,), "float64", lo=1.5, hi=4.0, grad=False), 2.5), S(3.0, T((3,), "float64", **POS))],
    "linalg_solve_triangular": [
        S(T((3, 3), make="wellcond"), T((3, 2)), upper=True),
        S(T((2, 3, 3), "float64", "T", make="wellcond"), T((3, 1), "float64"), upper=False),
        S(T((3, 3), "float64", make="wellcond"), T((2, 3), "float64"), upper=False, left=False),
        S(T((3, 3), "float64", make="wellcond"), T((3, 4), "float64", "step"), upper=True,
          unitriangular=True),
        S(T((1, 2, 2), "float64", make="wellcond"), T((3, 2, 2), "float64"), upper=True,
          left=False, unitriangular=True),
        S(T((0, 3, 3), make="wellcond"), T((3, 2)), upper=True),
        S(T((3, 3), make="wellcond"), T((3,)), upper=True),
        S(T((2, 3)), T((3, 2)), upper=True), S(T((3, 3)), T((2, 2)), upper=False),
        S(T((3, 3), "int64"), T((3, 2), "int64"), upper=True)],
}
for _n in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"):
    SPECIAL["special_" + _n] = _poly("special_" + _n)
