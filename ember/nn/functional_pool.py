"""Pooling functions of ember.nn.functional: max, average, adaptive and max-unpooling.

Max pooling picks a window tap with argmax; its gather/scatter pair (`_tap_gather`,
`_tap_scatter`) closes under differentiation the way the convolution primitives do, and each
is recorded whole by a compiler trace. Average pooling is a depthwise convolution with a
ones kernel; adaptive pooling and unpooling are compositions of ember ops.
"""
import itertools
import math

import numpy as np

from ..core.dtype import bool_ as _bool, int64
from ..core.meta import MetaArray as _MetaArray
from ..core.tensor import empty_meta as _empty_meta
from ..ops.creation import ones as _ones, tensor, zeros
from ..dispatch import not_implemented as _not_implemented, wrap, with_mode_seam
from ..dispatch_args import is_int
from ..ops.pointwise import where as _where
from ..ops.batch_rules import fold_batch as _fold_batch
from ..ops.matmul import record_fn
from ..ops.nn_ops import composition as _composition, whole_call as _whole_call
from ..ops.registry import FP32 as _FP32, LOWER_PRECISION as _LOWP
from . import conv_kernels as _native
from .functional_im2col import (_tup, _arr, _pad_array, _windows, _tap_slices, _crop,
                               _conv)
from ..ops.dtype_support import FLOAT32_64, FLOATING, INTEGRAL, INT64

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d",
]


# ---- max pooling: argmax over a window view, then a gather/scatter pair by tap ------------
def _tap_gather(x, tap, ks, stride, dil, pads, out, values=None):
    """out[n, c, o] = padded(x)[n, c, o * stride + tap(o) * dil]  (zeros outside x);
    `values`: the result when the caller already has it (max pooling's forward)."""
    a = _arr(x)
    if values is None:
        win = _windows(_pad_array(a, pads), ks, stride, dil, out)
        flat = win.reshape(win.shape[:2 + len(ks)] + (math.prod(ks),))
        values = np.take_along_axis(flat, tap._data[..., None], -1)[..., 0]
    else:
        values = values._data
    res = wrap(values, x.dtype)
    size = a.shape[2:]

    def backward(grads, needs):
        return (_tap_scatter(grads[0], tap, ks, stride, dil, pads, size),)
    return record_fn("MaxPoolBackward0", (x,), (res,), backward)[0]


_tap_gather.batch = _fold_batch    # vmap: samples are independent along N
_tap_gather = with_mode_seam("F_tap_gather", _tap_gather)  # traced as one call


def _tap_scatter(g, tap, ks, stride, dil, pads, size):
    """Adjoint of `_tap_gather`: add g into the input position its tap points at."""
    a = _arr(g)
    tap_t, tap = tap, tap._data
    nd = len(ks)
    out = a.shape[2:]
    arr = _native.max_pool_backward(a, tap, size, ks, stride, pads, dil)
    if arr is not None:         # one C pass: no scatter, each plane written by one thread
        res = wrap(arr, g.dtype)

        def backward(grads, needs):
            return (_tap_gather(grads[0], tap_t, ks, stride, dil, pads, out),)
        return record_fn("MaxPoolBackwardBackward0", (g,), (res,), backward)[0]
    if _tiles(size, ks, stride, dil, pads, out) and np.isfinite(a).all():
        # g is finite: each tap's strided slice of the input gradient is written once with
        # g times "this window chose tap k" (3.7x faster than a scatter)
        arr = np.empty(a.shape[:2] + tuple(size), dtype=a.dtype)
        for j, view in enumerate(_tap_views(arr, out, ks)):
            np.multiply(a, tap == j, out=view)
        res = wrap(arr, g.dtype)

        def backward(grads, needs):
            return (_tap_gather(grads[0], tap_t, ks, stride, dil, pads, out),)
        return record_fn("MaxPoolBackwardBackward0", (g,), (res,), backward)[0]
    padded = tuple(max(size[i] + pads[i][0] + pads[i][1],
                       (out[i] - 1) * stride[i] + (ks[i] - 1) * dil[i] + 1) for i in range(nd))
    buf = np.zeros(a.shape[:2] + padded, dtype=a.dtype)
    zero = np.zeros((), a.dtype)
    disjoint = all((ks[i] - 1) * dil[i] < stride[i] for i in range(nd))
    for j, k in enumerate(itertools.product(*(range(x) for x in ks))):
        view = buf[(slice(None), slice(None)) + _tap_slices(k, stride, dil, out)]
        if disjoint:        # each position belongs to one (window, tap) at most: assign
            view[...] = np.where(tap == j, a, zero)
        else:
            view += np.where(tap == j, a, zero)
    res = wrap(np.ascontiguousarray(_crop(buf, pads, size)), g.dtype)

    def backward(grads, needs):
        return (_tap_gather(grads[0], tap_t, ks, stride, dil, pads, out),)
    return record_fn("MaxPoolBackwardBackward0", (g,), (res,), backward)[0]


