"""Joining ops: cat and stack (their gradients split the incoming gradient back)."""
import numpy as np

from ..core import strides as S
from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, COMPOSITE, register


class _CatNode(graph.Node):
    __slots__ = ("dim", "sizes")

    def apply(self, grads):
        g = grads[0]
        return tuple(g.narrow(self.dim, start, size) for start, size in self.sizes)


_CatNode.__name__ = "CatBackward0"


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim (1-D empty tensors are skipped, as in PyTorch)."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element in argument 0, but got "
                            f"{type(t).__name__}")
    live = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    if not live:
        return wrap(np.zeros((0,), dt.np), dt)
    ref = live[0]
    nd = ref._data.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = S.wrap_dim(dim, nd)
    for i, t in enumerate(live):
        if t._data.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{t._data.ndim}")
        for k in range(nd):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref._data.shape[k]} but got size "
                                   f"{t._data.shape[k]} for tensor number {i} in the list.")
    r = np.concatenate([t._data.astype(dt.np, copy=False) for t in live], axis=d)
    result = wrap(r, dt)
    if state.enabled and any(t._requires_grad for t in live):
        node = _CatNode.__new__(_CatNode)
        node._setup(tuple(graph.edge_of(t) for t in live),
                    tuple((t._data.shape, t.dtype) for t in live))
        node.dim = d
        sizes, start = [], 0
        for t in live:
            sizes.append((start, t._data.shape[d]))
            start += t._data.shape[d]
        node.sizes = sizes
        result.grad_fn = node
        result._requires_grad = True
    if out is not None:
        from ..dispatch import copy_into_out
        return copy_into_out(out, result)
    return result


def stack(tensors, dim=0, *, out=None):
    """Join tensors of equal shape along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = S.wrap_dim(dim, len(shape) + 1, scalar_ok=False)
    return cat([t.unsqueeze(d) for t in tensors], d, out=out)


register(OpDef("cat", COMPOSITE, method=False), cat, names=("cat", "concat", "concatenate"))
register(OpDef("stack", COMPOSITE, method=False), stack)
