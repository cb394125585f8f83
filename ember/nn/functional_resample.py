"""Resampling functions of ember.nn.functional: interpolate/upsample, pad, pixel_shuffle,
affine_grid and grid_sample.

Each is a composition of ember ops that autograd differentiates: interpolation applies one
(out, in) weight matrix per spatial dim by matmul; pad gathers by index; grid_sample weighs
the taps it gathers.
"""
import math

import numpy as np

from ..core.dtype import bool_ as _bool, int64
from ..ops.creation import full, linspace, ones, zeros
from ..ops.joining import cat, stack
from ..ops.pointwise import where
from ..ops.pointwise_arith import remainder
from ..dispatch import wrap, with_mode_seam
from ..ops.batch_rules import fold_batch as _fold_batch
from ..ops.nn_ops import whole_call as _whole_call  # (registers a function as its op)
from ..ops.registry import FP32 as _FP32
from ..ops.meta_rules import on_device_of as _on_device_of
from .functional_pool import _adaptive_avg, _along
from ..ops.dtype_support import FLOATING

__all__ = [
    "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pad", "pixel_shuffle",
    "pixel_unshuffle", "affine_grid", "grid_sample",
]


# ---- interpolation: one (out, in) weight matrix per spatial dim, applied by matmul ----------
def _src_scale(n_in, n_out, align_corners, scale):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _linear_matrix(n_in, n_out, align_corners, scale):
    r = _src_scale(n_in, n_out, align_corners, scale)
    d = np.arange(n_out, dtype=np.float64)
    src = d * r if align_corners else np.maximum((d + 0.5) * r - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), i0), 1 - lam)
    np.add.at(m, (np.arange(n_out), i1), lam)
    return m


def _cubic_weights(t, a=-0.75):
    def near(x):    # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):     # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_matrix(n_in, n_out, align_corners, scale):
    r = _src_scale(n_in, n_out, align_corners, scale)
    d = np.arange(n_out, dtype=np.float64)
    src = d * r if align_corners else (d + 0.5) * r - 0.5
    i = np.floor(src).astype(np.int64)
    ws = _cubic_weights(src - i)
    m = np.zeros((n_out, n_in))
    for k, w in zip(range(-1, 3), ws):
        np.add.at(m, (np.arange(n_out), np.clip(i + k, 0, n_in - 1)), w)
    return m


def _nearest_index(n_in, n_out, scale, exact):
    r = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    d = np.arange(n_out, dtype=np.float64)
    src = np.floor((d + 0.5) * r) if exact else np.floor(d * np.float32(r))
    return np.minimum(src.astype(np.int64), n_in - 1)


