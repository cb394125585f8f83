"""Error inputs of the remaining public ops: pointwise ops with their own signatures,
comparisons, losses, the *_like and new_* constructors, random ops, statistics and the other
small functions (error_inputs_ops.py gathers every table into ERRORS)."""
try:
    from ._make import E, Em, ErrorInput, L, Sample, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import E, Em, ErrorInput, L, Sample, T

x23, x34, x234, x3 = T((2, 3)), T((3, 4)), T((2, 3, 4)), T((3,))
RE, IE, TE, VE, NIE = RuntimeError, IndexError, TypeError, ValueError, NotImplementedError
NOT_TENSOR = r"must be Tensor, not str"
# (several overloads: torch's parser says "invalid combination of arguments")
NOT_TENSOR_ANY = r"must be Tensor, not str|invalid combination of arguments - got \(str"
REDUCTION = r"bad is not a valid value for reduction"
BROADCAST = r"The size of tensor a \(3\) must match the size of tensor b \(4\) at " \
            r"non-singleton dimension 1"


def _str_input(*names):
    """A string where the op's tensor argument goes."""
    return {n: [E("str input", TE, NOT_TENSOR, "a")] for n in names}


POINTWISE = {
    "_invert": [ErrorInput(Sample((x23,), method="__invert__"), TE,
                           r"~ \(operator\.invert\) is only implemented on integer and "
                           r"Boolean-type tensors", "float input")],
    "div": [E("bad rounding_mode", RE, r"div expected rounding_mode to be one of None, "
              r"'trunc', or 'floor' but found 'bad'", x23, x23, rounding_mode="bad"),
            E("broadcast", RE, BROADCAST, x23, T((4,)))],
    "divide": [E("bad rounding_mode", RE, r"div expected rounding_mode to be one of None, "
                 r"'trunc', or 'floor' but found 'bad'", x23, x23, rounding_mode="bad")],
    "clamp": [E("no bounds", RE, r"torch\.clamp: At least one of 'min' or 'max' must not be "
                r"None", x23),
              E("str input", TE, NOT_TENSOR_ANY, "a", 0.0, 1.0)],
    "clip": [E("no bounds", RE, r"torch\.clamp: At least one of 'min' or 'max' must not be "
               r"None", x23)],
    "clamp_min": [E("str input", TE, NOT_TENSOR_ANY, "a", 0.0)],
    "clamp_max": [E("str input", TE, NOT_TENSOR_ANY, "a", 0.0)],
    "where": [E("float condition", RE, r"where expected condition to be a boolean tensor, but "
                r"got a tensor with dtype Float", x23, x23, x23),
              E("broadcast", RE, BROADCAST, T((2, 3), "bool"), x23, T((2, 4)))],
    "masked_fill": [],
    "allclose": [E("broadcast", RE, BROADCAST, x23, T((2, 4)))],
    "isclose": [E("negative rtol", RE, r"rtol must be greater than or equal to zero, but got "
                  r"-1", x23, x23, rtol=-1.0),
                E("dtype mismatch", RE, r"Float did not match Double", x23,
                  T((2, 3), "float64"))],
    "equal": [E("str other", TE, NOT_TENSOR, x23, "a")],
    "ldexp": [E("broadcast", RE, BROADCAST, x23, T((4,), "int64"))],
    "rsub": [E("broadcast", RE, r"The size of tensor a \(4\) must match the size of tensor b "
               r"\(3\) at non-singleton dimension 1", x23, T((4,)))],
    "frexp": [E("int64 input", RE, r"torch\.frexp\(\) only supports floating-point dtypes",
                T((3,), "int64"))],
    "real": [E("str input", TE, NOT_TENSOR, "a")],
    # (the shapes are checked before the kernel's dtypes, as in torch's TensorIterator)
    "pow": [E("bool broadcast", RE, BROADCAST, T((2, 3), "bool"), T((4,), "bool"))],
}

LOSSES = {
    "hinge_embedding_loss": [E("bad reduction", VE, REDUCTION, x34, x34, reduction="bad")],
    "margin_ranking_loss": [E("bad reduction", VE, REDUCTION, x3, x3, x3, reduction="bad")],
    "soft_margin_loss": [E("bad reduction", VE, REDUCTION, x34, x34, reduction="bad")],
    "poisson_nll_loss": [E("bad reduction", VE, REDUCTION, x34, x34, reduction="bad")],
    "triplet_margin_loss": [E("bad reduction", VE, REDUCTION, x34, x34, x34,
                              reduction="bad")],
    "cosine_embedding_loss": [E("2-D target", RE, r"0D or 1D target tensor expected, "
                                r"multi-target not supported", x34, x34, x34)],
    "adaptive_avg_pool3d": [E("2-D input", RE, r"adaptive_avg_pool3d\(\): Expected 4D or 5D "
                              r"tensor, but got \[2, 3\]", x23, 2)],
}

