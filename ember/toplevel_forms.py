"""torch's top-level forms of nn.functional ops and of in-place Tensor methods.

PyTorch code calls ``torch.conv2d``, ``torch.layer_norm``, ``torch.embedding(weight,
indices)``, ``torch.dropout(x, p, train)`` or ``torch.relu_(x)`` as well as the
nn.functional / method forms. These are those names, with torch's top-level signatures
(which differ from nn.functional's: embedding takes the weight first, batch_norm takes
weight and bias before the running statistics, the losses take `reduction` as the integer
enum 0 = "none", 1 = "mean", 2 = "sum", defaulting to 0 in torch's bindings, the norms take
a trailing `cudnn_enable` flag),
each calling the one definition in ember.nn.functional or the Tensor method.

ember/__init__.py publishes `__all__`.
"""
from .core.tensor import Tensor
from .nn import functional as F
from .ops.registry import FUNCTIONS as _F

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}
_EB_MODE = {0: "sum", 1: "mean", 2: "max"}      # embedding_bag's `mode` enum


def _reduction(r):
    if not isinstance(r, int) or isinstance(r, bool):
        raise TypeError(f"argument 'reduction' must be int, not {type(r).__name__}")
    if r not in _REDUCTION:
        raise ValueError(f"{r} is not a valid value for reduction")
    return _REDUCTION[r]


# ---- in-place methods as functions: torch.abs_(x) is x.abs_() ------------------------------
_INPLACE = ("abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ "
            "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ detach_ erf_ "
            "erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ i0_ index_put_ log10_ log1p_ "
            "log2_ log_ logit_ nan_to_num_ neg_ negative_ reciprocal_ relu_ round_ rsqrt_ "
            "sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ deg2rad_ "
            "rad2deg_ gcd_ lcm_ ldexp_ as_strided_ resize_as_").split()
# predicates torch has as functions too
_PREDICATES = ("is_signed", "is_inference")


def _method_as_function(name):
    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(x, ...)`` is ``x.{name}(...)``."
    return fn


_FORWARDED = {n: _method_as_function(n) for n in _INPLACE + list(_PREDICATES)
              if hasattr(Tensor, n)}


# ---- convolutions ---------------------------------------------------------------------------
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = (F.conv_transpose1d, F.conv_transpose2d,
                                                        F.conv_transpose3d)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The general N-d (transposed) convolution that conv{1,2,3}d are special cases of."""
    nd = weight.dim() - 2
    if not 1 <= nd <= 3:
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, got {weight.dim()}D")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution in time-batch-channel layout: input (T, B, C_in), weight
    (K, C_in, C_out), bias (C_out,) -> (T_out, B, C_out)."""
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


# ---- normalisation ------------------------------------------------------------------------
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Batch normalisation, torch's top-level argument order (weight and bias first)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


