"""Power-average (LPPool1d/2d/3d), fractional max pooling (FractionalMaxPool2d/3d) and
MaxUnpool3d layers: thin wrappers of the F.* functions in functional_extra.py."""
from .. import functional as F
from .module import Module
from .pooling import _MaxUnpoolNd, _ntuple


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """``(sum over each window of x ** p) ** (1/p)``.

    >>> nn.LPPool1d(2, 3)(ember.ones(1, 1, 6)).shape
    ember.Size([1, 1, 2])
    """
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, self._nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, self._nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random fractional windows (see F.fractional_max_pool2d).

    >>> nn.FractionalMaxPool2d(2, output_ratio=0.5)(ember.ones(1, 1, 8, 8)).shape
    ember.Size([1, 1, 4, 4])
    """
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd = 3


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of MaxPool3d: values go back to their argmax positions, zeros elsewhere."""
    _nd = 3
    _fn = staticmethod(F.max_unpool3d)
