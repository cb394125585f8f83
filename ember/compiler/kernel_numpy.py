"""The Kernel IR evaluated with NumPy: the fallback when no C compiler exists, and the reference
the C kernels are tested against.

    outs = evaluate(kernel, R, N, inputs, strides)

`inputs` are NumPy arrays whose first element is element (0, 0); `strides` = (so_0, sj_0, ...)
in elements, as for the C kernel. Returns one array per output: (R, N) per element, (R,) per
row. Each op is computed by its eager kernel (or its lowering's `np`), so semantics are
eager ember's: NaN-propagating max/min, sign(NaN) = 0, torch's integer powers.
"""
import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core import dtype as D
from ..ops.registry import op_for

NP_DTYPES = {n: D.to_dtype(n).np.type for n in ("float32", "float64", "int32", "int64", "bool")}


@functools.lru_cache(maxsize=None)     # the registry does not change after import
def _numpy_of(op):
    """The NumPy function computing IR op `op`: its lowering's `np`, else the op's own eager
    kernel (so this backend computes exactly what eager ember computes)."""
    opdef = op_for(op)
    lower = opdef.lower if opdef is not None else None
    if lower is None:
        raise NotImplementedError(f"no NumPy lowering for op {op!r}")
    if lower.np is not None:
        return lower.np
    kernel = opdef.kernel
    return lambda *arrays: kernel(np, *arrays)


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
        with np.errstate(all="ignore"):
            r = _numpy_of(op)(*args)
        return np.asarray(r).astype(dtype, copy=False)


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
