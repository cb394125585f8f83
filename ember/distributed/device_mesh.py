"""DeviceMesh: the ranks of a job arranged as an n-d array, one process group per mesh dim.

    mesh = init_device_mesh("cpu", (2,))                          # 1-D: ranks [0, 1]
    mesh2 = init_device_mesh("cpu", (1, 2), mesh_dim_names=("dp", "tp"))
    mesh2["tp"]                  # the 1-D sub-mesh along "tp" that holds this rank
    mesh2.get_group("tp")        # the ProcessGroup of this rank's "tp" row
    mesh2.get_local_rank("tp")   # this rank's index along "tp"

torch's semantics: constructing a mesh is collective (every rank of the world runs it, with
the same arguments), because each mesh dimension creates its groups through ``new_group``,
which every rank enters for every group, in the same order. Slicing (``mesh["tp"]``) is
local: a sub-mesh reuses its parent's groups. The process group is initialised on first use
if the program has not done it (like torch's ``init_device_mesh``).
"""
import numpy as np

from . import process_group as _pg
from ..core.tensor import Tensor
from ..ops.creation import tensor as _tensor

__all__ = ["DeviceMesh", "init_device_mesh"]

_mesh_stack = []   # meshes entered with `with mesh:` (the default mesh of DTensor calls)


def _current_mesh():
    if not _mesh_stack:
        raise RuntimeError("No device mesh is currently active!")
    return _mesh_stack[-1]


def _check_device_type(device_type):
    if not isinstance(device_type, str) or not device_type.isalpha():
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. "
                           "If you maintained a 'torch.device' object, it's recommended to "
                           "pass in 'device.type'.")


