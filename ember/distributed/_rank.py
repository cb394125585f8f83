"""What each process started by ``python -m ember.distributed.run`` runs first: it sets
torchrun's environment variables from Open MPI's placement, runs the user's script (or
``-m module``) as ``__main__``, and records its exit status for the launcher.

If the script fails (or a collective failed), the process first tells the other ranks it
is leaving and why (so those waiting for it raise at once, see work.announce_exit), then
leaves with os._exit and its status, skipping MPI_Finalize, which could wait forever for a
missing peer (see _mpi.py).
"""
import os
import runpy
import sys
import time
import traceback


def set_env():
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK from mpiexec's variables."""
    e = os.environ
    rank = int(e["OMPI_COMM_WORLD_RANK"])
    e["RANK"] = str(rank)
    e["WORLD_SIZE"] = e["OMPI_COMM_WORLD_SIZE"]
    e["LOCAL_RANK"] = e.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    local = int(e.get("EMBER_LOCAL_WORLD_SIZE") or e.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    e["LOCAL_WORLD_SIZE"] = str(local)
    e["GROUP_RANK"] = str(rank // local)
    e["NODE_RANK"] = e["GROUP_RANK"]
    return rank


def _record(rank, code):
    """Leave "<status> <time>" for the launcher (which reports the earliest failure)."""
    d = os.environ.get("EMBER_RANK_STATUS_DIR")
    if d and os.path.isdir(d):
        with open(os.path.join(d, f"rank{rank}"), "w") as f:
            f.write(f"{code} {time.time()!r}")


def main(argv):
    if "OMPI_COMM_WORLD_RANK" not in os.environ:
        raise SystemExit("ember.distributed._rank runs under mpiexec: use "
                         "python -m ember.distributed.run")
    rank = set_env()
    module = argv[0] == "-m"
    target = argv[1] if module else argv[0]
    rest = argv[2:] if module else argv[1:]
    sys.argv = [target] + rest
    code, reason = 0, None
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        reason = f"it exited with status {code}"
    except BaseException as e:
        traceback.print_exc()
        code = 1
        reason = f"it raised {type(e).__name__}: {e}"
    sys.stdout.flush()
    sys.stderr.flush()
    _record(rank, code)
    from . import _mpi
    if _mpi._MPI is not None and (code or _mpi._broken):
        _mpi.leave(_mpi._broken[0] if _mpi._broken else reason, code)
    if code:
        _mpi.hard_exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
