"""Helpers for the vmap batching rules written on OpDefs (``OpDef.batch``).

A rule is ``rule(v, args, kwargs)`` (see ember/func/batching.py): `args`/`kwargs` hold
physical tensors, batch dim first for those `v.is_batched` says are batched; it returns
the physical result(s), batch dim first, or NotImplemented (the loop fallback runs). The
helpers here are shared by rules in several files of ember/ops/.
"""
from .view_common import ints_first


def direct(v, args, kwargs):
    """For ops that act per element or on trailing dims only (mT, contiguous, detach, gelu,
    tril...): the op on the physical tensor is the batched op."""
    return v.call(*args, **kwargs)


direct.inplace_ok = True


def decompose(v, args, kwargs):
    """For ops whose implementation is written in other ember ops and reads only logical
    metadata (mm, outer, ...): run it on the batched values, each op then batched."""
    return v.decompose()


def pad(x, n):
    """Batched physical `x` (batch dim first) with size-1 dims after the batch dim up to `n`
    logical dims."""
    k = n - (x.dim() - 1)
    if k <= 0:
        return x
    s = tuple(x.shape)
    return x.reshape(s[:1] + (1,) * k + s[1:])


def logical_shape(v, x):
    return tuple(x.shape[1:]) if v.is_batched(x) else tuple(x.shape)


def shift(d, n):
    """Logical dim `d` (int or tuple) of a value with `n` logical dims, as a physical dim of
    its batched tensor (batch dim first)."""
    from ..core.strides import wrap_dim
    if isinstance(d, (tuple, list)):
        return type(d)(wrap_dim(int(x), n) + 1 for x in d)
    return wrap_dim(int(d), n) + 1


def inplace(v, args, kwargs):
    """In-place ops that broadcast their other operands into self (``add_``, ``copy_``,
    ``fill_``...): the operands padded to self's logical dims, the op on the physical self
    (its writes land in the batched tensor's storage)."""
    self_ = args[0]
    n = v.logical_dim(self_)
    rest = tuple(v.pad(x, n) for x in args[1:])
    if kwargs:
        kwargs = {k: v.pad(x, n) for k, x in kwargs.items()}
    v.call(self_, *rest, **kwargs)
    return self_


inplace.inplace_ok = True


# ---- views with shape arguments (ember/ops/view.py) ----
def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def view_batch(v, args, kwargs):
    """view/reshape: the batch size in front of the new shape."""
    x = args[0]
    if kwargs.get("dtype") is not None or not v.is_batched(x):
        return NotImplemented
    return v.call(x, (x.shape[0],) + _sizes(args[1:]))


def _expand_to(v, x, sizes):
    x = v.expand(x)
    x = pad(x, len(sizes))
    return x.expand((x.shape[0],) + tuple(sizes))


def expand_batch(v, args, kwargs):
    return _expand_to(v, args[0], _sizes(args[1:]) if len(args) > 1 else
                      _sizes((kwargs["size"],)))


def expand_as_batch(v, args, kwargs):
    return _expand_to(v, args[0], logical_shape(v, args[1]))


def view_as_batch(v, args, kwargs):
    x = v.expand(args[0])
    return x.view(tuple(x.shape[:1]) + logical_shape(v, args[1]))


def reshape_as_batch(v, args, kwargs):
    x = v.expand(args[0])
    return x.reshape(tuple(x.shape[:1]) + logical_shape(v, args[1]))


def squeeze_batch(v, args, kwargs):
    x = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    shape = logical_shape(v, x)
    if dim is None:
        dims = tuple(i + 1 for i, s in enumerate(shape) if s == 1)
    elif not shape:
        return x.view(x.shape)
    else:
        dims = shift(dim if isinstance(dim, (tuple, list)) else (dim,), len(shape))
        dims = tuple(d for d in dims if x.shape[d] == 1)
    return x.squeeze(dims) if dims else x.view(x.shape)


