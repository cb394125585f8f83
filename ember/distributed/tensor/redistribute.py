"""Changing a DTensor's placements: the collective for each transition, and its gradient.

One mesh dimension at a time (its process group from ``mesh.get_group(d)``):

    Shard(i)  -> Replicate   all_gather_into_tensor (pieces padded to equal size)
    Replicate -> Shard(i)    take the local torch.chunk piece (no communication)
    Partial   -> Replicate   all_reduce (sum, or avg)
    Partial   -> Shard(i)    reduce_scatter_tensor
    Replicate -> Partial     x / n for "sum" (x for "avg"), like torch
    Shard(i)  -> Partial     the local piece in place, zeros elsewhere (exact, no communication)
    Shard(i)  -> Shard(j)    all_gather, then take the local piece

When two mesh dims shard the same tensor dim (nested sharding), everything is first brought
back to Replicate from the last mesh dim to the first, then sharded again in mesh order.

Gradients (``Redistribute``, an autograd Function): the gradient of a DTensor with placements
P has placements ``grad_placements(P)`` (Partial -> Replicate; torch's guarantee), so the
backward of ``src -> dst`` redistributes the gradient from ``grad_placements(dst)`` to
``grad_placements(src)``: all_gather's backward is a local chunk, a chunk's backward an
all_gather, all_reduce's backward the identity, reduce_scatter's an all_gather. Seen locally
these are the adjoints (all_gather <-> reduce_scatter) of the same global linear map.
"""
from .. import collectives as _coll, process_group as _pg
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops.creation import zeros
from ...ops.joining import cat
from .placements import Partial, Replicate, Shard, chunk_range, grad_placements, local_layout

__all__ = ["redistribute_local", "Redistribute", "GradFix"]

_SUPPORTED_PARTIAL = ("sum", "avg")


def _reduce_op(p):
    if p.reduce_op not in _SUPPORTED_PARTIAL:
        raise NotImplementedError(f"redistributing a {p!r} DTensor is not supported by ember's "
                                  f"DTensor (only Partial reductions {_SUPPORTED_PARTIAL})")
    return _pg.ReduceOp.SUM if p.reduce_op == "sum" else _pg.ReduceOp.AVG


def _level_size(shape, cur, j, mesh, tdim):
    """The size of tensor dim `tdim` that mesh dim `j` splits: the global size chunked by
    the mesh dims before `j` that shard the same tensor dim."""
    coord = mesh.get_coordinate()
    return local_layout(shape, cur[:j], coord[:j], mesh.shape[:j])[0][tdim]


