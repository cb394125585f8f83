"""The operations a DTensor supports, each as a sharding rule over the local tensors.

Every op here works one mesh dimension at a time: it picks the output placement from the
inputs' placements (redistributing an input first where no local computation exists), runs
the ordinary ember op on the local tensors (so autograd records it), and, where the local
backward of that op yields only one rank's share of an input's gradient, marks the input
with ``GradFix`` so its gradient is all-reduced (torch's guarantee: the gradient of a DTensor
of placements P has placements P with Partial as Replicate).

Supported:
- pointwise ops of any arity (the Tensor methods whose OpDef kind is POINTWISE, and the
  operators ``+ - * / ** neg``), with Python scalars and with broadcasting: a Partial input
  is all-reduced first; Shard inputs must agree (or are gathered); a Replicate input next to
  a Shard one is chunked to match, or, when it is broadcast along the sharded dim, kept and
  its gradient all-reduced;
- ``a @ b`` / ``matmul`` for ``a`` of >= 2 dims and a 2-D ``b`` (the linear layer's case):
  Shard(row) @ Replicate, Replicate @ Shard(1), Shard(-1) @ Shard(0) -> Partial, Partial @
  Replicate, Replicate @ Partial; any other pairing is first redistributed to one of these;
- ``t()`` / ``transpose(d0, d1)``; ``sum(dim=None, keepdim=False)`` / ``mean``;
- ``linear(input, weight, bias=None)`` and ``embedding(input, weight, padding_idx=None)``
  (weight Shard(0) gives a Partial output: each rank looks up the rows it holds, zeros
  elsewhere).

Anything else raises NotImplementedError naming the op: never a silently wrong result.
"""
from ...core.tensor import Tensor
from ...nn.functional import embedding as _embedding
from ...ops.creation import zeros
from ...ops.registry import POINTWISE, op_for
from .dtensor import DTensor
from .placements import Partial, Replicate, Shard, grad_placements, local_layout
from .redistribute import GradFix

__all__ = ["linear", "embedding", "matmul"]


def _unsupported(name):
    return NotImplementedError(f"DTensor does not support the operator '{name}' in ember "
                               "(supported: pointwise ops, matmul/@, t, transpose, sum, mean, "
                               "linear, embedding, and the conversions; call .full_tensor() "
                               "or .to_local() to go on with plain tensors)")


def _no_plain_tensors(name, args):
    for a in args:
        if isinstance(a, Tensor) and not isinstance(a, DTensor):
            raise RuntimeError(f"{name}: got mixed ember.Tensor and DTensor, need to convert "
                               "all ember.Tensor to DTensor before calling distributed "
                               "operators!")


def _same_mesh(name, dts):
    mesh = dts[0].device_mesh
    for d in dts[1:]:
        if d.device_mesh != mesh:
            raise NotImplementedError(f"{name}: DTensor operands on different DeviceMeshes")
    return mesh


def _with_grad_fix(dt, partial_dims):
    """dt's local tensor, wrapped so that its gradient (a partial sum over `partial_dims`)
    is all-reduced in backward."""
    local = dt._local_tensor
    if not partial_dims:
        return local
    wanted = grad_placements(dt.placements)
    natural = tuple(Partial() if j in partial_dims else p for j, p in enumerate(wanted))
    return GradFix.apply(local, dt.device_mesh, natural, wanted, dt.shape)


def _sum_partials(dt):
    """dt with every Partial (or non-sum Partial) mesh dim all-reduced to Replicate."""
    want = tuple(Replicate() if p.is_partial() else p for p in dt.placements)
    return dt._redistribute(want)


# ---- pointwise ----
def _broadcast_shape(shapes):
    nd = max(len(s) for s in shapes)
    out = [1] * nd
    for s in shapes:
        for i, n in enumerate(s, nd - len(s)):
            if n != 1:
                if out[i] != 1 and out[i] != n:
                    raise RuntimeError(f"The size of tensor a ({out[i]}) must match the size "
                                       f"of tensor b ({n}) at non-singleton dimension {i}")
                out[i] = n
    return tuple(out)


