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
    ('bitwise_right_shift', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1 | ember NotImplementedError...',
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
    ('linalg_eigvalsh', 'bool', 'error_class'):
        'torch NotImplementedError: "linalg_eigh_cpu" not implemented for \'Bool\' | ember RuntimeError: linalg.eigvalsh: Expected a floating point ...',
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
    ('nll_loss', 'bool', 'error_class'):
        'torch NotImplementedError: "nll_loss_out_frame" not implemented for \'Bool\' | ember RuntimeError: Negation, the `-` operator, on a bool te...',
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
    ('softmax', 'bool', 'error_class'):
        'torch NotImplementedError: "softmax_lastdim_kernel_impl" not implemented for \'Bool\' | ember RuntimeError: Subtraction, the `-` operator, ...',
    ('std_mean', 'dim_float', 'error_class'):
        'torch TypeError: std_mean() received an invalid combination of arguments - got (Tensor, float), but expected one of: * (Tensor input, tu ...',
    ('unfold', 'int_negative', 'error_class'):
        'torch RuntimeError: size is -1 but must be >= 0 | ember ValueError: strides is incompatible with shape of requested array and size of buffer',
}