def _all_gather(x, mesh, j, tdim, level):
    """The pieces of all ranks of mesh dim j, joined along tdim (of total size `level`)."""
    n = mesh.size(j)
    full = -(-level // n)
    lengths = [chunk_range(level, n, r)[1] for r in range(n)]
    moved = x.movedim(tdim, 0)
    if moved.shape[0] < full:   # pad this piece so every rank sends `full` rows
        moved = cat([moved, zeros((full - moved.shape[0],) + tuple(moved.shape[1:]),
                                  dtype=x.dtype)], 0)
    moved = moved.contiguous()
    out = zeros((n * full,) + tuple(moved.shape[1:]), dtype=x.dtype)
    _coll.all_gather_into_tensor(out, moved, group=mesh.get_group(j))
    if any(length != full for length in lengths):
        out = cat([out.narrow(0, r * full, lengths[r]) for r in range(n)], 0)
    return out.movedim(0, tdim).contiguous()


def _chunk(x, mesh, j, tdim):
    off, length = chunk_range(x.shape[tdim], mesh.size(j), mesh.get_coordinate()[j])
    return x.narrow(tdim, off, length).contiguous()


def _all_reduce(x, mesh, j, p):
    out = x.contiguous().clone()
    _coll.all_reduce(out, op=_reduce_op(p), group=mesh.get_group(j))
    return out


def _reduce_scatter(x, mesh, j, tdim, p):
    n, c = mesh.size(j), mesh.get_coordinate()[j]
    level = x.shape[tdim]
    full = -(-level // n)
    moved = x.movedim(tdim, 0)
    if n * full > level:
        moved = cat([moved, zeros((n * full - level,) + tuple(moved.shape[1:]),
                                  dtype=x.dtype)], 0)
    moved = moved.contiguous()
    out = zeros((full,) + tuple(moved.shape[1:]), dtype=x.dtype)
    _coll.reduce_scatter_tensor(out, moved, op=_reduce_op(p), group=mesh.get_group(j))
    return out.narrow(0, 0, chunk_range(level, n, c)[1]).movedim(0, tdim).contiguous()


def _zero_pad(x, mesh, j, tdim, level):
    off, length = chunk_range(level, mesh.size(j), mesh.get_coordinate()[j])
    rest = tuple(x.shape)
    parts = []
    if off:
        parts.append(zeros(rest[:tdim] + (off,) + rest[tdim + 1:], dtype=x.dtype))
    parts.append(x)
    if level - off - length:
        parts.append(zeros(rest[:tdim] + (level - off - length,) + rest[tdim + 1:],
                           dtype=x.dtype))
    return cat(parts, tdim) if len(parts) > 1 else x.clone()


def _step(x, mesh, shape, cur, j, dst):
    """Move mesh dim j of local tensor x from cur[j] to dst (cur is updated)."""
    src = cur[j]
    if mesh.size(j) == 1:           # one rank along j: every layout is the whole tensor
        if isinstance(dst, Partial):
            _reduce_op(dst)
        cur[j] = dst
        return x
    if isinstance(src, Shard) and isinstance(dst, Shard):   # through Replicate
        x = _step(x, mesh, shape, cur, j, Replicate())
        return _step(x, mesh, shape, cur, j, dst)
    if isinstance(src, Partial) and isinstance(dst, Partial):
        x = _step(x, mesh, shape, cur, j, Replicate())
        return _step(x, mesh, shape, cur, j, dst)
    if isinstance(src, Shard):
        level = _level_size(shape, cur, j, mesh, src.dim)
        x = (_all_gather(x, mesh, j, src.dim, level) if isinstance(dst, Replicate)
             else _zero_pad(x, mesh, j, src.dim, level))
    elif isinstance(src, Partial):
        x = (_all_reduce(x, mesh, j, src) if isinstance(dst, Replicate)
             else _reduce_scatter(x, mesh, j, dst.dim, src))
    elif isinstance(dst, Shard):                            # Replicate -> Shard
        x = _chunk(x, mesh, j, dst.dim)
    else:                                                   # Replicate -> Partial
        _reduce_op(dst)
        x = x / mesh.size(j) if dst.reduce_op == "sum" else x.clone()
    cur[j] = dst
    return x


def _nested(src, dst):
    """True when some tensor dim is sharded by more than one mesh dim in src or dst."""
    owners = {}
    for j, p in enumerate(src + dst):
        if isinstance(p, Shard):
            owners.setdefault(p.dim, set()).add(j % len(src))
    return any(len(s) > 1 for s in owners.values())


def redistribute_local(x, mesh, src, dst, shape):
    """The local tensor of placements `dst`, from local tensor `x` of placements `src`, for a
    global tensor of `shape` (no autograd; collective: every rank of the mesh calls it)."""
    if src == dst:
        return x
    mesh._require_member()
    cur = list(src)
    with no_grad():
        if not _nested(src, dst):
            for j, p in enumerate(dst):
                if cur[j] != p:
                    x = _step(x, mesh, shape, cur, j, p)
            return x
        for j in reversed(range(len(cur))):
            if not isinstance(cur[j], Replicate):
                x = _step(x, mesh, shape, cur, j, Replicate())
        for j, p in enumerate(dst):
            if not isinstance(p, Replicate):
                x = _step(x, mesh, shape, cur, j, p)
        return x


class Redistribute(Function):
    """Differentiable redistribute of a local tensor: ``apply(local, mesh, src, dst, shape)``."""

    @staticmethod
    def forward(ctx, x, mesh, src, dst, shape):
        ctx.mesh, ctx.src, ctx.dst, ctx.shape = mesh, src, dst, shape
        return redistribute_local(x, mesh, src, dst, shape)

    @staticmethod
    def backward(ctx, grad):
        back = Redistribute.apply(grad, ctx.mesh, grad_placements(ctx.dst),
                                  grad_placements(ctx.src), ctx.shape)
        return back, None, None, None, None


class GradFix(Function):
    """Identity forward; in backward, the gradient arrives with placements `natural` and
    leaves with `wanted` (``apply(local, mesh, natural, wanted, shape)``).

    DTensor ops use it where the local backward of a local op yields a partial sum: for
    ``Replicate @ Shard(1)`` the local gradient of the replicated input is one rank's share
    (``natural = Partial``), and the DTensor gradient must be Replicate: an all_reduce.
    ``from_local(..., grad_placements=)`` and ``to_local(grad_placements=)`` use it too."""

    @staticmethod
    def forward(ctx, x, mesh, natural, wanted, shape):
        ctx.mesh, ctx.natural, ctx.wanted, ctx.shape = mesh, natural, wanted, shape
        return x

    @staticmethod
    def backward(ctx, grad):
        return (Redistribute.apply(grad, ctx.mesh, ctx.natural, ctx.wanted, ctx.shape),
                None, None, None, None)
