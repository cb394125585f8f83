"""Samples of the ops that need particular arguments: views, creation, random, joining,
linear algebra, indexing, scans, sorting and the reductions with extra arguments.

Each SPECIAL row maps an op's registered name to its samples (see _make.py for T, I, B, L, S,
Sm). Random ops and empty tensors compare dtype and shape only (`values=False`): ember draws
from its own generator, not torch's.
"""
import numpy as np

try:
    from ._make import B, I, L, S, Sample, Sm, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import B, I, L, S, Sample, Sm, T

x34, x23, x234 = T((3, 4)), T((2, 3)), T((2, 3, 4))
d34 = T((3, 4), "float64", "T")
f64 = L(lambda lib: lib.float64)
i64 = L(lambda lib: lib.int64)


def nv(*args, **kwargs):
    """A sample whose values are not compared (empty tensors, random draws)."""
    return Sample(args, kwargs, values=False)


def nvm(*args, **kwargs):
    return Sample(args, kwargs, method=True, values=False)


VIEWS = {
    "view": [S(x23, 3, 2), S(x23, (-1,)), S(T(()), (1,)), S(T((0, 3)), (3, 0)),
             S(T((2, 3), "float32", "T"), 6), S(T((2, 6), "float64", "step"), 2, 3, 2)],
    "reshape": [S(T((2, 3), "float64", "T"), (6,)), S(x23, (3, -1)), S(T(()), ()),
                S(T((0, 3)), (3, 0)), S(T((3, 4), "float32", "step"), (2, 6)),
                S(T((3, 4), "float32", "expand"), (12,))],
    "view_as": [S(x23, T((3, 2))), S(T((2, 2), "int64"), T((4,)))],
    "reshape_as": [S(T((2, 3), "float64", "T"), T((3, 2))), S(T(()), T((1, 1)))],
    "flatten": [S(x234), S(x234, 1), S(T((2, 3, 4), "float64", "T"), 0, 1), S(T(())),
                S(T((0, 3)))],
    "unflatten": [S(T((2, 6)), 1, (2, 3)), S(T((2, 6), "float64", "step"), -1, (3, -1)),
                  S(T((0,)), 0, (0, 4))],
    "transpose": [S(x234, 0, 1), S(T((2, 3, 4), "float64", "step"), -1, 0), S(T(()), 0, -1),
                  S(T((3, 0)), 0, 1)],
    "t": [S(x23), S(T((3,))), S(T(())), S(T((2, 3), "float64", "T"))],
    "permute": [S(x234, (2, 0, 1)), Sm(T((2, 3), "float64", "step"), 1, 0), S(T(()), ())],
    "movedim": [S(x234, 0, -1), S(T((2, 3, 4), "float64", "T"), (0, 1), (2, 0))],
    "moveaxis": [S(x234, 1, 0), S(x234, (0, 2), (1, 0))],
    "squeeze": [S(T((2, 1, 3))), S(T((2, 1, 3)), 1), S(T((1, 1, 3), "float64", "step"), (0, 1)),
                S(T(())), S(T((1,)), 0), S(T((0, 1)), -1)],
    "unsqueeze": [S(x23, 0), S(T((2, 3), "float64", "T"), -1), S(T(()), 0), S(x23, 1)],
    "expand": [Sm(T((3, 1)), 3, 4), Sm(T((3, 1), "float64"), (2, -1, 5)), Sm(T(()), (2, 2)),
               Sm(T((1, 0)), 3, 0)],
    "expand_as": [Sm(T((3, 1)), T((3, 4))), Sm(T((), "float64"), T((2,)))],
    "broadcast_to": [S(T((3, 1)), (2, 3, 4)), S(T((2, 3), "float64", "T"), (2, 2, 3))],
    "narrow": [S(x34, 0, 1, 2), S(T((3, 4), "float64", "T"), -1, 0, 0), S(x34, 1, 1, 3)],
    "select": [S(x34, 0, 1), S(T((3, 4), "float64", "step"), -1, -1), S(x234, 1, 2)],
    "unbind": [S(x23), S(T((2, 3), "float64", "T"), 1), S(T((0, 2)), 1)],
    "split": [S(T((5, 3)), 2), S(T((5, 3), "float64", "T"), [2, 3]), S(T((2, 5)), 1, dim=1)],
    "chunk": [S(T((5, 3)), 2), S(T((5, 3), "float64", "step"), 3, 1), S(T((0, 2)), 2)],
    "diagonal": [S(x34), S(x34, 1), S(T((2, 3, 4), "float64", "T"), -1, 1, 2), S(x34, -5)],
    "as_strided": [S(x34, (2, 2), (1, 2)), S(T((3, 4), "float64"), (2,), (3,), 1)],
    "unfold": [Sm(T((2, 7)), 1, 3, 2), Sm(T((7,), "float64"), 0, 2, 1), Sm(T(()), 0, 1, 1)],
    "detach": [S(x23), S(T((2, 3), "float64", "T"))],
    "swapaxes": [S(x234, 0, 1), S(T((2, 3), "float64", "T"), -1, 0)],
    "swapdims": [S(x234, 0, 2), S(T((2, 3), "float64", "T"), 1, 0)],
    "alias": [S(x23), S(T((2, 3), "float64", "T"))],
}

