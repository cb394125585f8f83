"""Autograd errors, each provoked in torch and in ember: same exception type, same message gist.

The gist is compared by taking torch's message, naming the library generically, and checking
that ember's message agrees on the parts that carry information (versions, op names, indices).
"""
import re

import pytest
import torch

import ember


def outcome(L, fn):
    try:
        return "ok", fn(L)
    except Exception as e:   # noqa: BLE001 - the test compares exceptions
        return type(e), re.sub(r"\b(torch|ember)\b", "LIB", str(e))


def same_error(fn, gist):
    """`fn` fails in both libraries with one exception type; `gist` (a regex) matches both
    messages and captures the same groups from each."""
    (tt, tm), (et, em) = outcome(torch, fn), outcome(ember, fn)
    assert tt is not None and tt != "ok", "torch did not raise"
    assert et is tt, (et, em, tt, tm)
    mt, me = re.search(gist, tm), re.search(gist, em)
    assert mt, f"gist not in torch's message: {tm}"
    assert me, f"gist not in ember's message: {em}\n(torch: {tm})"
    assert me.groups() == mt.groups()


def twice(L):
    x = L.randn(3, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    y.backward()


def twice_scalar_mul(L):
    y = (L.randn(3, requires_grad=True) * 2 / 3).sum()   # the numbers count as saved tensors
    y.backward()
    y.backward()


def twice_grad(L):
    x = L.randn(3, requires_grad=True)
    y = x.sin().sum()
    L.autograd.grad(y, x)
    L.autograd.grad(y, x)


def saved_after_free(L):
    x = L.randn(3, requires_grad=True)
    y = x.exp()
    y.sum().backward()
    return y.grad_fn._saved_result


def nonscalar(L):
    (L.randn(2, 3, requires_grad=True) * 2).backward()


def modified_output(L):
    x = L.randn(2, 3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def modified_input_twice(L):
    a = L.randn(3, requires_grad=True) * 1
    y = a * a
    a.mul_(2)
    a.div_(3)
    y.sum().backward()


def modified_view_input(L):
    y = (L.randn(4, requires_grad=True) * 1)[:2]
    z = y.sin()
    y.add_(1)
    z.sum().backward()


def modified_leaf_no_grad(L):
    x = L.randn(3, requires_grad=True)
    z = x.sin()
    with L.no_grad():
        x.add_(1)
    z.sum().backward()


def inplace_leaf(L):
    L.randn(3, requires_grad=True).mul_(2)


def inplace_leaf_view(L):
    L.randn(3, requires_grad=True)[:2].add_(1)


def setitem_leaf(L):
    L.randn(3, requires_grad=True)[0] = 1.0


def inference_saved(L):
    with L.inference_mode():
        x = L.randn(3)
    (x * L.randn(3, requires_grad=True)).sum().backward()


def inference_requires_grad(L):
    with L.inference_mode():
        x = L.randn(3)
    x.requires_grad_()


def inference_inplace(L):
    with L.inference_mode():
        x = L.randn(3)
    x.add_(1)


def unused(L):
    x, y = L.randn(3, requires_grad=True), L.randn(3, requires_grad=True)
    L.autograd.grad((x * 2).sum(), [x, y])


def unused_materialize_no(L):
    x, y = L.randn(3, requires_grad=True), L.randn(3, requires_grad=True)
    L.autograd.grad((x * 2).sum(), [x, y], allow_unused=False, materialize_grads=True)


def first_two(g):
    return g[:2]


def hook_changes_size_leaf(L):
    x = L.ones(3, requires_grad=True)
    x.register_hook(first_two)
    (x * 2).sum().backward()


def hook_changes_size_nonleaf(L):
    y = L.ones(3, requires_grad=True) * 2
    y.register_hook(first_two)
    (y * 2).sum().backward()


def assign_grad_wrong_shape(L):
    L.ones(3, requires_grad=True).grad = L.ones(2)


def assign_grad_wrong_dtype(L):
    L.ones(3, requires_grad=True).grad = L.ones(3, dtype=L.float64)


CASES = [
    (twice, r"Trying to backward through the graph a second time"),
    (twice_grad, r"Specify retain_graph=True"),
    (twice_scalar_mul, r"Trying to backward through the graph a second time"),
    (saved_after_free, r"directly access saved tensors after they have already been freed"),
    (nonscalar, r"grad can be implicitly created only for scalar outputs"),
    (modified_output, r"modified by an inplace operation: \[LIB\.(\w+) \[2, 3\]\], which is "
                      r"output 0 of (\w+), is at version (\d+); expected version (\d+)"),
    (modified_input_twice, r"\[LIB\.(\w+) \[3\]\], which is output 0 of (\w+), "
                           r"is at version (\d+); expected version (\d+)"),
    (modified_view_input, r"\[LIB\.(\w+) \[2\]\], which is output 0 of (\w+), "
                          r"is at version (\d+); expected version (\d+)"),
    (modified_leaf_no_grad, r"\[LIB\.(\w+) \[3\]\] is at version (\d+); expected version (\d+)"),
    (inplace_leaf, r"^a leaf Variable that requires grad is being used in an in-place operation"),
    (inplace_leaf_view, r"a view of a leaf Variable that requires grad is being used in an "
                        r"in-place operation"),
    (setitem_leaf, r"a view of a leaf Variable that requires grad"),
    (lambda L: L.tensor([1, 2]).requires_grad_(), r"(?i)only Tensors of floating point"),
    (lambda L: L.zeros(2, dtype=L.int64, requires_grad=True),
     r"(?i)only Tensors of floating point .*can require gradients"),
    (lambda L: L.tensor([True], requires_grad=True), r"(?i)only Tensors of floating point"),
    (inference_saved, r"Inference tensors cannot be saved for backward"),
    (inference_requires_grad, r"Setting requires_grad=True on inference tensor outside "
                              r"InferenceMode is not allowed"),
    (inference_inplace, r"Inplace update to inference tensor outside InferenceMode"),
    (lambda L: L.randn(3).sum().backward(),
     r"element (\d) of tensors does not require grad and does not have a grad_fn"),
    (lambda L: L.autograd.grad(L.randn(3, requires_grad=True).sum(), [L.randn(3)]),
     r"One of the differentiated Tensors does not require grad"),
    (unused, r"The differentiated Tensor at index (\d) appears to not have been used in the "
             r"graph\. Set allow_unused=True"),
    (unused_materialize_no, r"Expected allow_unused to be True or not passed when "
                            r"materialize_grads=True"),
    (lambda L: (L.randn(3, requires_grad=True) * 2).backward(L.ones(2)),
     r"Mismatch in shape: grad_output\[0\] has a shape of LIB\.Size\(\[2\]\)"),
    (lambda L: (L.randn(3, requires_grad=True) * 1).sum().backward(inputs=[]),
     r"`inputs` argument to `backward\(\)` cannot be empty"),
    (lambda L: (L.randn(3, requires_grad=True) * 2).requires_grad_(False),
     r"you can only change requires_grad flags of leaf variables"),
    (lambda L: L.randn(3).retain_grad(), r"can't retain_grad on Tensor that has requires_grad"),
    (lambda L: L.randn(3).register_hook(lambda g: g),
     r"cannot register a hook on a tensor that doesn't require gradient"),
    (lambda L: (L.randn(3, requires_grad=True) * 2).register_post_accumulate_grad_hook(print),
     r"post accumulate grad hooks cannot be registered on non-leaf tensors"),
    (lambda L: (L.randn(3, requires_grad=True) * 1)[:2].detach_(),
     r"Can't detach views in-place\. Use detach\(\) instead"),
    (lambda L: L.randn(3, requires_grad=True).numpy(),
     r"Can't call numpy\(\) on Tensor that requires grad"),
    (hook_changes_size_leaf, r"hook '(\w+)' has changed the size of value"),
    (hook_changes_size_nonleaf, r"hook '(\w+)' has changed the size of value"),
    (assign_grad_wrong_shape, r"attempting to assign a gradient of size '\[2\]' to a tensor of "
                              r"size '\[3\]'"),
    (assign_grad_wrong_dtype, r"attempting to assign a gradient with dtype '\w+' to a tensor "
                              r"with grad_dtype"),
]


@pytest.mark.parametrize("fn,gist", CASES, ids=[getattr(c[0], "__name__", str(i))
                                               + f"-{i}" for i, c in enumerate(CASES)])
def test_error_matches_torch(fn, gist):
    same_error(fn, gist)


def test_retain_graph_allows_second_backward():
    got = []
    for L in (torch, ember):
        x = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        got.append(x.grad.tolist())
    assert got[0] == pytest.approx(got[1])
