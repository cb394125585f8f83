"""Optimizers vs torch.optim: same initial parameters and the same gradient at every step
(random gradients copied into both), parameters and state compared after each step;
state_dict round trips (ember -> ember and torch -> ember); argument errors."""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 4), (5,), ()]

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3, betas=(0.5, 0.9))),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True, betas=(0.7, 0.9))),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4, weight_decay=0.1, maximize=True)),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)]


def to_ember(x):
    """Recursively converts torch tensors (in a state_dict) to ember tensors."""
    if isinstance(x, torch.Tensor):
        return ember.tensor(x.detach().numpy().copy())
    if isinstance(x, dict):
        return {k: to_ember(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_ember(v) for v in x)
    return x


def make_params(rng, dtype=np.float32, shapes=SHAPES):
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    ep = [ember.nn.Parameter(ember.tensor(a)) for a in arrays]
    return tp, ep


def set_grads(rng, tp, ep, skip=()):
    for i, (t, e) in enumerate(zip(tp, ep)):
        if i in skip:
            t.grad, e.grad = None, None
            continue
        g = rng.standard_normal(t.shape).astype(t.detach().numpy().dtype)
        t.grad = torch.tensor(g)
        e.grad = ember.tensor(g)


def tol(dtype):
    return dict(rtol=2e-6, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)


def assert_params(tp, ep, dtype=np.float32):
    for t, e in zip(tp, ep):
        assert e.shape == tuple(t.shape) and e.dtype.np == t.detach().numpy().dtype
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **tol(dtype))


def assert_state(tsd, esd, dtype=np.float32):
    """Ember's state_dict has torch's layout: same state keys/values, same group entries."""
    assert set(tsd["state"]) == set(esd["state"])
    for k, ts in tsd["state"].items():
        es = esd["state"][k]
        assert set(ts) == set(es), (ts.keys(), es.keys())
        for name, tv in ts.items():
            ev = es[name]
            if isinstance(tv, torch.Tensor):
                assert isinstance(ev, ember.Tensor)
                assert ev.dtype.np == tv.numpy().dtype and ev.shape == tuple(tv.shape)
                np.testing.assert_allclose(ev.numpy(), tv.numpy(), **tol(dtype))
            else:
                assert ev == tv
    assert len(tsd["param_groups"]) == len(esd["param_groups"])
    for tg, eg in zip(tsd["param_groups"], esd["param_groups"]):
        assert set(tg) == set(eg)
        for key in tg:
            assert tg[key] == eg[key], key


def run(name, kw, tp, ep, rng, steps, skip=()):
    topt = getattr(torch.optim, name)(tp, **kw)
    eopt = getattr(ember.optim, name)(ep, **kw)
    for _ in range(steps):
        set_grads(rng, tp, ep, skip)
        topt.step()
        eopt.step()
        assert_params(tp, ep, tp[0].detach().numpy().dtype)
    return topt, eopt


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_matches_torch(name, kw):
    rng = np.random.default_rng(0)
    tp, ep = make_params(rng)
    # the middle parameter gets no gradient: it is skipped and keeps no state (as torch)
    topt, eopt = run(name, kw, tp, ep, rng, 10, skip=(1,))
    assert_state(topt.state_dict(), eopt.state_dict())


@pytest.mark.parametrize("name,kw", CONFIGS[::3], ids=IDS[::3])
def test_matches_torch_float64(name, kw):
    rng = np.random.default_rng(1)
    tp, ep = make_params(rng, np.float64, [(4, 2), (3,)])
    topt, eopt = run(name, kw, tp, ep, rng, 6)
    assert_state(topt.state_dict(), eopt.state_dict(), np.float64)


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_state_dict_resume(name, kw):
    rng = np.random.default_rng(2)
    tp, ep = make_params(rng)
    topt, eopt = run(name, kw, tp, ep, rng, 5)
    saved = copy.deepcopy(eopt.state_dict())
    # a fresh optimizer over copies of the parameters, loaded from the checkpoint
    ep2 = [ember.nn.Parameter(p.detach().clone()) for p in ep]
    eopt2 = getattr(ember.optim, name)(ep2, **kw)
    eopt2.load_state_dict(saved)
    # and one loaded from torch's checkpoint, converted to ember tensors
    ep3 = [ember.nn.Parameter(p.detach().clone()) for p in ep]
    eopt3 = getattr(ember.optim, name)(ep3, **kw)
    eopt3.load_state_dict(to_ember(copy.deepcopy(topt.state_dict())))
    for _ in range(5):
        set_grads(rng, tp, ep)
        for a, b, c in zip(ep, ep2, ep3):
            b.grad = a.grad.clone()
            c.grad = a.grad.clone()
        topt.step()
        eopt.step()
        eopt2.step()
        eopt3.step()
        for a, b, c in zip(ep, ep2, ep3):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
            # torch's state may differ from ember's in the last bit: compare with tolerance
            np.testing.assert_allclose(c.detach().numpy(), a.detach().numpy(), **tol(np.float32))
        assert_params(tp, ep)


