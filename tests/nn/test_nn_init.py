"""nn.init against torch.nn.init: gains and fans equal torch's, deterministic initialisers
(constant, eye, dirac) give torch's tensors, random ones respect torch's exact bounds and
match their distribution within loose statistical bounds; errors match torch's types.
"""
import math

import numpy as np
import pytest
import torch

import ember
from ember import nn

try:
    from ._nn_common import close
except ImportError:
    from _nn_common import close

TI = torch.nn.init
EI = nn.init
SHAPES = [(3, 4), (6, 3, 5), (2, 4, 3, 3), (5, 1, 2, 2, 2)]


@pytest.mark.parametrize("name,param", [("linear", None), ("conv2d", None),
                                        ("conv_transpose3d", None), ("sigmoid", None),
                                        ("tanh", None), ("relu", None), ("leaky_relu", None),
                                        ("leaky_relu", 0.2), ("leaky_relu", 3),
                                        ("leaky_relu", math.sqrt(5)), ("selu", None)])
def test_calculate_gain(name, param):
    assert EI.calculate_gain(name, param) == TI.calculate_gain(name, param)


@pytest.mark.parametrize("name,param", [("softmax", None), ("leaky_relu", True),
                                        ("leaky_relu", "x")])
def test_calculate_gain_errors(name, param):
    with pytest.raises(ValueError) as et:
        TI.calculate_gain(name, param)
    with pytest.raises(ValueError) as ee:
        EI.calculate_gain(name, param)
    assert str(ee.value) == str(et.value)


@pytest.mark.parametrize("shape", SHAPES + [(4,), ()])
def test_fans(shape):
    t, e = torch.empty(shape), ember.empty(shape)
    if len(shape) < 2:
        with pytest.raises(ValueError):
            TI._calculate_fan_in_and_fan_out(t)
        with pytest.raises(ValueError):
            EI._calculate_fan_in_and_fan_out(e)
    else:
        assert EI._calculate_fan_in_and_fan_out(e) == TI._calculate_fan_in_and_fan_out(t)


def test_deterministic_fills():
    for shape in SHAPES:
        for fn, args in ((EI.constant_, (0.3,)), (EI.ones_, ()), (EI.zeros_, ())):
            t, e = torch.empty(shape), ember.empty(shape)
            getattr(TI, fn.__name__)(t, *args)
            assert fn(e, *args) is e
            close(e, t)
    for shape in ((3, 5), (4, 2), (0, 3)):
        t, e = torch.empty(shape), ember.empty(shape)
        close(EI.eye_(e), TI.eye_(t))
    for shape, groups in (((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 4, 3, 3, 3), 1),
                          ((3, 5, 2), 3)):
        t, e = torch.empty(shape), ember.empty(shape)
        close(EI.dirac_(e, groups), TI.dirac_(t, groups))


def test_shape_errors():
    cases = [("eye_", (3,)), ("eye_", (2, 2, 2)), ("dirac_", (3, 3)), ("orthogonal_", (4,)),
             ("sparse_", (2, 2, 2)), ("xavier_uniform_", (3,)), ("kaiming_normal_", (5,))]
    for name, shape in cases:
        args = (0.5,) if name == "sparse_" else ()
        with pytest.raises(ValueError):
            getattr(TI, name)(torch.empty(shape), *args)
        with pytest.raises(ValueError):
            getattr(EI, name)(ember.empty(shape), *args)
    with pytest.raises(ValueError):
        EI.dirac_(ember.empty(5, 2, 3), groups=2)
    with pytest.raises(ValueError):
        EI.kaiming_uniform_(ember.empty(3, 4), mode="fan_avg")


def stats(e):
    a = e.detach().numpy().astype(np.float64)
    return a, a.mean(), a.std()


@pytest.mark.parametrize("a,mode,nl", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in",
                                                                       "leaky_relu"),
                                       (0, "fan_out", "relu"), (0.1, "fan_in", "tanh")])
