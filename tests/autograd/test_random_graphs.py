"""Random expression graphs (hypothesis) built identically in torch and ember: every leaf's
.grad after backward, and second derivatives via autograd.grad(create_graph=True), must match.

A drawn program is a list of steps over a growing list of values (the leaves first). Shapes
broadcast against one base shape, leaves may be non-contiguous or expanded, and some steps are
in-place ops on non-leaf values (the graph is rebased) or writes into views of them.
"""
import numpy as np
import torch
from hypothesis import given, settings, strategies as st

import ember

UNARY = {
    "sin": lambda x: x.sin(), "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(),
    "exp_tanh": lambda x: x.tanh().exp(), "log1p_sq": lambda x: (x * x).log1p(),
    "sqrt1": lambda x: (x * x + 1).sqrt(), "neg": lambda x: -x, "half": lambda x: x * 0.5,
    "pow3": lambda x: x.tanh() ** 3, "atan": lambda x: x.atan(), "cos": lambda x: x.cos(),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1), "atan2": lambda a, b: a.atan2(b * b + 0.5),
    "lerp": lambda a, b: a.lerp(b, 0.25), "maxish": lambda a, b: a.maximum(b + 1e-3),
}
INPLACE = {  # in-place on a non-leaf value (a fresh `x * 1`, so leaves stay untouched)
    "add_": lambda a, b: a.add_(b), "mul_": lambda a, b: a.mul_(b.tanh()),
    "sub_": lambda a, b: a.sub_(b, alpha=0.5),
}


@st.composite
def programs(draw):
    nd = draw(st.integers(0, 3))
    base = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 2, 0]), min_size=nd, max_size=nd)))
    n_leaves = draw(st.integers(1, 3))
    leaves = []
    for _ in range(n_leaves):
        # a shape that broadcasts to `base`: drop leading dims, set some dims to 1
        k = draw(st.integers(0, nd))
        shape = tuple(1 if draw(st.booleans()) else s for s in base[k:])
        layout = draw(st.sampled_from(["contig", "transposed", "strided", "expanded"]))
        leaves.append((shape, layout, draw(st.booleans())))
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        n = n_leaves + len(steps)
        kind = draw(st.sampled_from(["unary", "binary", "binary", "inplace", "reduce",
                                     "setitem"]))
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        name = draw(st.sampled_from(sorted({"unary": UNARY, "binary": BINARY,
                                            "inplace": INPLACE}.get(kind, {"-": 0}))))
        steps.append((kind, name, a, b, draw(st.integers(0, 2))))
    seed = draw(st.integers(0, 2**16))
    return base, leaves, steps, seed


def make_leaf(L, arr, layout):
    if layout == "transposed" and arr.ndim >= 2:
        t = L.tensor(np.ascontiguousarray(arr.T), dtype=L.float64).t() if arr.ndim == 2 else \
            L.tensor(np.ascontiguousarray(arr.transpose(2, 1, 0)), dtype=L.float64).permute(2, 1, 0)
    elif layout == "strided":
        t = L.tensor(np.stack([arr, arr * 0 + 9], -1), dtype=L.float64)[..., 0]
    elif layout == "expanded" and arr.ndim >= 1 and arr.shape[0] > 1:
        t = L.tensor(arr[:1], dtype=L.float64).expand(arr.shape)   # stride 0 in dim 0
    else:
        t = L.tensor(arr, dtype=L.float64)
    return t.detach()


def build(L, program):
    base, leaves, steps, seed = program
    rng = np.random.default_rng(seed)
    vals, req = [], []
    for shape, layout, rg in leaves:
        t = make_leaf(L, rng.uniform(-1.5, 1.5, shape), layout)
        if rg or not req:
            t.requires_grad_()
            req.append(t)
        vals.append(t)
    for kind, name, a, b, k in steps:
        x, y = vals[a], vals[b]
        if kind == "unary":
            v = UNARY[name](x)
        elif kind == "binary":
            v = BINARY[name](x, y)
        elif kind == "inplace":
            v = x * 1
            if L.broadcast_shapes(v.shape, y.shape) == v.shape:
                INPLACE[name](v, y)
        elif kind == "reduce":
            dims = [d for d in range(x.dim()) if x.shape[d] > 1][:1]
            v = x.sum(dims[0], keepdim=True) if dims and k else x.mean()
        else:   # write into a view of a fresh non-leaf value
            v = x * 1
            if v.dim() and v.shape[0] > 1:
                src = y.sum() if k == 0 else y.tanh().mean()
                v[k % v.shape[0]] = src
            else:
                v.mul_(2)
        vals.append(v)
    out = sum((v * (i + 1)).sum() for i, v in enumerate(vals))   # every leaf is used
    return out, req


def close(e, t):
    assert (e is None) == (t is None)
    if t is not None:
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-9,
                                   atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(programs())
def test_leaf_grads_match_torch(program):
    t_out, t_req = build(torch, program)
    e_out, e_req = build(ember, program)
    close(e_out, t_out)
    t_out.backward()
    e_out.backward()
    for e, t in zip(e_req, t_req):
        close(e.grad, t.grad)


@settings(max_examples=40, deadline=None)
@given(programs())
def test_second_derivatives_match_torch(program):
    t_out, t_req = build(torch, program)
    e_out, e_req = build(ember, program)
    t_g = torch.autograd.grad(t_out, t_req, create_graph=True)
    e_g = ember.autograd.grad(e_out, e_req, create_graph=True)
    for e, t in zip(e_g, t_g):
        close(e, t)
    rng = np.random.default_rng(program[-1])
    vs = [rng.standard_normal(tuple(t.shape)) for t in t_g]
    t_s = sum((g * torch.tensor(v)).sum() for g, v in zip(t_g, vs))
    e_s = sum((g * ember.tensor(v)).sum() for g, v in zip(e_g, vs))
    if not t_s.requires_grad:   # the graph is linear in every leaf: nothing to differentiate
        return
    t_h = torch.autograd.grad(t_s, t_req, allow_unused=True, materialize_grads=True)
    e_h = ember.autograd.grad(e_s, e_req, allow_unused=True, materialize_grads=True)
    for e, t in zip(e_h, t_h):
        close(e, t)
