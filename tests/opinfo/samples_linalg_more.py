"""Samples of the linear-algebra ops of ember/ops/linalg_more.py and linalg_lu.py: LU and
LDL factorizations and solves, the `_ex` variants (singular inputs included: their `info`
is compared), matrix_exp, Householder products, tensorinv / tensorsolve, cond, and torch's
top-level Cholesky and triangular solves."""
try:
    from ._make import L, S, Sample, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import L, S, Sample, T

W = dict(make="wellcond")
a33, a233 = T((3, 3), "float64", **W), T((2, 3, 3), "float64", "T", **W)
spd = T((3, 3), "float64", make="spd")
sym = T((3, 3), "float64", values=[[1.0, 2.0, 0.5], [2.0, -1.0, 3.0], [0.5, 3.0, 2.0]])
b32 = T((3, 2), "float64")
singular = T((2, 2), values=[[1.0, 2.0], [2.0, 4.0]])


def piv(*p):
    """LAPACK-style 1-based int32 pivots, for each library."""
    return L(lambda lib: lib.tensor(list(p), dtype=lib.int32))


SPECIAL = {
    "linalg_lu_factor": [S(a33), S(a233), S(T((4, 3))), S(T((2, 4), "float64")),
                         S(singular), S(T((3, 3), "int64"))],
    "linalg_lu_factor_ex": [S(a33), Sample((singular,), grad=False), S(T((0, 3, 3)))],
    "linalg_lu": [S(a33), S(a233), Sample((T((4, 3), "float64"),), grad=False),
                  Sample((T((2, 4)),), grad=False), S(T((3,)))],
    "lu": [S(a33), S(a233, get_infos=True), Sample((a33,), method=True)],
    "lu_unpack": [S(T((3, 3), "float64"), piv(3, 2, 3)),
                  Sample((T((3, 3)), piv(1, 3, 3), False), grad=False),
                  S(T((4, 3), "float64"), piv(4, 2, 3)), S(T((3, 3)), T((3,), "int64"))],
    "linalg_lu_solve": [S(a33, piv(3, 2, 3), b32), S(a33, piv(1, 3, 3), b32, adjoint=True),
                        S(a33, piv(2, 2, 3), T((2, 3), "float64"), left=False),
                        S(a33, piv(3, 3, 3), T((2, 3), "float64"), left=False, adjoint=True),
                        S(a33, piv(3, 2, 3), T((3,), "float64"))],
    "lu_solve": [S(b32, a33, piv(3, 2, 3))],
    "linalg_inv_ex": [S(a33), S(a233), Sample((singular,), values=False)],
    "linalg_solve_ex": [S(a33, b32), S(a233, T((3,), "float64")),
                        Sample((singular, T((2,))), values=False)],
    "linalg_cholesky_ex": [S(spd), S(spd, upper=True),
                           S(T((2, 2), values=[[1.0, 2.0], [2.0, 1.0]]))],
    "linalg_ldl_factor": [S(sym), S(spd), S(T((2, 3), "float64"))],
    "linalg_ldl_factor_ex": [S(sym), S(T((2, 2), values=[[0.0, 0.0], [0.0, 0.0]]))],
    "linalg_ldl_solve": [S(T((3, 3), "float64", values=[[2.0, 0.0, 0.0], [0.5, 3.0, 0.0],
                                                        [0.25, 0.5, 4.0]]), piv(1, 2, 3),
                           b32)],
    "matrix_exp": [S(T((3, 3), "float64", lo=-1, hi=1)), S(T((2, 2, 2), "float64", "T")),
                   S(T((0, 2, 2))), S(T((2, 3)))],
    "linalg_householder_product": [S(T((4, 3), "float64"), T((2,), "float64", lo=0, hi=1.5)),
                                   S(T((2, 3, 3), "float64"), T((2, 3), "float64")),
                                   S(T((2, 3)), T((2,)))],
    "orgqr": [S(T((4, 3), "float64"), T((3,), "float64", lo=0, hi=1.5))],
    "ormqr": [S(T((4, 3), "float64"), T((3,), "float64", lo=0, hi=1.5), T((4, 2), "float64")),
              S(T((3, 2), "float64"), T((2,), "float64"), T((2, 3), "float64"), False, True)],
    "geqrf": [S(T((4, 3), "float64")), S(T((2, 3))), S(T((2, 3, 3), "float64"))],
    "linalg_tensorinv": [S(T((6, 2, 3), "float64"), 1), S(T((2, 3, 6), "float64")),
                         S(T((2, 3, 2, 3)), 3)],
    "linalg_tensorsolve": [S(T((6, 2, 3), "float64"), T((6,), "float64")),
                           S(T((2, 3, 6), "float64"), T((6,), "float64"), dims=(0, 1))],
    "linalg_cond": [S(a33), S(a33, "fro"), S(a33, "nuc"), S(a33, 1), S(a33, -2),
                    S(a233, float("inf")), S(T((4, 3), "float64")), S(T((4, 3)), 1)],
    "cholesky_solve": [S(b32, T((3, 3), "float64", values=[[2.0, 0, 0], [0.5, 3.0, 0],
                                                           [0.25, 0.5, 4.0]])),
                       S(b32, T((3, 3), "float64", values=[[2.0, 0.5, 0.25], [0, 3.0, 0.5],
                                                           [0, 0, 4.0]]), True)],
    "cholesky_inverse": [S(T((3, 3), "float64", values=[[2.0, 0, 0], [0.5, 3.0, 0],
                                                        [0.25, 0.5, 4.0]])), S(T((3,)))],
    "triangular_solve": [S(b32, a33), S(b32, a33, False, True, True),
                         S(T((2, 3, 1), "float64"), a233, True, False)],
}
