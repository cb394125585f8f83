"""Divergences from torch that the fuzzer (tests/fuzz/fuzzer.py) finds at its CI seed and
that are not fixed yet: (op, mutation, outcome) -> what differs (the first case's detail).
This list may only shrink: test_fuzz.py fails on a divergence missing here and on an entry
that no longer happens. Outcomes: wrong_value (a silently wrong result), accepted_bad (torch
raises, ember returns), spurious_error (ember raises, torch returns), error_class (both
raise, with different exception classes).
"""
KNOWN = {
    # ---- wrong_value ----
    # ---- accepted_bad ----
    # ---- spurious_error ----
    # ---- error_class ----
    # (alias has no public torch name: torch's side is torch.ops.aten.alias, whose schema
    # check raises RuntimeError where a public function's parser raises TypeError, as ember)
    ('alias', 'tensor_list', 'error_class'):
        "torch RuntimeError: aten::alias() Expected a value of type 'Tensor' for argument 'self' but instead found type 'list'. | ember TypeError: ...",
    ('alias', 'tensor_str', 'error_class'):
        "torch RuntimeError: aten::alias() Expected a value of type 'Tensor' for argument 'self' but instead found type 'str'. | ember TypeError: ...",
    ('arange', 'int_huge', 'error_class'):
        'torch RuntimeError: upper bound and lower bound inconsistent with step sign | ember ValueError: Overflow when unpacking long long',
    ('from_dlpack', 'tensor_str', 'error_class'):
        'torch RuntimeError: from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have alr...',
    ('index_copy', 'extra_dim', 'error_class'):
        'torch IndexError: index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality (2),...',
    ('max_unpool2d', 'dim_str', 'error_class'):
        "torch TypeError: unsupported operand type(s) for +: 'int' and 'str' | ember ValueError: invalid literal for int() with base 10: 'x'",
    ('max_unpool2d', 'dim_too_negative', 'error_class'):
        'torch ValueError: max_unpooling: output_size must contain non-negative spatial dimensions, but got output_size[0]=-6 | ember RuntimeError...',
    ('multinomial', 'zero_size', 'error_class'):
        'torch RuntimeError: cannot sample n_sample > prob_dist.size(-1) samples without replacement | ember ValueError: cannot reshape array of s...',
    ('new_full', 'int_huge', 'error_class'):
        'torch RuntimeError: value cannot be converted to type int64_t without overflow | ember ValueError: Overflow when unpacking long long',
    ('unfold', 'int_negative', 'error_class'):
        'torch RuntimeError: size is -1 but must be >= 0 | ember ValueError: strides is incompatible with shape of requested array and size of buffer',
    # ---- found when the issue-20 ops (complex, fft, special, linalg, misc) were merged,
    # in the session that added them: not fixed yet ----
    ('igamma', 'bool', 'wrong_value'):
        'result 0: values differ',
    ('special_shifted_chebyshev_polynomial_w', 'specials', 'wrong_value'):
        'result 0: values differ',
    ('adjoint', 'last_dim_plus_one', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('adjoint', 'zero_size', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('fft_ihfft', 'extra_dim', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('fft_ihfft', 'last_dim_plus_one', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('fft_ihfft', 'zero_size', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('index_reduce', 'last_dim_plus_one', 'accepted_bad'):
        'torch RuntimeError: source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [3, 3] source.s...',
    ('isin', 'dim_bool', 'accepted_bad'):
        'torch RuntimeError: Unsupported input type encountered for isin(): Bool',
    ('linalg_householder_product', 'bool', 'accepted_bad'):
        'torch RuntimeError: torch.linalg.householder_product: tau dtype Bool does not match input dtype Double',
    ('ormqr', 'bool', 'accepted_bad'):
        'torch RuntimeError: torch.ormqr: Expected input and tau to have the same dtype, but input has dtypeDouble and tau has dtype Bool',
    ('stft', 'bool', 'accepted_bad'):
        'torch NotImplementedError: "reflection_pad1d" not implemented for \'Bool\'',
    ('geqrf', 'zero_size', 'spurious_error'):
        'ember ValueError: cannot reshape array of size 0 into shape (0,3)',
    ('linalg_cond', 'zero_size', 'spurious_error'):
        'ember RuntimeError: linalg.cond: A must be batches of square matrices, but they are 0 by 3 matrices',
    ('linalg_lu', 'zero_size', 'spurious_error'):
        'ember ValueError: cannot reshape array of size 0 into shape (0,3)',
    ('lu', 'zero_size', 'spurious_error'):
        'ember ValueError: cannot reshape array of size 0 into shape (0,3)',
    ('histogram', 'dim_str', 'error_class'):
        'torch TypeError: histogram() received an invalid combination of arguments - got (Tensor, str), but expected one of:',
    ('histogram', 'extra_dim', 'error_class'):
        'torch RuntimeError: torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its inner...',
    ('linalg_cond', 'int_huge', 'error_class'):
        'torch RuntimeError: linalg.cond got an invalid norm type: 9.22337e+18 | ember ValueError: Overflow when unpacking long long',
    ('linalg_cond', 'specials', 'error_class'):
        'torch RuntimeError: linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values. | ember ValueError...',
    ('stft', 'bool', 'error_class'):
        'torch NotImplementedError: "reflection_pad1d" not implemented for \'Bool\' | ember RuntimeError: stft requires the return_complex parameter...',
    ('stft', 'dim_str', 'error_class'):
        "torch TypeError: unsupported operand type(s) for //: 'str' and 'int' | ember RuntimeError: stft requires the return_complex parameter be ...",
    ('stft', 'int_huge', 'error_class'):
        'torch RuntimeError: Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (461168601842738790...',
    ('stft', 'int_negative', 'error_class'):
        'torch RuntimeError: stft(torch.DoubleTensor[18], n_fft=-1, hop_length=-1, win_length=-1, window=None, normalized=0, onesided=None, return...',
    ('stft', 'tensor_list', 'error_class'):
        "torch AttributeError: 'list' object has no attribute 'dim' | ember TypeError: stft(): argument 'input' (position 1) must be Tensor, not list",
}
