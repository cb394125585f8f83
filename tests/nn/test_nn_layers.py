"""Differential tests of ember.nn's parameterised layers (Linear, Bilinear, LazyLinear,
Embedding), the dropout family, and the distance functions against torch: each layer is built
in torch, its state copied into ember, and outputs and the gradients of the input and every
parameter compared, in float32 and float64, in train and eval mode.
"""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember import nn
import ember.nn.functional as F

try:
    from ._nn_common import DTYPES, E, close, norm_repr, pair, run_both
except ImportError:
    from _nn_common import DTYPES, E, close, norm_repr, pair, run_both

TF = torch.nn.functional
batch = st.lists(st.integers(0, 3), min_size=0, max_size=2).map(tuple)


def randn(shape, tdt, seed=0, grad=True):
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(tdt)
    return x.requires_grad_(grad)


@settings(max_examples=25)
@given(lead=batch, fin=st.integers(1, 5), fout=st.integers(1, 4), bias=st.booleans(),
       dt=st.sampled_from(DTYPES), train=st.booleans(), seed=st.integers(0, 999))
def test_linear(lead, fin, fout, bias, dt, train, seed):
    tdt, edt = dt
    torch.manual_seed(seed)
    tm = torch.nn.Linear(fin, fout, bias=bias, dtype=tdt).train(train)
    em = nn.Linear(fin, fout, bias=bias, dtype=edt)
    pair(tm, em)
    assert repr(em) == repr(tm)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    run_both(tm, em, randn(lead + (fin,), tdt, seed), grad_seed=seed)


def test_linear_default_init_bounds():
    # weight: kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(in), 1/sqrt(in)); bias the same bound
    ember.manual_seed(0)
    m = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (m.weight, m.bias):
        a = p.detach().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.95 * bound
        assert abs(a.mean()) < 0.1 * bound and abs(a.std() - bound / math.sqrt(3)) < 0.05 * bound
    tm = torch.nn.Linear(400, 300)
    assert tm.weight.abs().max().item() <= bound
    assert m.weight.dtype is ember.float32 and m.weight.requires_grad


def test_linear_wrong_shape_raises():
    with pytest.raises(RuntimeError):
        torch.nn.Linear(3, 2)(torch.randn(4, 5))
    with pytest.raises(RuntimeError):
        nn.Linear(3, 2)(ember.randn(4, 5))


@settings(max_examples=20)
@given(lead=batch, dims=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)),
       bias=st.booleans(), dt=st.sampled_from(DTYPES), seed=st.integers(0, 999))
def test_bilinear(lead, dims, bias, dt, seed):
    tdt, edt = dt
    torch.manual_seed(seed)
    tm = torch.nn.Bilinear(*dims, bias=bias, dtype=tdt)
    em = nn.Bilinear(*dims, bias=bias, dtype=edt)
    pair(tm, em)
    assert repr(em) == repr(tm)
    run_both(tm, em, randn(lead + (dims[0],), tdt, seed), randn(lead + (dims[1],), tdt, seed + 1))


def test_bilinear_errors():
    for a, b in (((2, 3), (3, 4)), ((2, 3), (2, 5)), ((2, 3), (2, 2, 4))):
        with pytest.raises(RuntimeError):
            torch.nn.Bilinear(3, 4, 2)(torch.randn(a), torch.randn(b))
        with pytest.raises(RuntimeError):
            nn.Bilinear(3, 4, 2)(ember.randn(a), ember.randn(b))