def test_param_groups_and_lr_change():
    rng = np.random.default_rng(3)
    tp, ep = make_params(rng)
    topt = torch.optim.SGD([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.5, "momentum": 0.9}],
                           lr=0.1)
    eopt = ember.optim.SGD([{"params": ep[:2]}, {"params": ep[2:], "lr": 0.5, "momentum": 0.9}],
                           lr=0.1)
    for i in range(4):
        set_grads(rng, tp, ep)
        if i == 2:
            for g in (topt.param_groups[0], eopt.param_groups[0]):
                g["lr"] = 0.01
        topt.step()
        eopt.step()
        assert_params(tp, ep)
    assert_state(topt.state_dict(), eopt.state_dict())
    assert repr(eopt) == repr(topt)
    # add_param_group fills in the defaults
    tn, en = make_params(rng, shapes=[(2,)])
    topt.add_param_group({"params": tn, "momentum": 0.5})
    eopt.add_param_group({"params": en, "momentum": 0.5})
    assert_state(topt.state_dict(), eopt.state_dict())


def test_named_params():
    rng = np.random.default_rng(4)
    tp, ep = make_params(rng)
    topt = torch.optim.Adam([(f"w{i}", p) for i, p in enumerate(tp)])
    eopt = ember.optim.Adam([(f"w{i}", p) for i, p in enumerate(ep)])
    set_grads(rng, tp, ep)
    topt.step()
    eopt.step()
    assert_state(topt.state_dict(), eopt.state_dict())


