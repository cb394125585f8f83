"""Divergences from torch that the fuzzer (tests/fuzz/fuzzer.py) finds at its CI seed and
that are not fixed yet: (op, mutation, outcome) -> what differs (the first case's detail).
This list may only shrink: test_fuzz.py fails on a divergence missing here and on an entry
that no longer happens. Outcomes: wrong_value (a silently wrong result), accepted_bad (torch
raises, ember returns), spurious_error (ember raises, torch returns), error_class (both
raise, with different exception classes).
"""
KNOWN = {
    # ---- wrong_value ----
    ('adaptive_avg_pool3d', 'specials', 'wrong_value'):
        'result 0: values differ',
    ('binary_cross_entropy_with_logits', 'float64', 'wrong_value'):
        'result 0: float64[] vs torch float32[]',
    ('qr', 'specials', 'wrong_value'):
        'result 1: values differ',
    ('scaled_dot_product_attention', 'specials', 'wrong_value'):
        'result 0: values differ',
    ('topk', 'int64', 'wrong_value'):
        'result 1: values differ',
    # ---- accepted_bad ----
    ('alias', 'float64', 'accepted_bad'):
        "torch AttributeError: module 'torch' has no attribute 'alias'",
    ('alias', 'int64', 'accepted_bad'):
        "torch AttributeError: module 'torch' has no attribute 'alias'",
    ('binary_cross_entropy_with_logits', 'int64', 'accepted_bad'):
        'torch NotImplementedError: "log_sigmoid_cpu" not implemented for \'Long\'',
    ('chunk', 'dim_bool', 'accepted_bad'):
        "torch TypeError: chunk(): argument 'chunks' (position 2) must be int, not bool",
    ('conv1d', 'zero_size', 'accepted_bad'):
        'torch RuntimeError: Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size [0, 2, 3] instead',
    ('conv_transpose2d', 'int_negative', 'accepted_bad'):
        'torch RuntimeError: negative padding is not supported',
    ('diag_embed', 'dim_bool', 'accepted_bad'):
        "torch TypeError: diag_embed(): argument 'offset' (position 2) must be int, not bool",
    ('diagflat', 'dim_bool', 'accepted_bad'):
        "torch TypeError: diagflat(): argument 'offset' (position 2) must be int, not bool",
    ('diagonal', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('full_like', 'dim_none', 'accepted_bad'):
        "torch TypeError: full_like(): argument 'fill_value' (position 2) must be Number, not NoneType",
    ('huber_loss', 'int64', 'accepted_bad'):
        "torch RuntimeError: result type Float can't be cast to the desired output type Long",
    ('kthvalue', 'dim_float', 'accepted_bad'):
        "torch TypeError: kthvalue(): argument 'k' (position 1) must be int, not float",
    ('linalg_vecdot', 'int64', 'accepted_bad'):
        'torch RuntimeError: linalg.vecdot: Expected x and y to have the same dtype, but found x of type Double and y of type Long instead',
    ('linspace', 'dim_bool', 'accepted_bad'):
        'torch TypeError: linspace() received an invalid combination of arguments - got (int, int, bool), but expected one of: * (Tensor start, Te...',
    ('log_softmax', 'dim_none', 'accepted_bad'):
        "torch TypeError: log_softmax(): argument 'dim' (position 1) must be int, not NoneType",
    ('matrix_power', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('max', 'dim_none', 'accepted_bad'):
        'torch TypeError: max() received an invalid combination of arguments - got (Tensor, NoneType), but expected one of: * (Tensor input, *, Te...',
    ('max_pool3d', 'bool', 'accepted_bad'):
        'torch NotImplementedError: "max_pool3d" not implemented for \'Bool\'',
    ('max_unpool2d', 'dim_float', 'accepted_bad'):
        "torch TypeError: max_unpool2d(): argument 'output_size' (position 3) must be tuple of ints, but found element of type float at pos 0",
    ('median', 'dim_none', 'accepted_bad'):
        "torch TypeError: median(): argument 'dim' (position 2) must be int, not NoneType",
    ('multilabel_margin_loss', 'int64', 'accepted_bad'):
        'torch NotImplementedError: "multilabel_margin_loss_forward_out_frame" not implemented for \'Long\'',
    ('nanmedian', 'dim_none', 'accepted_bad'):
        "torch TypeError: nanmedian(): argument 'dim' (position 1) must be int, not NoneType",
    ('prelu', 'bool', 'accepted_bad'):
        'torch RuntimeError: prelu: Type promoting not supported. Got Float and Bool',
    ('randint', 'dim_float', 'accepted_bad'):
        'torch TypeError: randint() received an invalid combination of arguments - got (float, int, tuple), but expected one of: * (int high, tupl...',
    ('randint_like', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('randn_like', 'unknown_keyword', 'accepted_bad'):
        'torch TypeError: randn_like() received an invalid combination of arguments - got (Tensor, bogus=int), but expected one of: * (Tensor inpu...',
    ('randperm', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('range', 'dim_none', 'accepted_bad'):
        "torch TypeError: range(): argument 'end' (position 2) must be Number, not NoneType",
    ('roll', 'dim_bool', 'accepted_bad'):
        "torch TypeError: roll(): argument 'shifts' (position 1) must be tuple of ints, not bool",
    ('roll', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('rot90', 'dim_float', 'accepted_bad'):
        "torch TypeError: rot90(): argument 'k' (position 1) must be int, not float",
    ('rot90', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('scatter', 'tensor_list', 'accepted_bad'):
        'torch TypeError: scatter() received an invalid combination of arguments - got (Tensor, int, Tensor, list, reduce=str), but expected one o...',
    ('searchsorted', 'tensor_str', 'accepted_bad'):
        'torch TypeError: searchsorted() received an invalid combination of arguments - got (Tensor, str, side=str), but expected one of: * (Tenso...',
    ('softmax', 'dim_none', 'accepted_bad'):
        "torch TypeError: softmax(): argument 'dim' (position 2) must be int, not NoneType",
    ('sum_to_size', 'dim_float', 'accepted_bad'):
        'torch TypeError: sum_to_size() takes 1 positional argument but 2 were given',
    ('topk', 'dim_bool', 'accepted_bad'):
        "torch TypeError: topk(): argument 'k' (position 2) must be int, not bool",
    ('trace', 'bool', 'accepted_bad'):
        'torch NotImplementedError: "trace" not implemented for \'Bool\'',
    ('tril', 'dim_bool', 'accepted_bad'):
        "torch TypeError: tril(): argument 'diagonal' (position 2) must be int, not bool",
    ('tril', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('tril_indices', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('triu', 'dim_bool', 'accepted_bad'):
        "torch TypeError: triu(): argument 'diagonal' (position 2) must be int, not bool",
    ('triu', 'dim_float', 'accepted_bad'):
        "torch TypeError: triu(): argument 'diagonal' (position 2) must be int, not float",
    ('triu_indices', 'int_huge', 'accepted_bad'):
        'torch ValueError: Overflow when unpacking long long',
    ('vsplit', 'dim_bool', 'accepted_bad'):
        "torch TypeError: vsplit() received an invalid combination of arguments - got (bool), but expected one of: * (int sections) didn't match b...",
    # ---- spurious_error ----
    ('index_add', 'zero_size', 'spurious_error'):
        'ember RuntimeError: index 0 is out of bounds for dimension 0 with size 0',
    # ---- error_class ----
    ('adaptive_avg_pool3d', 'bool', 'error_class'):
        'torch NotImplementedError: "adaptive_avg_pool3d_cpu" not implemented for \'Bool\' | ember RuntimeError: "addmm_impl_cpu_" not implemented f...',
    ('arange', 'int_huge', 'error_class'):
        'torch RuntimeError: upper bound and lower bound inconsistent with step sign | ember ValueError: Overflow when unpacking long long',
    ('bitwise_right_shift', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1 | ember NotImplementedError...',
    ('bucketize', 'tensor_list', 'error_class'):
        'torch TypeError: bucketize() received an invalid combination of arguments - got (Tensor, list, right=bool), but expected one of: * (Tens ...',
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
    ('dot', 'tensor_list', 'error_class'):
        "torch TypeError: dot(): argument 'tensor' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribute 'dim'",
    ('dstack', 'tensor_str', 'error_class'):
        "torch TypeError: expected Tensor as element 1 in argument 0, but got str | ember AttributeError: 'str' object has no attribute 'shape'",
    ('embedding', 'tensor_list', 'error_class'):
        "torch TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not list | ember AttributeError: 'list' object has no attri...",
    ('empty', 'int_huge', 'error_class'):
        'torch TypeError: empty(): argument \'size\' failed to unpack the object at pos 1 with error "Overflow when unpacking long long Exception ra...',
    ('from_dlpack', 'tensor_str', 'error_class'):
        'torch RuntimeError: from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have alr...',
    ('ger', 'tensor_list', 'error_class'):
        "torch TypeError: ger(): argument 'vec2' (position 2) must be Tensor, not list | ember AttributeError: 'list' object has no attribute 'dim'",
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
    ('masked_select', 'tensor_list', 'error_class'):
        "torch TypeError: masked_select(): argument 'mask' (position 2) must be Tensor, not list | ember AttributeError: 'list' object has no attr...",
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
    ('put', 'tensor_list', 'error_class'):
        "torch TypeError: put(): argument 'index' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribute 'dt...",
    ('rand', 'int_huge', 'error_class'):
        'torch TypeError: rand(): argument \'size\' failed to unpack the object at pos 1 with error "Overflow when unpacking long long Exception rai...',
    ('randint_like', 'dim_bool', 'error_class'):
        'torch TypeError: randint_like() received an invalid combination of arguments - got (Tensor, int, bool), but expected one of: * (Tensor i ...',
    ('randperm', 'dim_float', 'error_class'):
        "torch TypeError: randperm(): argument 'n' (position 1) must be int, not float | ember IndexError: axis 0 is out of bounds for array of di...",
    ('remainder', 'last_dim_plus_one', 'error_class'):
        'torch RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1 | ember NotImplementedError...',
    ('repeat', 'int_huge', 'error_class'):
        'torch TypeError: repeat(): argument \'repeats\' failed to unpack the object at pos 2 with error "Overflow when unpacking long long Exceptio...',
    ('rms_norm', 'tensor_str', 'error_class'):
        "torch TypeError: rms_norm(): argument 'weight' (position 3) must be Tensor, not str | ember RuntimeError: Given normalized_shape=[2], exp...",
    ('scatter_add', 'tensor_list', 'error_class'):
        "torch TypeError: scatter_add(): argument 'index' (position 3) must be Tensor, not list | ember AttributeError: 'list' object has no attri...",
    ('softmax', 'bool', 'error_class'):
        'torch NotImplementedError: "softmax_lastdim_kernel_impl" not implemented for \'Bool\' | ember RuntimeError: Subtraction, the `-` operator, ...',
    ('std_mean', 'dim_float', 'error_class'):
        'torch TypeError: std_mean() received an invalid combination of arguments - got (Tensor, float), but expected one of: * (Tensor input, tu ...',
    ('sum_to_size', 'int_huge', 'error_class'):
        'torch TypeError: sum_to_size(): argument \'size\' failed to unpack the object at pos 1 with error "Overflow when unpacking long long Except...',
    ('unfold', 'int_negative', 'error_class'):
        'torch RuntimeError: size is -1 but must be >= 0 | ember ValueError: strides is incompatible with shape of requested array and size of buffer',
    ('view_as', 'tensor_list', 'error_class'):
        "torch TypeError: view_as(): argument 'other' (position 1) must be Tensor, not list | ember AttributeError: 'list' object has no attribute...",
}
