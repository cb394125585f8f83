"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions against
torch 2.13: reference and chunked paths (values and gradients), K-dimensional weights, class
probabilities, the options' resolution rules, warnings and errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember import nn

RNG = np.random.default_rng(0)


def _close(e, t, tol=1e-9):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _run(x, w, tgt, b=None, cw=None, **kw):
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    tb = eb = None
    if b is not None:
        tb, eb = torch.tensor(b, requires_grad=True), ember.tensor(b, requires_grad=True)
    tcw = None if cw is None else torch.tensor(cw)
    ecw = None if cw is None else ember.tensor(cw)
    topt = kw.pop("options", None)
    eopt = None if topt is None else nn.LinearCrossEntropyOptions(**topt)
    topt = None if topt is None else torch.nn.LinearCrossEntropyOptions(**topt)
    to = TF.linear_cross_entropy(tx, tw, torch.tensor(tgt), linear_bias=tb, weight=tcw,
                                 options=topt, **kw)
    eo = EF.linear_cross_entropy(ex, ew, ember.tensor(tgt), linear_bias=eb, weight=ecw,
                                 options=eopt, **kw)
    _close(eo, to)
    to.sum().backward()
    eo.sum().backward()
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        if t is not None:
            _close(e.grad, t.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [None, dict(batch_chunk_size=2, chunking_method=None),
                                     dict()])
def test_values_and_gradients(reduction, options):
    x, w = RNG.standard_normal((7, 4)), RNG.standard_normal((5, 4))
    tgt = np.array([0, 1, 4, 2, -100, 3, 3])
    _run(x, w, tgt, reduction=reduction, options=options)
    _run(x, w, np.where(tgt < 0, 1, tgt), b=RNG.standard_normal(5), cw=RNG.uniform(0.5, 2, 5),
         reduction=reduction, options=options, ignore_index=3)
    _run(x[0], w, np.array(2), reduction=reduction, options=options)


def test_k_dimensional_probabilities_and_smoothing():
    x, w = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 2, 4))
    _run(x, w, RNG.integers(0, 5, (3, 2)), b=RNG.standard_normal((5, 2)))
    p = RNG.uniform(size=(3, 5))
    _run(x, RNG.standard_normal((5, 4)), p / p.sum(1, keepdims=True))
    _run(x, RNG.standard_normal((5, 4)), np.array([1, 0, 4]), label_smoothing=0.2)


def test_options_resolution_and_checks():
    for kw in (dict(), dict(batch_chunk_size=3), dict(chunking_method="aspect_ratio"),
               dict(chunking_method="aspect_ratio:4", acc_policy="accurate")):
        t = torch.nn.LinearCrossEntropyOptions(**kw)
        e = nn.LinearCrossEntropyOptions(**kw)
        for args in ((64, 8, 100), (7, 4, 5), (1000, 16, 50000)):
            ta = t._adjust(*args, torch.float32, torch.device("cpu"))
            ea = e._adjust(*args, ember.float32, ember.device("cpu"))
            assert (ea.batch_chunk_size, ea.chunking_method, ea.acc_policy) == \
                (ta.batch_chunk_size, ta.chunking_method, ta.acc_policy)
    assert repr(nn.LinearCrossEntropyOptions()) == repr(torch.nn.LinearCrossEntropyOptions())
    for kw, msg in ((dict(acc_policy="x"), "invalid acc_policy: 'x'"),
                    (dict(chunking_method="ratio"), "invalid chunking_method: 'ratio'"),
                    (dict(batch_chunk_size=0), "batch_chunk_size must be positive int")):
        for lib in (torch.nn, nn):
            with pytest.raises(ValueError, match=msg):
                lib.LinearCrossEntropyOptions(**kw)
    for lib in (torch, ember):
        o = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio")
        with pytest.raises(ValueError, match="give different chunk sizes"):
            lib.nn.functional.linear_cross_entropy(lib.ones(8, 4), lib.ones(5, 4),
                                                   lib.zeros(8, dtype=lib.int64), options=o)


def test_errors_warnings_and_module():
    for lib in (torch, ember):
        F = lib.nn.functional
        for args, msg in (((lib.ones(2, 2, 3), lib.ones(4, 3), lib.zeros(2, dtype=lib.int64)),
                           "expected input with dimensionality 1 or 2, got 3"),
                          ((lib.ones(2, 3), lib.ones(3), lib.zeros(2, dtype=lib.int64)),
                           "expected linear_weight with dimensionality at least 2"),
                          ((lib.ones(2, 3), lib.ones(4, 2), lib.zeros(2, dtype=lib.int64)),
                           "expected equal input and linear_weight last dimensions")):
            with pytest.raises(RuntimeError, match=msg):
                F.linear_cross_entropy(*args)
        with pytest.warns(UserWarning, match="``options`` ignored"):
            F.linear_cross_entropy(lib.ones(2, 3), lib.ones(4, 3), lib.zeros(2, dtype=lib.int64),
                                   label_smoothing=0.1,
                                   options=lib.nn.LinearCrossEntropyOptions())
    torch.manual_seed(0)
    tm = torch.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True)
    em = nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True)
    assert repr(em) == repr(tm) and list(em.state_dict()) == list(tm.state_dict())
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    tgt = RNG.integers(0, 5, (3, 2))
    _close(em(ember.tensor(x), ember.tensor(tgt)), tm(torch.tensor(x), torch.tensor(tgt)), 1e-6)
    for lib in (torch.nn, nn):
        with pytest.raises(RuntimeError, match="expected label_smoothing to be in range"):
            lib.LinearCrossEntropyLoss(4, 5, label_smoothing=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LinearCrossEntropyLoss(4, 5)
