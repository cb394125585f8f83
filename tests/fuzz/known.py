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
}