def test_lazy_linear():
    tm, em = torch.nn.LazyLinear(3), nn.LazyLinear(3)
    assert repr(em) == repr(tm)
    assert em.has_uninitialized_params()
    x = randn((4, 6), torch.float32)
    tm(x)
    em(E(x))
    assert type(em) is nn.Linear and repr(em) == repr(tm) and em.in_features == 6
    assert tuple(em.weight.shape) == (3, 6) and isinstance(em.weight, nn.Parameter)
    pair(tm, em)
    run_both(tm, em, x)
    assert not em._forward_pre_hooks


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 0}, {"padding_idx": -1},
                                    {"scale_grad_by_freq": True},
                                    {"padding_idx": 2, "scale_grad_by_freq": True}])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_embedding(kwargs, dt):
    tdt, edt = dt
    torch.manual_seed(0)
    tm = torch.nn.Embedding(7, 4, dtype=tdt, **kwargs)
    em = nn.Embedding(7, 4, dtype=edt, **kwargs)
    assert repr(em) == repr(tm)
    if "padding_idx" in kwargs:                      # ember's own init zeroes the row too
        assert float(em.weight[em.padding_idx].abs().sum()) == 0.0
    with torch.no_grad():                            # a nonzero padding row: value kept, no grad
        tm.weight[kwargs.get("padding_idx", 0)] = 1.5
    pair(tm, em)
    idx = torch.tensor([[0, 2, 6, 2], [6, 6, 1, 0]])
    run_both(tm, em, idx)
    run_both(tm, em, torch.tensor(3))                # 0-dim index
    run_both(tm, em, torch.zeros(0, dtype=torch.int64))


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (0.5, 1.0), (2.0, 3.0)])
def test_embedding_max_norm(max_norm, norm_type):
    torch.manual_seed(0)
    tm = torch.nn.Embedding(6, 3, max_norm=max_norm, norm_type=norm_type, dtype=torch.float64)
    em = nn.Embedding(6, 3, max_norm=max_norm, norm_type=norm_type, dtype=ember.float64)
    assert repr(em) == repr(tm)
    pair(tm, em)
    idx = torch.tensor([1, 3, 3, 5])
    run_both(tm, em, idx)
    close(em.weight, tm.weight, what="renormalised weight")


def test_embedding_from_pretrained_and_errors():
    w = randn((5, 3), torch.float32, grad=False)
    tm = torch.nn.Embedding.from_pretrained(w)
    em = nn.Embedding.from_pretrained(E(w))
    assert repr(em) == repr(tm) and not em.weight.requires_grad
    close(em(ember.tensor([4, 0])), tm(torch.tensor([4, 0])))
    ew = E(w)
    em2 = nn.Embedding.from_pretrained(ew, freeze=False, padding_idx=1)
    assert em2.weight.requires_grad
    with ember.no_grad():
        em2.weight.mul_(2)
    close(ew, w * 2, what="shares storage")
    for bad in (torch.tensor([5]), torch.tensor([-1])):
        with pytest.raises(IndexError):
            tm(bad)
        with pytest.raises(IndexError):
            em(E(bad))
    with pytest.raises(RuntimeError):
        tm(torch.tensor([1.0]))
    with pytest.raises(RuntimeError):
        em(ember.tensor([1.0]))
    for bad in (7, -8):
        with pytest.raises(AssertionError):
            torch.nn.Embedding(7, 2, padding_idx=bad)
        with pytest.raises(AssertionError):
            nn.Embedding(7, 2, padding_idx=bad)


# ---- dropout ----
DROPOUTS = [("Dropout", (50, 40)), ("Dropout1d", (20, 30, 5)), ("Dropout2d", (10, 20, 3, 3)),
            ("Dropout3d", (5, 20, 2, 2, 2)), ("AlphaDropout", (50, 40)),
            ("FeatureAlphaDropout", (10, 20, 3, 3))]


@pytest.mark.parametrize("name,shape", DROPOUTS, ids=[d[0] for d in DROPOUTS])
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_eval_identity_and_edges(name, shape, p):
    tm, em = getattr(torch.nn, name)(p), getattr(nn, name)(p)
    assert repr(em) == repr(tm)
    x = randn(shape, torch.float32)
    tm.eval()
    em.eval()
    run_both(tm, em, x)
    if p in (0.0, 1.0):                       # deterministic in training mode too
        tm.train()
        em.train()
        run_both(tm, em, randn(shape, torch.float32, seed=1))


@pytest.mark.parametrize("name,shape", DROPOUTS, ids=[d[0] for d in DROPOUTS])
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_train_statistics(name, shape, p):
    ember.manual_seed(1)
    m = getattr(nn, name)(p)
    x = ember.tensor(np.random.default_rng(0).standard_normal(shape) + 2.0, requires_grad=True)
    y = m(x)
    y.sum().backward()
    xs, ys, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    if "Alpha" in name:
        a = 1.0 / math.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
        kept = np.isclose(g, a)
        dropped = np.isclose(g, 0.0)
        assert np.all(kept | dropped)
        b = 1.7580993408473766 * a * p
        np.testing.assert_allclose(ys[kept], xs[kept] * a + b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ys[dropped], -1.7580993408473766 * a + b, rtol=1e-5)
    else:
        kept = g != 0
        np.testing.assert_allclose(g[kept], 1 / (1 - p), rtol=1e-6)
        np.testing.assert_allclose(ys[kept], xs[kept] / (1 - p), rtol=1e-5)
        assert np.all(ys[~kept] == 0)
    if name not in ("Dropout", "AlphaDropout"):       # whole channels share the decision
        flat = kept.reshape(shape[0], shape[1], -1)
        assert np.all(flat.all(-1) | (~flat).all(-1))
    frac = 1 - kept.mean()
    n = kept.size if name in ("Dropout", "AlphaDropout") else shape[0] * shape[1]
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_dropout_functional_and_errors():
    x = ember.ones(3, 4)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.alpha_dropout(x, 0.5) is x               # training defaults to False
    y = x * 1
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y
    for p in (-0.1, 1.1):
        with pytest.raises(ValueError):
            torch.nn.Dropout(p)
        with pytest.raises(ValueError):
            nn.Dropout(p)
        with pytest.raises(ValueError):
            F.dropout(x, p)
    with pytest.raises(RuntimeError):
        TF.dropout1d(torch.ones(2, 2, 2, 2))
    with pytest.raises(RuntimeError):
        F.dropout1d(ember.ones(2, 2, 2, 2))
    with pytest.warns(UserWarning):
        F.dropout2d(ember.ones(2, 3, 4))
    ember.manual_seed(3)
    a = F.dropout(ember.ones(100), 0.5)
    ember.manual_seed(3)
    assert ember.equal(a, F.dropout(ember.ones(100), 0.5))   # ember's RNG drives the mask


