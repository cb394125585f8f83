"""Joining, splitting and rearranging: cat, stack and the *stack family, tensor_split and
h/v/dsplit, flip/roll/rot90, repeat/tile/repeat_interleave, broadcast_tensors, meshgrid,
tril/triu (one_hot, atleast_Nd and ravel are ops/reshaping.py's).

Ops that move data (flip, roll, rot90, repeat, tril) are one NumPy call with a derivative
written in ember ops; the rest are compositions of views, cat and index_select.
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import strides as S
from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..dispatch_args import int_arg, is_int, Omitted
from ..autograd.grad_mode import state
from ..autograd import graph
import builtins
from ..core.meta import MetaData
from . import meta_rules as M
from .registry import OpDef, COMPOSITE, EXTERN, LINEAR, register, register_each, METHODS
from ..autograd.derivative import Derivative
from . import batch_rules as _br
from .registry import OPS
from .linalg import finish, _out
from .reshaping import atleast_1d, atleast_2d, atleast_3d   # (the *stack family's)


class _CatNode(graph.Node):
    __slots__ = ("dim", "sizes")

    def apply(self, grads):
        g = grads[0]
        # a skipped (1-D empty) input gets an empty gradient
        return tuple(g.narrow(self.dim, *s) if s is not None else
                     wrap(np.zeros((0,), g.dtype.np), g.dtype) for s in self.sizes)


_CatNode.__name__ = "CatBackward0"


def _check_tensor_list(tensors):
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim (1-D empty tensors are skipped, as in PyTorch)."""
    if isinstance(tensors, Tensor):
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    _check_tensor_list(tensors)
    live = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    if not live:
        return _cat_graph(tensors, [], wrap(np.zeros((0,), dt.np), dt), 0, out)
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
    try:
        r = np.concatenate([t._data.astype(dt.np, copy=False) for t in live], axis=d)
    except MetaData:    # meta inputs: the result's metadata (ember/ops/meta_rules.py)
        shape = list(ref._data.shape)
        shape[d] = builtins.sum(t._data.shape[d] for t in live)
        r = M.out_array(shape, dt.np, *tensors,
                        strides=M.joined_layout(np.concatenate, live, shape, d))
    return _cat_graph(tensors, live, wrap(r, dt), d, out)


def _cat_graph(tensors, live, result, d, out):
    if state.enabled and any(t._requires_grad for t in tensors):
        node = _CatNode.__new__(_CatNode)
        node._setup(tuple(graph.edge_of(t) for t in tensors),
                    tuple((t._data.shape, t.dtype) for t in tensors))
        node.dim = d
        sizes, start, ids = [], 0, {id(t) for t in live}
        for t in tensors:
            if id(t) in ids:
                sizes.append((start, t._data.shape[d]))
                start += t._data.shape[d]
            else:
                sizes.append(None)
        node.sizes = sizes
        result.grad_fn = node
        result._requires_grad = True
    return _out(result, out)


class _StackNode(graph.Node):
    __slots__ = ("dim",)

    def apply(self, grads):
        g = grads[0]
        return tuple(g.select(self.dim, i) for i in range(len(self.next_functions)))


_StackNode.__name__ = "StackBackward0"


def stack(tensors, dim=0, *, out=None):
    """Join tensors of equal shape along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    _check_tensor_list(tensors)
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = S.wrap_dim(dim, len(shape) + 1, scalar_ok=False)
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    try:
        r = np.stack([t._data.astype(dt.np, copy=False) for t in tensors], axis=d)
    except MetaData:
        full = shape[:d] + (len(tensors),) + shape[d:]
        r = M.out_array(full, dt.np, *tensors, strides=M.joined_layout(np.stack, tensors, full, d))
    result = wrap(r, dt)
    if state.enabled and dt._kind >= 2 and any(t._requires_grad for t in tensors):
        node = _StackNode.__new__(_StackNode)
        node._setup(tuple(graph.edge_of(t) for t in tensors),
                    tuple((t._data.shape, t.dtype) for t in tensors))
        node.dim = d
        result.grad_fn = node
        result._requires_grad = True
    return _out(result, out)


# ---- the *stack family -------------------------------------------------------------------
def _tensor_list(tensors, name):
    if not isinstance(tensors, (list, tuple)):      # torch's parser
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    _check_tensor_list(tensors)
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors, *, out=None):
    """Concatenate horizontally: along dim 0 for 1-D tensors, else dim 1."""
    ts = atleast_1d(*_tensor_list(tensors, "hstack"))
    ts = ts if isinstance(ts, tuple) else (ts,)
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Concatenate vertically (dim 0) after making every tensor at least 2-D."""
    ts = atleast_2d(*_tensor_list(tensors, "vstack"))
    return cat(ts if isinstance(ts, tuple) else (ts,), 0, out=out)


