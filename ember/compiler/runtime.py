"""What compiled code calls at replay: small functions named in printed graphs, and the
call's structure (the tensors read from args/kwargs, the user's output structure rebuilt
around the flat outputs)."""
import numpy as np

from ..core.tensor import Tensor
from ..autograd.engine import accumulate_into


def accumulate_grad(var, g):
    """Add gradient `g` into leaf `var`'s ``.grad`` by the autograd engine's rule (the first
    gradient is taken over when it has `var`'s layout, else copied into it; later ones are
    added in place); returns the ``.grad`` tensor."""
    accumulate_into(var, g, not g._requires_grad, False)
    return var._grad


def scatter_sum(shape, view_fns, *grads):
    """The sum of several view_scatter results (zeros of `shape` with each gradient written
    through its view, as a split's or chunk's backward makes them) in one buffer: each
    gradient is added into its view of one zero tensor, instead of one zero tensor per view
    and a full-size add per pair (the fusion pass merges such sums into this call)."""
    from ..dispatch import wrap
    from ..ops.view_common import _scatter_kernel
    out = np.zeros(shape, dtype=grads[0]._data.dtype)
    for g, fn in zip(grads, view_fns):
        target = fn(out)
        if np.may_share_memory(target, out):
            target += g._data
        else:
            out += _scatter_kernel(g._data, tuple(shape), fn, True)
    return wrap(out, grads[0].dtype)


def grad_of(t):
    """``t.grad`` read inside a compiled function."""
    return t._grad


def flatten(args, kwargs):
    """[(path, tensor)] for every tensor in args/kwargs, in order."""
    out = []

    def walk(x, path):
        if isinstance(x, Tensor):
            out.append((path, x))
        elif type(x) in (tuple, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif type(x) is dict:
            for k, v in x.items():
                walk(v, f"{path}[{k!r}]")
    walk(args, "args")
    walk(kwargs, "kwargs")
    return out


class _Slot:
    """Where a tensor sat in the output structure: index `i` into the flat outputs."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return type(other) is _Slot and other.i == self.i

    def __hash__(self):
        return hash(("slot", self.i))


def slots(tracer, x, out_nodes):
    """The output structure with each tensor replaced by a slot into the flat outputs."""
    if isinstance(x, Tensor):
        out_nodes.append(tracer.node_of(x))
        return _Slot(len(out_nodes) - 1)
    if type(x) in (tuple, list):
        return type(x)(slots(tracer, v, out_nodes) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(slots(tracer, v, out_nodes) for v in x))
    if type(x) is dict:
        return {k: slots(tracer, v, out_nodes) for k, v in x.items()}
    return x


def rebuilder(struct):
    """fn(flat_outputs) -> the user's output structure (struct holds slots for tensors)."""
    def build(x, flat):
        if type(x) is _Slot:
            return flat[x.i]
        if type(x) in (tuple, list):
            return type(x)(build(v, flat) for v in x)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(build(v, flat) for v in x))
        if type(x) is dict:
            return {k: build(v, flat) for k, v in x.items()}
        return x
    if type(struct) is _Slot:
        i = struct.i
        return lambda flat: flat[i]
    return lambda flat: build(struct, flat)


def extractor(paths):
    """fn(args, kwargs) -> the flat input tensors, read at their paths."""
    src = "def extract(args, kwargs):\n    return [" + ", ".join(paths) + "]\n"
    ns = {}
    exec(compile(src, "<ember extract>", "exec"), ns)
    return ns["extract"]


def sym_reader(syms):
    """fn(flat inputs) -> the symbolic sizes' values at this call."""
    if not syms:
        return lambda flat: ()
    src = "def read(flat):\n    return (" + "".join(
        f"flat[{k}]._data.shape[{d}], " for k, d in syms) + ")\n"
    ns = {}
    exec(src, ns)
    return ns["read"]
