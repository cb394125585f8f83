"""Tensor functions and methods that were missing, written in other ember ops: the *_scatter
ops (a copy of the input with one view overwritten), index_reduce, renorm, nonzero_static,
fill, fill_diagonal_, new_empty_strided, the in-place forms torch has (addmm_, addbmm_,
baddbmm_, addmv_, swapaxes_, swapdims_, renorm_, index_reduce_), small predicates
(is_same_size, is_nonzero, get_device, typename) and torch's removed functions (solve,
lstsq, symeig, eig, matrix_rank), which raise torch's RuntimeError naming the replacement.

The scatter ops and index_reduce differentiate through the ops they are made of (clone,
a view, copy_, scatter_reduce), like torch's decompositions of them.
"""
import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import fill_scalar, wrap
from ..dispatch_args import int_arg
from .registry import OpDef, COMPOSITE, EXTERN, FUNCTIONS as F, METHODS, register
from ..core.meta import MetaData
from . import meta_rules as M


def _reg(fn, method=True, kind=COMPOSITE, **fields):
    return register(OpDef(fn.__name__, kind, decomp=fn if kind == COMPOSITE else None,
                          method=method, **fields), fn)


# ---- *_scatter: the input with one view replaced by src ----------------------------------
def _scatter_into(input, src, view):
    out = input.clone()
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(target.shape)}")
    target.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    """A copy of `input` whose ``select(dim, index)`` slice is `src`.

    >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0)
    tensor([[1., 1.],
            [0., 0.]])
    """
    dim = int_arg(dim, "select_scatter", "dim", 3)
    index = int_arg(index, "select_scatter", "index", 4)
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of `input` whose slice ``start:end:step`` along `dim` is `src`."""
    dim = S.wrap_dim(int_arg(dim, "slice_scatter", "dim", 3), input.dim())
    start, end = (None if v is None else int_arg(v, "slice_scatter", k, p)
                  for v, k, p in ((start, "start", 4), (end, "end", 5)))
    step = int_arg(step, "slice_scatter", "step", 6)

    def view(t):
        idx = [slice(None)] * t.dim()
        idx[dim] = slice(start, end, step)
        return t[tuple(idx)]
    return _scatter_into(input, src, view)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of `input` whose ``diagonal(offset, dim1, dim2)`` is `src`."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of `input` whose ``as_strided(size, stride, storage_offset)`` view (strides
    of the contiguous input) is `src`: an index_put at the view's flat positions."""
    size, stride = tuple(size), tuple(stride)
    if storage_offset is not None:
        storage_offset = int_arg(storage_offset, "as_strided_scatter", "storage_offset", 5)
    if tuple(src.shape) != size:
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    pos = np.full(size, storage_offset or 0, np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):   # the view's flat offsets
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n) * st).reshape(shape)
    if pos.size and (pos.max() >= input.numel() or pos.min() < 0):
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset or 0} out of bounds for the input")
    flat = input.reshape(-1)
    index = wrap(pos.reshape(-1), D.int64).to(input.device)   # (meta input: a meta index)
    out = F["index_put"](flat, (index,), src.reshape(-1).to(input.dtype))
    return out.reshape(input.shape)


# ---- index_reduce ---------------------------------------------------------------------------
_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """Reduce the slices of `source` into ``input``'s slices ``index`` along `dim`
    ("prod", "mean", "amax" or "amin"), optionally leaving input's own values out."""
    if type(dim) is not int:     # (the parser's TypeError first, then reduce, then the dim)
        dim = int_arg(dim, "index_reduce", "dim", 2)
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    dim = S.wrap_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{D.torch_name(index.dtype)}")
    d = dim % max(source.dim(), 1)
    if input.dim() and source.dim() and (source.dim() != input.dim() or any(
            a != b for k, (a, b) in enumerate(zip(input.shape, source.shape)) if k != dim)):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    if source.dim() and index.numel() != source.shape[d]:
        raise RuntimeError("index_reduce_(): Index should have dimension 1 or the same number "
                           "of elements as the dimension of source")
    if index.numel() and input.dim() and type(index._data) is np.ndarray:
        # (torch's kernel reads self's slices: its IndexErrors, not scatter_reduce's check;
        # a meta or vmapped index has no values to check here)
        n = input.shape[dim]
        if n == 0:
            raise IndexError(f"select(): index 0 out of range for tensor of size "
                             f"{list(input.shape)} at dimension {dim}")
        if (index._data < 0).any() or (index._data >= n).any():
            raise IndexError("index out of range in self")
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = -1
    idx = index.to(D.int64).reshape(shape).expand(*source.shape) if source.dim() else index
    r = input.scatter_reduce(d, idx, source, reduce, include_self=include_self)
    return out.copy_(r) if out is not None else r


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return self.copy_(index_reduce(self, dim, index, source, reduce,
                                   include_self=include_self))


