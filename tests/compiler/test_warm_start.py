"""Warm starts from the disk cache (ember/compiler/disk_cache.py): a fresh process compiling
the same model with the same guards loads its graphs without tracing (the tracer's counter
stays at zero) and gets the same results; a corrupt or stale entry is rebuilt with one log
line; anything the key covers (shapes, requires_grad, the code) misses."""
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import config, disk_cache, tracer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r'''
import json, sys
import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import tracer, disk_cache


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.ln = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x, y):
        h = self.ln(F.gelu(self.fc1(x)))
        out = self.fc2(h)
        return out, F.cross_entropy(out, y)


ember.manual_seed(0)
model = Net()
x = ember.randn(5, 8)
y = ember.tensor([0, 1, 2, 3, 1])
cm = ember.compile(model)
res = {"weights": {k: v.tolist() for k, v in model.state_dict().items()},
       "x": x.tolist(), "y": y.tolist(), "steps": []}
for step in range(2):
    out, loss = cm(x, y)
    model.zero_grad()
    loss.backward()
    res["steps"].append({"out": out.tolist(), "loss": loss.item(),
                         "grads": {k: p.grad.tolist() for k, p in model.named_parameters()}})
res["traces"] = tracer.stats["traces"]
res["cache"] = dict(disk_cache.stats)
print(json.dumps(res))
'''


def _run(tmp_path):
    path = tmp_path / "warm_script.py"
    path.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT, EMBER_GRAPH_CACHE_DIR=str(tmp_path / "graphs"),
               EMBER_GRAPH_CACHE="1")
    env.pop("EMBER_LOGS", None)
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _torch_step(res):
    """The same model and step in PyTorch, from the ember weights."""
    w = {k: torch.tensor(v) for k, v in res["weights"].items()}
    x, y = torch.tensor(res["x"]), torch.tensor(res["y"])
    params = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    h = torch.nn.functional.linear(x, params["fc1.weight"], params["fc1.bias"])
    h = torch.nn.functional.layer_norm(torch.nn.functional.gelu(h), (16,),
                                       params["ln.weight"], params["ln.bias"])
    out = torch.nn.functional.linear(h, params["fc2.weight"], params["fc2.bias"])
    loss = torch.nn.functional.cross_entropy(out, y)
    loss.backward()
    return out.detach(), loss.item(), {k: p.grad for k, p in params.items()}


def test_second_process_loads_without_tracing(tmp_path):
    cold = _run(tmp_path)
    assert cold["traces"] >= 1 and cold["cache"]["saved"] == 1
    warm = _run(tmp_path)
    assert warm["traces"] == 0, ("the warm process traced", warm["cache"], warm.get("err"))
    assert warm["cache"]["loaded"] == 1 and warm["cache"]["saved"] == 0
    t_out, t_loss, t_grads = _torch_step(cold)
    for run in (cold, warm):
        for step in run["steps"]:
            np.testing.assert_allclose(step["out"], t_out.numpy(), rtol=1e-5, atol=1e-6)
            assert step["loss"] == pytest.approx(t_loss, rel=1e-5)
            for k, g in t_grads.items():
                np.testing.assert_allclose(step["grads"][k], g.numpy(), rtol=1e-4,
                                           atol=1e-6)
    # both processes replay the same compiled graphs on their second step
    assert warm["steps"][1] == cold["steps"][1]


# ---------------------------------------------------------------- in one process
@pytest.fixture
def graph_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "graph_cache", True)
    monkeypatch.setattr(config, "graph_cache_dir", str(tmp_path / "graphs"))
    return tmp_path / "graphs"


class Block(nn.Module):
    def __init__(self, n=12):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.register_buffer("scale", ember.full((n,), 0.5))

    def forward(self, x):
        return (F.silu(self.lin(x)) * self.scale).sum(-1)


def _entries(d):
    return sorted(p for p in d.rglob("*.json") if not p.name.endswith(".capture.json"))


