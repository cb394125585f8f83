"""DTensor: one global tensor, held as a local piece on every rank of a DeviceMesh.

    mesh = init_device_mesh("cpu", (2,))
    w = distribute_tensor(ember.randn(8, 4), mesh, [Shard(0)])   # rank r holds rows 4r..4r+3
    w.shape                    # ember.Size([8, 4]): the global shape
    w.to_local().shape         # ember.Size([4, 4])
    w.redistribute(mesh, [Replicate()]).to_local()   # all_gather: the whole tensor
    w.full_tensor()            # the same, in one call

What ember's DTensor is: a plain Python object holding the local tensor (an ordinary ember
Tensor, which carries autograd), the mesh, the placements and the global shape. It is *not*
a Tensor subclass: ember has no ``__torch_dispatch__``, and a subclass would let every
ember op run on the local data as if it were the global tensor, which is silently wrong.
So a DTensor supports exactly the operations listed in ops.py (pointwise ops, ``@`` /
``matmul``, ``t`` / ``transpose``, ``sum`` / ``mean``, and ``linear`` / ``embedding``
functions); any other Tensor method raises NotImplementedError naming it, and ember
functions given a DTensor raise TypeError.

Autograd flows through the local tensors. Every conversion (from_local, to_local,
redistribute, full_tensor) and every op is differentiable, with torch's gradient placement
guarantee: the gradient of a DTensor of placements P has placements P with Partial replaced
by Replicate (``dt.grad`` is a DTensor in that layout).
"""
from ...core.tensor import Size, Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from .. import collectives as _coll
from ..device_mesh import _current_mesh
from .placements import Replicate, Shard, grad_placements, normalize
from .redistribute import GradFix, Redistribute, redistribute_local

__all__ = ["DTensor", "distribute_tensor"]


class DTensor:
    """A distributed tensor: a local piece per rank, a DeviceMesh and one placement per mesh
    dimension. Build one with ``distribute_tensor`` or ``DTensor.from_local``.

    >>> dt = DTensor.from_local(ember.ones(2, 3), mesh, [Shard(0)])   # 2 ranks
    >>> dt.shape, dt.placements
    (ember.Size([4, 3]), (Shard(dim=0),))
    """
    __slots__ = ("_local_tensor", "_mesh", "_placements", "_shape")

    @classmethod
    def _new(cls, local, mesh, placements, shape):
        self = object.__new__(cls)
        self._local_tensor = local
        self._mesh = mesh
        self._placements = tuple(placements)
        self._shape = Size(shape)
        return self

    def __init__(self, *args, **kwargs):
        raise TypeError("build a DTensor with distribute_tensor(...) or DTensor.from_local(...)")

    # ---- construction and conversion ----
    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False,
                   shape=None, stride=None, grad_placements=None):
        """The DTensor whose local piece on this rank is `local_tensor` (differentiable; no
        copy). Without `shape`, the global shape assumes even sharding (each Shard dim times
        the mesh dim's size); pass `shape` when pieces differ in size. With `run_check`,
        Replicate mesh dims are broadcast from their first rank. `grad_placements`: the
        placements `local_tensor`'s gradient should have (default: these placements, with
        Partial as Replicate).

        >>> DTensor.from_local(ember.ones(2), mesh, [Shard(0)]).shape    # on 2 ranks
        ember.Size([4])
        """
        if isinstance(local_tensor, DTensor):
            raise RuntimeError("the local_tensor argument only accepts ember.Tensor but got "
                               f"{type(local_tensor)} value.")
        if not isinstance(local_tensor, Tensor):
            raise TypeError(f"from_local expects a Tensor, got {type(local_tensor).__name__}")
        mesh = device_mesh or _current_mesh()
        mesh._require_member()
        placements = (Replicate(),) * mesh.ndim if placements is None else placements
        placements = normalize(placements, local_tensor.dim(), mesh.ndim)
        if shape is None:
            shape = list(local_tensor.shape)
            for j, p in enumerate(placements):
                if isinstance(p, Shard):
                    shape[p.dim] *= mesh.size(j)
        shape = Size(tuple(int(s) for s in shape))
        local = local_tensor
        if run_check:
            for j, p in enumerate(placements):
                if p.is_replicate():
                    local = _broadcast_from(local.detach().contiguous().clone(), mesh, j, 0)
            if local is not local_tensor:   # keep the graph: same values' gradient path
                local = _ReplaceValues.apply(local_tensor, local)
        if grad_placements is not None:
            wanted = normalize(grad_placements, local_tensor.dim(), mesh.ndim)
            local = GradFix.apply(local, mesh, grad_placements_of(placements), wanted, shape)
        return DTensor._new(local, mesh, placements, shape)

    def to_local(self, *, grad_placements=None):
        """This rank's piece, an ordinary Tensor (differentiable). `grad_placements`: the
        placements the gradient coming back to it will have (default: this DTensor's)."""
        if grad_placements is None:
            return self._local_tensor
        natural = normalize(grad_placements, self.ndim, self._mesh.ndim)
        return GradFix.apply(self._local_tensor, self._mesh, natural,
                             grad_placements_of(self._placements), self._shape)

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False):
        """The same global tensor with new `placements` (differentiable), through the
        collectives listed in redistribute.py. Redistributing *to* Partial is refused, as
        in torch. `async_op` is accepted; the collectives complete before it returns."""
        mesh = device_mesh or self._mesh
        if mesh != self._mesh:
            raise NotImplementedError("redistribute to a different DeviceMesh is not supported")
        if placements is None:
            raise RuntimeError("placements is needed for redistribute!")
        placements = normalize(placements, self.ndim, mesh.ndim)
        for cur, p in zip(self._placements, placements):
            if p.is_partial() and cur != p:
                raise RuntimeError(f"Can not redistribute from {cur} to {p}, redistributing "
                                   "to Partial is for internal use only!")
        return self._redistribute(placements)

    def _redistribute(self, placements):
        if placements == self._placements:
            return self
        local = Redistribute.apply(self._local_tensor, self._mesh, self._placements,
                                   placements, self._shape)
        return DTensor._new(local, self._mesh, placements, self._shape)

    def full_tensor(self, *, grad_placements=None):
        """The whole global tensor on every rank (differentiable): redistribute to Replicate,
        then ``to_local``."""
        full = self._redistribute((Replicate(),) * self._mesh.ndim)
        return full.to_local(grad_placements=grad_placements)

    # ---- metadata ----
    @property
    def placements(self):
        return self._placements

    @property
    def device_mesh(self):
        return self._mesh

    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        if dim is None:
            return self._shape
        return self._shape[dim]

    def dim(self):
        return len(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        return self._shape.numel()

    @property
    def dtype(self):
        return self._local_tensor.dtype

    @property
    def device(self):
        return self._local_tensor.device

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    # ---- autograd ----
    @property
    def requires_grad(self):
        return self._local_tensor.requires_grad

    def requires_grad_(self, requires_grad=True):
        self._local_tensor.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self):
        return self._local_tensor.is_leaf

    @property
    def grad_fn(self):
        return self._local_tensor.grad_fn

    @property
    def grad(self):
        """The gradient as a DTensor (placements: these, with Partial as Replicate)."""
        g = self._local_tensor.grad
        if g is None:
            return None
        return DTensor._new(g, self._mesh, grad_placements_of(self._placements), self._shape)

    @grad.setter
    def grad(self, value):
        if isinstance(value, DTensor):
            value = value.to_local()
        self._local_tensor.grad = value

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Backpropagate from this DTensor. With no `gradient` it must have one element; each
        rank's local seed is 1, i.e. the gradient of a Replicate (or Partial) scalar."""
        if isinstance(gradient, DTensor):
            gradient = gradient._redistribute_grad(self._placements)
        if inputs is not None:
            inputs = [i._local_tensor if isinstance(i, DTensor) else i for i in inputs]
        self._local_tensor.backward(gradient, retain_graph=retain_graph,
                                    create_graph=create_graph, inputs=inputs)

    def _redistribute_grad(self, placements):
        """This DTensor's local tensor in the gradient layout of `placements`."""
        return redistribute_local(self._local_tensor, self._mesh, self._placements,
                                  grad_placements_of(placements), self._shape)

    def detach(self):
        return DTensor._new(self._local_tensor.detach(), self._mesh, self._placements,
                            self._shape)

    def item(self):
        return self.full_tensor().item()

    def __bool__(self):
        return bool(self.full_tensor())

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self._mesh!r}, "
                f"placements={self._placements!r})")

    # the supported ops (operators, pointwise methods...) are installed by ops.py


