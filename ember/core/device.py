"""Devices, and the one seam that picks a backend array module (`xp`) per device.

No op imports numpy for its math directly: it receives `xp` from here, so the cuda backend
(CuPy) can slot in without touching op definitions.
"""
import numpy as np


class device:
    """A device: ``ember.device("cpu")``, ``ember.device("cuda", 0)`` or ``"cuda:0"``."""
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: {type!r}")
        if ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device "
                               f"string: {type}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    # ``with ember.device("meta"):`` makes this the default device of factories (and so of
    # module construction) inside the block, as torch's device context does
    def __enter__(self):
        _entered.append(_default[0])
        _default[0] = self
        return self

    def __exit__(self, *exc):
        _default[0] = _entered.pop()
        return False


CPU = device("cpu")
_default = [None]      # the default device of factories (None: cpu)
_entered = []          # the defaults that `with device(...)` blocks replaced


def set_default_device(d):
    """Make `d` the device factories use when given none: ``ember.set_default_device("meta")``
    (``None`` restores cpu)."""
    _default[0] = None if d is None else to_device(d)


def get_default_device():
    """The device factories use when given none (``device(type='cpu')`` by default)."""
    return _default[0] or CPU


def resolve_device(d):
    """A factory's `device` argument as a device: the default device when None."""
    if d is None:
        return _default[0] or CPU
    return to_device(d)


def to_device(d):
    if d is None:
        return CPU
    if isinstance(d, device):
        return d
    return device(d)


def backend(dev):
    """The array module for a device: NumPy for cpu, CuPy for cuda."""
    if dev.type == "cpu":
        return np
    if dev.type == "cuda":
        from .. import cuda
        return cuda._xp()
    raise RuntimeError(f"no backend for device {dev}")
