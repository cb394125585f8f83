"""Named result tuples of ops that return several tensors (PyTorch's ``torch.return_types``).

``values, indices = x.max(0)`` unpacks like a tuple; ``x.max(0).values`` reads a field.
"""
from collections import namedtuple


def _make(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = __name__
    cls.__qualname__ = name

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"
    cls.__repr__ = __repr__
    return cls


_VI = ("values", "indices")
max = _make("max", _VI)
min = _make("min", _VI)
sort = _make("sort", _VI)
topk = _make("topk", _VI)
kthvalue = _make("kthvalue", _VI)
median = _make("median", _VI)
nanmedian = _make("nanmedian", _VI)
mode = _make("mode", _VI)
cummax = _make("cummax", _VI)
cummin = _make("cummin", _VI)
aminmax = _make("aminmax", ("min", "max"))