def test_real_model_training():
    """A small MLP trained in both libraries from the same weights with real backward."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    enet = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 1))
    with ember.no_grad():
        for tp_, ep_ in zip(tnet.parameters(), enet.parameters()):
            ep_.copy_(ember.tensor(tp_.detach().numpy().copy()))
    topt = torch.optim.AdamW(tnet.parameters(), lr=0.01)
    eopt = ember.optim.AdamW(enet.parameters(), lr=0.01)
    tx, ty, ex, ey = torch.tensor(x), torch.tensor(y), ember.tensor(x), ember.tensor(y)
    for _ in range(10):
        topt.zero_grad()
        eopt.zero_grad()
        tl = ((tnet(tx) - ty) ** 2).mean()
        el = ((enet(ex) - ey) ** 2).mean()
        tl.backward()
        el.backward()
        topt.step()
        eopt.step()
    for tp_, ep_ in zip(tnet.parameters(), enet.parameters()):
        np.testing.assert_allclose(ep_.detach().numpy(), tp_.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_closure_and_zero_grad():
    rng = np.random.default_rng(6)
    tp, ep = make_params(rng, shapes=[(3,)])
    topt, eopt = torch.optim.SGD(tp, lr=0.1), ember.optim.SGD(ep, lr=0.1)

    def tclos():
        topt.zero_grad()
        loss = (tp[0] ** 2).sum()
        loss.backward()
        return loss

    def eclos():
        eopt.zero_grad()
        loss = (ep[0] ** 2).sum()
        loss.backward()
        return loss

    with torch.no_grad(), ember.no_grad():  # the closure runs with grad enabled anyway
        tl, el = topt.step(tclos), eopt.step(eclos)
    np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-6)
    assert_params(tp, ep)
    topt.zero_grad(set_to_none=False)
    eopt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(ep[0].grad.numpy(), tp[0].grad.numpy())
    topt.zero_grad()
    eopt.zero_grad()
    assert tp[0].grad is None and ep[0].grad is None


def test_step_bumps_version():
    p = ember.nn.Parameter(ember.ones(3))
    p.grad = ember.ones(3)
    opt = ember.optim.Adam([p])
    v = p._version
    opt.step()
    assert p._version > v


def test_hooks():
    rng = np.random.default_rng(7)
    tp, ep = make_params(rng, shapes=[(2,)])
    calls = {"torch": [], "ember": []}
    for lib, params, key in ((torch, tp, "torch"), (ember, ep, "ember")):
        opt = lib.optim.SGD(params, lr=0.1)
        h1 = opt.register_step_pre_hook(lambda o, a, k, key=key: calls[key].append("pre"))
        opt.register_step_post_hook(lambda o, a, k, key=key: calls[key].append("post"))
        params[0].grad = lib.ones(2)
        opt.step()
        h1.remove()
        opt.step()
    assert calls["torch"] == calls["ember"] == ["pre", "post", "post"]


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("case", [
    lambda lib: lib.optim.SGD([], lr=0.1),
    lambda lib: lib.optim.SGD(lib.ones(2, requires_grad=True), lr=0.1),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True) * 2], lr=0.1),
    lambda lib: lib.optim.SGD([1.0], lr=0.1),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1).add_param_group(
        {"params": {lib.ones(2, requires_grad=True)}}),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1).add_param_group(
        [lib.ones(2, requires_grad=True)]),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1, nesterov=True),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1, momentum=0.9,
                              dampening=0.1, nesterov=True),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=-1),
    lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True)], momentum=-1),
    lambda lib: lib.optim.Adam([lib.ones(2, requires_grad=True)], betas=(1.0, 0.9)),
    lambda lib: lib.optim.Adam([lib.ones(2, requires_grad=True)], eps=-1),
    lambda lib: lib.optim.Adam([lib.ones(2, requires_grad=True)], weight_decay=-1),
    lambda lib: lib.optim.Adadelta([lib.ones(2, requires_grad=True)], rho=1.5),
    lambda lib: lib.optim.Adagrad([lib.ones(2, requires_grad=True)], lr_decay=-1),
    lambda lib: lib.optim.RMSprop([lib.ones(2, requires_grad=True)], alpha=-1),
    lambda lib: lib.optim.NAdam([lib.ones(2, requires_grad=True)], momentum_decay=-1),
    lambda lib: lib.optim.LBFGS([{"params": [lib.ones(2, requires_grad=True)]},
                                 {"params": [lib.ones(2, requires_grad=True)]}]),
])
def test_errors_match(case):
    t_type, t_msg = _err(lambda: case(torch))
    e_type, e_msg = _err(lambda: case(ember))
    assert t_type is not None and e_type is t_type
    assert e_msg.split(",")[0].replace("ember.", "torch.") == t_msg.split(",")[0]


def test_duplicate_and_overlapping_params():
    for lib in (torch, ember):
        p = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.optim.SGD([p, p], lr=0.1)
        assert any("duplicate parameters" in str(x.message) for x in w)
        opt = lib.optim.SGD([p], lr=0.1)
        with pytest.raises(ValueError, match="more than one parameter group"):
            opt.add_param_group({"params": [p]})


def test_load_state_dict_mismatch():
    for lib in (torch, ember):
        a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        sd = lib.optim.SGD([a, b], lr=0.1).state_dict()
        with pytest.raises(ValueError, match="doesn't match the size"):
            lib.optim.SGD([a], lr=0.1).load_state_dict(sd)
        with pytest.raises(ValueError, match="different number of parameter groups"):
            lib.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)


from hypothesis import given, settings, strategies as st  # noqa: E402

shape_st = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(shape_st, min_size=1, max_size=3),
       cfg=st.sampled_from(range(len(CONFIGS))), transpose=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_shapes_and_strided_grads(shapes, cfg, transpose, seed):
    """Any shapes (0-size and 0-dim included); gradients may be non-contiguous views."""
    name, kw = CONFIGS[cfg]
    rng = np.random.default_rng(seed)
    tp, ep = make_params(rng, shapes=shapes)
    topt = getattr(torch.optim, name)(tp, **kw)
    eopt = getattr(ember.optim, name)(ep, **kw)
    for _ in range(4):
        for t, e in zip(tp, ep):
            if transpose and t.dim() >= 2:
                g = rng.standard_normal(tuple(reversed(t.shape))).astype(np.float32)
                t.grad = torch.tensor(g).transpose(0, -1)
                e.grad = ember.tensor(g).transpose(0, -1)
            else:
                g = rng.standard_normal(t.shape).astype(np.float32)
                t.grad, e.grad = torch.tensor(g), ember.tensor(g)
        topt.step()
        eopt.step()
        assert_params(tp, ep)
    assert_state(topt.state_dict(), eopt.state_dict())


def test_lr_as_tensor_and_repr_and_pickle():
    import pickle
    rng = np.random.default_rng(8)
    tp, ep = make_params(rng, shapes=[(3,)])
    topt = torch.optim.Adam(tp, lr=torch.tensor(0.01))
    eopt = ember.optim.Adam(ep, lr=ember.tensor(0.01))
    set_grads(rng, tp, ep)
    topt.step()
    eopt.step()
    assert_params(tp, ep)
    eopt2 = pickle.loads(pickle.dumps(eopt))
    assert eopt2.param_groups[0]["betas"] == eopt.param_groups[0]["betas"]
    assert set(eopt2.state_dict()["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}


def test_subclass_step_hooks_run_once():
    calls = {"torch": 0, "ember": 0}
    for lib, key in ((torch, "torch"), (ember, "ember")):
        class MySGD(lib.optim.SGD):
            def step(self, closure=None):
                return super().step(closure)
        p = lib.ones(2, requires_grad=True)
        p.grad = lib.ones(2)
        opt = MySGD([p], lr=0.5)

        def hook(o, a, k, key=key):
            calls[key] += 1
        opt.register_step_pre_hook(hook)
        opt.step()
        np.testing.assert_array_equal(p.detach().numpy(), [0.5, 0.5])
    # torch runs the hook once or twice depending on whether a plain SGD was built before
    # (it patches each class's step on first construction); ember runs it once.
    assert calls["ember"] == 1 and calls["torch"] in (1, 2)
