"""The graph builder that ONNX mappings write into (the `g` of every ``OpDef.onnx`` function).

An op's ONNX mapping lives on its OpDef (``onnx=``): either the ONNX op type as a string (a
pointwise op whose tensor inputs map one to one, Python scalars becoming constants), or a
function ``fn(g, *args, **kwargs)`` called with the op's recorded arguments, where every
tensor is a `V` (an ONNX value: name, dtype, static shape with None for dims that vary) and
every size that varies along a dynamic axis is a `DynInt`. The function builds nodes with
``g.op("Relu", x)`` and returns the value(s) of the op's result(s). Nothing here imports
``onnx``: the exporter hands its `helper` module to the Builder, so ember/ops can carry
mappings without depending on the package.

    def _relu6(g, x):                                   # an OpDef's onnx= field
        return g.op("Clip", x, g.const(0.0, x.dtype), g.const(6.0, x.dtype))
"""
import numpy as np

from ..ops.onnx_rules import Unsupported


class V:
    """An ONNX value: its `name`, numpy `dtype` name ('float32', 'int64', 'bool') and `shape`
    (a tuple, None for a dim that varies along a dynamic axis; None when unknown)."""
    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype=None, shape=None):
        self.name, self.dtype, self.shape = name, dtype, shape

    @property
    def rank(self):
        return None if self.shape is None else len(self.shape)

    def __repr__(self):
        return f"V({self.name}, {self.dtype}, {self.shape})"


