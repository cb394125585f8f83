"""mode= as torch.compile takes it, and mode="max-autotune" (ember/compiler/autotune.py): the
configuration it picks is the one the kernels then run with, results equal eager's, graphs
that change state are not re-run to time them. No timing is asserted."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import api, build, config, threads


def _f(x, w):
    return F.layer_norm(F.gelu(x * w + 1.0), (256,))


def _ref(x, w):
    return torch.nn.functional.layer_norm(torch.nn.functional.gelu(
        torch.tensor(x.numpy()) * torch.tensor(w.numpy()) + 1.0), (256,)).numpy()


@pytest.fixture(autouse=True)
def _no_graph_cache(monkeypatch):
    monkeypatch.setattr(config, "graph_cache", False)


def test_bad_mode_raises_torchs_error():
    with pytest.raises(RuntimeError) as t_err:
        torch.compile(_f, mode="fastest")
    with pytest.raises(RuntimeError) as e_err:
        ember.compile(_f, mode="fastest")
    assert str(e_err.value).split(",")[0] == str(t_err.value).split(",")[0]
    for mode in api.MODES:
        assert mode in str(e_err.value) and mode in str(t_err.value)
    with pytest.raises(RuntimeError) as t_err:
        torch.compile(_f, mode="max-autotune", options={"a": 1})
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(_f, mode="max-autotune", options={"check": True})


@pytest.mark.parametrize("mode", api.MODES)
def test_every_torch_mode_compiles_to_eager_values(mode):
    x, w = ember.randn(32, 256), ember.randn(256)
    f = ember.compile(_f, mode=mode)
    for _ in range(2):
        np.testing.assert_allclose(f(x, w).numpy(), _ref(x, w), rtol=1e-5, atol=1e-5)


def _threads_seen(monkeypatch):
    seen = []
    orig = build.KernelFn.call_ptrs

    def spy(self, *a):
        seen.append(threads._num_threads)
        return orig(self, *a)
    monkeypatch.setattr(build.KernelFn, "call_ptrs", spy)
    return seen


@pytest.mark.parametrize("choice", [1, 3])
def test_the_choice_is_applied(monkeypatch, choice):
    monkeypatch.setattr(config, "autotune_threads", [choice])
    seen = _threads_seen(monkeypatch)
    x, w = ember.randn(64, 256), ember.randn(256)
    f = ember.compile(_f, mode="max-autotune")
    f(x, w)
    v, = f.variants
    assert v.autotune["graph"]["threads"] == choice
    assert list(v.autotune["graph"]["seconds"]) == [choice]
    del seen[:]
    before = threads._num_threads
    np.testing.assert_allclose(f(x, w).numpy(), _ref(x, w), rtol=1e-5, atol=1e-5)
    assert seen and set(seen) == {choice}
    assert threads._num_threads == before          # restored after the call
    assert f"threads={choice}" in str(ember.compiler.explain(f)(x, w))


def test_fastest_of_several_is_kept_and_config_switch(monkeypatch):
    monkeypatch.setattr(config, "autotune_threads", [1, 2])
    monkeypatch.setattr(config, "max_autotune", True)
    x, w = ember.randn(64, 256), ember.randn(256)
    f = ember.compile(_f)                               # config.max_autotune: every mode
    np.testing.assert_allclose(f(x, w).numpy(), _ref(x, w), rtol=1e-5, atol=1e-5)
    choice = f.variants[0].autotune["graph"]
    assert set(choice["seconds"]) == {1, 2}
    assert choice["seconds"][choice["threads"]] == min(choice["seconds"].values())


def test_training_step_tunes_forward_and_backward(monkeypatch):
    monkeypatch.setattr(config, "autotune_threads", [2])
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 4))
    x = ember.randn(64, 32)
    cm = ember.compile(m, mode="max-autotune")
    out = cm(x)
    out.sum().backward()
    got = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    tuned = cm._compiled.variants[0].autotune
    assert tuned["forward"]["threads"] == 2 and tuned["backward"]["threads"] == 2
    tm = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.GELU(),
                             torch.nn.LayerNorm(256), torch.nn.Linear(256, 4))
    with torch.no_grad():
        for (n, p), tp in zip(m.named_parameters(), tm.parameters()):
            tp.copy_(torch.tensor(p.detach().numpy()))
    tout = tm(torch.tensor(x.numpy()))
    tout.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    for (n, g), tp in zip(got.items(), tm.parameters()):
        np.testing.assert_allclose(g, tp.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_graph_that_changes_state_is_not_rerun(monkeypatch):
    monkeypatch.setattr(config, "autotune_threads", [1, 2])
    ember.manual_seed(0)
    bn = nn.BatchNorm1d(256)
    x = ember.randn(64, 256)
    cm = ember.compile(bn, mode="max-autotune")
    with ember.no_grad():
        cm(x)
    tbn = torch.nn.BatchNorm1d(256)
    with torch.no_grad():
        tbn(torch.tensor(x.numpy()))
    # one call's update of the running stats, not one per timed run
    np.testing.assert_allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(), rtol=1e-5,
                               atol=1e-6)
    assert bn.num_batches_tracked.item() == 1
    assert not cm._compiled.variants[0].autotune
