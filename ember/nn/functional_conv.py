"""Convolution, pooling and resampling functions of ember.nn.functional.

Convolutions lower to one BLAS matmul over an im2col matrix gathered from a strided window
view of the padded input (`_windows`: no Python loop over batch, channels or pixels); groups
become the batch dimension of that matmul. Three primitive ops close under differentiation:

    conv(x, w)           the forward convolution
    conv_tr(g, w)        its adjoint in x (col2im: one matmul, then a loop over kernel taps)
    conv_wgrad(x, g)     its adjoint in w (one matmul)

the derivative of each is written with the other two, so double (and higher) backward works.
Max pooling picks a window tap with argmax; its gather/scatter pair closes the same way.
Everything else (avg/adaptive pooling, interpolation, grid_sample, pad, pixel_shuffle) is a
composition of ember ops that autograd differentiates.
"""
import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

import ember
from ..dispatch import wrap
from ..ops.linalg import record_fn, kernel_array
from ..amp.policy import state as _amp, cast_inputs as _amp_cast, run_fp32 as _amp_fp32  # noqa: F401,E501

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "unfold", "fold", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "interpolate", "upsample",
    "upsample_nearest", "upsample_bilinear", "pad", "pixel_shuffle", "pixel_unshuffle",
    "affine_grid", "grid_sample",
]


# ---- argument helpers -------------------------------------------------------------------
def _tup(v, n, name="argument"):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of "
                               f"{n} values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _arr(t):
    return kernel_array(t)


def _pad_array(a, pads, value=0):
    """`a` with its trailing len(pads) dims padded by (lo, hi) pairs (a copy only if needed)."""
    if not any(lo or hi for lo, hi in pads):
        return a
    lead = a.ndim - len(pads)
    shape = a.shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(a.shape[lead:], pads))
    out = np.full(shape, value, dtype=a.dtype)
    out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(a.shape[lead:], pads))] = a
    return out


def _windows(a, ksize, stride, dil, out):
    """Read-only strided view (N, C, *out, *ksize) of the sliding windows of `a` (N, C, *S)."""
    st = a.strides
    nd = len(ksize)
    return as_strided(a, a.shape[:2] + tuple(out) + tuple(ksize),
                      st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd))
                      + tuple(st[2 + i] * dil[i] for i in range(nd)), writeable=False)


def _tap_slices(k, stride, dil, out):
    """The positions (in the padded input) that kernel tap `k` visits, as slices."""
    return tuple(slice(k[i] * dil[i], k[i] * dil[i] + stride[i] * (out[i] - 1) + 1, stride[i])
                 for i in range(len(k)))


def _col2im(cols, padded, stride, dil):
    """Adjoint of `_windows`: sum cols (N, C, *K, *O) into a zero array (N, C, *padded)."""
    nd = len(padded)
    ks, out = cols.shape[2:2 + nd], cols.shape[2 + nd:]
    buf = np.zeros(cols.shape[:2] + tuple(padded), dtype=cols.dtype)
    for k in itertools.product(*(range(x) for x in ks)):
        buf[(slice(None), slice(None)) + _tap_slices(k, stride, dil, out)] += cols[(slice(None),
                                                                                  slice(None)) + k]
    return buf


def _crop(a, pads, size):
    return a[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for (lo, _), s in
                                                 zip(pads, size))]


def _out_size(size, pads, k, s, d):
    return tuple((size[i] + pads[i][0] + pads[i][1] - d[i] * (k[i] - 1) - 1) // s[i] + 1
                 for i in range(len(size)))


# ---- the three convolution primitives -----------------------------------------------------
def _cols(xp, ks, stride, dil, out, groups):
    """im2col: (G, Cg*prod(K), N*prod(O)) from the padded input (one copy)."""
    nd = len(ks)
    win = _windows(xp, ks, stride, dil, out)
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    n, c = xp.shape[:2]
    return win.transpose(perm).reshape(groups, c // groups * math.prod(ks), n * math.prod(out))


def _gmat(g, groups):
    """(N, G*Og, *O) -> (G, Og, N*prod(O))."""
    n, co = g.shape[:2]
    p = math.prod(g.shape[2:])      # explicit sizes: -1 is ambiguous for empty tensors
    return g.reshape(n, groups, co // groups, p).transpose(1, 2, 0, 3).reshape(
        groups, co // groups, n * p)


def _bmm(a, b):
    """Batched matmul over groups on BLAS: one 2-D gemm for a single group (NumPy's 2-D
    matmul passes transposed operands to BLAS as flags), else contiguous operands (NumPy's
    batched matmul falls back to a slow loop for transposed ones)."""
    if a.shape[0] == 1:
        return (a[0] @ b[0])[None]
    return np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))


