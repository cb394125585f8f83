"""Differential tests of ember.nn's activation layers (and the functional forms under them)
against torch: outputs, input gradients and parameter gradients, float32 and float64, shapes
from hypothesis (0-dim, 0-size), inputs that hit the kinks (0, +-3, thresholds) exactly,
non-default arguments, in-place forms, and the repr of every layer.
"""
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember import nn
import ember.nn.functional as F

try:
    from ._nn_common import DTYPES, E, close, run_both
except ImportError:
    from _nn_common import DTYPES, E, close, run_both

# (class name, kwargs): the same constructor call in both libraries
ELEMENTWISE = [
    ("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}),
    ("ELU", {}), ("ELU", {"alpha": 0.5}), ("SELU", {}), ("CELU", {}), ("CELU", {"alpha": 2.0}),
    ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("SiLU", {}), ("Mish", {}),
    ("Softplus", {}), ("Softplus", {"beta": 2.0, "threshold": 10.0}), ("Softsign", {}),
    ("Hardtanh", {}), ("Hardtanh", {"min_val": -2.0, "max_val": 3.0}), ("Hardswish", {}),
    ("Hardsigmoid", {}), ("Tanh", {}), ("Sigmoid", {}), ("LogSigmoid", {}),
    ("Threshold", {"threshold": 0.5, "value": -1.0}), ("Tanhshrink", {}), ("Softshrink", {}),
    ("Softshrink", {"lambd": 1.0}), ("Hardshrink", {}), ("Hardshrink", {"lambd": 1.0}),
    ("PReLU", {}), ("PReLU", {"init": -0.5}),
]
INPLACE = [
    ("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", {"negative_slope": 0.1}), ("ELU", {}),
    ("SELU", {}), ("CELU", {"alpha": 1.5}), ("SiLU", {}), ("Mish", {}), ("Hardswish", {}),
    ("Hardsigmoid", {}), ("Hardtanh", {}), ("Threshold", {"threshold": 0.1, "value": 2.0}),
]
SPECIAL = np.array([0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 0.5, -0.5, 2.0, -2.0, 5.0, 10.0, 25.0,
                    -25.0, 1e-8, -1e-8])
# torch computes these two with float32 constants even in float64 (1.0f / 6, CELU's
# alpha * (1 / alpha) != 1): ember's exact constants differ from it by ~4e-8 relative
LOOSE64 = {"CELU": (1e-7, 1e-9), "Hardsigmoid": (1e-7, 1e-9), "celu": (1e-7, 1e-9)}
ids = [n + "".join(f"-{k}={v}" for k, v in kw.items()) for n, kw in ELEMENTWISE]


def values(shape, seed, scale=3.0):
    """Random values with a share of the special points (kinks, thresholds, large)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * scale
    mask = rng.random(shape) < 0.3
    return np.where(mask, rng.choice(SPECIAL, size=shape), v)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


def leaf(arr, tdt):
    return torch.tensor(arr, dtype=tdt, requires_grad=True)


@pytest.mark.parametrize("name,kwargs", ELEMENTWISE, ids=ids)
@settings(max_examples=12)
@given(shape=shapes, seed=st.integers(0, 2**16), dt=st.sampled_from(DTYPES))
def test_elementwise_layer(name, kwargs, shape, seed, dt):
    tdt, edt = dt
    tm = getattr(torch.nn, name)(**kwargs).to(tdt)
    em = getattr(nn, name)(**kwargs).to(edt)
    em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
    tol = LOOSE64.get(name) if tdt is torch.float64 else None
    run_both(tm, em, leaf(values(shape, seed), tdt), tol=tol, grad_seed=seed)


@pytest.mark.parametrize("name,kwargs", ELEMENTWISE, ids=ids)
def test_layer_repr(name, kwargs):
    assert repr(getattr(nn, name)(**kwargs)) == repr(getattr(torch.nn, name)(**kwargs))


@pytest.mark.parametrize("name,kwargs", INPLACE,
                         ids=[n + str(sorted(kw.items())) for n, kw in INPLACE])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_inplace_layer(name, kwargs, dt):
    tdt, edt = dt
    arr = values((3, 5), 7)
    tx, ex = leaf(arr, tdt), E(leaf(arr, tdt))
    ty, ey = tx * 1, ex * 1          # non-leaf: in-place allowed
    tm, em = (getattr(lib, name)(inplace=True, **kwargs) for lib in (torch.nn, nn))
    assert repr(em) == repr(tm)
    tout, eout = tm(ty), em(ey)
    assert eout is ey and tout is ty
    tol = LOOSE64.get(name) if tdt is torch.float64 else None
    close(eout, tout, tol, what="output")
    g = np.random.default_rng(1).standard_normal((3, 5))
    tout.backward(torch.tensor(g, dtype=tdt))
    eout.backward(ember.tensor(g, dtype=edt))
    close(ex.grad, tx.grad, tol, what="grad")


def test_inplace_on_leaf_requiring_grad_raises():
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        F.elu(x, inplace=True)
    with pytest.raises(RuntimeError):
        torch.nn.functional.elu(torch.randn(3, requires_grad=True), inplace=True)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_prelu_per_channel(ndim, dt):
    tdt, edt = dt
    shape = (2, 3, 4, 2)[:ndim]
    n = 3
    tm = torch.nn.PReLU(n).to(tdt)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor([0.1, -0.3, 0.7], dtype=tdt))
    em = nn.PReLU(n).to(edt)
    em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
    run_both(tm, em, leaf(values(shape, ndim), tdt))
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("shape", [(2, 4), (3,), ()])
def test_prelu_channel_mismatch(shape):
    # an input of fewer than 2 dims has a single channel
    with pytest.raises(RuntimeError):
        torch.nn.PReLU(3)(torch.randn(shape))
    with pytest.raises(RuntimeError):
        nn.PReLU(3)(ember.randn(shape))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax", "Softmin"])
@settings(max_examples=15)
@given(shape=shapes, seed=st.integers(0, 2**16), dt=st.sampled_from(DTYPES),
       data=st.data(), scale=st.sampled_from([1.0, 1000.0]))
def test_softmax_family(name, shape, seed, dt, data, scale):
    tdt, edt = dt
    nd = max(len(shape), 1)
    dim = data.draw(st.integers(-nd, nd - 1))
    tm, em = getattr(torch.nn, name)(dim=dim), getattr(nn, name)(dim=dim)
    assert repr(em) == repr(tm)
    x = leaf(np.random.default_rng(seed).standard_normal(shape) * scale, tdt)
    run_both(tm, em, x, grad_seed=seed)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
def test_softmax_dtype_and_implicit_dim(fn):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    tx, ex = torch.tensor(x, dtype=torch.float32), ember.tensor(x, dtype=ember.float32)
    close(getattr(F, fn)(ex, 1, dtype=ember.float64),
          getattr(torch.nn.functional, fn)(tx, 1, dtype=torch.float64), what="dtype=")
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        t = getattr(torch.nn.functional, fn)(tx)
    with warnings.catch_warnings(record=True) as ew:
        warnings.simplefilter("always")
        e = getattr(F, fn)(ex)
    close(e, t, what="implicit dim")
    assert len(tw) == len(ew) == 1 and ew[0].category is tw[0].category


def test_softmax_infinities():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0]])
    for fn in ("softmax", "log_softmax"):
        close(getattr(F, fn)(ember.tensor(x), 1),
              getattr(torch.nn.functional, fn)(torch.tensor(x), 1), what=fn)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_glu(dim, dt):
    tdt, _ = dt
    tm, em = torch.nn.GLU(dim), nn.GLU(dim)
    assert repr(em) == repr(tm)
    run_both(tm, em, leaf(values((4, 6, 2), 3), tdt))


def test_glu_errors():
    for x, ex in ((torch.randn(3, 5), ember.randn(3, 5)), (torch.tensor(1.), ember.tensor(1.))):
        with pytest.raises(RuntimeError):
            torch.nn.functional.glu(x)
        with pytest.raises(RuntimeError):
            F.glu(ex)


def test_functional_errors_match_torch():
    x, ex = torch.randn(3), ember.randn(3)
    cases = [("gelu", {"approximate": "bad"}), ("softshrink", {"lambd": -1.0})]
    for fn, kw in cases:
        with pytest.raises(RuntimeError):
            getattr(torch.nn.functional, fn)(x, **kw)
        with pytest.raises(RuntimeError):
            getattr(F, fn)(ex, **kw)


@pytest.mark.parametrize("fn,args", [("relu", ()), ("elu", (0.7,)), ("selu", ()),
                                     ("celu", (0.3,)), ("leaky_relu", (0.3,)),
                                     ("hardtanh", (-0.5, 0.5)), ("relu6", ()),
                                     ("threshold", (0.2, 5.0)), ("softplus", (0.5, 5.0)),
                                     ("logsigmoid", ()), ("hardswish", ()), ("silu", ())])
def test_functional_forms(fn, args):
    x = values((4, 5), 11)
    tx, ex = leaf(x, torch.float64), E(leaf(x, torch.float64))
    t, e = getattr(torch.nn.functional, fn)(tx, *args), getattr(F, fn)(ex, *args)
    close(e, t, LOOSE64.get(fn))
    t.sum().backward()
    e.sum().backward()
    close(ex.grad, tx.grad, LOOSE64.get(fn))


def test_half_precision_runs():
    x = values((3, 4), 5)
    for name in ("GELU", "SiLU", "Softmax", "ELU"):
        kw = {"dim": -1} if name == "Softmax" else {}
        t = getattr(torch.nn, name)(**kw)(torch.tensor(x, dtype=torch.float16))
        e = getattr(nn, name)(**kw)(ember.tensor(x, dtype=ember.float16))
        close(e, t, tol=(2e-2, 2e-3), what=name)
