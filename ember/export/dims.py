"""Dynamic dimensions for export: `Dim("batch", min=2, max=64)`, `Dim.AUTO`, `Dim.DYNAMIC`,
`Dim.STATIC`, and reading a `dynamic_shapes=` argument (a dict keyed by the forward's
parameter names, or a tuple by position, each a dict {dim: Dim} or a tuple per dim, nested
like the inputs) into {input path: {dim: spec}}.

>>> batch = ember.export.Dim("batch", min=2, max=64)
>>> ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
"""
import inspect
import math

from ..core.tensor import Tensor
from ._capture import UserError


class _DimHint:
    """Dim.AUTO / Dim.DYNAMIC / Dim.STATIC (torch's DimHint)."""

    def __init__(self, kind):
        self.kind = kind

    def __repr__(self):
        return f"DimHint({self.kind})"


class Dim:
    """A named dynamic dimension with an inclusive range; dims that share a Dim (or its
    name) are equal sizes.

    >>> batch = Dim("batch", min=2, max=8)
    """
    AUTO = _DimHint("AUTO")
    DYNAMIC = _DimHint("DYNAMIC")
    STATIC = _DimHint("STATIC")

    def __init__(self, name, *, min=None, max=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim name must be a valid identifier, got {name!r}")
        lo = 0 if min is None else int(min)
        hi = math.inf if max is None else int(max)
        if hi < lo:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min, self.max = lo, hi

    def __repr__(self):
        parts = [repr(self.__name__)]
        if self.min > 0:
            parts.append(f"min={self.min}")
        if self.max != math.inf:
            parts.append(f"max={self.max}")
        return f"Dim({', '.join(parts)})"


def dims(*names, min=None, max=None):
    """Several Dims with the same range: ``batch, seq = dims("batch", "seq", max=64)``."""
    return tuple(Dim(n, min=min, max=max) for n in names)


class ValueRange:
    """The inclusive range of a symbolic size (range_constraints' values)."""

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def __repr__(self):
        up = "int_oo" if self.upper == math.inf else self.upper
        return f"VR[{self.lower}, {up}]"

    def __eq__(self, other):
        return isinstance(other, ValueRange) and (self.lower, self.upper) == (
            other.lower, other.upper)


class DimSpec:
    """One dynamic dim of one input: its name (None for AUTO/DYNAMIC), range and hint."""

    def __init__(self, name, lo, hi, hint=None):
        self.name, self.lo, self.hi, self.hint = name, lo, hi, hint


def parse(mod, args, kwargs, dynamic_shapes):
    """{input path (``args[0]``, ``kwargs['y']``, ``args[1]['y']``): {dim: DimSpec}}."""
    if dynamic_shapes is None:
        return {}
    fwd = getattr(mod, "forward", mod)
    try:
        names = list(inspect.signature(fwd).parameters)
    except (TypeError, ValueError):
        names = []
    out = {}
    if isinstance(dynamic_shapes, dict):
        bound = dict(zip(names, [f"args[{i}]" for i in range(len(args))]))
        bound.update({k: f"kwargs[{k!r}]" for k in kwargs})
        values = {**dict(zip(names, args)), **kwargs}
        for key, spec in dynamic_shapes.items():
            if key not in bound:
                raise UserError(
                    f"dynamic_shapes names {key!r}, which is not an input of "
                    f"{type(mod).__name__}.forward (inputs: {list(bound)})")
            _walk(values[key], spec, bound[key], out)
    elif isinstance(dynamic_shapes, (tuple, list)):
        flat = list(args) + list(kwargs.values())
        paths = [f"args[{i}]" for i in range(len(args))] + [f"kwargs[{k!r}]" for k in kwargs]
        if len(dynamic_shapes) != len(flat):
            raise UserError(
                f"dynamic_shapes has {len(dynamic_shapes)} entries but the call has "
                f"{len(flat)} inputs")
        for v, spec, p in zip(flat, dynamic_shapes, paths):
            _walk(v, spec, p, out)
    else:
        raise UserError(f"dynamic_shapes must be a dict, tuple or list, got "
                              f"{type(dynamic_shapes).__name__}")
    return out


def _walk(value, spec, path, out):
    if spec is None:
        return
    if isinstance(value, Tensor):
        items = spec.items() if isinstance(spec, dict) else enumerate(spec) \
            if isinstance(spec, (tuple, list)) else None
        if items is None:
            raise UserError(f"dynamic_shapes for {path}: expected a dict or tuple of "
                                  f"dims, got {spec!r}")
        dims_ = {}
        for d, s in items:
            if d < 0:
                d += value.dim()
            if not 0 <= d < value.dim():
                raise UserError(f"dynamic_shapes for {path}: dim {d} out of range "
                                      f"for a tensor of {value.dim()} dims")
            if s is None or s is Dim.STATIC:
                continue
            if isinstance(s, Dim):
                dims_[d] = DimSpec(s.__name__, s.min, s.max)
            elif isinstance(s, _DimHint):
                dims_[d] = DimSpec(None, 0, math.inf, s.kind)
            else:
                raise UserError(f"dynamic_shapes for {path}[{d}]: expected a Dim, "
                                      f"Dim.AUTO, Dim.DYNAMIC or None, got {s!r}")
        if dims_:
            out[path] = dims_
    elif type(value) in (tuple, list):
        for i, (v, s) in enumerate(zip(value, spec)):
            _walk(v, s, f"{path}[{i}]", out)
    elif type(value) is dict:
        for k, s in spec.items():
            _walk(value[k], s, f"{path}[{k!r}]", out)
