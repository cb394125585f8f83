"""Window functions and the short-time Fourier transform (`stft`, `istft`).

The windows (hann, hamming, blackman, bartlett, kaiser) are creation ops computed in float64
and cast to the requested dtype; `periodic=True` (the default) computes N + 1 points and
drops the last, as torch does. `stft` and `istft` are written in other ember ops
(index_select for the centre padding, unfold for the frames, the FFT kernel ops of
ops/spectral.py, index_add for istft's overlap-add), so their gradients come from those.

    >>> x = ember.randn(64)
    >>> S = ember.stft(x, 16, window=ember.hann_window(16), return_complex=True)
    >>> S.shape
    ember.Size([9, 17])
"""
import warnings

import numpy as np

from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..dispatch_args import int_arg
from .registry import OpDef, CREATION, COMPOSITE, register
from . import spectral as _s


# ---- windows ----------------------------------------------------------------------------------
def _window(name, n, periodic, dtype, requires_grad, fn):
    n = int_arg(n, name, "window_length", 1)
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {torch_name(dt)}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={n}")
    if n <= 1:
        arr = np.ones(n)
    else:
        m = n + 1 if periodic else n
        arr = fn(np.arange(m, dtype=np.float64), m)[:n]
    t = wrap(arr.astype(dt.np), dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _cos_sum(coeffs):
    """a0 - a1 cos(2 pi k / (N - 1)) + a2 cos(4 pi k / (N - 1)) ..."""
    def fn(k, m):
        x = 2 * np.pi * k / (m - 1)
        return sum((-1) ** i * a * np.cos(i * x) for i, a in enumerate(coeffs))
    return fn


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi k / (N - 1)); periodic: N + 1 points, the last dropped.

    >>> ember.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   _cos_sum((0.5, 0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """alpha - beta cos(2 pi k / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   _cos_sum((alpha, beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   _cos_sum((0.42, 0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The triangle 1 - |2k / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2,
                                                             0, None))) / np.i0(beta))


for _f in (hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window):
    globals()[_f.__name__] = register(OpDef(_f.__name__, CREATION, method=False), _f)


# ---- stft / istft ---------------------------------------------------------------------------
def _describe(name, x, n_fft, hop, win, window, extra):
    w = "None" if window is None else \
        f"ember.{torch_name(window.dtype)}Tensor{{{list(window.shape)}}}"
    return (f"{name}(ember.{torch_name(x.dtype)}Tensor{list(x.shape)}, n_fft={n_fft}, "
            f"hop_length={hop}, win_length={win}, window={w}{extra})")


def _padded_window(window, win_length, n_fft, x, what):
    if window is None:
        from .creation import ones
        window = ones(win_length, dtype=x.dtype.to_real(), device=x.device)
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{what} : expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _s.resize(_pad_left(window, left), 0, n_fft)
    return window


def _pad_left(w, left):
    from .creation import zeros
    from .joining import cat
    return cat([zeros(left, dtype=w.dtype, device=w.device), w]) if left else w


_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _center_pad(x, p, mode):
    """Pad the last dim by p on both sides (torch's F.pad modes), differentiably."""
    n = x.shape[-1]
    if mode == "constant":
        from .creation import zeros
        from .joining import cat
        z = zeros(x.shape[:-1] + (p,), dtype=x.dtype, device=x.device)
        return cat([z, x, z], -1)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"stft: unsupported pad_mode {mode!r}")
    if mode == "reflect" and p >= n:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({p}, {p}) at dimension 2 of "
                           f"input {[1] + list(x.shape)}")
    idx = np.pad(np.arange(n), p, mode=_PAD_MODES[mode])
    return x.index_select(-1, wrap(idx, D.int64).to(x.device))   # (meta x: a meta index)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """The short-time Fourier transform: (..., n_fft // 2 + 1 or n_fft, n_frames), complex.

    `input` is 1-D (a signal) or 2-D (a batch); frames start every `hop_length` samples
    (default n_fft // 4) and are multiplied by `window` (default ones), centred in n_fft.
    """
    if n_fft is None and center:    # (torch's Python pads by int(n_fft // 2) first)
        raise TypeError("unsupported operand type(s) for //: 'NoneType' and 'int'")
    integral = not (input.dtype.is_floating_point or input.dtype.is_complex)
    if integral and center and pad_mode == "reflect" and input.dtype is D.bool_:
        raise NotImplementedError("\"reflection_pad1d\" not implemented for 'Bool'")  # (torch's
    if isinstance(n_fft, (bool, float)) or n_fft is None:
        # (torch's Python stft hands n_fft to its C++ parser as given: no overload takes it)
        got = (input, n_fft, hop_length, win_length, window, normalized, onesided,
               return_complex, align_to_window)
        raise TypeError("stft() received an invalid combination of arguments - got (" +
                        ", ".join("Tensor" if isinstance(v, Tensor) else type(v).__name__
                                  for v in got) + "), but expected one of:")
    if return_complex is None and not input.dtype.is_complex and \
            not (window is not None and window.dtype.is_complex):         # padding: first)
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    hop = n_fft // 4 if hop_length is None else int_arg(hop_length, "stft", "hop_length", 3)
    win = n_fft if win_length is None else int_arg(win_length, "stft", "win_length", 4)
    if integral:
        raise RuntimeError(_describe("stft", input, n_fft, hop, win, window, "") +
                           " : expected a tensor of floating point or complex values")
    x = _s.as_float(input, "stft")
    if center:
        if x.dim() not in (1, 2):
            raise RuntimeError(_describe("stft", x, n_fft, hop, win, window, "") +
                               " : expected a 1D or 2D tensor")
        x = _center_pad(x, n_fft // 2, pad_mode)
    what = _describe("stft", x, n_fft, hop, win, window,
                     f", normalized={int(normalized)}, onesided={onesided}, "
                     f"return_complex={return_complex}")
    if x.dim() not in (1, 2):
        raise RuntimeError(what + " : expected a 1D or 2D tensor")
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"{what} : expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{what} : expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{what} : expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    w = _padded_window(window, win, n_fft, x, what)
    frames = x.unfold(-1, n_fft, hop) * w           # (..., n_frames, n_fft)
    complex_in = x.dtype.is_complex or w.dtype.is_complex
    sided = (not complex_in) if onesided is None else onesided
    if sided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    dims = (frames.dim() - 1,)
    if sided:
        spec = _s._fft_r2c(frames, dims, norm, True)
    else:
        spec = _s._fft_c2c(_s.as_complex(frames), dims, norm, True)
    spec = spec.transpose(-1, -2)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.", UserWarning, stacklevel=2)
        from .complex_ops import view_as_real
        return view_as_real(spec)
    return spec


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft: overlap-add of the inverse FFTs of the frames, divided by the
    overlap-added squared window (which must not vanish)."""
    n_fft = int_arg(n_fft, "istft", "n_fft", 2)
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else int_arg(hop_length, "istft", "hop_length", 3)
    win = n_fft if win_length is None else int_arg(win_length, "istft", "win_length", 4)
    what = _describe("istft", input, n_fft, hop, win, window,
                     f", center={int(center)}, normalized={int(normalized)}, "
                     f"onesided={onesided}, length={length}, return_complex={int(return_complex)}")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{what} : expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.dim()}")
    if hop <= 0 or win <= 0 or win > n_fft:
        raise RuntimeError(f"{what} : expected 0 < hop_length and 0 < win_length <= n_fft")
    n_freq = input.shape[-2]
    sided = (n_freq != n_fft) if onesided is None else onesided
    if sided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"{what} : expected the frequency dimension (3rd to the last) of "
                           f"the input tensor to match n_fft / 2 + 1 when onesided=True, but "
                           f"got {n_freq}")
    if sided and return_complex:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    w = _padded_window(window, win, n_fft, input, what)
    spec = input.transpose(-1, -2)                      # (..., n_frames, n_freq)
    norm = "ortho" if normalized else "backward"
    dims = (spec.dim() - 1,)
    if sided:
        frames = _s._fft_c2r(_s.resize(spec, dims[0], n_fft // 2 + 1), dims, norm, n_fft)
    else:
        frames = _s._fft_c2c(spec, dims, norm, False)
        if not return_complex:
            frames = frames.real
    frames = frames * w
    n_frames = frames.shape[-2]
    total = n_fft + hop * (n_frames - 1)
    pos = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    index = wrap(pos, D.int64)
    from .creation import zeros
    flat = frames.reshape(frames.shape[:-2] + (n_frames * n_fft,))
    y = zeros(frames.shape[:-2] + (total,), dtype=frames.dtype).index_add(-1, index, flat)
    wsq = (w * w.conj()).real if w.dtype.is_complex else w * w
    env = zeros(total, dtype=wsq.dtype).index_add(0, index, wsq.repeat(n_frames))
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0)
    if length is not None:
        end = start + length
    end_avail = min(end, total)
    seg_env = env.narrow(0, start, end_avail - start)
    low = np.abs(seg_env.detach()._numpy()).min() if end_avail > start else 1.0
    if low < 1e-11:
        raise RuntimeError(f"{what} window overlap add min: {low:g}")
    y = y.narrow(-1, start, end_avail - start) / seg_env
    if end > total:                                     # a length past the signal: zeros
        y = _s.resize(y, y.dim() - 1, end - start)
    return y


# torch.stft is Python code that reads input.dim() only to pad it (center=True); n_fft is a
# Scalar to its parser (uint64: the op's own error stands for 2**63)
stft = register(OpDef("stft", COMPOSITE, decomp=stft, uint64_scalars={"n_fft"},
                      torch_python=("dim", (0,), lambda a, k: k.get(
                          "center", a[5] if len(a) > 5 else True) is not False)), stft)
istft = register(OpDef("istft", COMPOSITE, decomp=istft), istft)