# ---- renorm -------------------------------------------------------------------------------
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along `dim` whose p-norm exceeds `maxnorm`, scaled down to norm maxnorm.

    >>> ember.renorm(ember.tensor([[3., 4.], [0.3, 0.4]]), 2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    for v, name, pos in ((p, "p", 2), (maxnorm, "maxnorm", 4)):   # torch's parser first
        if v is None or isinstance(v, (str, list, tuple)):
            raise TypeError(f"renorm(): argument '{name}' (position {pos}) must be Number, "
                            f"not {type(v).__name__}")
    dim = int_arg(dim, "renorm", "dim", 3)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = S.wrap_dim(dim, input.dim())
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: Expected a floating point or complex tensor as input. "
                           f"Got {D.torch_name(input.dtype)}")
    others = tuple(k for k in range(input.dim()) if k != d)
    norm = F["norm"](input, p, others, True)
    scale = F["where"](norm > maxnorm, maxnorm / (norm + 1e-7), F["ones_like"](norm))
    r = input * scale
    return out.copy_(r) if out is not None else r


# ---- nonzero_static, fill -------------------------------------------------------------------
def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input) cut or padded (with fill_value) to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    try:
        nz = np.argwhere(input._data)[:size]
    except MetaData:    # a meta input: the shape is `size` rows whatever the values
        return wrap(M.out_array((size, input.dim()), np.int64, input), D.int64)
    res = np.full((size, input.dim()), fill_value, np.int64)
    res[:len(nz)] = nz
    return wrap(res, D.int64)


def fill(input, value):
    """A new tensor of input's shape and dtype, every element `value` (torch.fill)."""
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    value = fill_scalar(value, input.dtype)     # fill_'s checks: 2**64, 300 into uint8, ...
    mask = F["ones_like"](input, dtype=D.bool_)
    return F["where"](mask, value, input).to(input.dtype)


def fill_diagonal_(self, fill_value, wrap=False):
    """Write `fill_value` on the main diagonal (all dims equal, or a 2-d tensor; with wrap,
    a tall matrix's diagonal restarts below every square block)."""
    n = self.dim()
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    if n > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    shape = tuple(self.shape)
    total = int(np.prod(shape))
    if n == 2:
        step = shape[1] + 1
        stop = total if wrap and shape[0] > shape[1] + 1 else min(shape) * shape[1]
    else:
        step = sum(shape[0] ** k for k in range(n))
        stop = total
    mask = np.zeros(total, bool)
    mask[np.arange(0, stop, step)] = True
    return self.masked_fill_(wrap_bool(mask.reshape(shape)), fill_value)


def wrap_bool(a):
    return wrap(a, D.bool_)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False):
    """An uninitialised tensor with the given size and strides, of self's dtype/device."""
    return F["empty_strided"](size, stride, dtype=dtype or self.dtype,
                              device=device or self.device, requires_grad=requires_grad)


# ---- predicates and glue ------------------------------------------------------------------
def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def get_device(input):
    """The CUDA device index of the tensor, -1 for a CPU tensor."""
    dev = input.device
    return -1 if dev.type in ("cpu", "meta") else (dev.index or 0)


