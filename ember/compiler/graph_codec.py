"""The graph cache's file format (disk_cache.py): Graphs to JSON and back, with no pickle.

A node is a JSON list (kind, name, target, args, kwargs, index, meta, source, phase, opname,
method, inplace). Arguments are JSON values, tagged where JSON has no form of their own
(``{"t": [...]}`` a tuple, ``{"n": 3}`` the graph's node 3, ``{"dt": "float32"}`` a dtype,
``{"s": [...]}`` a slice...). A call's target, and a function among its arguments (the view
functions of autograd's view adjoints), is stored as a reference to ember's own code: a
registry entry (a public function, a method, an OpDef's fn, unwrapped `depth` times), a
module-level function by name, or a function nested in one of ember's functions (its code
found by name and line, its closure cells stored as values). A function that is not ember's
raises Uncacheable. Lifted tensors are stored by parameter or buffer name, or, for constants
the passes folded, as bytes appended to a blob (dtype, shape and strides kept).
"""
import importlib
import types

import numpy as np

from ..core.tensor import Tensor, memory_format
from ..core import dtype as D
from ..core.device import device as Device
from .graph import Graph, Node
from .cache_key import Uncacheable, _is_ember

_REGISTRY = {}


def _registry_index():
    """id(callable) -> (table, name, depth): the functions the dispatcher hands the tracer,
    found by unwrapping the registry's public functions and methods."""
    if not _REGISTRY:
        from ..ops.registry import FUNCTIONS, METHODS, BY_NAME
        ops = {name: op.fn for name, op in BY_NAME.items() if callable(op.fn)}
        for table, entries in (("F", FUNCTIONS), ("M", METHODS), ("O", ops)):
            for name, fn in sorted(entries.items()):
                for depth, f in enumerate(_unwrap_chain(fn)):
                    _REGISTRY.setdefault(id(f), (table, name, depth, f))
    return _REGISTRY


def _unwrap_chain(fn):
    out = []
    while fn is not None and len(out) < 6:
        out.append(fn)
        nxt = getattr(fn, "__wrapped__", None)
        if nxt is None and getattr(fn, "__closure__", None):
            names = fn.__code__.co_freevars
            for cand in ("fn", "function", "func", "impl"):
                if cand in names:
                    nxt = fn.__closure__[names.index(cand)].cell_contents
                    break
        fn = nxt if callable(nxt) else None
    return out


def _resolve_registry(table, name, depth):
    from ..ops.registry import FUNCTIONS, METHODS, op_for
    fn = FUNCTIONS[name] if table == "F" else METHODS[name] if table == "M" else \
        op_for(name).fn
    return _unwrap_chain(fn)[depth]


def _find_code(code, name, line):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name and c.co_firstlineno == line:
                return c
            found = _find_code(c, name, line)
            if found is not None:
                return found
    return None


def _nested_code(outer, name, line):
    """The code object `name` defined at `line` inside function `outer` (or inside what
    `outer` wraps: the registry wraps ember's functions), or None."""
    for f in _unwrap_chain(getattr(outer, "__func__", outer)):
        code = getattr(f, "__code__", None)
        found = _find_code(code, name, line) if code is not None else None
        if found is not None:
            return found
    return None


def _encode_fn(fn, enc):
    hit = _registry_index().get(id(fn))
    if hit is not None and hit[3] is fn:
        return {"reg": list(hit[:3])}
    if not _is_ember(fn) or not isinstance(fn, types.FunctionType):
        raise Uncacheable(f"the graph calls {getattr(fn, '__qualname__', fn)!r}, which is "
                          "not ember's")
    mod, qual = fn.__module__, fn.__qualname__
    if "<locals>" not in qual:
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if obj is fn:
            return {"g": [mod, qual]}
        raise Uncacheable(f"cannot find {mod}.{qual} by name")
    outer = qual.split(".<locals>")[0]
    obj = importlib.import_module(mod)
    for part in outer.split("."):
        obj = getattr(obj, part, None)
    if _nested_code(obj, fn.__code__.co_name, fn.__code__.co_firstlineno) \
            is not fn.__code__:
        raise Uncacheable(f"cannot find the code of {mod}.{qual}")
    cells = [enc(c.cell_contents) for c in fn.__closure__ or ()]
    return {"c": [mod, outer, fn.__code__.co_name, fn.__code__.co_firstlineno, cells,
                  enc(fn.__defaults__), enc(fn.__kwdefaults__), fn.__name__]}


def _decode_fn(x, dec):
    if "reg" in x:
        return _resolve_registry(*x["reg"])
    if "g" in x:
        mod, qual = x["g"]
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
        return obj
    mod, outer, name, line, cells, defaults, kwdefaults, fname = x["c"]
    m = importlib.import_module(mod)
    obj = m
    for part in outer.split("."):
        obj = getattr(obj, part)
    code = _nested_code(obj, name, line)
    if code is None:
        raise ValueError(f"no code {name} at line {line} in {mod}.{outer}")
    fn = types.FunctionType(code, m.__dict__, fname, dec(defaults),
                            tuple(types.CellType(dec(c)) for c in cells))
    fn.__kwdefaults__ = dec(kwdefaults)
    return fn


