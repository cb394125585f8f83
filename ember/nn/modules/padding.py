"""Padding layers: ConstantPad*, ZeroPad*, ReflectionPad*, ReplicationPad*, CircularPad*.

`padding` is an int (same on every side) or a tuple in F.pad order (left, right, top, ...).
"""
from .. import functional as F
from .module import Module


class _PadNd(Module):
    _nd = 1
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (list, tuple)) \
            else (padding,) * (2 * self._nd)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _family(prefix, base, mode):
    made = []
    for nd in (1, 2, 3):
        made.append(type(f"{prefix}{nd}d", (base,), {"_nd": nd, "mode": mode,
                                                       "__module__": __name__}))
    return made


class ConstantPad1d(_ConstantPadNd):
    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


ZeroPad1d, ZeroPad2d, ZeroPad3d = _family("ZeroPad", _ZeroPadNd, "constant")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _family("ReflectionPad", _PadNd, "reflect")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _family("ReplicationPad", _PadNd,
                                                               "replicate")
CircularPad1d, CircularPad2d, CircularPad3d = _family("CircularPad", _PadNd, "circular")
