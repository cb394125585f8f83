"""The error inputs of linear algebra, fft and the nn functions (error_inputs_ops.py has the
others and the ERRORS table; error_inputs.py the generic ones and the record)."""
try:
    from ._make import E, I, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import E, I, T

x23, x34, x234, x3 = T((2, 3)), T((3, 4)), T((2, 3, 4)), T((3,))
RE, IE, TE, VE, NIE = RuntimeError, IndexError, TypeError, ValueError, NotImplementedError
SQUARE = r"must be batches of square matrices, but they are 2 by 3 matrices"
AT_LEAST_2D = r"must have at least 2 dimensions"


def _square(name, *extra, float_check=True, kernel=None):
    """Linear algebra on square matrices: a 2x3 matrix, a vector, and an integer matrix
    (refused by the op's own check, or with `kernel`, the NotImplementedError of a kernel
    without integer loops)."""
    out = [E("non-square", RE, SQUARE, x23, *extra), E("1-D input", RE, AT_LEAST_2D, x3, *extra)]
    i33 = T((3, 3), "int64")
    if kernel:
        out.append(E("int64 input", NIE, f'"{kernel}" not implemented for \'Long\'', i33, *extra))
    elif float_check:
        out.append(E("int64 input", RE, r"Expected a floating point or complex tensor as "
                     r"input\. Got Long", i33, *extra))
    return out



