"""The recorded graph against torch: grad_fn class names of common ops, next_functions of a
small graph (AccumulateGrad at the leaves), and freeing without the cycle collector."""
import gc
import weakref

import pytest
import torch

import ember


def _setitem(x):
    z = x.clone()
    z[0] = 1.0
    return z


NAMES = {
    "add": lambda L, x, y: x + y, "add_scalar": lambda L, x, y: x + 1,
    "sub": lambda L, x, y: x - y, "mul": lambda L, x, y: x * y, "mul_scalar": lambda L, x, y: x * 2,
    "div": lambda L, x, y: x / y, "neg": lambda L, x, y: -x, "exp": lambda L, x, y: x.exp(),
    "sum": lambda L, x, y: x.sum(), "sum_dim": lambda L, x, y: x.sum(0),
    "sum_keepdim": lambda L, x, y: x.sum(1, keepdim=True), "mean": lambda L, x, y: x.mean(),
    "mean_dim": lambda L, x, y: x.mean(1), "mm": lambda L, x, y: x @ y.t(),
    "matmul_fn": lambda L, x, y: L.matmul(x, y.t()), "view": lambda L, x, y: x.view(6),
    "reshape": lambda L, x, y: x.reshape(3, 2), "flatten": lambda L, x, y: x.flatten(),
    "transpose": lambda L, x, y: x.transpose(0, 1), "t": lambda L, x, y: x.t(),
    "permute": lambda L, x, y: x.permute(1, 0), "expand": lambda L, x, y: x[:1].expand(3, 3),
    "select": lambda L, x, y: x.select(1, 0), "index_int": lambda L, x, y: x[0],
    "index_int_last": lambda L, x, y: x[1:, 0], "slice": lambda L, x, y: x[1:],
    "slice_inner": lambda L, x, y: x[:, 1:], "slice_then_int": lambda L, x, y: x[0, 1:],
    "index_none": lambda L, x, y: x[None], "index_bare_full": lambda L, x, y: x[:],
    "index_full": lambda L, x, y: x[:, 0:3], "index_ellipsis": lambda L, x, y: x[...],
    "index_list": lambda L, x, y: x[[0, 1, 0]], "unsqueeze": lambda L, x, y: x.unsqueeze(0),
    "squeeze_all": lambda L, x, y: x[:1].squeeze(), "narrow": lambda L, x, y: x.narrow(1, 0, 2),
    "diagonal": lambda L, x, y: x.diagonal(), "clone": lambda L, x, y: x.clone(),
    "contiguous": lambda L, x, y: x.t().contiguous(), "to_double": lambda L, x, y: x.double(),
    "relu": lambda L, x, y: x.relu(), "sigmoid": lambda L, x, y: x.sigmoid(),
    "tanh": lambda L, x, y: x.tanh(), "pow": lambda L, x, y: x ** 2,
    "square": lambda L, x, y: x.square(), "sqrt": lambda L, x, y: x.abs().sqrt(),
    "cat": lambda L, x, y: L.cat([x, y]), "stack": lambda L, x, y: L.stack([x, y]),
    "where": lambda L, x, y: L.where(x > 0, x, y), "clamp": lambda L, x, y: x.clamp(0, 1),
    "maximum": lambda L, x, y: L.maximum(x, y), "abs": lambda L, x, y: x.abs(),
    "copy_": lambda L, x, y: x.clone().copy_(y), "setitem": lambda L, x, y: _setitem(x),
    "mul_": lambda L, x, y: (x * 1).mul_(y), "exp_": lambda L, x, y: (x * 1).exp_(),
}


def names(L, fn):
    x = L.randn(2, 3, requires_grad=True)
    y = L.randn(2, 3, requires_grad=True)
    out = fn(L, x, y)
    return type(out.grad_fn).__name__, [type(n).__name__ for n, _ in out.grad_fn.next_functions]