CREATION = {
    "tensor": [S([[1, 2], [3, 4]]), S([1.5, 2.0], dtype=f64), S(3.0), S([]), S([True, False])],
    "as_tensor": [S([[1.0, 2.0]]), S([1, 2], dtype=f64), S(2)],
    "from_numpy": [S(np.arange(6.0).reshape(2, 3)), S(np.array([1, 2], dtype="int64")),
                   S(np.ones((2, 4), dtype="float32")[:, ::2])],
    "from_dlpack": [S(x23), S(T((2, 2), "int64"))],
    "zeros": [S(2, 3), S((0,)), S(()), S(2, dtype=i64)],
    "ones": [S(2, 3), S([0, 2]), S(3, dtype=f64)],
    "empty": [nv(2, 3), nv((0,)), nv(3, dtype=i64)],
    "empty_strided": [nv((2, 3), (1, 2)), nv((2,), (1,), dtype=f64)],
    "full": [S((2, 3), 1.5), S((2,), 7), S((2,), True), S((), 2.0, dtype=f64)],
    "zeros_like": [S(T((2, 3), "float32", "T")), S(x23, dtype=i64), S(T((2, 3), "float64", "step"))],
    "ones_like": [S(T((2, 3), "float32", "T")), S(T((2,), "int64"))],
    "empty_like": [nv(T((2, 3), "float32", "T")), nv(x23, dtype=f64)],
    "full_like": [S(x23, 2.5), S(T((2, 3), "int64", "T"), 3), S(x23, 1, dtype=i64)],
    "arange": [S(5), S(1, 4, 0.5), S(0, -3, -1), S(2.0), S(0, 5, dtype=f64), S(0)],
    "linspace": [S(0, 1, 5), S(-1, 1, 1), S(0, 1, 0), S(0, 10, 4, dtype=f64)],
    "logspace": [S(0, 2, 3), S(0, 1, 4, base=2), S(0, 1, 1)],
    "eye": [S(3), S(2, 4), S(0), S(2, dtype=i64)],
    "range": [S(0, 4), S(0, 1, 0.25)],
    "new_tensor": [Sm(T((2,)), [1, 2]), Sm(T((2,), "int64"), [1.5])],
    "new_zeros": [Sm(T((2,), "float64"), (2, 3)), Sm(T((2,), "int64"), 3)],
    "new_ones": [Sm(x23, (2,)), Sm(T((2,), "int64"), 2, 2)],
    "new_empty": [nvm(x23, (2,)), nvm(T((2,), "int64"), 3)],
    "new_full": [Sm(x23, (2,), 3.5), Sm(T((2,), "int64"), (1, 2), 4)],
}
RANDOM = {
    "rand": [nv(2, 3), nv((0,)), nv(2, dtype=f64)],
    "randn": [nv(2, 3), nv((), dtype=f64)],
    "randint": [nv(0, 5, (3,)), nv(3, (2, 2)), nv(-2, 2, (4,), dtype=i64)],
    "randperm": [nv(5), nv(0), nv(3, dtype=f64)],
    "rand_like": [nv(T((2, 3), "float32", "T")), nv(x23, dtype=f64)],
    "randn_like": [nv(x23), nv(T((2,), "float64"))],
    "randint_like": [nv(x23, 5), nv(T((2,), "int64"), 1, 4)],
    "normal": [nv(0.0, 1.0, (3,)), nv(T((3,)), 1.0), nv(T((2, 3)), T((2, 3), lo=0.1, hi=1))],
    "multinomial": [nv(T((4,), lo=0.1, hi=1), 2), nv(T((2, 4), lo=0.1, hi=1), 3, replacement=True),
                    nvm(T((3,), "float64", lo=0.1, hi=1), 1)],
    "bernoulli": [nv(T((3, 4), lo=0, hi=1)), nv(T((2,), "float64", lo=0, hi=1)),
                  nvm(T((2, 2)), 0.3)],
    "manual_seed": [nv(0), nv(2 ** 40)],
    "seed": [nv()],
    "initial_seed": [nv()],
    # ember's generator state is its own format: compare the dtype only
    "get_rng_state": [Sample((), post=lambda state: state.dtype)],
    "set_rng_state": [S(L(lambda lib: lib.get_rng_state()))],
}