def pointwise(name, args, kwargs=None):
    """`name` (a Tensor method of kind POINTWISE) over DTensor / scalar operands."""
    kwargs = kwargs or {}
    _no_plain_tensors(name, list(args) + list(kwargs.values()))
    dts = [a for a in args if isinstance(a, DTensor)]
    mesh = _same_mesh(name, dts)
    dts = [_sum_partials(d) for d in dts]
    out_shape = _broadcast_shape([tuple(d.shape) for d in dts])
    nd = len(out_shape)
    targets = [list(d.placements) for d in dts]
    fixes = [set() for _ in dts]
    out_pl = []
    for j in range(mesh.ndim):
        # the output dim each operand shards on mesh dim j (a broadcast size-1 dim cannot)
        sharded = []
        for k, d in enumerate(dts):
            p = targets[k][j]
            if isinstance(p, Shard):
                D = p.dim + nd - d.ndim
                if d.shape[p.dim] != out_shape[D]:
                    targets[k][j] = Replicate()
                else:
                    sharded.append(D)
        if not sharded:
            out_pl.append(Replicate())
            continue
        D = sharded[0]
        out_pl.append(Shard(D))
        for k, d in enumerate(dts):
            p = targets[k][j]
            own = D - (nd - d.ndim)     # operand k's dim aligned with output dim D
            if isinstance(p, Shard) and p.dim != own:
                targets[k][j] = p = Replicate()
            if p.is_replicate():
                if own >= 0 and d.shape[own] == out_shape[D]:
                    targets[k][j] = Shard(own)          # take the matching piece
                else:
                    fixes[k].add(j)                     # broadcast along D: partial grads
    dts = [d._redistribute(tuple(t)) for d, t in zip(dts, targets)]
    locals_ = iter([_with_grad_fix(d, f) for d, f in zip(dts, fixes)])
    local_args = [next(locals_) if isinstance(a, DTensor) else a for a in args]
    out = getattr(local_args[0], name)(*local_args[1:], **kwargs)
    if not isinstance(out, Tensor) or tuple(out.shape) != local_shape(out_shape, mesh, out_pl):
        raise _unsupported(name)     # e.g. a pointwise op with several outputs
    return DTensor._new(out, mesh, out_pl, out_shape)


def local_shape(shape, mesh, placements):
    return local_layout(shape, placements, mesh.get_coordinate(), mesh.shape)[0]


def pointwise_method(name):
    """The DTensor method for Tensor method `name`, if its op is POINTWISE and not in-place."""
    if name.endswith("_") and not name.endswith("__"):
        return None
    op = op_for(name)
    if op is None or op.kind != POINTWISE:
        return None

    def method(self, *args, **kwargs):
        return pointwise(name, (self,) + args, kwargs)
    method.__name__ = name
    return method


# ---- matmul ----
def _matmul_rule(pa, pb, a_nd):
    """(output placement, a's grad is partial, b's grad is partial) on one mesh dim, or None
    when the pair has no local computation."""
    last = a_nd - 1
    if pa.is_replicate() and pb.is_replicate():
        return Replicate(), False, False
    if isinstance(pa, Shard) and pa.dim < last and pb.is_replicate():
        return Shard(pa.dim), False, True
    if pa.is_replicate() and pb == Shard(1):
        return Shard(last), True, False
    if pa == Shard(last) and pb == Shard(0):
        return Partial(), False, False
    if pa == Partial() and pb.is_replicate():
        return Partial(), False, True
    if pa.is_replicate() and pb == Partial():
        return Partial(), True, False
    return None


