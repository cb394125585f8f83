"""ember.amp.GradScaler against torch.amp.GradScaler("cpu"): the scale trajectory with
injected inf/nan gradients, skipped steps, the per-optimizer stage errors, state_dict, the
disabled pass-through, a float16 autocast run whose gradients underflow without scaling, and
clipping after unscale_."""
import math

import numpy as np
import pytest
import torch

import ember


def _linear(mod, w, b):
    m = mod.nn.Linear(w.shape[1], w.shape[0])
    with mod.no_grad():
        m.weight.copy_(mod.tensor(w))
        m.bias.copy_(mod.tensor(b))
    return m


def _setup(seed=0, n_in=3, n_out=2):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_out, n_in)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    x = rng.standard_normal((4, n_in)).astype(np.float32)
    return w, b, x


BAD = {3: math.inf, 4: -math.inf, 9: math.nan, 10: math.inf}


def _trajectory(mod, growth_interval, steps=14):
    w, b, x = _setup()
    m = _linear(mod, w, b)
    opt = mod.optim.SGD(m.parameters(), lr=0.1)
    scaler = mod.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_factor=4.0,
                                backoff_factor=0.25, growth_interval=growth_interval)
    xs = mod.tensor(x)
    rows = []
    for k in range(steps):
        opt.zero_grad()
        loss = (m(xs) ** 2).mean()
        scaler.scale(loss).backward()
        if k in BAD:
            with mod.no_grad():
                m.weight.grad[0, 1] = BAD[k]
        before = [p.detach().clone() for p in m.parameters()]
        ret = scaler.step(opt)
        changed = any(not bool((p.detach() == q).all()) for p, q in zip(m.parameters(), before))
        scaler.update()
        rows.append((k, scaler.get_scale(), scaler._get_growth_tracker(), changed, ret,
                     [p.detach().numpy().copy() for p in m.parameters()]))
    return rows, scaler


@pytest.mark.parametrize("growth_interval", [1, 3])
def test_scale_trajectory_matches_torch(growth_interval):
    re, _ = _trajectory(ember, growth_interval)
    rt, _ = _trajectory(torch, growth_interval)
    for (k, se, ge, ce, rete, pe), (_, st, gt, ct, rett, pt) in zip(re, rt):
        assert (se, ge, ce, rete) == (st, gt, ct, rett), k
        assert ce == (k not in BAD)   # an inf/nan gradient skips the step: params unchanged
        for a, b in zip(pe, pt):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_and_keys():
    _, se = _trajectory(ember, 3, steps=6)
    _, st = _trajectory(torch, 3, steps=6)
    assert se.state_dict() == st.state_dict()
    fresh_e, fresh_t = ember.amp.GradScaler(), torch.amp.GradScaler("cpu")
    fresh_e.load_state_dict(se.state_dict())
    fresh_t.load_state_dict(st.state_dict())
    assert fresh_e.state_dict() == fresh_t.state_dict()
    assert fresh_e.get_scale() == fresh_t.get_scale()
    for mod in (ember, torch):
        with pytest.raises(RuntimeError, match="source state dict is empty"):
            mod.amp.GradScaler("cpu").load_state_dict({})


def test_accessors_and_setters():
    se, st = ember.amp.GradScaler(init_scale=8.0), torch.amp.GradScaler("cpu", init_scale=8.0)
    for s in (se, st):
        s.set_growth_factor(3.0)
        s.set_backoff_factor(0.125)
        s.set_growth_interval(7)
    for getter in ("get_scale", "get_growth_factor", "get_backoff_factor",
                   "get_growth_interval", "is_enabled", "_get_growth_tracker"):
        assert getattr(se, getter)() == getattr(st, getter)(), getter
    for mod in (ember, torch):
        with pytest.raises(AssertionError, match="growth factor"):
            mod.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="backoff factor"):
            mod.amp.GradScaler("cpu", backoff_factor=1.0)


def _one_backward(mod, scaler):
    w, b, x = _setup()
    m = _linear(mod, w, b)
    opt = mod.optim.SGD(m.parameters(), lr=0.1)
    scaler.scale(m(mod.tensor(x)).sum()).backward()
    return m, opt


@pytest.mark.parametrize("mod", [ember, torch], ids=["ember", "torch"])
def test_stage_errors(mod):
    scaler = mod.amp.GradScaler("cpu")
    m, opt = _one_backward(mod, scaler)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this "
                                           r"optimizer since the last update\(\)\."):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the "
                                           r"last update\(\)"):
        scaler.step(opt)
    scaler.update()
    scaler.unscale_(opt)    # a new iteration: allowed again
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    fresh = mod.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="_scale is None"):
        fresh.step(opt)
    with pytest.raises(AssertionError, match="_scale is None"):
        fresh.update()


