"""Tensor collectives and point-to-point messages, in place, over MPI (torch's names).

Each call posts a non-blocking MPI operation whose buffers are the tensors' own NumPy
arrays (zero-copy); a non-contiguous tensor goes through a contiguous copy that is copied
back. List arguments (all_gather's `tensor_list`, ...) go through one packed buffer.
float16 and bfloat16 are reduced in float32 (MPI has no such types). With
``async_op=True`` the call returns a `Work` to wait on; otherwise it waits (within the
group's timeout, see work.py) and returns None.

    dist.all_reduce(t)                         # sum over ranks, in place
    w = dist.all_reduce(g, op=dist.ReduceOp.AVG, async_op=True); ...; w.wait()

Checked on every rank before any data moves, when ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: that
all ranks call the same collective with the same shapes, dtypes and root (one extra small
all-gather per call, see debug.py). By default only the local arguments are checked (list
lengths, sizes that must agree within this rank); a cross-rank mismatch is then MPI's
undefined behaviour (often an MPI error on one rank and a timeout on the others).
"""
import warnings

import numpy as np

from ..core.tensor import Tensor
from . import _mpi
from .debug import check_consistent
from .process_group import GroupMember, ReduceOp, resolve, _state
from .work import Work


# ---- argument helpers ----

def _group(group, name):
    """The group to run on, or None (with torch's warning) when this rank is not in it."""
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        world = _state.world
        warnings.warn(f"Running {name} on global rank {world.rank()} which does not belong "
                      "to the given group.", stacklevel=3)
        return None
    if pg.broken is not None:
        raise RuntimeError(f"{name}: process group {pg.group_name} is unusable after an "
                           f"earlier failure: {pg.broken}")
    return pg


def _tensor(t, param):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"torch.Tensor but got {type(t)} instead.")
    return t._data


def _tensors(ts, param):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        "List[torch.Tensor] but got {type(ts)} instead.")
    return [t._data for t in ts]


def _root(pg, glob, grp, what):
    """A group rank from either a global rank (`src`/`dst`) or a group rank."""
    if grp is not None:
        if glob is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        pg.global_rank(grp)
        return grp
    if glob is None:
        raise ValueError("Must specify global_rank or group_rank")
    return pg.group_rank(glob)


def _writable(t):
    """(contiguous array to receive into, function that copies it back into t)."""
    arr = t._data
    if arr.flags.c_contiguous:
        return arr, t._bump_version

    buf = np.ascontiguousarray(arr)

    def back():
        arr[...] = buf
        t._bump_version()
    return buf, back


def _readable(arr):
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)


def _move(arr):
    """An MPI buffer spec for moving (not reducing) a contiguous array of any dtype."""
    mt = _mpi.mpi_type(arr)
    return [arr, mt] if mt is not None else _mpi.byte_buffer(arr)


def _same_dtype(arrays, name):
    dts = {a.dtype for a in arrays}
    if len(dts) > 1:
        raise RuntimeError(f"{name}: all tensors must have the same dtype, got "
                           f"{sorted(str(d) for d in dts)}")


_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.PRODUCT: "LAND", ReduceOp.MIN: "LAND",
             ReduceOp.MAX: "LOR", ReduceOp.BAND: "LAND", ReduceOp.BOR: "LOR",
             ReduceOp.BXOR: "LXOR"}
_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
            ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


def _reduction(arr, op, n, name):
    """(array MPI reduces, MPI op, function finishing the result into `arr`, or None).

    float16/bfloat16 reduce through a float32 copy; AVG is a SUM then a division by the
    group size; bool uses the logical ops."""
    MPI = _mpi.mpi()
    if not isinstance(op, ReduceOp.RedOpType):
        raise ValueError(f"{name}: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, BAND, "
                         f"BOR, BXOR), got {op!r}")
    mt = _mpi.TYPES.get(arr.dtype)
    if mt is not None and op is ReduceOp.SUM and arr.dtype != np.bool_:
        return [arr, mt], MPI.SUM, None                  # the common case: nothing to finish
    work = arr if mt is not None else arr.astype(np.float32)
    floating = work.dtype.kind == "f"
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise RuntimeError(f"{name}: Cannot use ReduceOp.{op.name} with floating point "
                           f"dtype {arr.dtype}")
    if work.dtype == np.bool_:
        if op is ReduceOp.AVG:
            raise RuntimeError(f"{name}: Cannot use ReduceOp.AVG with bool tensors")
        mop = getattr(MPI, _BOOL_OPS[op])
    else:
        mop = getattr(MPI, _MPI_OPS[op])
    if op is not ReduceOp.AVG and work is arr:
        return [work, _mpi.TYPES[work.dtype]], mop, None

    def finish():
        if op is ReduceOp.AVG:
            if floating:
                np.divide(work, n, out=work)
            else:   # integer AVG truncates toward zero (like NCCL's)
                work[...] = np.trunc(work / n)
        if work is not arr:
            arr[...] = work
    return [work, _mpi.TYPES[work.dtype]], mop, finish


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _chain(*fns):
    fns = [f for f in fns if f is not None]
    if len(fns) <= 1:
        return fns[0] if fns else None

    def run():
        for f in fns:
            f()
    return run


