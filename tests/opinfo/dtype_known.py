"""The dtype cases where ember still differs from torch (tests/opinfo/test_generated_dtypes.py).
(op, dtype) -> what differs. This list may only shrink: an entry that starts to agree fails
the test until it is removed. Most of what is left: ember's linalg refuses complex input (spurious errors), raises
RuntimeError where torch's kernel dispatch raises NotImplementedError for float16/bfloat16
and integer inputs, and a few composites accept dtypes torch refuses with its own checks."""
KNOWN = {
    ('complex', 'float16'):
        'spurious: ember raised TypeError: complex: ember has no complex32 (chalf) dtype',
    ('det', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.det: Expected a floating point or complex tensor as input. Got ...',
    ('geqrf', 'complex64'):
        'spurious: ember raised RuntimeError: geqrf: Expected a floating point or complex tensor as input. Got Compl...',
    ('histogramdd', 'uint8'):
        'ember raised NotImplementedError, torch RuntimeError: value cannot be converted to type uint8_t without ove...',
    ('inverse', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.inv: Expected a floating point or complex tensor as input. Got ...',
    ('lerp', 'complex64'):
        'spurious: ember raised NotImplementedError: "lerp_kernel_tensor" not implemented for \'ComplexFloat\'',
    ('linalg_cholesky_ex', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.cholesky_ex: Expected a floating point or complex tensor as inp...',
    ('linalg_eigh', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.eigh: Expected a floating point or complex tensor as input. Got...',
    ('linalg_eigvalsh', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.eigvalsh: Expected a floating point or complex tensor as input....',
    ('linalg_inv', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.inv: Expected a floating point or complex tensor as input. Got ...',
    ('linalg_inv_ex', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.inv_ex: Expected a floating point or complex tensor as input. G...',
    ('linalg_ldl_factor_ex', 'complex64'):
        'spurious: ember raised RuntimeError: torch.linalg.ldl_factor_ex: Expected a floating point or complex tenso...',
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
    ('linalg_solve_ex', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.solve_ex: Expected a floating point or complex tensor as input....',
    ('linalg_solve_triangular', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.solve_triangular: Expected a floating point or complex tensor a...',
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
    ('norm', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.vector_norm: Expected a floating point or complex tensor as inp...',
    ('nuclear_norm', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.svdvals: Expected a floating point or complex tensor as input. ...',
    ('pinverse', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.pinv(ComplexFloat{[3, 2]}): expected a tensor with 2 or more di...',
    ('qr', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.qr: Expected a floating point or complex tensor as input. Got C...',
    ('slogdet', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.slogdet: Expected a floating point or complex tensor as input. ...',
    ('svd', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.svd: Expected a floating point or complex tensor as input. Got ...',
    ('triplet_margin_loss', 'complex64'):
        'spurious: ember raised RuntimeError: linalg.vector_norm: Expected a floating point or complex tensor as inp...',
    ('view_as_complex', 'float16'):
        'spurious: ember raised RuntimeError: view_as_complex is only supported for half, float and double tensors, ...',
    ('soft_margin_loss', 'complex64'):
        'spurious: ember raised NotImplementedError: clamp is not supported for complex types',
}
