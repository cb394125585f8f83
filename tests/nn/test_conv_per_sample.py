"""The per-sample forward convolution (ember/nn/conv_kernels.conv_per_sample: im2col in an
(N, C*K, P) layout, one GEMM per sample written straight into NCHW), taken when no weight
gradient will read the im2col matrix: values against torch for 1-D and 2-D convolutions
(stride, padding, dilation, bias), float32/float64, under no_grad, with a frozen weight and
an input that requires grad (its gradient against torch), and with the kernels off."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF
from ember.nn import conv_kernels
from ember.nn import functional_im2col as FI

try:
    from ._nn_common import DTYPES, E, close
except ImportError:
    from _nn_common import DTYPES, E, close

CASES = [  # (input shape, weight shape, stride, padding, dilation)
    ((3, 4, 9, 11), (5, 4, 3, 3), 1, 1, 1),
    ((2, 3, 16, 16), (8, 3, 3, 3), 2, 1, 1),
    ((2, 6, 10, 7), (4, 6, 1, 1), 1, 0, 1),
    ((2, 3, 20, 20), (4, 3, 3, 3), 2, 0, 2),
    ((2, 2, 12, 12), (3, 2, 3, 2), (2, 1), (1, 0), (2, 1)),
    ((4, 3, 20), (6, 3, 5), 2, 2, 1),
    ((2, 3, 150), (4, 3, 5), 1, 2, 2),
    ((1, 5, 7, 7), (2, 5, 7, 7), 1, 0, 1),
    ((3, 8, 5, 6), (4, 8, 1, 1), 1, 0, 3),      # 1x1: the input is its own im2col
    ((3, 8, 9), (4, 8, 1), 1, 0, 1),
    ((2, 8, 5, 6), (4, 8, 1, 1), 2, 0, 1),      # 1x1, strided: gathered
    ((2, 8, 20, 16), (4, 8, 1, 1), 2, 0, 1),
    ((2, 8, 9, 9), (4, 8, 1, 1), 1, 0, 1),
]


def _rand(shape, dtype, seed):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(dtype)


def _conv(lib, x, w, b, stride, padding, dilation):
    F = torch.nn.functional if lib is torch else EF
    fn = F.conv1d if x.dim() == 3 else F.conv2d
    return fn(x, w, b, stride=stride, padding=padding, dilation=dilation)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_per_sample_no_grad(case, bias, tdt, edt):
    xs, ws, stride, padding, dilation = case
    tx, tw = _rand(xs, tdt, 1), _rand(ws, tdt, 2)
    tb = _rand((ws[0],), tdt, 3) if bias else None
    calls = []
    orig = conv_kernels.conv_per_sample

    def spy(*a, **k):
        r = orig(*a, **k)
        calls.append(r is not None)
        return r
    conv_kernels.conv_per_sample = spy
    try:
        with ember.no_grad():
            eout = _conv(ember, E(tx), E(tw), None if tb is None else E(tb), stride, padding,
                         dilation)
    finally:
        conv_kernels.conv_per_sample = orig
    tout = _conv(torch, tx, tw, tb, stride, padding, dilation)
    close(eout, tout, tol=(1e-4, 1e-5) if tdt is torch.float32 else None)
    assert eout.is_contiguous()
    if conv_kernels.LIB.function("im2col2d_f32") is not None:
        # the per-sample path ran, where each sample has enough output positions
        wide = int(np.prod(tout.shape[2:])) >= FI.PER_SAMPLE_MIN
        assert calls == ([True] if wide else [])
        # (the NumPy path, EMBER_EAGER_KERNELS=0, gives size-1 dims other strides)
        assert tuple(eout.stride()) == tuple(tout.stride())


@pytest.mark.parametrize("case", CASES)
def test_conv_per_sample_frozen_weight_input_grad(case):
    xs, ws, stride, padding, dilation = case
    tx = _rand(xs, torch.float64, 4).requires_grad_(True)
    tw, tb = _rand(ws, torch.float64, 5), _rand((ws[0],), torch.float64, 6)
    ex = E(tx)
    eout = _conv(ember, ex, E(tw), E(tb), stride, padding, dilation)
    tout = _conv(torch, tx, tw, tb, stride, padding, dilation)
    close(eout, tout)
    g = _rand(tuple(tout.shape), torch.float64, 7)
    tout.backward(g)
    eout.backward(E(g))
    close(ex.grad, tx.grad)


@pytest.mark.parametrize("case", CASES[:3])
def test_conv_per_sample_matches_kernels_off(case, monkeypatch):
    """The C path and the NumPy path (EMBER_EAGER_KERNELS=0's) agree."""
    xs, ws, stride, padding, dilation = case
    ex, ew = E(_rand(xs, torch.float64, 8)), E(_rand(ws, torch.float64, 9))
    with ember.no_grad():
        a = _conv(ember, ex, ew, None, stride, padding, dilation).numpy()
        import ember.ops.native as native
        monkeypatch.setattr(native, "enabled", False)
        b = _conv(ember, ex, ew, None, stride, padding, dilation).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_conv_training_grads_per_sample_input_grad(case, tdt, edt):
    """Training (input, weight and bias require grad): the forward keeps its im2col matrix
    for the weight gradient, the input gradient runs per sample (col2im of the (N, C*K, P)
    layout); all three against torch."""
    xs, ws, stride, padding, dilation = case
    tx = _rand(xs, tdt, 10).requires_grad_(True)
    tw = _rand(ws, tdt, 11).requires_grad_(True)
    tb = _rand((ws[0],), tdt, 12).requires_grad_(True)
    ex, ew, eb = E(tx), E(tw), E(tb)
    tout = _conv(torch, tx, tw, tb, stride, padding, dilation)
    eout = _conv(ember, ex, ew, eb, stride, padding, dilation)
    tol = (1e-4, 1e-4) if tdt is torch.float32 else None
    close(eout, tout, tol=tol)
    g = _rand(tuple(tout.shape), tdt, 13)
    tout.backward(g)
    eout.backward(E(g))
    for e, t, what in ((ex, tx, "input"), (ew, tw, "weight"), (eb, tb, "bias")):
        close(e.grad, t.grad, tol=tol, what=f"grad of {what}")
