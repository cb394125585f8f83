"""The Kernel IR evaluated with NumPy: the fallback when no C compiler exists, and the reference
the C kernels are tested against.

    outs = evaluate(kernel, R, N, inputs, strides)

`inputs` are NumPy arrays whose first element is element (0, 0); `strides` = (so_0, sj_0, ...)
in elements, as for the C kernel. Returns one array per output: (R, N) per element, (R,) per
row. Semantics match codegen_c (NaN-propagating max/min, sign(NaN) = 0, floor division and
0 for x // 0 on ints, torch's fast paths for pow with constant exponents).
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core import dtype as D

NP_DTYPES = {n: D.to_dtype(n).np.type for n in ("float32", "float64", "int32", "int64", "bool")}


def _erf(a):
    from ..ops.pointwise import _erf_f64
    return np.asarray(_erf_f64(a.astype(np.float64))).astype(a.dtype)


def _sigmoid(a):
    e = np.exp(-np.abs(a))
    s = 1 / (1 + e)
    return np.where(a >= 0, s, e * s).astype(a.dtype)


def _pow(a, b, bexpr):
    if a.dtype.kind != "f":
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b))
        inv = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 != 0, -1, 1), 0))
        return np.where(neg, inv, r).astype(a.dtype)
    if bexpr[0] == "const":
        v = float(bexpr[1])
        one = a.dtype.type(1)
        special = {2.0: lambda: a * a, 3.0: lambda: a * a * a, 1.0: lambda: a,
                   0.5: lambda: np.sqrt(a), -0.5: lambda: one / np.sqrt(a),
                   -1.0: lambda: one / a, -2.0: lambda: one / (a * a)}
        if v in special:
            return special[v]()
    return np.power(a, b)


def _div(a, b):
    """True division for floats; NumPy's floor division for ints, with x // 0 = 0."""
    if a.dtype.kind == "f":
        return a / b
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, a // safe).astype(a.dtype)


UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "log1p": np.log1p,
    "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": lambda a: a.dtype.type(1) / np.sqrt(a),
    "reciprocal": lambda a: a.dtype.type(1) / a, "tanh": np.tanh, "sigmoid": _sigmoid,
    "erf": _erf, "sin": np.sin, "cos": np.cos,
    "relu": lambda a: np.where(a < 0, a.dtype.type(0), a),
    "sign": lambda a: a if a.dtype == np.bool_ else
    ((a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)),
    "floor": lambda a: np.floor(a) if a.dtype.kind == "f" else a,
    "ceil": lambda a: np.ceil(a) if a.dtype.kind == "f" else a,
    "trunc": lambda a: np.trunc(a) if a.dtype.kind == "f" else a,
    "round": lambda a: np.rint(a) if a.dtype.kind == "f" else a,
    "square": lambda a: a * a, "logical_not": lambda a: a == 0, "isnan": np.isnan,
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div,
    "maximum": np.maximum, "minimum": np.minimum, "gt": np.greater, "ge": np.greater_equal,
    "lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal,
    "logical_and": lambda a, b: (a != 0) & (b != 0),
    "logical_or": lambda a, b: (a != 0) | (b != 0),
}


class _Evaluator:
    def __init__(self, kernel, R, N, views):
        self.k, self.R, self.N, self.views = kernel, R, N, views
        self.rows = []
        self.memo = {}

    def __call__(self, e):
        v = self.memo.get(e)
        if v is None:
            v = self.memo[e] = self.compute(e)
        return v

    def compute(self, e):
        tag = e[0]
        if tag == "load":
            return self.views[e[1]]
        if tag == "const":
            return np.asarray(e[1], NP_DTYPES[e[2]])
        if tag == "n":
            return np.asarray(self.N, NP_DTYPES[e[1]])
        if tag == "row":
            return self.rows[e[1]][:, None]
        op, dtype, args = e[1], NP_DTYPES[e[2]], [self(a) for a in e[3:]]
        if op == "cast":
            a = args[0]
            return (a != 0) if dtype == np.bool_ else a.astype(dtype)
        if op == "where":
            return np.where(args[0].astype(bool), args[1], args[2]).astype(dtype)
        if op == "pow":
            return np.asarray(_pow(args[0], args[1], e[4])).astype(dtype)
        fn = UNARY.get(op) if len(args) == 1 else BINARY.get(op)
        if fn is None:
            raise NotImplementedError(f"no NumPy lowering for op {op!r}")
        return np.asarray(fn(*args)).astype(dtype, copy=False)


def _reduce(op, v, dtype, R, N):
    v = np.broadcast_to(np.asarray(v).astype(dtype, copy=False), (R, N))
    if op == "sum":
        return v.sum(axis=1, dtype=dtype)
    if N == 0:
        if dtype.kind == "f":
            fill = -np.inf if op == "max" else np.inf
        elif dtype == np.bool_:
            fill = op != "max"
        else:
            info = np.iinfo(dtype)
            fill = info.min if op == "max" else info.max
        return np.full(R, fill, dtype)
    return (v.max if op == "max" else v.min)(axis=1)


def views_of(kernel, R, N, inputs, strides):
    """Views of the inputs, element (r, j) at data[r*so + j*sj]: (R, N), or (R, 1) / (1, N) /
    (1, 1) along broadcast ("zero") strides."""
    out = []
    for i, (inp, a) in enumerate(zip(kernel.inputs, inputs)):
        dt = np.dtype(NP_DTYPES[inp.dtype])
        rows = 1 if inp.outer == "zero" else R
        cols = 1 if inp.inner == "zero" else N
        so = 0 if inp.outer == "zero" else strides[2 * i]
        sj = 1 if inp.inner == "one" else (0 if inp.inner == "zero" else strides[2 * i + 1])
        if rows == 0 or cols == 0 or np.asarray(a).size == 0:
            out.append(np.zeros((rows, cols), dt))
            continue
        a = np.asarray(a)
        if a.dtype != dt:
            raise TypeError(f"input {i}: expected {dt}, got {a.dtype}")
        out.append(as_strided(a, shape=(rows, cols),
                              strides=(so * dt.itemsize, sj * dt.itemsize), writeable=False))
    return out


def evaluate(kernel, R, N, inputs, strides):
    """The outputs of `kernel` over an (R, N) space (see the module docstring)."""
    ev = _Evaluator(kernel, R, N, views_of(kernel, R, N, inputs, strides))
    with np.errstate(all="ignore"):
        for red in kernel.reductions:
            dt = np.dtype(NP_DTYPES[red.dtype])
            ev.rows.append(_reduce(red.op, ev(red.expr), dt, R, N))
        outs = []
        for o in kernel.outputs:
            v = np.asarray(ev(o.expr)).astype(NP_DTYPES[o.dtype], copy=False)
            if o.per_row:            # row-level: constant along j
                v = v.reshape(1, 1) if v.ndim == 0 else v[:, :1]
                outs.append(np.ascontiguousarray(np.broadcast_to(v, (R, 1)).reshape(R)))
            else:
                outs.append(np.ascontiguousarray(np.broadcast_to(v, (R, N))))
    return outs
