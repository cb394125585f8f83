"""Hooks against torch: Tensor.register_hook (replacing the gradient, handle.remove(), as a
context manager), register_post_accumulate_grad_hook, retain_grad, Node.register_hook and
Node.register_prehook (on op nodes and on AccumulateGrad): call order and values.

Each scenario logs what its hooks see; the logs of torch and ember must be equal.
"""
import numpy as np
import pytest
import torch

import ember


def norm(v):
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        return np.round(np.asarray(v.detach().tolist(), dtype=float), 9).tolist()
    if isinstance(v, float):
        return round(v, 9)
    return v


def tensor_hooks(L):
    log = []
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("x1", g.tolist())))
    x.register_hook(lambda g: g * 10)
    x.register_hook(lambda g: log.append(("x3", g.tolist())))
    y = x * 3
    h = y.register_hook(lambda g: log.append(("y", g.tolist())) or g + 1)
    y.register_hook(lambda g: log.append(("y2", g.tolist())))
    z = (y * y).sum()
    z.backward(retain_graph=True)
    log.append(("grad", x.grad.tolist()))
    h.remove()
    x.grad = None
    z.backward()
    log.append(("grad", x.grad.tolist()))
    return log


def post_acc(L):
    log = []
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    x.register_hook(lambda g: log.append(("pre", g.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist(), t is x)))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    return log


def node_hooks(L):
    log = []
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    y = x.exp()
    z = y * 2
    z.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    z.grad_fn.register_hook(lambda gi, go: log.append(
        ("post", [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go])))
    y.grad_fn.register_prehook(lambda go: (go[0] * 0 + 1,))   # replaces the incoming grad
    y.grad_fn.register_hook(lambda gi, go: log.append(("ypost", [g.tolist() for g in gi]))
                            or (gi[0] * 2,))                  # replaces the outgoing grad
    z.sum().backward()
    log.append(x.grad.tolist())
    return log


def order(L):
    log = []
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append("tensor_hook"))
    y.grad_fn.register_prehook(lambda go: log.append("node_prehook"))
    y.grad_fn.register_hook(lambda gi, go: log.append("node_hook"))
    y.retain_grad()
    y.register_hook(lambda g: log.append("tensor_hook2"))
    x.register_hook(lambda g: log.append("leaf_hook"))
    x.register_post_accumulate_grad_hook(lambda t: log.append("post_acc"))
    y.sum().backward()
    return log, y.grad


def retain_hook_order(L):
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 100)
    y.sum().backward()
    return y.grad, x.grad


def multi_use(L):
    log = []
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(g.tolist()))
    (y * y + y).sum().backward()
    return log


def acc_node(L):
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    log = []
    acc.register_hook(lambda gi, go: log.append(("acc", len(gi), [g.tolist() for g in go])))
    acc.register_prehook(lambda go: log.append(("accpre", [g.tolist() for g in go])))
    x.register_hook(lambda g: log.append("leaf_hook") or g * 3)
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", t.grad.tolist())))
    y.sum().backward()
    return type(acc).__name__, log, acc.variable is x


def handle_ctx(L):
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    with x.register_hook(lambda g: g * 0):
        pass
    (x * 2).sum().backward()
    return x.grad


def hook_grad_call(L):
    log = []
    x = L.tensor([1., 2.], dtype=L.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(g.tolist()))
    x.register_hook(lambda g: log.append(("x", g.tolist())))
    L.autograd.grad(y.sum(), x)
    return log, x.grad


SCENARIOS = [tensor_hooks, post_acc, node_hooks, order, retain_hook_order, multi_use, acc_node,
             handle_ctx, hook_grad_call]


@pytest.mark.parametrize("fn", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_hooks_match_torch(fn):
    assert norm(fn(ember)) == norm(fn(torch))
