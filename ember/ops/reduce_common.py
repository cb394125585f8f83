"""Pieces shared by the reductions, scans and sorting ops.

- dim handling (`dims`, `axis`, `restore`, `expand_grad`) with PyTorch's errors;
- `take_along` / `put_along`: gather and scatter-add along one dim, each the other's
  derivative, so every value-selecting op (max with dim, sort, topk, median, cummax...)
  routes its gradient through its indices and still has a double backward;
- `flip`: reverse along dims (reversed cumulative sums in the scan derivatives);
- `selecting_op`: the OpDef of an op whose values are `input` gathered at saved indices;
- `multi_output`: a node class whose formulas receive the tuple of all output gradients
  (var_mean, aminmax);
- `write_out`: the `out=` argument for one tensor or a tuple of them.
"""
import math

import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import make_view
from ..dispatch import wrap
from ..dispatch_args import Omitted
from ..autograd.grad_mode import state, call_mode
from ..autograd import graph
from .registry import OpDef, REDUCTION, LINEAR
from ..autograd.derivative import Derivative
from .view import strided_view

LOWP = (D.float16, D.bfloat16)


# the default `dim` of max/min/median/nanmedian/prod: torch's overload without a dim (all
# elements); an explicit ``dim=None`` is not that overload: torch's parser refuses it
ALL_DIMS = Omitted("all elements")


def dims(dim, ndim):
    """`dim` (None, int, or a list/tuple of ints) as a tuple of wrapped dims, or None = all."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        return S.wrap_dims(dim, ndim)
    return (S.wrap_dim(dim, ndim),)


def axis(ds, ndim):
    """The NumPy `axis` argument for wrapped dims `ds` (0-dim tensors reduce over nothing)."""
    if ds is None or ndim == 0:
        return None
    return ds


def reduced_count(shape, ds):
    """How many elements each output element reduces over."""
    if ds is None:
        return math.prod(shape)
    return math.prod([shape[d] for d in ds]) if shape else 1


def kernel_dtype(dt):
    """NumPy dtype to compute in: float16/bfloat16 accumulate in float32, like PyTorch."""
    return np.float32 if dt in LOWP else dt.np


def restore(t, shape, ds, keepdim):
    """Reinsert the reduced dims of `t` as size-1 dims so it broadcasts against `shape`."""
    if keepdim or len(shape) == 0:
        return t
    if ds is None:
        return t.reshape((1,) * len(shape))
    for d in sorted(ds):
        t = t.unsqueeze(d)
    return t


def expand_grad(g, shape, ds, keepdim):
    """Broadcast a reduced gradient back to the input's `shape`."""
    if ds is None and not g._data.ndim:
        if not state.enabled and not state.modes:
            # nothing records (no create_graph) and no mode watches: the view `expand` makes
            # (every stride 0), built directly
            return make_view(g, strided_view(g._data, shape, (0,) * len(shape)))
        return g.expand(shape)      # a 0-d gradient broadcasts as it is (whole-tensor sums)
    return restore(g, shape, ds, keepdim).expand(shape)


def refuse_complex(name, dt):
    """Ordering ops (max, sort, median...) have no complex kernel in torch."""
    if dt._kind == 3:
        raise NotImplementedError(f'"{name}" not implemented for \'{D.torch_name(dt)}\'')


def reduce_result(op, input, dims, keepdim, arr, dt, attrs):
    """Wrap a reduction's result and attach `op`'s node (floating results only)."""
    out = wrap(arr, dt)
    if state.enabled and input._requires_grad and dt._kind >= 2:
        graph.record(op, (input,), out, attrs)
    return out


# ---- gather / scatter-add along one dim: each is the other's derivative ----
def _full_index(idx, dim):
    ix = list(np.ix_(*[np.arange(s) for s in idx.shape]))
    ix[dim] = idx
    return tuple(ix)


def take_along(x, idx, dim):
    """`x` gathered at the integer array `idx` along `dim` (differentiable in `x`)."""
    arr = x._data if x._data.ndim == 0 else np.take_along_axis(x._data, idx, dim)
    out = wrap(np.array(arr, copy=True), x.dtype)
    if state.enabled and x._requires_grad:
        graph.record(_TAKE, (x,), out, {"idx": idx, "dim": dim, "shape": x._data.shape})
    return out


def put_along(g, idx, dim, shape):
    """Zeros of `shape` with `g` summed in at `idx` along `dim` (indices may repeat)."""
    if len(shape) == 0:
        arr = np.array(g._data, copy=True)
    else:
        arr = np.zeros(shape, g._data.dtype)
        np.add.at(arr, _full_index(idx, dim), g._data)
    out = wrap(arr, g.dtype)
    if state.enabled and g._requires_grad:
        graph.record(_PUT, (g,), out, {"idx": idx, "dim": dim})
    return out


def _seen_by_forward_ad(name, impl):
    """Backward formulas call these helpers (sort's, cummax's, max's...), which compute on
    arrays: forward AD (a mode marked ``differentiates``) gets them as calls, so that a
    gradient computed under it has its tangent (`impl.jvp`: they are linear in x or g).
    Other modes see what they saw before."""
    impl.jvp = LINEAR

    def helper(*args):
        modes = state.modes
        if modes and (getattr(modes[-1], "differentiates", False) or
                      getattr(modes[-1], "batching", False)):     # vmap: impl.batch
            return call_mode(name, impl, args, {})
        return impl(*args)
    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = impl.__doc__
    return helper


