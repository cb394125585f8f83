"""Pooling (max/avg/adaptive pooling, max_unpool) against PyTorch: modules and functions in
float32/float64 with non-default arguments, returned indices, hypothesis over small shapes,
gradcheck in float64, and PyTorch's errors."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember import nn as enn
import ember.nn.functional as EF
from tests.nn._nn_common import DTYPES, E, close, run_both


def _x(shape, tdt, seed=0):
    g = np.random.default_rng(seed)
    return torch.tensor(g.standard_normal(shape), dtype=tdt, requires_grad=True)


POOL_CASES = [
    ("MaxPool1d", (3,), dict(stride=2, padding=1, dilation=2, ceil_mode=True), (2, 3, 9)),
    ("MaxPool1d", (2,), dict(), (3, 8)),
    ("MaxPool2d", (2,), dict(), (2, 3, 8, 8)),
    ("MaxPool2d", ((3, 2),), dict(stride=(2, 1), padding=(1, 1), dilation=(1, 2)),
     (2, 2, 7, 6)),
    ("MaxPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 2, 6, 7)),
    ("MaxPool2d", (3,), dict(stride=1), (2, 5, 6)),                  # overlapping, unbatched
    ("AvgPool1d", (3,), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     (2, 3, 8)),
    ("AvgPool2d", (2,), dict(), (2, 3, 6, 6)),
    ("AvgPool2d", ((3, 2),), dict(stride=2, padding=1, ceil_mode=True), (2, 2, 7, 6)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False, ceil_mode=True),
     (2, 2, 6, 7)),
    ("AvgPool2d", (3,), dict(stride=1, divisor_override=4), (2, 5, 6)),
    ("AdaptiveAvgPool1d", (4,), dict(), (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, 4),), dict(), (2, 3, 7, 6)),
    ("AdaptiveAvgPool2d", ((None, 2),), dict(), (3, 5, 7)),
    ("AdaptiveAvgPool2d", (1,), dict(), (2, 3, 4, 5)),
    ("AdaptiveMaxPool2d", ((3, 4),), dict(), (2, 3, 7, 6)),
    ("AdaptiveMaxPool2d", (5,), dict(), (2, 3, 7)),                   # upsampling windows
]


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("name,args,kwargs,shape", POOL_CASES)
def test_pool_module_matches_torch(name, args, kwargs, shape, tdt, edt):
    tm, em = getattr(torch.nn, name)(*args, **kwargs), getattr(enn, name)(*args, **kwargs)
    run_both(tm, em, _x(shape, tdt))
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("fn,args,kwargs,shape", [
    ("max_pool1d", (3, 2, 1), dict(ceil_mode=True), (2, 3, 8)),
    ("max_pool2d", (2,), dict(), (2, 3, 6, 6)),
    ("max_pool2d", ((3, 2), (2, 1), 1), dict(dilation=(1, 2), ceil_mode=True), (2, 2, 7, 7)),
    ("adaptive_max_pool2d", ((3, 2),), dict(), (2, 2, 7, 5)),
    ("adaptive_max_pool1d", (3,), dict(), (2, 2, 7)),
])
def test_return_indices(fn, args, kwargs, shape):
    tx = _x(shape, torch.float64)
    ex = E(tx)
    to, ti = getattr(torch.nn.functional, fn)(tx, *args, return_indices=True, **kwargs)
    eo, ei = getattr(EF, fn)(ex, *args, return_indices=True, **kwargs)
    close(eo, to)
    close(ei, ti, what="indices")
    g = torch.randn(to.shape, dtype=torch.float64)
    to.backward(g)
    eo.backward(E(g))
    close(ex.grad, tx.grad, what="grad")


def test_max_pool_ties_and_nan():
    # ties pick the first element of the window; NaN propagates, as in PyTorch
    t = torch.tensor([[[[1., 1., 2., 2.], [1., 1., 2., float("nan")]]]], requires_grad=True)
    e = E(t)
    to, ti = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
    eo, ei = EF.max_pool2d(e, 2, return_indices=True)
    close(eo, to)
    close(ei, ti, what="indices")
    to.sum().backward()
    eo.sum().backward()
    close(e.grad, t.grad, what="grad")


@pytest.mark.parametrize("tdt,edt", DTYPES)
def test_max_unpool(tdt, edt):
    tx = _x((2, 3, 6, 8), tdt)
    out, idx = torch.nn.functional.max_pool2d(tx.detach(), 2, return_indices=True)
    tin = out.clone().requires_grad_()
    tm, em = torch.nn.MaxUnpool2d(2), enn.MaxUnpool2d(2)
    ein = E(tin)
    for size in (None, (7, 9)):
        to, eo = tm(tin, idx, size), em(ein, E(idx), size)
        close(eo, to)
        g = torch.randn(to.shape, dtype=tdt)
        to.backward(g)
        eo.backward(E(g))
        close(ein.grad, tin.grad, what="grad")
    assert repr(em) == repr(tm)
    with pytest.raises(ValueError):
        tm(tin, idx, (20, 20))
    with pytest.raises(ValueError):
        em(ein, E(idx), (20, 20))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 2), c=st.integers(1, 3), h=st.integers(1, 7), w=st.integers(1, 7),
       k=st.integers(1, 3), s=st.integers(1, 3), p=st.integers(0, 1), d=st.integers(1, 2),
       ceil=st.booleans(), incl=st.booleans())
def test_pool2d_hypothesis(n, c, h, w, k, s, p, d, ceil, incl):
    if 2 * p > k or min(h, w) + 2 * p < d * (k - 1) + 1:
        return
    tx = _x((n, c, h, w), torch.float64)
    F = torch.nn.functional
    for tfn, efn, kw in ((F.max_pool2d, EF.max_pool2d, dict(dilation=d)),
                         (F.avg_pool2d, EF.avg_pool2d, dict(count_include_pad=incl))):
        ex = E(tx)
        try:
            to = tfn(tx, k, s, p, ceil_mode=ceil, **kw)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                efn(ex, k, s, p, ceil_mode=ceil, **kw)
            continue
        eo = efn(ex, k, s, p, ceil_mode=ceil, **kw)
        close(eo, to)
        # a window wholly in the padding gives -inf, and torch's backward aborts on it
        if to.numel() and not torch.isinf(to).any():
            g = torch.randn(to.shape, dtype=torch.float64)
            (tg,) = torch.autograd.grad(to, tx, g)
            (eg,) = ember.autograd.grad(eo, ex, E(g))
            close(eg, tg, what="grad")


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), oh=st.integers(1, 5), ow=st.integers(1, 5))
def test_adaptive_hypothesis(h, w, oh, ow):
    tx = _x((2, 2, h, w), torch.float64)
    for name in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
        ex = E(tx)
        to = getattr(torch.nn.functional, name)(tx, (oh, ow))
        eo = getattr(EF, name)(ex, (oh, ow))
        close(eo, to)
        g = torch.randn(to.shape, dtype=torch.float64)
        (tg,) = torch.autograd.grad(to, tx, g)
        (eg,) = ember.autograd.grad(eo, ex, E(g))
        close(eg, tg, what="grad")


def test_gradcheck_pooling():
    rng = np.random.default_rng(0)
    # distinct values: max pooling is differentiable away from ties
    x = ember.tensor(rng.permutation(60).reshape(1, 3, 4, 5) + 0.5 * rng.random((1, 3, 4, 5)),
                     dtype=ember.float64, requires_grad=True)
    x1 = ember.tensor(rng.standard_normal((2, 2, 7)), requires_grad=True)
    for fn, inp in ((lambda t: EF.max_pool2d(t, 2, 1, 1, ceil_mode=True), x),
                    (lambda t: EF.max_pool1d(t, 3, 2, 1, dilation=2), x1),
                    (lambda t: EF.avg_pool2d(t, 3, 2, 1, ceil_mode=True,
                                             count_include_pad=False), x),
                    (lambda t: EF.avg_pool1d(t, 2, 1), x1),
                    (lambda t: EF.adaptive_avg_pool2d(t, (3, 2)), x),
                    (lambda t: EF.adaptive_avg_pool1d(t, 4), x1),
                    (lambda t: EF.adaptive_max_pool2d(t, (3, 2)), x)):
        assert ember.autograd.gradcheck(fn, (inp,))
        assert ember.autograd.gradgradcheck(fn, (inp,))


def test_pool_errors():
    F = torch.nn.functional
    x = torch.randn(1, 2, 5, 5)
    cases = [
        (lambda f, t: f.max_pool2d(t, 3, padding=2), RuntimeError),       # pad > kernel/2
        (lambda f, t: f.max_pool2d(t.reshape(-1), 2), RuntimeError),      # wrong dims
        (lambda f, t: f.avg_pool2d(t, 2, divisor_override=0), RuntimeError),
        (lambda f, t: f.avg_pool2d(t, 7), RuntimeError),                   # output too small
        (lambda f, t: f.adaptive_avg_pool2d(t.reshape(-1), 2), RuntimeError),
    ]
    for fn, exc in cases:
        with pytest.raises(exc):
            fn(F, x)
        with pytest.raises(exc):
            fn(EF, E(x))
