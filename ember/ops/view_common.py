"""How a view op is built and differentiated; the view ops themselves are in ops/view.py.

A view op is an OpDef (`view_op`, `reshape_op`) plus a function from a backend array to a
view of it (`view_fn`), run by `apply_view`. Its derivative is generic: scatter the gradient
back through the same view function applied to an index array (`_view_scatter`), so every
view (expand, as_strided, unfold, diagonal) is differentiated by one rule that has its own
derivative (`_gather`). Permutations carry their inverse, so their gradient is a view too.
"""
import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from ..core.strides import strided_view  # noqa: F401  (re-exported: the ops import it here)
from ..core import dtype as D
from ..core.tensor import Tensor, make_view
from ..autograd.grad_mode import state, call_mode
from ..autograd import graph
from ..autograd import views as _autograd_views
from ..dispatch_args import is_int
from .registry import OpDef, VIEW, LINEAR
from ..autograd.derivative import Derivative


def _index_map(shape, view_fn):
    """Flat positions (in a contiguous tensor of `shape`) of each element of the view."""
    n = 1
    for s in shape:
        n *= s
    return view_fn(np.arange(n, dtype=np.int64).reshape(shape))


def _scatter_kernel(g, shape, view_fn, disjoint=False):
    if disjoint:
        # a view whose elements are distinct places of its base (everything but expand,
        # unfold and as_strided): write g through the same view of a zero tensor
        out = np.zeros(shape, dtype=g.dtype)
        target = view_fn(out)
        if np.may_share_memory(target, out):
            target[...] = g
            return out
    idx = _index_map(shape, view_fn)
    n = int(np.prod(shape, dtype=np.int64))
    flat_idx = np.ascontiguousarray(idx).reshape(-1)
    gflat = np.ascontiguousarray(np.broadcast_to(g, idx.shape)).reshape(-1)
    # bincount, not np.unique: the uniqueness test is O(n) and ~100x faster on big grads
    if flat_idx.size == 0 or np.bincount(flat_idx, minlength=n).max() <= 1:
        out = np.zeros(n, dtype=g.dtype)
        out[flat_idx] = gflat
    else:
        out = np.bincount(flat_idx, weights=gflat.astype(np.float64), minlength=n)
        out = out.astype(g.dtype)
    return out.reshape(shape)


def _view_scatter(g, shape, view_fn, disjoint=False):
    """The adjoint of a view: a zero tensor of `shape` with `g` summed into the viewed places."""
    if state.modes:     # a compiler trace records it as one call
        return call_mode("view_scatter", _view_scatter_impl, (g, shape, view_fn, disjoint), {})
    return _view_scatter_impl(g, shape, view_fn, disjoint)


def _view_scatter_impl(g, shape, view_fn, disjoint=False):
    from ..dispatch import wrap
    out = wrap(_scatter_kernel(g._data, tuple(shape), view_fn, disjoint), g.dtype)
    if state.enabled and g._requires_grad:
        graph.record(_SCATTER, (g,), out, {"shape": shape, "view_fn": view_fn})
    return out


def _gather(g, view_fn):
    if state.modes:
        return call_mode("view_gather", _gather_impl, (g, view_fn), {})
    return _gather_impl(g, view_fn)


def _gather_impl(g, view_fn):
    from ..dispatch import wrap
    out = wrap(np.ascontiguousarray(view_fn(g._data)), g.dtype)
    if state.enabled and g._requires_grad:
        graph.record(_GATHER, (g,), out, {"shape": g._data.shape, "view_fn": view_fn})
    return out


# forward mode (autograd/forward_rules.py): both are linear in g
_view_scatter_impl.jvp = _gather_impl.jvp = LINEAR
_SCATTER = Derivative("_view_scatter", attrs={"shape": None, "view_fn": None},
                      grads={"self": lambda g, view_fn: _gather(g, view_fn)},
                      node_name="ViewScatterBackward0")
_GATHER = Derivative("_view_gather", attrs={"shape": None, "view_fn": None},
                     grads={"self": lambda g, shape, view_fn: _view_scatter(g, shape, view_fn)},
                     node_name="AsStridedBackward0")
# recording rebases views with these two (autograd/views.py sits below the ops, names none)
_autograd_views.gather_op = _GATHER
_autograd_views.view_scatter = _view_scatter


def _grad_of_view(g, shape, view_fn):
    return _view_scatter(g, shape, view_fn)


def _grad_of_disjoint_view(g, shape, view_fn):
    adjoint = getattr(view_fn, "adjoint", None)
    if adjoint is not None:
        # a permutation of dims (transpose, t, permute): its gradient is the inverse
        # permutation of g, itself a view — no copy, and differentiable again
        if state.modes:     # the public op, so a compiler trace records it
            return g.permute(adjoint.dims)
        return apply_view(_PERMUTE, g, adjoint)
    return _view_scatter(g, shape, view_fn, disjoint=True)


def reshape_op(name, node_name=None):
    """A view that only regroups dims (view, squeeze, unsqueeze, alias): its gradient is
    `g` reshaped back to the input's shape, a view whenever `g` allows it."""
    return Derivative(name, attrs={"shape": None, "view_fn": None},
                      grads={"self": lambda g, shape: g.reshape(shape)}, node_name=node_name)


