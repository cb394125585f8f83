"""The data layer: dtypes, devices, storage, strides and the Tensor class."""
from . import dtype, device, storage, strides, tensor  # noqa: F401