# ---- embedding, dropout ---------------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by `indices` (torch's order: weight first; padding_idx -1 is
    none)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """torch.embedding_bag, ATen's form: `mode` 0 sum, 1 mean, 2 max; returns (output,
    offset2bag, bag_size, max_indices) as torch's CPU kernel fills them: offset2bag is each
    index's bag (left empty by sum's fast path: a float32/float16/bfloat16 weight with unit
    row stride and no padding_idx); bag_size counts each bag's non-padding indices (zeros
    for sum); max_indices is the weight row each max came from (max), bag_size (mean) or
    zeros (sum). The output comes from nn.functional.embedding_bag (and its gradient)."""
    import numpy as np
    from .dispatch_args import tensor_args
    tensor_args("embedding_bag", ("weight", 1, weight), ("indices", 2, indices),
                ("offsets", 3, offsets))
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    for what, t in (("indices", indices), ("offsets", offsets)):
        if t.dtype.name not in ("int64", "int32"):
            raise RuntimeError(f"Expected tensor for argument #1 '{what}' to have one of the "
                               f"following scalar types: Long, Int; but got "
                               f"{_legacy_type(t)} instead (while checking arguments for "
                               "embedding_bag)")
    if per_sample_weights is not None:
        if mode != 0:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with "
                               "mode='sum'")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type "
                               f"as tensor for argument #1 'per_sample_weights'; but type "
                               f"{_legacy_type(weight)} does not equal "
                               f"{_legacy_type(per_sample_weights)} (while checking arguments "
                               "for embedding_bag)")
    idx = indices.detach().numpy().reshape(-1).astype(np.int64)
    n_emb = weight.shape[0]
    for i, v in enumerate(idx):
        if not 0 <= v < n_emb:
            raise RuntimeError(f"Index {i} of input takes value {v} which is not in the valid "
                               f"range [0, {n_emb})")
    pad = None if padding_idx is None else (padding_idx + n_emb if padding_idx < 0
                                            else padding_idx)
    flat = indices.reshape(-1)
    out = F.embedding_bag(flat, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                          mode=_EB_MODE[mode], sparse=sparse,
                          per_sample_weights=per_sample_weights,
                          include_last_offset=include_last_offset, padding_idx=pad)
    off = offsets.detach().numpy().astype(np.int64)
    nbags = out.shape[0]
    ends = np.append(off[1:], idx.size)[:nbags] if not include_last_offset else off[1:nbags + 1]
    bag_of = np.repeat(np.arange(nbags), np.maximum(ends - off[:nbags], 0))
    keep = idx[:bag_of.size] != pad if pad is not None else np.ones(bag_of.size, bool)
    counts = np.bincount(bag_of[keep], minlength=nbags)
    it = indices.dtype.np
    fast = mode == 0 and pad is None and weight.dtype.name in ("float32", "float16", "bfloat16") \
        and weight.stride(-1) == 1
    offset2bag = np.zeros(0, it) if fast else bag_of.astype(it)
    bag_size = np.zeros(nbags, it) if mode == 0 else counts.astype(it)
    if mode == 2:
        w = weight.detach()._numpy()
        max_indices = np.zeros((nbags, weight.shape[1]), it)
        for b in range(nbags):
            rows = idx[:bag_of.size][(bag_of == b) & keep]
            if rows.size:
                max_indices[b] = rows[np.argmax(w[rows], axis=0)]
    else:
        max_indices = bag_size.copy()
    as_t = _F["from_numpy"]
    return out, as_t(offset2bag), as_t(bag_size), as_t(max_indices)


