"""Graph breaks split a compiled function (ember/compiler/segments.py): the ops before a break
run as one compiled segment, the breaking statement runs in Python, and the ops after it run
as another compiled segment chosen by the value the break read. Each test compares with
eager, call after call, and counts what ran: segments, ops answered from segments, ops run
eagerly, traces. Python side effects between the segments happen once per call, in order.
"""
import os

import numpy as np
import pytest

import ember
import ember.nn as nn

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")


def same(got, want):
    if BACKEND == "numpy":
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    else:
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=3e-6,
                                   atol=1e-7)


def t(*vals):
    return ember.tensor(np.array(vals, np.float32))


# the trace reads eager values, a replay the C kernels' (exp within a few ulp): a float read
# with .item() then differs in its last bits once, and that value is traced once more
EXTRA = 1 if BACKEND == "c" else 0


def split_variant(cf):
    vs = [v for v in cf.variants if v.root is not None]
    assert len(vs) == 1, [(v.eager, v.root) for v in cf.variants]
    return vs[0]


def one_break(x):
    y = (x * 2).exp()
    s = y.sum().item()          # break 1
    return (y / s).tanh() + 1


def two_breaks(x, w):
    h = (x @ w).relu()
    m = h.max().item()          # break 1
    g = h / (m + 1)
    if g.mean() > 0.25:         # break 2
        return g * 2 - 1
    return g.sigmoid()


def test_one_break_runs_two_compiled_segments():
    cf = ember.compile(one_break, backend=BACKEND)
    x = t(0.1, 0.5, -0.3)
    for _ in range(4):
        same(cf(x), one_break(x))
    v = split_variant(cf)
    st = v.stats
    assert st.traces == 1 + EXTRA and st.eager_ops == 0 and not st.diverged
    assert st.calls == 3 and st.segments_run == 3 * 2 - EXTRA
    if not EXTRA:
        assert st.served_ops == 3 * len([n for s in v.root.all() for n, _ in s.order])
    report = ember.compiler.explain(cf)(x)
    assert report.graph_count == 2 + EXTRA and len(report.graph_breaks) == 1
    text = str(report)
    assert "Segment 1" in text and "Segment 2" in text and "split" in text
    assert f"{__file__}:{one_break.__code__.co_firstlineno + 2}" in text


def test_a_new_value_read_traces_the_rest_once():
    cf = ember.compile(one_break, backend=BACKEND)
    xs = [t(0.1, 0.5), t(0.2, 0.1), t(0.1, 0.5), t(0.2, 0.1)]
    for x in xs:
        same(cf(x), one_break(x))
    st = split_variant(cf).stats
    assert st.traces == 2 + EXTRA and st.eager_ops == 0    # one trace per value read
    assert len(split_variant(cf).root.children) == 2 + EXTRA


def test_two_breaks_and_an_if_branching_both_ways():
    rng = np.random.default_rng(0)
    w = ember.tensor(np.abs(rng.standard_normal((3, 4))).astype(np.float32))
    xa = ember.tensor(np.ones((2, 3), np.float32))           # g near 1: the first branch
    xb = ember.tensor(np.full((2, 3), 0.01, np.float32))     # g near 0: the second
    cf = ember.compile(two_breaks, backend=BACKEND)
    means = []
    for x in (xa, xb, xa, xb, xa):
        same(cf(x, w), two_breaks(x, w))
        h = (x @ w).relu()
        means.append(float((h / (float(h.max()) + 1)).mean()) > 0.25)
    assert len(set(means)) == 2                          # both branches were taken
    v = split_variant(cf)
    st = v.stats
    assert st.eager_ops == 0 and not st.diverged
    assert st.traces == 2            # xa's values and xb's: each path traced once
    # three segments per replay, but the one that traced xb's path ran only the first
    assert st.calls == 4 and st.segments_run == 4 * 3 - 2
    report = ember.compiler.explain(cf)(xa, w)
    text = str(report)
    line0 = two_breaks.__code__.co_firstlineno
    for k in (2, 4):
        assert f"{__file__}:{line0 + k}" in text, text
    assert report.graph_count == 1 + 2 * 2 and len(report.graph_breaks) == 2


def branchy(x):
    y = x.exp() - 1.5
    if y.sum() > 0:
        z = y * 3
    else:
        z = -y
    return z.relu() + x