grad_placements_of = grad_placements   # (from_local/to_local have an argument of that name)


def _broadcast_from(t, mesh, j, index):
    """Broadcast `t` in place over mesh dim j from the rank at `index` along that dim."""
    coord = list(mesh.get_coordinate())
    coord[j] = index
    src = int(mesh._ranks[tuple(coord)])
    _coll.broadcast(t, src=src, group=mesh.get_group(j))
    return t


class _ReplaceValues(Function):
    """`new`'s values with `old`'s gradient path (from_local's run_check broadcast)."""

    @staticmethod
    def forward(ctx, old, new):
        return new

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    """Split (or copy) a whole tensor over the mesh: rank r keeps its piece of each Shard dim.
    Collective. The values come from the rank at index `src_data_rank` of every mesh dim
    (broadcast first); with ``src_data_rank=None`` each rank's own `tensor` is used. The
    result is a leaf DTensor with `tensor`'s requires_grad, like torch.

    >>> w = distribute_tensor(ember.arange(8.).reshape(4, 2), mesh, [Shard(0)])
    >>> w.to_local()        # on rank 1 of 2
    tensor([[4., 5.],
            [6., 7.]])
    """
    mesh = device_mesh or _current_mesh()
    if isinstance(tensor, DTensor):
        wanted = normalize(placements or (Replicate(),) * mesh.ndim, tensor.ndim, mesh.ndim)
        if tensor.device_mesh != mesh or tensor.placements != wanted:
            raise ValueError(f"Cannot distribute a DTensor with placements "
                             f"{tensor.placements} to a different placements {wanted}. do "
                             "you want to call `redistribute` instead?")
        return tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"distribute_tensor expects a Tensor, got {type(tensor).__name__}")
    mesh._require_member()
    placements = (Replicate(),) * mesh.ndim if placements is None else placements
    placements = normalize(placements, tensor.dim(), mesh.ndim)
    with no_grad():
        full = tensor.detach().contiguous().clone()
        if src_data_rank is not None:
            for j in range(mesh.ndim):
                _broadcast_from(full, mesh, j, src_data_rank)
        local = redistribute_local(full, mesh, (Replicate(),) * mesh.ndim, placements,
                                   tensor.shape)
        if local is not full:   # a piece of `full`: keep only the piece's memory
            local = local.contiguous().clone()
    local = local.detach().requires_grad_(tensor.requires_grad)
    return DTensor._new(local, mesh, placements, tensor.shape)
