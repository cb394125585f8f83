"""Recompile control: `config.verbose` / EMBER_LOGS=recompiles log each recompile's failed guard
with the user's lines; dynamic=None makes a changing batch size or sequence length symbolic
after one recompile; `ember.compiler.mark_dynamic(x, dim)` says so ahead (no recompile
counted); a recompile caused by a smaller last batch suggests `drop_last=True`.
"""
import inspect
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import config

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")


def rn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def scale_rows(x, w):
    return (x @ w).relu().view(x.shape[0], -1) * 2


W = rn(4, 6, seed=9)


def compiled_variants(cf):
    return [v for v in cf.variants if not v.eager]


def test_verbose_logs_the_failed_guard_with_the_users_lines(caplog, monkeypatch):
    monkeypatch.setattr(config, "verbose", True)
    cf = ember.compile(scale_rows, backend=BACKEND, dynamic=False)
    with caplog.at_level(logging.WARNING, logger="ember.compiler"):
        cf(rn(3, 4), W)
        call_line = inspect.currentframe().f_lineno + 1
        cf(rn(5, 4), W)
    msgs = [r.getMessage() for r in caplog.records if "recompiling" in r.getMessage()]
    assert len(msgs) == 1, msgs
    defined = f"{__file__}:{inspect.getsourcelines(scale_rows)[1]}"
    assert defined in msgs[0] and f"{__file__}:{call_line}" in msgs[0], msgs[0]
    assert "x.shape: expected (3, 4), got (5, 4)" in msgs[0]
    assert "drop_last" not in msgs[0]        # the batch grew: not a last partial batch


def test_quiet_by_default(caplog):
    cf = ember.compile(scale_rows, backend=BACKEND, dynamic=False)
    with caplog.at_level(logging.WARNING, logger="ember.compiler"):
        cf(rn(3, 4), W), cf(rn(5, 4), W)
    assert not [r for r in caplog.records if "recompiling" in r.getMessage()]
    assert len(cf.recompiles) == 1


def test_environment_switch_logs_recompiles(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import ember\n"
        "def f(x, s):\n"
        "    return x * s\n"
        "g = ember.compile(f, backend='numpy')\n"
        "g(ember.ones(3), 1.0)\n"
        "g(ember.ones(3), 2.0)\n")
    env = dict(os.environ, EMBER_LOGS="recompiles")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "expected 1.0, got 2.0" in r.stderr, r.stderr
    assert f"{script}:2" in r.stderr and f"{script}:6" in r.stderr, r.stderr


def test_smaller_last_batch_suggests_drop_last():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    cm = ember.compile(model, backend=BACKEND, dynamic=False)
    data = ember.utils.data.TensorDataset(rn(21, 4))
    for (xb,) in ember.utils.data.DataLoader(data, batch_size=8):
        np.testing.assert_allclose(cm(xb).detach().numpy(), model(xb).detach().numpy(),
                                   rtol=1e-6)
    rec = cm._compiled.recompiles
    assert len(rec) == 1 and "drop_last=True" in rec[0] and "8 to 5" in rec[0], rec
    # with drop_last=True every batch has the same size: nothing recompiles
    cm2 = ember.compile(model, backend=BACKEND, dynamic=False)
    for (xb,) in ember.utils.data.DataLoader(data, batch_size=8, drop_last=True):
        cm2(xb)
    assert cm2._compiled.recompiles == []


class TinyAttention(nn.Module):
    def __init__(self, vocab=13, d=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, vocab)

    def forward(self, idx):
        B, T = idx.shape
        q, k, v = self.qkv(self.emb(idx)).split(8, dim=2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.reshape(B, T, 8))


@pytest.mark.parametrize("dim", [0, 1])
def test_dynamic_none_makes_batch_and_sequence_symbolic_after_one_recompile(dim):
    ember.manual_seed(0)
    model = TinyAttention()
    cm = ember.compile(model, backend=BACKEND)
    rng = np.random.default_rng(0)
    sizes = [4, 6, 3, 7]
    for n in sizes:
        shape = (n, 5) if dim == 0 else (2, n)
        idx = ember.tensor(rng.integers(0, 13, shape))
        np.testing.assert_allclose(cm(idx).detach().numpy(), model(idx).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    cf = cm._compiled
    assert len(cf.recompiles) == 1, cf.recompiles
    general = [v for v in compiled_variants(cf) if v.dynamic]
    assert general and f"args[0].shape[{dim}]" in general[-1].dynamic, general[-1].dynamic


def test_mark_dynamic_unifies_without_a_recompile_even_with_dynamic_false():
    cf = ember.compile(scale_rows, backend=BACKEND, dynamic=False)
    x = rn(3, 4)
    ember.compiler.mark_dynamic(x, 0)
    for n in (3, 5, 7, 2):
        xb = rn(n, 4, seed=n)
        np.testing.assert_allclose(cf(xb if n != 3 else x, W).numpy(),
                                   scale_rows(xb if n != 3 else x, W).numpy(), rtol=1e-6)
    assert cf.recompiles == []
    assert len(compiled_variants(cf)) == 1 and compiled_variants(cf)[0].dynamic
    # an unmarked dim still recompiles
    cf(rn(3, 4)[:, :3].contiguous(), W[:3])
    assert len(cf.recompiles) == 1


def test_mark_dynamic_checks_the_dim():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.compiler.mark_dynamic(rn(3, 4), 2)
    t = rn(3, 4)
    ember.compiler.mark_dynamic(t, [-1, 0])
    from ember.compiler.dynamic import marked_dims
    assert marked_dims(t) == {0, 1} and marked_dims(rn(3, 4)) == ()
