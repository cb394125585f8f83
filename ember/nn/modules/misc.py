"""Small layers: Softmax2d, RReLU, ChannelShuffle, CosineSimilarity, PairwiseDistance,
TripletMarginWithDistanceLoss, NLLLoss2d, CrossMapLRN2d, the deprecated Container, and
nn.factory_kwargs (the helper for modules that take device/dtype)."""
import warnings

import numpy as np

from ...autograd.function import Function
from ...ops.registry import FUNCTIONS
from .. import functional as F
from .module import Module
from .loss import _Loss, NLLLoss


class Softmax2d(Module):
    """Softmax over the channels of each spatial position ((C, H, W) or (N, C, H, W)).

    >>> nn.Softmax2d()(ember.zeros(1, 2, 1, 1)).flatten()
    tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3)


class RReLU(Module):
    """Randomized leaky ReLU (a random slope in U(lower, upper) while training)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        s = f"lower={self.lower}, upper={self.upper}"
        return s + (", inplace=True" if self.inplace else "")


class ChannelShuffle(Module):
    """Interleave `groups` groups of channels (ShuffleNet)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class CosineSimilarity(Module):
    """``F.cosine_similarity(x1, x2, dim, eps)``."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``F.pairwise_distance(x1, x2, p, eps, keepdim)``."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss with any distance function (pairwise_distance by default)."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """The old name of NLLLoss for (N, C, H, W) inputs (NLLLoss handles them)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.",
                      FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


def _cross_map_window(channels, size):
    """The 0/1 matrix M with scale[c] = sum_i M[c, i] * x[i]^2: torch's running-sum window
    (from the legacy Lua code: index 0 stays in every window up to c = pre_pad + ...)."""
    pre = int((size - 1) / 2 + 1)
    m = np.zeros((channels, channels))
    m[0, :min(pre, channels)] = 1
    for c in range(1, channels):
        m[c] = m[c - 1]
        if c < channels - pre + 1:
            m[c, c + pre - 1] += 1
        if c > pre:
            m[c, c - pre] -= 1
    return m


def _backward_window(channels, size):
    """The 0/1 matrix of the channel sums in torch's backward of CrossMapLRN2d (a window of
    `size` channels placed by its `inversePrePad`, not the transpose of the forward's)."""
    pre = int(size - (size - 1) / 2)
    if pre + channels > channels + size - 1:
        raise RuntimeError(f"start ({pre}) + length ({channels}) exceeds dimension size "
                           f"({channels + size - 1}).")
    m = np.zeros((channels, channels))
    for c in range(channels):
        lo, hi = max(c - pre, 0), min(c + size - 1 - pre, channels - 1)
        m[c, lo:hi + 1] = 1
    return m


class _CrossMapLRN2dFn(Function):
    """torch's legacy forward and its hand-written backward (which is not the exact gradient
    of the forward's asymmetric window: ember reproduces torch's numbers)."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        fwd = FUNCTIONS["tensor"](_cross_map_window(input.shape[1], size), dtype=input.dtype)
        sq = input.pow(2).movedim(1, -1)
        scale = (sq @ fwd.T).movedim(-1, 1) * (alpha / size) + k
        out = input * scale.pow(-beta)
        ctx.save_for_backward(input, out, scale)
        ctx.args = (size, alpha, beta)
        return out

    @staticmethod
    def backward(ctx, grad):
        input, out, scale = ctx.saved_tensors
        size, alpha, beta = ctx.args
        win = FUNCTIONS["tensor"](_backward_window(input.shape[1], size), dtype=input.dtype)
        ratio = (grad * out / scale).movedim(1, -1)
        accum = (ratio @ win.T).movedim(-1, 1)
        g = scale.pow(-beta) * grad - (2 * alpha * beta / size) * input * accum
        return g, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalisation across the channels of a 4-D input (the legacy Lua-torch
    layer): ``x * (k + alpha / size * sum of x^2 over the channel window) ** -beta``, with
    torch's window and torch's backward."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        return _CrossMapLRN2dFn.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class Container(Module):
    """Deprecated (torch's too): a Module holding the modules given as keywords."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


def factory_kwargs(kwargs):
    """The device/dtype/memory_format entries of `kwargs` (plus those of its own
    ``factory_kwargs`` entry), ready for ``ember.empty(..., **result)``; other keys are a
    TypeError.

    >>> nn.factory_kwargs({"dtype": ember.float64})
    {'dtype': ember.float64}
    """
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    expected = simple | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in out:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            out[k] = kwargs[k]
    return out