def _along_batch(v, args, kwargs):
    """vmap's rule for take_along/put_along: the (unbatched) index array gets the batch dim
    by broadcasting, the dim moves past it."""
    x, idx, dim = args[:3]
    if v.logical_dim(x) == 0 or not v.is_batched(x) or len(args) > 3 and not args[3]:
        return NotImplemented
    b = x.shape[0]
    idx = np.broadcast_to(idx[None], (b,) + idx.shape)
    rest = (((b,) + tuple(args[3])),) if len(args) > 3 else ()
    return v.call(x, idx, dim + 1 if dim >= 0 else dim, *rest)


take_along.batch = put_along.batch = _along_batch
take_along = _seen_by_forward_ad("take_along", take_along)
put_along = _seen_by_forward_ad("put_along", put_along)


_TAKE = Derivative("_take_along", attrs={"idx": None, "dim": 0, "shape": ()},
                   grads={"self": lambda g, idx, dim, shape: put_along(g, idx, dim, shape)},
                   node_name="GatherBackward0")
_PUT = Derivative("_put_along", attrs={"idx": None, "dim": 0},
                  grads={"self": lambda g, idx, dim: take_along(g, idx, dim)},
                  node_name="ScatterAddBackward0")


def flip(x, ds):
    """`x` reversed along the dims `ds` (a copy; differentiable)."""
    if x._data.ndim == 0:
        return x
    out = wrap(np.flip(x._data, ds).copy(), x.dtype)
    if state.enabled and x._requires_grad:
        graph.record(_FLIP, (x,), out, {"dims": ds})
    return out


flip = _seen_by_forward_ad("flip", flip)
_FLIP = Derivative("_flip", attrs={"dims": ()},
                   grads={"self": lambda g, dims: flip(g, dims)}, node_name="FlipBackward0")


# ---- ops whose values are the input picked at saved indices ----
def _selected_grad(g, idx, dim, shape, keepdim):
    if not keepdim and len(shape) > 0:
        g = g.unsqueeze(dim)
    return put_along(g, idx, dim, shape)


def selecting_op(name, node_name, of=None):
    """The backward template of values = input at `idx` (kept-dim shaped) along `dim`:
    the gradient goes to idx; `of` names the op when it differs from `name`."""
    return Derivative(name, of=of,
                      attrs={"idx": None, "dim": 0, "shape": (), "keepdim": True},
                      grads={"self": _selected_grad}, node_name=node_name)


def select_values(op, input, idx, dim, keepdim):
    """Values of `input` at kept-dim indices `idx` along `dim`, with `op`'s node attached."""
    a = input._data
    vals = a if a.ndim == 0 else np.take_along_axis(a, idx, dim)
    if not keepdim and a.ndim:
        vals = np.squeeze(vals, dim)
    # (.copy() for 0-d: a meta array's copy is meta, np.array's would not be)
    out = wrap(vals.copy() if vals.ndim == 0 else np.array(vals, copy=True), input.dtype)
    if state.enabled and input._requires_grad and input.dtype._kind >= 2:
        graph.record(op, (input,), out, {"idx": idx, "dim": dim, "shape": a.shape,
                                         "keepdim": keepdim})
    return out


def picked_jvp(dim_at, default):
    """Forward-mode rule of ops whose values are input elements picked at the indices they
    return (sort, topk, cummax...): the tangent picked at the same indices. `dim_at`: the
    position of `dim` among the arguments after the input."""
    def jvp(tan, result, input, *args, **kwargs):
        dim = kwargs.get("dim", args[dim_at] if len(args) > dim_at else default)
        values, indices = result[0], result[1]
        t = tan(input)
        if input.dim() == 0:
            return (t.clone(), None)
        if values.dim() < input.dim():
            return (t.gather(dim, indices.unsqueeze(dim)).squeeze(dim), None)
        return (t.gather(dim, indices), None)
    return jvp


def index_tensor(idx, dim, keepdim, ndim):
    if not keepdim and ndim:
        idx = np.squeeze(idx, dim)
    return wrap(idx.astype(np.int64, order="C"), D.int64)    # (astype: meta stays meta)


# ---- several differentiable outputs ----
class MultiOutputNode(graph.OpNode):
    """Node whose formulas get the tuple of every output's gradient (None where absent)."""
    __slots__ = ()

    def apply(self, grads):
        return graph.OpNode.apply(self, (grads,))


def multi_output(op):
    op.node_class = type(op.node_name, (MultiOutputNode,), {"__slots__": (), "op": op})
    return op


def grad_at(gs, i):
    return gs[i] if i < len(gs) else None


def write_out(out, result):
    """Copy `result` (a tensor or tuple of tensors) into the user's `out=` tensor(s)."""
    if out is None:
        return result
    from ..dispatch import copy_into_out
    if isinstance(result, tuple):
        written = tuple(copy_into_out(o, r) for o, r in zip(out, result))
        return type(result)(*written) if hasattr(result, "_fields") else written
    return copy_into_out(out, result)


def sum_dtype(input, dtype):
    """sum/nansum/prod/cumsum result dtype: `dtype` if given, else int64 for integers/bool."""
    if dtype is not None:
        return D.to_dtype(dtype)
    return input.dtype if input.dtype._kind >= 2 else D.int64