# ---------------------------------------------------------------- values and graphs
class _Codec:
    """Graph arguments to JSON and back: nodes by position, constants by reference."""

    def __init__(self, node_index=None, nodes=None):
        self.node_index, self.nodes = node_index, nodes

    def enc(self, x):
        t = type(x)
        if x is None or t in (bool, int, str):
            return x
        if t is float:
            return x if x == x and abs(x) != float("inf") else {"f": repr(x)}
        if t is Node:
            return {"n": self.node_index[id(x)]}
        if t is tuple:
            return {"t": [self.enc(v) for v in x]}
        if t is list:
            return {"l": [self.enc(v) for v in x]}
        if t is dict:
            return {"d": [[self.enc(k), self.enc(v)] for k, v in x.items()]}
        if t is slice:
            return {"s": [self.enc(x.start), self.enc(x.stop), self.enc(x.step)]}
        if x is Ellipsis:
            return {"e": 1}
        if isinstance(x, D.dtype):
            return {"dt": x.name}
        if isinstance(x, Device):
            return {"dev": str(x)}
        if isinstance(x, memory_format):
            return {"mf": x.name}
        if t.__name__ == "_Slot" and _is_ember(t):
            return {"slot": x.i}
        if isinstance(x, types.FunctionType):
            return {"fn": _encode_fn(x, self.enc)}
        raise Uncacheable(f"a graph argument is a {t.__name__}")

    def dec(self, x):
        if type(x) is not dict:
            return x
        (tag, v), = x.items()
        if tag == "n":
            return self.nodes[v]
        if tag == "t":
            return tuple(self.dec(e) for e in v)
        if tag == "l":
            return [self.dec(e) for e in v]
        if tag == "d":
            return {self.dec(k): self.dec(e) for k, e in v}
        if tag == "f":
            return float(v)
        if tag == "s":
            return slice(*(self.dec(e) for e in v))
        if tag == "e":
            return Ellipsis
        if tag == "dt":
            return D._NAMES[v]
        if tag == "dev":
            return Device(v)
        if tag == "mf":
            from ..core import tensor as core_tensor
            mf = getattr(core_tensor, v)
            if not isinstance(mf, memory_format):
                raise ValueError(f"{v!r} is not a memory format")
            return mf
        if tag == "slot":
            from .runtime import _Slot
            return _Slot(v)
        if tag == "fn":
            return _decode_fn(v, self.dec)
        raise ValueError(f"unknown tag {tag!r}")


def _encode_meta(meta):
    if meta is None:
        return None
    shape, dt, strides = meta[0], meta[1], meta[2]
    return [list(shape), dt.name if dt is not None else None,
            list(strides) if strides is not None else None] + \
        ([bool(meta[3])] if len(meta) > 3 else [])


def _decode_meta(m):
    if m is None:
        return None
    out = (tuple(m[0]), D._NAMES[m[1]] if m[1] is not None else None,
           tuple(m[2]) if m[2] is not None else None)
    return out + (m[3],) if len(m) > 3 else out


def _tensor_names(module):
    names = {}
    if module is not None:
        for n, t in module.named_parameters(remove_duplicate=False):
            names.setdefault(id(t), ["param", n])
        for n, t in module.named_buffers(remove_duplicate=False):
            names.setdefault(id(t), ["buffer", n])
    return names


def _add_const(t, consts, blob):
    a = t._data
    if any(s < 0 for s in a.strides):
        raise Uncacheable("a constant tensor has a negative stride")
    item = a.itemsize
    span = 1 + sum((n - 1) * s // item for n, s in zip(a.shape, a.strides)) if a.size else 0
    base = np.lib.stride_tricks.as_strided(a, (span,), (item,)) if span else a.reshape(-1)[:0]
    data = base.tobytes()
    consts.append({"offset": len(blob), "span": span, "dtype": t.dtype.name,
                   "shape": list(a.shape), "strides": list(a.strides)})
    blob += data
    return len(consts) - 1


def _encode_graph(g, names, refs, consts, blob):
    """The nodes of Graph `g` as JSON lists; lifted tensors by parameter name, or (not in
    `refs`, the tensors the trace read by reference) as constants appended to `blob`."""
    codec = _Codec({id(n): i for i, n in enumerate(g.nodes)})
    nodes = []
    for n in g.nodes:
        target = None
        if n.kind == "lifted":
            t = n.target
            if id(t) in names:
                target = {"ref": names[id(t)]}
            elif refs is None or id(t) in refs:
                raise Uncacheable(f"lifted tensor {n.name} is not a parameter or buffer "
                                  "of the compiled module")
            else:
                target = {"const": _add_const(t, consts, blob)}
        elif n.target is not None:
            target = {"fn": _encode_fn(n.target, codec.enc)}
        nodes.append([n.kind, n.name, target, codec.enc(n.args), codec.enc(n.kwargs),
                      n.index, _encode_meta(n.meta), n.source, n.phase, n.opname,
                      bool(n.method), bool(n.inplace)])
    return nodes


def _decode_graph(nodes, named, consts):
    g = Graph()
    codec = _Codec(nodes=g.nodes)
    for (kind, name, target, a, kw, index, meta, source, phase, opname, method,
         inplace) in nodes:
        if kind == "lifted":
            target = named[tuple(target["ref"])] if "ref" in target else \
                consts[target["const"]]
        elif target is not None:
            target = _decode_fn(target["fn"], codec.dec)
        g.nodes.append(Node(kind, name, target=target, args=codec.dec(a),
                            kwargs=codec.dec(kw), index=index, meta=_decode_meta(meta),
                            source=source, phase=phase, opname=opname, method=method,
                            inplace=inplace))
        g._names.add(name)
    return g


def _tensors_by_name(module):
    out = {}
    if module is not None:
        out.update({("param", n): t for n, t in module.named_parameters(
            remove_duplicate=False)})
        out.update({("buffer", n): t for n, t in module.named_buffers(
            remove_duplicate=False)})
    return out


def _const(c, blob):
    dt = D._NAMES[c["dtype"]]
    base = np.frombuffer(blob, dtype=dt.np, count=c["span"], offset=c["offset"]).copy()
    arr = np.lib.stride_tricks.as_strided(base, tuple(c["shape"]), tuple(c["strides"]))
    return Tensor._make(arr, dt)