CONSTRUCTORS = {
    **_str_input("empty_like", "ones_like", "zeros_like", "rand_like", "randn_like",
                 "clone", "detach", "ravel", "msort", "argwhere", "nonzero"),
    "rand_like": [E("int64 input", NIE, r"\"check_uniform_bounds\" not implemented for "
                    r"'Long'", T((3,), "int64"))],
    "randn_like": [E("int64 input", NIE, r"\"normal_kernel_cpu\" not implemented for 'Long'",
                     T((3,), "int64"))],
    "randint_like": [E("low >= high", RE, r"random_ expects 'from' to be less than 'to', but "
                       r"got from=5 >= to=5", x23, 5, 5)],
    "new_zeros": [Em("negative size", RE, r"Trying to create tensor with negative dimension "
                     r"-1: \[-1\]", x23, (-1,))],
    "new_ones": [Em("negative size", RE, r"Trying to create tensor with negative dimension "
                    r"-1: \[2, -1\]", x23, (2, -1))],
    "new_empty": [Em("negative size", RE, r"Trying to create tensor with negative dimension "
                     r"-1: \[-1\]", x23, (-1,))],
    "new_full": [Em("str value", TE, r"must be Number, not str", x23, (2,), "a")],
    "new_tensor": [Em("str data", TE, r"new\(\): invalid data type 'str'", x23, "a")],
    "new_empty_strided": [Em("length mismatch", RE, r"dimensionality of sizes \(2\) must match "
                             r"dimensionality of strides \(1\)", x23, (2, 3), (1,))],
    "as_tensor": [E("ragged", VE, r"expected sequence of length 2 at dim 1 \(got 1\)",
                    [[1, 2], [3]])],
    "scalar_tensor": [E("str value", TE, r"must be Number, not str", "a")],
    "from_numpy": [E("list input", TE, r"expected np\.ndarray \(got list\)", [1.0, 2.0])],
    "fill": [E("1-D value", RE, r"fill_ only supports 0-dimension value tensor but got tensor "
               r"with 1 dimensions\.", x23, T((2,)))],
    "fft_rfftfreq": [E("str n", TE, r"must be int, not str", "a")],
    "initial_seed": [E("extra argument", TE, r"takes 0 positional arguments but 1 was given",
                       1)],
    "seed": [E("extra argument", TE, r"takes 0 positional arguments but 1 was given", 1)],
    "get_rng_state": [E("extra argument", TE, r"takes 0 positional arguments but 1 was given",
                        1)],
    "to": [Em("bad device", RE, r"Expected one of cpu, cuda.* device type at start of device "
              r"string: bad", x23, "bad")],
    "sum_to_size": [Em("not expandable", RE, r"size \{\[5\]\} is not expandable to size "
                       r"\{\[2, 3\]\}\.", x23, 5)],
    "is_same_size": [Em("str other", TE, NOT_TENSOR, x23, "a")],
    "type_as": [Em("str other", TE, NOT_TENSOR, x23, "a")],
    "contiguous": [Em("channels_last of 2-D", RE, r"required rank 4 tensor to use "
                      r"channels_last format", x23,
                      memory_format=L(lambda lib: lib.channels_last))],
}

