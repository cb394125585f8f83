"""Graph breaks of ember.compile: reading a traced tensor's values in Python (.item(),
.tolist(), .numpy(), bool(), `if t > 0:`, print, NumPy calls) still gives exactly the eager
result at every call (also with new values that take another branch), explain() reports the
break with the user's file:line, and fullgraph=True raises GraphBreakError naming that line.
Functions wrapped in ember.compiler.disable run at every call of a compiled function.

The offending statement of each function below carries a `# BREAK` comment; the tests find
its line number in this file from the source.
"""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import GraphBreakError

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")   # the C backend: tests/compiler/test_c_backend.py


def cfun(obj):
    return getattr(obj, "_compiled", obj)


def where(fn):
    """'<this file>:<line>' of the statement marked `# BREAK` in fn's source."""
    lines, start = inspect.getsourcelines(fn)
    marked = [i for i, line in enumerate(lines) if "# BREAK" in line]
    assert len(marked) == 1
    return f"{os.path.abspath(__file__)}:{start + marked[0]}"


def same(got, want):
    """Exactly eager's on the numpy backend; the C kernels' exp/tanh are within a few ulp."""
    if BACKEND == "numpy":
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=1e-7)


def rn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


# ---------------------------------------------------------------- the break kinds
def brk_item(x):
    y = x * 2
    s = y.sum().item()  # BREAK
    return y * s + 1


def brk_tolist(x):
    vals = (x + 1).tolist()  # BREAK
    return x * vals[0][1] - len(vals)


def brk_numpy(x):
    a = (x * 3).numpy()  # BREAK
    return x + float(a.mean())


def brk_bool(x):
    flag = bool((x > 0.5).any())  # BREAK
    return x * 3 if flag else x - 3


def brk_if(x):
    y = x.exp()
    if y.sum() > 6:  # BREAK
        return y * 2
    return -y


def brk_print(x):
    y = x * 2
    print("value:", y)  # BREAK
    return y + 1


def brk_asarray(x):
    m = np.asarray(x.abs()).max()  # BREAK
    return x / float(m)


def brk_float(x):
    m = float(x.max())  # BREAK
    return x - m


BREAKS = {"item": brk_item, "tolist": brk_tolist, "numpy": brk_numpy, "bool": brk_bool,
          "if": brk_if, "print": brk_print, "asarray": brk_asarray, "float": brk_float}
# the second call's values differ from the first's (for brk_if and brk_bool: the other branch)
X0 = np.array([[0.1, 0.9, 0.3], [0.2, 0.4, 2.0]], np.float32)
X1 = np.array([[-0.5, 0.2, 0.1], [0.3, -0.2, 0.4]], np.float32)


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_break_gives_the_eager_result_at_every_call(kind, capsys):
    fn = BREAKS[kind]
    cf = ember.compile(fn, backend=BACKEND)
    for a in (X0, X1, X0, X1 * 3):
        got, want = cf(ember.tensor(a)), fn(ember.tensor(a))
        same(got, want)
    if kind == "print":
        out = capsys.readouterr().out
        assert out.count("value:") == 8      # printed by every call, compiled or not
    assert len(cf.breaks) == 1, [str(b) for b in cf.breaks]
    assert cf.recompiles == []


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_explain_reports_the_break_with_file_and_line(kind, capsys):
    fn = BREAKS[kind]
    report = ember.compiler.explain(fn, backend=BACKEND)(ember.tensor(X0))
    text = str(report)
    loc = where(fn)
    assert len(report.graph_breaks) == 1
    assert "Graph break count: 1" in text
    assert loc in text, (loc, text)
    assert loc in report.break_reasons[0]
    assert f"{loc} in {fn.__name__}" in str(report.graph_breaks[0])
    # says what happened with the call: run eagerly, or split around the break
    assert "eager" in text.lower() or "split" in text.lower()


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_fullgraph_raises_naming_the_line(kind, capsys):
    fn = BREAKS[kind]
    cf = ember.compile(fn, backend=BACKEND, fullgraph=True)
    with pytest.raises(GraphBreakError) as info:
        cf(ember.tensor(X0))
    assert where(fn) in str(info.value)
    assert fn.__name__ in str(info.value)


def test_break_reason_names_what_was_read():
    for fn, word in ((brk_item, "item()"), (brk_tolist, "tolist()"), (brk_numpy, "numpy()"),
                     (brk_bool, "bool()"), (brk_print, "print"), (brk_asarray, "NumPy")):
        report = ember.compiler.explain(fn, backend=BACKEND)(ember.tensor(X0))
        assert word in report.break_reasons[0], (word, report.break_reasons)