def test_kaiming(a, mode, nl):
    shape = (200, 50, 3)
    fan = 50 * 3 if mode == "fan_in" else 200 * 3
    std = TI.calculate_gain(nl, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    ember.manual_seed(0)
    x, m, s = stats(EI.kaiming_uniform_(ember.empty(shape), a=a, mode=mode, nonlinearity=nl))
    t = TI.kaiming_uniform_(torch.empty(shape), a=a, mode=mode, nonlinearity=nl)
    assert np.abs(x).max() <= bound and t.abs().max().item() <= bound
    assert np.abs(x).max() > 0.99 * bound
    assert abs(m) < 0.02 * bound and abs(s - std) < 0.02 * std
    x, m, s = stats(EI.kaiming_normal_(ember.empty(shape), a=a, mode=mode, nonlinearity=nl))
    t = TI.kaiming_normal_(torch.empty(shape), a=a, mode=mode, nonlinearity=nl)
    assert abs(m) < 0.02 * std and abs(s - std) < 0.02 * std
    assert abs(t.std().item() - std) < 0.02 * std


def test_kaiming_zero_element_warns():
    with pytest.warns(UserWarning):
        EI.kaiming_uniform_(ember.empty(0, 3))
    with pytest.warns(UserWarning):
        TI.kaiming_uniform_(torch.empty(0, 3))


@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier(gain):
    shape = (300, 100)
    std = gain * math.sqrt(2.0 / 400)
    a = math.sqrt(3.0) * std
    x, m, s = stats(EI.xavier_uniform_(ember.empty(shape), gain))
    assert np.abs(x).max() <= a and np.abs(x).max() > 0.99 * a
    assert abs(s - std) < 0.02 * std and abs(m) < 0.02 * std
    assert TI.xavier_uniform_(torch.empty(shape), gain).abs().max().item() <= a
    x, m, s = stats(EI.xavier_normal_(ember.empty(shape), gain))
    assert abs(s - std) < 0.02 * std and abs(m) < 0.02 * std


def test_uniform_normal_trunc_normal():
    x, m, s = stats(EI.uniform_(ember.empty(100, 100), -2.0, 3.0))
    assert x.min() >= -2 and x.max() < 3 and abs(m - 0.5) < 0.05
    x, m, s = stats(EI.normal_(ember.empty(100, 100), 1.0, 0.5))
    assert abs(m - 1.0) < 0.02 and abs(s - 0.5) < 0.02
    for mean, std, lo, hi in ((0.0, 1.0, -2.0, 2.0), (1.0, 2.0, 0.0, 3.0)):
        e = EI.trunc_normal_(ember.empty(200, 100), mean, std, lo, hi)
        t = TI.trunc_normal_(torch.empty(200, 100), mean, std, lo, hi)
        x, m, s = stats(e)
        assert x.min() >= lo and x.max() <= hi
        # moments of the truncated normal, compared with torch's sample
        assert abs(m - t.mean().item()) < 0.05 * std and abs(s - t.std().item()) < 0.05 * std
    with pytest.warns(UserWarning):
        EI.trunc_normal_(ember.empty(3), mean=10.0)
    g = ember.Generator().manual_seed(5)
    a = EI.normal_(ember.empty(5), generator=g).tolist()
    g.manual_seed(5)
    assert EI.normal_(ember.empty(5), generator=g).tolist() == a


@pytest.mark.parametrize("shape,gain", [((4, 6), 1.0), ((6, 4), 2.0), ((3, 2, 2), 1.0),
                                        ((5, 5), 0.5)])
def test_orthogonal(shape, gain):
    e = EI.orthogonal_(ember.empty(shape, dtype=ember.float64), gain)
    q = e.numpy().reshape(shape[0], -1)
    small = min(q.shape)
    prod = q @ q.T if q.shape[0] == small else q.T @ q
    np.testing.assert_allclose(prod, gain ** 2 * np.eye(small), atol=1e-10)
    t = TI.orthogonal_(torch.empty(shape, dtype=torch.float64), gain).reshape(shape[0], -1)
    tp = t @ t.T if t.shape[0] == small else t.T @ t
    np.testing.assert_allclose(tp.numpy(), gain ** 2 * np.eye(small), atol=1e-10)


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.9])
def test_sparse(sparsity):
    rows, cols = 20, 7
    e = EI.sparse_(ember.empty(rows, cols), sparsity, std=0.3)
    t = TI.sparse_(torch.empty(rows, cols), sparsity, std=0.3)
    zeros_e = (e.numpy() == 0).sum(0)
    zeros_t = (t.numpy() == 0).sum(0)
    assert zeros_e.tolist() == zeros_t.tolist() == [math.ceil(sparsity * rows)] * cols


def test_init_on_parameter_is_not_recorded():
    p = nn.Parameter(ember.empty(4, 3))
    for fn in (EI.kaiming_uniform_, EI.xavier_normal_, EI.orthogonal_, EI.zeros_,
               EI.trunc_normal_, EI.eye_, lambda t: EI.sparse_(t, 0.5)):
        out = fn(p)
        assert out is p and p.grad_fn is None and p.is_leaf and p.requires_grad
    with pytest.warns(FutureWarning):
        EI.uniform(ember.empty(2))
