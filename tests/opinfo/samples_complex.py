"""Samples of the complex-number ops (ember/ops/complex_ops.py), the FFT ops (ember.fft,
registered as ``fft_<name>``), the window functions and stft / istft; and the complex
samples every generic pointwise sampler adds (COMPLEX_UNARY / COMPLEX_BINARY)."""
try:
    from ._make import L, S, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import L, S, T

c23, c34 = T((2, 3), "complex64"), T((3, 4), "complex128", "T")
r34, r46 = T((3, 4)), T((4, 6), "float64")
pairs = T((3, 2), "float64")          # the last dim of size 2 view_as_complex needs

# one more sample each generic pointwise sampler adds: complex operands (torch either
# computes them or refuses them; test_values checks both alike)
COMPLEX_UNARY = [S(T((2, 3), "complex64", lo=0.2, hi=1.5)),
                 S(T((3, 2), "complex128", "T", lo=0.2, hi=1.5))]
COMPLEX_BINARY = [S(T((2, 3), "complex64", lo=0.5, hi=1.5), T((3,), "complex64", lo=0.5,
                                                                hi=1.5)),
                  S(T((2, 2), "float64", lo=0.5, hi=1.5), T((2, 2), "complex128", lo=0.5,
                                                              hi=1.5))]


def _hann(n):
    return L(lambda lib: lib.hann_window(n, dtype=lib.float64))


def _one_d(name, src):
    x = T((4, 6), "float64") if src == "r" else T((4, 6), "complex128")
    return [S(x), S(x, 5), S(x, 8, 0, "ortho"), S(x, norm="forward"),
            S(T((3, 5), "float32" if src == "r" else "complex64", "T"), dim=0)]


def _n_dim(name, src):
    x = T((4, 6), "float64") if src == "r" else T((4, 6), "complex128")
    return [S(x), S(x, (3, 5)), S(x, (5, 4), (1, 0), "ortho"), S(x, norm="forward"),
            S(T((2, 3, 4), "float32" if src == "r" else "complex64", "step"), dim=(0, 2))]


SPECIAL = {
    "real": [S(c23), S(c34), S(r34)],
    "imag": [S(c23), S(c34), S(r34)],
    "view_as_real": [S(c23), S(c34), S(r34)],
    "view_as_complex": [S(pairs), S(T((2, 3, 2), "float32")), S(T((3, 4)))],
    "adjoint": [S(c23), S(T((2, 2, 3), "complex128", "T")), S(r34)],
    **{f"fft_{n}": _one_d(n, "r") for n in ("fft", "rfft", "ihfft")},
    **{f"fft_{n}": _one_d(n, "c") for n in ("ifft", "irfft", "hfft")},
    **{f"fft_{n}": _n_dim(n, "r") for n in ("fftn", "rfft2", "rfftn", "ihfft2", "ihfftn")},
    **{f"fft_{n}": _n_dim(n, "c") for n in ("fft2", "ifft2", "ifftn", "irfft2", "irfftn",
                                              "hfft2", "hfftn")},
    "fft_fftfreq": [S(5), S(6, 0.3), S(4, dtype=L(lambda lib: lib.float64))],
    "fft_rfftfreq": [S(5), S(6, 0.3), S(4, dtype=L(lambda lib: lib.float64))],
    "fft_fftshift": [S(r46), S(r46, 0), S(T((3, 5), "complex64"), dim=(0, 1))],
    "fft_ifftshift": [S(r46), S(r46, -1), S(T((3, 5), "complex64"), dim=(1,))],
    **{w: [S(0), S(1), S(5), S(8, False), S(6, dtype=L(lambda lib: lib.float64))]
       for w in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window")},
    "stft": [S(T((20,), "float64"), 8, return_complex=True),
             S(T((2, 20), "float64"), 8, 3, 6, _hann(6), return_complex=True),
             S(T((20,), "float64"), 8, window=_hann(8), center=False, normalized=True,
               return_complex=True),
             S(T((20,), "float64"), 8, return_complex=True, onesided=False),
             S(T((20,), "float64"), 8)],
    "istft": [S(T((5, 11), "complex128"), 8, window=_hann(8)),
              S(T((2, 5, 9), "complex128"), 8, 2, window=_hann(8), length=14)],
}

# polar's derivative (torch's formula, through sgn(result)) holds for abs > 0 only
DOMAINS = {"polar": [dict(lo=0.2, hi=3.0), {}]}

# private ops reached through public ones
COVERED_VIA = {"_fft_c2c": "fft_fft", "_fft_r2c": "fft_rfft", "_fft_c2r": "fft_irfft"}
