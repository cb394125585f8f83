"""More of nn.functional, each a composition of ember ops (so autograd comes for free):
power-average pooling (lp_pool1d/2d/3d), fractional max pooling, max_unpool3d and the
``*_with_indices`` forms, channel_shuffle, pdist, rrelu, triplet_margin_with_distance_loss, conv_tbc, and the helpers torch's functional module
exports (boolean_dispatch, assert_int_or_pair, the grid_sample mode tables).

    y = F.lp_pool2d(x, norm_type=2, kernel_size=3)
    y, idx = F.fractional_max_pool2d(x, 3, output_ratio=0.5, return_indices=True)
"""
import math

import numpy as np

from ..core.tensor import Tensor
from ..dispatch import not_implemented as _not_implemented
from ..ops.registry import FUNCTIONS
from . import functional_pool as _pool
from .functional_im2col import _tup
from .functional_conv import conv1d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices", "max_unpool3d", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "channel_shuffle", "native_channel_shuffle",
           "pdist", "rrelu", "rrelu_", "triplet_margin_with_distance_loss",
           "conv_tbc", "boolean_dispatch", "assert_int_or_pair",
           "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES"]

# grid_sample's mode and padding_mode names and their codes (torch's tables)
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


# ---- power-average pooling ----
def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    ks = _tup(kernel_size, nd)
    avg = getattr(_pool, f"avg_pool{nd}d")
    kw = {} if stride is None else {"stride": stride}
    out = avg(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode, **kw)
    # sign * relu(|out|): a window whose powers average to a negative keeps its sign
    return (out.sign() * out.abs().relu()).mul(math.prod(ks)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over each window of x ** p) ** (1/p)`` along the last dim.

    >>> F.lp_pool1d(ember.ones(1, 1, 4), 2, 2)
    tensor([[[1.4142, 1.4142]]])
    """
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The 2-D power-average pooling (see lp_pool1d)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The 3-D power-average pooling (see lp_pool1d)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# ---- fractional max pooling ----
def _intervals(sample, n_in, n_out, pool, dt):
    """torch's window starts: pseudo-random steps of average (n_in - pool) / (n_out - 1),
    computed in the input's precision, the last window flush with the end."""
    seq = np.zeros(n_out, np.int64)
    if n_out > 1:
        alpha = dt.type(n_in - pool) / dt.type(n_out - 1)
        s = dt.type(sample)
        for i in range(n_out - 1):
            seq[i] = int(dt.type(i + s) * alpha) - int(s * alpha)
    if n_out > 0:
        seq[n_out - 1] = n_in - pool
    return seq