spd = T((3, 3), make="spd")
LINALG = {
    "linalg_inv": _square("linalg_inv"),
    "linalg_inv_ex": _square("linalg_inv_ex"),
    "inverse": _square("inverse"),
    "det": _square("det"),
    "logdet": _square("logdet"),
    "slogdet": _square("slogdet"),
    "linalg_cholesky": _square("linalg_cholesky"),
    "linalg_cholesky_ex": _square("linalg_cholesky_ex"),
    "cholesky": _square("cholesky", kernel="cholesky_cpu"),
    "linalg_eigh": _square("linalg_eigh", kernel="linalg_eigh_cpu") + [
        E("bad UPLO", RE, r"Expected UPLO argument to be 'L' or 'U', but got X", spd, "X")],
    "linalg_eigvalsh": _square("linalg_eigvalsh", kernel="linalg_eigh_cpu"),
    "matrix_exp": _square("matrix_exp", float_check=False),
    "matrix_power": [E("non-square", RE, SQUARE, x23, 2),
                     E("1-D input", RE, AT_LEAST_2D, x3, 2),
                     E("negative power of ints", RE, r"Expected a floating point or complex "
                       r"tensor as input\. Got Long", T((3, 3), "int64"), -1)],
    "linalg_solve": [E("non-square A", RE, SQUARE, x23, T((2, 1))),
                     E("B mismatch", RE, r"Incompatible shapes of A and B for the equation AX "
                       r"= B \(3x3 and 2x1\)", T((3, 3), make="wellcond"), T((2, 1))),
                     E("dtype mismatch", RE, r"Expected A and B to have the same dtype, but "
                       r"found A of type Float and B of type Double instead",
                       T((3, 3), make="wellcond"), T((3, 1), "float64"))],
    "linalg_solve_ex": [E("non-square A", RE, SQUARE, x23, T((2, 1)))],
    "linalg_solve_triangular": [E("non-square A", RE, SQUARE, x23, T((2, 1)), upper=True),
                                E("B mismatch", RE, r"Incompatible shapes of A and B for the "
                                  r"equation AX = B \(3x3 and 2x1\)", T((3, 3)), T((2, 1)),
                                  upper=True)],
    "linalg_lstsq": [E("row mismatch", RE, r"torch\.linalg\.lstsq: input\.size\(-2\) should "
                       r"match other\.size\(-2\)", T((4, 3)), T((3, 2))),
                     E("1-D input", RE, r"torch\.linalg\.lstsq: input must have at least 2 "
                       r"dimensions\.", T((4,)), T((4, 2)))],
    "linalg_qr": [E("bad mode", RE, r"qr received unrecognized mode 'x' but expected one of "
                    r"'reduced' \(default\), 'r', or 'complete'", x23, "x"),
                  E("1-D input", RE, r"linalg\.qr: The input tensor A must have at least 2 "
                    r"dimensions\.", x3)],
    "linalg_svd": [E("1-D input", RE, r"linalg\.svd: The input tensor A must have at least 2 "
                     r"dimensions\.", x3),
                   E("int64 input", RE, r"linalg\.svd: Expected a floating point or complex "
                     r"tensor as input\. Got Long", T((2, 3), "int64"))],
    "linalg_svdvals": [E("1-D input", RE, r"linalg\.svd: The input tensor A must have at "
                         r"least 2 dimensions\.", x3)],
    "linalg_matrix_rank": [E("1-D input", RE, r"linalg\.matrix_rank: The input tensor input "
                             r"must have at least 2 dimensions\.", x3)],
    "linalg_lu": [E("1-D input", RE, r"linalg\.lu: Expected tensor with 2 or more dimensions\. "
                    r"Got size: \[3\] instead", x3)],
    "linalg_lu_factor": [E("1-D input", RE, r"torch\.lu_factor: Expected tensor with 2 or more "
                           r"dimensions\. Got size: \[3\] instead", x3)],
    "linalg_lu_factor_ex": [E("1-D input", RE, r"torch\.lu_factor: Expected tensor with 2 or "
                              r"more dimensions\. Got size: \[3\] instead", x3)],
    "linalg_ldl_factor": _square("linalg_ldl_factor", float_check=False),
    "linalg_ldl_factor_ex": _square("linalg_ldl_factor_ex", float_check=False),
    "linalg_vecdot": [E("size mismatch", RE, r"The size of tensor a \(3\) must match the size "
                        r"of tensor b \(4\) at non-singleton dimension 1", x23, T((2, 4)))],
    "linalg_householder_product": [
        E("tau too long", RE, r"torch\.linalg\.householder_product: input\.shape\[-1\] must be "
          r"greater than or equal to tau\.shape\[-1\]", T((3, 2)), T((3,)))],
    "linalg_tensorinv": [E("bad ind", RE, r"Expected a strictly positive integer for 'ind', "
                           r"but got 0", T((4, 2, 2)), 0)],
    "linalg_vander": [E("0-D input", RE, r"N must be greater than 1\.", T(()))],
    "linalg_cond": [E("bad p", RE, r"linalg\.cond got an invalid norm type: 3",
                      T((3, 3)), 3)],
    "qr": [E("1-D input", RE, r"linalg\.qr: The input tensor A must have at least 2 "
             r"dimensions\.", x3)],
    "svd": [E("1-D input", RE, r"linalg\.svd: input should have at least 2 dimensions, but "
              r"has 1 dimensions instead", x3)],
    "pinverse": [E("1-D input", RE, r"linalg\.pinv\(Float\{\[3\]\}\): expected a tensor with 2 or "
                   r"more dimensions of float, double, cfloat or cdouble types", x3)],
    "cholesky_solve": [E("1-D input", RE, r"b should have at least 2 dimensions, but has 1 "
                         r"dimensions instead", x3, T((3, 3)))],
    "cholesky_inverse": [E("1-D input", RE, r"must have at least 2 dimensions", x3)],
    "triangular_solve": [E("1-D input", RE, r"torch\.triangular_solve: Expected b to have at "
                           r"least 2 dimensions, but it has 1 dimensions instead", x3,
                           T((3, 3)))],
    "nuclear_norm": [E("1-D input", RE, r"linalg\.matrix_norm: The input tensor A must have "
                       r"at least 2 dimensions\.", x3)],
    "frobenius_norm": [E("three dims", RE, r"Expected at most 2 dimensions, but got 3 "
                         r"dimensions instead\.|linalg\.matrix_norm: dim must be a 2-tuple",
                         x234, (0, 1, 2))],
    "geqrf": [E("1-D input", RE, r"torch\.geqrf: input must have at least 2 dimensions\.", x3)],
    "orgqr": [E("1-D input", RE, r"torch\.linalg\.householder_product: input must have at "
                r"least 2 dimensions\.", x3, T((1,)))],
    "lu_unpack": [E("int pivots needed", RE, r"lu_unpack: LU_pivots is expected to be a "
                    r"contiguous tensor of torch\.int32 dtype", T((3, 3)), T((3,)))],
}

FFT = {
    "fft_fft": [E("zero n", RE, r"Invalid number of data points \(0\) specified", x3, 0)],
    "fft_ifft": [E("zero n", RE, r"Invalid number of data points \(0\) specified", x3, 0)],
    "fft_rfft": [E("zero n", RE, r"Invalid number of data points \(0\) specified", x3, 0),
                 E("complex input", RE, r"rfft expects a real input tensor, but got "
                   r"ComplexFloat", T((3,), "complex64"))],
    "fft_irfft": [E("zero n", RE, r"Invalid number of data points \(0\) specified", x3, 0)],
    "fft_hfft": [E("zero n", RE, r"Invalid number of data points \(0\) specified", x3, 0)],
    "fft_ihfft": [E("complex input", RE, r"ihfft expects a real input tensor, but got "
                    r"ComplexFloat", T((3,), "complex64"))],
    "fft_fft2": [E("1-D input", IE, r"Dimension out of range \(expected to be in range of "
                   r"\[-1, 0\], but got -2\)", x3),
                 E("bad norm", RE, r"Invalid normalization mode: \"bad\"", x23, norm="bad")],
    "fft_fftn": [E("s/dim length", RE, r"When given, dim and shape arguments must have the "
                   r"same length", x23, s=(2, 2), dim=(0,))],
    "fft_rfftn": [E("complex input", RE, r"rfftn expects a real-valued input tensor, but got "
                    r"ComplexFloat", T((2, 3), "complex64"))],
}

