"""Resampling and padding (interpolate/Upsample, pad and the padding layers, pixel_shuffle,
grid_sample, affine_grid) against PyTorch: outputs and gradients in float32/float64,
hypothesis over sizes, gradcheck/gradgradcheck in float64, and PyTorch's errors."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember import nn as enn
import ember.nn.functional as EF
from tests.nn._nn_common import DTYPES, E, close, run_both

F = torch.nn.functional


def _x(shape, tdt=torch.float64, seed=0):
    g = np.random.default_rng(seed)
    return torch.tensor(g.standard_normal(shape), dtype=tdt, requires_grad=True)


def _compare(tfn, efn, tinputs, tol=None):
    """Same inputs to both functions; compare the output and the gradient of each input."""
    einputs = [E(t) for t in tinputs]
    to, eo = tfn(*tinputs), efn(*einputs)
    close(eo, to, tol)
    g = torch.randn(to.shape, dtype=to.dtype)
    tg = torch.autograd.grad(to, tinputs, g, allow_unused=True)
    eg = ember.autograd.grad(eo, einputs, E(g), allow_unused=True)
    for i, (a, b) in enumerate(zip(eg, tg)):
        if b is None:
            assert a is None or not a.detach().numpy().any()
        else:
            close(a, b, tol, f"grad {i}")


INTERP = [
    ("nearest", (2, 3, 5, 4), dict(size=(7, 3))),
    ("nearest", (2, 3, 5), dict(scale_factor=2.5)),
    ("nearest", (1, 2, 3, 4, 2), dict(scale_factor=(2, 0.5, 1.5))),
    ("nearest-exact", (2, 3, 5, 4), dict(scale_factor=1.7)),
    ("linear", (2, 3, 5), dict(size=8, align_corners=True)),
    ("linear", (2, 3, 5), dict(scale_factor=0.6)),
    ("bilinear", (2, 3, 5, 4), dict(size=(7, 3))),
    ("bilinear", (2, 3, 5, 4), dict(size=(1, 9), align_corners=True)),
    ("bilinear", (2, 3, 5, 4), dict(scale_factor=(1.5, 2.3), recompute_scale_factor=True)),
    ("bilinear", (2, 3, 5, 4), dict(scale_factor=(1.5, 2.3))),
    ("bicubic", (2, 3, 5, 4), dict(size=(9, 3))),
    ("bicubic", (2, 3, 5, 4), dict(scale_factor=1.5, align_corners=True)),
    ("trilinear", (1, 2, 3, 4, 5), dict(scale_factor=2)),
    ("trilinear", (1, 2, 3, 4, 5), dict(size=(2, 5, 3), align_corners=True)),
    ("area", (2, 3, 7, 6), dict(size=(3, 4))),
]


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("mode,shape,kwargs", INTERP)
def test_interpolate(mode, shape, kwargs, tdt, edt):
    _compare(lambda x: F.interpolate(x, mode=mode, **kwargs),
             lambda x: EF.interpolate(x, mode=mode, **kwargs), [_x(shape, tdt)])


@pytest.mark.parametrize("args,kwargs,shape", [
    ((), dict(scale_factor=2), (2, 3, 4, 5)),
    ((), dict(size=(5, 7), mode="bilinear", align_corners=True), (2, 3, 4, 5)),
    ((), dict(scale_factor=(2.0, 1.5), mode="bicubic"), (1, 2, 4, 4)),
    ((), dict(scale_factor=2, mode="linear"), (2, 3, 4)),
])
def test_upsample_modules(args, kwargs, shape):
    tm, em = torch.nn.Upsample(*args, **kwargs), enn.Upsample(*args, **kwargs)
    run_both(tm, em, _x(shape))
    assert repr(em) == repr(tm)
    for tc, ec in ((torch.nn.UpsamplingNearest2d, enn.UpsamplingNearest2d),
                   (torch.nn.UpsamplingBilinear2d, enn.UpsamplingBilinear2d)):
        run_both(tc(scale_factor=2), ec(scale_factor=2), _x((1, 2, 3, 4)))
        assert repr(ec(size=(3, 4))) == repr(tc(size=(3, 4)))


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), oh=st.integers(1, 8), ow=st.integers(1, 8),
       mode=st.sampled_from(["nearest", "bilinear", "bicubic", "nearest-exact", "area"]),
       ac=st.booleans(), use_scale=st.booleans(), sf=st.floats(0.5, 3.0))
def test_interpolate_hypothesis(h, w, oh, ow, mode, ac, use_scale, sf):
    kw = dict(scale_factor=sf) if use_scale else dict(size=(oh, ow))
    if use_scale and (int(h * sf) < 1 or int(w * sf) < 1):
        return
    if mode in ("bilinear", "bicubic"):
        kw["align_corners"] = ac
    _compare(lambda x: F.interpolate(x, mode=mode, **kw),
             lambda x: EF.interpolate(x, mode=mode, **kw), [_x((2, 2, h, w))])


PADS = [
    ((1, 2, 3, 1), (2, 3, 5, 4)),
    ((3, 2), (2, 5, 4)),
    ((1, 0, 2, 1, 1, 1), (1, 2, 3, 4, 3)),
    ((2, 1), (3, 4)),
]


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad,shape", PADS)
def test_pad(pad, shape, mode, tdt, edt):
    if mode == "reflect" and len(shape) - len(pad) // 2 < 1:
        return
    _compare(lambda x: F.pad(x, pad, mode=mode), lambda x: EF.pad(x, pad, mode=mode),
             [_x(shape, tdt)])


def test_pad_negative_and_value():
    _compare(lambda x: F.pad(x, (-1, 2, 3, -2), value=1.5),
             lambda x: EF.pad(x, (-1, 2, 3, -2), value=1.5), [_x((2, 3, 5, 4))])
    _compare(lambda x: F.pad(x, (-1, 2, 3, -2), mode="circular"),
             lambda x: EF.pad(x, (-1, 2, 3, -2), mode="circular"), [_x((2, 3, 5, 4))])
    _compare(lambda x: F.pad(x, (1, 1, 0, 0, 2, 0)), lambda x: EF.pad(x, (1, 1, 0, 0, 2, 0)),
             [_x((2, 3, 5))])


@pytest.mark.parametrize("name,args,shape", [
    ("ZeroPad2d", ((1, 2, 0, 3),), (2, 3, 4)), ("ZeroPad1d", (2,), (2, 3, 4)),
    ("ConstantPad1d", (2, 3.5), (2, 4)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (1, 2, 3, 3)),
    ("ConstantPad3d", (1, 0.5), (1, 2, 2, 3, 2)),
    ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 2, 0, 2),), (1, 2, 3, 4)),
    ("ReflectionPad3d", (1,), (1, 1, 2, 3, 2)),
    ("ReplicationPad1d", ((3, 1),), (2, 3, 4)), ("ReplicationPad2d", (2,), (1, 2, 3, 4)),
    ("ReplicationPad3d", ((1, 0, 0, 1, 2, 0),), (1, 1, 2, 3, 2)),
    ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad2d", ((1, 2, 0, 2),), (1, 2, 3, 4)),
    ("CircularPad3d", (1,), (1, 1, 2, 3, 2)),
])
def test_padding_modules(name, args, shape):
    tm, em = getattr(torch.nn, name)(*args), getattr(enn, name)(*args)
    run_both(tm, em, _x(shape))
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("tdt,edt", DTYPES)
def test_pixel_shuffle(tdt, edt):
    for tm, em, shape in ((torch.nn.PixelShuffle(2), enn.PixelShuffle(2), (2, 8, 3, 4)),
                          (torch.nn.PixelShuffle(3), enn.PixelShuffle(3), (9, 2, 2)),
                          (torch.nn.PixelUnshuffle(2), enn.PixelUnshuffle(2), (2, 2, 6, 4)),
                          (torch.nn.PixelUnshuffle(2), enn.PixelUnshuffle(2), (3, 1, 2, 4, 2))):
        run_both(tm, em, _x(shape, tdt))
        assert repr(em) == repr(tm)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("ac", [True, False])
@pytest.mark.parametrize("pm", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("md", ["bilinear", "nearest"])
def test_grid_sample(md, pm, ac, tdt, edt):
    x = _x((2, 3, 5, 4), tdt)
    grid = torch.tensor(np.random.default_rng(1).uniform(-1.6, 1.6, (2, 3, 6, 2)), dtype=tdt,
                        requires_grad=True)
    tol = (1e-4, 1e-5) if tdt == torch.float32 else None
    _compare(lambda a, g: F.grid_sample(a, g, mode=md, padding_mode=pm, align_corners=ac),
             lambda a, g: EF.grid_sample(a, g, mode=md, padding_mode=pm, align_corners=ac),
             [x, grid], tol)


@pytest.mark.parametrize("ac", [True, False])
def test_affine_grid(ac):
    _compare(lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=ac),
             lambda t: EF.affine_grid(t, (2, 3, 4, 5), align_corners=ac), [_x((2, 2, 3))])
    _compare(lambda t: F.affine_grid(t, (2, 3, 4, 5, 3), align_corners=ac),
             lambda t: EF.affine_grid(t, (2, 3, 4, 5, 3), align_corners=ac), [_x((2, 3, 4))])
    # affine_grid + grid_sample: a spatial transformer's path
    th, x = _x((2, 2, 3), seed=1), _x((2, 3, 5, 4), seed=2)
    _compare(lambda t, a: F.grid_sample(a, F.affine_grid(t, (2, 3, 4, 4), align_corners=ac),
                                        align_corners=ac),
             lambda t, a: EF.grid_sample(a, EF.affine_grid(t, (2, 3, 4, 4), align_corners=ac),
                                         align_corners=ac), [th, x])


def test_gradcheck_resampling():
    rng = np.random.default_rng(0)

    def t(*s):
        return ember.tensor(rng.standard_normal(s), requires_grad=True)
    x = t(1, 2, 3, 4)
    grid = ember.tensor(rng.uniform(-1.2, 1.2, (1, 2, 3, 2)), requires_grad=True)
    for fn, inputs in (
            (lambda a: EF.interpolate(a, size=(4, 6), mode="bilinear"), (x,)),
            (lambda a: EF.interpolate(a, scale_factor=1.5, mode="bicubic",
                                      align_corners=True), (x,)),
            (lambda a: EF.interpolate(a, size=(5, 3), mode="nearest"), (x,)),
            (lambda a: EF.pad(a, (1, 2, 2, 1), mode="reflect"), (x,)),
            (lambda a: EF.pad(a, (1, 2, 2, 1), mode="circular"), (x,)),
            (lambda a: EF.pad(a, (1, 2, -1, 1), value=2.0), (x,)),
            (lambda a: EF.pixel_shuffle(EF.pixel_unshuffle(a, 1), 1), (x,)),
            (lambda a, g: EF.grid_sample(a, g, align_corners=False), (x, grid)),
            (lambda a, g: EF.grid_sample(a, g, padding_mode="border", align_corners=True),
             (x, grid)),
            (lambda th: EF.affine_grid(th, (1, 1, 2, 3), align_corners=False),
             (t(1, 2, 3),))):
        assert ember.autograd.gradcheck(fn, inputs)
        assert ember.autograd.gradgradcheck(fn, inputs)


def test_resample_errors():
    x = torch.randn(1, 4, 5, 5)
    cases = [
        (lambda f, t: f.interpolate(t), ValueError),
        (lambda f, t: f.interpolate(t, size=3, scale_factor=2), ValueError),
        (lambda f, t: f.interpolate(t, size=3, align_corners=True), ValueError),
        (lambda f, t: f.interpolate(t, size=3, mode="linear"), NotImplementedError),
        (lambda f, t: f.pad(t, (1,)), RuntimeError),
        (lambda f, t: f.pad(t, (5, 5, 0, 0), mode="reflect"), RuntimeError),
        (lambda f, t: f.pad(t, (1, 1), mode="reflect"), NotImplementedError),
        (lambda f, t: f.pixel_shuffle(t, 3), RuntimeError),
        (lambda f, t: f.pixel_unshuffle(t, 2), RuntimeError),
        (lambda f, t: f.grid_sample(t, t[:, :2].permute(0, 2, 3, 1), mode="foo",
                                    align_corners=False), ValueError),
        (lambda f, t: f.affine_grid(t[0, :2, :3], (1, 1, 2, 2, 2, 2), align_corners=False),
         NotImplementedError),
        (lambda f, t: f.fold(t.reshape(1, 5, 20), (3, 3), 2), RuntimeError),
    ]
    for fn, exc in cases:
        with pytest.raises(exc):
            fn(F, x)
        with pytest.raises(exc):
            fn(EF, E(x))