def matmul(a, b):
    """``a @ b`` for DTensors, `a` with >= 2 dims and a 2-D `b`."""
    _no_plain_tensors("matmul", (a, b))
    if not isinstance(a, DTensor) or not isinstance(b, DTensor):
        raise _unsupported("matmul with a non-DTensor operand")
    if a.ndim < 2 or b.ndim != 2:
        raise _unsupported(f"matmul of {a.ndim}-D @ {b.ndim}-D (needs >= 2-D @ 2-D)")
    if a.shape[-1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({a.shape.numel() // max(a.shape[-1], 1)}x{a.shape[-1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    mesh = _same_mesh("matmul", [a, b])
    pa, pb = list(a.placements), list(b.placements)
    out_pl, fix_a, fix_b = [], set(), set()
    for j in range(mesh.ndim):
        for conv in range(4):
            rule = _matmul_rule(pa[j], pb[j], a.ndim)
            if rule is not None:
                break
            # no local computation for this pair: bring b, then a, towards Replicate
            # (Shard(-1) @ Replicate -> chunk b to Shard(0); Replicate @ Shard(0) -> chunk a)
            if conv == 0 and pa[j] == Shard(a.ndim - 1) and pb[j].is_replicate():
                pb[j] = Shard(0)
            elif conv == 0 and pa[j].is_replicate() and pb[j] == Shard(0):
                pa[j] = Shard(a.ndim - 1)
            elif not pb[j].is_replicate():
                pb[j] = Replicate()
            else:
                pa[j] = Replicate()
        out, ga, gb = rule
        out_pl.append(out)
        if ga:
            fix_a.add(j)
        if gb:
            fix_b.add(j)
    a, b = a._redistribute(tuple(pa)), b._redistribute(tuple(pb))
    local = _with_grad_fix(a, fix_a) @ _with_grad_fix(b, fix_b)
    return DTensor._new(local, mesh, out_pl, tuple(a.shape[:-1]) + (b.shape[1],))


# ---- layout ops and reductions ----
def transpose(x, dim0, dim1):
    nd = x.ndim
    d0, d1 = dim0 % nd if nd else 0, dim1 % nd if nd else 0
    swap = {d0: d1, d1: d0}
    pl = tuple(Shard(swap.get(p.dim, p.dim)) if isinstance(p, Shard) else p
               for p in x.placements)
    shape = list(x.shape)
    if nd:
        shape[d0], shape[d1] = shape[d1], shape[d0]
    return DTensor._new(x._local_tensor.transpose(d0, d1), x.device_mesh, pl, shape)


def t(x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, 1) if x.ndim == 2 else x


def sum_(x, dim=None, keepdim=False, *, dtype=None):
    """sum over all dims or the given ones: a Shard over a reduced dim becomes Partial."""
    nd = x.ndim
    dims = list(range(nd)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = sorted(d % nd for d in dims) if nd else []
    keep = keepdim and dim is not None
    pl = []
    for p in x.placements:
        if isinstance(p, Shard):
            if p.dim in dims:
                p = Partial()
            elif not keep:
                p = Shard(p.dim - sum(1 for d in dims if d < p.dim))
        elif p.is_partial() and p != Partial():
            raise _unsupported(f"sum of a {p!r} DTensor")
        pl.append(p)
    shape = [1 if i in dims else s for i, s in enumerate(x.shape)] if keep else \
        [s for i, s in enumerate(x.shape) if i not in dims]
    local = x._local_tensor.sum(dim=dim, keepdim=keepdim, dtype=dtype) if dim is not None \
        else x._local_tensor.sum(dtype=dtype)
    return DTensor._new(local, x.device_mesh, pl, shape)


def mean(x, dim=None, keepdim=False, *, dtype=None):
    nd = x.ndim
    dims = list(range(nd)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    count = 1
    for d in dims:
        count *= x.shape[d % nd] if nd else 1
    return pointwise("__truediv__", (sum_(x, dim, keepdim, dtype=dtype), count))


# ---- the layers' functions ----
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` on DTensors (the functional form of a TP Linear).

    >>> y = linear(x_replicated, w_shard0, b_shard0)     # ColwiseParallel: y is Shard(-1)
    """
    out = matmul(input, t(weight))
    return out if bias is None else pointwise("__add__", (out, bias))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of DTensor `weight` (2-D) picked by the DTensor of indices `input`.

    weight Shard(1) -> output Shard(-1); weight Shard(0) -> output Partial (each rank looks
    up the rows it holds; the others give zeros); weight Replicate -> the input's layout."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise _unsupported("embedding with max_norm, scale_grad_by_freq or sparse")
    _no_plain_tensors("embedding", (input, weight))
    if not isinstance(input, DTensor) or not isinstance(weight, DTensor):
        raise _unsupported("embedding with a non-DTensor operand")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    mesh = _same_mesh("embedding", [input, weight])
    pi, pw = list(input.placements), list(weight.placements)
    out_pl, fix_w = [], set()
    out_nd = input.ndim + 1
    for j in range(mesh.ndim):
        if pw[j].is_partial():
            pw[j] = Replicate()
        if pi[j].is_partial():
            pi[j] = Replicate()
        if not pw[j].is_replicate() and not pi[j].is_replicate():
            pi[j] = Replicate()
        if pw[j] == Shard(1):
            out_pl.append(Shard(out_nd - 1))
        elif pw[j] == Shard(0):
            out_pl.append(Partial())
        elif isinstance(pi[j], Shard):
            out_pl.append(pi[j])
            fix_w.add(j)
        else:
            out_pl.append(Replicate())
    input, weight = input._redistribute(tuple(pi)), weight._redistribute(tuple(pw))
    idx = input._local_tensor
    w_local = _with_grad_fix(weight, fix_w)
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
    if any(p == Shard(0) for p in weight.placements):
        (n_local, _), (off, _) = local_layout(weight.shape, weight.placements,
                                              mesh.get_coordinate(), mesh.shape)
        outside = (idx < off) | (idx >= off + n_local)
        local_idx = (idx - off).masked_fill(outside, 0)
        pad = padding_idx - off if padding_idx is not None and \
            off <= padding_idx < off + n_local else None
        if n_local == 0:    # this rank holds no rows: its share is zero
            out = w_local.sum() * 0 + _zeros_like_lookup(idx, weight)
        else:
            out = _embedding(local_idx, w_local, pad).masked_fill(outside.unsqueeze(-1), 0)
    else:
        out = _embedding(idx, w_local, padding_idx)
    shape = tuple(input.shape) + (weight.shape[1],)
    return DTensor._new(out, mesh, out_pl, shape)


def _zeros_like_lookup(idx, weight):
    (_, cols), _ = local_layout(weight.shape, weight.placements,
                                weight.device_mesh.get_coordinate(), weight.device_mesh.shape)
    return zeros(tuple(idx.shape) + (cols,), dtype=weight.dtype)


# ---- install the operators and methods on DTensor ----
def _binary(name):
    def op(self, other):
        return pointwise(name, (self, other))
    op.__name__ = name
    return op


def _getattr(self, name):
    if name.startswith("_"):
        raise AttributeError(f"'DTensor' object has no attribute '{name}'")
    method = pointwise_method(name)
    if method is not None:
        return method.__get__(self, DTensor)
    if hasattr(Tensor, name):
        raise _unsupported(name)
    raise AttributeError(f"'DTensor' object has no attribute '{name}'")


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__"):
    setattr(DTensor, _name, _binary(_name))
DTensor.__neg__ = lambda self: pointwise("__neg__", (self,))
DTensor.__matmul__ = lambda self, other: matmul(self, other)
DTensor.__rmatmul__ = lambda self, other: matmul(other, self)
DTensor.matmul = lambda self, other: matmul(self, other)
DTensor.t = t
DTensor.transpose = transpose
DTensor.sum = sum_
DTensor.mean = mean
DTensor.__getattr__ = _getattr