def unsqueeze_batch(v, args, kwargs):
    x = args[0]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    return x.unsqueeze(shift(dim, x.dim()))


def permute_batch(v, args, kwargs):
    x = args[0]
    dims = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs["dims"])
    n = x.dim() - 1
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input "
                           f"does not match the length of the desired ordering of dimensions "
                           f"i.e. input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    return x.permute((0,) + shift(tuple(dims), n))


def T_batch(v, args, kwargs):
    x = args[0]
    n = x.dim() - 1
    return x.permute((0,) + tuple(range(n, 0, -1))) if n > 1 else x.view(x.shape)


def t_batch(v, args, kwargs):
    x = args[0]
    n = x.dim() - 1
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return x.transpose(1, 2) if n == 2 else x.view(x.shape)


# ---- indexing (ember/ops/indexing.py) ----
def _is_index_tensor(t):
    from ..core.tensor import Tensor
    return isinstance(t, (Tensor, list))


def getitem_batch(v, args, kwargs):
    """``x[index]``: a full slice in front of the index for the batch dim. Unbatched index
    tensors index every sample alike; batched integer index tensors (one index per sample)
    are paired with the batch by an arange in front."""
    x, index = args
    if not v.is_batched(x):
        return NotImplemented
    idx = index if isinstance(index, tuple) else (index,)
    if any(_is_index_tensor(t) and v.is_batched(t) for t in idx) and ints_first(idx):
        return NotImplemented   # (per-sample index tensors with integers: the loop)
    split = ints_first(idx)
    if split is not None:
        # torch (and ember's eager indexing) applies the integers first, as basic indices
        x = x[(slice(None),) + split[0]]
        idx = split[1]
    tensors = [t for t in idx if _is_index_tensor(t)]
    if not tensors:
        return x[(slice(None),) + idx]
    adv = [i for i, t in enumerate(idx) if _is_index_tensor(t) or
           (isinstance(t, int) and not isinstance(t, bool))]
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    batched = [t for t in tensors if v.is_batched(t)]
    if batched:
        if adv[0] != 0 or not adjacent or any(t.dtype.name == "bool" for t in batched):
            return NotImplemented
        nd = max(v.logical_dim(t) if not isinstance(t, list) else 1 for t in tensors)
        ar = v.arange(x.shape[0]).reshape((x.shape[0],) + (1,) * nd)
        return x[(ar,) + tuple(pad(t, nd) if v.is_batched(t) else t for t in idx)]
    r = x[(slice(None),) + idx]
    if not adjacent:
        # separated advanced indices: their dims come first, then the batch dim
        nd = _advanced_ndim(idx)
        r = r.movedim(nd, 0)
    return r


def _advanced_ndim(idx):
    import numpy as np
    shapes = []
    for t in idx:
        if isinstance(t, list):
            shapes.append(np.shape(t))
        elif _is_index_tensor(t):
            shapes.append((1,) if t.dtype.name == "bool" else tuple(t.shape))
    return len(np.broadcast_shapes(*shapes)) if shapes else 0


def setitem_batch(v, args, kwargs):
    """``x[index] = value`` with a basic index: a view of every sample, written by copy_."""
    index = args[1]
    idx = index if isinstance(index, tuple) else (index,)
    if any(_is_index_tensor(t) for t in idx):
        return NotImplemented
    return v.decompose()


# ---- joining (ember/ops/joining.py) ----
def _join(v, args, kwargs, new_dim):
    tensors = list(args[0])
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    if kwargs.get("out") is not None or not tensors:
        return NotImplemented
    n = max(v.logical_dim(t) for t in tensors)
    # PyTorch's cat skips 1-D empty tensors; every other operand gets the batch dim
    parts = [v.expand(t) for t in tensors]
    return v.call(parts, shift(dim, n + 1 if new_dim else n))


