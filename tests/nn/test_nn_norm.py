"""Normalisation layers and functions against PyTorch: outputs, input and parameter
gradients, running statistics, train/eval, float32/float64, gradcheck of the functionals."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.autograd import gradcheck

try:
    from ._nn_common import DTYPES, E, close, pair, run_both
except ImportError:
    from _nn_common import DTYPES, E, close, pair, run_both


def _x(shape, dtype, seed=0, rg=True):
    t = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5).to(dtype)
    return t.requires_grad_(rg)


def _randomize(tmod, seed=1):
    """Non-trivial affine parameters (the defaults are ones/zeros)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tmod.parameters():
            p.copy_(torch.rand(p.shape, generator=g, dtype=p.dtype) + 0.5)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("cls,shape,kw", [
    ("BatchNorm1d", (6, 3), {}),
    ("BatchNorm1d", (4, 3, 5), {"momentum": 0.3}),
    ("BatchNorm2d", (3, 4, 2, 3), {}),
    ("BatchNorm2d", (3, 4, 2, 3), {"momentum": None}),
    ("BatchNorm2d", (3, 4, 2, 3), {"affine": False}),
    ("BatchNorm2d", (3, 4, 2, 3), {"track_running_stats": False}),
    ("BatchNorm3d", (2, 2, 2, 3, 2), {"eps": 1e-3}),
])
def test_batchnorm_train_eval_running_stats(cls, shape, kw, tdt, edt):
    c = shape[1]
    tm = getattr(torch.nn, cls)(c, dtype=tdt, **kw)
    em = getattr(enn, cls)(c, dtype=edt, **kw)
    _randomize(tm)
    pair(tm, em)
    for step in range(3):                       # a few training steps update the stats
        tm.zero_grad(), em.zero_grad()
        run_both(tm, em, _x(shape, tdt, seed=step), grad_seed=step)
    for name, tb in tm.named_buffers():
        close(dict(em.named_buffers())[name], tb, what=name)
    tm.eval(), em.eval()
    tm.zero_grad(), em.zero_grad()
    run_both(tm, em, _x(shape, tdt, seed=9))


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="more than 1 value"):
        enn.BatchNorm1d(3)(ember.randn(1, 3))
    with pytest.raises(ValueError, match="expected 4D input"):
        enn.BatchNorm2d(3)(ember.randn(2, 3))
    with pytest.raises(ValueError):
        torch.nn.BatchNorm2d(3)(torch.randn(2, 3))
    # state_dict keys and buffer dtype match torch
    assert list(enn.BatchNorm2d(3).state_dict()) == list(torch.nn.BatchNorm2d(3).state_dict())
    assert enn.BatchNorm2d(3).num_batches_tracked.dtype == ember.int64


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("make,shape", [
    (lambda m, dt: m.LayerNorm(5, dtype=dt), (3, 5)),
    (lambda m, dt: m.LayerNorm((3, 4), eps=1e-3, dtype=dt), (2, 3, 4)),
    (lambda m, dt: m.LayerNorm(4, bias=False, dtype=dt), (2, 3, 4)),
    (lambda m, dt: m.LayerNorm(4, elementwise_affine=False, dtype=dt), (2, 4)),
    (lambda m, dt: m.GroupNorm(2, 6, dtype=dt), (3, 6, 4)),
    (lambda m, dt: m.GroupNorm(3, 3, affine=False, dtype=dt), (2, 3, 2, 2)),
    (lambda m, dt: m.RMSNorm(4, dtype=dt), (3, 4)),
    (lambda m, dt: m.RMSNorm((2, 4), eps=1e-4, dtype=dt), (3, 2, 4)),
    (lambda m, dt: m.InstanceNorm2d(3, dtype=dt), (2, 3, 3, 4)),
    (lambda m, dt: m.InstanceNorm1d(3, affine=True, dtype=dt), (2, 3, 5)),
    (lambda m, dt: m.InstanceNorm2d(3, dtype=dt), (3, 3, 4)),
    (lambda m, dt: m.LocalResponseNorm(3), (2, 5, 3)),
    (lambda m, dt: m.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0), (2, 4, 2, 2)),
])
def test_norm_layers(make, shape, tdt, edt):
    tm, em = make(torch.nn, tdt), make(enn, edt)
    _randomize(tm)
    pair(tm, em)
    run_both(tm, em, _x(shape, tdt))


