"""Store conv weights in another memory format (``torch.nn.utils.memory_format``) and
``skip_init`` (``torch.nn.utils.init``).

    convert_conv2d_weight_memory_format(model, ember.channels_last)
    lin = skip_init(nn.Linear, 1000, 1000)     # parameters left as they come (no init cost)
"""
import inspect

from ..modules.conv import Conv2d, ConvTranspose2d, Conv3d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "skip_init"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """The weights of every Conv2d/ConvTranspose2d of `module` in `memory_format`.

    >>> m = convert_conv2d_weight_memory_format(nn.Conv2d(3, 4, 3), ember.channels_last)
    >>> m.weight.is_contiguous(memory_format=ember.channels_last)
    True
    """
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """The weights of every Conv3d/ConvTranspose3d of `module` in `memory_format`."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters need no particular values (torch
    leaves them uninitialized memory; ember's are whatever the constructor drew). Like
    torch, the class must take a ``device`` argument."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