def cat_batch(v, args, kwargs):
    if any(v.logical_dim(t) == 1 and t.shape[-1] == 0 for t in args[0]) or \
            any(v.logical_dim(t) == 0 for t in args[0]):
        return NotImplemented
    return _join(v, args, kwargs, False)


def stack_batch(v, args, kwargs):
    return _join(v, args, kwargs, True)


def sum_to_size_batch(v, args, kwargs):
    x = args[0]
    size = _sizes(args[1:])
    if not v.is_batched(x):
        return NotImplemented
    return _pad_sum(x, size)


def _pad_sum(x, size):
    """Sum a batched (B, *shape) down to (B, *size): the extra leading logical dims first."""
    lead = x.dim() - 1 - len(size)
    if lead < 0:
        return x.sum_to_size(size)     # PyTorch's error for a size that does not fit
    if lead:
        x = x.sum(tuple(range(1, lead + 1)))
    return x.sum_to_size((x.shape[0],) + tuple(size))


# ---- composites (ember/ops/nn_ops.py, nn_loss_ops.py, nn_attention_ops.py) ----
def softmax_batch(v, args, kwargs):
    """softmax/log_softmax(input, dim, dtype): the dim shifted past the batch dim."""
    x, dim, dtype = args
    n = v.logical_dim(x)
    if not v.is_batched(x) or n == 0 or dim is None:
        return NotImplemented
    return v.call(x, shift(dim, n), dtype)


def norm_batch(v, args, kwargs):
    """layer_norm/rms_norm with a batched input and plain weight/bias: the normalized dims
    are trailing ones, so the physical call is the batched one."""
    x = args[0]
    if not v.is_batched(x) or any(v.is_batched(t) for t in args[2:]):
        return NotImplemented
    shape = args[1]
    k = 1 if isinstance(shape, int) else len(shape)
    if v.logical_dim(x) < k:
        return NotImplemented
    return v.call(*args)


def embedding_batch(v, args, kwargs):
    """Batched indices into a plain table: one lookup. A batched table (one per sample):
    one lookup in the tables laid end to end."""
    idx, weight, padding_idx, max_norm = args[:4]
    if max_norm is not None:
        return NotImplemented
    if not v.is_batched(weight):
        return v.call(*args)
    if padding_idx is not None or weight.dim() != 3:
        return NotImplemented
    b, n = weight.shape[0], weight.shape[1]
    idx = v.expand(idx)
    flat = idx.reshape(b, -1) + (v.arange(b) * n).unsqueeze(1)
    out = v.call(flat, weight.reshape(b * n, weight.shape[2]), *args[2:])
    return out.reshape(tuple(idx.shape) + (weight.shape[2],))


def loss_batch(v, args, kwargs):
    """nll_loss/cross_entropy of (C,) or (N, C) samples: every sample's rows in one call with
    reduction="none", then each sample's reduction (its own 'mean' denominator)."""
    input, target, weight, size_average, ignore_index, reduce, reduction = args[:7]
    if size_average is not None or reduce is not None or \
            (weight is not None and v.is_batched(weight)) or not v.is_batched(input):
        return NotImplemented
    n = v.logical_dim(input)
    if n not in (1, 2):
        return NotImplemented
    b, c = input.shape[0], input.shape[-1]
    target = v.expand(target)
    probs = target.dtype.is_floating_point
    x = input.reshape(-1, c)
    t = target.reshape(-1, c) if probs else target.reshape(-1)
    loss = v.call(x, t, weight, None, ignore_index, None, "none", *args[7:])
    loss = loss.reshape(b, -1)
    if reduction == "none":
        return loss.reshape(tuple(input.shape[:-1]))
    total = loss.sum(1)
    if reduction == "sum":
        return total
    if probs:
        return total / loss.shape[1]
    keep = (t != ignore_index).reshape(b, -1)
    if weight is None:
        return total / keep.sum(1).to(total.dtype)
    safe = t.masked_fill(t == ignore_index, 0)
    w = weight[safe].reshape(b, -1).to(total.dtype)
    return total / (w * keep.to(total.dtype)).sum(1)