# ---- distances ----
@settings(max_examples=20)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       p=st.sampled_from([1.0, 2.0, 3.0]), dt=st.sampled_from(DTYPES), data=st.data(),
       zero=st.booleans())
def test_normalize(shape, p, dt, data, zero):
    tdt, _ = dt
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = randn(shape, tdt, grad=False)
    if zero:
        x[(0,) * len(shape)] = 0.0
    tx, ex = x.clone().requires_grad_(), E(x, requires_grad=True)
    t, e = TF.normalize(tx, p, dim), F.normalize(ex, p, dim)
    close(e, t)
    g = randn(shape, tdt, 3, grad=False)
    t.backward(g)
    e.backward(E(g))
    # gradient terms of size ~1/|x| cancel (exactly 0 for one element): scale atol with them
    scale = 1.0 / max(float(x.abs().max()), 1e-3)
    close(ex.grad, tx.grad, (1e-4, 1e-5 * scale) if tdt is torch.float32 else None)


@pytest.mark.parametrize("s1,s2,dim", [((4, 5), (4, 5), 1), ((3, 4, 5), (4, 5), -1),
                                       ((2, 5), (1, 5), 0), ((6,), (6,), 0)])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_cosine_similarity(s1, s2, dim, dt):
    tdt, _ = dt
    a, b = randn(s1, tdt, 1), randn(s2, tdt, 2)
    ea, eb = E(a), E(b)
    t, e = TF.cosine_similarity(a, b, dim), F.cosine_similarity(ea, eb, dim)
    close(e, t)
    t.sum().backward()
    e.sum().backward()
    close(ea.grad, a.grad)
    close(eb.grad, b.grad)


def test_cosine_similarity_zero_vector():
    a = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    ea, eb = E(a), E(b)
    t, e = TF.cosine_similarity(a, b), F.cosine_similarity(ea, eb)
    close(e, t)
    t.sum().backward()
    e.sum().backward()
    close(ea.grad, a.grad)
    close(eb.grad, b.grad)


@pytest.mark.parametrize("p,keepdim", [(2.0, False), (1.0, True), (3.0, False)])
@pytest.mark.parametrize("s1,s2", [((4, 5), (4, 5)), ((4, 5), (5,)), ((5,), (5,))])
def test_pairwise_distance(p, keepdim, s1, s2):
    a, b = randn(s1, torch.float64, 1), randn(s2, torch.float64, 2)
    ea, eb = E(a), E(b)
    t = TF.pairwise_distance(a, b, p, keepdim=keepdim)
    e = F.pairwise_distance(ea, eb, p, keepdim=keepdim)
    close(e, t)
    t.sum().backward()
    e.sum().backward()
    close(ea.grad, a.grad)
    close(eb.grad, b.grad)


def test_functional_linear_matches_module():
    x, w, b = randn((3, 4), torch.float64), randn((2, 4), torch.float64, 1), \
        randn((2,), torch.float64, 2)
    ex, ew, eb = E(x), E(w), E(b)
    close(F.linear(ex, ew, eb), TF.linear(x, w, b))
    close(F.linear(ex, ew), TF.linear(x, w))
    close(F.linear(E(randn((4,), torch.float64)), ew), TF.linear(randn((4,), torch.float64), w))
    assert norm_repr(repr(torch.nn.Linear(2, 2, bias=False))) == repr(nn.Linear(2, 2, bias=False))