def _conv(x, w, stride, pads, dil, groups):
    """Forward convolution (no bias); pads: per spatial dim (lo, hi)."""
    a, b = _arr(x), _arr(w)
    ks = b.shape[2:]
    out = _out_size(a.shape[2:], pads, ks, stride, dil)
    cols = _cols(_pad_array(a, pads), ks, stride, dil, out, groups)
    co = b.shape[0]
    r = _bmm(b.reshape(groups, co // groups, math.prod(b.shape[1:])), cols)   # (G, Og, N*P)
    r = np.ascontiguousarray(r.reshape(co, a.shape[0], *out).swapaxes(0, 1))
    res = wrap(r, x.dtype)

    def backward(grads, needs, x, w):
        g = grads[0]
        return (_conv_tr(g, w, x.shape[2:], stride, pads, dil, groups) if needs[0] else None,
                _conv_wgrad(x, g, w.shape, stride, pads, dil, groups) if needs[1] else None)
    return record_fn("ConvolutionBackward0", (x, w), (res,), backward, (x, w))[0]


def _conv_tr(g, w, size, stride, pads, dil, groups):
    """Adjoint of `_conv` in its input: g (N, Cout, *O) -> (N, Cin, *size)."""
    a, b = _arr(g), _arr(w)
    ks = b.shape[2:]
    nd = len(ks)
    co, cg = b.shape[:2]
    n, out = a.shape[0], a.shape[2:]
    wt = b.reshape(groups, co // groups, math.prod(b.shape[1:])).transpose(0, 2, 1)  # (G,CgK,Og)
    cols = _bmm(wt, _gmat(a, groups))                            # (G, Cg*K, N*P)
    cols = cols.reshape((groups * cg,) + tuple(ks) + (n,) + tuple(out))
    cols = cols.transpose((1 + nd, 0) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, 2 + 2 * nd)))
    padded = tuple(size[i] + pads[i][0] + pads[i][1] for i in range(nd))
    r = np.ascontiguousarray(_crop(_col2im(cols, padded, stride, dil), pads, size))
    res = wrap(r, g.dtype)

    def backward(grads, needs, g, w):
        gg = grads[0]
        return (_conv(gg, w, stride, pads, dil, groups) if needs[0] else None,
                _conv_wgrad(gg, g, w.shape, stride, pads, dil, groups) if needs[1] else None)
    return record_fn("ConvolutionBackwardInput0", (g, w), (res,), backward, (g, w))[0]


def _conv_wgrad(x, g, wshape, stride, pads, dil, groups):
    """Adjoint of `_conv` in its weight: sum over batch and positions of g * windows(x)."""
    a, b = _arr(x), _arr(g)
    ks = tuple(wshape[2:])
    cols = _cols(_pad_array(a, pads), ks, stride, dil, b.shape[2:], groups)
    r = _bmm(_gmat(b, groups), cols.transpose(0, 2, 1)).reshape(wshape)
    res = wrap(r, x.dtype)

    def backward(grads, needs, x, g):
        h = grads[0]
        return (_conv_tr(g, h, x.shape[2:], stride, pads, dil, groups) if needs[0] else None,
                _conv(x, h, stride, pads, dil, groups) if needs[1] else None)
    return record_fn("ConvolutionBackwardWeight0", (x, g), (res,), backward, (x, g))[0]


# ---- public convolutions ----------------------------------------------------------------
def _check_conv(nd, name, input, weight, bias, groups, transposed=False):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"weight should have at least three dimensions: expected "
                           f"{nd + 2}-dimensional weight, but got weight of size "
                           f"{list(weight.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        other = weight if input.dtype is not weight.dtype else bias
        what = "weight" if other is weight else "bias"
        raise RuntimeError(f"Input type ({input.dtype}) and {what} type ({other.dtype}) should "
                           "be the same")
    c = input.shape[-nd - 1]
    if transposed:
        if weight.shape[0] != c:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                               f"expected input{list(input.shape)} to have {weight.shape[0]} "
                               f"channels, but got {c} channels instead")
        if c % groups:
            raise RuntimeError("Given groups, in_channels must be divisible by groups")
        cout = weight.shape[1] * groups
    else:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{list(weight.shape)} instead")
        if weight.shape[1] * groups != c:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                               f"expected input{list(input.shape)} to have "
                               f"{weight.shape[1] * groups} channels, but got {c} channels "
                               "instead")
        cout = weight.shape[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != cout):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {cout} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