def test_step_returns_the_optimizer_step_value():
    out = []
    for mod in (ember, torch):
        scaler = mod.amp.GradScaler("cpu")
        m, opt = _one_backward(mod, scaler)
        out.append(scaler.step(opt, lambda: 42.0))   # positional closure is forwarded
        scaler.update()
    assert out == [42.0, 42.0]


def test_update_with_new_scale():
    res = []
    for mod in (ember, torch):
        scaler = mod.amp.GradScaler("cpu")
        m, opt = _one_backward(mod, scaler)
        scaler.step(opt)
        scaler.update(new_scale=16.0)
        a = scaler.get_scale()
        scaler.update(new_scale=mod.tensor(4.0))
        res.append((a, scaler.get_scale()))
    assert res[0] == res[1] == (16.0, 4.0)


def test_scale_nested_outputs():
    se, st = ember.amp.GradScaler(init_scale=4.0), torch.amp.GradScaler("cpu", init_scale=4.0)
    vals = [np.float32([1.5, -2.0]), np.float32([3.0])]
    oe = se.scale([ember.tensor(vals[0]), (ember.tensor(vals[1]),)])
    ot = st.scale([torch.tensor(vals[0]), (torch.tensor(vals[1]),)])
    assert type(oe) is type(ot) is list and type(oe[1]) is type(ot[1]) is tuple
    np.testing.assert_array_equal(oe[0].numpy(), ot[0].numpy())
    np.testing.assert_array_equal(oe[1][0].numpy(), ot[1][0].numpy())
    assert oe[0].dtype == ember.float32
    for s in (se, st):
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable"):
            s.scale(3.0)


def test_disabled_is_pass_through():
    for mod in (ember, torch):
        scaler = mod.amp.GradScaler("cpu", enabled=False)
        x = mod.ones(2)
        assert scaler.scale(x) is x
        m, opt = _one_backward(mod, scaler)
        g = m.weight.grad.clone()
        before = m.weight.detach().clone()
        scaler.unscale_(opt)
        assert bool((m.weight.grad == g).all())
        assert scaler.step(opt) is None
        assert not bool((m.weight.detach() == before).all())   # the step ran
        scaler.update()
        assert (scaler.get_scale(), scaler.state_dict(), scaler.is_enabled(),
                scaler._get_growth_tracker()) == (1.0, {}, False, 0)
        scaler.load_state_dict({})   # no error when disabled


def _fp16_run(mod, use_scaler, steps=3):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((1, 4)).astype(np.float32)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    m = mod.nn.Linear(4, 1, bias=False)
    with mod.no_grad():
        m.weight.copy_(mod.tensor(w))
    opt = mod.optim.SGD(m.parameters(), lr=1e6)
    scaler = mod.amp.GradScaler("cpu", enabled=use_scaler)
    xs = mod.tensor(x)
    for _ in range(steps):
        opt.zero_grad()
        with mod.autocast("cpu", dtype=mod.float16):
            h = m(xs)                        # float16
            assert h.dtype == mod.float16
        # d loss / d h = 1e-8: below float16's smallest subnormal (6e-8), so the float16
        # gradient of h (and so of the weight) flushes to zero unless the loss is scaled
        loss = h.float().sum() * 1e-8
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return m.weight.detach().numpy() - w


def test_float16_training_progresses_only_with_scaler():
    de, dt = _fp16_run(ember, True), _fp16_run(torch, True)
    assert np.abs(dt).max() > 1e-3      # the oracle moved
    np.testing.assert_allclose(de, dt, rtol=2e-2, atol=1e-4)
    ne, nt = _fp16_run(ember, False), _fp16_run(torch, False)
    np.testing.assert_array_equal(ne, nt)
    assert np.abs(nt).max() == 0.0      # without the scaler the gradient underflowed


def test_clip_after_unscale_sees_true_norm():
    norms, grads = [], []
    for mod in (ember, torch):
        w, b, x = _setup(2, 5, 3)
        ref = _linear(mod, w, b)
        (ref(mod.tensor(x)) ** 2).sum().backward()       # float32 reference, no scaling
        ref_norm = float(mod.nn.utils.clip_grad_norm_(ref.parameters(), 1e9))
        m = _linear(mod, w, b)
        opt = mod.optim.SGD(m.parameters(), lr=0.1)
        scaler = mod.amp.GradScaler("cpu", init_scale=2.0 ** 12)
        scaler.scale((m(mod.tensor(x)) ** 2).sum()).backward()
        scaler.unscale_(opt)
        norm = float(mod.nn.utils.clip_grad_norm_(m.parameters(), 0.5))
        np.testing.assert_allclose(norm, ref_norm, rtol=1e-5)
        scaler.step(opt)     # does not unscale a second time
        scaler.update()
        norms.append(norm)
        grads.append([p.grad.numpy().copy() for p in m.parameters()])
    np.testing.assert_allclose(norms[0], norms[1], rtol=1e-5)
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert np.linalg.norm(a) <= 0.5 + 1e-5