COMPOSITE = {
    "to": [Sm(x23, f64), Sm(d34, dtype=i64), Sm(x23, "cpu"), Sm(T((2,), "int64"), T((1,), "float64"))],
    "type_as": [Sm(x23, T((1,), "int64")), Sm(T((2,), "int64"), T((1,), "float64"))],
    "contiguous": [Sm(T((2, 3), "float32", "T")), Sm(T((2, 4), "float64", "step")), Sm(x23)],
    "clone": [S(T((2, 3), "float32", "T")), S(T((2, 4), "float64", "step")), S(T(())), S(T((0, 2)))],
    "einsum": [S("ij,jk->ik", x23, T((3, 4))), S("ii", T((3, 3), "float64")),
               S("bij,bjk->bik", T((2, 2, 3), "float64", "T"), T((2, 3, 2), "float64")),
               S("i,i", T((3,)), T((3,))), S("ij->j", x23), S("i,j->ij", T((2,)), T((3,)))],
    "tensordot": [S(x234, T((3, 4, 2)), dims=2), S(T((2, 3), "float64"), T((3, 2), "float64"),
                                                    dims=([1], [0]))],
    "cdist": [Sample((T((3, 2)), T((4, 2))), tol=(1e-4, 1e-5)),
              Sample((T((2, 3, 2), "float64"), T((2, 4, 2), "float64")), {"p": 1.0})],
    "cat": [S([x23, T((1, 3))]), S([x23, T((2, 1))], dim=1), S([T((0, 3)), x23]),
            S([T((2,), "int64"), T((2,), "float64")]), S([T((2, 3), "float64", "T"), x23], -1),
            S((T(()), T(())))],
    "stack": [S([x23, x23]), S([x23, T((2, 3), "float32", "T")], dim=1), S([T(()), T(())]),
              S([T((2,), "float64"), T((2,), "int64")], -1)],
    "hstack": [S([x23, x23]), S([T((3,)), T((2,))]), S([T(()), T(())])],
    "vstack": [S([x23, x23]), S([T((3,)), T((3,))])],
    "dstack": [S([x23, x23]), S([T((3,)), T((3,))])],
    "column_stack": [S([x23, x23]), S([T((3,)), T((3, 2))])],
    "row_stack": [S([x23, x23]), S([T((3,)), T((3,))])],
    "broadcast_tensors": [S(T((3, 1)), T((4,))), S(T(()), T((2, 2), "float64", "T"))],
    "meshgrid": [S(T((3,)), T((2,)), indexing="ij"), S(T((3,)), T((2,)), indexing="xy"),
                 S([T((2,)), T((1,))], indexing="ij")],
    "atleast_1d": [S(T(())), S(T((3,))), S(x23)],
    "atleast_2d": [S(T(())), S(T((3,))), S(x23)],
    "atleast_3d": [S(T(())), S(T((3,))), S(x23), S(x234)],
    "tril_indices": [S(3, 3), S(4, 3, 1), S(3, 4, -1)],
    "triu_indices": [S(3, 3), S(4, 3, 1), S(3, 4, -1)],
    "tensor_split": [S(T((7, 3)), 3), S(T((7, 3), "float64", "T"), [1, 4]), S(T((7, 3)), 2, dim=1)],
    "hsplit": [S(T((2, 6)), 3), S(T((2, 6)), [1, 4])],
    "vsplit": [S(T((6, 2)), 2), S(T((6, 2), "float64", "T"), [1, 4])],
    "dsplit": [S(T((2, 2, 4)), 2)],
    "flip": [S(x23, (0,)), S(x23, [0, 1]), S(T((2, 3), "float64", "T"), (-1,)), S(T(()), ())],
    "fliplr": [S(x23), S(T((2, 3), "float64", "step"))],
    "flipud": [S(x23), S(T((3,), "int64"))],
    "roll": [S(x23, 1), S(x23, 1, 0), S(T((2, 3), "float64", "T"), (1, -1), (0, 1)), S(T((0,)), 2)],
    "rot90": [S(x23), S(x23, 2), S(T((2, 3), "float64", "T"), -1, (0, 1)), S(x234, 1, (1, 2))],
    "tile": [S(x23, (2,)), S(T((2, 3), "float64", "T"), (2, 1, 2)), S(T(()), (3,))],
    "repeat_interleave": [S(x23, 2), S(T((2, 3), "float64", "T"), 2, dim=0),
                          S(T((3,)), I([1, 2, 0])), S(I([1, 2, 3]))],
    "tril": [S(x34), S(x34, 1), S(T((3, 4), "float64", "T"), -1), S(x234)],
    "triu": [S(x34), S(x34, 1), S(T((3, 4), "float64", "T"), -1), S(x234)],
    "ravel": [S(T((2, 3), "float32", "T")), S(x23), S(T(()))],
}

