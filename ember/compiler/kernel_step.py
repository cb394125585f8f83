"""Running one fused kernel from Python: sizes and strides from the input arrays (worked out
once per layout, then cached), copies for inputs in a layout the kernel was not built for,
output buffers (fresh, or from the pool of buffers.py), and the call into C.
"""
import numpy as np

from ..dispatch import wrap
from .buffers import POOL


def _collapse(shape, strides, F, k):
    """(so, sj) in elements for an array broadcast to F, or None if not expressible."""
    nd = len(F)
    s = (1,) * (nd - len(shape)) + tuple(shape)
    st = (0,) * (nd - len(strides)) + tuple(strides)
    st = [0 if s[i] == 1 else st[i] for i in range(nd)]

    def one(dims):
        dims = [d for d in dims if F[d] != 1]
        if not dims:
            return 0
        for a, b in zip(dims, dims[1:]):
            if st[a] != st[b] * F[b]:
                return None
        return st[dims[-1]]
    so, sj = one(range(k)), one(range(k, nd))
    if so is None or sj is None:
        return None
    return so, sj


def _empty(shape, dtype):
    return np.empty(shape, dtype)


def _keeps(st, po, pi, N):
    """Do strides (so, sj) keep the promises (outer, inner) a kernel was built with?"""
    if st is None:
        return False
    if pi == "one" and st[1] != 1 and N > 1:
        return False
    if pi == "zero" and st[1] != 0 and N > 1:
        return False
    return not (po == "zero" and st[0] != 0)


class KernelStep:
    """Runs one fused kernel on tensors: strides from the arrays, outputs allocated here."""

    def __init__(self, fn, kernel, k, out_specs, out_dtypes, pooled, fullshape):
        self.fn, self.kernel, self.k, self.fullshape = fn, kernel, k, tuple(fullshape)
        # outputs that die inside the graph come from (and go back to) the buffer pool
        self.alloc = [POOL.take if p else _empty for p in pooled]
        self.out_specs = out_specs          # per output: "full", "row_keep" or "row"
        self.out_dtypes = out_dtypes
        self.promises = [(i.outer, i.inner) for i in kernel.inputs]
        self._plans = {}

    def __call__(self, *tensors):
        arrays = [t._data for t in tensors]
        # the layout work (sizes, strides, output shapes) depends only on the inputs' shapes
        # and strides: done once per layout, then one dict lookup per call
        key = tuple((a.shape, a.strides) for a in arrays)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(arrays)
            if len(self._plans) < 64:       # copies too depend only on shapes and strides
                self._plans[key] = plan
        R, N, strides, shapes, copies = plan
        if copies is not None:
            arrays = [c(a) if c is not None else a for a, c in zip(arrays, copies)]
        outs = [alloc(shape, dt.np) for alloc, shape, dt in zip(self.alloc, shapes,
                                                                self.out_dtypes)]
        self.fn.call_ptrs(R, N, [a.__array_interface__["data"][0] for a in arrays]
                          + [o.__array_interface__["data"][0] for o in outs], strides)
        return tuple([wrap(o, dt) for o, dt in zip(outs, self.out_dtypes)])

    def _plan(self, arrays):
        """(R, N, strides, output shapes, per-input copy functions or None)."""
        F = np.broadcast_shapes(*[a.shape for a in arrays]) if arrays else ()
        k = self.k
        if len(F) < len(self.fullshape):
            F = self.fullshape
        R = int(np.prod(F[:k])) if k else 1
        N = int(np.prod(F[k:])) if len(F) > k else 1
        strides, copies = [], []
        for a, (po, pi) in zip(arrays, self.promises):
            st = _collapse(a.shape, [s // a.itemsize for s in a.strides], F, k)
            copy = None
            if not _keeps(st, po, pi, N):
                # a layout the kernel was not built for: a contiguous copy of what it reads
                # (the whole broadcast input, or one value per row)
                shape = F[:k] + (1,) * (len(F) - k) if pi == "zero" else F

                def copy(x, shape=shape):
                    return np.ascontiguousarray(np.broadcast_to(x, shape))
                a = copy(a)
                st = _collapse(a.shape, [s // a.itemsize for s in a.strides], F, k)
                if pi == "one" and N <= 1:
                    st = (st[0], 1)
                if not _keeps(st, po, pi, N):
                    raise RuntimeError(f"ember.compile: input of shape {list(a.shape)} does "
                                       f"not fit the kernel's layout ({po}, {pi})")
            copies.append(copy)
            strides.extend(st)
        shapes = [tuple(F) if spec == "full" else (tuple(F[:k]) + (1,) * (len(F) - k)
                                                  if spec == "row_keep" else tuple(F[:k]))
                  for spec in self.out_specs]
        return R, N, tuple(strides), shapes, (copies if any(copies) else None)