def _fresh(model):
    """A new compiled wrapper of `model`: what a new process would make."""
    return ember.compile(model)


def test_same_structure_loads_and_matches(graph_dir):
    ember.manual_seed(1)
    m = Block()
    x = ember.randn(3, 12, requires_grad=True)
    first = _fresh(m)(x)
    assert len(_entries(graph_dir)) == 1
    before = tracer.stats["traces"]
    loaded = disk_cache.stats["loaded"]
    again = _fresh(m)(x)
    assert tracer.stats["traces"] == before and disk_cache.stats["loaded"] == loaded + 1
    np.testing.assert_allclose(again.detach().numpy(), first.detach().numpy(), rtol=1e-6)
    again.sum().backward()
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    w, b = torch.tensor(m.lin.weight.detach().numpy()), torch.tensor(m.lin.bias.detach().numpy())
    ref = (torch.nn.functional.silu(xt @ w.T + b) * 0.5).sum(-1)
    ref.sum().backward()
    np.testing.assert_allclose(again.detach().numpy(), ref.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_key_covers_shapes_requires_grad_and_code(graph_dir):
    m = Block()
    _fresh(m)(ember.randn(3, 12))
    _fresh(m)(ember.randn(4, 12))                       # another shape
    _fresh(m)(ember.randn(3, 12, requires_grad=True))   # another requires_grad
    m.eval()
    _fresh(m)(ember.randn(3, 12))                       # another training flag

    class Other(Block):
        def forward(self, x):
            return (F.gelu(self.lin(x)) * self.scale).sum(-1)
    _fresh(Other())(ember.randn(3, 12))                 # other code, same structure
    assert len(_entries(graph_dir)) == 5


def _corrupt_and_reload(graph_dir, caplog, damage):
    m = Block()
    x = ember.randn(2, 12)
    want = _fresh(m)(x)
    entry, = _entries(graph_dir)
    damage(entry)
    before, rebuilt = tracer.stats["traces"], disk_cache.stats["rebuilt"]
    with caplog.at_level(logging.WARNING, logger="ember.compiler"):
        got = _fresh(m)(x)
    lines = [r for r in caplog.records if "corrupt or stale" in r.getMessage()]
    assert len(lines) == 1
    assert disk_cache.stats["rebuilt"] == rebuilt + 1
    assert tracer.stats["traces"] == before + 1         # compiled again
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    # and the rebuilt entry loads cleanly
    caplog.clear()
    before = tracer.stats["traces"]
    np.testing.assert_allclose(_fresh(m)(x).detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert tracer.stats["traces"] == before
    assert not [r for r in caplog.records if "corrupt" in r.getMessage()]


def test_truncated_entry_is_rebuilt(graph_dir, caplog):
    _corrupt_and_reload(graph_dir, caplog,
                        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]))


def test_flipped_byte_is_rebuilt(graph_dir, caplog):
    def flip(p):
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0x01
        p.write_bytes(bytes(data))
    _corrupt_and_reload(graph_dir, caplog, flip)


def test_stale_format_is_rebuilt(graph_dir, caplog):
    import hashlib

    def stale(p):
        head, text = p.read_bytes().split(b"\n", 1)
        body = json.loads(text)
        body["format"] = disk_cache.FORMAT - 1
        text = json.dumps(body).encode()
        p.write_bytes(hashlib.sha256(text).hexdigest().encode() + b"\n" + text)
    _corrupt_and_reload(graph_dir, caplog, stale)


def test_stale_parameter_name_is_rebuilt(graph_dir, caplog):
    import hashlib

    def rename(p):
        head, text = p.read_bytes().split(b"\n", 1)
        text = text.replace(b'"lin.weight"', b'"lin.gone"')
        p.write_bytes(hashlib.sha256(text).hexdigest().encode() + b"\n" + text)
    _corrupt_and_reload(graph_dir, caplog, rename)


