"""The cross-rank consistency check of ``TORCH_DISTRIBUTED_DEBUG=DETAIL``.

Before each collective, every rank contributes a fingerprint of its call (the collective's
name, shapes, dtypes, op and root) to a small all-gather. If they differ, every rank
raises the same RuntimeError listing what each rank called, before any data moves (without
the check, MPI may mis-deliver or only sometimes notice). It costs one extra latency-bound
all-gather per collective, so it is off by default, like torch's.

    TORCH_DISTRIBUTED_DEBUG=DETAIL python -m ember.distributed.run --nproc-per-node 2 train.py
"""
import os
import zlib

import numpy as np

from . import _mpi


def detail_enabled():
    """Whether TORCH_DISTRIBUTED_DEBUG=DETAIL is set (read when a group is created)."""
    return os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper() == "DETAIL"


def check_consistent(pg, name, meta):
    """Raise RuntimeError on every rank unless all ranks pass the same (name, meta)."""
    from .work import Work
    desc = f"{name}{meta!r}"
    mine = np.array([zlib.crc32(desc.encode())], np.int64)
    every = np.empty(pg.size(), np.int64)
    MPI = _mpi.mpi()
    req = pg.comm.Iallgather([mine, MPI.INT64_T], [every, MPI.INT64_T])
    Work(pg, f"{name} (TORCH_DISTRIBUTED_DEBUG=DETAIL check)", [req]).wait()
    if (every == every[0]).all():
        return
    # every rank is here (the all-gather completed), so a blocking exchange cannot hang
    calls = pg.comm.allgather(desc)
    lines = "; ".join(f"rank {pg.ranks[r]}: {c}" for r, c in enumerate(calls))
    msg = (f"ember.distributed: mismatched collectives on process group {pg.group_name} "
           f"(detected by TORCH_DISTRIBUTED_DEBUG=DETAIL): {lines}")
    raise RuntimeError(msg)