def _add_bias(out, bias, nd):
    return out if bias is None else out + bias.reshape((-1,) + (1,) * nd)


def _convnd(nd, name, input, weight, bias, stride, padding, dilation, groups):
    _check_conv(nd, name, input, weight, bias, groups)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _tup(stride, nd, "stride"), _tup(dilation, nd, "dilation")
    ks = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = tuple((dilation[i] * (ks[i] - 1) // 2,
                          dilation[i] * (ks[i] - 1) - dilation[i] * (ks[i] - 1) // 2)
                         for i in range(nd))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _tup(padding, nd, "padding"))
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p[0] < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    size = tuple(x.shape[2:])
    out = _out_size(size, pads, ks, stride, dilation)
    if any(o <= 0 for o in out) or any(s + lo + hi < dilation[i] * (ks[i] - 1) + 1
                                       for i, (s, (lo, hi)) in enumerate(zip(size, pads))):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(str(s + lo + hi) for s, (lo, hi) in zip(size, pads))})"
                           f". Kernel size: ({' x '.join(str(k) for k in ks)}). Kernel size "
                           "can't be greater than actual input size")
    r = _add_bias(_conv(x, weight, stride, pads, dilation, groups), bias, nd)
    return r if batched else r.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) input with (out, C/groups, k) weight."""
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("conv1d", input, weight, bias)
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) input with (out, C/groups, kh, kw) weight.

    >>> F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(2, 3, 3, 3), padding=1).shape
    ember.Size([1, 2, 5, 5])
    """
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("conv2d", input, weight, bias)
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) input with (out, C/groups, kd, kh, kw) weight."""
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("conv3d", input, weight, bias)
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def _conv_transposend(nd, name, input, weight, bias, stride, padding, output_padding, groups,
                      dilation):
    _check_conv(nd, name, input, weight, bias, groups, transposed=True)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _tup(stride, nd, "stride"), _tup(dilation, nd, "dilation")
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    padding, output_padding = _tup(padding, nd, "padding"), _tup(output_padding, nd,
                                                                 "output_padding")
    for i in range(nd):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding_height: {output_padding[i]} "
                               f"stride: {stride[i]} dilation: {dilation[i]}")
    ks = tuple(weight.shape[2:])
    size = tuple((x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ks[i] - 1)
                 + output_padding[i] + 1 for i in range(nd))
    if any(s <= 0 for s in size):
        raise RuntimeError(f"Given input size per channel: {list(x.shape[2:])}. Calculated "
                           f"output size per channel: {list(size)}. Output size is too small")
    r = _conv_tr(x, weight, size, stride, tuple((p, p) for p in padding), dilation, groups)
    r = _add_bias(r, bias, nd)
    return r if batched else r.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-D convolution (the adjoint of conv1d); weight (in, out/groups, k)."""
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("conv_transpose1d", input, weight, bias)
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-D convolution (the adjoint of conv2d); weight (in, out/groups, kh, kw)."""
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("conv_transpose2d", input, weight, bias)
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    if _amp.autocast_enabled: input, weight, bias = _amp_cast("conv_transpose3d", input, weight, bias)
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)


# ---- unfold / fold (im2col / col2im) ----------------------------------------------------
def _unfold_op(x, ks, dil, pads, stride):
    a = _arr(x)
    out = _out_size(a.shape[2:], pads, ks, stride, dil)
    win = _windows(_pad_array(a, pads), ks, stride, dil, out)
    n, c = a.shape[:2]
    r = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * math.prod(ks),
                                                                      math.prod(out))
    res = wrap(r, x.dtype)
    size = a.shape[2:]

    def backward(grads, needs):
        return (_fold_op(grads[0], size, ks, dil, pads, stride),)
    return record_fn("Im2ColBackward0", (x,), (res,), backward)[0]


def _fold_op(cols, size, ks, dil, pads, stride):
    a = _arr(cols)
    n = a.shape[0]
    c = a.shape[1] // math.prod(ks)
    out = _out_size(size, pads, ks, stride, dil)
    padded = tuple(size[i] + pads[i][0] + pads[i][1] for i in range(2))
    buf = _col2im(a.reshape(n, c, *ks, *out), padded, stride, dil)
    res = wrap(np.ascontiguousarray(_crop(buf, pads, size)), cols.dtype)

    def backward(grads, needs):
        return (_unfold_op(grads[0], ks, dil, pads, stride),)
    return record_fn("Col2ImBackward0", (cols,), (res,), backward)[0]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of (N, C, H, W) as columns (N, C*kh*kw, L) (im2col)."""
    if input.dim() not in (3, 4):
        raise RuntimeError("Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    ks, dil = _tup(kernel_size, 2), _tup(dilation, 2)
    pads, stride = tuple((p, p) for p in _tup(padding, 2)), _tup(stride, 2)
    out = _out_size(x.shape[2:], pads, ks, stride, dil)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size="
                           f"{ks}, dilation={dil}, padding={_tup(padding, 2)}, calculated "
                           f"shape of the array of sliding blocks as {out}, but its components "
                           "must be at least one.")
    r = _unfold_op(x, ks, dil, pads, stride)
    return r if batched else r.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns (N, C*kh*kw, L) back into (N, C, H, W) (col2im); inverse layout of unfold."""
    if input.dim() not in (2, 3):
        raise RuntimeError("Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                           f"supported (got {input.dim()}D)")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    size, ks, dil = _tup(output_size, 2), _tup(kernel_size, 2), _tup(dilation, 2)
    pads, stride = tuple((p, p) for p in _tup(padding, 2)), _tup(stride, 2)
    k = math.prod(ks)
    if x.shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={ks}")
    out = _out_size(size, pads, ks, stride, dil)
    if math.prod(out) != x.shape[2]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={ks}, dilation={dil}, "
                           f"padding={_tup(padding, 2)}, stride={stride}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {out[0]} * {out[1]} = {math.prod(out)}, but got "
                           f"input.size(2)={x.shape[2]}.")
    r = _fold_op(x, size, ks, dil, pads, stride)
    return r if batched else r.squeeze(0)


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


def _tap_scatter(g, tap, ks, stride, dil, pads, size):
    """Adjoint of `_tap_gather`: add g into the input position its tap points at."""
    a = _arr(g)
    tap_t, tap = tap, tap._data
    nd = len(ks)
    out = a.shape[2:]
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
    ks = _tup(kernel_size, nd, "kernel_size")
    st = ks if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _tup(stride, nd, "stride")
    pad, dil = _tup(padding, nd, "padding"), _tup(dilation, nd, "dilation")
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero")
    if any(s <= 0 for s in st):
        raise RuntimeError(f"{name}: stride must be greater than zero")
    if any(d <= 0 for d in dil):
        raise RuntimeError(f"{name}: dilation must be greater than zero")
    if any(p > k // 2 for p, k in zip(pad, ks)):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={pad[0]}, kernel_size={ks[0]} and dilation={dil[0]}")
    return ks, st, pad, dil


def _max_poolnd(nd, name, input, kernel_size, stride, padding, dilation, ceil_mode,
                return_indices):
    ks, st, pad, dil = _pool_args(nd, name, input, kernel_size, stride, padding, dilation)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    size = tuple(x.shape[2:])
    out = _pool_out(size, ks, st, pad, dil, ceil_mode)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (x.shape[1],) + out))}). Output "
                           "size is too small")
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
    a = _arr(x)
    tiled = _tiled_max(a, ks, st, dil, pads, out)
    if tiled is not None:
        return wrap(tiled[0], ember.int64), wrap(tiled[1], x.dtype)
    low = -np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min
    win = _windows(_pad_array(a, pads, low), ks, st, dil, out)
    # taps first, each one contiguous: max and the first tap reaching it are then whole-array
    # ops (argmax over a short last axis is ~10x slower)
    taps = np.ascontiguousarray(win.transpose(tuple(range(2 + nd, 2 + 2 * nd))
                                              + tuple(range(2 + nd))))
    taps = taps.reshape((math.prod(ks),) + win.shape[:2 + nd])
    best = taps.max(0)
    if a.dtype.kind == "f" and np.isnan(best).any():
        tap = taps.argmax(0)            # NaN wins and argmax picks the first NaN, as PyTorch
    else:
        tap = np.full(best.shape, taps.shape[0] - 1, np.int64)
        for j in range(taps.shape[0] - 2, -1, -1):
            tap = np.where(taps[j] == best, j, tap)
    return wrap(tap, ember.int64), wrap(best, x.dtype)


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
    or when a NaN wins somewhere (the general path picks the first NaN, as PyTorch)."""
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
    kidx = np.unravel_index(tap._data, ks)
    flat = 0
    for i in range(nd):
        o = np.arange(out[i]).reshape((-1,) + (1,) * (nd - 1 - i))
        flat = flat * size[i] + (o * st[i] - pad[i] + kidx[i] * dil[i])
    return wrap(flat.astype(np.int64), ember.int64)


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
    if _amp.autocast_enabled: return _amp_fp32(max_pool3d, **locals())
    return _max_poolnd(3, "max_pool3d", input, kernel_size, stride, padding, dilation,
                       ceil_mode, return_indices)