def test_if_on_a_tensor_alternating_across_calls():
    cf = ember.compile(branchy, backend=BACKEND)
    pos, neg = t(1.0, 2.0), t(-1.0, -2.0)
    for x in (pos, neg) * 3:
        same(cf(x), branchy(x))
    v = split_variant(cf)
    assert v.stats.traces == 2 and v.stats.eager_ops == 0
    assert len(v.root.children) == 2 and all(c is not None for c in v.root.children.values())
    # 5 replays, two segments each, but the one that traced the new branch ran only one
    assert v.stats.calls == 5 and v.stats.segments_run == 5 * 2 - 1


def test_print_and_python_effects_happen_once_in_order(capsys):
    log = []

    def fn(x):
        log.append("start")
        y = x * 2
        print("y is", y)                       # a break
        log.append("after print")
        z = y + 1
        log.append(round(float(z.sum()), 4))   # a break, its value used in Python
        return z * 3

    cf = ember.compile(fn, backend=BACKEND)
    x = t(1.0, 2.0)
    for _ in range(3):
        got = cf(x)
        out_c, log_c = capsys.readouterr().out, list(log)
        log.clear()
        want = fn(x)
        out_e, log_e = capsys.readouterr().out, list(log)
        log.clear()
        same(got, want)
        assert out_c == out_e and out_c.count("y is") == 1
        assert log_c == log_e == ["start", "after print", 8.0]
    st = split_variant(cf).stats
    assert st.traces == 1 and st.eager_ops == 0 and st.segments_run == 2 * 3


def test_many_values_read_at_one_break_run_the_rest_eagerly():
    cf = ember.compile(one_break, backend=BACKEND)
    limit = ember.compiler.config.break_values
    for k in range(limit + 3):
        x = t(0.1 * k, 0.2)
        same(cf(x), one_break(x))
    st = split_variant(cf).stats
    assert st.traces == limit            # then the rest of the call runs eagerly:
    assert st.eager_ops == 3 * 3         # div, tanh, add for each of the 3 calls past it
    assert len(split_variant(cf).root.children) == limit    # nothing kept for those


FLAG = {"double": False}


def test_a_path_the_guards_do_not_pin_leaves_the_segments_exactly():
    def fn(x):
        y = x + 1
        s = y.sum().item()
        if FLAG["double"]:                 # a Python branch on unguarded state
            y = y * 2
        return y - s

    cf = ember.compile(fn, backend=BACKEND)
    x = t(1.0, 3.0)
    same(cf(x), fn(x))
    FLAG["double"] = True
    try:
        same(cf(x), fn(x))
    finally:
        FLAG["double"] = False
    st = split_variant(cf).stats
    assert st.diverged and st.eager_ops == 2       # mul and sub ran eagerly


def test_gradients_through_the_segments():
    def fn(x, w):
        h = (x * w).tanh()
        scale = h.abs().max().item()
        return (h / scale).sum()

    cf = ember.compile(fn, backend=BACKEND)
    for k in range(3):
        a = np.array([0.3, -0.7, 1.1 + k], np.float32)
        xc, xe = ember.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
        w = ember.tensor(np.array([1.0, 2.0, 0.5], np.float32))
        cf(xc, w).backward()
        fn(xe, w).backward()
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-6, atol=1e-7)
    v = split_variant(cf)
    assert v.grad and v.stats.eager_ops == 0


def test_a_module_forward_with_a_break():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2)

        def forward(self, x):
            h = self.a(x).relu()
            if h.mean() > 0.1:
                h = h * 0.5
            return self.b(h)

    ember.manual_seed(0)
    net = Net()
    cm = ember.compile(net, backend=BACKEND)
    rng = np.random.default_rng(3)
    with ember.no_grad():
        for k in range(4):
            x = ember.tensor(rng.standard_normal((5, 3)).astype(np.float32) * (k + 1))
            same(cm(x), net(x))
    v = split_variant(cm._compiled)
    assert v.stats.eager_ops == 0 and not v.grad


def test_in_place_ops_are_not_split():
    def fn(x):
        y = x * 2
        y.add_(1)
        return y * y.sum().item()

    cf = ember.compile(fn, backend=BACKEND)
    x = t(1.0, 2.0)
    for _ in range(2):
        same(cf(x), fn(x))
    assert cf.variants[0].eager and cf.variants[0].root is None
    assert "not split into segments: add_" in str(ember.compiler.explain(cf)(x))


def test_splitting_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(ember.compiler.config, "split_graph_breaks", False)
    cf = ember.compile(one_break, backend=BACKEND)
    x = t(0.1, 0.5)
    same(cf(x), one_break(x))
    assert cf.variants[0].eager and len(cf.breaks) == 1