_tap_scatter.batch = _fold_batch    # vmap: samples are independent along N
_tap_scatter = with_mode_seam("F_tap_scatter", _tap_scatter)  # traced as one call


def _pool_out(size, k, s, p, d, ceil_mode):
    out = []
    for i in range(len(size)):
        span = size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1
        o = (-(-span // s[i]) if ceil_mode else span // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= size[i] + p[i]:
            o -= 1      # the last window must start inside the input or the left padding
        out.append(o)
    return tuple(out)


def _pool_args(nd, name, input, kernel_size, stride, padding, dilation):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for "
                           f"input, but got: {list(input.shape)}")
    ks = _tup(kernel_size, nd, "kernel_size", name, 2)
    st = ks if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _tup(stride, nd, "stride", name, 3)
    pad, dil = _tup(padding, nd, "padding", name, 4), _tup(dilation, nd, "dilation", name, 5)
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero")
    if any(s == 0 for s in st):
        raise RuntimeError("stride should not be zero")
    if any(s <= 0 for s in st):
        raise RuntimeError(f"{name}: stride must be greater than zero")
    if any(d <= 0 for d in dil):
        raise RuntimeError(f"{name}: dilation must be greater than zero")
    if any(p > k // 2 for p, k in zip(pad, ks)):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={pad[0]}, kernel_size={ks[0]} and dilation={dil[0]}")
    return ks, st, pad, dil


def _pool_window(nd, input, ks, st, pad, dil, ceil_mode):
    """(batched, x with a batch dim, spatial size, output size) of a pooling call, with
    PyTorch's error when the output would be empty."""
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    size = tuple(x.shape[2:])
    out = _pool_out(size, ks, st, pad, dil, ceil_mode)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (x.shape[1],) + out))}). Output "
                           "size is too small")
    return batched, x, size, out


def _max_poolnd(nd, name, input, kernel_size, stride, padding, dilation, ceil_mode,
                return_indices):
    if getattr(input, "dtype", None) is _bool:   # (integer inputs have a kernel in torch)
        raise _not_implemented("max_pool1d_impl" if nd == 1 else name, input.dtype)
    ks, st, pad, dil = _pool_args(nd, name, input, kernel_size, stride, padding, dilation)
    batched, x, size, out = _pool_window(nd, input, ks, st, pad, dil, ceil_mode)
    pads = tuple((pad[i], max(0, (out[i] - 1) * st[i] + dil[i] * (ks[i] - 1) + 1 - size[i]
                              - pad[i])) for i in range(nd))
    tap, best = _max_pool_select(x, ks, st, dil, pads, out)
    r = _tap_gather(x, tap, ks, st, dil, pads, out, best)
    if not batched:
        r = r.squeeze(0)
    if not return_indices:
        return r
    idx = _max_pool_indices(tap, ks, st, pad, dil, size, out)
    return r, (idx if batched else idx.squeeze(0))