def _legacy_type(t):
    from .core.dtype import torch_name
    return f"torch.{torch_name(t.dtype)}Tensor"


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Scale, in place, the rows of `input` named by `indices` whose `norm_type`-norm
    exceeds max_norm down to norm max_norm (what embedding's max_norm does first)."""
    rows = _F["unique"](indices.reshape(-1))
    from .autograd.grad_mode import no_grad
    with no_grad():
        sel = input[rows]
        norms = _F["norm"](sel, norm_type, -1, True)
        scale = _F["where"](norms > max_norm, max_norm / (norms + 1e-7), _F["ones_like"](norms))
        input[rows] = sel * scale
    return input


def dropout(input, p, train):
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    """Dropout of whole channels (dim 1), as nn.Dropout2d/3d do."""
    return _feature(F.dropout2d, input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature(F.dropout2d, input, p, train, True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def _feature(fn, input, p, train, inplace):
    return fn(input, p, train, inplace=inplace)


# ---- pooling -------------------------------------------------------------------------------
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode,
                        return_indices=True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode,
                        count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


# ---- shuffles ----------------------------------------------------------------------------
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle


def channel_shuffle(input, groups):
    """Interleave the channels of `groups` groups: (N, g*k, ...) -> groups transposed."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


# ---- activations -----------------------------------------------------------------------------
def celu(input, alpha=1.0):
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    return F.celu(input, alpha, inplace=True)


def selu(input):
    return F.selu(input)


def selu_(input):
    return F.selu(input, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomised leaky ReLU: negative inputs scaled by a slope drawn from U(lower, upper)
    per element when training, else by the mean slope (lower + upper) / 2."""
    if training:
        slope = _F["rand_like"](input) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2
    return input.where(input >= 0, input * slope)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return input.copy_(rrelu(input, lower, upper, training, generator))


def threshold(input, threshold, value):
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return F.threshold(input, threshold, value, inplace=True)


prelu, hardshrink = F.prelu, F.hardshrink


def bilinear(input1, input2, weight, bias=None):
    return F.bilinear(input1, input2, weight, bias)


# ---- losses: reduction is torch's integer enum here ----------------------------------------
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def kl_div(input, target, reduction=0, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


# ---- distances, padding, grids ------------------------------------------------------------
def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) tensor, for every pair i < j in
    row-major order (the upper triangle of cdist, flattened)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = _F["triu_indices"](n, n, 1)
    return _F["norm"](input[i] - input[j], p, -1)


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, pad, "constant", value)


def affine_grid_generator(theta, size, align_corners):
    return F.affine_grid(theta, size, align_corners=align_corners)


_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sample with torch's integer modes (0 bilinear, 1 nearest, 2 bicubic; padding 0
    zeros, 1 border, 2 reflection)."""
    return F.grid_sample(input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode],
                         align_corners)


# (no grid_sampler_3d: ember's grid_sample is 2-d only, see the README's limitations)
grid_sampler_2d = grid_sampler


# ---- recurrent cells ------------------------------------------------------------------------
def _linear(x, w, b):
    return F.linear(x, w, b)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: hx = (h, c) -> (h', c'), gates ordered input, forget, cell, output."""
    h, c = hx
    gates = _linear(input, w_ih, b_ih) + _linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, gates ordered reset, update, new (torch's layout)."""
    gi = _linear(input, w_ih, b_ih).chunk(3, -1)
    gh = _linear(hx, w_hh, b_hh).chunk(3, -1)
    r = (gi[0] + gh[0]).sigmoid()
    z = (gi[1] + gh[1]).sigmoid()
    n = (gi[2] + r * gh[2]).tanh()
    return (1 - z) * n + z * hx


def _rnn(cell, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first, n_states):
    """A multi-layer (bidirectional) recurrence of `cell` over time, torch's flat-weights
    layout: per layer, per direction, w_ih, w_hh (and b_ih, b_hh)."""
    x = input.transpose(0, 1) if batch_first else input
    states = list(hx) if n_states == 2 else [hx]
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    finals = [[] for _ in range(n_states)]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            w = params[k:k + per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            h = [s[layer * dirs + d] for s in states]
            steps = range(x.shape[0] - 1, -1, -1) if d == 1 else range(x.shape[0])
            ys = [None] * x.shape[0]
            for t in steps:
                r = cell(x[t], h[0] if n_states == 1 else tuple(h), w_ih, w_hh, b_ih, b_hh)
                h = list(r) if n_states == 2 else [r]
                ys[t] = h[0]
            outs.append(_F["stack"](ys, 0))
            for i in range(n_states):
                finals[i].append(h[i])
        x = outs[0] if dirs == 1 else _F["cat"](outs, -1)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    out = x.transpose(0, 1) if batch_first else x
    return (out,) + tuple(_F["stack"](f, 0) for f in finals)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first):
    """The whole LSTM: (output, h_n, c_n), as nn.LSTM computes it."""
    return _rnn(lstm_cell, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first, 2)


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first):
    """The whole GRU: (output, h_n)."""
    return _rnn(gru_cell, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first, 1)


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    return _rnn(rnn_tanh_cell, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first, 1)


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    return _rnn(rnn_relu_cell, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first, 1)


# ---- torch.fork / torch.wait, eagerly -------------------------------------------------------
class Future:
    """The result of fork: already computed (ember runs the function at once)."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """Run func(*args, **kwargs) (synchronously) and return a Future holding its result."""
    return Future(func(*args, **kwargs))


def wait(future):
    """The value of a Future from fork."""
    return future.wait()


__all__ = sorted(set(_FORWARDED) | set("""
    embedding_renorm_ embedding_bag conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution conv_tbc
    layer_norm group_norm rms_norm batch_norm instance_norm embedding dropout dropout_
    alpha_dropout alpha_dropout_ feature_dropout feature_dropout_ feature_alpha_dropout
    feature_alpha_dropout_ max_pool1d max_pool2d max_pool3d max_pool1d_with_indices avg_pool1d
    adaptive_avg_pool1d adaptive_max_pool1d pixel_shuffle pixel_unshuffle channel_shuffle
    native_channel_shuffle celu celu_ selu selu_ rrelu rrelu_ threshold threshold_ prelu
    hardshrink bilinear binary_cross_entropy_with_logits cosine_embedding_loss
    hinge_embedding_loss kl_div margin_ranking_loss poisson_nll_loss triplet_margin_loss ctc_loss
    cosine_similarity pairwise_distance pdist constant_pad_nd affine_grid_generator grid_sampler
    grid_sampler_2d rnn_tanh_cell rnn_relu_cell lstm_cell gru_cell lstm gru
    rnn_tanh rnn_relu fork wait""".split()))
globals().update(_FORWARDED)