_TOL = (1e-4, 1e-5)


def lin(*args, **kwargs):
    """A linear-algebra sample: float32 results compared to 1e-4 (BLAS orders sums freely)."""
    return Sample(args, kwargs, tol=_TOL)


EXTERN = {
    "mm": [lin(x23, T((3, 4))), lin(T((2, 3), "float64", "T"), T((3, 2), "float64")),
           lin(T((0, 3)), T((3, 2))), lin(T((2, 2), "int64"), T((2, 2), "int64"))],
    "bmm": [lin(T((2, 2, 3)), T((2, 3, 4))), lin(T((2, 2, 3), "float64", "T"), T((2, 3, 2), "float64"))],
    "mv": [lin(x23, T((3,))), lin(T((2, 3), "float64", "T"), T((3,), "float64"))],
    "dot": [lin(T((3,)), T((3,))), lin(T((4,), "float64", "step"), T((4,), "float64")),
            lin(T((3,), "int64"), T((3,), "int64"))],
    "vdot": [lin(T((3,)), T((3,))), lin(T((3,), "float64"), T((3,), "float64"))],
    "outer": [lin(T((3,)), T((2,))), lin(T((3,), "float64", "step"), T((2,), "float64"))],
    "ger": [lin(T((3,)), T((2,)))],
    "addmm": [lin(T((2, 4)), x23, T((3, 4))), lin(T((4,), "float64"), T((2, 3), "float64"),
                                                 T((3, 4), "float64"), beta=0.5, alpha=2)],
    "addmv": [lin(T((2,)), x23, T((3,))), lin(T((2,), "float64"), T((2, 3), "float64", "T"),
                                              T((3,), "float64"), alpha=0.5)],
    "addbmm": [lin(T((2, 4)), T((2, 2, 3)), T((2, 3, 4)))],
    "baddbmm": [lin(T((2, 2, 4)), T((2, 2, 3)), T((2, 3, 4))),
                lin(T((2, 4), "float64"), T((2, 2, 3), "float64"), T((2, 3, 4), "float64"),
                    beta=2)],
    "kron": [lin(T((2, 2)), T((2, 3))), lin(T((2,), "float64"), T((3,), "float64"))],
    "trace": [lin(T((3, 3))), lin(T((2, 3), "float64")), lin(T((3, 3), "int64"))],
    "diag": [S(T((3,))), S(x34), S(T((3,), "float64"), 1), S(x34, -1)],
    "diag_embed": [S(x23), S(T((3,), "float64"), 1), S(x234, 0, 0, 2)],
    "diagflat": [S(T((2, 2))), S(T((3,), "float64"), -1)],
    "cross": [lin(T((4, 3)), T((4, 3)), dim=1), lin(T((3,), "float64"), T((3,), "float64")),
              lin(T((3, 2), "float64", "T"), T((3, 2), "float64"), dim=0)],
    "repeat": [Sm(x23, 2, 1), Sm(T((3,), "float64"), (2, 2)), Sm(T(()), 2)],
    "index_select": [S(x34, 0, I([1, 0, 1])), S(T((3, 4), "float64", "T"), 1, I([3])),
                     S(x34, 1, I([]))],
    "gather": [S(x34, 1, I([[0, 1], [2, 3], [1, 1]])), S(T((3, 4), "float64", "T"), 0, I([[2, 0, 1, 0]]))],
    "index_add": [S(x34, 0, I([0, 2]), T((2, 4))), S(T((3, 4), "float64"), 1, I([1, 1]),
                                                      T((3, 2), "float64"), alpha=2)],
    "index_copy": [S(x34, 0, I([2, 0]), T((2, 4))), S(T((3, 4), "float64"), 1, I([3]), T((3, 1), "float64"))],
    "index_fill": [S(x34, 1, I([0, 2]), -1.0), S(T((3, 4), "float64", "T"), 0, I([1]), 2.0)],
    "scatter": [S(x34, 1, I([[0], [1], [2]]), T((3, 1))), S(T((3, 4), "float64"), 0, I([[2, 0, 1, 0]]), 2.0),
                S(x34, 1, I([[0, 0], [1, 1], [3, 3]]), T((3, 2)), reduce="add")],
    "scatter_add": [S(x34, 1, I([[0, 0], [1, 3], [2, 2]]), T((3, 2))),
                    S(T((3, 4), "float64"), 0, I([[2, 0, 2, 0]]), T((1, 4), "float64"))],
    "scatter_reduce": [S(x34, 1, I([[0, 0], [1, 3], [2, 2]]), T((3, 2)), "sum"),
                       S(x34, 1, I([[0, 0], [1, 3], [2, 2]]), T((3, 2)), "amax", include_self=False),
                       S(T((3, 4), "float64"), 0, I([[2, 0, 2, 0]]), T((1, 4), "float64"), "mean"),
                       S(x34, 1, I([[0, 0], [1, 3], [2, 2]]), T((3, 2)), "prod")],
    "index_put": [S(x34, (I([0, 2]),), T((4,))), S(T((3, 4), "float64"), (I([0, 0]), I([1, 1])),
                                                   T((2,), "float64"), accumulate=True),
                  S(x34, (B([True, False, True]),), T(()))],
    "masked_scatter": [S(x34, T((3, 4), "bool"), T((12,))), S(T((2, 3), "float64"), T((3,), "bool"),
                                                               T((2, 3), "float64"))],
    "masked_select": [S(x34, T((3, 4), "bool")), S(T((2, 3), "float64", "T"), T((3,), "bool")),
                      S(T((0, 3)), T((3,), "bool"))],
    "take": [S(x34, I([0, 5, 11])), S(T((3, 4), "float64", "T"), I([[1, 2], [0, 3]]))],
    "take_along_dim": [S(x34, I([[0], [3], [1]]), dim=1), S(T((3, 4), "float64"), I([[1, 0, 2, 2]]), 0),
                       S(x34, I([5, 0]))],
    "nonzero": [S(T((3, 4), "int64", lo=0, hi=1)), S(T((3, 4), "int64", lo=0, hi=1), as_tuple=True),
                S(T((), "bool")), S(T((0, 2)))],
    "argwhere": [S(T((3, 4), "int64", lo=0, hi=1)), S(T((2, 3), "bool", "T"))],
    "put": [S(x34, I([0, 5]), T((2,))), S(T((3, 4), "float64"), I([1, 1]), T((2,), "float64"),
                                        accumulate=True)],
    "inverse": [lin(T((3, 3), make="wellcond")), lin(T((2, 3, 3), "float64", make="wellcond"))],
    "det": [lin(T((3, 3), make="wellcond")), lin(T((2, 2, 2), "float64", "T")), lin(T((0, 0)))],
    "slogdet": [lin(T((3, 3), make="wellcond")), lin(T((2, 3, 3), "float64"))],
    "logdet": [lin(T((3, 3), make="spd")), lin(T((2, 2, 2), "float64", make="spd"))],
    "pinverse": [lin(T((3, 2))), lin(T((2, 3), "float64"))],
    "matrix_power": [lin(T((3, 3)), 2), lin(T((3, 3), "float64"), 0),
                     lin(T((3, 3), "float64", make="wellcond"), -1), lin(T((2, 2), "int64"), 3)],
    # U and V of an SVD are defined up to sign: compare the singular values and U S V^H
    "svd": [Sample((T((3, 2)),), tol=_TOL, post=lambda r: (r[1], r[0] * r[1][..., None, :] @ r[2].mT)),
            Sample((T((2, 3), "float64"),), {"some": False}, tol=_TOL, post=lambda r: r[1])],
    "cholesky": [lin(T((3, 3), make="spd")), lin(T((2, 2, 2), "float64", make="spd"))],
    "qr": [lin(T((3, 2))), lin(T((2, 3), "float64")), lin(T((3, 2), "float64"), some=False)],
    "matmul": [lin(x23, T((3, 4))), lin(T((3,), "float64"), T((3,), "float64")),
               lin(T((2, 2, 3)), T((3, 2))), lin(T((3,)), T((3, 2))),
               lin(T((2, 3), "float64", "T"), T((3, 2), "float64", "step")),
               lin(T((0, 3)), T((3, 2))), lin(T((2, 3), "int64"), T((3,), "int64"))],
}

