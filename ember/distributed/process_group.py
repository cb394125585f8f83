"""Process groups over MPI: `init_process_group`, ranks, `new_group`, `ReduceOp`.

The default group ("WORLD") is MPI_COMM_WORLD duplicated; `new_group(ranks)` makes an MPI
communicator over those ranks. Each group also keeps a second, private communicator (the
control channel) that its collectives use to diagnose a timeout: which ranks are missing
and where the others are (see work.py). Ranks given to collectives (`src`, `dst`) are global
ranks, as in torch; `group_src`/`group_dst` are ranks inside the group.

    import ember.distributed as dist
    dist.init_process_group("mpi")           # under mpiexec / python -m ember.distributed.run
    print(dist.get_rank(), dist.get_world_size())
"""
import enum
import os
from datetime import timedelta

from . import _mpi
from .debug import detail_enabled
from .work import GROUPS, Work

default_pg_timeout = timedelta(minutes=30)   # torch's default for CPU backends

_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


class ReduceOp:
    """Reduction operations for all_reduce, reduce, reduce_scatter (torch's names)."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


class Backend(str):
    """Backend names: only "mpi" here ("gloo" is accepted as an alias, for CPU code written
    for torch)."""
    UNDEFINED = "undefined"
    MPI = "mpi"
    GLOO = "gloo"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        value = name.lower()
        if value not in ("mpi", "gloo"):
            raise ValueError(f"Invalid backend: '{name}'. ember.distributed runs on MPI: "
                             "use backend='mpi'")
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of ranks that run collectives together (an MPI communicator).

    `ranks` are the members' global ranks, in group-rank order. `rank()` and `size()` are
    this process's rank in the group and the group's size, like torch's ProcessGroup."""

    def __init__(self, comm, ranks, timeout, name, backend="mpi"):
        self.comm = comm
        self.ctrl = comm.Dup()            # control channel for fault diagnosis (work.py)
        self.ranks = list(ranks)
        self.timeout = timeout
        self.group_name = name
        self.backend = backend
        self.seq = 0                      # collectives issued on this group (diagnostics)
        self.broken = None                # reason, once a collective failed
        self.failed_in = None             # (group, number, name, "failed") of that collective
        self.pending = []                 # control-channel sends (kept alive until exit)
        self.inflight = []                # posted Works not yet seen complete (work.py)
        self.left = {}                    # global rank -> reason: members that left with an error
        self.debug = detail_enabled()     # TORCH_DISTRIBUTED_DEBUG=DETAIL (debug.py)
        self._global_to_group = {g: i for i, g in enumerate(self.ranks)}
        GROUPS.append(self)

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return len(self.ranks)

    def name(self):
        return self.backend

    def group_rank(self, global_rank):
        """The rank inside this group of a global rank."""
        try:
            return self._global_to_group[global_rank]
        except KeyError:
            raise ValueError(f"Global rank {global_rank} is not part of group "
                             f"{self.group_name}") from None

    def global_rank(self, group_rank):
        if not 0 <= group_rank < len(self.ranks):
            raise ValueError(f"Group rank {group_rank} is not part of group "
                             f"{self.group_name}")
        return self.ranks[group_rank]

    def __repr__(self):
        return f"ProcessGroup({self.group_name}, ranks={self.ranks}, backend={self.backend})"


class _NonGroupMember:
    def __repr__(self):
        return "NON_GROUP_MEMBER"


