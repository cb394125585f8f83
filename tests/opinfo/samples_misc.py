"""Samples of the top-level functions of ember/ops/misc_functions.py and misc_tensor.py
(differences and integrals, statistics, construction, the *_scatter ops, index_reduce,
histograms, predicates), and DOMAINS rows for the pointwise ops of misc_ops.py."""
try:
    from ._make import I, L, S, Sample, Sm, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import I, L, S, Sample, Sm, T

x23, x34 = T((2, 3)), T((3, 4))
d23 = T((2, 3), "float64")
v3, v4 = T((3,), "float64"), T((4,), "float64")

DOMAINS = {
    "gcd": [dict(lo=-9, hi=9), dict(lo=-9, hi=9)], "lcm": [dict(lo=-9, hi=9), dict(lo=-9, hi=9)],
    "ldexp": [{}, dict(lo=-3, hi=3)],
}


def nv(*args, **kwargs):
    return Sample(args, kwargs, values=False)


SPECIAL = {
    # self and src of one shape: torch's gradients (self: the slice of g; src: the rest)
    # then match the forward's values, so gradcheck can check them
    "slice_inverse": [S(x34, T((3, 4)), 0), S(T((3, 4), "float64"), T((3, 4), "float64"), 1, 0, 4),
                      S(T((2, 3), "float64"), T((2, 3), "float64"), -1, None, None, 1)],
    "diff": [S(T((5,), "int64", lo=-9, hi=9)), S(T((3, 4), "float64", "T"), 2, 0),
             S(T((4,), "bool")), S(d23, 1, -1, T((2, 1), "float64"), T((2, 2), "float64")),
             S(T((2, 0))), S(T(()))],
    "trapezoid": [S(T((3,), "float64")), S(T((3,), "int64")), S(d23, T((3,), "float64")),
                  S(T((3, 2), "float64", "T"), dx=0.5, dim=0), S(d23, 2.0), S(T((2, 0)))],
    "trapz": [S(d23, T((3,), "float64")), S(T((4,)), dx=2.0)],
    "cumulative_trapezoid": [S(d23, dx=2.0), S(d23, T((2, 3), "float64")), S(T((3,), "int64"))],
    "cov": [S(T((3, 5), "float64")), S(T((4,), "float64")), S(T((3, 4), "int64")),
            S(T((2, 4), "float64", "T"), correction=0),
            S(T((2, 4), "float64"), fweights=I([1, 2, 1, 3]),
              aweights=T((4,), "float64", lo=0.5, hi=2.0, grad=False)),
            S(T((2, 2, 2)))],
    "corrcoef": [S(T((3, 5), "float64")), S(T((2, 4), "float32", "T"))],
    "isin": [S(I([1, 2, 3, 4]), I([2, 4, 7])), S(I([[1, 2], [3, 1]]), 1), S(2, I([1, 2])),
             S(T((2, 3), values=[[1.0, 2.0, 3.0], [0.5, 2.0, 9.0]]), I([2, 3]), invert=True),
             S(T((0,)), I([1]))],
    "block_diag": [S(T((2, 2), "float64"), T((), "float64"), T((3,), "float64")),
                   S(I([[1, 2]]), T((2, 1))), S()],
    "cartesian_prod": [S(I([1, 2]), I([3, 4, 5])), S(v3, T((2,), "float64")), S(I([1, 2])),
                       S(x23, I([1]))],
    "combinations": [S(I([1, 2, 3, 4])), S(v4, 3), S(I([1, 2, 3]), 2, True), S(v3, 0),
                     S(I([1, 2]), 3), S(x23)],
    "vander": [S(I([1, 2, 3])), S(v3, N=4, increasing=True), S(v3, 0), S(T((2,)), N=3),
               S(x23)],
    "linalg_vander": [S(v3), S(T((2, 3), "float64", "T"), N=4), S(I([1, 2, 3])), S(v3, N=1),
                      S(v3, N=0), S(T(())), S(T((2,), "bool"))],
    "scalar_tensor": [S(3), S(True), S(2.5, dtype=L(lambda lib: lib.float64)),
                      S(7, dtype=L(lambda lib: lib.int64))],
    "unravel_index": [S(I([4, 7, 0]), (2, 4)), S(I(3), (2, 2)), S(I([-1, 9]), (2, 3)),
                      S(I([[1, 2], [3, 0]]), (4,)), S(T((2,)), (2, 2))],
    "inner": [S(x23, T((4, 3))), S(T((), "float64"), d23), S(v3, v3), S(x23, T((2,)))],
    "dist": [S(d23, T((2, 3), "float64")), S(d23, v3, 1), S(d23, v3, float("inf")),
             S(v3, v3, 0)],
    "addr": [S(d23, T((2,), "float64"), v3), S(T((2, 3), "float64", "T"), T((2,), "float64"),
                                                v3, beta=2, alpha=0.5),
             S(T((2, 3), "bool"), T((2,), "bool"), T((3,), "bool")),
             S(T((3,), "float64"), T((2,), "float64"), v3), S(d23, x23, v3)],
    "rsub": [S(d23, T((2, 3), "float64")), S(d23, 2.0), S(d23, v3, alpha=3)],
    "chain_matmul": [S(T((2, 3), "float64"), T((3, 4), "float64"), T((4, 1), "float64")),
                     S(T((2, 2), "float64"))],
    "frobenius_norm": [S(d23, (0, 1)), S(T((2, 3, 2), "float64"), (1, 2), True)],
    "nuclear_norm": [S(T((3, 2), "float64")), S(T((2, 3)), True),
                     S(T((2, 2, 3), "float64"), (0, 2), True)],
    "histogram": [S(T((6,)), 4), S(T((2, 3), "float64"), 3, range=(-1.0, 1.0)),
                  S(T((5,), "float64"), T((4,), "float64", values=[-2.0, -0.5, 0.5, 2.0]),
                    weight=T((5,), "float64"), density=True),
                  S(T((3,), values=[1.0, 1.0, 1.0]), 2), S(T((3,), "int64"), 3)],
    "histogramdd": [S(T((10, 2), "float64"), [3, 2]),
                    S(T((8, 2)), 3, range=[-2.0, 2.0, -2.0, 2.0], density=True),
                    S(T((6, 2), "int64"), 2)],
    "frexp": [S(T((3, 4), "float64", lo=-50, hi=50)), S(T((2, 3), "float32", "T")),
              Sample((T((2, 3), make="specials"),), grad=False), S(I([1, 2]))],
    # (non-negative integer exponents first: torch's forward AD of ldexp computes 2 ** -k
    # in integers, giving a zero tangent)
    "ldexp": [S(T((3,), "float64"), I([1, 0, 3])),
              S(T((2, 3), "float64"), T((3,), "float64", lo=-2, hi=2)), S(I([1, 2]), I([2, 3])),
              S(T((3,), "float64"), I([1, -2, 3])), S(T((2,)), 2)],
    "select_scatter": [S(d23, v3, 0, 1), S(d23, T((2,), "float64"), 1, -1),
                       S(d23, T((2,), "float64"), 0, 1)],
    "slice_scatter": [S(T((4, 3), "float64"), T((2, 3), "float64"), 0, 1, 4, 2),
                      S(T((4, 3), "float64"), T((4, 1), "float64"), 1, 2),
                      S(T((4, 3)), T((1, 3)), 0, 0, 3)],
    "diagonal_scatter": [S(T((3, 3), "float64"), T((2,), "float64"), 1),
                         S(T((3, 4), "float64"), v3), S(T((3, 3)), T((2,)))],
    "as_strided_scatter": [S(T((3, 3), "float64"), v3, (3,), (4,)),
                           S(T((2, 3), "float64"), T((2, 2), "float64"), (2, 2), (3, 1), 1)],
    "index_reduce": [S(T((3, 2), "float64"), 0, I([0, 0, 2]), T((3, 2), "float64"), r)
                     for r in ("prod", "mean", "amax", "amin")]
    + [S(T((3, 2), "float64"), 1, I([1, 1, 0]), T((3, 3), "float64"), "mean",
         include_self=False),
       S(T((3, 2)), 0, I([0, 1]), T((2, 2)), "sum")],
    "renorm": [S(T((2, 3), "float64", lo=0.5, hi=2.0, signed=True), 2, 0, 1.5),
               S(T((3, 2), "float64", "T", lo=0.5, hi=2.0, signed=True), 1, 1, 2.0),
               S(v3, 2, 0, 1.0), S(T((2, 2), "int64"), 2, 0, 1.0)],
    "nonzero_static": [S(I([0, 1, 0, 2]), size=3), S(T((2, 3), "bool"), size=2, fill_value=9),
                       S(x23, size=0)],
    "fill": [S(x23, 2.5), S(T((2, 3), "int64"), 2.7), S(d23, T((), "float64")), S(x23, T((2,)))],
    "is_same_size": [S(x23, x23), S(x23, T((3, 2)))],
    "get_device": [S(x23), Sm(x23)],
    "typename": [S(x23), S(T((2,), "int64")), S(3)],
    "split_with_sizes": [S(d23, [1, 2], 1), S(T((4, 2), "float64"), [3, 1]), S(x23, [1, 1], 1)],
    # torch defines no derivative for heaviside (backward raises): no gradcheck samples
    "heaviside": [Sample(a, grad=False) for a in (
        (T((3, 4), values=[[-1.0, 0.0, 2.0, 0.0]] * 3), T((3, 4))),
        (T((2, 3), "float64", "T"), T((3,), "float64")),
        (I([1, 0, -1]), I([7])), (T((2,)), T((2,), "float64")), (T((2,)), 1.0),
        (T((2,), "complex64"), T((2,), "complex64")))],
    "new_empty_strided": [Sample((x23, (2, 3), (1, 2)), {}, method=True, values=False),
                          Sample((d23, (4,), (1,)), {"dtype": L(lambda lib: lib.int64)},
                                 method=True, values=False)],
}
