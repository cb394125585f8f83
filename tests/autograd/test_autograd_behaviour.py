"""Autograd behaviour against torch: accumulation, non-leaf .grad, retain_grad, detach, .data,
backward(inputs=...), in-place ops on non-leaves and on views (graph rebase, CopySlices).

Each scenario is one function of the library `L`; it runs under torch and under ember and the
returned values (tensors, flags, node names) must agree.
"""
import warnings

import numpy as np
import pytest
import torch

import ember


def norm(v):
    if isinstance(v, (list, tuple)):
        return type(v)(norm(x) for x in v)
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        return ("tensor", tuple(v.shape), np.asarray(v.detach().tolist(), dtype=float))
    return v


def assert_same(a, b):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        assert b[0] == "tensor" and a[1] == b[1], (a, b)
        np.testing.assert_allclose(b[2], a[2], rtol=1e-6, atol=1e-6)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


def both(fn):
    assert_same(norm(fn(torch)), norm(fn(ember)))


def accumulate(L):
    x = L.tensor([1., 2., -3.], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad.clone()
    g = x.grad
    (x.sin() * 3).sum().backward()
    return first, x.grad, x.grad is g   # accumulated in place into the same tensor


def accumulate_zeroed(L):
    x = L.tensor([1., 2.], requires_grad=True)
    (x * 2).sum().backward()
    x.grad.zero_()
    (x * x).sum().backward()
    x.grad = None
    (x * 5).sum().backward()
    return x.grad


def retain_grad(L):
    x = L.tensor([1., 2.], requires_grad=True)
    y = x * x
    y.retain_grad()
    z = y.exp()
    z.retain_grad()
    z.sum().backward(retain_graph=True)
    first = y.grad.clone()
    (y * 2).sum().backward()   # retained grads accumulate too
    return first, y.grad, z.grad, y.retains_grad, x.retains_grad, x.grad


def detach(L):
    x = L.tensor([1., 2.], requires_grad=True)
    y = x * 2
    d = y.detach()
    d[0] = 7.0   # shares storage with y
    z = y * 1
    z.detach_()
    return y, d.requires_grad, d.grad_fn is None, d.is_leaf, z.requires_grad, z.is_leaf


def data_training_loop(L):
    p = L.tensor([1., -2., 3.], requires_grad=True)
    for _ in range(3):
        p.grad = None
        loss = ((p - 0.5) ** 2).sum()
        loss.backward()
        p.data.add_(p.grad, alpha=-0.1)
    return p, p.requires_grad, p.is_leaf, p.grad


def data_aliasing(L):
    p = L.tensor([1., -2., 3.], requires_grad=True)
    y = p.exp()
    d = p.data
    d[0] = 9.0   # not tracked: no version error, and p sees the write
    y.sum().backward()
    return p, d.requires_grad, p.grad


def data_assign(L):
    p = L.tensor([1., -2., 3.], requires_grad=True)
    p.data = L.tensor([5., 6.])
    (p * p).sum().backward()
    return p, p.grad, p.requires_grad, tuple(p.shape)


def backward_inputs(L):
    x = L.tensor([1., 2.], requires_grad=True)
    w = L.tensor([3., 4.], requires_grad=True)
    h = x * w
    (h * h).sum().backward(inputs=[x], retain_graph=True)
    gx, gw = x.grad, w.grad
    (h * h).sum().backward(inputs=[h])   # a non-leaf input gets its .grad too
    return gx, gw, h.grad


def rebase_inplace(L):
    x = L.tensor([1., 2.], requires_grad=True)
    y = x * 2
    y.add_(1)
    y.mul_(x)
    y.sin_()
    y.sum().backward()
    return x.grad, type(y.grad_fn).__name__, y.is_leaf


def copy_slices(L):
    x = L.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
    z = L.tensor([0.5, -1.], requires_grad=True)
    y = x.clone()
    y[0].mul_(2)
    y[1:] = z * 3
    (y * y).sum().backward()
    return x.grad, z.grad, type(y.grad_fn).__name__


def copy_slices_views(L):
    x = L.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    y = x * 1
    col = y[:, 1]
    col.mul_(3)
    y.t()[2].mul_(x[0, 0])   # through a transposed view
    y.unsqueeze(0)[0, 1, ::2] = x[1, :2] ** 2
    (y ** 2).sum().backward()
    return x.grad, y


def stale_view(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    y = x * 1
    v = y[1:]          # made before the base changes
    y.mul_(2)
    (v * v).sum().backward()
    return x.grad, v, type(v.grad_fn).__name__


def view_written_into_untracked_base(L):
    b = L.zeros(2, 3)
    x = L.tensor([1., 2., 3.], requires_grad=True)
    b[1] = x * x
    b[0].add_(x)
    b.sum().backward()
    return x.grad, b.requires_grad, type(b.grad_fn).__name__


def nonleaf_flags(L):
    x = L.ones(2, requires_grad=True)
    y = x * 2
    v = x[:1]
    with L.no_grad():
        w = x * 2
    return x.is_leaf, y.is_leaf, v.is_leaf, v.requires_grad, w.is_leaf, w.requires_grad


def grad_dtype(L):
    x = L.ones(3, dtype=L.float32, requires_grad=True)
    (x.double() * 2).sum().backward()
    return x.grad.dtype == L.float32, x.grad


def create_graph_backward(L):
    x = L.tensor([1., 2.], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.sum().backward()
    return g.requires_grad, x.grad


def several_roots(L):
    x = L.tensor([1., 2.], requires_grad=True)
    a, b = x * 2, x.exp()
    L.autograd.backward([a, b], [L.ones(2), L.tensor([1., -1.])])
    return x.grad, L.autograd.grad((x * x).sum(), [x, x])


def requires_grad_turned_off(L):
    x = L.ones(3, requires_grad=True)
    y = x * 2
    x.requires_grad_(False)   # after the graph was built: backward no longer fills x.grad
    z = x * 3
    y.sum().backward()
    return z.requires_grad, x.grad


def grads_batched(L):
    x = L.tensor([1., 2., 3.], requires_grad=True)
    w = L.tensor([0.5, -1.0], requires_grad=True)
    y = (x.exp() * x)[:2] * w
    gx, gw = L.autograd.grad(y, (x, w), L.tensor([[1., 0.], [0., 1.], [2., -1.]]),
                             is_grads_batched=True)
    return gx, gw


def second_backward_without_saved_values(L):
    x = L.tensor([1., 2.], requires_grad=True)
    y = L.tensor([3., 5.], requires_grad=True)
    z = (L.lerp(x + 2, y - 1, 0.25) + y.detach()[0]).sum()   # nothing freed by backward
    z.backward()
    z.backward()
    return x.grad, y.grad


SCENARIOS = [second_backward_without_saved_values, grads_batched, requires_grad_turned_off, accumulate, accumulate_zeroed,
             retain_grad, detach, data_training_loop, data_aliasing, data_assign, backward_inputs, rebase_inplace, copy_slices,
             copy_slices_views, stale_view, view_written_into_untracked_base, nonleaf_flags,
             grad_dtype, create_graph_backward, several_roots]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("fn", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_behaviour_matches_torch(fn):
    both(fn)


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_nonleaf_grad_access_warns(L):
    x = L.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert y.grad is None
    z = x * 3
    z.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # leaves and retained non-leaves do not warn
        assert x.grad is not None and z.grad is None