def dstack(tensors, *, out=None):
    """Concatenate depth-wise (dim 2) after making every tensor at least 3-D."""
    ts = atleast_3d(*_tensor_list(tensors, "dstack"))
    return cat(ts if isinstance(ts, tuple) else (ts,), 2, out=out)


def column_stack(tensors, *, out=None):
    """Stack 0-D/1-D tensors as columns (and 2-D tensors as they are) along dim 1."""
    ts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t
          for t in _tensor_list(tensors, "column_stack")]
    return cat(ts, 1, out=out)


# ---- splitting -----------------------------------------------------------------------------
def tensor_split(input, indices_or_sections, dim=0):
    """Split into `n` nearly equal parts (int) or at the given indices (list): views."""
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = S.wrap_dim(dim, input.dim())
    size = input.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype is not D.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {torch_name(ios.dtype)}")
        if ios.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.dim()} dims")
        ios = ios.item() if ios.dim() == 0 else ios.tolist()
    if isinstance(ios, bool):
        raise TypeError("tensor_split() received an invalid combination of arguments - got "
                        "(bool), but expected one of: (tuple of ints indices, int dim = 0)")
    if isinstance(ios, int):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        if ios >= 1 << 63:   # torch reads the count as an int64
            raise ValueError("Overflow when unpacking long long")
        if ios > 1 << 32:    # more results than torch's vector holds (ember: out of memory)
            raise RuntimeError("cannot create std::vector larger than max_size()")
        q, r = divmod(size, ios)
        bounds, start = [], 0
        for k in range(ios):
            n = q + (1 if k < r else 0)
            bounds.append((start, n))
            start += n
    else:
        cuts = [0] + [int(i) for i in ios] + [size]
        bounds = []
        for k in range(len(cuts) - 1):   # Python slice semantics: negatives wrap, ends clamp
            lo = cuts[k] if k else 0
            a, b, _ = slice(lo, cuts[k + 1] if k < len(cuts) - 2 else None).indices(size)
            bounds.append((a, max(0, b - a)))
    return tuple(input.narrow(d, a, n) for a, n in bounds)