max_pool1d_with_indices = max_pool1d
max_pool2d_with_indices = max_pool2d


# ---- average pooling: a depthwise convolution with a ones kernel, over a divisor ----------
def _avg_poolnd(nd, name, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
    ks, st, pad, dil = _pool_args(nd, name, input, kernel_size, stride, padding, 1)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    size = tuple(x.shape[2:])
    out = _pool_out(size, ks, st, pad, dil, ceil_mode)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (x.shape[1],) + out))}). Output "
                           "size is too small")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    pads = tuple((pad[i], max(0, (out[i] - 1) * st[i] + ks[i] - size[i] - pad[i]))
                 for i in range(nd))
    n, c = x.shape[:2]
    flat = x.reshape((n * c, 1) + size)
    ones = ember.ones((1, 1) + ks, dtype=x.dtype)
    s = _conv(flat, ones, st, pads, dil, 1).reshape((n, c) + out)
    if divisor_override is not None:
        r = s / divisor_override
    else:
        div = np.ones((), np.float64)
        for i in range(nd):
            start = np.arange(out[i]) * st[i] - pad[i]
            end = np.minimum(start + ks[i], size[i] + pad[i])
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, size[i])
            div = np.multiply.outer(div, end - start)
        r = s / wrap(div.astype(x.dtype.np), x.dtype)
    return r if batched else r.squeeze(0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over sliding windows of (N, C, L)."""
    return _avg_poolnd(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over sliding windows of (N, C, H, W) (or sum / `divisor_override`)."""
    return _avg_poolnd(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if _amp.autocast_enabled: return _amp_fp32(avg_pool3d, **locals())
    return _avg_poolnd(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)


# ---- adaptive pooling ---------------------------------------------------------------------
def _adaptive_bounds(n_in, n_out):
    i = np.arange(n_out)
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def _adaptive_sizes(nd, name, input, output_size):
    if input.dim() not in (nd + 1, nd + 2) or any(s == 0 for s in input.shape[-nd:]):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    if not isinstance(output_size, (list, tuple)):
        output_size = (output_size,) * nd
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    return tuple(input.shape[-nd + i] if o is None else int(o) for i, o in enumerate(output_size))


def _along(x, dim, m):
    """Contract dim `dim` of x with matrix m (out, in): a matmul on the moved axis."""
    return (x.movedim(dim, -1) @ m.t()).movedim(-1, dim)


def _adaptive_avg(nd, name, input, output_size):
    out = _adaptive_sizes(nd, name, input, output_size)
    x = input
    for i in range(nd):
        n_in = x.shape[-nd + i]
        start, end = _adaptive_bounds(n_in, out[i])
        j = np.arange(n_in)
        m = ((j >= start[:, None]) & (j < end[:, None])) / (end - start)[:, None]
        # ember.tensor, not wrap: a compiler trace records the (shape-only) constant
        x = _along(x, x.dim() - nd + i, ember.tensor(m.astype(x.dtype.np), dtype=x.dtype))
    return x


def adaptive_avg_pool1d(input, output_size):
    """Average over `output_size` near-equal windows of (N, C, L)."""
    return _adaptive_avg(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average over near-equal windows giving (N, C, *output_size) (None keeps a size)."""
    return _adaptive_avg(2, "adaptive_avg_pool2d", input, output_size)


def adaptive_avg_pool3d(input, output_size):
    if _amp.autocast_enabled: return _amp_fp32(adaptive_avg_pool3d, **locals())
    return _adaptive_avg(3, "adaptive_avg_pool3d", input, output_size)


def _adaptive_max(nd, name, input, output_size, return_indices):
    out = _adaptive_sizes(nd, name, input, output_size)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    a = _arr(x)
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
    it = wrap(flat.astype(np.int64), ember.int64)
    r = x.flatten(2).gather(2, it.flatten(2)).reshape(x.shape[:2] + out)
    if not batched:
        r, it = r.squeeze(0), it.squeeze(0)
    return (r, it) if return_indices else r


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(1, "adaptive_max_pool1d", input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over near-equal windows giving (N, C, *output_size)."""
    return _adaptive_max(2, "adaptive_max_pool2d", input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    if _amp.autocast_enabled: return _amp_fp32(adaptive_max_pool3d, **locals())
    return _adaptive_max(3, "adaptive_max_pool3d", input, output_size, return_indices)


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
    else:
        size = tuple(output_size)[-nd:]
        for i in range(nd):
            lo, hi = default[i] - st[i], default[i] + st[i]
            if not lo < size[i] < hi:
                raise ValueError(f"invalid output_size \"{list(output_size)}\" (dim {i} must be "
                                 f"between {lo} and {hi})")
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
    base = ember.zeros((n, c, math.prod(size)), dtype=x.dtype)
    r = base.scatter(2, ind.flatten(2), x.flatten(2)).reshape((n, c) + size)
    return r if batched else r.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    if _amp.autocast_enabled: return _amp_fp32(max_unpool1d, **locals())
    return _max_unpoolnd(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place each value of a max_pool2d output at its index in a zero (N, C, H, W) tensor."""
    if _amp.autocast_enabled: return _amp_fp32(max_unpool2d, **locals())
    return _max_unpoolnd(2, input, indices, kernel_size, stride, padding, output_size)


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
            x = x.index_select(dim, wrap(idx, ember.int64))
            continue
        build = _cubic_matrix if mode == "bicubic" else _linear_matrix
        m = build(in_size[i], out[i], align_corners, scales[i])
        x = _along(x, dim, wrap(m.astype(x.dtype.np), x.dtype))
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


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
    if _amp.autocast_enabled and mode in ("reflect", "replicate"): input = _amp_cast("reflection_pad", input)
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
                parts.append(ember.full(shape, v, dtype=x.dtype))
            if lo > 0 or hi > 0:
                x = ember.cat([parts[0], x, parts[1]], d)
        return x
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if not (k + 1 <= input.dim() <= k + 2) or k > 3:
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.dim()}D input tensor.")
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
        x = x.index_select(d, wrap(idx.astype(np.int64), ember.int64))
    return x


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


# ---- affine_grid / grid_sample ------------------------------------------------------------
def _base_coords(n, align_corners, dtype):
    if n <= 1:
        return ember.zeros(max(n, 0), dtype=dtype)
    c = ember.linspace(-1, 1, n, dtype=dtype)
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
        base = ember.stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                            ember.ones((h, w), dtype=theta.dtype)], -1)
        return (base.reshape(1, h * w, 3) @ theta.transpose(1, 2)).reshape(n, h, w, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {list(theta.shape)}.")
        n, _, d, h, w = size
        xs = _base_coords(w, align_corners, theta.dtype).reshape(1, 1, w).expand(d, h, w)
        ys = _base_coords(h, align_corners, theta.dtype).reshape(1, h, 1).expand(d, h, w)
        zs = _base_coords(d, align_corners, theta.dtype).reshape(d, 1, 1).expand(d, h, w)
        base = ember.stack([xs, ys, zs, ember.ones((d, h, w), dtype=theta.dtype)], -1)
        return (base.reshape(1, d * h * w, 4) @ theta.transpose(1, 2)).reshape(n, d, h, w, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                              f"transforms, respectively. Got size {size}.")


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
    odd = ember.remainder(flips, 2) == 1
    return ember.where(odd, hi - extra, extra + lo)


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
    if _amp.autocast_enabled: return _amp_fp32(grid_sample, **locals())
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
        lin = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).to(ember.int64)
        vals = flat.gather(2, lin.reshape(n, 1, ho * wo).expand(n, c, ho * wo))
        wt = ember.where(ok, weight, 0.0).reshape(n, 1, ho * wo)
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