SHAPES = {
    "mT": [Em("1-D input", RE, r"tensor\.mT is only supported on matrices or batches of "
              r"matrices\. Got 1-D tensor\.", x3)],
    "adjoint": [Em("1-D input", RE, r"tensor\.adjoint\(\) is only supported on matrices or "
                   r"batches of matrices\. Got 1-D tensor\.", x3)],
    "flipud": [E("0-D input", RE, r"Input must be >= 1-d\.", T(()))],
    "atleast_2d": [E("str input", TE, r"invalid combination of arguments - got \(str\)|"
                     r"argument 'tensors' \(position 1\) must be tuple of Tensors, not str",
                     "a")],
    "atleast_3d": [E("str input", TE, r"invalid combination of arguments - got \(str\)|"
                     r"argument 'tensors' \(position 1\) must be tuple of Tensors, not str",
                     "a")],
    "as_strided_scatter": [E("src size", RE, r"expected src to have a size equal to the slice "
                             r"of self\. src size = \[3\], slice size = \[2, 2\]", x34, x3,
                             (2, 2), (1, 2))],
    "diagonal_scatter": [E("src size", RE, r"expected src to have a size equal to the slice "
                           r"of self\. src size = \[4\], slice size = \[3\]", x34, T((4,)))],
    "addr": [E("2-D vec1", RE, r"addr: Expected 1-D argument vec1, but got 2-D", x34, x23,
               T((4,)))],
    "cartesian_prod": [E("2-D input", RE, r"Expect a 1D vector, but got shape \[2, 3\]", x23,
                         x3)],
    "combinations": [E("2-D input", RE, r"Expect a 1D vector, but got shape \[2, 3\]", x23),
                     E("negative r", RE, r"Expect a non-negative number, but got -1", x3,
                       r=-1)],
    "vander": [E("2-D input", RE, r"x must be a one-dimensional tensor\.", x23),
               E("negative N", RE, r"N must be non-negative\.", x3, N=-1)],
    "bucketize": [E("2-D boundaries", RE, r"boundaries tensor must be 1 dimension, but got "
                    r"dim\(2\)", x3, x23)],
    "histc": [E("zero bins", RE, r"torch\.histogram\(\): bins must be > 0, but got 0 for "
                r"dimension 0", x3, bins=0),
              E("min > max", RE, r"max must be larger than min", x3, bins=3, min=2, max=1)],
    "cov": [E("3-D input", RE, r"cov\(\): expected input to have two or fewer dimensions but "
              r"got an input with 3 dimensions", x234)],
    "corrcoef": [E("3-D input", RE, r"corrcoef\(\): expected input to have two or fewer dimensions "
                   r"but got an input with 3 dimensions", x234)],
    "lu": [E("1-D input", RE, r"torch\.lu_factor: Expected tensor with 2 or more dimensions\. "
             r"Got size: \[3\] instead", x3)],
    "ormqr": [E("1-D input", RE, r"torch\.ormqr: input must have at least 2 dimensions\.", x3,
                x3, x23)],
    "stft": [E("n_fft too big", RE, r"expected 0 < n_fft < 3, but got n_fft=8", x3, 8,
               center=False, return_complex=True),
             E("no return_complex", RE, r"stft requires the return_complex parameter be given "
               r"for real inputs", T((16,)), 4)],
    "istft": [E("real input", RE, r"istft requires a complex-valued input tensor", T((3, 4)),
                4)],
    "_standard_gamma": [E("int64 input", NIE, r"not implemented for 'Long'",
                          T((3,), "int64", lo=1, hi=3))],
    "_sample_dirichlet": [E("int64 input", NIE, r"not implemented for 'Long'",
                            T((3,), "int64", lo=1, hi=3))],
}
del POINTWISE["masked_fill"]

piv = L(lambda lib: lib.tensor([1, 2, 3], dtype=lib.int32))
lu = T((3, 3), "float64", make="wellcond")
LU_SOLVE = (r"linalg\.lu_solve: Incompatible shapes of A and B for the equation AX = B "
            r"\(3x3 and 2x2\)")
SOLVERS = {
    "linalg_lu_solve": [E("B mismatch", RE, LU_SOLVE, lu, piv, T((2, 2), "float64"))],
    "lu_solve": [E("B mismatch", RE, LU_SOLVE, T((2, 2), "float64"), lu, piv)],
    "linalg_ldl_solve": [E("B mismatch", RE, r"Incompatible matrix sizes for "
                           r"torch\.linalg\.ldl_solve: each A matrix is 3 by 3 but each b "
                           r"matrix is 2 by 2", lu, piv, T((2, 2), "float64"))],
    "linalg_tensorsolve": [E("shape mismatch", RE, r"Expected self to satisfy the requirement "
                             r"prod\(self\.shape\[other\.ndim:\]\) == "
                             r"prod\(self\.shape\[:other\.ndim\]\), but got 6 != 5",
                             T((6, 2, 3), "float64"), T((5,), "float64"))],
    "isin": [E("two numbers", TE, r"isin\(\) received an invalid combination of arguments - "
               r"got \(int, int\)", 1, 2)],
    "binomial": [E("int64 count", VE, r"binomial only supports floating-point dtypes for "
                   r"count, got: Long", T((3,), "int64", lo=1, hi=5), T((3,), lo=0, hi=1))],
    "histogramdd": [E("bins length", RE, r"histogramdd: The size of bins must be equal to the "
                      r"innermost dimension of the input\.", T((10, 2), "float64"), [3])],
}

EIGEN_AND_STATE = {
    "linalg_eig": [E("non-square", RE, r"linalg\.eig: A must be batches of square matrices, but "
                     r"they are 2 by 3 matrices", x23),
                   E("1-D input", RE, r"linalg\.eig: The input tensor A must have at least 2 "
                     r"dimensions\.", x3)],
    "linalg_eigvals": [E("non-square", RE, r"linalg\.eigvals: A must be batches of square "
                         r"matrices, but they are 2 by 3 matrices", x23)],
    "set_rng_state": [E("str state", TE, r"torch\.ByteTensor", "a"),
                      E("float state", TE, r"torch\.ByteTensor", x3)],
    "get_device": [E("str input", TE, r"get_device\(\): argument 'input' \(position 1\) "
                     r"must be Tensor, not str", "a")],
}

MISC = {}
for _table in (POINTWISE, LOSSES, CONSTRUCTORS, SHAPES, SOLVERS, EIGEN_AND_STATE):
    for _k, _v in _table.items():
        MISC[_k] = MISC.get(_k, []) + _v
