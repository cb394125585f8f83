"""Collectives on picklable Python objects: broadcast_object_list, all_gather_object,
gather_object, scatter_object_list (torch's names and in-place list semantics).

Objects travel as pickles, and unpickling runs arbitrary code: use these only between the
ranks of one job you trust (as torch says), never on data from outside. The bytes move
with the same deadline-bounded collectives as tensors: first the sizes, then the bytes.

    objs = [{"lr": 0.1}, "hello"] if dist.get_rank() == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)        # every rank now has rank 0's objects
"""
import pickle

import numpy as np

from . import _mpi
from .collectives import _group, _root
from .work import Work


def _dump(obj):
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _load(buf):
    return pickle.loads(buf.tobytes())


def _wait(pg, name, req):
    Work(pg, name, [req]).wait()


def _allgather_sizes(pg, name, n):
    mine = np.array([n], np.int64)
    sizes = np.empty(pg.size(), np.int64)
    MPI = _mpi.mpi()
    _wait(pg, name, pg.comm.Iallgather([mine, MPI.INT64_T], [sizes, MPI.INT64_T]))
    return [int(s) for s in sizes]


def _displs(sizes):
    return [int(d) for d in np.concatenate([[0], np.cumsum(sizes)[:-1]])]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace `object_list`'s items on every rank by rank `src`'s (default 0); the lists
    must have the same length everywhere."""
    pg = _group(group, "broadcast_object_list")
    if pg is None:
        return
    if src is None and group_src is None:
        src = 0
    root = _root(pg, src, group_src, "src")
    MPI = _mpi.mpi()
    me = pg.rank()
    blobs = [_dump(o) for o in object_list] if me == root else []
    sizes = np.array([b.size for b in blobs] if me == root else [0] * len(object_list),
                     np.int64)
    _wait(pg, "broadcast_object_list", pg.comm.Ibcast([sizes, MPI.INT64_T], root=root))
    data = np.concatenate(blobs) if blobs else np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, "broadcast_object_list", pg.comm.Ibcast([data, MPI.BYTE], root=root))
    if me != root:
        off = 0
        for i, s in enumerate(sizes):
            object_list[i] = _load(data[off:off + s])
            off += int(s)


def all_gather_object(object_list, obj, group=None):
    """Fill `object_list` (one slot per rank) with every rank's `obj`, on every rank."""
    pg = _group(group, "all_gather_object")
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have one slot per rank "
                         f"({pg.size()}), got {len(object_list)}")
    blob = _dump(obj)
    sizes = _allgather_sizes(pg, "all_gather_object", blob.size)
    data = np.empty(sum(sizes), np.uint8)
    MPI = _mpi.mpi()
    _wait(pg, "all_gather_object",
          pg.comm.Iallgatherv([blob, MPI.BYTE], [data, sizes, _displs(sizes), MPI.BYTE]))
    for i, (off, s) in enumerate(zip(_displs(sizes), sizes)):
        object_list[i] = _load(data[off:off + s])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gather every rank's `obj` into `object_gather_list` on rank `dst` (default 0);
    other ranks pass None."""
    pg = _group(group, "gather_object")
    if pg is None:
        return
    if dst is None and group_dst is None:
        dst = 0
    root = _root(pg, dst, group_dst, "dst")
    me = pg.rank()
    if me == root:
        if object_gather_list is None or len(object_gather_list) != pg.size():
            raise ValueError("Argument ``object_gather_list`` must be a list of one slot "
                             "per rank on the destination rank.")
    elif object_gather_list is not None:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    blob = _dump(obj)
    MPI = _mpi.mpi()
    sizes = np.empty(pg.size(), np.int64)
    mine = np.array([blob.size], np.int64)
    _wait(pg, "gather_object", pg.comm.Igather([mine, MPI.INT64_T],
                                               [sizes, MPI.INT64_T] if me == root else None,
                                               root=root))
    if me == root:
        sz = [int(s) for s in sizes]
        data = np.empty(sum(sz), np.uint8)
        _wait(pg, "gather_object", pg.comm.Igatherv([blob, MPI.BYTE],
                                                    [data, sz, _displs(sz), MPI.BYTE], root))
        for i, (off, s) in enumerate(zip(_displs(sz), sz)):
            object_gather_list[i] = _load(data[off:off + s])
    else:
        _wait(pg, "gather_object", pg.comm.Igatherv([blob, MPI.BYTE], None, root))


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Rank i receives `scatter_object_input_list[i]` (given on `src`, default 0) as
    ``scatter_object_output_list[0]``."""
    pg = _group(group, "scatter_object_list")
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    if src is None and group_src is None:
        src = 0
    root = _root(pg, src, group_src, "src")
    MPI = _mpi.mpi()
    me = pg.rank()
    if me == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError("scatter_object_input_list must have one object per rank on the "
                             "source rank")
        blobs = [_dump(o) for o in scatter_object_input_list]
        sz = [b.size for b in blobs]
        sizes = np.array(sz, np.int64)
    else:
        sizes = None
    mine = np.empty(1, np.int64)
    _wait(pg, "scatter_object_list",
          pg.comm.Iscatter([sizes, MPI.INT64_T] if me == root else None,
                           [mine, MPI.INT64_T], root=root))
    data = np.empty(int(mine[0]), np.uint8)
    send = [np.concatenate(blobs), sz, _displs(sz), MPI.BYTE] if me == root else None
    _wait(pg, "scatter_object_list", pg.comm.Iscatterv(send, [data, MPI.BYTE], root))
    scatter_object_output_list[0] = _load(data)
