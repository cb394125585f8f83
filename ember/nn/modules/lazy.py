"""Lazy layers: convolutions, transposed convolutions, batch and instance norms whose input
channels are read from the first input (as nn.LazyLinear). After that call the module's
class becomes the plain one (LazyConv2d -> Conv2d) with its parameters initialised.

    conv = nn.LazyConv2d(16, 3)
    conv(ember.randn(1, 3, 8, 8))      # now a Conv2d(3, 16, ...)

`UninitializedBuffer` stands for a lazy norm's running statistics until then.
"""
from ...core.tensor import Tensor
from ...ops.creation import empty, zeros, ones, tensor
from ...core import dtype as D
from ..parameter import UninitializedParameter, _alias
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d


class UninitializedBuffer(Tensor):
    """A buffer whose shape is not known yet (a lazy module's running statistics)."""

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = _alias(cls, empty(0, dtype=dtype))
        t.persistent = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    def __repr__(self):
        return "<UninitializedBuffer>"


class _LazyMixin:
    """The first forward reads the shapes from the input, materialises, initialises and
    turns the module into `cls_to_become`."""
    cls_to_become = None

    def _lazy_setup(self):
        self._lazy_hook = self.register_forward_pre_hook(_LazyMixin._infer_parameters)

    def has_uninitialized_params(self):
        tables = (self._parameters.values(), self._buffers.values())
        return any(isinstance(t, (UninitializedParameter, UninitializedBuffer))
                   for table in tables for t in table)

    def reset_parameters(self):
        if not self.has_uninitialized_params():
            super().reset_parameters()

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        if not module.has_uninitialized_params():
            module._lazy_hook.remove()
            del module._lazy_hook
            module.__class__ = module.cls_to_become


# ---------------------------------------------------------------- convolutions
class _LazyConvNd(_LazyMixin):
    def _lazy_conv_init(self, bias, dtype):
        self.in_channels = 0
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)
        self._lazy_setup()

    def _get_in_channels(self, input):
        nd = len(self.kernel_size)
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{'ember.Size(' + str(list(input.shape)) + ')'}")
        return input.shape[1] if input.dim() == nd + 2 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv(base, doc):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, *rest, **kw):
        # build the base with a placeholder in_channels (= groups), then make it lazy
        # groups follows dilation (conv) or output_padding (transposed): rest[1] either way
        groups = kw.get("groups", rest[1] if len(rest) > 1 else 1)
        base.__init__(self, groups, out_channels, kernel_size, stride, padding, *rest, **kw)
        bias = self.bias is not None
        self._lazy_conv_init(bias, kw.get("dtype"))

    return type(f"Lazy{base.__name__}", (_LazyConvNd, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d, "A Conv1d whose in_channels is read from the first input.")
LazyConv2d = _lazy_conv(Conv2d, "A Conv2d whose in_channels is read from the first input.")
LazyConv3d = _lazy_conv(Conv3d, "A Conv3d whose in_channels is read from the first input.")
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, "A lazy ConvTranspose1d (see LazyConv1d).")
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, "A lazy ConvTranspose2d (see LazyConv1d).")
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, "A lazy ConvTranspose3d (see LazyConv1d).")


# ---------------------------------------------------------------- norms
class _LazyNormBase(_LazyMixin):
    def _lazy_norm_init(self, dtype):
        self.num_features = 0
        self._dtype = dtype
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=D.int64)
        self._lazy_setup()

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        # torch reads dim 1 even for an unbatched instance-norm input
        self.num_features = input.shape[1]
        n = self.num_features
        if self.affine:
            self.weight.materialize((n,))
            self.bias.materialize((n,))
        if self.track_running_stats:
            dt = self.__dict__.pop("_dtype", None)
            # a buffer cannot change class in place: fresh tensors take the names
            self.running_mean = zeros(n, dtype=dt)
            self.running_var = ones(n, dtype=dt)
        self.reset_parameters()


def _lazy_norm(base, default_affine, default_track, doc):
    def __init__(self, eps=1e-5, momentum=0.1, affine=default_affine,
                 track_running_stats=default_track, device=None, dtype=None):
        base.__init__(self, 1, eps, momentum, affine, track_running_stats, device, dtype)
        self._lazy_norm_init(dtype)

    return type(f"Lazy{base.__name__}", (_LazyNormBase, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, True, True, "A BatchNorm1d whose num_features is "
                             "read from the first input.")
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, True, True, "A lazy BatchNorm2d.")
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, True, True, "A lazy BatchNorm3d.")
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, True, True, "A lazy InstanceNorm1d.")
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, True, True, "A lazy InstanceNorm2d.")
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, True, True, "A lazy InstanceNorm3d.")
