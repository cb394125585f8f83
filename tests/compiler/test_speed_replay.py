"""mode="reduce-overhead" (replay.py): the compiled graphs replay from one prebuilt plan over
static buffers. Checked: results and gradients equal eager's (and torch's) call after call on
both backends, for inference and training; outputs are fresh tensors that a later replay
does not overwrite; a rebound parameter rebuilds the plan; a graph that cannot be planned
(an in-place op) runs the ordinary way and says so once; the plan has no per-op dispatch
(its steps are counted).
"""
import logging

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.compiler import replay


def chain(lib, x, w):
    for _ in range(4):
        x = ((x @ w).tanh() * 0.5 + x).relu()
    return x.sum()


def _plans(cf):
    """The replay wrappers of cf's graphs (replay.wrap_run lists them on cf.replays)."""
    return list(getattr(cf, "replays", ()))


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_training_matches_eager_and_torch_call_after_call(backend):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3)]
    w0 = rng.standard_normal((8, 8)).astype(np.float32) * 0.5
    f = ember.compile(lambda x, w: chain(ember, x, w), backend=backend, mode="reduce-overhead")
    w = ember.tensor(w0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    for x in xs:                                   # trace, build the plan, replay
        w.grad, tw.grad = None, None
        out = f(ember.tensor(x), w)
        out.backward()
        tout = chain(torch, torch.tensor(x), tw)
        tout.backward()
        ew = ember.tensor(w0, requires_grad=True)
        eout = chain(ember, ember.tensor(x), ew)
        eout.backward()
        np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-5)
        np.testing.assert_allclose(out.item(), eout.item(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), ew.grad.numpy(), rtol=1e-5, atol=1e-6)
    plans = [replay.plan_of(r) for r in _plans(f)]
    assert len(plans) == 2 and all(p is not None for p in plans)   # forward and backward
    if backend == "c":
        fwd = plans[0]
        # no op runs through dispatch in the forward: 4 matmuls in place, 4 kernels + sum
        assert fwd.n_calls <= 1 and fwd.n_kernels >= 4, fwd.describe()


def test_outputs_are_fresh_and_not_overwritten():
    f = ember.compile(lambda x: (x * 2).exp() + 1, mode="reduce-overhead")
    a, b = ember.randn(64, 80), ember.randn(64, 80)
    with ember.no_grad():
        f(a)                          # the trace (computed eagerly)
        ra = f(a)                     # builds the plan
        kept = ra.numpy().copy()
        rb = f(b)                     # replays over the same static buffers
        ra2 = f(a)
    np.testing.assert_allclose(ra.numpy(), ((a * 2).exp() + 1).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(ra.numpy(), kept)       # not overwritten by the replays
    np.testing.assert_array_equal(ra2.numpy(), kept)
    np.testing.assert_allclose(rb.numpy(), ((b * 2).exp() + 1).numpy(), rtol=1e-6)
    assert not np.shares_memory(ra.numpy(), rb.numpy())


def test_module_training_with_optimizer_and_rebound_parameter():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                             torch.nn.Linear(16, 4))
    em = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    cm = ember.compile(em, mode="reduce-overhead")
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    eopt = ember.optim.SGD(em.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    for step in range(4):
        x = rng.standard_normal((32, 6)).astype(np.float32)
        y = rng.integers(0, 4, 32)
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        el = ember.nn.functional.cross_entropy(cm(ember.tensor(x)), ember.tensor(y))
        topt.zero_grad(), eopt.zero_grad()
        tl.backward(), el.backward()
        topt.step(), eopt.step()
        np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-5)
        if step == 1:     # a parameter's array replaced: the plan must not keep the old one
            with ember.no_grad():
                em[0].weight.data = em[0].weight.data.clone()
    for (k, tv), ev in zip(tm.state_dict().items(), em.state_dict().values()):
        np.testing.assert_allclose(ev.numpy(), tv.detach().numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=k)


def test_graph_that_cannot_be_planned_falls_back_with_one_log_line(caplog):
    def f(x, buf):
        buf.add_(1.0)                 # in place on an input: not a static plan
        return x * buf
    cf = ember.compile(f, mode="reduce-overhead")
    x, buf = ember.ones(4), ember.zeros(4)
    with caplog.at_level(logging.WARNING, logger="ember.compiler"), ember.no_grad():
        for _ in range(3):
            r = cf(x, buf)
    np.testing.assert_array_equal(buf.numpy(), np.full(4, 3.0, np.float32))
    np.testing.assert_array_equal(r.numpy(), np.full(4, 3.0, np.float32))
    lines = [r.getMessage() for r in caplog.records if "reduce-overhead" in r.getMessage()]
    assert len(lines) == 1 and "in-place" in lines[0], lines
    (wrapper,) = _plans(cf)
    assert replay.plan_of(wrapper) is None and "in-place" in wrapper.state["failed"]


def _eager_grad(x, w0):
    w = ember.tensor(w0, requires_grad=True)
    chain(ember, ember.tensor(x), w).backward()
    return w.grad.numpy()


def test_two_forwards_before_their_backwards_keep_their_saved_values():
    """The forward lends its saved values as static buffers; a second replay before the
    first backward must not change what the first backward reads."""
    rng = np.random.default_rng(2)
    x1, x2 = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    w0 = rng.standard_normal((8, 8)).astype(np.float32) * 0.5
    f = ember.compile(lambda x, w: chain(ember, x, w), mode="reduce-overhead")
    w = ember.tensor(w0, requires_grad=True)
    for _ in range(2):
        f(ember.tensor(x1), w).backward()      # trace, plan
    w.grad = None
    l1 = f(ember.tensor(x1), w)
    l2 = f(ember.tensor(x2), w)                # overwrites the static buffers
    l1.backward()
    g1 = w.grad.numpy().copy()
    w.grad = None
    l2.backward()
    np.testing.assert_allclose(g1, _eager_grad(x1, w0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), _eager_grad(x2, w0), rtol=1e-5, atol=1e-6)


def test_retain_graph_and_second_backward_error():
    f = ember.compile(lambda x, w: chain(ember, x, w), mode="reduce-overhead")
    x = ember.randn(8, 8)
    w = ember.randn(8, 8, requires_grad=True)
    for _ in range(3):
        w.grad = None
        loss = f(x, w)
        loss.backward(retain_graph=True)
        g = w.grad.numpy().copy()
        loss.backward()
        np.testing.assert_allclose(w.grad.numpy(), 2 * g, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
