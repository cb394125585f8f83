"""nn.utils against torch.nn.utils: gradient clipping by norm (every norm type, the
non-finite error, empty and single-tensor inputs) and by value, and the parameter <-> vector
conversions.
"""
import math

import numpy as np
import pytest
import torch

import ember
from ember import nn

try:
    from ._nn_common import E, close, norm_repr
except ImportError:
    from _nn_common import E, close, norm_repr

TU, EU = torch.nn.utils, nn.utils


def params_with_grads(seed=0, scale=1.0, dtype=torch.float32):
    rng = np.random.default_rng(seed)
    tps, eps_ = [], []
    for shape in ((3, 4), (5,), (2, 2, 2), (1,)):
        t = torch.nn.Parameter(torch.tensor(rng.standard_normal(shape), dtype=dtype))
        t.grad = torch.tensor(rng.standard_normal(shape) * scale, dtype=dtype)
        e = nn.Parameter(E(t.detach()))
        e.grad = E(t.grad)
        tps.append(t)
        eps_.append(e)
    tps.append(torch.nn.Parameter(torch.zeros(2, dtype=dtype)))    # no grad: skipped
    eps_.append(nn.Parameter(ember.zeros(2, dtype=ember.float64 if dtype is torch.float64
                                         else ember.float32)))
    return tps, eps_


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, 0.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.1, 1e3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_clip_grad_norm(norm_type, max_norm, dtype):
    tps, eps_ = params_with_grads(dtype=dtype)
    t = TU.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    e = EU.clip_grad_norm_(iter(eps_), max_norm, norm_type=norm_type, foreach=None)
    close(e, t, what="total norm")
    for tp, ep in zip(tps, eps_):
        if tp.grad is None:
            assert ep.grad is None
        else:
            close(ep.grad, tp.grad, what="clipped grad")


def test_clip_grad_norm_single_tensor_empty_and_foreach():
    tps, eps_ = params_with_grads(1)
    close(EU.clip_grad_norm_(eps_[0], 0.5, foreach=True), TU.clip_grad_norm_(tps[0], 0.5))
    close(eps_[0].grad, tps[0].grad)
    e = EU.clip_grad_norm_([nn.Parameter(ember.zeros(2))], 1.0)
    t = TU.clip_grad_norm_([torch.nn.Parameter(torch.zeros(2))], 1.0)
    close(e, t)
    close(EU.get_total_norm([p.grad for p in eps_[:-1]], 3.0),
          TU.get_total_norm([p.grad for p in tps[:-1]], 3.0))


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_clip_grad_norm_nonfinite(bad):
    tps, eps_ = params_with_grads(2)
    tps[1].grad[0] = bad
    eps_[1].grad[0] = bad
    with pytest.raises(RuntimeError) as et:
        TU.clip_grad_norm_(tps, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as ee:
        EU.clip_grad_norm_(eps_, 1.0, error_if_nonfinite=True)
    assert str(ee.value) == str(et.value)
    close(EU.clip_grad_norm_(eps_, 1.0), TU.clip_grad_norm_(tps, 1.0))
    for tp, ep in zip(tps[:-1], eps_[:-1]):
        close(ep.grad, tp.grad)


@pytest.mark.parametrize("clip", [0.1, 1, 5.0])
def test_clip_grad_value(clip):
    tps, eps_ = params_with_grads(3, scale=3.0)
    assert TU.clip_grad_value_(tps, clip) is None and EU.clip_grad_value_(eps_, clip) is None
    for tp, ep in zip(tps[:-1], eps_[:-1]):
        close(ep.grad, tp.grad)
    tps, eps_ = params_with_grads(4, scale=3.0)
    TU.clip_grad_value_(tps[0], clip)
    EU.clip_grad_value_(eps_[0], clip)
    close(eps_[0].grad, tps[0].grad)


def test_parameters_to_vector_and_back():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    em = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
    tv, ev = TU.parameters_to_vector(tm.parameters()), EU.parameters_to_vector(em.parameters())
    close(ev, tv)
    assert ev.requires_grad == tv.requires_grad
    (ev * ev).sum().backward()
    close(em[0].weight.grad, 2 * E(tm[0].weight.detach()))
    w = em[1].weight
    EU.vector_to_parameters(ember.arange(float(ev.numel())), em.parameters())
    TU.vector_to_parameters(torch.arange(float(tv.numel())), tm.parameters())
    for (n, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        close(ep, tp, what=n)
    assert em[1].weight is w and isinstance(w, nn.Parameter)
    with pytest.raises(TypeError) as et:
        TU.vector_to_parameters([1.0], tm.parameters())
    with pytest.raises(TypeError) as ee:
        EU.vector_to_parameters([1.0], em.parameters())
    assert str(ee.value) == norm_repr(str(et.value)) or str(ee.value) == str(et.value)
