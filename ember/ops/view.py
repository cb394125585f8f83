"""View ops: new shape/stride/offset over the same storage, never a copy.

Each view is a function from a backend array to a view of it (`view_fn`), plus PyTorch's
meta checks. Its derivative is generic: scatter the gradient back through the same view
function applied to an index array (`_view_scatter`), so every view — expand, as_strided,
unfold, diagonal — is differentiated by one rule that also has its own derivative. That
machinery lives in ops/view_common.py; this file holds the ops.
"""
import functools

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import strides as S
from ..core.strides import strided_view, storage_positions as _storage_positions  # noqa: F401
from ..core.tensor import Tensor, make_view
from ..dispatch_args import int_arg
from .registry import OpDef, VIEW, register, METHODS, OPS
from ..autograd.derivative import Derivative
from . import batch_rules as _br
# the view machinery, re-exported: code imports these names from here
from .view_common import (_view_scatter, _GATHER, reshape_op, _permutation,  # noqa: F401
                          view_op, apply_view, offset_view, repoint, _shape_arg,
                          _elem_strides, _PERMUTE, split_sizes, narrow_start)


# ---- view / reshape ----
_VIEW = reshape_op("view")
_RESHAPE_ALIAS = reshape_op("_reshape_alias", node_name="ViewBackward0")


def view(self, *shape, dtype=None):
    """A view of the same data with another shape; fails when strides don't allow it.

    >>> ember.arange(6).view(2, 3).t().view(6)
    Traceback (most recent call last): ... RuntimeError: view size is not compatible ...
    """
    if not shape and dtype is None:
        raise TypeError("view() missing required argument 'size'")
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)) and \
            not hasattr(shape[0], "__index__"):
        dtype, shape = shape[0], ()
    if dtype is not None and not shape:
        return _view_dtype(self, dtype)
    shape = S.infer_size(_shape_arg(shape), self._data.size)
    arr = self._data
    out = None       # the forward's view, where working out whether one exists made it
    if _reshape_ok(arr):
        out = arr.reshape(shape)
    elif _nocopy_reshape_ok(arr, shape):
        out = arr.reshape(shape)
        if not np.may_share_memory(out, arr):   # a copy shares nothing
            out = None
    else:
        st = S.view_strides(arr.shape, self.stride(), shape)
        if st is not None:
            # NumPy's reshape is the same view when it gives these strides (it differs only
            # on size-1 dims), for a fraction of as_strided's cost
            out = arr.reshape(shape)
            if out.strides != tuple(s * arr.itemsize for s in st) or \
                    not np.may_share_memory(out, arr):
                out = strided_view(arr, shape, st)
    if out is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride "
                           "(at least one dimension spans across two contiguous subspaces). "
                           "Use .reshape(...) instead.")
    # (_view_arr is the view function the node keeps: its backward applies it to other
    # arrays of this shape, whose strides may differ)
    return apply_view(_VIEW, self, lambda a: _view_arr(a, shape), out)


def _nocopy_reshape_ok(a, shape):
    """True when NumPy's reshape of `a` to `shape` is a view with PyTorch's strides: it is
    a view whenever one exists, and with no size-1 dims on either side the view's strides
    are the only possible ones (size-1 dims are where NumPy and PyTorch may differ)."""
    return a.size and 1 not in a.shape and 1 not in shape


def _reshape_ok(a):
    """True when NumPy's reshape gives PyTorch's view strides: the strides are exactly the
    contiguous ones (NumPy's flag also allows any stride on size-1 dims; PyTorch keeps those,
    so with size-1 dims the strides are compared with the contiguous ones)."""
    if not (a.flags.c_contiguous and a.size):
        return False
    return 1 not in a.shape or a.strides == _contiguous_bytes(a.shape, a.itemsize)


@functools.lru_cache(maxsize=1024)
def _contiguous_bytes(shape, itemsize):
    return tuple(s * itemsize for s in S.contiguous_strides(shape))


def _view_arr(a, shape):
    if _reshape_ok(a):
        return a.reshape(shape)
    if _nocopy_reshape_ok(a, shape):
        r = a.reshape(shape)
        if np.may_share_memory(r, a):    # NumPy copies only where no view exists
            return r
    return strided_view(a, shape, S.view_strides(a.shape, _elem_strides(a), shape))


