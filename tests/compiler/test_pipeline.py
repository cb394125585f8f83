"""The compiler as one named pipeline (ember/compiler/pipeline.py): the stage list and its
order, compilation running exactly that list (and replays never), Program.verify() catching
a malformed program with a message naming the stage and the node, stages that do not apply
saying why, EMBER_LOGS=stages naming every stage in order for a compiled training step and an
inference function, and compiled results equal to eager ones.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import config, pipeline
from ember.compiler.api import CompiledFunction
from ember.compiler.graph import Node
from ember.compiler.program import ProgramError

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")
NAMES = ["capture", "backward_capture", "unify", "guards", "partition", "passes", "fusion",
         "codegen", "build", "buffer_plan", "autotune", "replay"]


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))


def _data():
    rng = np.random.default_rng(3)
    return (ember.tensor(rng.standard_normal((5, 6)).astype(np.float32)),
            ember.tensor(rng.standard_normal((5, 3)).astype(np.float32)))


def _inference(x):
    return (x * 2 + 1).relu().sum(-1)


def test_stage_names_and_order():
    assert [name for name, _ in pipeline.STAGES] == NAMES
    for name, fn in pipeline.STAGES:
        assert callable(fn) and fn.__doc__, name


def test_compiling_runs_the_stage_list_and_replaying_does_not(monkeypatch):
    ran = []

    def recorded(name, fn):
        def stage(p):
            ran.append(name)
            return fn(p)
        return stage
    monkeypatch.setattr(pipeline, "STAGES", [(n, recorded(n, f)) for n, f in pipeline.STAGES])
    model = _mlp()
    x, y = _data()
    step = ember.compile(lambda x, y: F.mse_loss(model(x), y), backend=BACKEND)
    step(x, y).backward()
    assert ran == NAMES
    ran.clear()
    step(x, y).backward()                # a replay: the guards, then the variant's run
    assert ran == []


def _program(fn, *args, backend="numpy"):
    cf = CompiledFunction(fn, backend=backend)
    return pipeline.compile_program(cf, args, {})


def test_verify_accepts_every_stage_of_a_training_step():
    model = _mlp()
    x, y = _data()
    p = _program(lambda x, y: F.mse_loss(model(x), y), x, y)
    assert [name for name, _ in p.done] == NAMES and p.verify()
    assert set(p.graphs) == {"forward", "backward"} and p.skipped == {
        "fusion": "numpy backend", "build": "numpy backend", "buffer_plan": "numpy backend",
        "autotune": "mode is not max-autotune"}


def test_verify_names_a_node_reading_an_undefined_value():
    p = _program(_inference, ember.randn(4, 3))
    g = p.graphs["graph"]
    node = next(n for n in g.nodes if n.kind == "call" and n.opname.endswith("add"))
    ghost = Node("call", "ghost")
    node.args = (ghost,) + tuple(node.args[1:])
    with pytest.raises(ProgramError, match=r"after stage 'replay': graph graph: node 'add' "
                                           r"reads 'ghost', which is not a node of the graph"):
        p.verify()


def test_verify_names_a_node_used_before_it_is_defined():
    p = _program(_inference, ember.randn(4, 3))
    g = p.graphs["graph"]
    calls = [n for n in g.nodes if n.kind == "call"]
    g.nodes.remove(calls[0])
    g.nodes.insert(g.nodes.index(calls[1]) + 1, calls[0])     # now after its reader
    with pytest.raises(ProgramError, match=f"node '{calls[1].name}' reads "
                                           f"'{calls[0].name}', which is defined after it"):
        p.verify()


def test_verify_runs_between_stages_and_names_a_missing_product(monkeypatch):
    monkeypatch.setattr(config, "verify_stages", True)
    broken = [(n, (lambda p: "did nothing") if n == "partition" else f)
              for n, f in pipeline.STAGES]
    cf = CompiledFunction(_inference, backend="numpy")
    with pytest.raises(ProgramError, match="after stage 'partition': stage 'partition' did "
                                           "not produce graphs"):
        pipeline.compile_program(cf, (ember.randn(4, 3),), {}, stages=broken)
    assert not ember.autograd.grad_mode.state.modes      # the tracer was left


def test_stages_that_do_not_apply_say_why():
    with ember.no_grad():
        p = _program(_inference, ember.randn(4, 3))
    assert p.skipped["backward_capture"] == "grad mode is off"
    summary = dict(p.done)
    assert summary["fusion"] == "skipped: numpy backend"
    assert summary["partition"] == "one graph (no backward to split off)"

    def breaks(x):
        return x * float(x.sum())       # reads a value: a graph break
    p = _program(breaks, ember.randn(3))
    # split into segments (segments.py), compiled outside the stages below
    assert p.variant.root is not None and not p.variant.eager and p.breaks
    assert all(p.skipped.get(n) == "graph break" for n in
               ("backward_capture", "unify", "partition", "passes", "fusion", "codegen",
                "build", "buffer_plan"))
    assert "guards" not in p.skipped       # a split variant is guarded too


def test_compiled_training_step_and_inference_equal_eager():
    model = _mlp()
    x, y = _data()
    step = ember.compile(lambda x, y: F.mse_loss(model(x), y), backend=BACKEND)
    for _ in range(2):                                   # a compile, then a replay
        model.zero_grad()
        loss = step(x, y)
        loss.backward()
        got = [loss.detach().numpy().copy()] + [p.grad.numpy().copy()
                                               for p in model.parameters()]
        model.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        want = [loss.detach().numpy()] + [p.grad.numpy() for p in model.parameters()]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    f = ember.compile(_inference, backend=BACKEND)
    for shape in ((4, 3), (4, 3), (7, 3)):
        t = ember.randn(*shape)
        np.testing.assert_allclose(f(t).numpy(), _inference(t).numpy(), rtol=1e-6)


SCRIPT = """
import numpy as np
import ember, ember.nn as nn, ember.nn.functional as F
ember.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))
x, y = ember.randn(5, 6), ember.randn(5, 3)
def train_step(x, y):
    return F.mse_loss(model(x), y)
