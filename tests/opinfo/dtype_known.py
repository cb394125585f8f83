"""The dtype cases where ember still differs from torch (tests/opinfo/test_generated_dtypes.py).
(op, dtype) -> what differs. This list may only shrink: an entry that starts to agree fails
the test until it is removed. Most of what is left: ember's linalg refuses complex input (spurious errors), raises
RuntimeError where torch's kernel dispatch raises NotImplementedError for float16/bfloat16
and integer inputs, and a few composites accept dtypes torch refuses with its own checks."""
KNOWN = {
    ('_invert', 'complex64'):
        'ember raised NotImplementedError, torch TypeError: ~ (operator.invert) is only implemented on integer and B...',
    ('argmax', 'complex64'):
        'ember raised NotImplementedError, torch RuntimeError: argmax(): does not support complex input',
    ('argmin', 'complex64'):
        'ember raised NotImplementedError, torch RuntimeError: argmin(): does not support complex input',
    ('argsort', 'complex64'):
        'ember raised NotImplementedError, torch RuntimeError:  Sort does not support complex dtypes on CPU',
    ('complex', 'float16'):
        'spurious: ember raised TypeError: complex: ember has no complex32 (chalf) dtype',
    ('cross', 'bool'):
        'ember raised TypeError, torch NotImplementedError: "cross" not implemented for \'Bool\'',
    ('det', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.det: Expected a floating point or complex tensor as input. Got ...',
    ('geqrf', 'complex64'):
        'spurious: ember raised RuntimeError: geqrf: Expected a floating point or complex tensor as input. Got Compl...',
    ('histogramdd', 'uint8'):
        'ember raised NotImplementedError, torch RuntimeError: value cannot be converted to type uint8_t without ove...',
    ('index_fill', 'uint8'):
        'ember raised OverflowError, torch RuntimeError: value cannot be converted to type uint8_t without overflow',
    ('inverse', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.inv: Expected a floating point or complex tensor as input. Got ...',
    ('lerp', 'complex64'):
        'spurious: ember raised NotImplementedError: "lerp_kernel_tensor" not implemented for \'ComplexFloat\'',
    ('linalg_cholesky_ex', 'bfloat16'):
        'ember raised RuntimeError, torch NotImplementedError: "cholesky_cpu" not implemented for \'BFloat16\'',
    ('linalg_cholesky_ex', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.cholesky_ex: Expected a floating point or complex tensor as inp...',
    ('linalg_cholesky_ex', 'float16'):
        'ember raised RuntimeError, torch NotImplementedError: "cholesky_cpu" not implemented for \'Half\'',
    ('linalg_eigh', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.eigh: Expected a floating point or complex tensor as input. Got...',
    ('linalg_eigvalsh', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.eigvalsh: Expected a floating point or complex tensor as input....',
    ('linalg_inv', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.inv: Expected a floating point or complex tensor as input. Got ...',
    ('linalg_inv_ex', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.inv_ex: Expected a floating point or complex tensor as input. G...',
    ('linalg_ldl_factor_ex', 'bfloat16'):
        'ember raised RuntimeError, torch NotImplementedError: "ldl_factor_kernel_cpu" not implemented for \'BFloat16\'',
    ('linalg_ldl_factor_ex', 'complex64'):
        'spurious: ember raised RuntimeError: torch.linalg.ldl_factor_ex: Expected a floating point or complex tenso...',
    ('linalg_ldl_factor_ex', 'float16'):
        'ember raised RuntimeError, torch NotImplementedError: "ldl_factor_kernel_cpu" not implemented for \'Half\'',
    ('linalg_lu', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.lu: Expected a floating point or complex tensor as input. Got C...',
    ('linalg_lu_factor', 'complex64'):
        'spurious: ember raised RuntimeError: torch.linalg.lu_factor_ex: Expected a floating point or complex tensor...',
    ('linalg_lu_factor_ex', 'complex64'):
        'spurious: ember raised RuntimeError: torch.linalg.lu_factor_ex: Expected a floating point or complex tensor...',
    ('linalg_matrix_rank', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.matrix_rank: Expected a floating point or complex tensor as inp...',
    ('linalg_qr', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.qr: Expected a floating point or complex tensor as input. Got C...',
    ('linalg_solve', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.solve: Expected a floating point or complex tensor as input. Go...',
    ('linalg_solve_ex', 'bfloat16'):
        'ember raised RuntimeError, torch NotImplementedError: "lu_cpu" not implemented for \'BFloat16\'',
    ('linalg_solve_ex', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.solve_ex: Expected a floating point or complex tensor as input....',
    ('linalg_solve_ex', 'float16'):
        'ember raised RuntimeError, torch NotImplementedError: "lu_cpu" not implemented for \'Half\'',
    ('linalg_solve_triangular', 'bfloat16'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'BFloat16\'',
    ('linalg_solve_triangular', 'bool'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Bool\'',
    ('linalg_solve_triangular', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.solve_triangular: Expected a floating point or complex tensor a...',
    ('linalg_solve_triangular', 'float16'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Half\'',
    ('linalg_solve_triangular', 'int16'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Short\'',
    ('linalg_solve_triangular', 'int32'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Int\'',
    ('linalg_solve_triangular', 'int64'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Long\'',
    ('linalg_solve_triangular', 'int8'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Char\'',
    ('linalg_solve_triangular', 'uint8'):
        'ember raised RuntimeError, torch NotImplementedError: "triangular_solve_cpu" not implemented for \'Byte\'',
    ('linalg_svd', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.svd: Expected a floating point or complex tensor as input. Got ...',
    ('linalg_svdvals', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.svdvals: Expected a floating point or complex tensor as input. ...',
    ('logcumsumexp', 'complex64'):
        'spurious: ember raised NotImplementedError: "logcumsumexp_out_cpu" not implemented for \'ComplexFloat\'',
    ('logdet', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.slogdet: Expected a floating point or complex tensor as input. ...',
    ('matrix_exp', 'bfloat16'):
        'spurious: ember raised RuntimeError: linalg.matrix_exp: Low precision dtypes not supported. Got BFloat16',
    ('matrix_exp', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.matrix_exp: Expected a floating point or complex tensor as inpu...',
    ('matrix_exp', 'float16'):
        'spurious: ember raised RuntimeError: linalg.matrix_exp: Low precision dtypes not supported. Got Half',
    ('msort', 'complex64'):
        'ember raised NotImplementedError, torch RuntimeError:  Sort does not support complex dtypes on CPU',
    ('norm', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.vector_norm: Expected a floating point or complex tensor as inp...',
    ('nuclear_norm', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.svdvals: Expected a floating point or complex tensor as input. ...',
    ('pinverse', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.pinv(ComplexFloat{[3, 2]}): expected a tensor with 2 or more di...',
    ('polar', 'float16'):
        'ember raised TypeError, torch NotImplementedError: "polar_cpu" not implemented for \'Half\'',
    ('qr', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.qr: Expected a floating point or complex tensor as input. Got C...',
    ('rms_norm', 'bool'):
        'ember raised TypeError, torch NotImplementedError: "rms_norm" not implemented for \'Bool\'',
    ('rms_norm', 'int16'):
        'ember raised TypeError, torch NotImplementedError: "rms_norm" not implemented for \'Short\'',
    ('rms_norm', 'int32'):
        'ember raised TypeError, torch NotImplementedError: "rms_norm" not implemented for \'Int\'',
    ('rms_norm', 'int64'):
        'ember raised TypeError, torch NotImplementedError: "rms_norm" not implemented for \'Long\'',
    ('rms_norm', 'int8'):
        'ember raised TypeError, torch NotImplementedError: "rms_norm" not implemented for \'Char\'',
    ('rms_norm', 'uint8'):
        'ember raised TypeError, torch NotImplementedError: "rms_norm" not implemented for \'Byte\'',
    ('scaled_dot_product_attention', 'bool'):
        'ember raised NotImplementedError, torch RuntimeError: expected scalar type Float but found Bool',
    ('slogdet', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.slogdet: Expected a floating point or complex tensor as input. ...',
    ('sort', 'complex64'):
        'ember raised NotImplementedError, torch RuntimeError:  Sort does not support complex dtypes on CPU',
    ('svd', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.svd: Expected a floating point or complex tensor as input. Got ...',
    ('topk', 'complex64'):
        'ember raised NotImplementedError, torch RuntimeError:  topk does not support complex dtypes on CPU',
    ('triplet_margin_loss', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.vector_norm: Expected a floating point or complex tensor as inp...',
    ('view_as_complex', 'float16'):
        'spurious: ember raised RuntimeError: view_as_complex is only supported for half, float and double tensors, ...',
    ('soft_margin_loss', 'complex64'):
        'spurious: ember raised NotImplementedError: clamp is not supported for complex types',
}
