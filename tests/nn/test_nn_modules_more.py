"""The nn layers and nn.functional names added with functional_extra.py, pooling_extra.py,
misc.py, lazy.py and adaptive.py, against torch: values, gradients, indices, reprs, the
lazy modules' materialisation, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember import nn

RNG = np.random.default_rng(0)


def _both(a, grad=True):
    return torch.tensor(a, requires_grad=grad), ember.tensor(a, requires_grad=grad)


def _close(e, t, tol=1e-9):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _check(tfn, efn, *arrays, tol=1e-9):
    """Values and gradients (of a weighted sum) of tfn(*torch) vs efn(*ember)."""
    ts, es = zip(*[_both(a) for a in arrays])
    to, eo = tfn(*ts), efn(*es)
    _close(eo, to, tol)
    w = RNG.standard_normal(tuple(to.shape))
    (to * torch.tensor(w)).sum().backward()
    (eo * ember.tensor(w)).sum().backward()
    for t, e in zip(ts, es):
        _close(e.grad, t.grad, tol)


@pytest.mark.parametrize("nd,kw", [(1, dict(kernel_size=3)), (1, dict(kernel_size=2, stride=1)),
                                   (2, dict(kernel_size=(2, 3), ceil_mode=True)),
                                   (2, dict(kernel_size=2, stride=1)),
                                   (3, dict(kernel_size=2))])
@pytest.mark.parametrize("p", [2.0, 1.5])
def test_lp_pool(nd, kw, p):
    x = RNG.uniform(0.1, 2.0, (2, 3) + (7,) * nd)
    name = f"lp_pool{nd}d"
    _check(lambda t: getattr(TF, name)(t, p, **kw), lambda e: getattr(EF, name)(e, p, **kw), x)
    tm, em = getattr(torch.nn, f"LPPool{nd}d")(p, **kw), getattr(nn, f"LPPool{nd}d")(p, **kw)
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("nd,k,out", [(2, 3, (4, 5)), (2, (2, 3), (5, 4)), (3, 2, (3, 4, 3))])
def test_fractional_max_pool(nd, k, out):
    x = RNG.standard_normal((2, 3) + (8, 7, 6)[:nd])
    s = RNG.uniform(size=(2, 3, nd))
    fn = f"fractional_max_pool{nd}d"
    tx, ex = _both(x)
    to, ti = getattr(TF, fn)(tx, k, output_size=out, return_indices=True,
                             _random_samples=torch.tensor(s))
    eo, ei = getattr(EF, fn)(ex, k, output_size=out, return_indices=True,
                             _random_samples=ember.tensor(s))
    _close(eo, to)
    assert (ei.numpy() == ti.numpy()).all()
    to.sum().backward()
    eo.sum().backward()
    _close(ex.grad, tx.grad)
    # output_ratio, the module, unbatched input
    tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(k, output_ratio=0.5,
                                                      _random_samples=torch.tensor(s[:1]))
    em = getattr(nn, f"FractionalMaxPool{nd}d")(k, output_ratio=0.5,
                                                _random_samples=ember.tensor(s[:1]))
    _close(em(ember.tensor(x[0])), tm(torch.tensor(x[0])))
    eo, ei = getattr(EF, f"{fn}_with_indices")(ex, k, output_size=out,
                                                _random_samples=ember.tensor(s))
    assert tuple(eo.shape) == tuple(ei.shape) == (2, 3) + out


def test_fractional_errors_like_torch():
    for lib in (torch, nn):
        cls = lib.FractionalMaxPool2d if lib is nn else lib.nn.FractionalMaxPool2d
        for kw, msg in ((dict(), "requires specifying either an output size, or a pooling "
                                 "ratio"),
                        (dict(output_size=2, output_ratio=0.5), "only one of output_size"),
                        (dict(output_ratio=1.5), r"output_ratio must be between 0 and 1 \(got "
                                                 r"1.5\)")):
            with pytest.raises(ValueError, match=msg):
                cls(2, **kw)
    for lib, F in ((torch, TF), (ember, EF)):
        with pytest.raises(RuntimeError, match="pool height 3 too large relative to input "
                                               "height 4"):
            F.fractional_max_pool2d(lib.ones(1, 1, 4, 6), 3, output_size=3)


def test_max_unpool3d_and_with_indices_forms():
    x = RNG.standard_normal((1, 2, 4, 4, 4))
    tx, ex = _both(x)
    to, ti = TF.max_pool3d_with_indices(tx, 2)
    eo, ei = EF.max_pool3d_with_indices(ex, 2)
    _close(eo, to)
    assert (ei.numpy() == ti.numpy()).all()
    tu, eu = TF.max_unpool3d(to, ti, 2), EF.max_unpool3d(eo, ei, 2)
    _close(eu, tu)
    tu.sum().backward()
    eu.sum().backward()
    _close(ex.grad, tx.grad)
    _close(nn.MaxUnpool3d(2)(eo, ei), torch.nn.MaxUnpool3d(2)(to, ti))
    assert repr(nn.MaxUnpool3d(2)) == repr(torch.nn.MaxUnpool3d(2))
    for nd in (1, 2, 3):
        a = RNG.standard_normal((2, 3) + (5,) * nd)
        t = getattr(TF, f"adaptive_max_pool{nd}d_with_indices")(torch.tensor(a), 2)
        e = getattr(EF, f"adaptive_max_pool{nd}d_with_indices")(ember.tensor(a), 2)
        _close(e[0], t[0])
        assert (e[1].numpy() == t[1].numpy()).all()


def test_channel_shuffle_and_pdist():
    x = RNG.standard_normal((2, 6, 3))
    _check(lambda t: TF.channel_shuffle(t, 3), lambda e: EF.channel_shuffle(e, 3), x)
    _close(nn.ChannelShuffle(2)(ember.tensor(x)), torch.nn.ChannelShuffle(2)(torch.tensor(x)))
    assert repr(nn.ChannelShuffle(2)) == repr(torch.nn.ChannelShuffle(2))
    for lib, F in ((torch, TF), (ember, EF)):
        for args, msg in (((lib.ones(1, 5, 2), 2), "Number of channels must be divisible by "
                                                   "groups. Got 5 channels and 2 groups."),
                          ((lib.ones(1, 4, 2), 0), "Number of groups to divide channels in "
                                                   "must be positive. Value of groups:0"),
                          ((lib.ones(4), 2), "channel_shuffle expects input with > 2 dims")):
            with pytest.raises(RuntimeError, match=msg):
                F.channel_shuffle(*args)
    for p in (2, 1, 3.5):
        _check(lambda t: TF.pdist(t, p), lambda e: EF.pdist(e, p), RNG.standard_normal((5, 3)))
    for F, lib in ((TF, torch), (EF, ember)):
        with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
            F.pdist(lib.ones(2, 2, 2))


def test_rrelu_and_inplace_activations():
    x = RNG.standard_normal((4, 5))
    _check(lambda t: TF.rrelu(t, 0.1, 0.3), lambda e: EF.rrelu(e, 0.1, 0.3), x)
    ex = ember.tensor(x)
    y = EF.rrelu(ex, 0.1, 0.3, training=True)
    neg = x < 0
    ratio = y.numpy()[neg] / x[neg]
    assert (ratio >= 0.1).all() and (ratio <= 0.3).all() and len(np.unique(ratio)) > 1
    np.testing.assert_array_equal(y.numpy()[~neg], x[~neg])
    m = nn.RReLU(0.1, 0.3).eval()
    _close(m(ember.tensor(x)), torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(x)))
    assert repr(nn.RReLU(0.1, 0.3, True)) == repr(torch.nn.RReLU(0.1, 0.3, True))
    for name in ("rrelu_", "celu_", "selu_"):
        t, e = torch.tensor(x), ember.tensor(x)
        r = getattr(EF, name)(e)
        getattr(TF, name)(t)
        assert r is e
        _close(e, t)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        EF.rrelu(ember.ones(2, dtype=ember.int64))


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss(swap):
    a, p, n = (RNG.standard_normal((4, 3)) for _ in range(3))

    def cos(lib):
        return lambda u, v: 1 - lib.nn.functional.cosine_similarity(u, v)
    for dist in (None, "cos"):
        for red in ("mean", "sum", "none"):
            _check(lambda *t: TF.triplet_margin_with_distance_loss(
                       *t, distance_function=cos(torch) if dist else None, swap=swap,
                       reduction=red, margin=0.5),
                   lambda *e: EF.triplet_margin_with_distance_loss(
                       *e, distance_function=cos(ember) if dist else None, swap=swap,
                       reduction=red, margin=0.5), a, p, n)
    tm, em = torch.nn.TripletMarginWithDistanceLoss(), nn.TripletMarginWithDistanceLoss()
    assert repr(em) == repr(tm)
    _close(em(*map(ember.tensor, (a, p, n))), tm(*map(torch.tensor, (a, p, n))))
    for lib in (torch.nn, nn):
        with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0"):
            lib.TripletMarginWithDistanceLoss(margin=0)
    for lib, F in ((torch, TF), (ember, EF)):
        with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D"):
            F.triplet_margin_with_distance_loss(lib.ones(2, 3), lib.ones(3), lib.ones(2, 3))
        with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
            F.triplet_margin_with_distance_loss(lib.ones(2), lib.ones(2), lib.ones(2), margin=0)


def test_conv_tbc_softmax2d_distances():
    x, w, b = RNG.standard_normal((6, 2, 3)), RNG.standard_normal((3, 3, 4)), \
        RNG.standard_normal(4)
    for pad in (0, 1):
        _check(lambda *t: TF.conv_tbc(*t, pad), lambda *e: EF.conv_tbc(*e, pad), x, w, b)
    img = RNG.standard_normal((2, 3, 4, 4))
    _check(torch.nn.Softmax2d(), nn.Softmax2d(), img)
    _check(torch.nn.Softmax2d(), nn.Softmax2d(), img[0])
    for lib in (torch.nn, nn):
        with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 1D"):
            lib.Softmax2d()(ember.ones(2) if lib is nn else torch.ones(2))
    u, v = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    _check(torch.nn.CosineSimilarity(dim=1), nn.CosineSimilarity(dim=1), u, v)
    _check(torch.nn.PairwiseDistance(p=1.5, keepdim=True), nn.PairwiseDistance(p=1.5,
                                                                               keepdim=True), u, v)


def test_cross_map_lrn2d_nllloss2d_container():
    x = RNG.standard_normal((2, 7, 3, 3))
    for size in (3, 4, 5, 7):
        _check(torch.nn.CrossMapLRN2d(size, 0.1, 0.6, 2), nn.CrossMapLRN2d(size, 0.1, 0.6, 2), x)
    tx, ex = _both(x)
    _close(nn.CrossMapLRN2d(1)(ex), torch.nn.CrossMapLRN2d(1)(tx))
    with pytest.raises(RuntimeError, match="exceeds dimension size"):     # torch's backward
        torch.nn.CrossMapLRN2d(1)(tx).sum().backward()
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        nn.CrossMapLRN2d(1)(ex).sum().backward()
    assert repr(nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 2D"):
        nn.CrossMapLRN2d(3)(ember.ones(2, 3))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        m = nn.NLLLoss2d()
    logits = RNG.standard_normal((2, 3, 2, 2))
    tgt = RNG.integers(0, 3, (2, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = torch.nn.NLLLoss2d()(torch.tensor(logits), torch.tensor(tgt))
    _close(m(ember.tensor(logits), ember.tensor(tgt)), tl)
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(c) == repr(torch.nn.Container(a=torch.nn.Linear(1, 1)))


@pytest.mark.parametrize("name,args,shape", [
    ("LazyConv1d", (4, 3), (2, 3, 7)), ("LazyConv1d", (4, 3), (3, 7)),
    ("LazyConv2d", (4, 3), (1, 2, 5, 5)),
    ("LazyConv3d", (2, 2), (1, 2, 3, 3, 3)), ("LazyConvTranspose1d", (4, 2), (1, 3, 5)),
    ("LazyConvTranspose2d", (6, 3), (1, 4, 5, 5)), ("LazyConvTranspose3d", (2, 2), (1, 2, 2, 2, 2)),
    ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 2, 2)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (), (2, 3, 4)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)), ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))])
def test_lazy_modules(name, args, shape):
    kw = {"groups": 2} if name == "LazyConvTranspose2d" else {}
    if name == "LazyInstanceNorm2d":
        kw = {"affine": True, "track_running_stats": True}
    tm, em = getattr(torch.nn, name)(*args, **kw), getattr(nn, name)(*args, **kw)
    assert repr(em).split("(")[0] == repr(tm).split("(")[0] == name
    x = RNG.standard_normal(shape).astype(np.float32)
    tm(torch.tensor(x))
    em(ember.tensor(x))
    assert type(em).__name__ == type(tm).__name__ == name[4:]
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert tuple(em.state_dict()[k].shape) == tuple(v.shape), k
    # with torch's initial values, the two compute the same
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x2 = RNG.standard_normal(shape).astype(np.float32)
    _close(em(ember.tensor(x2)), tm(torch.tensor(x2)), 1e-4)


def test_lazy_errors_and_uninitialized_buffer():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) "
                                               "input to LazyConv2d"):
            lib.nn.LazyConv2d(4, 3)(lib.ones(3, 5))
        m = lib.nn.LazyBatchNorm1d()
        assert repr(m.running_mean) == "<UninitializedBuffer>"
        assert isinstance(m.running_mean, lib.nn.UninitializedBuffer)
        assert isinstance(m.weight, lib.nn.UninitializedParameter)


def test_adaptive_log_softmax_with_loss():
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((6, 16)).astype(np.float32)
    tgt = np.array([0, 5, 19, 3, 12, 9])
    tx, ex = _both(x)
    to, tl = tm(tx, torch.tensor(tgt))
    eo, el = em(ex, ember.tensor(tgt))
    _close(eo, to, 1e-5)
    _close(el, tl, 1e-5)
    tl.backward()
    el.backward()
    _close(ex.grad, tx.grad, 1e-5)
    for (k, tp), ep in zip(tm.named_parameters(), em.parameters()):
        _close(ep.grad, tp.grad, 1e-5)
    _close(em.log_prob(ember.tensor(x)), tm.log_prob(torch.tensor(x)), 1e-5)
    assert (em.predict(ember.tensor(x)).numpy() == tm.predict(torch.tensor(x)).numpy()).all()
    o1, _ = em(ember.tensor(x[0]), ember.tensor(tgt[0]))
    assert o1.dim() == 0
    for lib, m in ((torch, tm), (ember, em)):
        with pytest.raises(RuntimeError, match="Target values should be in \\[0, 19\\]"):
            m(lib.ones(2, 16), lib.tensor([0, 20]))
        with pytest.raises(RuntimeError, match="Input and target should have the same size"):
            m(lib.ones(2, 16), lib.tensor([0]))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [10, 4])


def test_data_parallel_without_gpus_calls_the_module():
    torch.manual_seed(1)
    t = torch.nn.Linear(3, 2)
    e = nn.Linear(3, 2)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    td, ed = torch.nn.DataParallel(t), nn.DataParallel(e)
    assert ed.device_ids == td.device_ids == []
    assert list(ed.state_dict()) == list(td.state_dict()) == ["module.weight", "module.bias"]
    assert repr(ed) == repr(td)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    _check(td, ed, x, tol=1e-6)


def test_factory_kwargs():
    for lib in (torch, ember):
        f = lib.nn.factory_kwargs
        assert f(None) == {}
        assert f({"dtype": lib.float64, "factory_kwargs": {"device": "cpu"}}) == \
            {"dtype": lib.float64, "device": "cpu"}
        with pytest.raises(TypeError, match="unexpected kwargs"):
            f({"bias": True})
        with pytest.raises(TypeError, match="dtype specified twice"):
            f({"dtype": lib.float32, "factory_kwargs": {"dtype": lib.float64}})


def test_functional_helpers():
    assert EF.GRID_SAMPLE_INTERPOLATION_MODES == TF.GRID_SAMPLE_INTERPOLATION_MODES
    assert EF.GRID_SAMPLE_PADDING_MODES == TF.GRID_SAMPLE_PADDING_MODES

    for F in (TF, EF):
        def yes(x, flag=False):
            """doc"""
            return ("yes", x)

        def no(x, flag=False):   # gets yes's docstring from boolean_dispatch
            return ("no", x)
        f = F.boolean_dispatch("flag", 1, False, yes, no, "mod", "fname")
        assert f(1) == ("no", 1) and f(1, True) == ("yes", 1) and f(1, flag=True) == ("yes", 1)
        assert f.__name__ == "fname" and f.__module__ == "mod" and f.__doc__ == "doc"
        assert no.__doc__ == "doc"
        with pytest.raises(RuntimeError, match="only one function can have a docstring"):
            F.boolean_dispatch("flag", 1, False, yes, yes, None, None)
        F.assert_int_or_pair(3, "k", "{} bad")
        F.assert_int_or_pair((1, 2), "k", "{} bad")
        with pytest.raises(AssertionError, match="k bad"):
            F.assert_int_or_pair((1, 2, 3), "k", "{} bad")