class _WorldMeta(type):
    @property
    def WORLD(cls):
        return _state.world


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD`` is the default group (None before init);
    ``GroupMember.NON_GROUP_MEMBER`` is what `new_group` returns on ranks outside it."""
    NON_GROUP_MEMBER = _NonGroupMember()


class group(metaclass=_WorldMeta):
    """``group.WORLD``: the default process group (None before init)."""


class _State:
    world = None
    groups = []           # every group made by new_group, destroyed with the world
    counter = 0


_state = _State()


# ---- init ----

def _env_int(name):
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} is not an integer: {v!r}") from None


def _check(what, given, actual, source):
    if given is not None and given != -1 and given != actual:
        raise ValueError(f"init_process_group: {what}={given} ({source}) but MPI reports "
                         f"{what}={actual}. Launch with `mpiexec -n N` or `python -m "
                         "ember.distributed.run --nproc-per-node N`, which set both.")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group: one per process, over MPI_COMM_WORLD.

    Rank and world size come from MPI (mpiexec, or ``python -m ember.distributed.run``).
    `rank`/`world_size` arguments and the RANK/WORLD_SIZE environment variables are
    checked against MPI's. `timeout` (a timedelta, default 30 minutes) bounds every
    collective: a rank that waits longer raises RuntimeError naming the missing ranks.

        dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    """
    if _state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend("mpi" if backend is None else backend)
    if init_method not in (None, "env://"):
        raise ValueError(f"init_method {init_method!r} is not supported by the MPI backend: "
                         "MPI's launcher does the rendezvous (use None or 'env://')")
    if store is not None:
        raise ValueError("the MPI backend does not use a Store (MPI does the rendezvous)")
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{timeout}")
    MPI = _mpi.mpi()
    comm = MPI.COMM_WORLD
    size, me = comm.Get_size(), comm.Get_rank()
    _check("world_size", world_size, size, "argument")
    _check("rank", rank, me, "argument")
    _check("world_size", _env_int("WORLD_SIZE"), size, "WORLD_SIZE environment variable")
    _check("rank", _env_int("RANK"), me, "RANK environment variable")
    mpi_local = _env_int("OMPI_COMM_WORLD_LOCAL_RANK")
    if mpi_local is not None:
        _check("local rank", _env_int("LOCAL_RANK"), mpi_local, "LOCAL_RANK environment variable")
    world = ProcessGroup(comm.Dup(), range(size), timeout, group_name or "WORLD")
    _state.world = world
    _state.counter = 0


def is_available():
    """True when the MPI backend can be used (mpi4py is installed)."""
    return _mpi.available()


def is_mpi_available():
    return _mpi.available()


def is_gloo_available():
    return False


def is_nccl_available():
    return False


def is_initialized():
    return _state.world is not None


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _default_group():
    if _state.world is None:
        raise ValueError(_NOT_INIT)
    return _state.world


def resolve(group):
    """The ProcessGroup meant by a `group=` argument (None: the default group)."""
    world = _default_group()
    if group is None:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        return group
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if group.comm is None:
        raise ValueError("The given group has been destroyed")
    return group


def get_rank(group=None):
    """This process's rank in `group` (the default group if None); -1 if not a member."""
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    return pg.rank()


def get_world_size(group=None):
    """The number of ranks in `group`; -1 if this process is not a member."""
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    return pg.size()


def get_backend(group=None):
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_process_group_ranks(group):
    """The global ranks of a group's members, in group-rank order."""
    pg = resolve(group)
    return list(pg.ranks)


def get_global_rank(group, group_rank):
    return resolve(group).global_rank(group_rank)


def get_group_rank(group, global_rank):
    return resolve(group).group_rank(global_rank)


def _free(pg):
    """Forget a group and free its communicators (not after a failure: freeing a
    communicator with a collective still pending on it is erroneous in MPI)."""
    if pg in GROUPS:
        GROUPS.remove(pg)
    if pg.broken is None and not _mpi.mpi().Is_finalized():
        for c in (pg.ctrl, pg.comm):
            c.Free()
    pg.comm = pg.ctrl = None


def destroy_process_group(group=None):
    """Destroy `group`, or (None) the default group and every group made by new_group.
    Collectives on a destroyed group raise; init_process_group may be called again."""
    if group is None or group is _state.world:
        world = _default_group()
        for pg in _state.groups:
            if pg.comm is not None:
                _free(pg)
        _state.groups = []
        _free(world)
        _state.world = None
        return
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return
    if pg in _state.groups:
        _state.groups.remove(pg)
    _free(pg)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A process group over `ranks` (global ranks; None: all). Like torch, every rank of
    the default group must call it, members or not; non-members get
    ``GroupMember.NON_GROUP_MEMBER``.

        evens = dist.new_group([0, 2])
    """
    world = _default_group()
    if backend is not None:
        Backend(backend)
    size = world.size()
    if ranks is None:
        ranks = list(range(size))
    ranks = [int(r) for r in ranks]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must be distinct, got {ranks}")
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError(f"Invalid rank {r}, rank should be in the interval "
                             f"[0, {size - 1}]")
    if sort_ranks:
        ranks = sorted(ranks)
    if timeout is None:
        timeout = world.timeout
    # MPI_Comm_create is a blocking collective over the world: a deadline-guarded barrier
    # first, so a missing rank gives the usual timeout error instead of a hang.
    if world.broken is not None:
        raise RuntimeError(f"new_group: process group {world.group_name} is unusable after "
                           f"an earlier failure: {world.broken}")
    Work(world, "new_group", [world.comm.Ibarrier()]).wait()
    comm = world.comm.Create(world.comm.Get_group().Incl(ranks))
    _state.counter += 1
    if comm == _mpi.mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks, timeout, group_desc or f"group{_state.counter}")
    _state.groups.append(pg)
    return pg