loss = ember.compile(train_step, backend="c")(x, y)
loss.backward()
got = [p.grad.numpy().copy() for p in model.parameters()]
model.zero_grad()
F.mse_loss(model(x), y).backward()
assert all(np.allclose(a, p.grad.numpy(), rtol=1e-5, atol=1e-6)
           for a, p in zip(got, model.parameters()))
def infer(x):
    return (x * 2 + 1).relu().sum(-1)
t = ember.randn(4, 3)
assert np.allclose(ember.compile(infer, backend="numpy")(t).numpy(), infer(t).numpy())
print("ok")
"""


def test_ember_logs_stages_names_every_stage_in_order(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, EMBER_LOGS="stages", EMBER_CACHE_DIR=str(tmp_path / "cache"),
               EMBER_MIN_KERNEL_ELEMENTS="0", EMBER_GRAPH_CACHE="0")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    for fn in ("train_step", "infer"):
        lines = [ln for ln in r.stderr.splitlines() if f"] {fn}: stage " in ln]
        named = [ln.split(f"{fn}: stage ")[1].split(":")[0] for ln in lines]
        assert named == [f"{i + 1}/{len(NAMES)} {n}" for i, n in enumerate(NAMES)], r.stderr
    err = r.stderr
    # the graphs are printed as Python after capture and passes
    assert "def forward(x, y" in err and "def backward(" in err and "def graph(x)" in err
    # training on the C backend: kernels named, then built (a fresh cache: compiled)
    assert f"train_step: stage 7/{len(NAMES)} fusion: forward: " in err and "kernel_0: " in err
    assert "miss, compiled" in err
    assert f"train_step: stage 2/{len(NAMES)} backward_capture: " in err and \
        f"infer: stage 2/{len(NAMES)} backward_capture: skipped: no output requires grad" in err
    assert f"infer: stage 7/{len(NAMES)} fusion: skipped: numpy backend" in err
