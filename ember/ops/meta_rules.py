"""Meta rules: an op's result (shape, dtype, strides) from its inputs' metadata alone.

An op that meets a meta tensor (ember/core/meta.py) runs its OpDef's `meta` instead of its
kernel (dispatch.run_meta). A rule takes the op's public arguments and returns meta tensors,
raising the errors the cpu op raises (broadcasting, dims, dtypes). Rules come from two
places:
- derived from the OpDef (`derived`): pointwise ops from broadcasting and the op's dtype
  rule; VIEW ops need none (ember's view code runs on meta arrays as it is);
- written per op at its definition site (``meta=meta_rules.matmul``), from the helpers here.

Result strides are those the cpu kernel's NumPy call gives (`numpy_layout`): NumPy orders a
result's dims like its operands' (order "K"), so a transposed input gives a transposed
result. The layout is read off NumPy itself, run on tiny stand-in arrays of the same dim
order (at most 2 elements per dim), which is exact and costs microseconds
(ember/ops/meta_layout.py).

>>> x = ember.empty(3, 4, device="meta")
>>> (x.t() * 2).stride()
(1, 3)
"""
import functools

import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.meta import MetaArray, MetaData, meta_array
from ..core.tensor import empty_meta
from ..core.tensor import Tensor
from ..autograd.grad_mode import state
from ..autograd import graph
from .. import dispatch
from ..dispatch import check_meta_devices  # noqa: F401  (for the rules' callers)
# the layouts (NumPy's result strides, read off tiny stand-ins)
from .meta_layout import (_proxy, _strides_from, _layout, numpy_layout,  # noqa: F401
                          joined_layout, reduction_layout, cross_layout, gufunc_layout,
                          standin, standin_layout)


def result(shape, dtype, strides=None):
    """A fresh meta tensor (contiguous unless `strides`)."""
    return empty_meta(tuple(shape), dtype, strides)


# ---- pointwise (derived from the OpDef) ----------------------------------------------
def _category(x):
    if x is None:
        return None, -1
    if isinstance(x, Tensor):
        return x.dtype, 0 if x._data.ndim else 1
    return D.scalar_dtype(x), 2


def _requires_grad(args):
    return state.enabled and any(isinstance(x, Tensor) and x._requires_grad for x in args)


def pointwise_dtype(op, args, attrs):
    """(result dtype) of pointwise `op` on `args`, as dispatch's compute finds it."""
    if getattr(op, "tensor_only", False):
        for n, x in zip(op.inputs, args):
            if not isinstance(x, Tensor):
                raise TypeError(f"{op.name}(): argument '{'input' if n == 'self' else n}' "
                                f"must be Tensor, not {type(x).__name__}")
    metas = [_category(x) for x in args]
    promote = getattr(op, "scalars_promote", True)
    pdt = (D.result_type_of([m for m in metas if m[1] >= 0 and (m[1] < 2 or promote)])
           if len(args) > 1 else metas[0][0])
    precheck = getattr(op, "precheck", None)
    if precheck is not None:
        values = [x._data if isinstance(x, Tensor) else x for x in args]
        try:
            precheck(values, metas, pdt, attrs)
        except MetaData:       # a check of values: there are none
            pass
    return pdt, op.dtype_rule(pdt, op.name)[1]


def pointwise(op):
    """The derived meta rule of a pointwise op: broadcast shape, the op's dtype rule, NumPy's
    layout; records the op's node when an input requires grad (meta backward)."""
    def meta(*args, out=None, **attrs):
        if len(args) != len(op.inputs):
            args = dispatch._bind(op, args, attrs)
        _, rdt = pointwise_dtype(op, args, attrs)
        tensors = [x for x in args if isinstance(x, Tensor)]
        shape = S.broadcast_shapes(*(tuple(x._data.shape) for x in tensors))
        res = result(shape, rdt, numpy_layout(tensors, shape))
        if op.grads and _requires_grad(args):
            graph.record(op, args, res, attrs)
        return res if out is None else write_out(out, res)
    meta.__name__ = op.name + "_meta"
    return meta


def pointwise_inplace(op, args, attrs):
    """`self.<op>_(...)` on a meta self: torch's shape and dtype checks, then nothing to
    write; the version counter moves as for any in-place op."""
    self = args[0]
    if len(args) != len(op.inputs):
        args = dispatch._bind(op, args, attrs)
    pdt, rdt = pointwise_dtype(op, args, attrs)
    shapes = [tuple(x._data.shape) for x in args if isinstance(x, Tensor)]
    shape = S.broadcast_shapes(*shapes)
    if shape != tuple(self._data.shape):
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")
    if rdt is not D.bool_ and not D.can_cast(rdt, self.dtype):
        raise dispatch.cast_error(rdt, self.dtype)
    self._bump_version()
    return self


