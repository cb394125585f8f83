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
    ('max', 'dim_none', 'accepted_bad'):
        'torch TypeError: max() received an invalid combination of arguments - got (Tensor, NoneType), but expected one of: * (Tensor input, *, Te...',
    ('median', 'dim_none', 'accepted_bad'):
        "torch TypeError: median(): argument 'dim' (position 2) must be int, not NoneType",
    ('nanmedian', 'dim_none', 'accepted_bad'):
        "torch TypeError: nanmedian(): argument 'dim' (position 1) must be int, not NoneType",
    ('scatter', 'tensor_list', 'accepted_bad'):
        'torch TypeError: scatter() received an invalid combination of arguments - got (Tensor, int, Tensor, list, reduce=str), but expected one o...',
    ('sum_to_size', 'dim_float', 'accepted_bad'):
        'torch TypeError: sum_to_size() takes 1 positional argument but 2 were given',
    # ---- spurious_error ----
    ('index_add', 'zero_size', 'spurious_error'):
        'ember RuntimeError: index 0 is out of bounds for dimension 0 with size 0',
    # ---- error_class ----
    # (alias has no public torch name: torch's side is torch.ops.aten.alias, whose schema
    # check raises RuntimeError where a public function's parser raises TypeError, as ember)
    ('alias', 'tensor_list', 'error_class'):
        "torch RuntimeError: aten::alias() Expected a value of type 'Tensor' for argument 'self' but instead found type 'list'. | ember TypeError: ...",
    ('alias', 'tensor_str', 'error_class'):
        "torch RuntimeError: aten::alias() Expected a value of type 'Tensor' for argument 'self' but instead found type 'str'. | ember TypeError: ...",
    ('arange', 'int_huge', 'error_class'):
        'torch RuntimeError: upper bound and lower bound inconsistent with step sign | ember ValueError: Overflow when unpacking long long',
    ('cholesky', 'int64', 'error_class'):
        'torch NotImplementedError: "cholesky_cpu" not implemented for \'Long\' | ember RuntimeError: linalg.cholesky: Expected a floating point or ...',
    ('column_stack', 'tensor_str', 'error_class'):
        "torch TypeError: expected Tensor as element 0 in argument 0, but got str | ember AttributeError: 'str' object has no attribute 'dim'",
    ('conv1d', 'tensor_list', 'error_class'):
        'torch TypeError: conv1d() received an invalid combination of arguments - got (Tensor, list), but expected one of: * (Tensor input, Tenso ...',
    ('conv2d', 'tensor_list', 'error_class'):
        'torch TypeError: conv2d() received an invalid combination of arguments - got (Tensor, list, NoneType, int, int, int, int), but expected o...',
    ('cross_entropy', 'tensor_str', 'error_class'):
        "torch TypeError: cross_entropy_loss(): argument 'target' (position 2) must be Tensor, not str | ember AttributeError: 'str' object has no...",
    ('dstack', 'tensor_str', 'error_class'):
        "torch TypeError: expected Tensor as element 1 in argument 0, but got str | ember AttributeError: 'str' object has no attribute 'shape'",
    ('embedding', 'tensor_list', 'error_class'):
        "torch TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not list | ember AttributeError: 'list' object has no attri...",
    ('from_dlpack', 'tensor_str', 'error_class'):
        'torch RuntimeError: from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have alr...',
    ('hstack', 'tensor_str', 'error_class'):
        "torch TypeError: expected Tensor as element 1 in argument 0, but got str | ember AttributeError: 'str' object has no attribute 'shape'",
    ('index_copy', 'extra_dim', 'error_class'):
        'torch IndexError: index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality (2),...',
    ('layer_norm', 'tensor_list', 'error_class'):
        "torch TypeError: layer_norm(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attrib...",
    ('layer_norm', 'tensor_str', 'error_class'):
        "torch TypeError: layer_norm(): argument 'input' (position 1) must be Tensor, not str | ember AttributeError: 'str' object has no attribut...",
    ('linalg_svd', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_svd(): argument 'A' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribute ...",
    ('log_softmax', 'tensor_list', 'error_class'):
        "torch TypeError: log_softmax(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attri...",
    ('matrix_power', 'tensor_str', 'error_class'):
        "torch TypeError: matrix_power(): argument 'input' (position 1) must be Tensor, not str | ember AttributeError: 'str' object has no attrib...",
    ('max_unpool2d', 'dim_str', 'error_class'):
        "torch TypeError: unsupported operand type(s) for +: 'int' and 'str' | ember ValueError: invalid literal for int() with base 10: 'x'",
    ('max_unpool2d', 'dim_too_negative', 'error_class'):
        'torch ValueError: max_unpooling: output_size must contain non-negative spatial dimensions, but got output_size[0]=-6 | ember RuntimeError...',
    ('multinomial', 'zero_size', 'error_class'):
        'torch RuntimeError: cannot sample n_sample > prob_dist.size(-1) samples without replacement | ember ValueError: cannot reshape array of s...',
    ('new_full', 'int_huge', 'error_class'):
        'torch RuntimeError: value cannot be converted to type int64_t without overflow | ember ValueError: Overflow when unpacking long long',
    ('pinverse', 'tensor_list', 'error_class'):
        "torch TypeError: pinverse(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribut...",
    ('poisson_nll_loss', 'tensor_list', 'error_class'):
        "torch TypeError: poisson_nll_loss(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no ...",
    ('pow', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1 | ember NotImplementedError...',
    ('remainder', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1 | ember NotImplementedError...',
    ('rms_norm', 'tensor_str', 'error_class'):
        "torch TypeError: rms_norm(): argument 'weight' (position 3) must be Tensor, not str | ember RuntimeError: Given normalized_shape=[2], exp...",
    ('std_mean', 'dim_float', 'error_class'):
        'torch TypeError: std_mean() received an invalid combination of arguments - got (Tensor, float), but expected one of: * (Tensor input, tu ...',
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
    ('bartlett_window', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('blackman_window', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('fft_ihfft', 'extra_dim', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('fft_ihfft', 'last_dim_plus_one', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('fft_ihfft', 'zero_size', 'accepted_bad'):
        "torch RuntimeError: Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead.",
    ('fft_rfftfreq', 'dim_bool', 'accepted_bad'):
        "torch TypeError: fft_rfftfreq(): argument 'n' (position 1) must be int, not bool",
    ('hamming_window', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('index_reduce', 'dim_too_negative', 'accepted_bad'):
        'torch IndexError: Dimension out of range (expected to be in range of [-2, 1], but got -8)',
    ('index_reduce', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('index_reduce', 'last_dim_plus_one', 'accepted_bad'):
        'torch RuntimeError: source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [3, 3] source.s...',
    ('isin', 'dim_bool', 'accepted_bad'):
        'torch RuntimeError: Unsupported input type encountered for isin(): Bool',
    ('isin', 'tensor_list', 'accepted_bad'):
        'torch TypeError: isin() received an invalid combination of arguments - got (int, list), but expected one of:',
    ('linalg_householder_product', 'bool', 'accepted_bad'):
        'torch RuntimeError: torch.linalg.householder_product: tau dtype Bool does not match input dtype Double',
    ('ormqr', 'bool', 'accepted_bad'):
        'torch RuntimeError: torch.ormqr: Expected input and tau to have the same dtype, but input has dtypeDouble and tau has dtype Bool',
    ('polygamma', 'dim_bool', 'accepted_bad'):
        "torch TypeError: polygamma(): argument 'n' (position 1) must be int, not bool",
    ('renorm', 'dim_too_big', 'accepted_bad'):
        'torch IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 7)',
    ('select_scatter', 'dim_bool', 'accepted_bad'):
        "torch TypeError: select_scatter(): argument 'index' (position 3) must be int, not bool",
    ('slice_scatter', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
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
    ('bitwise_xor', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1 | ember NotImplementedError...',
    ('cholesky_inverse', 'tensor_list', 'error_class'):
        "torch TypeError: cholesky_inverse(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no ...",
    ('copysign', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1 | ember NotImplementedError...',
    ('copysign', 'zero_size', 'error_class'):
        'torch RuntimeError: The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0 | ember NotImplementedError...',
    ('fft_fftfreq', 'dim_float', 'error_class'):
        "torch TypeError: fft_fftfreq(): argument 'n' (position 1) must be int, not float | ember ValueError: n should be an integer",
    ('fft_fftfreq', 'dim_none', 'error_class'):
        "torch TypeError: fft_fftfreq(): argument 'n' (position 1) must be int, not NoneType | ember ValueError: n should be an integer",
    ('fft_fftfreq', 'int_negative', 'error_class'):
        'torch RuntimeError: Trying to create tensor with negative dimension -1: [-1] | ember ValueError: negative dimensions are not allowed',
    ('floor_divide', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 | ember NotImplementedError...',
    ('fmod', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1 | ember NotImplementedError...',
    ('gcd', 'zero_size', 'error_class'):
        'torch RuntimeError: The size of tensor a (3) must match the size of tensor b (0) at non-singleton dimension 1 | ember NotImplementedError...',
    ('ge', 'zero_size', 'error_class'):
        'torch RuntimeError: The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0 | ember NotImplementedError...',
    ('histogram', 'dim_str', 'error_class'):
        'torch TypeError: histogram() received an invalid combination of arguments - got (Tensor, str), but expected one of:',
    ('histogram', 'extra_dim', 'error_class'):
        'torch RuntimeError: torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its inner...',
    ('igammac', 'zero_size', 'error_class'):
        'torch RuntimeError: The size of tensor a (2) must match the size of tensor b (0) at non-singleton dimension 0 | ember NotImplementedError...',
    ('istft', 'dim_bool', 'error_class'):
        "torch TypeError: istft(): argument 'n_fft' (position 2) must be int, not bool | ember RuntimeError: istft(ember.ComplexDoubleTensor[5, 11...",
    ('lcm', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 1 | ember NotImplementedError...',
    ('linalg_cond', 'int_huge', 'error_class'):
        'torch RuntimeError: linalg.cond got an invalid norm type: 9.22337e+18 | ember ValueError: Overflow when unpacking long long',
    ('linalg_cond', 'specials', 'error_class'):
        'torch RuntimeError: linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values. | ember ValueError...',
    ('linalg_householder_product', 'tensor_str', 'error_class'):
        "torch TypeError: linalg_householder_product(): argument 'input' (position 1) must be Tensor, not str | ember AttributeError: 'str' object...",
    ('linalg_inv_ex', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_inv_ex(): argument 'A' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribu...",
    ('linalg_ldl_factor', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_ldl_factor(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no...",
    ('linalg_ldl_factor', 'tensor_str', 'error_class'):
        "torch TypeError: linalg_ldl_factor(): argument 'input' (position 1) must be Tensor, not str | ember AttributeError: 'str' object has no a...",
    ('linalg_ldl_factor_ex', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_ldl_factor_ex(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has...",
    ('linalg_lu_factor', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_lu_factor(): argument 'A' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attr...",
    ('linalg_lu_factor_ex', 'tensor_str', 'error_class'):
        "torch TypeError: linalg_lu_factor_ex(): argument 'A' (position 1) must be Tensor, not str | ember AttributeError: 'str' object has no att...",
    ('linalg_lu_solve', 'tensor_str', 'error_class'):
        "torch TypeError: linalg_lu_solve(): argument 'B' (position 3) must be Tensor, not str | ember AttributeError: 'str' object has no attribu...",
    ('linalg_tensorinv', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_tensorinv(): argument 'input' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no ...",
    ('linalg_vander', 'tensor_list', 'error_class'):
        "torch TypeError: linalg_vander(): argument 'x' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribu...",
    ('lu_unpack', 'tensor_str', 'error_class'):
        "torch TypeError: lu_unpack(): argument 'LU_data' (position 1) must be Tensor, not str | ember AttributeError: 'str' object has no attribu...",
    ('ormqr', 'tensor_list', 'error_class'):
        "torch TypeError: ormqr(): argument 'input2' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribute ...",
    ('polygamma', 'dim_float', 'error_class'):
        "torch TypeError: polygamma(): argument 'n' (position 1) must be int, not float | ember RuntimeError: polygamma(n, x) does not support neg...",
    ('renorm', 'dim_none', 'error_class'):
        "torch TypeError: renorm(): argument 'p' (position 2) must be Number, not NoneType | ember RuntimeError: renorm: Expected a floating point...",
    ('renorm', 'dim_str', 'error_class'):
        "torch TypeError: renorm(): argument 'dim' (position 3) must be int, not str | ember RuntimeError: renorm: input needs at least 2 dimensio...",
    ('renorm', 'dim_too_negative', 'error_class'):
        'torch IndexError: Dimension out of range (expected to be in range of [-2, 1], but got -8) | ember RuntimeError: renorm: Expected a floati...',
    ('slice_scatter', 'dim_bool', 'error_class'):
        "torch TypeError: slice_scatter(): argument 'dim' (position 3) must be int, not bool | ember RuntimeError: expected src to have a size equ...",
    ('split_with_sizes', 'dim_bool', 'error_class'):
        "torch TypeError: split_with_sizes(): argument 'dim' (position 3) must be int, not bool | ember RuntimeError: split_with_sizes expects spl...",
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
