"""Dropout layers: active in training mode, the identity in eval mode.

    drop = nn.Dropout(p=0.1)
    y = drop(x)          # training: ~10% zeros, the rest scaled by 1/0.9
    drop.eval(); drop(x) is x
"""
from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability `p`, scale the rest by ``1 / (1 - p)``."""
    _fn = F.dropout


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) / (C, L) input."""
    _fn = F.dropout1d


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input."""
    _fn = F.dropout2d


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) input."""
    _fn = F.dropout3d


class AlphaDropout(_DropoutNd):
    """Dropout that preserves SELU's zero mean and unit variance."""
    _fn = F.alpha_dropout


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""
    _fn = F.feature_alpha_dropout
