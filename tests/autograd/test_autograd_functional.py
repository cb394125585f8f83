"""ember.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) against
torch.autograd.functional: values, shapes, tuple structure, create_graph, strict, errors."""
import numpy as np
import pytest
import torch

import ember


def norm(v):
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        return ("tensor", tuple(v.shape), np.asarray(v.detach().tolist(), float), v.requires_grad)
    return v


def same(a, b):
    if isinstance(a, tuple) and a[:1] == ("tensor",):
        assert b[0] == "tensor" and b[1] == a[1] and b[3] == a[3], (a, b)
        np.testing.assert_allclose(b[2], a[2], rtol=1e-10, atol=1e-12)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


def both(fn):
    results = []
    for L in (torch, ember):
        try:
            results.append(norm(fn(L, L.autograd.functional)))
        except RuntimeError as e:
            results.append(("RuntimeError", str(e)))
    same(results[0], results[1])


def X(L):
    return L.tensor([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], dtype=L.float64)


def Y(L):
    return L.tensor([0.2, 0.4, -0.6], dtype=L.float64)


def f1(x):
    return (x.sin() * x).sum(1)


def f2(x, y):
    return x * y.exp(), x.sum() * y


def scalar(x):
    return (x.sin() * x ** 2).sum()


CASES = {
    "jacobian": lambda L, F: F.jacobian(f1, X(L)),
    "jacobian_tuples": lambda L, F: F.jacobian(f2, (X(L), Y(L))),
    "jacobian_create_graph": lambda L, F: F.jacobian(f1, X(L), create_graph=True),
    "jacobian_unused_input": lambda L, F: F.jacobian(lambda x, y: x * 2, (Y(L), Y(L))),
    "jacobian_strict": lambda L, F: F.jacobian(lambda x, y: x * 2, (Y(L), Y(L)), strict=True),
    "jacobian_constant": lambda L, F: F.jacobian(lambda x: L.ones(2, dtype=L.float64), Y(L)),
    "jacobian_scalar_out": lambda L, F: F.jacobian(scalar, Y(L)),
    "jacobian_0d_in": lambda L, F: F.jacobian(lambda x: x * Y(L), L.tensor(0.5, dtype=L.float64)),
    "hessian": lambda L, F: F.hessian(scalar, Y(L)),
    "hessian_tuples": lambda L, F: F.hessian(lambda x, y: (x.sum(0) * y.exp()).sum(),
                                             (X(L), Y(L))),
    "hessian_linear": lambda L, F: F.hessian(lambda x: (x * 2).sum(), Y(L)),
    "hessian_create_graph": lambda L, F: F.hessian(scalar, Y(L), create_graph=True),
    "vjp": lambda L, F: F.vjp(f1, X(L), L.tensor([1., -2.], dtype=L.float64)),
    "vjp_tuples": lambda L, F: F.vjp(f2, (X(L), Y(L)), (L.ones(2, 3, dtype=L.float64), Y(L))),
    "vjp_scalar_no_v": lambda L, F: F.vjp(scalar, Y(L)),
    "vjp_no_v_error": lambda L, F: F.vjp(lambda x: x * x, Y(L)),
    "vjp_create_graph": lambda L, F: F.vjp(f1, X(L), L.tensor([1., -2.], dtype=L.float64),
                                           create_graph=True),
    "vjp_strict": lambda L, F: F.vjp(lambda x, y: x * 2, (Y(L), Y(L)), Y(L), strict=True),
    "jvp": lambda L, F: F.jvp(f1, X(L), L.ones(2, 3, dtype=L.float64)),
    "jvp_tuples": lambda L, F: F.jvp(f2, (X(L), Y(L)), (L.ones(2, 3, dtype=L.float64), Y(L))),
    "jvp_0d_no_v": lambda L, F: F.jvp(lambda x: x * x.exp(), L.tensor(0.5, dtype=L.float64)),
    "jvp_no_v_error": lambda L, F: F.jvp(lambda x: x * x, Y(L)),
    "jvp_linear": lambda L, F: F.jvp(lambda x: x * 3, Y(L), Y(L)),
    "vhp": lambda L, F: F.vhp(scalar, Y(L), Y(L)),
    "hvp": lambda L, F: F.hvp(scalar, Y(L), Y(L) * 2),
    "vhp_tuples": lambda L, F: F.vhp(lambda x, y: (x.sum(0) * y.exp()).sum(), (X(L), Y(L)),
                                     (X(L), Y(L))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_functional_matches_torch(name):
    both(CASES[name])


def test_create_graph_keeps_inputs_graph():
    """With create_graph=True the result is differentiable w.r.t. inputs requiring grad."""
    got = []
    for L in (torch, ember):
        x = L.tensor([0.3, -0.8, 1.1], dtype=L.float64, requires_grad=True)
        h = L.autograd.functional.hessian(scalar, x, create_graph=True)
        h.trace().backward() if hasattr(h, "trace") else h.diagonal().sum().backward()
        got.append(np.asarray(x.grad.tolist()))
        assert not x.grad_fn and x.is_leaf
    np.testing.assert_allclose(got[1], got[0], rtol=1e-10)
