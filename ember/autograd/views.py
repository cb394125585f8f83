"""In-place ops on views of tensors that take part in autograd (PyTorch's CopySlices).

When `v = b[0]` and then `v.mul_(2)`, the gradient of `b` must flow through the multiply
only where `v` sits. The base gets a `CopySlices` node wrapping the op's node, and the view
gets a node that reads its slice back out of the base's new history.
"""
import numpy as np

from .graph import _RESULT, Node, make_node, edge_of, SavedTensor, saved_before_bump


def _positions(t):
    from ..ops.view import _storage_positions
    return _storage_positions(t)


def view_index(base, view):
    """For each element of `view`, its position in `base` flattened in logical order."""
    pos2idx = np.zeros(base._storage_obj().data.size, np.int64)
    pos2idx[_positions(base).reshape(-1)] = np.arange(base._data.size)
    return pos2idx[_positions(view)]


class CopySlices(Node):
    """Gradient of a base tensor after an in-place op wrote into one of its views."""
    __slots__ = ("fn", "idx", "base_shape")

    def apply(self, grads):
        from ..dispatch import wrap
        g = grads[0]
        idx = self.idx
        flat = g.reshape(-1)
        g_view = flat[wrap(idx, _int64())]
        res = self.fn.apply((g_view,))
        # the base's old history sees the gradient everywhere except where the view was
        # overwritten; there it sees what the op passes back to its `self`
        mask = np.ones(g._data.size, bool)
        mask[idx.reshape(-1)] = False
        g_base = flat * wrap(mask, g.dtype)
        if res[0] is not None:
            r0 = res[0]
            if tuple(r0.shape) != tuple(idx.shape):
                r0 = r0.expand(idx.shape)
            from ..ops.view import _view_scatter
            g_base = g_base + _view_scatter(r0, (g._data.size,),
                                            lambda a, _i=idx: a[_i])
        return (g_base.reshape(self.base_shape),) + tuple(res[1:])

    def release(self):
        self.fn.release()


def _int64():
    from ..core import dtype
    return dtype.int64


def rebase_view(op, args, t, attrs, old):
    """Rewire the graph after in-place `op` on view `t` (its result already written)."""
    from ..ops.view import _GATHER
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
    vnode = make_node(_GATHER, (base,), {"shape": base._data.shape,
                                         "view_fn": lambda a, _i=idx: a.reshape(-1)[_i]}, t)
    vnode._base_fn = node
    t.grad_fn = vnode
    t._requires_grad = True
    t._output_nr = 0