# torch records one node per index component; ember one node for the whole basic index
CHAINED = {"index_int_last", "slice_then_int"}


@pytest.mark.parametrize("name", list(NAMES))
def test_grad_fn_names_match_torch(name):
    t_name, t_next = names(torch, NAMES[name])
    e_name, e_next = names(ember, NAMES[name])
    assert e_name == t_name
    if name in CHAINED:
        return
    # next_functions agree on the tensor inputs (torch has no edge for some scalar arguments)
    assert [n for n in e_next if n != "NoneType"] == [n for n in t_next if n != "NoneType"]


def small_graph(L):
    a = L.tensor([1., 2.], requires_grad=True)
    b = L.tensor([3., 4.], requires_grad=True)
    c = L.tensor([5., 6.])
    loss = ((a * b).exp() + b * c).sum()
    return loss, a, b


def describe(node, leaves, seen=None):
    """The graph below `node` as nested (name, [children]); leaves by their position."""
    if node is None:
        return None
    if type(node).__name__ == "AccumulateGrad":
        return ("AccumulateGrad", [i for i, t in enumerate(leaves) if node.variable is t])
    return (type(node).__name__, [(describe(n, leaves), nr) for n, nr in node.next_functions])


def test_next_functions_match_torch():
    t_loss, *t_leaves = small_graph(torch)
    e_loss, *e_leaves = small_graph(ember)
    assert describe(e_loss.grad_fn, e_leaves) == describe(t_loss.grad_fn, t_leaves)
    # one AccumulateGrad per leaf, shared by every use of that leaf
    mul = e_loss.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    other = e_loss.grad_fn.next_functions[0][0].next_functions[1][0]
    assert mul.next_functions[1][0] is other.next_functions[0][0]
    assert e_leaves[1].grad_fn is None and e_leaves[1].is_leaf


def test_backward_create_graph_warns_about_cycle():
    # torch gives the same warning, but only once per process (so it cannot be compared here)
    L = ember
    x = L.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="create a reference cycle"):
        (x * x).sum().backward(create_graph=True)


# ---- freeing (ember only: torch's nodes are C++ objects without weak references) ----
def plain_graph():
    x = ember.randn(1000, requires_grad=True)
    h = x.exp()
    y = (h * h).sin().sum()
    return [h, h.grad_fn, y.grad_fn, h._storage_obj()]


def after_backward():
    x = ember.randn(1000, requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    y.backward()
    return [h, y.grad_fn]


def inplace_and_views():
    x = ember.randn(10, requires_grad=True)
    z = x.clone()
    z[0].mul_(2)
    v = z[1:]
    v.add_(1)
    w = z.sigmoid()
    w.exp_()
    return [w.grad_fn, z.grad_fn, z, v.grad_fn, w]


def higher_order():
    x = ember.randn(10, requires_grad=True)
    y = x.sigmoid().tanh()
    y.retain_grad()
    y.register_hook(lambda g: g * 1)
    g, = ember.autograd.grad(y.sum(), x, create_graph=True)
    return [y, g, g.grad_fn, y.grad_fn]


def joins_and_indexing():
    x = ember.randn(10, requires_grad=True)
    a = ember.stack([x, x * 2])
    b = ember.cat([a, a])
    c = b[[0, 1, 1]]
    c[0] = 3.0
    s = (c @ c.t()).sum()
    return [a.grad_fn, b.grad_fn, c.grad_fn, s.grad_fn]


def custom_function():
    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)   # saving an output must not make a cycle
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    out = Exp.apply(ember.randn(10, requires_grad=True))
    return [out, out.grad_fn]


@pytest.mark.parametrize("build", [plain_graph, after_backward, inplace_and_views, higher_order,
                                   joins_and_indexing, custom_function],
                         ids=lambda f: f.__name__)
def test_unreferenced_graph_is_freed_without_gc(build):
    gc.collect()
    gc.disable()
    try:
        refs = [weakref.ref(o) for o in build()]
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()