class DynInt:
    """A size that varies along a dynamic axis: `v` is its int64 value of shape [1] in the
    graph, `example` its value in the traced call. Arithmetic with ints builds nodes."""
    __slots__ = ("g", "v", "example")

    def __init__(self, g, v, example):
        self.g, self.v, self.example = g, v, example

    def _bin(self, op, other, fn):
        o = other.v if isinstance(other, DynInt) else self.g.const([int(other)], "int64")
        b = other.example if isinstance(other, DynInt) else other
        ex = fn(self.example, b) if type(self.example) is int and type(b) is int else None
        return DynInt(self.g, self.g.op(op, self.v, o), ex)

    def __mul__(self, o):
        return self._bin("Mul", o, lambda a, b: a * b)

    __rmul__ = __mul__

    def __add__(self, o):
        return self._bin("Add", o, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, o):
        return self._bin("Sub", o, lambda a, b: a - b)

    def __floordiv__(self, o):
        return self._bin("Div", o, lambda a, b: a // b)   # sizes are non-negative

    def __repr__(self):
        return f"DynInt({self.example})"


# raised by a mapping for a case ONNX (or this exporter) cannot express; the exporter adds
# the op's name and the user's line (defined next to the mappings, which sit below onnx)
UnsupportedForExport = Unsupported


class Builder:
    """Collects ONNX nodes and initializers; `opset` is the opset being written."""

    def __init__(self, helper, opset):
        self.helper = helper
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self.out = None            # (shape, dtype) of the op being exported, from its meta
        self._names = set()
        self._consts = {}
        self.domains = set()       # custom domains written (their opset_import entries)

    def fresh(self, base="v"):
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in base) or "v"
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    # ---- nodes ----
    def op(self, op_type, *inputs, outputs=1, dtype=None, **attrs):
        """Add one node; returns its output V (or a tuple of `outputs` of them). The output
        dtype defaults to the first input's; pass `dtype` when it differs."""
        ins = [i.name if isinstance(i, V) else ("" if i is None else i) for i in inputs]
        first = next((i for i in inputs if isinstance(i, V)), None)
        dt = dtype if dtype is not None else (first.dtype if first is not None else None)
        domain = None
        if "::" in op_type:       # "mylib::myop": a node of custom domain mylib (as torch's g.op)
            domain, op_type = op_type.split("::", 1)
            self.domains.add(domain)
        outs = [self.fresh(op_type.lower()) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, ins, outs, domain=domain,
                                                name=self.fresh("n_" + op_type), **attrs))
        vals = tuple(V(o, dt) for o in outs)
        return vals[0] if outputs == 1 else vals

    def const(self, value, dtype=None, name="const"):
        """A constant tensor (an initializer); equal small constants are shared."""
        arr = np.asarray(value, dtype=dtype)
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32)
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        v = self.initializer(arr, name)
        if key is not None:
            self._consts[key] = v
        return v

    def initializer(self, arr, name):
        from onnx import numpy_helper
        n = self.fresh(name)
        self.initializers.append(numpy_helper.from_array(np.asarray(arr, order="C"), n))
        return V(n, arr.dtype.name, tuple(arr.shape))

    def value_attr(self, value, dtype):
        """A one-element TensorProto (ConstantOfShape's `value` attribute)."""
        from onnx import numpy_helper
        return numpy_helper.from_array(np.array([value], dtype=dtype))

    def cast(self, x, dtype):
        """`x` as numpy dtype name `dtype` (no node when it already is)."""
        if x.dtype == dtype:
            return x
        return self.op("Cast", x, to=self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                       dtype=dtype)

    def scalar(self, s, dtype):
        """A Python number, DynInt or V as a tensor of `dtype` (0-d for numbers)."""
        if isinstance(s, V):
            return self.cast(s, dtype)
        if isinstance(s, DynInt):
            return self.cast(self.op("Squeeze", s.v, self.const([0], "int64")), dtype)
        return self.const(np.array(s, dtype=dtype))

    def ints(self, seq):
        """A 1-D int64 tensor of ints and DynInts (Concat of their values when any vary)."""
        seq = list(seq)
        if all(not isinstance(s, DynInt) for s in seq):
            return self.const(np.array([int(s) for s in seq], dtype=np.int64))
        parts = [s.v if isinstance(s, DynInt) else self.const([int(s)], "int64") for s in seq]
        return self.op("Concat", *parts, axis=0, dtype="int64")

    def static(self, v, what="this argument"):
        """An int that must be static (an ONNX attribute): a DynInt is refused."""
        if isinstance(v, DynInt):
            raise UnsupportedForExport(f"{what} varies along a dynamic axis; ONNX needs it "
                                       "static here")
        return v

    def size(self, x, d):
        """x.shape[d] as an int when static, else a DynInt read with Shape."""
        d = d % x.rank
        if x.shape[d] is not None:
            return x.shape[d]
        return DynInt(self, self.op("Shape", x, start=d, end=d + 1, dtype="int64"), None)

    def shape_of(self, x):
        """x's whole shape as a 1-D int64 tensor."""
        if x.shape is not None and all(s is not None for s in x.shape):
            return self.const(np.array(x.shape, dtype=np.int64))
        return self.op("Shape", x, dtype="int64")

    @property
    def out_dtype(self):
        """numpy dtype name of the op's (first) result."""
        return dtype_name(self.out[1]) if self.out and self.out[1] is not None else None

    @property
    def out_shape(self):
        return self.out[0] if self.out else None

    # ---- common patterns ----
    def reduce(self, op_type, x, dims, keepdim, dtype=None):
        """ReduceX over `dims` (None: all); axes are an input from opset 18 (13 for Sum)."""
        if dims is None or dims == ():
            dims = None
        elif isinstance(dims, int):
            dims = [dims]
        keep = int(bool(keepdim))
        if dims is None:
            return self.op(op_type, x, keepdims=keep, dtype=dtype)
        dims = [int(d) for d in dims]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, x, self.const(dims, "int64"), keepdims=keep, dtype=dtype)
        return self.op(op_type, x, axes=dims, keepdims=keep, dtype=dtype)

    def reshape(self, x, shape):
        return self.op("Reshape", x, self.ints(shape))

    def unsqueeze(self, x, dims):
        return self.op("Unsqueeze", x, self.const(list(dims), "int64"))

    def squeeze(self, x, dims):
        return self.op("Squeeze", x, self.const(list(dims), "int64"))


def dtype_name(dt):
    """numpy dtype name of an ember dtype (or of a numpy one)."""
    if dt is None:
        return None
    name = getattr(dt, "name", None) or np.dtype(dt).name
    return "bool" if name == "bool_" else name