class DeviceMesh:
    """An n-d array of global ranks; each mesh dimension has its own process groups.

    Args:
        device_type (str): ``"cpu"`` (the local tensors' device type).
        mesh: the global ranks as a nested list, NumPy array or integer Tensor; its shape
            is the mesh's shape.
        mesh_dim_names (tuple of str, optional): a name per mesh dimension, for
            ``mesh["name"]`` and ``get_group("name")``.

    >>> mesh = DeviceMesh("cpu", [[0, 1]], mesh_dim_names=("dp", "tp"))
    >>> mesh.shape, mesh["tp"].size()
    ((1, 2), 2)
    """

    def __init__(self, device_type, mesh, *, mesh_dim_names=None, _init_backend=True,
                 _groups=None):
        _check_device_type(device_type)
        if isinstance(mesh, Tensor):
            mesh = mesh.numpy()
        ranks = np.array(mesh, dtype=np.int64)
        if ranks.ndim == 0:
            raise ValueError("DeviceMesh mesh must have at least one dimension")
        if len(set(ranks.ravel().tolist())) != ranks.size:
            raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found "
                               f"{ranks.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError("Each mesh_dim_name must be unique. Found repeated "
                                   f"mesh_dim_name in mesh_dim_names {mesh_dim_names}")
            if len(mesh_dim_names) != ranks.ndim:
                raise RuntimeError("mesh_shape and mesh_dim_names should have same length! "
                                   f"Found len(mesh_dim_names): {len(mesh_dim_names)} and "
                                   f"len(mesh_shape):{ranks.ndim}.")
        self._device_type = device_type
        self._ranks = ranks
        self._mesh_dim_names = mesh_dim_names
        if not _pg.is_initialized():
            _pg.init_process_group()
        world = _pg.get_world_size()
        if ranks.min() < 0 or ranks.max() >= world:
            raise RuntimeError(f"Mesh should not be bigger than default world size {world}, "
                               f"but found ranks {ranks.tolist()}!")
        self._rank = _pg.get_rank()
        where = np.argwhere(ranks == self._rank)
        self._coordinate = tuple(int(c) for c in where[0]) if len(where) else None
        # one group per mesh dim (this rank's); sub-meshes are handed their parent's
        self._groups = _groups if _groups is not None else self._new_groups()

    def _new_groups(self):
        """For each mesh dim, every 1-D slice along it becomes a group (all ranks call
        new_group for each slice, in the same order); this rank keeps the one it is in."""
        mine = []
        for d in range(self._ranks.ndim):
            rows = np.moveaxis(self._ranks, d, -1).reshape(-1, self._ranks.shape[d])
            kept = None
            for row in rows:
                g = _pg.new_group(row.tolist(), sort_ranks=False)   # group rank = mesh index
                if self._rank in row:
                    kept = g
            mine.append(kept)
        return tuple(mine)

    # ---- metadata ----
    @property
    def device_type(self):
        return self._device_type

    @property
    def mesh(self):
        """The global ranks as an int64 Tensor of the mesh's shape."""
        return _tensor(self._ranks.tolist())

    @property
    def mesh_dim_names(self):
        return self._mesh_dim_names

    @property
    def ndim(self):
        return self._ranks.ndim

    @property
    def shape(self):
        return tuple(self._ranks.shape)

    def size(self, mesh_dim=None):
        """The number of ranks in the mesh, or along `mesh_dim`."""
        if mesh_dim is None:
            return int(self._ranks.size)
        return int(self._ranks.shape[self._dim(mesh_dim)])

    def get_rank(self):
        """This process's global rank."""
        return self._rank

    def get_coordinate(self):
        """This rank's index along every mesh dim, or None when the rank is not in the mesh."""
        return self._coordinate

    def get_local_rank(self, mesh_dim=None):
        """This rank's index along `mesh_dim` (required when the mesh is n-d)."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional "
                               "kwarg `mesh_dim` needs to be specified when "
                               "device_mesh.ndim > 1.")
        self._require_member()
        return self._coordinate[self._dim(mesh_dim or 0)]

    def get_group(self, mesh_dim=None):
        """The ProcessGroup of this rank along `mesh_dim` (required when the mesh is n-d)."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional "
                               "kwarg `mesh_dim` needs to be specified when "
                               "device_mesh.ndim > 1. If you want to get the list of all the "
                               "ProcessGroups in the DeviceMesh, please use "
                               "`get_all_groups()` instead.")
        self._require_member()
        return self._groups[self._dim(mesh_dim or 0)]

    def get_all_groups(self):
        """This rank's ProcessGroup of every mesh dim, in order."""
        self._require_member()
        return list(self._groups)

    def _dim(self, mesh_dim):
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names:
                raise KeyError("No `mesh_dim_names` found.")
            if mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        if not isinstance(mesh_dim, int) or not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"mesh_dim {mesh_dim!r} out of range for a {self.ndim}-D mesh")
        return mesh_dim % self.ndim

    def _require_member(self):
        if self._coordinate is None:
            raise RuntimeError(f"rank {self._rank} is not part of the DeviceMesh "
                               f"{self._ranks.tolist()}")

    # ---- slicing ----
    def __getitem__(self, mesh_dim_names):
        """The sub-mesh of the named dims that holds this rank (no communication)."""
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if names == self._mesh_dim_names:
            return self
        if not all(n in self._mesh_dim_names for n in names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names "
                           f"are {list(self._mesh_dim_names)}.")
        dims = [self._mesh_dim_names.index(n) for n in names]
        if dims != sorted(dims) or len(set(dims)) != len(dims):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Mesh dim indices "
                           "should be in ascending order.")
        self._require_member()
        index = tuple(slice(None) if d in dims else c for d, c in enumerate(self._coordinate))
        sub = DeviceMesh.__new__(DeviceMesh)
        sub._device_type = self._device_type
        sub._ranks = self._ranks[index]
        sub._mesh_dim_names = names
        sub._rank = self._rank
        sub._coordinate = tuple(self._coordinate[d] for d in dims)
        sub._groups = tuple(self._groups[d] for d in dims)
        return sub

    # ---- the default mesh of DTensor calls ----
    def __enter__(self):
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.pop()

    def __eq__(self, other):
        return (self is other or isinstance(other, DeviceMesh)
                and self._device_type == other._device_type
                and self._mesh_dim_names == other._mesh_dim_names
                and np.array_equal(self._ranks, other._ranks))

    def __hash__(self):
        return hash((self._device_type, self._mesh_dim_names, self._ranks.shape,
                     tuple(self._ranks.ravel().tolist())))

    def __deepcopy__(self, memo):
        return self   # a mesh names communicators; copying a module keeps its mesh

    def __repr__(self):
        sizes = self.shape
        if self._mesh_dim_names:
            sizes = "(" + ", ".join(f"{n}={s}" for n, s in zip(self._mesh_dim_names, sizes)) + ")"
        return f"DeviceMesh({sizes}, '{self._device_type}', mesh={self._ranks.tolist()})"


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None):
    """A DeviceMesh of shape `mesh_shape` over ranks ``0 .. prod(mesh_shape) - 1`` (row-major),
    initialising the default process group first if needed. Collective: every rank calls it
    (ranks beyond the mesh too: their ``get_coordinate()`` is None).

    >>> mesh = init_device_mesh("cpu", (1, 2), mesh_dim_names=("dp", "tp"))
    >>> mesh["tp"].get_local_rank()          # this rank's index along "tp"
    """
    _check_device_type(device_type)
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None:
        mesh_dim_names = tuple(mesh_dim_names)
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError("Each mesh_dim_name must be unique. Found repeated "
                               f"mesh_dim_name in mesh_dim_names {mesh_dim_names}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError("mesh_shape and mesh_dim_names should have same length! "
                               f"Found len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{len(mesh_shape)}.")
    if not _pg.is_initialized():
        _pg.init_process_group()
    n = int(np.prod(mesh_shape)) if mesh_shape else 0
    world = _pg.get_world_size()
    if n > world:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but "
                           f"found {n} ranks!")
    return DeviceMesh(device_type, np.arange(n).reshape(mesh_shape),
                      mesh_dim_names=mesh_dim_names)