def test_break_with_gradients_matches_eager():
    a0 = X0.copy()
    cf = ember.compile(brk_item, backend=BACKEND)
    for a in (a0, X1):
        xc, xe = ember.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
        cf(xc).sum().backward()
        brk_item(xe).sum().backward()
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-6)


class BreakingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.steps = 0

    def forward(self, x):
        h = self.lin(x)
        scale = h.abs().max().item()  # BREAK
        self.steps += 1
        return h / scale


def test_break_inside_a_module_forward():
    ember.manual_seed(0)
    net = BreakingNet()
    cm = ember.compile(net, backend=BACKEND)
    for a in (X0, X1):
        got, want = cm(ember.tensor(a)), net(ember.tensor(a))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert net.steps == 4          # the Python side effect ran at every call
    text = str(ember.compiler.explain(cm)(ember.tensor(X0)))
    assert where(BreakingNet.forward) in text


def test_reading_an_unrelated_tensor_is_not_a_break():
    """.item() on a tensor the traced computation does not depend on is plain Python."""
    limit = ember.tensor(2.0)

    def fn(x):
        return x.clamp(max=limit.item()) * 2

    cf = ember.compile(fn, backend=BACKEND, fullgraph=True)
    for a in (X0, X1 * 5):
        np.testing.assert_array_equal(cf(ember.tensor(a)).numpy(), fn(ember.tensor(a)).numpy())
    assert cf.breaks == [] and not cf.variants[0].eager


def test_break_logged_by_environment_switch(tmp_path):
    """EMBER_LOGS=graph_breaks,recompiles logs each break and recompile as it happens."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import ember\n"
        "def f(x):\n"
        "    return x * x.sum().item()\n"
        "g = ember.compile(lambda x, s: x * s, backend='numpy')\n"
        "f = ember.compile(f, backend='numpy')\n"
        "f(ember.ones(3))\n"
        "g(ember.ones(3), 1.0)\n"
        "g(ember.ones(3), 2.0)\n")
    env = dict(os.environ, EMBER_LOGS="graph_breaks,recompiles")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"{script}:3" in r.stderr, r.stderr           # the break, with its line
    assert "expected 1.0, got 2.0" in r.stderr, r.stderr  # the recompile, with its guard


# ---------------------------------------------------------------- ember.compiler.disable
def test_disabled_function_runs_at_every_call():
    seen = []

    @ember.compiler.disable
    def log_stats(t):
        seen.append(float(t.sum()))          # reads values: fine, it runs eagerly
        return t * 2

    def fn(x):
        y = log_stats(x + 1)
        return y.relu() - 1

    cf = ember.compile(fn, backend=BACKEND, fullgraph=True)
    for i, a in enumerate((X0, X1, X1 * 2)):
        got = cf(ember.tensor(a))
        assert len(seen) == i + 1
        assert seen[-1] == pytest.approx(float((a + 1).sum()), rel=1e-6)
        np.testing.assert_allclose(got.numpy(), np.maximum((a + 1) * 2, 0) - 1, rtol=1e-6)
    assert cf.breaks == [] and len(cf.variants) == 1 and not cf.variants[0].eager
    assert "log_stats" in str(cf.variants[0].graphs["graph"])


def test_disabled_function_returning_nothing_still_runs():
    counter = {"n": 0}

    @ember.compiler.disable
    def tick():
        counter["n"] += 1

    def fn(x):
        tick()
        return x + 1

    cf = ember.compile(fn, backend=BACKEND)
    for k in range(3):
        np.testing.assert_array_equal(cf(ember.tensor(X0)).numpy(), X0 + 1)
        assert counter["n"] == k + 1
    assert len(cf.variants) == 1 and not cf.variants[0].eager


def test_disabled_function_outside_compiled_code_is_plain():
    @ember.compiler.disable
    def double(t):
        return t * 2
    np.testing.assert_array_equal(double(ember.tensor(X0)).numpy(), X0 * 2)
    assert double.__name__ == "double"


def test_disabled_function_with_gradients():
    @ember.compiler.disable
    def scaled(t):
        return t * float(t.detach().abs().max())

    def fn(x, w):
        return (scaled(x @ w) + w.sum()).sum()

    w0 = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    cf = ember.compile(fn, backend=BACKEND)
    for a in (X0, X1):
        wc, we = ember.tensor(w0, requires_grad=True), ember.tensor(w0, requires_grad=True)
        out_c, out_e = cf(ember.tensor(a), wc), fn(ember.tensor(a), we)
        np.testing.assert_allclose(out_c.item(), out_e.item(), rtol=1e-5)
        out_c.backward()
        out_e.backward()
        np.testing.assert_allclose(wc.grad.numpy(), we.grad.numpy(), rtol=1e-5, atol=1e-6)
