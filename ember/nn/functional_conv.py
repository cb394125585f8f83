"""Convolution functions of ember.nn.functional (conv*d, conv_transpose*d, unfold, fold),
and the one module nn.functional star-imports for convolution, pooling and resampling.

The convolutions call the three primitives of functional_im2col (one BLAS matmul over an
im2col matrix each); pooling lives in functional_pool and resampling (interpolate, pad,
pixel_shuffle, grid_sample) in functional_resample, both re-exported here.
"""
import math

import numpy as np

from ..autograd.grad_mode import state as _state
from ..core.dtype import float32 as _float32, float64 as _float64
from ..core.tensor import Tensor
from ..dispatch import wrap, with_mode_seam
from ..dispatch_args import int_arg
from ..ops.matmul import record_fn
from ..ops.nn_ops import composition as _composition  # (registers a function as its op)
from ..ops.registry import FP32 as _FP32, LOWER_PRECISION as _LOWP
from .functional_im2col import (_tup, _arr, _pad_array, _windows, _col2im, _crop, _out_size,
                               _conv, _conv_tr, _conv_wgrad)  # noqa: F401  (_conv_wgrad: see below)
from .functional_pool import *  # noqa: F401,F403  (pooling)
from .functional_resample import *  # noqa: F401,F403  (resampling)
# the primitives recorded whole by a compiler trace stay reachable here, where
# nn.functional looks them up
from .functional_pool import (_max_pool_select, _tap_gather, _tap_scatter,  # noqa: F401
                              _max_pool_indices)
from ..ops.dtype_support import ALL_BUT_BOOL, COMPLEX, FLOATING, INT64

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "unfold", "fold", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "interpolate", "upsample",
    "upsample_nearest", "upsample_bilinear", "pad", "pixel_shuffle", "pixel_unshuffle",
    "affine_grid", "grid_sample",
]


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
        if weight.shape[0] < groups:       # (an empty weight: no output channels)
            raise RuntimeError(f"Given groups={groups}, expected weight to be at least "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{list(weight.shape)} instead")
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


_FUSED_BIAS = (_float32, _float64)   # (a lower precision adds the bias in its own rounding)


def _add_bias(out, bias, nd):
    return out if bias is None else out + bias.reshape((-1,) + (1,) * nd)


def _conv_args(name, input, weight, bias, stride, padding, dilation, groups):
    """torch's parser on a conv's arguments: a non-tensor input or weight (or a bias that is
    neither a tensor nor None), a float, bool or None where an int (tuple) goes: no overload
    matches, TypeError."""
    ok = (isinstance(input, Tensor) and isinstance(weight, Tensor)
          and (bias is None or isinstance(bias, Tensor)))
    if ok:
        try:
            for k, v in enumerate((stride, padding, dilation)):
                if not (k == 1 and isinstance(v, str)):     # (the types only: sizes later)
                    _tup(v, len(v) if isinstance(v, (list, tuple)) else 1)
            int_arg(groups, name, "groups", 7)
        except TypeError:
            ok = False
    if not ok:
        got = ", ".join(type(a).__name__ for a in (input, weight, bias, stride, padding,
                                                    dilation, groups))
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of: * (Tensor input, Tensor weight, Tensor bias = "
                        f"None, tuple of ints stride = 1, tuple of ints padding = 0, tuple of "
                        f"ints dilation = 1, int groups = 1) * (Tensor input, Tensor weight, "
                        f"Tensor bias = None, tuple of ints stride = 1, str padding = \"valid\", "
                        f"tuple of ints dilation = 1, int groups = 1)")


def _convnd(nd, name, input, weight, bias, stride, padding, dilation, groups):
    _conv_args(name, input, weight, bias, stride, padding, dilation, groups)
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
    if bias is not None and not _state.modes and x.dtype in _FUSED_BIAS:
        r = _conv(x, weight, stride, pads, dilation, groups, bias)   # added in the layout pass
    else:
        r = _add_bias(_conv(x, weight, stride, pads, dilation, groups), bias, nd)
    return r if batched else r.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) input with (out, C/groups, k) weight."""
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)
conv1d = _composition("conv1d", conv1d, amp=_LOWP,
    dtypes=ALL_BUT_BOOL, dtype_kernel="slow_conv2d_cpu")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) input with (out, C/groups, kh, kw) weight.

    >>> F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(2, 3, 3, 3), padding=1).shape
    ember.Size([1, 2, 5, 5])
    """
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)
conv2d = _composition("conv2d", conv2d, amp=_LOWP,
    dtypes=ALL_BUT_BOOL, dtype_kernel="slow_conv2d_cpu")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) input with (out, C/groups, kd, kh, kw) weight."""
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)
conv3d = _composition("conv3d", conv3d, amp=_LOWP,
    dtypes=ALL_BUT_BOOL, dtype_kernel="compute_columns3d")


def _conv_transposend(nd, name, input, weight, bias, stride, padding, output_padding, groups,
                      dilation):
    groups = int_arg(groups, name, "groups", 7)
    _check_conv(nd, name, input, weight, bias, groups, transposed=True)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _tup(stride, nd, "stride", name, 4), _tup(dilation, nd, "dilation",
                                                                 name, 8)
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    padding, output_padding = _tup(padding, nd, "padding", name, 5), _tup(
        output_padding, nd, "output_padding", name, 6)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
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
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)
conv_transpose1d = _composition("conv_transpose1d", conv_transpose1d, amp=_LOWP,
    dtypes=FLOATING | COMPLEX | INT64,
    dtype_kernel="slow_conv_transpose2d_out_cpu")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-D convolution (the adjoint of conv2d); weight (in, out/groups, kh, kw)."""
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)
conv_transpose2d = _composition("conv_transpose2d", conv_transpose2d, amp=_LOWP,
    dtypes=FLOATING | COMPLEX | INT64,
    dtype_kernel="slow_conv_transpose2d_out_cpu")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding,
                             output_padding, groups, dilation)
conv_transpose3d = _composition("conv_transpose3d", conv_transpose3d, amp=_LOWP,
    dtypes=FLOATING | COMPLEX | INT64,
    dtype_kernel="slow_conv_transpose3d_out_cpu")


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
unfold = with_mode_seam("F.unfold", unfold)  # traced as one call


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
fold = with_mode_seam("F.fold", fold)  # traced as one call