def _meta(arr):
    return (tuple(arr.shape), str(arr.dtype))


# ---- collectives ----

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over all ranks of the group, in place on every rank.

        t = ember.ones(3) * (dist.get_rank() + 1); dist.all_reduce(t)   # 1+2+... everywhere
    """
    _tensor(tensor, "tensor")
    pg = _group(group, "all_reduce")
    if pg is None:
        return None
    buf, back = _writable(tensor)
    if pg.debug:
        check_consistent(pg, "all_reduce", (_meta(buf), int(op)))
    red, mop, fin = _reduction(buf, op, pg.size(), "all_reduce")
    req = pg.comm.Iallreduce(_mpi.mpi().IN_PLACE, red, mop)
    return _run(Work(pg, "all_reduce", [req], _chain(fin, back), [tensor]), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy `tensor` from rank `src` (a global rank) to every rank, in place."""
    _tensor(tensor, "tensor")
    pg = _group(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    buf, back = _writable(tensor)
    if pg.debug:
        check_consistent(pg, "broadcast", (_meta(buf), root))
    req = pg.comm.Ibcast(_move(buf), root=root)
    return _run(Work(pg, "broadcast", [req], back, [tensor]), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` over all ranks into rank `dst`'s tensor (others' are unchanged)."""
    _tensor(tensor, "tensor")
    pg = _group(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    buf, back = _writable(tensor)
    if pg.debug:
        check_consistent(pg, "reduce", (_meta(buf), int(op), root))
    red, mop, fin = _reduction(buf, op, pg.size(), "reduce")
    MPI = _mpi.mpi()
    if pg.rank() == root:
        req = pg.comm.Ireduce(MPI.IN_PLACE, red, mop, root=root)
        finish = _chain(fin, back)
    else:
        req = pg.comm.Ireduce(red, None, mop, root=root)
        finish = None
    return _run(Work(pg, "reduce", [req], finish, [tensor]), async_op)


def _unpack(packed, arrays, outs):
    """Copy a packed 1-D buffer into the output tensors (a list finish function)."""
    def finish():
        off = 0
        for a, t in zip(arrays, outs):
            n = a.size
            a[...] = packed[off:off + n].reshape(a.shape)
            off += n
            t._bump_version()
    return finish


def _pack(arrays, dtype):
    if not arrays:
        return np.empty(0, dtype)
    return np.concatenate([a.reshape(-1) for a in arrays])


def _counted(buf, counts):
    """A vector MPI buffer spec [buf, counts, displacements, type] (bytes if needed)."""
    counts = [int(c) for c in counts]
    displs = [int(d) for d in np.concatenate([[0], np.cumsum(counts)[:-1]])] if counts else []
    mt = _mpi.mpi_type(buf)
    if mt is None:
        k = buf.dtype.itemsize
        return [buf.reshape(-1).view(np.uint8), [c * k for c in counts],
                [d * k for d in displs], _mpi.mpi().BYTE]
    return [buf, counts, displs, mt]


def _list_len(arrays, n, name, param):
    if len(arrays) != n:
        raise ValueError(f"{name}: `{param}` must have one tensor per rank of the group "
                         f"({n}), got {len(arrays)}")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather `tensor` from every rank into `tensor_list` (one tensor per rank), everywhere.
    The ranks' tensors may differ in size if `tensor_list` says so."""
    arr = _tensor(tensor, "tensor")
    outs = _tensors(tensor_list, "tensor_list")
    pg = _group(group, "all_gather")
    if pg is None:
        return None
    _list_len(outs, pg.size(), "all_gather", "tensor_list")
    _same_dtype(outs + [arr], "all_gather")
    if outs[pg.rank()].size != arr.size:
        raise RuntimeError(f"all_gather: this rank's tensor has {arr.size} elements but "
                           f"tensor_list[{pg.rank()}] has {outs[pg.rank()].size}")
    if pg.debug:
        check_consistent(pg, "all_gather", ([_meta(o) for o in outs],))
    packed = np.empty(sum(o.size for o in outs), arr.dtype)
    src = _readable(arr)
    req = pg.comm.Iallgatherv(_move(src), _counted(packed, [o.size for o in outs]))
    return _run(Work(pg, "all_gather", [req], _unpack(packed, outs, tensor_list),
                     list(tensor_list)), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's `input_tensor` into `output_tensor`, stacked or concatenated
    along dim 0 (its size is world_size times the input's)."""
    out = _tensor(output_tensor, "output_tensor")
    arr = _tensor(input_tensor, "input_tensor")
    pg = _group(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _same_dtype([out, arr], "all_gather_into_tensor")
    if out.size != arr.size * pg.size():
        raise ValueError("all_gather_into_tensor: output tensor size must be equal to "
                         f"world_size ({pg.size()}) times input tensor size ({arr.size}), "
                         f"got {out.size}")
    if pg.debug:
        check_consistent(pg, "all_gather_into_tensor", (_meta(arr),))
    buf, back = _writable(output_tensor)
    req = pg.comm.Iallgather(_move(_readable(arr)), _move(buf))
    return _run(Work(pg, "all_gather_into_tensor", [req], back, [output_tensor]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input_list[i]` over all ranks into rank i's `output`."""
    _tensor(output, "output")
    ins = _tensors(input_list, "input_list")
    pg = _group(group, "reduce_scatter")
    if pg is None:
        return None
    _list_len(ins, pg.size(), "reduce_scatter", "input_list")
    _same_dtype(ins + [output._data], "reduce_scatter")
    if ins[pg.rank()].size != output._data.size:
        raise RuntimeError(f"reduce_scatter: output has {output._data.size} elements but "
                           f"input_list[{pg.rank()}] has {ins[pg.rank()].size}")
    if pg.debug:
        check_consistent(pg, "reduce_scatter", ([_meta(i) for i in ins], int(op)))
    buf, back = _writable(output)
    packed = _pack(ins, buf.dtype)
    red_in, mop, _ = _reduction(packed, op, pg.size(), "reduce_scatter")
    red_out, _, fin = _reduction(buf, op, pg.size(), "reduce_scatter")
    req = pg.comm.Ireduce_scatter(red_in, red_out, [i.size for i in ins], mop)
    return _run(Work(pg, "reduce_scatter", [req], _chain(fin, back), [output]), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` over all ranks and give rank i the i-th chunk (along dim 0)."""
    _tensor(output, "output")
    arr = _tensor(input, "input")
    pg = _group(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    _same_dtype([arr, output._data], "reduce_scatter_tensor")
    if arr.size != output._data.size * pg.size():
        raise ValueError("reduce_scatter_tensor: input tensor must be the same size as "
                         f"output size ({output._data.size}) times world size "
                         f"({pg.size()}), got {arr.size}")
    if pg.debug:
        check_consistent(pg, "reduce_scatter_tensor", (_meta(arr), int(op)))
    buf, back = _writable(output)
    red_in, mop, _ = _reduction(_readable(arr), op, pg.size(), "reduce_scatter_tensor")
    red_out, _, fin = _reduction(buf, op, pg.size(), "reduce_scatter_tensor")
    req = pg.comm.Ireduce_scatter_block(red_in, red_out, mop)
    return _run(Work(pg, "reduce_scatter_tensor", [req], _chain(fin, back), [output]),
                async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send `input_tensor_list[i]` to rank i; receive rank i's into `output_tensor_list[i]`."""
    outs = _tensors(output_tensor_list, "output_tensor_list")
    ins = _tensors(input_tensor_list, "input_tensor_list")
    pg = _group(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    _list_len(outs, n, "all_to_all", "output_tensor_list")
    _list_len(ins, n, "all_to_all", "input_tensor_list")
    _same_dtype(outs + ins, "all_to_all")
    if pg.debug:
        check_consistent(pg, "all_to_all", (str(ins[0].dtype),))
    dtype = ins[0].dtype if ins else outs[0].dtype
    send = _pack(ins, dtype)
    recv = np.empty(sum(o.size for o in outs), dtype)
    req = pg.comm.Ialltoallv(_counted(send, [i.size for i in ins]),
                             _counted(recv, [o.size for o in outs]))
    return _run(Work(pg, "all_to_all", [req], _unpack(recv, outs, output_tensor_list),
                     list(output_tensor_list)), async_op)


def _splits(arr, sizes, n, name, param):
    rows = arr.shape[0] if arr.ndim else 1
    row = arr.size // rows if rows else 0
    if sizes is None:
        if rows % n:
            raise ValueError(f"{name}: the size of dim 0 ({rows}) must be divisible by the "
                             f"group size ({n}) when `{param}` is not given")
        sizes = [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(f"{name}: `{param}` must have {n} entries summing to dim 0's size "
                         f"({rows}), got {sizes}")
    return [s * row for s in sizes]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split `input` along dim 0, send piece i to rank i, and concatenate what arrives into
    `output` (split sizes default to equal pieces)."""
    _tensor(output, "output")
    arr = _tensor(input, "input")
    pg = _group(group, "all_to_all_single")
    if pg is None:
        return None
    n = pg.size()
    _same_dtype([arr, output._data], "all_to_all_single")
    scounts = _splits(arr, input_split_sizes, n, "all_to_all_single", "input_split_sizes")
    buf, back = _writable(output)
    rcounts = _splits(buf, output_split_sizes, n, "all_to_all_single", "output_split_sizes")
    if pg.debug:
        check_consistent(pg, "all_to_all_single", (str(arr.dtype),))
    req = pg.comm.Ialltoallv(_counted(_readable(arr), scounts), _counted(buf, rcounts))
    return _run(Work(pg, "all_to_all_single", [req], back, [output]), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gather every rank's `tensor` into `gather_list` on rank `dst` (None elsewhere)."""
    arr = _tensor(tensor, "tensor")
    pg = _group(group, "gather")
    if pg is None:
        return None
    root = _root(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    src = _readable(arr)
    if pg.debug:
        check_consistent(pg, "gather", (_meta(arr), root))
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        outs = _tensors(gather_list, "gather_list")
        _list_len(outs, pg.size(), "gather", "gather_list")
        _same_dtype(outs + [arr], "gather")
        packed = np.empty(sum(o.size for o in outs), arr.dtype)
        req = pg.comm.Igatherv(_move(src), _counted(packed, [o.size for o in outs]), root)
        return _run(Work(pg, "gather", [req], _unpack(packed, outs, gather_list),
                         list(gather_list)), async_op)
    if gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    req = pg.comm.Igatherv(_move(src), None, root)
    return _run(Work(pg, "gather", [req]), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Send `scatter_list[i]` from rank `src` to rank i's `tensor`."""
    _tensor(tensor, "tensor")
    pg = _group(group, "scatter")
    if pg is None:
        return None
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "src")
    buf, back = _writable(tensor)
    if pg.debug:
        check_consistent(pg, "scatter", (_meta(buf), root))
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        ins = _tensors(scatter_list, "scatter_list")
        _list_len(ins, pg.size(), "scatter", "scatter_list")
        _same_dtype(ins + [buf], "scatter")
        packed = _pack(ins, buf.dtype)
        req = pg.comm.Iscatterv(_counted(packed, [i.size for i in ins]), _move(buf), root)
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on "
                             "non-source ranks.")
        req = pg.comm.Iscatterv(None, _move(buf), root)
    return _run(Work(pg, "scatter", [req], back, [tensor]), async_op)


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group reaches the barrier (within the timeout)."""
    pg = _group(group, "barrier")
    if pg is None:
        return None
    work = Work(pg, "barrier", [pg.comm.Ibarrier()])
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that names the ranks that did not reach it within `timeout` (default: the
    group's) in its RuntimeError. (Every ember collective reports missing ranks this way.)"""
    pg = _group(group, "monitored_barrier")
    if pg is None:
        return None
    Work(pg, "monitored_barrier", [pg.comm.Ibarrier()]).wait(timeout)
    return None