def sdpa_batch(v, args, kwargs):
    """scaled_dot_product_attention: every operand given the batch dim and padded to one
    logical rank, so the batch joins sdpa's own leading (batch) dims."""
    q, k, val, mask = args[:4]
    if args[4] or (mask is not None and v.logical_dim(mask) > v.logical_dim(q)):
        return NotImplemented       # dropout draws random numbers: the decomposition
    n = max(v.logical_dim(t) for t in (q, k, val))
    ops = [pad(v.expand(t), n) for t in (q, k, val)]
    if mask is not None:
        mask = pad(v.expand(mask), n)
    return v.call(*ops, mask, *args[4:])


def loop(v, args, kwargs):
    """No batching rule: vmap runs the op once per sample (ops whose implementation reads
    raw arrays and that have no rule yet)."""
    return NotImplemented


def leading(v, args, kwargs):
    """Ops whose leading dims are batch dims (cdist, sdpa without dropout): every tensor
    operand given the batch dim and padded to one logical rank."""
    ts = [a for a in args if hasattr(a, "dim")]
    n = max(v.logical_dim(t) for t in ts)
    return v.call(*(pad(v.expand(a), n) if hasattr(a, "dim") else a for a in args), **kwargs)


def dims_batch(*names, new_dim=False):
    """A rule shifting the dim arguments `names` ((name, position, default) each; ints or
    tuples, positional or by keyword) past the batch dim; the others as given."""
    def rule(v, args, kwargs):
        x = args[0]
        if not v.is_batched(x) or any(v.is_batched(a) for a in args[1:] if hasattr(a, "dim")):
            return NotImplemented
        n = v.logical_dim(x) + (1 if new_dim else 0)
        if n == 0:
            return NotImplemented
        args = list(args)
        kwargs = dict(kwargs)
        for name, pos, default in names:
            if pos < len(args):
                val = args[pos]
            else:
                val = kwargs.get(name, default)
            if val is None:
                return NotImplemented     # None: the op works on the flattened input
            val = shift(val, n)
            if pos < len(args):
                args[pos] = val
            else:
                kwargs[name] = val
        return v.call(*args, **kwargs)
    return rule


def repeat_batch(v, args, kwargs):
    x = args[0]
    sizes = _sizes(args[1:])
    if not v.is_batched(x) or len(sizes) < v.logical_dim(x):
        return NotImplemented
    return pad(x, len(sizes)).repeat((1,) + sizes)


def index_select_batch(v, args, kwargs):
    x, dim, index = args[:3]
    if kwargs.get("out") is not None or v.logical_dim(index) > 1:
        return NotImplemented
    n = max(v.logical_dim(x), 1)
    if not v.is_batched(index):
        return v.call(v.expand(x), shift(dim, n), index)
    if v.logical_dim(x) == 0:
        return NotImplemented
    # one index vector per sample: advanced indexing pairs it with its sample
    d = shift(dim, n)
    x = v.expand(x).movedim(d, 1)
    r = x[v.arange(x.shape[0]).unsqueeze(1), index.reshape(x.shape[0], -1)]
    return r.movedim(1, d)


def gather_batch(v, args, kwargs):
    x, dim, index = args[:3]
    if kwargs.get("out") is not None or v.logical_dim(x) == 0:
        return NotImplemented
    return v.call(v.expand(x), shift(dim, v.logical_dim(x)), v.expand(index), **kwargs)