x = T((3, 4))
OTHER_REDUCTIONS = {
    "sum_to_size": [Sm(x23, (1, 3)), Sm(T((2, 3), "float64", "T"), 3), Sm(x23, 2, 3)],
    "cumsum": [S(x34, 0), S(d34, 1), S(T(()), 0), S(T((0, 3)), 1),
               S(T((3, 4), "int64"), 1), S(x34, -1, dtype=f64)],
    "cumprod": [S(x34, 0), S(d34, 1), S(T(()), 0), S(T((3, 4), "int64"), 1)],
    "logcumsumexp": [S(x34, 0), S(d34, 1), S(T(()), 0), S(T((0, 3)), 1)],
    "cummax": [S(x34, 1), S(d34, 0), S(T(()), 0), S(T((0, 3)), 1)],
    "cummin": [S(x34, 1), S(d34, 0), S(T(()), 0)],
    "kthvalue": [S(x34, 2), S(d34, 1, 0), S(x34, 2, 1, True), S(T(()), 1)],
    "mode": [S(T((3, 5), "int64", lo=0, hi=2), 1), S(T((4,), "int64", values=[2, 1, 2, 3]))],
    "quantile": [S(x34, 0.5), S(d34, T((2,), "float64", values=[0.25, 0.75]), 0),
                 S(x34, 0.3, dim=1, keepdim=True), S(x34, 0.4, 1, interpolation="nearest")],
    "nanquantile": [S(T((3, 4), make="specials"), 0.5, 1), S(d34, 0.25)],
    "sort": [S(x34), S(d34, 0), S(x34, descending=True), S(T((3, 4), "int64", lo=0, hi=2), stable=True),
             S(T(())), S(T((0, 3)), 1)],
    "argsort": [S(x34), S(d34, 0, True), S(T((3, 4), "int64", lo=0, hi=2), stable=True)],
    "msort": [S(x34), S(d34)],
    "topk": [S(x34, 2), S(d34, 1, 0), S(x34, 2, largest=False), S(T((5,)), 0)],
    "unique": [S(T((3, 4), "int64", lo=0, hi=3)), S(T((6,), "int64", lo=0, hi=3), return_inverse=True,
                                                    return_counts=True),
               S(T((3, 2), "int64", lo=0, hi=1), dim=0), S(T((0,)))],
    "unique_consecutive": [S(I([1, 1, 2, 2, 3, 1, 1])), S(I([1, 1, 2, 3, 3]), return_counts=True,
                                                         return_inverse=True)],
    "histc": [S(T((10,)), bins=4, min=-2, max=2), S(T((2, 5), "float64")), S(T((0,)), 3)],
    "bincount": [S(I([0, 1, 1, 3])), S(I([0, 1, 1, 3]), weights=T((4,), "float64")),
                 S(I([2]), minlength=5), S(I([]))],
    "searchsorted": [S(I([1, 3, 5, 7]), I([0, 3, 6, 9])), S(I([1, 3, 5, 7]), I([3, 5]), right=True),
                     S(T((4,), "float64", values=[0.0, 1.0, 2.0, 3.0]), T((2, 2), "float64"),
                       side="right"), S(I([[1, 3], [2, 4]]), I([[2], [3]]))],
    "bucketize": [S(I([0, 3, 6, 9]), I([1, 3, 5, 7])), S(T((2, 3)), T((3,), values=[-1.0, 0.0, 1.0]),
                                                          right=True)],
    "var": [S(x34, 1, correction=0), S(d34, unbiased=False), S(x34, (0, 1), keepdim=True)],
    "std": [S(x34, 1, correction=2), S(d34, unbiased=True)],
    "norm": [S(x34, 1), S(x34, p=1, dim=0), S(d34, "fro"), S(x34, float("inf"), 1), S(T((0, 3)), 2, 1),
             S(x34, 3, (0, 1), True)],
    "max": [S(x34, T((3, 4))), S(T((0, 3)))],
    "min": [S(x34, T((4,)))],
}
_EXTRA = ("var", "std", "norm", "max", "min")   # extra rows on top of the generic reduction


SPECIAL = {**VIEWS, **CREATION, **RANDOM, **COMPOSITE, **EXTERN,
           **{k: v for k, v in OTHER_REDUCTIONS.items() if k not in _EXTRA}}
EXTRA = {k: OTHER_REDUCTIONS[k] for k in _EXTRA}