@functools.lru_cache(maxsize=1024)
def _permutation(dims):
    """view_fn for a dim permutation, carrying its inverse for the derivative (cached: the
    same few permutations recur on every step of a training loop)."""
    inverse = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
    fn = (lambda a: a.transpose(dims))
    inv = (lambda a: a.transpose(inverse))
    fn.adjoint, inv.adjoint = inv, fn
    fn.dims, inv.dims = dims, inverse
    return fn


def view_op(name, node_name=None, disjoint=True):
    """Declare a view op; returns its OpDef for `apply_view`. `disjoint=False` marks views
    whose elements may alias each other (expand, unfold, as_strided): their gradient sums."""
    return Derivative(name, attrs={"shape": None, "view_fn": None},
                      grads={"self": _grad_of_disjoint_view if disjoint else _grad_of_view},
                      node_name=node_name)


def apply_view(op, self, view_fn, arr=None):
    """Run a view: alias `self`'s storage through `view_fn` (or `arr`, which the caller
    made and which must be ``view_fn(self._data)``), and record its node."""
    if arr is None:
        arr = view_fn(self._data)
    out = make_view(self, arr)
    if self._requires_grad and state.enabled:
        graph.record(op, (self,), out, {"shape": self._data.shape, "view_fn": view_fn})
    return out


def offset_view(a, off, shape, stride):
    """A view of `a`'s memory starting `off` elements past `a`'s first, with element strides
    `stride` (the view may be empty, and `off` may then point past `a`'s end)."""
    item = a.itemsize
    if off:  # `two` is never read: only the address of its second element is used
        a = _np_as_strided(a, shape=(2,), strides=(off * item,), subok=True)[1:]
    # subok: a view of a meta array (ember/core/meta.py) stays one
    return _np_as_strided(a, shape=tuple(shape), strides=tuple(s * item for s in stride),
                          subok=True)


def repoint(r, a, off):
    """`r` (a view of `a`) with its data `off` bytes past `a`'s. NumPy leaves an empty slice's
    data pointer where it was; PyTorch's storage_offset moves on as for any slice."""
    if r.size or r.ctypes.data - a.ctypes.data == off:
        return r
    return offset_view(a, off // a.itemsize, r.shape, _elem_strides(r))


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    if shape and shape[0].__class__ is bool:     # (torch's parser: a bool first is no size)
        raise TypeError("argument 'size' (position 1) must be tuple of ints, not bool")
    out = []
    for s in shape:
        if hasattr(s, "__index__"):
            out.append(s.__index__())
        else:
            raise TypeError(f"shape must be a sequence of ints, got {type(s).__name__}")
    return tuple(out)


def _elem_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


_PERMUTE = view_op("permute")   # here: a permutation's gradient is one


# ---- indexing order (indexing.py, and vmap's rule for it in batch_rules.py) ----
def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_advanced(v):
    return isinstance(v, (Tensor, list, np.ndarray, bool, np.bool_))


def ints_first(index):
    """torch applies the integer components of an index that also holds tensors first, as
    basic indices (``x[0, :, idx]`` is ``x[0][:, idx]``), where NumPy would broadcast the
    integer with the tensor and move the result's dims to the front. Returns (the basic
    index, the rest), or None when the index does not mix the two."""
    if not isinstance(index, tuple) or not any(_is_int(v) for v in index) or \
            not any(_is_advanced(v) for v in index):
        return None
    basic, rest = [], []
    for v in index:
        if _is_int(v):
            basic.append(v)
        elif _is_advanced(v):
            nd = getattr(v, "ndim", None) if not isinstance(v, Tensor) else v.dim()
            is_mask = (v.dtype in (D.bool_, D.uint8)) if isinstance(v, Tensor) else \
                (np.asarray(v).dtype == np.bool_)
            basic.extend([slice(None)] * (max(nd or 0, 1) if is_mask else 1))
            rest.append(v)
        else:   # slices, None, Ellipsis: applied in the first step, kept as full slices
            basic.append(v)
            rest.append(v if v is Ellipsis else slice(None))
    return tuple(basic), tuple(rest)


def split_sizes(v):
    """split's sections as torch's parser takes `tuple of ints` (split_with_sizes')."""
    where = "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints"
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"{where}, not {type(v).__name__}")
    for k, s in enumerate(v):
        if not is_int(s):
            raise TypeError(f"{where}, but found element of type {type(s).__name__} at pos {k}")
    return [int(s) for s in v]


def narrow_start(dim, start, length):
    """narrow's start as torch's parser takes it: an int, or a 0-dim integer tensor; a float,
    bool or None start or length matches no overload (TypeError)."""
    if isinstance(start, Tensor):      # (torch's overload with a Tensor start)
        if start.dim() != 0 or start.dtype.is_floating_point or start.dtype.is_complex or \
                start.dtype is D.bool_:
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = int(start.item())
    for v in (start, length):
        if not is_int(v) or isinstance(v, Tensor):
            raise TypeError(f"narrow() received an invalid combination of arguments - got "
                            f"({type(dim).__name__}, {type(start).__name__}, "
                            f"{type(length).__name__}), but expected one of: * (int dim, Tensor "
                            f"start, int length) * (int dim, int start, int length)")
    return start
