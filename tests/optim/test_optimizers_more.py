"""ASGD, Rprop and Adafactor vs torch.optim: same start and gradients, parameters and state
(state_dict) after every step, resume from a state_dict (ember's and torch's), and the
constructors' errors."""
import copy

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 4), (5,), (2, 3, 2), ()]
CONFIGS = [
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5,
                       weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, maximize=True)),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)]
TOL = dict(rtol=2e-5, atol=2e-6)


def to_ember(x):
    if isinstance(x, torch.Tensor):
        return ember.tensor(x.detach().numpy().copy())
    if isinstance(x, dict):
        return {k: to_ember(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_ember(v) for v in x)
    return x


def make(rng, dtype=np.float32):
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    return ([torch.nn.Parameter(torch.tensor(a)) for a in arrays],
            [ember.nn.Parameter(ember.tensor(a)) for a in arrays])


def grads(rng, tp, ep, skip=()):
    for i, (t, e) in enumerate(zip(tp, ep)):
        if i in skip:
            t.grad = e.grad = None
            continue
        g = rng.standard_normal(t.shape).astype(t.detach().numpy().dtype)
        t.grad, e.grad = torch.tensor(g), ember.tensor(g)


def same_params(tp, ep):
    for t, e in zip(tp, ep):
        assert e.dtype.np == t.detach().numpy().dtype
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL)


def same_state(tsd, esd):
    assert set(tsd["state"]) == set(esd["state"])
    for k, ts in tsd["state"].items():
        es = esd["state"][k]
        assert set(ts) == set(es)
        for name, tv in ts.items():
            ev = es[name]
            assert isinstance(ev, ember.Tensor)
            assert ev.dtype.np == tv.numpy().dtype and tuple(ev.shape) == tuple(tv.shape), name
            np.testing.assert_allclose(ev.numpy(), tv.numpy(), **TOL)
    for tg, eg in zip(tsd["param_groups"], esd["param_groups"]):
        assert tg == eg


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_matches_torch(name, kw):
    rng = np.random.default_rng(0)
    tp, ep = make(rng)
    topt = getattr(torch.optim, name)(tp, **kw)
    eopt = getattr(ember.optim, name)(ep, **kw)
    for _ in range(8):
        grads(rng, tp, ep, skip=(1,))
        topt.step()
        eopt.step()
        same_params(tp, ep)
    same_state(topt.state_dict(), eopt.state_dict())


@pytest.mark.parametrize("name,kw", CONFIGS[::2], ids=IDS[::2])
def test_float64_and_resume(name, kw):
    rng = np.random.default_rng(1)
    tp, ep = make(rng, np.float64)
    topt = getattr(torch.optim, name)(tp, **kw)
    eopt = getattr(ember.optim, name)(ep, **kw)
    for _ in range(3):
        grads(rng, tp, ep)
        topt.step()
        eopt.step()
    # both libraries load torch's checkpoint (casting float state to the parameters' dtype)
    ep2 = [ember.nn.Parameter(p.detach().clone()) for p in ep]
    eopt2 = getattr(ember.optim, name)(ep2, **kw)
    eopt2.load_state_dict(to_ember(copy.deepcopy(topt.state_dict())))
    tp2 = [torch.nn.Parameter(p.detach().clone()) for p in tp]
    topt2 = getattr(torch.optim, name)(tp2, **kw)
    topt2.load_state_dict(copy.deepcopy(topt.state_dict()))
    for _ in range(3):
        grads(rng, tp, ep)
        for a, b, c, d in zip(ep, ep2, tp, tp2):
            b.grad = a.grad.clone()
            d.grad = c.grad.clone()
        topt.step()
        eopt.step()
        eopt2.step()
        topt2.step()
        same_params(tp, ep)
        same_params(tp2, ep2)
    same_state(topt.state_dict(), eopt.state_dict())
    same_state(topt2.state_dict(), eopt2.state_dict())


@pytest.mark.parametrize("name,kw", [
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-0.1)),
    ("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.5, 2.0))), ("Rprop", dict(etas=(0.5, 0.9))),
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(eps=(None, -1.0))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1.0))])
def test_bad_arguments_like_torch(name, kw):
    with pytest.raises(ValueError) as te:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(ValueError) as ee:
        getattr(ember.optim, name)([ember.nn.Parameter(ember.ones(2))], **kw)
    assert str(ee.value) == str(te.value)


def test_real_training_step_with_closure():
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    em = ember.nn.Linear(3, 2)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    for name in ("ASGD", "Rprop", "Adafactor"):
        topt = getattr(torch.optim, name)(tm.parameters(), lr=0.05)
        eopt = getattr(ember.optim, name)(em.parameters(), lr=0.05)
        for lib, m, opt in ((torch, tm, topt), (ember, em, eopt)):
            def closure():
                opt.zero_grad()
                loss = m(lib.tensor(x)).pow(2).mean()
                loss.backward()
                return loss
            for _ in range(3):
                opt.step(closure)
        same_params(list(tm.parameters()), list(em.parameters()))


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.02, nesterov=False, weight_decay=0.0),
                                dict(lr=0.02, adjust_lr_fn="match_rms_adamw", momentum=0.5)])
def test_muon(kw):
    """Muon's Newton-Schulz runs in bfloat16: ember's bf16 matmuls give torch's numbers."""
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (7, 3))]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    ep = [ember.nn.Parameter(ember.tensor(a)) for a in arrays]
    topt, eopt = torch.optim.Muon(tp, **kw), ember.optim.Muon(ep, **kw)
    for _ in range(4):
        grads(rng, tp, ep)
        topt.step()
        eopt.step()
        same_params(tp, ep)
    same_state(topt.state_dict(), eopt.state_dict())
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3))])
        with pytest.raises(ValueError, match="Adjust learning rate function x is not supported"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3, 3))], adjust_lr_fn="x")