@pytest.mark.parametrize("tdt,edt", DTYPES)
def test_instance_norm_running_stats(tdt, edt):
    tm = torch.nn.InstanceNorm2d(3, track_running_stats=True, affine=True, dtype=tdt)
    em = enn.InstanceNorm2d(3, track_running_stats=True, affine=True, dtype=edt)
    _randomize(tm)
    pair(tm, em)
    for s in range(2):
        run_both(tm, em, _x((2, 3, 3, 2), tdt, seed=s))
    for name, tb in tm.named_buffers():
        close(dict(em.named_buffers())[name], tb, what=name)
    tm.eval(), em.eval()
    run_both(tm, em, _x((2, 3, 3, 2), tdt, seed=5))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 4), rest=st.lists(st.integers(1, 3), max_size=2),
       eps=st.sampled_from([1e-5, 1e-2]), k=st.integers(1, 4))
def test_layer_norm_functional_hypothesis(n, c, rest, eps, k):
    shape = (n, c, *rest)
    t = _x(shape, torch.float64)
    k = min(k, len(shape))
    ns = shape[len(shape) - k:]
    w = _x(ns, torch.float64, 1)
    b = _x(ns, torch.float64, 2)
    tw = torch.nn.functional.layer_norm(t, ns, w, b, eps)
    ew = EF.layer_norm(E(t), ns, E(w), E(b), eps)
    close(ew, tw)
    tr = torch.nn.functional.rms_norm(t, ns, w, eps)
    close(EF.rms_norm(E(t), ns, E(w), eps), tr)


def test_norm_errors():
    with pytest.raises(RuntimeError):
        torch.nn.functional.layer_norm(torch.randn(2, 3), (4,))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        EF.layer_norm(ember.randn(2, 3), (4,))
    with pytest.raises(ValueError):
        torch.nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match="divisible"):
        enn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError):
        torch.nn.functional.group_norm(torch.randn(2, 6, 3), 4)
    with pytest.raises(RuntimeError, match="divisible"):
        EF.group_norm(ember.randn(2, 6, 3), 4)


def _gc(fn, *inputs):
    ins = [E(t, requires_grad=True) for t in inputs]
    assert gradcheck(fn, tuple(ins), eps=1e-6, atol=1e-5)


def test_gradcheck_norm_functionals():
    x4 = _x((2, 4, 2, 2), torch.float64)
    w, b = _x((4,), torch.float64, 1), _x((4,), torch.float64, 2)
    _gc(lambda x, w, b: EF.batch_norm(x, None, None, w, b, True), x4, w, b)
    _gc(lambda x, w, b: EF.group_norm(x, 2, w, b), x4, w, b)
    _gc(lambda x, w, b: EF.instance_norm(x, weight=w, bias=b), x4, w, b)
    _gc(lambda x, w, b: EF.layer_norm(x, (2,), w[:2], b[:2]), x4, w, b)
    _gc(lambda x, w: EF.rms_norm(x, (2, 2), w.reshape(2, 2)), x4, w)
    _gc(lambda x: EF.local_response_norm(x, 3, alpha=0.5), x4)


@pytest.mark.parametrize("tdt,edt,tol", [(torch.float16, ember.float16, 4e-3),
                                         (torch.bfloat16, ember.bfloat16, 3e-2)])
def test_norm_functionals_half(tdt, edt, tol):
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((4, 3, 8)) * 3 + 5).float()
    tx, ex = x.to(tdt), E(x).to(edt)
    for tf, ef in [(lambda a: torch.nn.functional.layer_norm(a, (8,)),
                    lambda a: EF.layer_norm(a, (8,))),
                   (lambda a: torch.nn.functional.group_norm(a, 3),
                    lambda a: EF.group_norm(a, 3)),
                   (lambda a: torch.nn.functional.batch_norm(a, None, None, training=True),
                    lambda a: EF.batch_norm(a, None, None, training=True)),
                   (lambda a: torch.nn.functional.rms_norm(a, (8,)),
                    lambda a: EF.rms_norm(a, (8,)))]:
        t, e = tf(tx), ef(ex)
        assert e.dtype == edt
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=tol, atol=tol)