def write_out(out, res):
    """`out=` on meta: out takes the result's shape (torch resizes an out tensor)."""
    if isinstance(res, tuple):
        return type(res)(*[write_out(o, r) for o, r in zip(out, res)]) \
            if hasattr(res, "_fields") else tuple(write_out(o, r) for o, r in zip(out, res))
    if not isinstance(out._data, MetaArray):
        from ..core.meta import device_mismatch
        raise device_mismatch(out.device, "meta")
    if not D.can_cast(res.dtype, out.dtype):
        raise dispatch.cast_error(res.dtype, out.dtype)
    if tuple(out._data.shape) != tuple(res._data.shape):
        out._data = res._data.astype(out.dtype.np)
        out._storage = None
    out._bump_version()
    return out


def derived(op):
    """The meta rule an op gets from its kind when its definition names none (or None):
    pointwise ops from broadcasting and their dtype rule, composites their decomposition
    (written in ember ops, each of which has its own rule)."""
    if op.kind == "pointwise" and op.dtype_rule is not None and op.kernel is not None:
        return pointwise(op)
    if op.kind == "composite" and op.decomp is not None:
        return op.decomp
    return None


def _inplace(op, args, attrs):
    return pointwise_inplace(op, args, attrs)


dispatch.meta_inplace_hook = _inplace


# ---- reductions ---------------------------------------------------------------------
def reduce_dims(input, dim):
    """`dim` wrapped for `input` (None: every dim), with torch's errors."""
    nd = input._data.ndim
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return None
    if isinstance(dim, (list, tuple)):
        return S.wrap_dims(dim, nd)
    return (S.wrap_dim(dim, nd),)


def reduced_shape(shape, ds, keepdim):
    if ds is None:
        return (1,) * len(shape) if keepdim else ()
    if keepdim:
        return tuple(1 if d in ds else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in ds)


def reduce_to(input, dim, keepdim, dtype):
    """The meta result of reducing `input` over `dim` into `dtype`: (result, wrapped dims)."""
    ds = reduce_dims(input, dim)
    shape = reduced_shape(tuple(input._data.shape), ds, keepdim)
    axis = None if ds is None or input._data.ndim == 0 else ds
    return result(shape, dtype, reduction_layout(input, axis, keepdim, shape)), ds


def same_dtype(input, dtype=None):
    return D.to_dtype(dtype) if dtype is not None else input.dtype


def sum_dtype(input, dtype=None):
    if dtype is not None:
        return D.to_dtype(dtype)
    return input.dtype if input.dtype.is_floating_point else D.int64


def bool_dtype(input, dtype=None):
    return D.uint8 if input.dtype is D.uint8 else D.bool_


def reduction(dtype_of=same_dtype, record=None):
    """A meta rule for ``op(input, dim=None, keepdim=False, *, dtype=None, out=None)``:
    `dtype_of(input, dtype)` is the result's dtype (raising the cpu op's dtype errors);
    `record(input, result, dims, keepdim, dim)` attaches the op's node (meta backward)."""
    def meta(input, dim=None, keepdim=False, *, dtype=None, out=None, **kw):
        res, ds = reduce_to(input, dim, keepdim, dtype_of(input, dtype))
        if record is not None and state.enabled and input._requires_grad and \
                res.dtype.is_floating_point:
            record(input, res, ds, keepdim, dim)
        return res if out is None else write_out(out, res)
    return meta


# ---- matrix products ------------------------------------------------------------------
def matmul_shape(a, b, error):
    """torch.matmul's result shape for tensors `a`, `b`; `error(a_arr, b_arr)` raises the
    cpu op's message on a mismatch."""
    sa, sb = tuple(a._data.shape), tuple(b._data.shape)
    if len(sa) == 0 or len(sb) == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{len(sa)}D and {len(sb)}D")
    if len(sa) == 1 and len(sb) == 1:
        if sa != sb:
            error(a._data, b._data)
        return ()
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        error(a._data, b._data)
        raise RuntimeError("matmul: shapes do not match")
    batch = S.broadcast_shapes(sa[:-2], sb[:-2])
    rows = () if len(sa) == 1 else (sa[-2],)
    cols = () if len(sb) == 1 else (sb[-1],)
    return tuple(batch) + rows + cols


# ---- meta at a hand-written op's kernel call ------------------------------------------
def out_array(shape, np_dtype, *inputs, strides=None, like=None):
    """What a hand-written op's NumPy kernel returns when its inputs are meta: an array of
    the result's metadata. The op's own checks ran before the kernel call and its wrapping
    and node recording run after it, so its meta rule is the op itself with the kernel
    swapped (``except MetaData: r = meta_rules.out_array(shape, dtype, *inputs)``).
    `like`: a tensor whose dim order the result keeps, as NumPy's elementwise kernels do
    (cumsum, flip); else the result is C-contiguous."""
    dispatch.check_meta_devices(inputs, {})
    if like is not None:
        strides = numpy_layout([like], tuple(shape))
    return meta_array(shape, np_dtype, strides)