def _fractional(nd, name, input, kernel_size, output_size, output_ratio, return_indices,
                _random_samples):
    if output_size is None and output_ratio is None:
        raise ValueError(f"fractional_max_pool{nd}d requires specifying either an output_size "
                         "or an output_ratio")
    ks = _tup(kernel_size, nd)
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"fractional_max_pool{nd}d(): Expected {nd + 1}D or {nd + 2}D tensor, "
                           f"but got: {list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    spatial = tuple(x.shape[2:])
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) \
            else (output_ratio,) * nd
        out = tuple(int(spatial[i] * ratio[i]) for i in range(nd))
    else:
        out = _tup(output_size, nd)
    n, c = x.shape[:2]
    # torch checks the last dims first (width, then height, then time)
    labels = {2: ("height", "width"), 3: ("time", "height", "width")}[nd]
    for i in reversed(range(nd)):
        if out[i] + ks[i] - 1 > spatial[i]:
            raise RuntimeError(f"{name}(): pool {labels[i]} {ks[i]} too large relative to input "
                               f"{labels[i]} {spatial[i]}")
    if _random_samples is None:
        _random_samples = FUNCTIONS["rand"](n, c, nd, dtype=x.dtype)
    dt = x.detach()._numpy().dtype if x.dtype.is_floating_point else np.dtype(np.float32)
    samples = _random_samples.detach()._numpy().reshape(n, c, nd)
    xv = x.detach()._numpy().reshape(n, c, -1)
    strides = [math.prod(spatial[i + 1:]) for i in range(nd)]
    idx = np.zeros((n, c, math.prod(out)), np.int64)
    # the samples are ordered (width, height) in 2-D and (time, height, width) in 3-D
    order = [1, 0] if nd == 2 else [0, 1, 2]
    for b in range(n):
        for ch in range(c):
            starts = [_intervals(samples[b, ch, order[i]], spatial[i], out[i], ks[i], dt)
                      for i in range(nd)]
            plane = xv[b, ch]
            k = 0
            for pos in np.ndindex(*out):
                base = [starts[i][pos[i]] for i in range(nd)]
                win = [np.arange(base[i], base[i] + ks[i]) for i in range(nd)]
                flat = sum(np.ix_(*win)[i] * strides[i] for i in range(nd)).ravel()
                vals = plane[flat]
                nan = np.flatnonzero(np.isnan(vals))
                idx[b, ch, k] = flat[nan[0] if nan.size else int(np.argmax(vals))]
                k += 1
    indices = FUNCTIONS["tensor"](idx)
    y = x.flatten(2).gather(2, indices).reshape((n, c) + out)
    indices = indices.reshape((n, c) + out)
    if not batched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices) if return_indices else y


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max pooling over windows at pseudo-random fractional strides (Graham, 2014); the
    windows follow `_random_samples` (N, C, 2) in [0, 1), drawn when not given."""
    return _fractional(2, "fractional_max_pool2d", input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """The 3-D fractional max pooling (`_random_samples` of shape (N, C, 3))."""
    return _fractional(3, "fractional_max_pool3d", input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool2d returning (output, indices)."""
    return _fractional(2, "fractional_max_pool2d", input, kernel_size, output_size,
                       output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool3d returning (output, indices)."""
    return _fractional(3, "fractional_max_pool3d", input, kernel_size, output_size,
                       output_ratio, True, _random_samples)


# ---- unpooling and the *_with_indices forms ----
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place each value of a max_pool3d output at its index in a zero (N, C, D, H, W)."""
    return _pool._max_unpoolnd(3, input, indices, kernel_size, stride, padding, output_size)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool3d returning (output, indices), as torch's."""
    return _pool.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d returning (output, indices)."""
    return _pool.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d returning (output, indices)."""
    return _pool.adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d returning (output, indices)."""
    return _pool.adaptive_max_pool3d(input, output_size, True)


# ---- channel shuffle, pdist, rrelu, in-place activations ----
def channel_shuffle(input, groups):
    """Split the channels into `groups` and interleave them (ShuffleNet).

    >>> F.channel_shuffle(ember.arange(4.).reshape(1, 4, 1), 2).flatten()
    tensor([0., 2., 1., 3.])
    """
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    return (input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
            .reshape((n, c) + rest))


native_channel_shuffle = channel_shuffle


def pdist(input, p=2):
    """``||x_i - x_j||_p`` for every pair of rows i < j, in row-major order."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if i.size == 0:
        return input.new_zeros(0)
    ii, jj = FUNCTIONS["tensor"](i), FUNCTIONS["tensor"](j)
    return (input[ii] - input[jj]).norm(p, dim=1)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: negative inputs times a slope drawn from U(lower, upper) per
    element in training, times (lower + upper) / 2 otherwise (leaky_relu)."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise _not_implemented("leaky_relu_cpu", input.dtype)
    if training:
        slope = FUNCTIONS["empty_like"](input).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    src = input.clone() if inplace and input.requires_grad else input
    out = FUNCTIONS["where"](src > 0, src, src * slope)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place rrelu."""
    return rrelu(input, lower, upper, training, inplace=True)


# ---- a loss and a legacy convolution ----
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance `d` (pairwise_distance by
    default); ``swap`` uses min(d(a, n), d(p, n))."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    if distance_function is None:
        distance_function = _pairwise_distance
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = FUNCTIONS["minimum"](d_neg, distance_function(positive, negative))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _pairwise_distance(x1, x2):
    # F.pairwise_distance with its defaults (p=2, eps=1e-6); that one lives in
    # functional.py, which imports this file
    d = max(x1.dim(), x2.dim())
    return (x1 - x2 + 1e-6).norm(2, d - 1 if d else 0)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution on (time, batch, channels) input; weight is (kernel, in, out)."""
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


# ---- helpers of torch's functional module ----
def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling `if_true` or `if_false` by the boolean argument `arg_name` (at
    position `arg_index`, `default` when absent): how torch builds ``max_pool2d`` from its
    with- and without-indices forms. The docstring comes from whichever has one.

    >>> f = boolean_dispatch("flag", 1, False, lambda x, flag=False: 1,
    ...                      lambda x, flag=False: 0, None, "f")
    >>> f(0, True), f(0)
    (1, 0)
    """
    def fn(*args, **kwargs):
        flag = default
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = doc = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = doc = if_true.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is None:
        doc = None
    else:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = doc
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


def assert_int_or_pair(arg, arg_name, message):
    """AssertionError(message.format(arg_name)) unless `arg` is an int or has 2 items."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