NN = {
    "softmax": [E("0-D dim 1", IE, r"Dimension out of range \(expected to be in range of "
                  r"\[-1, 0\], but got 1\)", T(()), 1)],
    "cross_entropy": [E("target out of range", IE, r"Target 5 is out of bounds\.", x34,
                        I([0, 5, 1])),
                      E("batch mismatch", VE, r"Expected input batch_size \(3\) to match target "
                        r"batch_size \(2\)\.", x34, I([0, 1])),
                      E("bad reduction", VE, r"bad is not a valid value for reduction", x34,
                        I([0, 1, 2]), reduction="bad")],
    "nll_loss": [E("target out of range", IE, r"Target 5 is out of bounds\.", x34,
                   I([0, 5, 1])),
                 E("batch mismatch", VE, r"Expected input batch_size \(3\) to match target "
                   r"batch_size \(2\)\.", x34, I([0, 1])),
                 E("float target", RE, r"expected target dtype to be Long or Byte, but got "
                   r"Float", x34,
                   T((3,)))],
    "mse_loss": [E("bad reduction", VE, r"bad is not a valid value for reduction", x34, x34,
                   reduction="bad"),
                 E("not broadcastable", RE, r"The size of tensor a \(4\) must match the size "
                   r"of tensor b \(3\) at non-singleton dimension 1", x34, T((3, 3)))],
    "l1_loss": [E("bad reduction", VE, r"bad is not a valid value for reduction", x34, x34,
                  reduction="bad")],
    "smooth_l1_loss": [E("negative beta", RE, r"smooth_l1_loss does not support negative "
                         r"values for beta\.", x34, x34, beta=-1.0)],
    "huber_loss": [E("negative delta", RE, r"huber_loss does not support non-positive values "
                     r"for delta\.", x34, x34, delta=-1.0)],
    "binary_cross_entropy": [E("size mismatch", VE, r"Using a target size \(\w+\.Size\(\[3\]"
                               r"\)\) that is different to the input size \(\w+\.Size\(\[3, "
                               r"4\]\)\) is deprecated\. Please ensure they have the same size\.",
                               T((3, 4), lo=0.1, hi=0.9), T((3,), lo=0, hi=1))],
    "binary_cross_entropy_with_logits": [
        E("size mismatch", VE, r"Target size \(\w+\.Size\(\[3\]\)\) must be the same as "
          r"input size \(\w+\.Size\(\[3, 4\]\)\)", x34, T((3,), lo=0, hi=1))],
    "kl_div": [E("bad reduction", VE, r"bad is not a valid value for reduction", x34, x34,
                 reduction="bad")],
    "layer_norm": [E("shape mismatch", RE, r"Given normalized_shape=\[4\], expected input with "
                     r"shape \[\*, 4\], but got input of size\[2, 3\]", x23, (4,)),
                   E("weight mismatch", RE, r"Expected weight to be of same shape as "
                     r"normalized_shape, but got weight of shape \[2\] and normalized_shape "
                     r"= \[3\]", x23, (3,), T((2,)))],
    "rms_norm": [E("shape mismatch", RE, r"Given normalized_shape=\[4\], expected input with "
                   r"shape \[\*4\], but got input of size\[2, 3\]", x23, (4,))],
    "conv1d": [E("channel mismatch", RE, r"Given groups=1, weight of size \[4, 2, 3\], "
                 r"expected input\[2, 3, 8\] to have 2 channels, but got 3 channels instead",
                 T((2, 3, 8)), T((4, 2, 3))),
               E("4-D input", RE, r"Expected 2D \(unbatched\) or 3D \(batched\) input to "
                 r"conv1d, but got input of size: \[1, 2, 3, 8\]", T((1, 2, 3, 8)),
                 T((4, 2, 3))),
               E("kernel too big", RE, r"Kernel size can't be greater than actual input size",
                 T((1, 2, 2)), T((1, 2, 3))),
               E("bad padding", RE, r"Invalid padding string: 'bad'", T((2, 3, 8)),
                 T((4, 3, 3)), padding="bad")],
    "conv2d": [E("channel mismatch", RE, r"Given groups=1, weight of size \[2, 2, 3, 3\], "
                 r"expected input\[1, 3, 6, 6\] to have 2 channels, but got 3 channels instead",
                 T((1, 3, 6, 6)), T((2, 2, 3, 3))),
               E("groups", RE, r"Given groups=2, expected weight to be divisible by 2 at "
                 r"dimension 0, but got weight of size \[?\[3, 1, 3, 3\]\]? instead",
                 T((1, 2, 6, 6)), T((3, 1, 3, 3)), groups=2),
               E("negative stride", RE, r"non-positive stride is not supported",
                 T((1, 3, 6, 6)), T((2, 3, 3, 3)), stride=-1)],
    "conv3d": [E("channel mismatch", RE, r"Given groups=1, weight of size \[2, 1, 2, 2, 2\], "
                 r"expected input\[1, 2, 4, 4, 4\] to have 1 channels, but got 2 channels "
                 r"instead", T((1, 2, 4, 4, 4)), T((2, 1, 2, 2, 2)))],
    "conv_transpose2d": [E("channel mismatch", RE, r"Given transposed=1, weight of size \[3, "
                           r"3, 3, 3\], expected input\[1, 2, 4, 4\] to have 3 channels, but "
                           r"got 2 channels instead", T((1, 2, 4, 4)), T((3, 3, 3, 3)))],
    "conv_transpose1d": [E("channel mismatch", RE, r"Given transposed=1, weight of size \[2, "
                           r"2, 3\], expected input\[1, 3, 5\] to have 2 channels, but got 3 "
                           r"channels instead", T((1, 3, 5)), T((2, 2, 3)))],
    "pad": [E("odd pad length", RE, r"Padding length must be divisible by 2", x34, (1,)),
            E("pad too long", RE, r"Padding length should be less than or equal to two times "
              r"the input dimension but got padding length 6 and input of dimension 2", x34,
              (1, 1, 1, 1, 1, 1)),
            E("reflect too wide", RE, r"Argument #4: Padding size should be less than the "
              r"corresponding input dimension, but got: padding \(3, 3\) at dimension 2 of "
              r"input \[1, 2, 3\]", T((1, 2, 3)), (3, 3), mode="reflect"),
            E("bad mode", NIE, r"Unrecognised padding mode bad|padding mode", x34,
              (1, 1), mode="bad")],
    "max_pool3d": [E("zero stride", RE, r"stride should not be zero", T((1, 2, 4, 4, 4)), 2,
                     stride=0),
                   E("pad too big", RE, r"pad should be at most half of effective kernel size, "
                     r"but got pad=2, kernel_size=2 and dilation=1", T((1, 2, 4, 4, 4)), 2,
                     padding=2)],
    "avg_pool3d": [E("pad too big", RE, r"pad should be at most half of effective kernel size, "
                     r"but got pad=2, kernel_size=2 and dilation=1", T((1, 2, 4, 4, 4)), 2,
                     padding=2)],
    "prelu": [E("weight size", RE, r"Mismatch of parameter numbers and input channel size\. "
                r"Found parameter numbers = 2 and channel size = 3\.", T((2, 3, 4)), T((2,)))],
    "scaled_dot_product_attention": [
        E("head dim mismatch", RE, r"Expected size for first two dimensions of batch2 tensor "
          r"to be: \[2, 4\] but got: \[2, 3\]\.",
          x234, T((2, 5, 3)), T((2, 5, 3)))],
    "grid_sample": [E("bad mode", VE, r"nn\.functional\.grid_sample\(\): expected mode to be "
                      r"'bilinear', 'nearest' or 'bicubic', but got: 'bad'",
                      T((1, 2, 4, 4)), T((1, 3, 3, 2)), mode="bad")],
    "multi_margin_loss": [E("bad p", VE, r"only p == 1 and p == 2 supported", x34,
                            I([0, 3, 1]), p=3)],
    "gelu": [E("bad approximate", RE, r"approximate argument must be either none or tanh\.",
               x23, approximate="bad")],
    "cdist": [E("feature mismatch", RE, r"X1 and X2 must have the same number of columns\. "
                r"X1: 2 X2: 3", T((3, 2)), T((4, 3))),
              E("negative p", RE, r"cdist only supports non-negative p values", T((3, 2)),
                T((4, 2)), p=-1.0)],
    "dist": [E("not broadcastable", RE, r"The size of tensor a \(3\) must match the size of "
               r"tensor b \(4\) at non-singleton dimension 1", x23, T((2, 4)))],
}