def zero_index(a):
    """The 0-dim int64 index (0) of a 0-dim input's selection: meta for a meta `a`."""
    return np.zeros((), np.int64) if type(a) is not MetaArray else meta_array((), np.int64)


def on_device_of(arr, t):
    """`arr`, a constant an op built in NumPy (an index, a mask), on tensor `t`'s device:
    for a meta `t`, a meta array of its shape and dtype (cpu: `arr` itself)."""
    return arr if type(t._data) is not MetaArray else meta_array(arr.shape, arr.dtype)


# ---- explicit rules of non-pointwise ops (attached at their definition sites) ----------
_FIELDS = {"slogdet": ("sign", "logabsdet"), "linalg_eigh": ("eigenvalues", "eigenvectors"),
           "linalg_svd": ("U", "S", "Vh"), "linalg_qr": ("Q", "R")}


@functools.lru_cache(maxsize=None)
def _rt(name):
    """The result type: return_types' named tuple, else one with torch's field names."""
    from .. import return_types
    found = getattr(return_types, name, None)
    if found is not None:
        return found
    import collections
    return collections.namedtuple(name, _FIELDS[name])


def same_as_input(input, *args, **kwargs):
    """Ops whose result has self's shape and dtype (index_add, scatter, put, ...)."""
    return result(input._data.shape, input.dtype)


def _dim_of(input, dim):
    return S.wrap_dim(dim, input._data.ndim) if input._data.ndim else 0


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    _dim_of(input, dim)
    shape = input._data.shape
    res = _rt("sort")(result(shape, input.dtype), result(shape, D.int64))
    return res if out is None else write_out(out, res)


def argsort(input, dim=-1, descending=False, stable=False):
    _dim_of(input, dim)
    return result(input._data.shape, D.int64)


def msort(input, *, out=None):
    res = result(input._data.shape, input.dtype)
    return res if out is None else write_out(out, res)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    d = _dim_of(input, dim)
    size = input._data.shape[d] if input._data.ndim else 1
    if k < 0 or k > size:
        raise RuntimeError("selected index k out of range")
    shape = list(input._data.shape)
    if shape:
        shape[d] = k
    res = _rt("topk")(result(shape, input.dtype), result(shape, D.int64))
    return res if out is None else write_out(out, res)


def _values_indices(kind):
    def meta(input, dim, keepdim=False):
        return _rt(kind)(reduce_to(input, dim, keepdim, input.dtype)[0],
                         reduce_to(input, dim, keepdim, D.int64)[0])
    return meta


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    res = _values_indices("kthvalue")(input, dim, keepdim)
    return res if out is None else write_out(out, res)


def mode(input, dim=-1, keepdim=False, *, out=None):
    res = _values_indices("mode")(input, dim, keepdim)
    return res if out is None else write_out(out, res)


def median_of(kind):
    def meta(input, dim=None, keepdim=False, *, out=None):
        if dim is None:
            res = result((), input.dtype)
        else:
            res = _values_indices(kind)(input, dim, keepdim)
        return res if out is None else write_out(out, res)
    return meta


def cumulative_pair(kind):
    def meta(input, dim, *, out=None):
        _dim_of(input, dim)
        shape = input._data.shape
        st = numpy_layout([input], shape)      # NumPy's scans keep the input's dim order
        res = _rt(kind)(result(shape, input.dtype, st), result(shape, D.int64))
        return res if out is None else write_out(out, res)
    return meta


def logcumsumexp(input, dim, *, out=None):
    _dim_of(input, dim)
    res = result(input._data.shape, input.dtype, numpy_layout([input], input._data.shape))
    return res if out is None else write_out(out, res)


def var_std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim = None
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return (reduce_to(input, dim, keepdim, input.dtype)[0],
            reduce_to(input, dim, keepdim, input.dtype)[0])


def aminmax(input, *, dim=None, keepdim=False, out=None):
    res = _rt("aminmax")(reduce_to(input, dim, keepdim, input.dtype)[0],
                         reduce_to(input, dim, keepdim, input.dtype)[0])
    return res if out is None else write_out(out, res)


def take(input, index, *, out=None):
    res = result(index._data.shape, input.dtype)
    return res if out is None else write_out(out, res)