def _max_pool_select(x, ks, st, dil, pads, out):
    """(tap, max): per output position, which window tap holds the max (int64), and the
    max itself — both as tensors, so a compiler trace passes them on to the backward."""
    nd = len(ks)
    if type(x._data) is _MetaArray:      # a meta input (ember.export's trace): metadata only
        shape = tuple(x.shape[:2]) + tuple(out)
        return _empty_meta(shape, int64), _empty_meta(shape, x.dtype)
    a = _arr(x)
    native = _native.max_pool(a, ks, st, pads, dil, out)
    if native is not None:      # one C pass over each window
        return wrap(native[0], int64), wrap(native[1], x.dtype)
    tiled = _tiled_max(a, ks, st, dil, pads, out)
    if tiled is not None:
        return wrap(tiled[0], int64), wrap(tiled[1], x.dtype)
    low = -np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min
    win = _windows(_pad_array(a, pads, low), ks, st, dil, out)
    # taps first, each one contiguous: max and the first tap reaching it are then whole-array
    # ops (argmax over a short last axis is ~10x slower)
    taps = np.ascontiguousarray(win.transpose(tuple(range(2 + nd, 2 + 2 * nd))
                                              + tuple(range(2 + nd))))
    taps = taps.reshape((math.prod(ks),) + win.shape[:2 + nd])
    best = taps.max(0)
    tap = np.full(best.shape, taps.shape[0] - 1, np.int64)
    for j in range(taps.shape[0] - 2, -1, -1):
        tap = np.where(taps[j] == best, j, tap)
    if a.dtype.kind == "f" and np.isnan(best).any():
        # NaN wins, and PyTorch picks the last NaN of a window
        last_nan = taps.shape[0] - 1 - np.isnan(taps[::-1]).argmax(0)
        tap = np.where(np.isnan(best), last_nan, tap)
    return wrap(tap, int64), wrap(best, x.dtype)


_max_pool_select.batch = _fold_batch    # vmap: samples are independent along N
_max_pool_select = with_mode_seam("F_max_pool_select", _max_pool_select)  # traced as one call


def _tiles(size, ks, st, dil, pads, out):
    """Do the windows tile the input exactly, with no gap or overlap (the usual 2x2/2 pool)?"""
    return all(ks[i] == st[i] and dil[i] == 1 and tuple(pads[i]) == (0, 0) and
               out[i] * ks[i] == size[i] for i in range(len(ks)))


def _tap_views(a, out, ks):
    """For windows that tile the contiguous `a` (N, C, *size): per kernel tap, the strided
    view of `a` holding that tap of every window (`a` seen as (N, C, O0, K0, O1, K1...))."""
    nd = len(ks)
    inter = a.reshape(a.shape[:2] + tuple(d for i in range(nd) for d in (out[i], ks[i])))
    return [inter[(slice(None), slice(None)) + tuple(d for i in range(nd)
                                                     for d in (slice(None), k[i]))]
            for k in itertools.product(*(range(x) for x in ks))]


def _tiled_max(a, ks, st, dil, pads, out):
    """(tap, max) when the windows tile `a` exactly (the usual 2x2/2 pool), read through
    strided views of `a` with no copy (1.8x faster than the general path); None otherwise,
    or when a NaN wins somewhere (the general path picks the last NaN, as PyTorch)."""
    if not _tiles(a.shape[2:], ks, st, dil, pads, out) or math.prod(ks) > 127 or \
            not a.flags.c_contiguous:
        return None
    views = _tap_views(a, out, ks)
    best = views[0].copy()
    for v in views[1:]:
        np.maximum(best, v, out=best)
    if a.dtype.kind == "f" and np.isnan(best).any():
        return None
    tap = np.zeros(best.shape, np.int8)
    left = np.ones(best.shape, bool)          # windows whose first max is not found yet
    for j, v in enumerate(views):
        first = v == best
        first &= left
        left ^= first
        if j:
            tap += first.view(np.int8) * np.int8(j)
    return tap.astype(np.int64), best