def typename(obj):
    """The type name torch prints: 'torch.FloatTensor' for a float32 tensor, else the class's
    module-qualified name."""
    if isinstance(obj, Tensor):
        return obj.type()
    t = type(obj)
    mod = t.__module__
    return t.__qualname__ if mod in (None, "builtins") else f"{mod}.{t.__qualname__}"


def split_with_sizes(input, split_sizes, dim=0):
    """split(input, split_sizes, dim) for a list of sizes that must add up to the dim."""
    dim = S.wrap_dim(int_arg(dim, "split_with_sizes", "dim", 3), input.dim())
    total = input.shape[dim]
    if sum(split_sizes) != total:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {total} "
                           f"(input tensor's size at dimension {dim}), but got split_sizes="
                           f"{list(split_sizes)}")
    return tuple(input.split(list(split_sizes), dim))


def _inplace(name, fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = name
    method.__doc__ = f"In-place {name[:-1]}: self becomes the result."
    return method


# ---- torch's removed functions ------------------------------------------------------------
_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
             "`torch.linalg.solve` has its arguments reversed and does not return the LU "
             "factorization.",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.",
    "symeig": "The default behavior has changed from using the upper triangular portion of "
              "the matrix by default to using the lower triangular portion. Use "
              "torch.linalg.eigvalsh / torch.linalg.eigh instead.",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors. Use torch.linalg.eigvals / "
           "torch.linalg.eig instead.",
    "matrix_rank": "Please use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def _raise_removed(name):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. " +
                       _REMOVED[name])


def solve(input, A, *, out=None):
    """Removed from torch in 1.9 (use linalg.solve): raises torch's RuntimeError."""
    _raise_removed("solve")


def lstsq(input, A, *, out=None):
    """Removed from torch in 1.9 (use linalg.lstsq): raises torch's RuntimeError."""
    _raise_removed("lstsq")


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    """Removed from torch in 1.9 (use linalg.eigh): raises torch's RuntimeError."""
    _raise_removed("symeig")


def eig(input, eigenvectors=False, *, out=None):
    """Removed from torch in 1.9 (use linalg.eig): raises torch's RuntimeError."""
    _raise_removed("eig")


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed from torch in 1.9 (use linalg.matrix_rank): raises torch's RuntimeError."""
    _raise_removed("matrix_rank")


# ---- registration -------------------------------------------------------------------------
select_scatter = _reg(select_scatter)
slice_scatter = _reg(slice_scatter)
diagonal_scatter = _reg(diagonal_scatter)
as_strided_scatter = _reg(as_strided_scatter)
index_reduce = _reg(index_reduce)
renorm = _reg(renorm)
nonzero_static = _reg(nonzero_static, kind=EXTERN)
fill = _reg(fill, method=False, uint64_scalars={"value"})   # (a Scalar, as fill_'s)
is_same_size = _reg(is_same_size, kind=EXTERN)
get_device = _reg(get_device, kind=EXTERN)
typename = _reg(typename, method=False, kind=EXTERN)
split_with_sizes = _reg(split_with_sizes)
new_empty_strided = _reg(new_empty_strided, function=False, kind=EXTERN)
METHODS["index_reduce_"] = index_reduce_
METHODS["renorm_"] = _inplace("renorm_", renorm)
METHODS["fill_diagonal_"] = fill_diagonal_
for _name in ("addmm", "addbmm", "baddbmm", "addmv"):
    METHODS[_name + "_"] = _inplace(_name + "_", F[_name])
F["addmv_"] = METHODS["addmv_"]          # torch.addmv_ is a top-level function too
METHODS["swapaxes_"] = METHODS["swapdims_"] = lambda self, d0, d1: self.transpose_(d0, d1)
METHODS["is_nonzero"] = lambda self: bool(self.item()) if self.numel() == 1 else _ambiguous()
for _fn in (solve, lstsq, symeig, eig, matrix_rank):
    F[_fn.__name__] = _fn
    if _fn is not matrix_rank:     # (torch has no Tensor.matrix_rank)
        METHODS[_fn.__name__] = _fn


def _ambiguous():
    raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