def _check_view_dtype(self, d):
    """torch's conditions for viewing elements of one size as another: the last dim is
    contiguous and, towards a bigger element, its size, the offset and every other stride
    are whole multiples of the ratio (the new elements tile the old ones exactly)."""
    from ..dispatch import torch_name
    what = (f"to view {torch_name(self.dtype)} as {torch_name(d)} (different element "
            "sizes)")
    if self._data.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    st = self.stride()
    if st[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {st[-1]}")
    if d.itemsize > self.dtype.itemsize:
        ratio = d.itemsize // self.dtype.itemsize
        checks = [("self.size(-1)", self._data.shape[-1]),
                  ("self.storage_offset()", self.storage_offset())]
        checks += [(f"self.stride({i})", s_) for i, s_ in enumerate(st[:-1])]
        for name, v in checks:
            if v % ratio:
                raise RuntimeError(f"{name} must be divisible by {ratio} {what}, but got {v}")


def _view_dtype(self, dtype):
    from ..core.dtype import to_dtype
    d = to_dtype(dtype)
    if d.itemsize != self.dtype.itemsize:
        _check_view_dtype(self, d)
    t = make_view(self, self._data.view(d.np))
    t.dtype = d
    return t


def reshape(self, *shape):
    """Like ``view`` when the strides allow it, else a contiguous copy."""
    shape = S.infer_size(_shape_arg(shape), self._data.size)
    arr = self._data
    if _reshape_ok(arr):
        return view(self, shape)
    if _nocopy_reshape_ok(arr, shape):
        viewable = np.may_share_memory(arr.reshape(shape), arr)
    else:
        viewable = S.view_strides(arr.shape, self.stride(), shape) is not None
    return view(self if viewable else self.contiguous(), shape)


def view_as(self, other):
    return view(self, other.shape)


def reshape_as(self, other):
    return reshape(self, other.shape)


def flatten(self, start_dim=0, end_dim=-1):
    nd = self._data.ndim
    s = S.wrap_dim(start_dim, nd)
    if nd == 0:
        S.wrap_dim(end_dim, nd)
        return reshape(self, (1,))
    e = S.wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self if True else None
    shape = self._data.shape
    new = shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:]
    return reshape(self, new)


def unflatten(self, dim, sizes):
    nd = self._data.ndim
    d = S.wrap_dim(dim, nd)
    shape = self._data.shape
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = S.infer_size(sizes, shape[d]) if -1 in sizes else sizes
    if int(np.prod(inner)) != shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({shape[d]}) in the input tensor")
    return view(self, shape[:d] + tuple(inner) + shape[d + 1:])


# ---- dims ----
_TRANSPOSE = view_op("transpose")
_T = view_op("t")
_SQUEEZE = reshape_op("squeeze")
_UNSQUEEZE = reshape_op("unsqueeze")
_EXPAND = Derivative("expand", attrs={"shape": None, "view_fn": None},
                     grads={"self": lambda g, shape: g.sum_to_size(shape)})
_SELECT = view_op("select")
_SLICE = view_op("slice")
_DIAGONAL = view_op("diagonal")
_AS_STRIDED = view_op("as_strided", disjoint=False)
_UNFOLD = view_op("unfold", disjoint=False)
_ALIAS = reshape_op("alias")


_SWAP_2D = _permutation((1, 0))
_SWAPS_2D = {(0, 1), (1, 0), (-2, -1), (-1, -2), (0, -1), (-1, 0), (-2, 1), (1, -2)}


def transpose(self, dim0, dim1):
    nd = self._data.ndim
    # the matrix transpose (mT, backward of mm); exact int types, since 0.0 == 0 and
    # True == 1 would otherwise match the set and skip wrap_dim's type check
    if nd == 2 and type(dim0) is int and type(dim1) is int and (dim0, dim1) in _SWAPS_2D:
        return apply_view(_TRANSPOSE, self, _SWAP_2D)
    d0, d1 = S.wrap_dim(dim0, nd), S.wrap_dim(dim1, nd)
    if nd < 2 or d0 == d1:
        return apply_view(_TRANSPOSE, self, lambda a: a.view())
    dims = list(range(nd))
    dims[d0], dims[d1] = d1, d0
    return apply_view(_TRANSPOSE, self, _permutation(tuple(dims)))


def t(self):
    nd = self._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return apply_view(_T, self, _permutation((1, 0)) if nd == 2 else (lambda a: a.view()))


def permute(self, *dims):
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_arg(dims)
    nd = self._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    wrapped = tuple(S.wrap_dim(d, nd) for d in dims)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply_view(_PERMUTE, self, _permutation(wrapped))