def _split_n(input, sections, dim, name, min_dim):
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, bool):      # (torch's parser takes no bool for an int)
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(bool), but expected one of: * (int sections) * (tuple of ints "
                        f"indices)")
    if isinstance(sections, int):
        size = input.shape[dim]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    return _split_n(input, indices_or_sections, 1 if input.dim() > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _split_n(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _split_n(input, indices_or_sections, 2, "dsplit", 3)


# ---- flip, roll, rot90 ---------------------------------------------------------------------
_FLIP = Derivative("flip", attrs={"dims": ()},
                   grads={"self": lambda g, dims: flip(g, dims)})


def flip(input, dims):
    """Reverse the order of elements along `dims` (a copy, as in PyTorch)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if input.dim() == 0:   # a 0-d tensor accepts dims 0 and -1 and is its own flip
        for d in dims:
            S.wrap_dim(d, 0)
        wd = ()
    else:
        wd = S.wrap_dims(dims, input.dim())
    try:
        r = np.flip(input._data, wd).copy() if wd else input._data.copy()
    except MetaData:
        r = M.out_array(input._data.shape, input._data.dtype, input)
    return finish(_FLIP, (input,), r, input.dtype, {"dims": wd})


def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


_ROLL = Derivative("roll", attrs={"shifts": (), "dims": ()},
                   grads={"self": lambda g, shifts, dims: roll(g, tuple(-s for s in shifts),
                                                               dims or None)})


def roll(input, shifts, dims=None):
    """Shift elements cyclically along `dims` (of the flattened tensor when dims is None)."""
    shifts = tuple(int_arg(s, "roll", "shifts", 2, "tuple of ints")
                   for s in ((shifts,) if isinstance(shifts, int) else shifts))
    dims = () if dims is None else (dims,) if isinstance(dims, int) else tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) != 1 or dims and len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    a = input._data
    if type(a) is M.MetaArray:
        r = M.out_array(a.shape, a.dtype, input, like=None if not dims else input)
        dims = tuple(S.wrap_dim(d, a.ndim) for d in dims)
    elif not dims:
        r = np.roll(a.reshape(-1), shifts[0]).reshape(a.shape)
    else:
        wd = tuple(S.wrap_dim(d, a.ndim) for d in dims)
        r = np.roll(a, shifts, wd) if a.ndim else a.copy()
        dims = wd
    return finish(_ROLL, (input,), r, input.dtype, {"shifts": shifts, "dims": dims})


_ROT90 = Derivative("rot90", attrs={"k": 1, "dims": (0, 1)},
                    grads={"self": lambda g, k, dims: rot90(g, -k, dims)})


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees `k` times in the plane of `dims` (from the first towards the
    second)."""
    k = int_arg(k, "rot90", "k", 2)
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (S.wrap_dim(d, input.dim()) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    r = np.rot90(input._data, k, (d0, d1)).copy()   # (a fresh C-ordered array)
    return finish(_ROT90, (input,), r, input.dtype, {"k": k, "dims": (d0, d1)})


# ---- repeat, tile, repeat_interleave --------------------------------------------------------
def _repeat_grad(g, reps, shape):
    pshape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    inter = [x for r, s in zip(reps, pshape) for x in (r, s)]
    return g.reshape(inter).sum(tuple(range(0, 2 * len(reps), 2))).reshape(shape)


_REPEAT = Derivative("repeat", attrs={"reps": (), "shape": ()},
                     grads={"self": lambda g, reps, shape: _repeat_grad(g, reps, shape)})


def repeat(self, *sizes):
    """Tile `self` `sizes[i]` times along each dim (extra leading sizes add dims)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(s if type(s) is int or (k and type(s) is bool) else
                  int_arg(s, "repeat", "repeats", k + 1) for k, s in enumerate(sizes))
    if len(sizes) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    pshape = (1,) * (len(sizes) - self.dim()) + tuple(self.shape)
    target = [r * s for r, s in zip(sizes, pshape)]
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(target)}: {target}")
    try:
        r = np.tile(self._data.reshape(pshape), sizes)
    except MetaData:
        r = M.out_array(target, self._data.dtype, self)
    return finish(_REPEAT, (self,), r, self.dtype, {"reps": sizes, "shape": self._data.shape})


def tile(input, dims):
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


_COUNTS = Omitted("counts form")     # repeat_interleave(counts): no overload takes None


def repeat_interleave(input, repeats=_COUNTS, dim=None, *, output_size=None):
    """Repeat each element (along `dim`, or of the flattened tensor) `repeats` times; as an
    index_select, so its derivative sums the copies back (index_add). The Tensor method,
    as ops/scatter.py builds on this file."""
    if repeats is None:
        raise TypeError(f"repeat_interleave() received an invalid combination of arguments - "
                        f"got ({type(input).__name__}, NoneType), but expected one of: * "
                        f"(Tensor input, Tensor repeats, int dim = None, *, int output_size "
                        f"= None) * (Tensor input, int repeats, int dim = None, *, int "
                        f"output_size = None) * (Tensor repeats, *, int output_size = None)")
    if repeats is _COUNTS:   # repeat_interleave(counts): arange(len(counts)) repeated counts times
        if input.dim() != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        reps = _check_repeats(input)
        idx = np.repeat(np.arange(input.shape[0]), reps) if reps is not None else \
            M.repeat_index(output_size)
        return wrap(idx, input.dtype)
    if dim is None:
        input = input.reshape(-1)
        dim = 0
    d = S.wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    idx = None
    if isinstance(repeats, Tensor):
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.numel() not in (1, n):
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.numel()} and input.size({d}) = {n}")
        reps = _check_repeats(repeats)
        if reps is None:        # meta counts: output_size says the length
            idx = M.repeat_index(output_size)
        elif reps.size == 1:
            reps = np.full(n, int(reps.reshape(-1)[0]))
    else:
        if not is_int(repeats):
            raise TypeError(f"repeat_interleave() received an invalid combination of arguments "
                            f"- got (Tensor, {type(repeats).__name__}), but expected one of: * "
                            f"(Tensor input, Tensor repeats, int dim = None, *, int output_size "
                            f"= None) * (Tensor input, int repeats, int dim = None, *, int "
                            f"output_size = None)")
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        reps = np.full(n, int(repeats))
    if idx is None:
        idx = M.on_device_of(np.repeat(np.arange(n), reps), input)
        if output_size is not None and output_size != idx.size:
            raise RuntimeError("allocated size does not match required size")
    if input.dim() == 0:
        input = input.reshape(1)
    return input.index_select(d, wrap(idx, D.int64))


def _check_repeats(t):
    """The counts (int64), None for meta counts (their values are unknown)."""
    if t.dtype not in (D.int64, D.int32):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                           f"'{torch_name(t.dtype)}'")
    if type(t._data) is M.MetaArray:
        return None
    reps = t._data.astype(np.int64)
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    return reps


# ---- broadcast_tensors, meshgrid -------------------------------------------------------------
def broadcast_tensors(*tensors):
    """Expanded views of the tensors, all with their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = S.broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids (views) from 1-D tensors; indexing 'xy' swaps the first two dims."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f"{indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    n = len(ts)
    out = [t.reshape([-1 if k == i else 1 for k in range(n)]).expand(shape)
           for i, t in enumerate(ts)]
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# ---- tril, triu and their index lists ---------------------------------------------------------
_TRIL = Derivative("tril", attrs={"diagonal": 0},
                   grads={"self": lambda g, diagonal: tril(g, diagonal)})
_TRIU = Derivative("triu", attrs={"diagonal": 0},
                   grads={"self": lambda g, diagonal: triu(g, diagonal)})


def _tri(op, np_fn, input, diagonal):
    if input.dim() < 2:
        raise RuntimeError(f"{op.name}: input tensor must have at least 2 dimensions")
    diagonal = int_arg(diagonal, op.name, "diagonal", 2)
    try:
        r = np_fn(input._data, diagonal)
    except MetaData:
        r = M.out_array(input._data.shape, input._data.dtype, input)
    return finish(op, (input,), r, input.dtype, {"diagonal": diagonal})


def tril(input, diagonal=0, *, out=None):
    """The lower triangle of the last two dims (elements above `diagonal` zeroed)."""
    return _out(_tri(_TRIL, np.tril, input, diagonal), out)


def triu(input, diagonal=0, *, out=None):
    """The upper triangle of the last two dims (elements below `diagonal` zeroed)."""
    return _out(_tri(_TRIU, np.triu, input, diagonal), out)


def _tri_indices(name, np_fn, row, col, offset, dtype):
    from ..core.dtype import to_dtype
    dt = D.int64 if dtype is None else to_dtype(dtype)
    if dt not in (D.int64, D.int32):
        raise NotImplementedError(f'"{name}" not implemented for \'{torch_name(dt)}\'')
    row, col, offset = (int_arg(v, name, n, k + 1) for k, (n, v) in enumerate(
        (("row", row), ("col", col), ("offset", offset))))
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    r, c = np_fn(row, offset, col)
    return wrap(np.stack([r, c]).astype(dt.np).reshape(2, -1), dt)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row/column indices (2 x N) of the lower triangle of a row x col matrix."""
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype)


# every op here is linear in its tensors (jvp=LINEAR: forward mode applies it to tangents)
cat = register(OpDef("cat", COMPOSITE, method=False, jvp=LINEAR,
                     batch=_br.cat_batch,
                     onnx=_ox.cat), cat,
               names=("cat", "concat", "concatenate"))
stack = register(OpDef("stack", COMPOSITE, method=False, jvp=LINEAR,
                       batch=_br.stack_batch,
                       onnx=_ox.stack), stack)
register_each(globals(), COMPOSITE, (
    hstack, vstack, dstack, column_stack, broadcast_tensors, meshgrid, tril_indices,
    triu_indices), method=False, jvp=LINEAR)
register(OpDef("row_stack", COMPOSITE, method=False, jvp=LINEAR),
         lambda tensors, *, out=None: vstack(tensors, out=out), names=("row_stack",))
register_each(globals(), COMPOSITE, (
    tensor_split, hsplit, vsplit, dsplit, flip, fliplr, flipud, roll, rot90, tile,
    repeat_interleave, tril, triu), jvp=LINEAR)
repeat = register(OpDef("repeat", EXTERN, function=False, jvp=LINEAR,
                        onnx=_ox.repeat), repeat)
METHODS["tril_"] = lambda self, diagonal=0: self.copy_(tril(self, diagonal))
METHODS["triu_"] = lambda self, diagonal=0: self.copy_(triu(self, diagonal))

# vmap batching rules (ember/ops/batch_rules.py)
OPS["flip"].batch = _br.dims_batch(("dims", 1, None))
OPS["roll"].batch = _br.dims_batch(("dims", 2, None))
OPS["rot90"].batch = _br.dims_batch(("dims", 2, (0, 1)))
OPS["rot90"].meta = M.rot90     # meta rule (ember/ops/meta_rules.py)
OPS["fliplr"].batch = lambda v, args, kwargs: args[0].flip(2) if v.logical_dim(args[0]) >= 2 \
    else NotImplemented
OPS["flipud"].batch = lambda v, args, kwargs: args[0].flip(1) if v.logical_dim(args[0]) >= 1 \
    else NotImplemented
OPS["tril"].batch = OPS["triu"].batch = _br.direct
OPS["tril"].onnx, OPS["triu"].onnx, OPS["flip"].onnx = _ox.tril, _ox.triu, _ox.flip
OPS["repeat"].batch = _br.repeat_batch
