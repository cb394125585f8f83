"""ember.fft: torch.fft's discrete Fourier transforms, with gradients.

Each function resolves `n` / `s` / `dim` / `norm` as torch does, resizes the input (zero
padding or trimming) and calls one of the three kernel ops of ember/ops/spectral.py
(complex-to-complex, real-to-complex, complex-to-real), whose derivatives are the adjoint
transforms. Real inputs give complex results of the matching precision (float32 ->
complex64); integers are first converted to the default dtype. `norm` is "backward" (no
scaling forward, 1/n inverse; the default), "ortho" (1/sqrt(n) both ways) or "forward".

    >>> import ember
    >>> ember.fft.rfft(ember.tensor([1., 2., 3., 4.]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
"""
from ..core.tensor import Tensor  # noqa: F401  (torch.fft exports it too)
from ..ops import spectral as _s
from ..dispatch_args import int_arg as _int_arg
from ..ops.registry import OpDef, COMPOSITE, register as _register
from ..ops.doc_args import common_args, factory_common_args  # noqa: F401  (doc fragments)

fftfreq, rfftfreq = _s.fftfreq, _s.rfftfreq
fftshift, ifftshift = _s.fftshift, _s.ifftshift


# ---- complex-to-complex ----
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along `dim` (length `n`: padded or trimmed)."""
    dims, sizes = _s.dims_1d(input, n, dim, "fft")
    return _out(_s.c2c(input, dims, sizes, norm, True, "fft"), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D inverse discrete Fourier transform along `dim`."""
    dims, sizes = _s.dims_1d(input, n, dim, "ifft")
    return _out(_s.c2c(input, dims, sizes, norm, False, "ifft"), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D discrete Fourier transform (over the last two dims by default)."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D inverse discrete Fourier transform."""
    return ifftn(input, s, dim, norm, out=out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D discrete Fourier transform over `dim` (all dims, or the last len(s))."""
    dims, sizes = _s.dims_nd(input, s, dim)
    return _out(_s.c2c(input, dims, sizes, norm, True, "fftn"), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D inverse discrete Fourier transform."""
    dims, sizes = _s.dims_nd(input, s, dim)
    return _out(_s.c2c(input, dims, sizes, norm, False, "ifftn"), out)


# ---- real-to-complex and back ----
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a real signal: the n // 2 + 1 non-negative frequency bins.

    >>> ember.fft.rfft(ember.ones(4))
    tensor([4.+0.j, 0.+0.j, 0.+0.j])
    """
    dims, sizes = _s.dims_1d(input, n, dim, "rfft")
    return _out(_s.r2c(input, dims, sizes, norm, "rfft"), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of length `n` (default 2 * (m - 1))."""
    dims, _ = _s.dims_1d(input, 1, dim)    # (the dim only: c2r checks the output length)
    n = None if n is None else _int_arg(n, "fft_irfft", "n", 2)
    return _out(_s.c2r(input, dims, (n,), norm, "irfft"), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D FFT of a real signal; the last transformed dim keeps n // 2 + 1 bins."""
    dims, sizes = _s.dims_nd(input, s, dim)
    return _out(_s.r2c(input, dims, sizes, norm, "rfftn"), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn (the last of `s` is the output length of the last dim)."""
    dims, sizes = _irfftn_dims(input, s, dim)
    return _out(_s.c2r(input, dims, sizes, norm, "irfftn"), out)


def _irfftn_dims(input, s, dim):
    dims, sizes = _s.dims_nd(input, None if s is None else
                             tuple(1 if v == -1 else v for v in s), dim)
    if s is None:
        return dims, sizes[:-1] + (None,)
    sizes = tuple(input.shape[d] if v == -1 else v for d, v in zip(dims, s))
    if s[-1] == -1:
        sizes = sizes[:-1] + (None,)
    return dims, sizes


# ---- Hermitian: hfft is irfft of the conjugate (scaled the other way), ihfft the reverse ----
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: real, length `n`."""
    dims, _ = _s.dims_1d(input, 1, dim)    # (the dim only: c2r checks the output length)
    n = None if n is None else _int_arg(n, "fft_hfft", "n", 2)
    x = _s.as_float(input, "hfft").conj()
    return _out(_s.c2r(x, dims, (n,), _swap(norm), "hfft"), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the first n // 2 + 1 bins of the inverse FFT of a real signal."""
    dims, sizes = _s.dims_1d(input, n, dim, "ihfft")
    return _out(_s.r2c(input, dims, sizes, _swap(norm), "ihfft").conj(), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D FFT of a Hermitian-symmetric signal (real result)."""
    dims, sizes = _irfftn_dims(input, s, dim)
    x = _s.as_float(input, "hfftn").conj()
    return _out(_s.c2r(x, dims, sizes, _swap(norm), "hfftn"), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn."""
    dims, sizes = _s.dims_nd(input, s, dim)
    return _out(_s.r2c(input, dims, sizes, _swap(norm), "ihfftn").conj(), out)


def _swap(norm):
    return _s._SWAP[_s.check_norm(norm)]


def _out(result, out):
    if out is None:
        return result
    from ..dispatch import copy_into_out
    return copy_into_out(out, result)


# every transform is an op of the registry ("fft_<name>", as ATen names them), published
# here only; its derivative comes from the kernel op it calls
for _f in (fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn,
           hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn):
    _name = _f.__name__
    _f.__doc__ = (_f.__doc__ or f"ember.fft.{_name}, as torch.fft.{_name}.").rstrip() + (
        f"\n\n    Args:\n        {common_args['input']}\n\n    Keyword args:\n"
        f"        {common_args['out']}\n")
    globals()[_name] = _register(
        OpDef("fft_" + _name, COMPOSITE, function=False, method=False, decomp=_f), _f)
del _f, _name
