"""ember.autograd.graph.to_dot: the DOT source of a backward graph, checked against torch's
grad_fn chain for the same expressions, and rendered with Graphviz where `dot` exists."""
import re
import shutil

import numpy as np
import pytest
import torch

import ember
from ember.autograd.graph import to_dot

_NODE = re.compile(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r"^\s*(\w+) -> (\w+)")


def parse(dot):
    """({node id: label}, [(from id, to id)]) of our DOT output."""
    labels, edges = {}, []
    for line in dot.splitlines():
        m = _EDGE.match(line)
        if m:
            edges.append(m.groups())
            continue
        m = _NODE.match(line)
        if m:
            labels[m.group(1)] = m.group(2).replace("\\n", "\n")
    return labels, edges


def torch_edges(t):
    """Sorted (child name, parent name) pairs of torch's grad_fn graph, forward direction."""
    out, seen, stack = [], set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for c, _ in n.next_functions:
            if c is not None:
                out.append((c.name().replace("torch::autograd::", ""), n.name()))
                stack.append(c)
    return sorted(out)


def op_edges(dot):
    labels, edges = parse(dot)
    ops = {k for k in labels if re.fullmatch(r"n\d+", k)}
    return sorted((labels[a], labels[b]) for a, b in edges if a in ops and b in ops)


def _both(expr, *shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    et = [ember.tensor(a, requires_grad=True) for a in arrays]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    return expr(ember, *et), expr(torch, *tt), et


@pytest.mark.parametrize("expr,shapes", [
    (lambda m, a, b: (a * b).sin().sum(), [(3, 4), (3, 4)]),
    (lambda m, a, b: (a @ b).relu().mean(), [(2, 3), (3, 4)]),
    (lambda m, a, b: (a * a + b.exp()).tanh().sum(), [(5,), (5,)]),
    (lambda m, a, b: m.cat([a, b]).sigmoid().pow(2).sum(), [(2, 3), (4, 3)]),
    (lambda m, a, b: (a / (b.abs() + 1)).log().sum(dim=1).max(), [(3, 4), (3, 4)]),
])
def test_nodes_and_edges_match_torchs_grad_fn_chain(expr, shapes):
    ours, theirs, _ = _both(expr, *shapes)
    assert op_edges(to_dot(ours)) == torch_edges(theirs)


def test_parameters_are_labelled_with_name_and_shape():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    y = model(ember.randn(5, 3)).sum()
    dot = to_dot(y, params=dict(model.named_parameters()))
    labels, edges = parse(dot)
    for name, p in model.named_parameters():
        want = f"{name}\n{tuple(p.shape)}"
        var = [k for k, v in labels.items() if v == want]
        assert len(var) == 1, (want, labels)
        # the parameter's box feeds an AccumulateGrad node
        (acc,) = [b for a, b in edges if a == var[0]]
        assert labels[acc] == "AccumulateGrad"
    assert sum(v == "AccumulateGrad" for v in labels.values()) == 4
    assert any(v.startswith("output ()") for v in labels.values())


def test_show_saved_draws_saved_tensors():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    y = (a * b).sum()
    plain, saved = to_dot(y), to_dot(y, show_saved=True)
    assert "orange" not in plain
    labels, edges = parse(saved)
    boxes = sorted(v for k, v in labels.items() if "_s" in k)
    assert boxes == ["other\n(3,)", "self\n(3,)"]   # MulBackward0 saves both operands
    mul = [k for k, v in labels.items() if v == "MulBackward0"][0]
    assert sum(1 for a_, b_ in edges if b_ == mul and "_s" in a_) == 2


def test_a_shared_input_and_several_outputs():
    a = ember.randn(2, requires_grad=True)
    h = a.exp()
    y1, y2 = h.sum(), (h * 3).sum()
    labels, edges = parse(to_dot([y1, y2]))
    exp = [k for k, v in labels.items() if v == "ExpBackward0"]
    assert len(exp) == 1          # one node, reached from both outputs
    assert sum(1 for a_, _ in edges if a_ == exp[0]) == 2


def test_errors():
    with pytest.raises(TypeError):
        to_dot([1, 2])
    with pytest.raises(ValueError):
        to_dot(ember.ones(1, requires_grad=True)).render("x.gif", format="gif")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("fmt,magic", [("svg", b"<svg"), ("png", b"\x89PNG")])
def test_render(tmp_path, fmt, magic):
    a = ember.randn(3, requires_grad=True)
    path = tmp_path / f"g.{fmt}"
    out = to_dot((a * 2).sum(), params={"a": a}).render(path)
    data = path.read_bytes()
    assert out == path and magic in data[:400]
    if fmt == "svg":
        assert b"MulBackward0" in data and b"AccumulateGrad" in data