def test_graph_breaks_and_closures_are_not_stored_but_run(graph_dir):
    w = ember.randn(6)

    def closure(x):
        return (x * w).relu()

    def breaks(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1
    x = ember.randn(6)
    np.testing.assert_allclose(ember.compile(closure)(x).numpy(), (x * w).relu().numpy())
    np.testing.assert_allclose(ember.compile(breaks)(x).numpy(), breaks(x).numpy())
    assert _entries(graph_dir) == []


def test_plain_function_is_stored_and_loaded(graph_dir):
    def f(x, y):
        return F.layer_norm(F.gelu(x * y + 1.0), (8,))
    x, y = ember.randn(4, 8), ember.randn(8)
    want = ember.compile(f)(x, y)
    before = tracer.stats["traces"]
    got = ember.compile(f)(x, y)
    assert tracer.stats["traces"] == before
    ref = torch.nn.functional.layer_norm(torch.nn.functional.gelu(
        torch.tensor(x.numpy()) * torch.tensor(y.numpy()) + 1.0), (8,))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


def test_off_switch(graph_dir, monkeypatch):
    monkeypatch.setattr(config, "graph_cache", False)
    ember.compile(lambda x: x.exp() + 1)(ember.randn(5))
    assert _entries(graph_dir) == []


def test_size_change_after_a_warm_start_unifies_as_when_cold(graph_dir):
    def f(x):
        return (x * 2).relu().sum(1) + x.mean()
    sizes = (3, 5, 7, 2)
    cold = ember.compile(f)
    for n in sizes:
        cold(ember.randn(n, 4))
    warm = ember.compile(f)
    before = disk_cache.stats["loaded"]
    for n in sizes:
        x = ember.randn(n, 4)
        np.testing.assert_allclose(warm(x).numpy(), f(x).numpy(), rtol=1e-5, atol=1e-6)
    assert disk_cache.stats["loaded"] == before + 1
    assert len(warm.recompiles) == len(cold.recompiles) == 1
    assert [v.dynamic for v in warm.variants] == [v.dynamic for v in cold.variants]


def test_key_covers_a_module_attribute_function(graph_dir):
    class Act(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(x) * 2
    x = ember.randn(8)
    np.testing.assert_allclose(ember.compile(Act(F.relu))(x).numpy(), (F.relu(x) * 2).numpy())
    got = ember.compile(Act(F.silu))(x)                 # same class, another function
    np.testing.assert_allclose(got.numpy(), (F.silu(x) * 2).numpy(), rtol=1e-6)
    assert len(_entries(graph_dir)) == 2


class _Setting:
    """A plain record captured by a closure (as a config object or a test sample is)."""

    def __init__(self, offset):
        self.offset = offset


class _Opaque:
    """An object with no fields the key can describe."""
    __slots__ = ("offset",)

    def __init__(self, offset):
        self.offset = offset


def _closure(setting):
    def f(x):
        return x.diagonal(setting.offset) * 2.0
    return f


def test_closure_objects_are_keyed_by_their_fields_never_by_type_alone(graph_dir):
    # two closures of the same code over objects of one class: a key made of the type alone
    # gave the second the first one's graph (a silently wrong diagonal)
    x = ember.randn(3, 4)
    for offset in (0, 1, -1):
        got = ember.compile(_closure(_Setting(offset)))(x)
        np.testing.assert_array_equal(got.numpy(), (x.diagonal(offset) * 2.0).numpy())
    before = tracer.stats["traces"]
    ember.compile(_closure(_Setting(1)))(x)        # same fields: loaded, not traced
    assert tracer.stats["traces"] == before
    for offset in (0, 1):                           # no describable fields: never stored
        got = ember.compile(_closure(_Opaque(offset)))(x)
        np.testing.assert_array_equal(got.numpy(), (x.diagonal(offset) * 2.0).numpy())
