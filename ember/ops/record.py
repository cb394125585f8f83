"""Recording helpers that EXTERN ops share (ops/matmul.py, ops/linalg*.py, ember/linalg.py
and nn/): `record_fn` attaches one node whose backward is a Python function of ember ops (ops
with several tensor inputs or outputs: einsum, the decompositions, convolutions); `finish`
wraps a kernel's result and records an op's own node; `kernel_array` is the array a kernel
computes on (float32 for the low-precision floats NumPy has no BLAS for).
"""
import numpy as np

from ..core import dtype as D
from ..core.lowp_cast import astype
from ..core.tensor import Tensor
from ..dispatch import wrap
from ..autograd.grad_mode import state
from ..autograd import graph

LOWP = (D.float16, D.bfloat16)


# ---- nodes for ops with several inputs/outputs ------------------------------------------
class FnNode(graph.Node):
    """Backward = ``fn(grads, needs, *saved)``; saved tensors are version-checked on use."""
    __slots__ = ("_fn", "_saved", "_needs")

    def apply(self, grads):
        vals = [s.unpack(self) if type(s) is graph.SavedTensor else s for s in self._saved]
        if any(g is not None and g.dtype._kind == 3 for g in grads):
            # complex: the real-case formulas (einsum's) conjugated around (graph.py's rule)
            grads = tuple(g.conj_physical() if g is not None else None for g in grads)
            return tuple(r.conj_physical() if isinstance(r, Tensor) else r
                         for r in self._fn(grads, self._needs, *vals))
        return tuple(self._fn(grads, self._needs, *vals))

    def release(self):
        for s in self._saved:
            if type(s) is graph.SavedTensor:
                s.released = True
                if not s.is_output:
                    s.tensor = None


_NODE_CLASSES = {}


def record_fn(name, inputs, outputs, fn, saved=(), nondifferentiable=()):
    """Attach one node named `name` to `outputs` (a tuple); returns `outputs`.

    `fn(grads, needs, *saved)` returns one gradient (or None) per input; `grads` holds one
    entry per output (None where nothing flowed). Tensors in `saved` that are outputs are
    saved as outputs (no reference cycle); others as inputs. The outputs at the indices
    `nondifferentiable` (lu's permutation matrix) get no node, as in torch."""
    if not state.enabled or not any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        return outputs
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (FnNode,), {"__slots__": ()})
    node = cls.__new__(cls)
    edges = tuple(graph.edge_of(t) if isinstance(t, Tensor) else (None, 0) for t in inputs)
    node._setup(edges, tuple((t._data.shape, t.dtype) if isinstance(t, Tensor) else None
                             for t in inputs))
    node._needs = tuple(e[0] is not None for e in edges)
    node._fn = fn
    for i, o in enumerate(outputs):
        if o.dtype._kind >= 2 and i not in nondifferentiable:
            o.grad_fn = node
            o._requires_grad = True
            o._output_nr = i
    out_ids = {id(o): o for o in outputs}
    node._saved = [graph.SavedTensor(s, id(s) in out_ids) if isinstance(s, Tensor) else s
                   for s in saved]
    return outputs


def finish(op, args, arr, dt, attrs=None):
    """Wrap a kernel result and record `op`'s node when an input requires grad."""
    out = wrap(arr, dt)
    if state.enabled and dt._kind >= 2 and any(
            isinstance(a, Tensor) and a._requires_grad for a in args):
        graph.record(op, args, out, attrs or {})
    return out


def _out(result, out):
    if out is not None:
        from ..dispatch import copy_into_out
        return copy_into_out(out, result)
    return result


def kernel_array(t):
    """The array a kernel computes on: float32 for low-precision floats (NumPy has no BLAS
    for them)."""
    return astype(t._data, np.float32) if t.dtype in LOWP else t._data
