"""ember.fft against torch.fft: values, dtypes and shapes for every transform with n / s /
dim / norm, gradients equal to torch's (random output weights) and gradcheck in float64,
fftfreq / rfftfreq / fftshift / ifftshift, and torch's errors for bad arguments."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6))
Z = X + 1j * RNG.standard_normal((4, 6))

ONE_D = [{}, {"n": 5}, {"n": 8, "dim": 0, "norm": "ortho"}, {"norm": "forward"},
         {"norm": "backward", "dim": -2}]
N_D = [{}, {"s": (3, 5)}, {"s": (5, 4), "dim": (1, 0), "norm": "ortho"}, {"norm": "forward"},
       {"s": (-1, 4)}, {"dim": (0,)}]


def _cmp(name, arr, dtype, kw):
    t = getattr(torch.fft, name)(torch.from_numpy(arr.astype(dtype)), **kw)
    e = getattr(ember.fft, name)(ember.from_numpy(arr.astype(dtype)), **kw)
    assert str(e.dtype)[6:] == str(t.dtype)[6:]
    assert tuple(e.shape) == tuple(t.shape)
    tol = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    np.testing.assert_allclose(e.resolve_conj().numpy(), t.resolve_conj().numpy(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", ONE_D)
@pytest.mark.parametrize("name,src", [("fft", "r"), ("fft", "c"), ("ifft", "c"), ("ifft", "r"),
                                      ("rfft", "r"), ("ihfft", "r"), ("irfft", "c"),
                                      ("hfft", "c")])
@pytest.mark.parametrize("prec", ["single", "double"])
def test_one_dim(name, src, kw, prec):
    arr, dt = (X, {"single": "float32", "double": "float64"}[prec]) if src == "r" else \
        (Z, {"single": "complex64", "double": "complex128"}[prec])
    _cmp(name, arr, dt, kw)


@pytest.mark.parametrize("kw", N_D)
@pytest.mark.parametrize("name,src", [("fft2", "c"), ("ifft2", "c"), ("fftn", "r"),
                                      ("ifftn", "c"), ("rfft2", "r"), ("rfftn", "r"),
                                      ("irfft2", "c"), ("irfftn", "c"), ("hfft2", "c"),
                                      ("hfftn", "c"), ("ihfft2", "r"), ("ihfftn", "r")])
def test_n_dim(name, src, kw):
    _cmp(name, X if src == "r" else Z, "float64" if src == "r" else "complex128", kw)


def test_integer_input_and_3d():
    a = np.arange(24).reshape(2, 3, 4)
    _cmp("fft", a, "int64", {})
    _cmp("rfftn", a, "int64", {"dim": (0, 2)})
    _cmp("fftn", a, "float32", {"s": (2, 5)})


def _grads(lib, name, arr, cplx, kw, seed=1):
    t = lib.from_numpy(arr.copy()).requires_grad_(True)
    y = getattr(lib.fft, name)(lib.view_as_complex(t) if cplx else t, **kw)
    if y.is_complex():
        y = lib.view_as_real(y.resolve_conj())
    w = lib.from_numpy(np.random.default_rng(seed).standard_normal(tuple(y.shape)))
    (y * w).sum().backward()
    return t.grad.numpy()


GRAD_CASES = [
    ("fft", 0, {}), ("fft", 0, {"n": 5}), ("fft", 0, {"norm": "ortho", "dim": 0, "n": 7}),
    ("fft", 1, {}), ("fft", 1, {"n": 8, "norm": "forward"}), ("ifft", 1, {"n": 3}),
    ("rfft", 0, {}), ("rfft", 0, {"n": 9, "norm": "ortho"}), ("rfft", 0, {"norm": "forward",
                                                                         "dim": 0}),
    ("irfft", 1, {}), ("irfft", 1, {"n": 5}), ("irfft", 1, {"n": 12, "norm": "ortho"}),
    ("irfft", 1, {"norm": "forward", "dim": 0}), ("hfft", 1, {}), ("hfft", 1, {"n": 7}),
    ("ihfft", 0, {}), ("ihfft", 0, {"n": 5, "norm": "ortho"}), ("fft2", 1, {"s": (3, 8)}),
    ("rfft2", 0, {"s": (5, 5), "norm": "ortho"}), ("irfft2", 1, {"s": (3, 7)}),
    ("irfftn", 1, {"s": (5, 4)}), ("hfftn", 1, {}), ("ihfftn", 0, {}),
    ("ifftn", 1, {"norm": "ortho"}),
]


@pytest.mark.parametrize("name,cplx,kw", GRAD_CASES)
def test_gradients_equal_torch(name, cplx, kw):
    arr = np.stack([X, Z.imag], -1) if cplx else X
    np.testing.assert_allclose(_grads(ember, name, arr, cplx, kw),
                               _grads(torch, name, arr, cplx, kw), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name,cplx,kw", [("rfft", 0, {"n": 7, "norm": "ortho"}),
                                          ("irfft", 1, {"n": 9}), ("fft", 1, {"dim": 0}),
                                          ("hfft", 1, {"n": 5}), ("ihfft", 0, {}),
                                          ("irfftn", 1, {"norm": "forward"})])
def test_gradcheck(name, cplx, kw):
    shape = (3, 4, 2) if cplx else (3, 5)
    x = ember.from_numpy(np.random.default_rng(2).standard_normal(shape)).requires_grad_(True)

    def f(t):
        y = getattr(ember.fft, name)(ember.view_as_complex(t) if cplx else t, **kw)
        return ember.view_as_real(y.resolve_conj()) if y.is_complex() else y
    assert ember.autograd.gradcheck(f, (x,))


def test_freqs_and_shifts():
    for n, d in ((5, 1.0), (6, 0.3), (1, 2.0)):
        for fn in ("fftfreq", "rfftfreq"):
            t, e = getattr(torch.fft, fn)(n, d), getattr(ember.fft, fn)(n, d)
            assert e.dtype is ember.float32
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    assert ember.fft.fftfreq(4, dtype=ember.float64).dtype is ember.float64
    a = np.arange(30).reshape(5, 6)
    for fn in ("fftshift", "ifftshift"):
        for dim in (None, 0, (1,), (0, 1), -1):
            t = getattr(torch.fft, fn)(torch.from_numpy(a), dim=dim)
            e = getattr(ember.fft, fn)(ember.from_numpy(a), dim=dim)
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    x = ember.from_numpy(X.copy()).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda t: ember.fft.fftshift(t, dim=1), (x,))


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.fft.fft(x, norm="foo"),
    lambda lib, x: lib.fft.fft(x, n=0),
    lambda lib, x: lib.fft.rfft(x + 0j),
    lambda lib, x: lib.fft.ihfft(x + 0j),
    lambda lib, x: lib.fft.fftn(x, s=(2, 3), dim=(0,)),
    lambda lib, x: lib.fft.fft(x, dim=2),
    lambda lib, x: lib.fft.fftn(x, dim=(0, 0)),
    lambda lib, x: lib.fft.irfft(x[:, :1] + 0j),
    lambda lib, x: lib.fft.fft(x[:, :0]),
    lambda lib, x: lib.fft.fft(x[0, 0]),
    lambda lib, x: lib.fft.fft(x.half()),
    lambda lib, x: lib.fft.fft2(x[0]),
])
def test_errors(call):
    with pytest.raises(Exception) as te:
        call(torch, torch.from_numpy(X.astype("float32")))
    with pytest.raises(Exception) as ee:
        call(ember, ember.from_numpy(X.astype("float32")))
    assert type(ee.value) is type(te.value), (ee.value, te.value)
    assert str(ee.value) == str(te.value)


def test_out_and_namespace():
    out = ember.empty(0, dtype=ember.complex128)
    r = ember.fft.fft(ember.from_numpy(X.copy()), out=out)
    assert r is out and tuple(out.shape) == (4, 6)
    assert ember.fft.Tensor is ember.Tensor
