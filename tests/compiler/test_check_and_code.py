"""options={"check": True}, show_code, explain's kernel lines, and symbolic sizes in the
printed graph (the C backend where it matters)."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F


@pytest.fixture(autouse=True)
def kernels_for_small_shapes(monkeypatch):
    """These tests use small tensors; by default groups that small run op by op."""
    monkeypatch.setattr(ember.compiler.config, "min_kernel_elements", 0)


def gelu_ln(x, w, b):
    return F.layer_norm(F.gelu(x * w + b), (16,))


def args(seed):
    g = ember.Generator().manual_seed(seed)
    return (ember.randn(8, 16, generator=g), ember.randn(16, generator=g),
            ember.randn(16, generator=g))


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_check_mode_agrees_and_returns_eager_values(backend):
    cf = ember.compile(gelu_ln, backend=backend, options={"check": True})
    cf(*args(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no check warning may come
        out = cf(*args(1))
    np.testing.assert_allclose(out.numpy(), gelu_ln(*args(1)).numpy(), rtol=1e-6)
    assert cf.check_failures == []


def test_check_mode_names_the_first_node_that_differs():
    cf = ember.compile(gelu_ln, backend="numpy", options={"check": True})
    cf(*args(0))
    v = cf.variants[0]
    v.check_fn.env["_f_erf"] = lambda t: t.erf() * 1.01     # a miscompiled erf
    v._checked_fn = None
    with pytest.warns(UserWarning, match="node 'erf'") as rec:
        out = cf(*args(1))
    msg = str(rec[0].message)
    assert "test_check_and_code.py" in msg and "differs from eager" in msg, msg
    # the call still returns the eager result
    np.testing.assert_allclose(out.numpy(), gelu_ln(*args(1)).numpy(), rtol=1e-6)


def test_check_mode_restores_buffers_between_the_two_runs():
    bn = ember.nn.BatchNorm1d(4)
    cm = ember.compile(bn, backend="numpy", options={"check": True})
    ref = ember.nn.BatchNorm1d(4)
    x0, x1 = ember.randn(6, 4), ember.randn(6, 4)
    for x in (x0, x1):
        cm(x)
        ref(x)
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-6)
    assert int(bn.num_batches_tracked) == int(ref.num_batches_tracked) == 2


def test_show_code_prints_each_kernel_with_its_fused_ops():
    cf = ember.compile(gelu_ln, backend="c")
    text = ember.compiler.show_code(cf, *args(0))
    assert "void kernel_0(" in text and "#pragma omp" in text
    for op in ("ember.erf", "ember.mean", "ember.rsqrt"):
        assert op in text, op
    assert "def forward(x, w, b):" in text


def test_explain_reports_kernels_and_planned_peak():
    cf = ember.compile(gelu_ln, backend="c")
    report = str(ember.compiler.explain(cf)(*args(0)))
    assert "fused kernels (1):" in report, report
    assert "reductions: sum, sum" in report           # mean and var share a pass
    assert "planned peak of intermediate buffers" in report


def test_dynamic_size_prints_symbolically_and_replays_any_batch():
    def f(x):
        return (x.reshape(x.shape[0] * 2, 8) * 3).sum(1)
    cf = ember.compile(f, backend="c")
    for n in (3, 5, 9, 4):
        x = ember.randn(n, 16)
        np.testing.assert_allclose(cf(x).numpy(), f(x).numpy(), rtol=1e-5)
    assert len(cf.variants) == 2 and len(cf.recompiles) == 1
    text = str(cf.variants[-1].graphs["graph"])
    assert "s0 * 2" in text, text
    assert cf.variants[-1].dynamic == ["args[0].shape[0]"]


def test_fusion_log_says_why_a_node_did_not_fuse(caplog):
    import logging
    cf = ember.compile(lambda a, b: (a @ b).relu() + 1, backend="c")
    with caplog.at_level(logging.DEBUG, logger="ember.compiler"):
        cf(ember.randn(4, 4), ember.randn(4, 4))
    assert any("matmul not fused" in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records]


def test_set_num_threads_does_not_change_compiled_results():
    cf = ember.compile(gelu_ln, backend="c")
    x = (ember.randn(4096, 16), ember.randn(16), ember.randn(16))
    cf(*x)                                             # the trace (an eager run)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = cf(*x).numpy().copy()
        ember.set_num_threads(2)
        two = cf(*x).numpy()
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


MODEL_SCRIPT = """
import ember, ember.nn as nn, ember.nn.functional as F
from ember.compiler import build
ember.manual_seed(0)
m = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
cm = ember.compile(m, backend="c")
x = ember.randn(5, 8)
loss = F.cross_entropy(cm(x), ember.tensor([0, 1, 2, 3, 0]))
loss.backward()
print(build.stats["compiled"], build.stats["disk_hits"], len(cm._compiled.variants[0].kernels))
"""


def test_a_second_process_compiling_the_same_model_compiles_nothing(tmp_path):
    import os
    import subprocess
    import sys
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "cache"), EMBER_MIN_KERNEL_ELEMENTS="0")
    runs = [subprocess.run([sys.executable, "-c", MODEL_SCRIPT], capture_output=True, text=True,
                           env=env, check=True).stdout.split() for _ in range(2)]
    (c1, h1, k1), (c2, h2, k2) = [[int(v) for v in r] for r in runs]
    assert k1 == k2 and k1 >= 2            # forward and backward kernels
    assert c1 >= 1 and h1 == 0             # the first process built the libraries
    assert c2 == 0 and h2 == c1            # the second one loaded each from disk


def test_buffers_that_die_inside_a_graph_are_reused_across_calls():
    from ember.compiler.buffers import POOL

    def f(x, w):
        h = (x * 2).exp().sum(1, keepdim=True)          # a kernel output read by matmul
        return (h * x) @ w
    cf = ember.compile(f, backend="c")
    x, w = ember.randn(64, 64), ember.randn(64, 8)
    cf(x, w)
    out = cf(x, w)
    assert POOL.bytes > 0                                # a dead buffer went back
    before = POOL.bytes
    again = cf(x, w)                                     # ...and is taken again
    assert POOL.bytes == before
    np.testing.assert_allclose(again.numpy(), out.numpy(), rtol=1e-6)
    np.testing.assert_allclose(again.numpy(), f(x, w).numpy(), rtol=1e-4)


def test_unknown_backend_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="unknown backend 'inductor'"):
        ember.compile(gelu_ln, backend="inductor")
