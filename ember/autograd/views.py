"""In-place ops on views of tensors that take part in autograd (PyTorch's CopySlices).

When `v = b[0]` and then `v.mul_(2)`, the gradient of `b` must flow through the multiply
only where `v` sits. The base gets a `CopySlices` node wrapping the op's node, and the view
gets a node that reads its slice back out of the base's new history.
"""
import numpy as np

from . import graph
from .graph import _RESULT, Node, make_node, edge_of, SavedTensor, saved_before_bump
from .grad_mode import state
from ..core import dtype as _dtype
from ..core.strides import storage_positions as _positions
from ..core.tensor import Tensor

# The view ops sit above recording (ember/ops/view.py); it fills these two slots at its import:
# - gather_op: the OpDef whose node reads a view's elements out of its base's history
#   (AsStridedBackward0);
# - view_scatter(g, shape, view_fn): a zero tensor of `shape` with `g` added through `view_fn`.
gather_op = None
view_scatter = None


def _fresh(arr, dt):
    """A new tensor over backend array `arr` (what dispatch.wrap makes; arr has dtype dt)."""
    t = Tensor._make(arr, dt)
    if state.inference:
        t._inference = True
    return t


def view_index(base, view):
    """For each element of `view`, its position in `base` flattened in logical order."""
    pos2idx = np.zeros(base._storage_obj().data.size, np.int64)
    pos2idx[_positions(base).reshape(-1)] = np.arange(base._data.size)
    return pos2idx[_positions(view)]


class CopySlices(Node):
    """Gradient of a base tensor after an in-place op wrote into one of its views."""
    __slots__ = ("fn", "idx", "base_shape")

    def apply(self, grads):
        g = grads[0]
        idx = self.idx
        flat = g.reshape(-1)
        g_view = flat[_fresh(idx, _dtype.int64)]
        res = self.fn.apply((g_view,))
        # the base's old history sees the gradient everywhere except where the view was
        # overwritten; there it sees what the op passes back to its `self`
        mask = np.ones(g._data.size, bool)
        mask[idx.reshape(-1)] = False
        g_base = flat * _fresh(mask.astype(g.dtype.np), g.dtype)
        if res[0] is not None:
            r0 = res[0]
            if tuple(r0.shape) != tuple(idx.shape):
                r0 = r0.expand(idx.shape)
            g_base = g_base + view_scatter(r0, (g._data.size,), lambda a, _i=idx: a[_i])
        return (g_base.reshape(self.base_shape),) + tuple(res[1:])

    def release(self):
        self.fn.release()


def rebase_view(op, args, t, attrs, old):
    """Rewire the graph after in-place `op` on view `t` (its result already written)."""
    base = t._base
    src = (old if old is not None else args[0],) + tuple(args[1:])
    fn = make_node(op, src, attrs, t, inputs_for_save=src)
    saved_before_bump(fn, t)
    for k, v in fn._saved.items():
        if v is _RESULT:
            fn._saved[k] = SavedTensor(t, True)
    idx = view_index(base, t)
    node = CopySlices.__new__(CopySlices)
    node._setup((edge_of(base),) + fn.next_functions[1:],
                ((base._data.shape, base.dtype),) + fn._input_meta[1:])
    node.fn = fn
    node.idx = idx
    node.base_shape = base._data.shape
    base.grad_fn = node
    base._requires_grad = True
    base._output_nr = 0
    # the view now reads its values out of the base's new history
    vnode = make_node(gather_op, (base,), {"shape": base._data.shape,
                                         "view_fn": lambda a, _i=idx: a.reshape(-1)[_i]}, t)
    vnode._base_fn = node
    t.grad_fn = vnode
    t._requires_grad = True
    t._output_nr = 0


def refresh_view(t):
    """Its base was modified in place after view `t` was made, so `t`'s node reads stale
    history: `t` now reads its elements out of the base's current history (PyTorch regenerates
    such a view's grad_fn as an AsStridedBackward0 the same way)."""
    base = t._base
    idx = view_index(base, t)
    node = make_node(gather_op, (base,), {"shape": base._data.shape,
                                          "view_fn": lambda a, _i=idx: a.reshape(-1)[_i]}, t)
    node._base_fn = base.grad_fn
    t.grad_fn = node
    t._output_nr = 0
    return node


# recording calls these two through its slots (graph.py names no module built on it)
graph.rebase_view = rebase_view
graph.refresh_view = refresh_view