def _max_pool_indices(tap, ks, st, pad, dil, size, out):
    """The flat index into the input plane of each chosen element (return_indices=True)."""
    nd = len(ks)
    if type(tap._data) is _MetaArray:
        return _empty_meta(tuple(tap.shape), int64)
    kidx = np.unravel_index(tap._data, ks)
    flat = 0
    for i in range(nd):
        o = np.arange(out[i]).reshape((-1,) + (1,) * (nd - 1 - i))
        flat = flat * size[i] + (o * st[i] - pad[i] + kidx[i] * dil[i])
    return wrap(flat.astype(np.int64), int64)


_max_pool_indices.batch = _fold_batch    # vmap: samples are independent along N
_max_pool_indices = with_mode_seam("F_max_pool_indices", _max_pool_indices)  # traced as one call


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, L); with `return_indices`, also the flat argmax."""
    return _max_poolnd(1, "max_pool1d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, H, W).

    >>> F.max_pool2d(ember.arange(16.).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_poolnd(2, "max_pool2d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_poolnd(3, "max_pool3d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)
max_pool3d = _composition("max_pool3d", max_pool3d, amp=_FP32,
    dtypes=FLOATING | INTEGRAL, dtype_kernel="max_pool3d",
    # torch's Python reads input.is_cuda first when it returns the indices
    torch_python=("is_cuda", (0,), lambda a, k: k.get("return_indices",
                                                        a[5] if len(a) > 5 else False)))


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool1d returning (output, indices) whatever `return_indices` says, as torch's."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool2d returning (output, indices) whatever `return_indices` says, as torch's."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- average pooling: a depthwise convolution with a ones kernel, over a divisor ----------
def _avg_poolnd(nd, name, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
    dt = getattr(input, "dtype", None)
    if dt is not None and not (dt.is_floating_point or dt is int64):
        raise _not_implemented("avg_pool3d_out_frame" if nd == 3 else "avg_pool2d", dt)
    ks, st, pad, dil = _pool_args(nd, name, input, kernel_size, stride, padding, 1)
    batched, x, size, out = _pool_window(nd, input, ks, st, pad, dil, ceil_mode)
    if nd == 3 and any(s < k for s, k in zip(size, ks)):    # (torch's 3-d check, padding aside)
        raise RuntimeError(f"input image (T: {size[0]} H: {size[1]} W: {size[2]}) smaller than "
                           f"kernel size (kT: {ks[0]} kH: {ks[1]} kW: {ks[2]})")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    pads = tuple((pad[i], max(0, (out[i] - 1) * st[i] + ks[i] - size[i] - pad[i]))
                 for i in range(nd))
    n, c = x.shape[:2]
    flat = x.reshape((n * c, 1) + size)
    ones = _ones((1, 1) + ks, dtype=x.dtype, device=x.device)
    s = _conv(flat, ones, st, pads, dil, 1).reshape((n, c) + out)
    # (an int64 mean is the window sum divided in integers, truncated as C does: torch's)
    mode = "trunc" if x.dtype is int64 else None
    if divisor_override is not None:
        r = s.div(divisor_override, rounding_mode=mode)
    else:
        div = np.ones((), np.float64)
        for i in range(nd):
            start = np.arange(out[i]) * st[i] - pad[i]
            end = np.minimum(start + ks[i], size[i] + pad[i])
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, size[i])
            div = np.multiply.outer(div, end - start)
        div = div.astype(x.dtype.np) if type(s._data) is not _MetaArray else \
            _empty_meta(div.shape, x.dtype)._data        # (the divisors: metadata on meta)
        r = s.div(wrap(div, x.dtype), rounding_mode=mode)
    return r if batched else r.squeeze(0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over sliding windows of (N, C, L)."""
    return _avg_poolnd(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, None)