def movedim(self, source, destination):
    nd = self._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    given = {"source": list(src), "destination": list(dst)}
    src = tuple(S.wrap_dim(d, nd) for d in src)
    dst = tuple(S.wrap_dim(d, nd) for d in dst)
    for what, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{what}` ({given[what]})")
    if nd == 0:
        return alias(self)
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(self, order)


class _SizeOneDims:
    """squeeze's default `dim`: torch's overload without a dim (every size-1 dim). An
    explicit ``dim=None`` is not that overload: torch's parser refuses it."""
    __slots__ = ()

    def __repr__(self):
        return "<every size-1 dim>"


SIZE_ONE_DIMS = _SizeOneDims()


def squeeze(self, dim=SIZE_ONE_DIMS):
    shape = self._data.shape
    nd = len(shape)
    if dim is None:
        raise TypeError("squeeze() received an invalid combination of arguments - got "
                        "(Tensor, NoneType), but expected one of: (Tensor input), (Tensor "
                        "input, int dim), (Tensor input, tuple of ints dim)")
    if dim is SIZE_ONE_DIMS:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
        axes = tuple(d for d in S.wrap_dims(dims, nd) if nd and shape[d] == 1)
    if not axes:
        return apply_view(_SQUEEZE, self, lambda a: a.view())
    return apply_view(_SQUEEZE, self, lambda a: a.squeeze(axes))


def unsqueeze(self, dim):
    d = S.wrap_dim(dim, self._data.ndim + 1, scalar_ok=False)

    def fn(a):  # the new dim's stride is PyTorch's: size * stride of the dim it precedes
        shape, st = list(a.shape), list(_elem_strides(a))
        st.insert(d, shape[d] * st[d] if d < a.ndim else 1)
        shape.insert(d, 1)
        return strided_view(a, shape, st)
    return apply_view(_UNSQUEEZE, self, fn)


def expand(self, *sizes):
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _shape_arg(sizes)

    def fn(a):   # S.expand_strides raises PyTorch's errors
        shape, st = S.expand_strides(a.shape, _elem_strides(a), sizes)
        return strided_view(a, shape, st)
    return apply_view(_EXPAND, self, fn)


def expand_as(self, other):
    return expand(self, other.shape)


def broadcast_to(input, size):
    return expand(input, tuple(size))


def narrow(self, dim, start, length):
    nd = self._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = S.wrap_dim(dim, nd)
    size = self._data.shape[d]
    start = narrow_start(dim, start, length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    start = int(start)
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if start + length > size or length < 0:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return _narrowed(self, d, start, length)


def select(self, dim, index):
    nd = self._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = S.wrap_dim(dim, nd)
    size = self._data.shape[d]
    if type(index) is not int:
        index = int_arg(index, "select", "index", 2)
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self._data.shape)} at dimension {d}")
    if index < 0:
        index += size
    idx = (slice(None),) * d + (index, Ellipsis)  # Ellipsis: a 0-d view, not a scalar
    return apply_view(_SELECT, self, lambda a: repoint(a[idx], a, index * a.strides[d]))


def unbind(self, dim=0):
    if self._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = S.wrap_dim(dim, self._data.ndim)
    return tuple(select(self, d, i) for i in range(self._data.shape[d]))


def split(self, split_size_or_sections, dim=0):
    nd = self._data.ndim
    d = S.wrap_dim(dim, nd)
    size = self._data.shape[d]
    if isinstance(split_size_or_sections, bool):     # (torch's parser: no overload)
        raise TypeError(f"split() received an invalid combination of arguments - got (Tensor, "
                        f"bool, int), but expected one of: * (Tensor input, int split_size, int "
                        f"dim = 0) * (Tensor input, tuple of ints split_size, int dim = 0)")
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.dim() == 0 and \
            not split_size_or_sections.dtype.is_floating_point:
        split_size_or_sections = int(split_size_or_sections.item())    # (torch: an int)
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        if step == 0 and size > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}")
        sizes = [min(step, size - i) for i in range(0, size, step)] if size else [0]
    else:
        sizes = split_sizes(split_size_or_sections)
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={sizes}")
        if sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:     # (narrow's view, without its argument checks: these bounds fit)
        out.append(_narrowed(self, d, start, s))
        start += s
    return tuple(out)


def _narrowed(self, d, start, length):
    idx = (slice(None),) * d + (slice(start, start + length),)
    return apply_view(_SLICE, self, lambda a: repoint(a[idx], a, start * a.strides[d]))


def chunk(self, chunks, dim=0):
    if type(chunks) is not int or chunks > 2 ** 63 - 1:   # (not 2**63 empty chunks; no bool)
        chunks = int_arg(chunks, "chunk", "chunks", 2)
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = S.wrap_dim(dim, self._data.ndim)
    size = self._data.shape[d]
    step = -(-size // chunks) if size else 1
    if size == 0:
        return tuple(narrow(self, d, 0, 0) for _ in range(chunks))
    return split(self, step, d)


def diagonal(self, offset=0, dim1=0, dim2=1):
    if type(offset) is not int or not -2 ** 63 <= offset < 2 ** 63:
        offset = int_arg(offset, "diagonal", "offset", 2)
    nd = self._data.ndim
    d1, d2 = S.wrap_dim(dim1, nd), S.wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply_view(_DIAGONAL, self, lambda a: _diag_arr(a, offset, d1, d2))


def _diag_arr(a, offset, d1, d2):
    st = _elem_strides(a)
    shape = a.shape
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        start = offset * st[d2] if length else 0
    else:
        length = max(0, min(n1 + offset, n2))
        start = -offset * st[d1] if length else 0
    keep = [i for i in range(a.ndim) if i not in (d1, d2)]
    new_shape = [shape[i] for i in keep] + [length]
    new_st = [st[i] for i in keep] + [st[d1] + st[d2]]
    return offset_view(a, start, new_shape, new_st)


def as_strided(self, size, stride, storage_offset=None):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    base_off = self.storage_offset()
    off = base_off if storage_offset is None else int_arg(storage_offset, "as_strided",
                                                          "storage_offset", 4)
    storage = self._storage_obj()
    need = off + sum((s - 1) * st for s, st in zip(size, stride)) + 1 if all(size) else 0
    if need > storage.data.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {off}, and itemsize {self.dtype.itemsize} requiring a "
                           f"storage size of {need * self.dtype.itemsize} are out of bounds for "
                           f"storage of size {storage.data.size * self.dtype.itemsize}")
    flat = storage.data

    def fn(a):
        if a is self._data:
            return strided_view(flat[off:], size, stride)
        # applied to an index array laid out like self (for the derivative): map storage
        # positions back to self's logical positions
        pos2idx = np.zeros(flat.size, np.int64)
        pos2idx[_storage_positions(self).reshape(-1)] = np.arange(self._data.size)
        out_pos = strided_view(np.arange(flat.size, dtype=np.int64)[off:], size, stride)
        return np.asarray(a).reshape(-1)[pos2idx[out_pos]]
    return apply_view(_AS_STRIDED, self, fn)


def unfold(self, dimension, size, step):
    if type(size) is not int or type(step) is not int:
        size, step = int_arg(size, "unfold", "size", 2), int_arg(step, "unfold", "step", 3)
    nd = self._data.ndim
    d = S.wrap_dim(dimension, nd)
    length = self._data.shape[d] if nd else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")

    def fn(a):
        if a.ndim == 0:
            return strided_view(a, (size,), (1,))
        st = [s // a.itemsize for s in a.strides]
        shape = list(a.shape)
        n = (shape[d] - size) // step + 1
        new_shape = shape[:d] + [n] + shape[d + 1:] + [size]
        new_st = st[:d] + [st[d] * step] + st[d + 1:] + [st[d]]
        return strided_view(a, new_shape, new_st)
    return apply_view(_UNFOLD, self, fn)


def detach(self):
    """A tensor sharing storage with `self` and cut from the graph (``requires_grad=False``)."""
    t = make_view(self, self._data)
    t._base = None
    return t


def detach_(self):
    if self._base is not None and self._base._requires_grad:
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    self.grad_fn = None
    self._requires_grad = False
    return self


def alias(self):
    return apply_view(_ALIAS, self, lambda a: a.view())


def _T_prop(self):
    nd = self._data.ndim
    return permute(self, tuple(range(nd - 1, -1, -1))) if nd > 1 else alias(self)


def _mT_prop(self):
    if self._data.ndim == 0:  # PyTorch: deprecated identity
        import warnings
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity "
                      "in these cases.", UserWarning, stacklevel=2)
        return alias(self)
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{self._data.ndim}-D tensor.")
    return transpose(self, -2, -1)


def swapaxes(self, axis0, axis1):
    return transpose(self, axis0, axis1)


_FUNCS = {
    "view": view, "reshape": reshape, "view_as": view_as, "reshape_as": reshape_as,
    "flatten": flatten, "unflatten": unflatten, "transpose": transpose, "t": t,
    "permute": permute, "movedim": movedim, "moveaxis": movedim, "squeeze": squeeze,
    "unsqueeze": unsqueeze, "expand": expand, "expand_as": expand_as,
    "broadcast_to": broadcast_to, "narrow": narrow, "select": select, "unbind": unbind,
    "split": split, "chunk": chunk, "diagonal": diagonal, "as_strided": as_strided,
    "unfold": unfold, "detach": detach, "swapaxes": swapaxes, "swapdims": swapaxes,
    "alias": alias,
}
_NO_FUNCTION = {"view", "view_as", "reshape_as", "expand", "expand_as", "unfold"}
_NO_METHOD = {"alias"}

# forward mode: a view's tangent is the same view of the tangent (VIEW ops are linear), but
# detach's result has none
_JVP = {detach: lambda tan, result, self: None}
_ONNX = {view: _ox.reshape, reshape: _ox.reshape, view_as: _ox.reshape_as,
         reshape_as: _ox.reshape_as, flatten: _ox.flatten, unflatten: _ox.unflatten,
         transpose: _ox.transpose, swapaxes: _ox.transpose, t: _ox.t, permute: _ox.permute,
         movedim: _ox.movedim, squeeze: _ox.squeeze, unsqueeze: _ox.unsqueeze,
         expand: _ox.expand, broadcast_to: _ox.expand, expand_as: _ox.expand_as,
         narrow: _ox.narrow, select: _ox.select, unbind: _ox.unbind, split: _ox.split,
         chunk: _ox.chunk, detach: _ox.identity, alias: _ox.identity}

for _name, _fn in _FUNCS.items():
    _published = register(OpDef(_name, VIEW, function=_name not in _NO_FUNCTION,
                                method=_name not in _NO_METHOD, jvp=_JVP.get(_fn),
                                onnx=_ONNX.get(_fn)), _fn)
    if _name in globals() and globals()[_name] is _fn:      # aliases (moveaxis) bind nothing
        globals()[_name] = _published
# torch.split is Python code that calls tensor.split(...) first: a list there is its
# AttributeError (a str has a split of its own, which refuses the arguments: TypeError)
OPS["split"].torch_python = ("split", (0,))
METHODS["detach_"] = detach_
def _inplace_view(view_fn, name):
    """The in-place metadata op `name` (``t_``, ``squeeze_``): self takes the geometry of
    ``view_fn(self, ...)``; in forward mode (`jvp`) its tangent becomes the same view."""
    def method(self, *args, **kwargs):
        return _restride(self, view_fn(self, *args, **kwargs))
    method.__name__ = name
    def jvp(tan, result, self, *args, **kwargs):
        return view_fn(tan(self), *args, **kwargs)
    jvp.sets = True      # self's tangent is replaced by the view, not written into
    method.jvp = jvp
    return method


METHODS["squeeze_"] = _inplace_view(lambda self, dim=SIZE_ONE_DIMS: squeeze(self, dim),
                                    "squeeze_")
METHODS["unsqueeze_"] = _inplace_view(lambda self, dim: unsqueeze(self, dim), "unsqueeze_")
METHODS["t_"] = _inplace_view(lambda self: t(self), "t_")
METHODS["transpose_"] = _inplace_view(lambda self, a, b: transpose(self, a, b), "transpose_")


def _restride(self, v):
    """In-place metadata ops (``t_``, ``unsqueeze_``): self takes the view's geometry."""
    self._data = v._data
    if v.grad_fn is not None:
        self.grad_fn = v.grad_fn
    return self


_T_prop = register(OpDef("T", VIEW, function=False, method=False,
                         onnx=_ox.T), _T_prop)
_mT_prop = register(OpDef("mT", VIEW, function=False, method=False,
                          onnx=_ox.mT), _mT_prop)
T = property(_T_prop)
mT = property(_mT_prop)


# vmap batching rules (OpDef.batch; ember/ops/batch_rules.py). Views with dim arguments
# (transpose, narrow, select, split, movedim, ...) get theirs derived from the kind.
for _name, _rule in (("view", _br.view_batch), ("reshape", _br.view_batch),
                     ("expand", _br.expand_batch), ("broadcast_to", _br.expand_batch),
                     ("expand_as", _br.expand_as_batch), ("view_as", _br.view_as_batch),
                     ("reshape_as", _br.reshape_as_batch), ("squeeze", _br.squeeze_batch),
                     ("unsqueeze", _br.unsqueeze_batch), ("permute", _br.permute_batch),
                     ("T", _br.T_batch), ("t", _br.t_batch), ("mT", _br.direct),
                     ("detach", _br.direct), ("alias", _br.direct)):
    OPS[_name].batch = _rule
