"""DTensor placements: how one tensor is laid out over one dimension of a DeviceMesh.

    Shard(0)      each rank holds one torch.chunk-style piece along tensor dim 0
    Replicate()   each rank holds the whole tensor
    Partial()     each rank holds a summand: the tensor is the sum over the ranks

A DTensor has one placement per mesh dimension (``placements=(Shard(0), Replicate())`` on a
2-D mesh). Uneven sizes follow ``torch.chunk``: pieces of ``ceil(n / k)``, the last ones
smaller or empty, exactly like torch's ``Shard``.
"""

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """Base class of the placement types (``Shard``, ``Replicate``, ``Partial``)."""
    __slots__ = ()

    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self, reduce_op=None):
        return False


class Shard(Placement):
    """The tensor is split along tensor dimension ``dim`` over the mesh dimension, like
    ``torch.chunk(tensor, mesh.size(d), dim)``.

    >>> distribute_tensor(ember.arange(6.), mesh, [Shard(0)]).to_local()   # rank 1
    tensor([3., 4., 5.])
    """
    __slots__ = ("dim",)

    def __init__(self, dim):
        if not isinstance(dim, int):
            raise TypeError(f"Shard dim must be an int, got {type(dim).__name__}")
        self.dim = dim

    def is_shard(self, dim=None):
        return dim is None or dim == self.dim

    def __eq__(self, other):
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"

    def __str__(self):
        return f"S({self.dim})"


class Replicate(Placement):
    """Every rank of the mesh dimension holds the whole tensor."""
    __slots__ = ()

    def is_replicate(self):
        return True

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"


class Partial(Placement):
    """Each rank holds a partial value; the tensor is their reduction (``"sum"`` by default)
    over the mesh dimension. ``redistribute(..., [Replicate()])`` performs the all_reduce.

    >>> dt = DTensor.from_local(ember.ones(2), mesh, [Partial()])
    >>> dt.full_tensor()              # on 2 ranks
    tensor([2., 2.])
    """
    __slots__ = ("reduce_op",)

    def __init__(self, reduce_op="sum"):
        # any name is accepted, like torch; redistribute.py supports "sum" and "avg"
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op=None):
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self):
        return 1 + hash(self.reduce_op)

    def __repr__(self):
        return f"Partial({self.reduce_op})"

    def __str__(self):
        return f"P({self.reduce_op})"


def grad_placements(placements):
    """The placements a gradient has (torch's guarantee for from_local/redistribute): the
    forward placements with Partial replaced by Replicate."""
    return tuple(Replicate() if p.is_partial() else p for p in placements)


def normalize(placements, ndim, mesh_ndim):
    """Placements as a tuple with non-negative Shard dims, checked against the tensor's ndim
    and the mesh's ndim (torch's errors)."""
    if isinstance(placements, Placement):
        placements = (placements,)
    placements = tuple(placements)
    if len(placements) != mesh_ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! "
                         f"Found placements length: {len(placements)}, and device_mesh.ndim: "
                         f"{mesh_ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Shard, Replicate or Partial, got {p!r}")
        if isinstance(p, Shard):
            d = p.dim + ndim if p.dim < 0 else p.dim
            if not 0 <= d < ndim:
                raise IndexError(f"Shard dim {p.dim} out of range for a tensor of {ndim} "
                                 "dimensions")
            p = Shard(d)
        out.append(p)
    kinds = {p.reduce_op for p in out if isinstance(p, Partial)}
    if len(kinds) > 1:
        raise ValueError(f"All Partial placements must use the same reduce_op, got {kinds}")
    return tuple(out)


def chunk_range(size, n, index):
    """(offset, length) of piece `index` when `size` is split into `n` torch.chunk pieces."""
    full = -(-size // n) if size else 0
    start = min(index * full, size)
    return start, min(size, start + full) - start


def local_layout(shape, placements, coordinate, mesh_shape):
    """(local shape, offsets) of the local piece at mesh `coordinate`: each Shard placement,
    mesh dim by mesh dim, chunks what the previous ones left (torch's nested sharding)."""
    shape, offsets = list(shape), [0] * len(shape)
    for p, c, n in zip(placements, coordinate, mesh_shape):
        if isinstance(p, Shard):
            off, length = chunk_range(shape[p.dim], n, c)
            offsets[p.dim] += off
            shape[p.dim] = length
    return tuple(shape), tuple(offsets)