avg_pool1d.batch = _fold_batch    # vmap: channels are independent
avg_pool1d = with_mode_seam("F.avg_pool1d", avg_pool1d)  # traced as one call


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over sliding windows of (N, C, H, W) (or sum / `divisor_override`)."""
    return _avg_poolnd(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)
avg_pool2d.batch = _fold_batch    # vmap: channels are independent
avg_pool2d = with_mode_seam("F.avg_pool2d", avg_pool2d)  # traced as one call


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_poolnd(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)
# traced as one call; vmap: channels are independent
avg_pool3d = _whole_call("avg_pool3d", avg_pool3d, amp=_FP32, batch=_fold_batch,
    dtypes=FLOAT32_64 | INT64,
    dtype_kernel="avg_pool3d_out_frame")


# ---- adaptive pooling ---------------------------------------------------------------------
def _adaptive_bounds(n_in, n_out):
    i = np.arange(n_out)
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def _adaptive_sizes(nd, name, input, output_size):
    if input.dim() not in (nd + 1, nd + 2) or any(s == 0 for s in input.shape[-nd:]):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    where = f"{name}(): argument 'output_size' (position 2) must be tuple of ints"
    if not isinstance(output_size, (list, tuple)):
        if not is_int(output_size) or (nd > 1 and hasattr(output_size, "dtype")):
            # (torch's parser refuses; beyond 1-D its Python code takes len() of a tensor)
            raise TypeError(f"{where}, not {type(output_size).__name__}")
        output_size = (output_size,) * nd
    for k, o in enumerate(output_size):    # (None keeps that size, beyond 1-D)
        if (o is None and nd == 1) or (o is not None and (
                not is_int(o))):
            raise TypeError(f"{where}, but found element of type {type(o).__name__} at pos {k}")
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    return tuple(input.shape[-nd + i] if o is None else int(o) for i, o in enumerate(output_size))


def _along(x, dim, m):
    """Contract dim `dim` of x with matrix m (out, in): a matmul on the moved axis."""
    return (x.movedim(dim, -1) @ m.t()).movedim(-1, dim)


def _adaptive_avg(nd, name, input, output_size):
    out = _adaptive_sizes(nd, name, input, output_size)
    if not input.dtype.is_floating_point:
        raise _not_implemented("adaptive_avg_pool3d_cpu" if nd == 3 else "adaptive_avg_pool2d",
                               input.dtype)
    x = input
    for i in range(nd):
        d = x.dim() - nd + i
        n_in = x.shape[d]
        if n_in % out[i] == 0:        # equal windows side by side
            k = n_in // out[i]
            if out[i] == 1 or k > 4:  # (NumPy reduces a short middle axis slowly)
                x = x.reshape(tuple(x.shape[:d]) + (out[i], k) + tuple(x.shape[d + 1:]))
                x = x.mean(d + 1)
            else:                     # k strided slices added
                at = (slice(None),) * d
                x = sum((x[at + (slice(j, None, k),)] for j in range(1, k)),
                        x[at + (slice(0, None, k),)]) / k
            continue
        start, end = _adaptive_bounds(n_in, out[i])
        # each window gathered (padded to the widest) and summed: a matmul with a 0/1 matrix
        # would spread an inf or NaN into every window (0 * inf); padded slots are where()d
        # to 0. ember.tensor, not wrap: a compiler trace records the (shape-only) constants
        k = int((end - start).max())
        pos = start[:, None] + np.arange(k)
        rest = (1,) * (x.dim() - d - 1)
        dev = x.device      # (the constants live where the input does: meta stays meta)
        mask = tensor((pos < end[:, None]).reshape((out[i], k) + rest), device=dev)
        g = x.index_select(d, tensor(np.minimum(pos, n_in - 1).reshape(-1), device=dev))
        g = g.reshape(tuple(x.shape[:d]) + (out[i], k) + tuple(x.shape[d + 1:]))
        g = _where(mask, g, tensor(0, dtype=x.dtype, device=dev))
        x = g.sum(d + 1) / tensor((end - start).reshape((out[i],) + rest), dtype=x.dtype,
                                  device=dev)
    return x


def adaptive_avg_pool1d(input, output_size):
    """Average over `output_size` near-equal windows of (N, C, L)."""
    return _adaptive_avg(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average over near-equal windows giving (N, C, *output_size) (None keeps a size)."""
    return _adaptive_avg(2, "adaptive_avg_pool2d", input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(3, "adaptive_avg_pool3d", input, output_size)
adaptive_avg_pool3d = _composition("adaptive_avg_pool3d", adaptive_avg_pool3d, amp=_FP32,
    torch_python=("size", (0,)))     # (torch's Python reads input.size() first)


def _adaptive_max(nd, name, input, output_size, return_indices):
    out = _adaptive_sizes(nd, name, input, output_size)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    a = _arr(x)
    if type(a) is _MetaArray:       # meta: the indices' metadata; the gather runs on meta
        return _adaptive_max_end(x, _empty_meta(tuple(x.shape[:2]) + out, int64), out,
                                 batched, return_indices)
    size = a.shape[2:]
    # every window padded to the widest one; padded slots read -inf
    idx, valid = [], []
    for i in range(nd):
        start, end = _adaptive_bounds(size[i], out[i])
        kmax = int((end - start).max())
        pos = start[:, None] + np.arange(kmax)
        valid.append(pos < end[:, None])
        idx.append(np.minimum(pos, size[i] - 1))
    # gather (N, C, o1, k1, o2, k2, ...) by broadcast fancy indexing
    grids = np.ix_(*[p.reshape(-1) for p in idx])
    vals = a[(slice(None), slice(None)) + grids]
    shape = (a.shape[0], a.shape[1]) + tuple(s for p in idx for s in p.shape)
    vals = vals.reshape(shape)
    mask = np.ones((), bool)
    for v in valid:
        mask = np.multiply.outer(mask, v)
    low = -np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min
    vals = np.where(mask, vals, low)
    perm = (0, 1) + tuple(2 + 2 * i for i in range(nd)) + tuple(3 + 2 * i for i in range(nd))
    vals = vals.transpose(perm)
    ksh = vals.shape[2 + nd:]
    tap = vals.reshape(vals.shape[:2 + nd] + (math.prod(vals.shape[2 + nd:]),)).argmax(-1)
    kidx = np.unravel_index(tap, ksh)
    flat = 0
    for i in range(nd):
        start, _ = _adaptive_bounds(size[i], out[i])
        o = start.reshape((-1,) + (1,) * (nd - 1 - i))
        flat = flat * size[i] + o + kidx[i]
    return _adaptive_max_end(x, wrap(flat.astype(np.int64), int64), out, batched,
                             return_indices)


def _adaptive_max_end(x, it, out, batched, return_indices):
    """The values at the flat indices `it` (N, C, *out) of each window's maximum."""
    r = x.flatten(2).gather(2, it.flatten(2)).reshape(x.shape[:2] + out)
    if not batched:
        r, it = r.squeeze(0), it.squeeze(0)
    return (r, it) if return_indices else r


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(1, "adaptive_max_pool1d", input, output_size, return_indices)
adaptive_max_pool1d = with_mode_seam("F.adaptive_max_pool1d", adaptive_max_pool1d)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over near-equal windows giving (N, C, *output_size)."""
    return _adaptive_max(2, "adaptive_max_pool2d", input, output_size, return_indices)
adaptive_max_pool2d = with_mode_seam("F.adaptive_max_pool2d", adaptive_max_pool2d)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(3, "adaptive_max_pool3d", input, output_size, return_indices)
adaptive_max_pool3d = _whole_call("adaptive_max_pool3d", adaptive_max_pool3d, amp=_FP32,
    dtypes=FLOATING,
    dtype_kernel="adaptive_max_pool3d_cpu",
    torch_python=("size", (0,)))     # (torch's Python reads input.size() first)


def _max_unpoolnd(nd, input, indices, kernel_size, stride, padding, output_size):
    ks = _tup(kernel_size, nd)
    st = ks if stride is None else _tup(stride, nd)
    pad = _tup(padding, nd)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    ind = indices if batched else indices.unsqueeze(0)
    default = tuple((x.shape[2 + i] - 1) * st[i] - 2 * pad[i] + ks[i] for i in range(nd))
    if output_size is None:
        size = default
        given = [v for v in (kernel_size, stride, padding) if v is not None]
        if any(isinstance(e, float) for v in given for e in (
                v if isinstance(v, (tuple, list)) else (v,))):
            size = tuple(float(s) for s in size)    # (torch's default size is then float)
    else:
        size = tuple(output_size)[-nd:]
        for i in range(nd):
            lo, hi = default[i] - st[i], default[i] + st[i]
            if not lo < size[i] < hi:
                raise ValueError(f"invalid output_size \"{list(output_size)}\" (dim {i} must be "
                                 f"between {lo} and {hi})")
    for i, s in enumerate(size):     # (a float kernel_size gives float sizes too)
        if isinstance(s, float):     # torch's parser of the kernel's int list
            raise TypeError(f"max_unpool{nd}d(): argument 'output_size' (position 3) must be "
                            f"tuple of ints, but found element of type float at pos {i}")
    for i, s in enumerate(size):
        if s < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{i}]={s}")
    for i, s in enumerate(size):     # (then torch's parser of the C++ kernel's int list; 1-D
        if s >= 2 ** 63:             # unpooling is max_unpool2d's there)
            raise TypeError(f"max_unpool{max(nd, 2)}d(): argument 'output_size' failed to "
                            f"unpack the object at pos {i + 1} with error \"Overflow when "
                            f"unpacking long long\"")
    if ind.shape != x.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(x.shape)}) but got indices tensor with shape: "
                           f"{list(ind.shape)}")
    n, c = x.shape[:2]
    if ind.numel():
        iv = ind.detach().numpy()
        if iv.min() < 0 or iv.max() >= math.prod(size):
            raise RuntimeError(f"Found an invalid max index: {int(iv.max())} (output volumes "
                               f"are of size {'x'.join(map(str, size))}")
    base = zeros((n, c, math.prod(size)), dtype=x.dtype)
    r = base.scatter(2, ind.flatten(2), x.flatten(2)).reshape((n, c) + size)
    return r if batched else r.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpoolnd(1, input, indices, kernel_size, stride, padding, output_size)
# torch's max_unpool{1,2}d are Python code that read input.size() (and max_unpool1d
# indices.unsqueeze) first; an int beyond int64 in the sizes the op reports itself
# (_max_unpoolnd: torch's "failed to unpack" naming max_unpool2d)
_UNPOOL_SIZES = ("kernel_size", "stride", "padding", "output_size")
max_unpool1d = _whole_call("max_unpool1d", max_unpool1d, amp=_FP32,
    dtypes=FLOATING, dtype_kernel="max_unpool2d",
    torch_python=(("size", "unsqueeze"), (0, 1)),
    own_range_check=_UNPOOL_SIZES)  # traced as one call


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place each value of a max_pool2d output at its index in a zero (N, C, H, W) tensor."""
    return _max_unpoolnd(2, input, indices, kernel_size, stride, padding, output_size)
max_unpool2d = _whole_call("max_unpool2d", max_unpool2d, amp=_FP32,
    dtypes=FLOATING, dtype_kernel="max_unpool2d", torch_python=("size", (0,)),
    own_range_check=_UNPOOL_SIZES)  # traced as one call
