"""Convolutions (conv1d/2d/3d, conv_transpose1d/2d, unfold/fold) against PyTorch: modules with
state copied from torch, outputs and every gradient in float32/float64, hypothesis over small
shapes, gradcheck/gradgradcheck in float64, and PyTorch's errors."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember import nn as enn
import ember.nn.functional as EF
from tests.nn._nn_common import DTYPES, E, close, pair, run_both

F32_TOL = (1e-4, 1e-5)      # sums over many taps: float32 rounding differs from mkldnn's


def _tol(tdt):
    return F32_TOL if tdt == torch.float32 else None


def _x(shape, tdt, seed=0):
    g = np.random.default_rng(seed)
    return torch.tensor(g.standard_normal(shape), dtype=tdt, requires_grad=True)


CONV_CASES = [
    # (class name, args, kwargs, input shape)
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, dilation=2, groups=2), (2, 4, 9)),
    ("Conv1d", (3, 2, 4), dict(padding="same", padding_mode="reflect"), (2, 3, 7)),
    ("Conv2d", (3, 5, 3), dict(padding=1), (2, 3, 6, 5)),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2,
                                    bias=False), (2, 4, 7, 6)),
    ("Conv2d", (2, 4, 3), dict(padding="same", dilation=2), (1, 2, 6, 7)),
    ("Conv2d", (2, 4, 2), dict(padding="same"), (1, 2, 5, 5)),        # asymmetric 'same'
    ("Conv2d", (2, 3, 3), dict(padding="valid", stride=2), (2, 2, 7, 7)),
    ("Conv2d", (2, 2, 3), dict(padding=2, padding_mode="circular"), (2, 2, 5, 4)),
    ("Conv2d", (2, 2, 3), dict(padding=(1, 2), padding_mode="replicate"), (2, 2, 5, 4)),
    ("Conv2d", (2, 4, 3), dict(padding=1, padding_mode="reflect", groups=2), (3, 2, 5, 4)),
    ("Conv2d", (3, 4, 3), dict(padding=1), (3, 6, 5)),                # unbatched
    ("Conv3d", (2, 4, (2, 3, 2)), dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2),
     (2, 2, 4, 5, 3)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2),
     (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, (3, 2)), dict(stride=(2, 3), padding=(1, 0),
                                             output_padding=(1, 2), groups=2, dilation=1),
     (2, 4, 4, 3)),
    ("ConvTranspose2d", (3, 2, 3), dict(stride=2, dilation=2, output_padding=1, bias=False),
     (2, 3, 3, 4)),
    ("ConvTranspose2d", (3, 2, 2), dict(), (3, 4, 4)),                # unbatched
]


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("name,args,kwargs,shape", CONV_CASES)
def test_conv_module_matches_torch(name, args, kwargs, shape, tdt, edt):
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs).to(tdt)
    em = getattr(enn, name)(*args, **kwargs, dtype=edt)
    pair(tm, em)
    run_both(tm, em, _x(shape, tdt), tol=_tol(tdt))
    assert repr(em) == repr(tm)


def test_conv_transpose_output_size():
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    em = enn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype=ember.float64)
    pair(tm, em)
    x = _x((1, 2, 4, 4), torch.float64)
    run_both(tm, em, x, output_size=(8, 8))
    with pytest.raises(ValueError):
        tm(x, output_size=(12, 12))
    with pytest.raises(ValueError):
        em(E(x), output_size=(12, 12))


def test_default_init_statistics():
    # kaiming_uniform_(a=sqrt(5)) on the weight, U(-1/sqrt(fan_in), ...) on the bias
    for m, fan_in in ((enn.Conv2d(4, 8, 3, groups=2), 2 * 9),
                      (enn.ConvTranspose2d(6, 4, 3), 4 * 9)):
        bound = 1 / np.sqrt(fan_in)
        w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
        assert np.abs(w).max() <= bound + 1e-7 and np.abs(b).max() <= bound + 1e-7
        assert w.std() > bound / 4          # it is filled, not left at zero


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 2), c=st.integers(1, 3), g=st.sampled_from([1, 2]),
       o=st.integers(1, 2), h=st.integers(3, 7), w=st.integers(3, 7), k=st.integers(1, 3),
       s=st.integers(1, 2), p=st.integers(0, 2), d=st.integers(1, 2), bias=st.booleans(),
       transposed_input=st.booleans())
def test_conv2d_hypothesis(n, c, g, o, h, w, k, s, p, d, bias, transposed_input):
    if (h + 2 * p - d * (k - 1) - 1) < 0 or (w + 2 * p - d * (k - 1) - 1) < 0:
        return
    rng = np.random.default_rng(1)
    tx = torch.tensor(rng.standard_normal((n, c * g, w, h) if transposed_input
                                          else (n, c * g, h, w)))
    if transposed_input:
        tx = tx.transpose(2, 3)          # a non-contiguous input
    tx.requires_grad_(True)
    tw = torch.tensor(rng.standard_normal((o * g, c, k, k)), requires_grad=True)
    tb = torch.tensor(rng.standard_normal(o * g), requires_grad=True) if bias else None
    ex, ew = E(tx), E(tw)
    eb = E(tb) if bias else None
    tout = torch.nn.functional.conv2d(tx, tw, tb, s, p, d, g)
    eout = EF.conv2d(ex, ew, eb, s, p, d, g)
    close(eout, tout)
    gt = torch.tensor(rng.standard_normal(tuple(tout.shape)))
    tout.backward(gt)
    eout.backward(E(gt))
    close(ex.grad, tx.grad, what="grad input")
    close(ew.grad, tw.grad, what="grad weight")
    if bias:
        close(eb.grad, tb.grad, what="grad bias")


def _gradchecks(fn, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    xs = tuple(ember.tensor(rng.standard_normal(s)).requires_grad_() for s in shapes)
    assert ember.autograd.gradcheck(fn, xs)
    assert ember.autograd.gradgradcheck(fn, xs)


def test_gradcheck_conv():
    _gradchecks(lambda x, w, b: EF.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
                (2, 4, 7), (4, 2, 2), (4,))
    _gradchecks(lambda x, w: EF.conv2d(x, w, stride=(2, 1), padding="valid", groups=2),
                (1, 2, 4, 3), (2, 1, 2, 2))
    _gradchecks(lambda x, w: EF.conv2d(x, w, padding="same", dilation=(1, 2)),
                (1, 2, 3, 4), (2, 2, 2, 2))
    _gradchecks(lambda x, w: EF.conv3d(x, w, padding=1), (1, 1, 2, 3, 2), (2, 1, 2, 2, 2))
    _gradchecks(lambda x, w, b: EF.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                    output_padding=1, groups=2),
                (1, 2, 2, 3), (2, 2, 3, 2), (4,))
    _gradchecks(lambda x, w: EF.conv_transpose1d(x, w, stride=3, dilation=2), (2, 2, 3),
                (2, 1, 2))


def test_double_backward_matches_torch():
    # gradient of a gradient norm (as in gradient penalties) through conv2d
    rng = np.random.default_rng(3)
    tx = torch.tensor(rng.standard_normal((2, 4, 5, 5)), requires_grad=True)
    tw = torch.tensor(rng.standard_normal((6, 2, 3, 3)), requires_grad=True)
    ex, ew = E(tx), E(tw)
    res = []
    for F, x, w, lib in ((torch.nn.functional, tx, tw, torch), (EF, ex, ew, ember)):
        y = F.conv2d(x, w, stride=2, padding=1, groups=2).tanh()
        gx, gw = lib.autograd.grad(y.sum(), (x, w), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        res.append((x.grad, w.grad))
    close(res[1][0], res[0][0], what="x.grad")
    close(res[1][1], res[0][1], what="w.grad")


@pytest.mark.parametrize("tdt,edt", DTYPES)
def test_unfold_fold_modules(tdt, edt):
    tm, em = torch.nn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=(1, 2)), \
        enn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    run_both(tm, em, _x((2, 3, 6, 5), tdt))
    assert repr(em) == repr(tm)
    tm, em = torch.nn.Fold((5, 6), 2, padding=1, stride=2), enn.Fold((5, 6), 2, padding=1,
                                                                      stride=2)
    run_both(tm, em, _x((2, 12, 12), tdt))
    run_both(tm, em, _x((12, 12), tdt))
    assert repr(em) == repr(tm)
    _gradchecks(lambda x: EF.unfold(x, 2, padding=1, stride=2), (1, 2, 3, 4))
    _gradchecks(lambda x: EF.fold(x, (3, 4), 2, padding=1, stride=2), (1, 8, 6))


def _both_raise(fn_t, fn_e, exc):
    with pytest.raises(exc) as et:
        fn_t()
    with pytest.raises(exc) as ee:
        fn_e()
    return str(et.value), str(ee.value)


def test_conv_errors():
    x, w = torch.randn(1, 4, 5, 5), torch.randn(6, 2, 3, 3)
    F = torch.nn.functional
    # wrong input dims
    _both_raise(lambda: F.conv2d(torch.randn(4, 5), w), lambda: EF.conv2d(E(torch.randn(4, 5)),
                                                                         E(w)), RuntimeError)
    # in_channels do not match weight * groups
    _both_raise(lambda: F.conv2d(x, w, groups=1), lambda: EF.conv2d(E(x), E(w), groups=1),
                RuntimeError)
    # padding='same' with stride > 1
    t, e = _both_raise(lambda: F.conv2d(x, w, stride=2, padding="same", groups=2),
                       lambda: EF.conv2d(E(x), E(w), stride=2, padding="same", groups=2),
                       RuntimeError)
    assert "strided" in t and "strided" in e
    _both_raise(lambda: F.conv2d(x, w, padding="full", groups=2),
                lambda: EF.conv2d(E(x), E(w), padding="full", groups=2), RuntimeError)
    _both_raise(lambda: F.conv2d(x, w, groups=0), lambda: EF.conv2d(E(x), E(w), groups=0),
                RuntimeError)
    _both_raise(lambda: F.conv2d(x, w, stride=0, groups=2),
                lambda: EF.conv2d(E(x), E(w), stride=0, groups=2), RuntimeError)
    # kernel larger than the padded input
    _both_raise(lambda: F.conv2d(torch.randn(1, 4, 2, 2), w, groups=2),
                lambda: EF.conv2d(E(torch.randn(1, 4, 2, 2)), E(w), groups=2), RuntimeError)
    # dtype mismatch
    _both_raise(lambda: F.conv2d(x.double(), w, groups=2),
                lambda: EF.conv2d(E(x.double()), E(w), groups=2), RuntimeError)
    # module constructor checks
    for kw in (dict(groups=4), dict(groups=0), dict(padding="same", stride=2),
               dict(padding="full"), dict(padding_mode="mirror")):
        _both_raise(lambda: torch.nn.Conv2d(6, 6, 3, **kw), lambda: enn.Conv2d(6, 6, 3, **kw),
                    ValueError)
    _both_raise(lambda: torch.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
                lambda: enn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), ValueError)
