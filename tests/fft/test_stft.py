"""Window functions, stft and istft against torch: values, dtypes, shapes, gradients through
stft and istft (random output weights), gradcheck, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import ember

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows(name, n, periodic, dtype):
    t = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
    e = getattr(ember, name)(n, periodic, dtype=getattr(ember, dtype))
    assert str(e.dtype)[6:] == str(t.dtype)[6:] and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)


def test_window_parameters_and_errors():
    np.testing.assert_allclose(ember.hamming_window(6, True, 0.5, 0.3).numpy(),
                               torch.hamming_window(6, True, 0.5, 0.3).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ember.kaiser_window(7, False, 3.0).numpy(),
                               torch.kaiser_window(7, False, 3.0).numpy(), rtol=1e-6)
    assert ember.hann_window(4).dtype is ember.float32
    assert ember.hann_window(4, requires_grad=True).requires_grad
    for call in (lambda lib: lib.hann_window(-1), lambda lib: lib.hann_window(4, dtype=lib.int64)):
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(RuntimeError):
            call(ember)


X = np.random.default_rng(0).standard_normal((2, 40))

STFT_CASES = [
    dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=6, window="hann"),
    dict(n_fft=16, center=False, normalized=True), dict(n_fft=8, onesided=False),
    dict(n_fft=8, pad_mode="constant"), dict(n_fft=10, pad_mode="replicate", hop_length=4),
    dict(n_fft=10, pad_mode="circular", window="hann"), dict(n_fft=12, window="hamming"),
]


def _window(lib, kw):
    kw = dict(kw)
    w = kw.get("window")
    if isinstance(w, str):
        kw["window"] = getattr(lib, w + "_window")(kw.get("win_length", kw["n_fft"]),
                                                   dtype=lib.float64)
    return kw


def _stft(lib, x, kw, one_d):
    t = lib.from_numpy(x[0].copy() if one_d else x.copy()).requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        S = lib.stft(t, return_complex=True, **_window(lib, kw))
    w = lib.from_numpy(np.random.default_rng(3).standard_normal(tuple(S.shape) + (2,)))
    (lib.view_as_real(S) * w).sum().backward()
    return S.detach(), t.grad


@pytest.mark.parametrize("kw", STFT_CASES)
@pytest.mark.parametrize("one_d", [False, True])
def test_stft(kw, one_d):
    (se, ge), (st, gt) = _stft(ember, X, kw, one_d), _stft(torch, X, kw, one_d)
    assert str(se.dtype)[6:] == str(st.dtype)[6:] and tuple(se.shape) == tuple(st.shape)
    np.testing.assert_allclose(se.numpy(), st.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-9, atol=1e-9)


ISTFT_CASES = [dict(n_fft=8, window="hann"),
               dict(n_fft=8, hop_length=3, win_length=6, window="hann", length=35),
               dict(n_fft=16, normalized=True, window="hann", length=50),
               dict(n_fft=8, onesided=False, window="hann"),
               dict(n_fft=10, hop_length=5, window="hamming", center=False)]


def _istft(lib, kw):
    kw = _window(lib, kw)
    length = kw.pop("length", None)
    t = lib.from_numpy(X.copy()).requires_grad_(True)
    S = lib.stft(t, return_complex=True, **kw)
    y = lib.istft(S, length=length, **kw)
    w = lib.from_numpy(np.random.default_rng(3).standard_normal(tuple(y.shape)))
    (y * w).sum().backward()
    return y.detach(), t.grad


@pytest.mark.parametrize("kw", ISTFT_CASES)
def test_istft_round_trip_and_gradients(kw):
    (ye, ge), (yt, gt) = _istft(ember, kw), _istft(torch, kw)
    assert tuple(ye.shape) == tuple(yt.shape) and str(ye.dtype)[6:] == str(yt.dtype)[6:]
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-8, atol=1e-9)


def test_stft_gradcheck():
    x = ember.from_numpy(X[0, :20].copy()).requires_grad_(True)
    w = ember.hann_window(8, dtype=ember.float64)
    assert ember.autograd.gradcheck(
        lambda t: ember.view_as_real(ember.stft(t, 8, 3, window=w, return_complex=True)), (x,))


def test_stft_return_complex_false_and_method():
    x = X[0].astype("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.stft(torch.from_numpy(x), 8, return_complex=False)
        e = ember.stft(ember.from_numpy(x), 8, return_complex=False)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.float32
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ember.from_numpy(x).stft(8, return_complex=True).numpy(),
                               torch.from_numpy(x).stft(8, return_complex=True).numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.stft(x, 8),
    lambda lib, x: lib.stft(x, 8, hop_length=0, return_complex=True),
    lambda lib, x: lib.stft(x, 8, win_length=9, return_complex=True),
    lambda lib, x: lib.stft(x, 8, window=lib.ones(5), return_complex=True),
    lambda lib, x: lib.stft(x, 128, return_complex=True, center=False),
    lambda lib, x: lib.istft(x, 8),
    lambda lib, x: lib.istft(lib.stft(x, 8, window=lib.zeros(8), return_complex=True), 8,
                             window=lib.zeros(8)),
])
def test_errors(call):
    x = torch.from_numpy(X[0].astype("float32"))
    with pytest.raises(RuntimeError):
        call(torch, x)
    with pytest.raises(RuntimeError):
        call(ember, ember.from_numpy(X[0].astype("float32")))