def fold_batch(v, args, kwargs):
    """For kernels over (N, ...) tensors whose samples are independent (pooling's gathers
    and scatters): every tensor operand's vmap batch folded into its N, one call, the
    results unfolded. Operands not batched are expanded first."""
    ts = [a for a in args if hasattr(a, "dim")]
    if any(v.logical_dim(t) == 0 for t in ts) or len({tuple(t.shape[:1]) for t in ts
                                                      if v.is_batched(t)}) != 1:
        return NotImplemented
    b = v.size

    def fold(a):
        if not hasattr(a, "dim"):
            return a
        a = v.expand(a)
        return a.reshape((b * a.shape[1],) + tuple(a.shape[2:]))
    r = v.call(*(fold(a) for a in args), **{k: fold(a) for k, a in kwargs.items()})

    def unfold(t):
        return t.reshape((b, t.shape[0] // b) + tuple(t.shape[1:]))
    if isinstance(r, (tuple, list)):
        return type(r)(unfold(t) for t in r)
    return unfold(r)


# ---- the matmul family (ember/ops/matmul.py): the batch folded into the product's own
# batch dims, so a vmapped product is one BLAS call (or one batched one)
def matmul_batch(v, args, kwargs):
    a, b = args
    if kwargs.get("out") is not None:
        return NotImplemented
    ab, bb = v.is_batched(a), v.is_batched(b)
    na, nb = v.logical_dim(a), v.logical_dim(b)
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{na}D and {nb}D")
    if not bb and nb <= 2:
        return a @ b                  # (B, ..., k) @ (k, m): the batch joins the rows
    if not ab and nb == 1 and na <= 2:
        return b @ a if na == 1 else (a @ b.mT).mT     # b: (B, k); one matrix product
    if na == 1:
        a = a.unsqueeze(-2)
    if nb == 1:
        b = b.unsqueeze(-1)
    n = max(na, nb, 2)
    if ab:
        a = pad(a, n)
    if bb:
        b = pad(b, n)
    r = a @ b
    if na == 1:
        r = r.squeeze(-2)
    if nb == 1:
        r = r.squeeze(-1)
    return r


def product_batch(dims, message):
    """The rule of mm/bmm/mv/dot: their logical dims checked, then the matmul rule."""
    def rule(v, args, kwargs):
        a, b = args[0], args[1]
        if (v.logical_dim(a), v.logical_dim(b)) != dims:
            raise RuntimeError(message(v.logical_dim(a), v.logical_dim(b)))
        return matmul_batch(v, (a, b), kwargs)
    return rule


def addmm_batch(v, args, kwargs):
    input, a, b = args
    if kwargs.get("out") is not None:
        return NotImplemented
    if (v.logical_dim(a), v.logical_dim(b)) != (2, 2):
        raise RuntimeError("mat1 must be a matrix" if v.logical_dim(a) != 2 else
                           "mat2 must be a matrix")
    r = matmul_batch(v, (a, b), {})
    alpha, beta = kwargs.get("alpha", 1), kwargs.get("beta", 1)
    if alpha != 1:
        r = r * alpha
    if v.is_batched(input):
        input = pad(input, 2)
    return r + (input if beta == 1 else input * beta)


def linear_batch(v, args, kwargs):
    """Batched input, plain weight: one linear over all rows (one BLAS call). A batched
    weight (per-sample parameters, as under vmap(grad)): one batched matmul."""
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if not v.is_batched(w) and (bias is None or not v.is_batched(bias)):
        return v.call(x, w, bias)
    nx = v.logical_dim(x)
    if v.logical_dim(w) != 2 or nx == 0:
        return NotImplemented
    if v.is_batched(w):
        xs = tuple(x.shape[1:-1]) if v.is_batched(x) else tuple(x.shape[:-1])
        xr = x.reshape(x.shape[0], -1, x.shape[-1]) if v.is_batched(x) else \
            x.reshape(-1, x.shape[-1])
        # w @ x.T rather than x @ w.T: the same products, and the weight's per-sample
        # gradient (g @ x) then comes out contiguous in the weight's layout
        r = (w @ xr.mT).mT.reshape((v.size,) + xs + (w.shape[1],))
    else:
        r = v.call(x, w, None)
    if bias is not None:
        r = r + (pad(bias, nx) if v.is_batched(bias) else bias)
    return r