_MODES_ND = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of (N, C, *S) to `size` or ``floor(S * scale_factor)``.

    modes: nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area.

    >>> F.interpolate(ember.ones(1, 1, 2, 2), scale_factor=2, mode='bilinear').shape
    ember.Size([1, 1, 4, 4])
    """
    nd = input.dim() - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif mode in _MODES_ND:
        if align_corners is None:
            align_corners = False
        if _MODES_ND[mode] != nd:
            raise NotImplementedError(
                f"Got {input.dim()}D input, but {mode} mode needs {_MODES_ND[mode] + 2}D input")
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.dim()}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if nd < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                         f"{input.dim()}D)")
    if antialias:
        raise NotImplementedError("ember: interpolate(antialias=True) is not implemented")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_size = tuple(input.shape[2:])
    if size is not None:
        out = tuple(int(s) for s in size) if isinstance(size, (list, tuple)) else (int(size),) * nd
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(in_size)} and output size of {list(out)}. Please provide "
                             "input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                             "(o1, o2, ...,oK) format.")
        scales = (None,) * nd
    else:
        sf = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) \
            else (scale_factor,) * nd
        if len(sf) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(in_size)} and scale_factor of shape {list(sf)}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        out = tuple(int(math.floor(float(s) * float(f))) for s, f in zip(in_size, sf))
        scales = (None,) * nd if recompute_scale_factor else tuple(float(f) for f in sf)
    if mode == "area":
        return _adaptive_avg(nd, "adaptive_avg_pool", input, out)
    x = input
    for i in range(nd):
        dim = 2 + i
        # PyTorch's CPU kernels copy a dim whose size does not change, whatever the scale,
        # in the linear modes and in 2-D nearest (not in bicubic, 1-D or 3-D nearest)
        if in_size[i] == out[i] and (mode in ("linear", "bilinear", "trilinear")
                                     or (mode == "nearest" and nd == 2)):
            continue
        if mode.startswith("nearest"):
            idx = _nearest_index(in_size[i], out[i], scales[i], mode == "nearest-exact")
            x = x.index_select(dim, wrap(idx, int64))
            continue
        build = _cubic_matrix if mode == "bicubic" else _linear_matrix
        m = build(in_size[i], out[i], align_corners, scales[i])
        x = _along(x, dim, wrap(m.astype(x.dtype.np), x.dtype))
    return x
interpolate.batch = _fold_batch     # vmap: the samples of (N, C, *S) are independent
interpolate = with_mode_seam("F.interpolate", interpolate)  # traced as one call


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)
upsample = with_mode_seam("F.upsample", upsample)  # traced as one call


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")
upsample_nearest = with_mode_seam("F.upsample_nearest", upsample_nearest)  # traced as one call


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
upsample_bilinear = with_mode_seam("F.upsample_bilinear", upsample_bilinear)  # traced as one call


# ---- pad ----------------------------------------------------------------------------------
def _pad_index(n, lo, hi, mode):
    j = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":
        return j % n
    period = 2 * (n - 1)          # reflect (the edge is not repeated)
    j = np.abs(j) % period if period else np.zeros_like(j)
    return np.where(j >= n, period - j, j)


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.

    modes: constant (`value`, negative pads crop), reflect, replicate, circular.

    >>> F.pad(ember.ones(1, 2), (1, 1)).tolist()
    [[0.0, 1.0, 1.0, 0.0]]
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length "
                           f"{len(pad)} and input of dimension {input.dim()}")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(k)]     # last dim first
    if mode == "constant":
        x = input
        v = 0 if value is None else value
        for i, (lo, hi) in enumerate(pairs):
            d = input.dim() - 1 - i
            n = x.shape[d]
            if lo < 0 or hi < 0:
                if n + min(lo, 0) + min(hi, 0) < 0:
                    raise RuntimeError(f"The input size {n}, plus negative padding {lo} and "
                                       f"{hi} resulted in a negative output size, which is "
                                       "invalid. Check dimension {d} of your input.")
                x = x.narrow(d, -min(lo, 0), n + min(lo, 0) + min(hi, 0))
            parts = []
            for p in (max(lo, 0), max(hi, 0)):
                shape = list(x.shape)
                shape[d] = p
                parts.append(full(shape, v, dtype=x.dtype, device=x.device))
            if lo > 0 or hi > 0:
                x = cat([parts[0], x, parts[1]], d)
        return x
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if not (k + 1 <= input.dim() <= k + 2) or k > 3:
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.dim()}D input tensor.")
    if mode != "circular" and input.dtype is _bool:   # (torch's kernels: no bool loop)
        kind = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f"\"{kind}_pad{k}d\" not implemented for 'Bool'")
    x = input
    for i, (lo, hi) in enumerate(pairs):
        d = input.dim() - 1 - i
        n = x.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{d} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (lo or hi):
            raise RuntimeError(f"padding size is expected to be {k * 2}, but got: 0")
        if lo == 0 and hi == 0:
            continue
        if lo < 0 or hi < 0:       # negative pads crop first; the rest wraps the crop
            x = x.narrow(d, max(-lo, 0), n - max(-lo, 0) - max(-hi, 0))
            n, lo, hi = x.shape[d], max(lo, 0), max(hi, 0)
        idx = _pad_index(n, lo, hi, mode)
        x = x.index_select(d, wrap(_on_device_of(idx.astype(np.int64), x), int64))
    return x


def _pad_amp(args, kwargs):
    """Autocast runs the reflect and replicate pads in float32 (PyTorch's CPU lists)."""
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    return _FP32 if mode in ("reflect", "replicate") else None


def _pad_batch(v, args, kwargs):
    """vmap: the padded dims are trailing ones; with a leading dim left unpadded the batch
    folds into it (any mode), else (constant mode) the physical call is the batched one."""
    x, widths = args[0], (args[1] if len(args) > 1 else kwargs["pad"])
    if v.logical_dim(x) > len(widths) // 2:
        return _fold_batch(v, args, kwargs)
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    return v.call(*args, **kwargs) if mode == "constant" else NotImplemented


pad = _whole_call("pad", pad, amp=_pad_amp, batch=_pad_batch)  # traced as one call


# ---- pixel shuffle ------------------------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)
pixel_shuffle = with_mode_seam("F.pixel_shuffle", pixel_shuffle)  # traced as one call


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects {'height' if h % r else 'width'} to be "
                           f"divisible by downscale_factor, but input.size("
                           f"{-2 if h % r else -1})={h if h % r else w} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
pixel_unshuffle = with_mode_seam("F.pixel_unshuffle", pixel_unshuffle)  # traced as one call


# ---- affine_grid / grid_sample ------------------------------------------------------------
def _base_coords(n, align_corners, dtype):
    if n <= 1:
        return zeros(max(n, 0), dtype=dtype)
    c = linspace(-1, 1, n, dtype=dtype)
    return c if align_corners else c * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of ``theta @ [x, y, (z,) 1]``."""
    align_corners = bool(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {list(theta.shape)}.")
        n, _, h, w = size
        xs, ys = _base_coords(w, align_corners, theta.dtype), _base_coords(h, align_corners,
                                                                           theta.dtype)
        base = stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                      ones((h, w), dtype=theta.dtype)], -1)
        return (base.reshape(1, h * w, 3) @ theta.transpose(1, 2)).reshape(n, h, w, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {list(theta.shape)}.")
        n, _, d, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype).reshape(1, 1, w).expand(d, h, w)
        ys = _base_coords(h, align_corners, theta.dtype).reshape(1, h, 1).expand(d, h, w)
        zs = _base_coords(d, align_corners, theta.dtype).reshape(d, 1, 1).expand(d, h, w)
        base = stack([xs, ys, zs, ones((d, h, w), dtype=theta.dtype)], -1)
        return (base.reshape(1, d * h * w, 4) @ theta.transpose(1, 2)).reshape(n, d, h, w, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                              f"transforms, respectively. Got size {size}.")
affine_grid = with_mode_seam("F.affine_grid", affine_grid)  # traced as one call


def _unnormalize(c, n, align_corners):
    return (c + 1) / 2 * (n - 1) if align_corners else ((c + 1) * n - 1) / 2


def _reflect(c, lo, hi):
    """Reflect coordinates into [lo, hi] (differentiable: a piecewise-linear map)."""
    if hi <= lo:
        return c * 0 + max(lo, 0.0)
    span = hi - lo
    x = (c - lo).abs()
    flips = (x / span).floor().detach()
    extra = x - flips * span
    odd = remainder(flips, 2) == 1
    return where(odd, hi - extra, extra + lo)


def _source(c, n, padding_mode, align_corners):
    c = _unnormalize(c, n, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, n - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, n - 1) if align_corners else _reflect(c, -0.5, n - 0.5)
        c = c.clamp(0, n - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample (N, C, H, W) input at grid (N, Ho, Wo, 2) points ((x, y) in [-1, 1])."""
    if mode not in ("bilinear", "nearest"):
        if mode == "bicubic":
            raise NotImplementedError("ember: grid_sample(mode='bicubic') is not implemented")
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2 or \
            grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same batch size "
                           f"and grid of shape (N, H, W, 2), but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    align_corners = bool(align_corners)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1:3]
    sx = _source(grid[..., 0], w, padding_mode, align_corners)     # (N, Ho, Wo)
    sy = _source(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def tap(iy, ix, weight):
        ok = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        lin = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).to(int64)
        vals = flat.gather(2, lin.reshape(n, 1, ho * wo).expand(n, c, ho * wo))
        wt = where(ok, weight, 0.0).reshape(n, 1, ho * wo)
        return vals * wt

    if mode == "nearest":
        ix, iy = sx.detach().round(), sy.detach().round()
        out = tap(iy, ix, sx * 0 + 1)    # a zero gradient for the grid, as in PyTorch
    else:
        x0, y0 = sx.detach().floor(), sy.detach().floor()
        fx, fy = sx - x0, sy - y0
        out = (tap(y0, x0, (1 - fx) * (1 - fy)) + tap(y0, x0 + 1, fx * (1 - fy))
               + tap(y0 + 1, x0, (1 - fx) * fy) + tap(y0 + 1, x0 + 1, fx * fy))
    return out.reshape(n, c, ho, wo)
grid_sample = _whole_call("grid_sample", grid_sample, amp=_FP32,
    dtypes=FLOATING,
    dtype_kernel="grid_sampler_2d_cpu_kernel_impl")  # traced as one call