def histc(input, bins=100, min=0, max=0, *, out=None):
    if not input.dtype.is_floating_point:
        raise dispatch.not_implemented("histogram_cpu", input.dtype)
    res = result((bins,), input.dtype)
    return res if out is None else write_out(out, res)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    shape = tuple(input._data.shape) if isinstance(input, Tensor) else ()
    seq_shape = tuple(sorted_sequence._data.shape)
    strides = None
    if len(seq_shape) > 1 and not out_int32 and seq_shape[-1] and 0 not in shape:
        # the batched search's result is the values' columns of a (rows, n + m) array
        strides = S.contiguous_strides(shape[:-1] + (seq_shape[-1] + shape[-1],))
    res = result(shape, D.int32 if out_int32 else D.int64, strides)
    return res if out is None else write_out(out, res)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    shape = input._data.shape if isinstance(input, Tensor) else ()
    res = result(shape, D.int32 if out_int32 else D.int64)
    return res if out is None else write_out(out, res)


def repeat_index(output_size):
    """repeat_interleave's index for meta counts: `output_size` long (torch's error
    without it: the length is the counts' sum)."""
    if output_size is None:
        raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
    return meta_array((output_size,), np.int64)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    res = result(tuple(input._data.shape[:-1]) + (num_samples,), D.int64)
    return res if out is None else write_out(out, res)


def bernoulli(input, p=None, *, generator=None, out=None):
    res = result(input._data.shape, input.dtype)
    return res if out is None else write_out(out, res)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, out=None, **kw):
    shapes = [tuple(x._data.shape) for x in (mean, std) if isinstance(x, Tensor)]
    dt = next(x.dtype for x in (mean, std) if isinstance(x, Tensor))
    res = result(S.broadcast_shapes(*shapes), dt)
    return res if out is None else write_out(out, res)


def rot90(input, k=1, dims=(0, 1)):
    shape = list(input._data.shape)
    d0, d1 = (S.wrap_dim(d, len(shape)) for d in dims)
    if k % 2:
        shape[d0], shape[d1] = shape[d1], shape[d0]
    return result(shape, input.dtype)


def cdist(x1, x2, p=2.0, compute_mode=None):
    batch = S.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    return result(tuple(batch) + (x1.shape[-2], x2.shape[-2]), x1.dtype)


def cross(input, other, dim=None, *, out=None):
    shape = S.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    if dim is None:
        dim = next((k for k, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = S.wrap_dim(dim, len(shape))
    res = result(shape, input.dtype, cross_layout(input, other, shape, d))
    return res if out is None else write_out(out, res)


# ---- linear algebra: batch dims and matrix dims ------------------------------------------
def _square(name, A):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return tuple(A.shape[:-2]), A.shape[-1]


def det(A, *, out=None):
    return result(_square("linalg.det", A)[0], A.dtype)


def slogdet(A, *, out=None):
    batch = _square("linalg.slogdet", A)[0]
    return _rt("slogdet")(result(batch, A.dtype), result(batch, A.dtype))


def square_matrix(name):
    def meta(A, *args, out=None, **kwargs):
        batch, n = _square(name, A)
        res = result(A._data.shape, A.dtype, gufunc_layout(((A, 2),), batch, (n, n)))
        return res if out is None else write_out(out, res)
    return meta


def eigh(A, UPLO="L", *, out=None):
    batch, n = _square("linalg.eigh", A)
    return _rt("linalg_eigh")(result(batch + (n,), A.dtype), result(A._data.shape, A.dtype))


def eigvalsh(A, UPLO="L", *, out=None):
    batch, n = _square("linalg.eigvalsh", A)
    return result(batch + (n,), A.dtype)


def svd_shapes(A, full_matrices):
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    u = batch + ((m, m) if full_matrices else (m, k))
    vh = batch + ((n, n) if full_matrices else (k, n))
    return u, batch + (k,), vh


def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    u, s, vh = svd_shapes(A, full_matrices)
    return _rt("linalg_svd")(result(u, A.dtype), result(s, A.dtype), result(vh, A.dtype))


def svdvals(A, *, driver=None, out=None):
    return result(svd_shapes(A, False)[1], A.dtype)


def linalg_qr(A, mode="reduced", *, out=None):
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    q = batch + ((m, m) if mode == "complete" else (m, k) if mode == "reduced" else (0,))
    r = batch + ((m, n) if mode == "complete" else (k, n))
    return _rt("linalg_qr")(result(q, A.dtype), result(r, A.dtype))


def pinverse(input, rcond=1e-15, *args, **kwargs):
    return result(tuple(input.shape[:-2]) + (input.shape[-1], input.shape[-2]), input.dtype)


def linalg_solve(A, B, *, left=True, out=None):
    _square("linalg.solve", A)
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vec:
        shape = S.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-1])) + (B.shape[-1],)
    else:
        shape = S.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])) + \
            tuple(B.shape[-2:])
    res = result(shape, A.dtype)
    return res if out is None else write_out(out, res)
