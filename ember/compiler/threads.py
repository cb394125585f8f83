"""Thread settings (PyTorch's API): ember.set_num_threads(n) / ember.get_num_threads().

The value is the OpenMP thread count generated C kernels are called with (build.KernelFn reads
`_num_threads` at every call, so a change applies to kernels already built) and NumPy's BLAS
thread count, set through threadpoolctl (a runtime dependency: without it OpenBLAS kept its own
thread count and `set_num_threads(1)` did not hold under contention). The default is
$OMP_NUM_THREADS when set, else the CPUs this process may run on.

The same count sizes ember/core/parallel.py's teams: big eager NumPy calls, and big kernel
calls (`split_call`, which build.KernelFn calls), run as chunks that threads claim, so that a
thread whose core another process holds cannot stall the call at a barrier. Calls below
2 * `parallel.MIN_ELEMENTS` elements, and kernels whose rows cannot be split (a few rows
with reductions), keep the kernel's own OpenMP loop (which itself stays on one thread below
codegen_c.PARALLEL_MIN_ELEMENTS).
"""
import ctypes
import os

from ..core import parallel


def _default():
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_num_threads = _default()
_num_interop_threads = _num_threads
parallel.set_threads(_num_threads)


def _positive(n, name):
    n = int(n)
    if n < 1:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(n):
    """Set the threads used by compiled kernels and by BLAS (matmul)."""
    global _num_threads
    _num_threads = n = _positive(n, "set_num_threads")
    parallel.set_threads(n)
    from threadpoolctl import threadpool_limits
    threadpool_limits(n, user_api="blas")


def get_num_threads():
    """The threads used by compiled kernels and BLAS."""
    return _num_threads


def set_num_interop_threads(n):
    """Recorded only: ember runs no inter-op thread pool."""
    global _num_interop_threads
    _num_interop_threads = _positive(n, "set_num_interop_threads")


def get_num_interop_threads():
    return _num_interop_threads


_ITEMSIZE = {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "bool": 1}


def split_call(fn, kernel, R, N, ptrs, st):
    """Run C kernel `fn` (signature of codegen_c.generate_function) over (R, N) as chunks of
    rows (or, for one long row of a kernel without reductions, chunks of it) on
    parallel.run's team, each chunk one call with nthreads=1. Returns False (nothing run)
    when the call is too small or cannot be split: the caller then runs it whole. Rows are
    independent in every generated kernel, so the result is the one-call result."""
    team = parallel.team_for(R * N)
    if team <= 1:
        return False
    ins, outs = kernel.inputs, kernel.outputs
    n_in = len(ins)
    if R >= 2 * team:
        # element (r0, 0) of each operand: inputs advance by their outer stride, outputs by
        # a row (N elements, or one per-row value)
        steps = [(0 if inp.outer == "zero" else 1 if inp.outer == "one" else st[2 * i])
                 * _ITEMSIZE[inp.dtype] for i, inp in enumerate(ins)]
        steps += [(1 if o.per_row else N) * _ITEMSIZE[o.dtype] for o in outs]
        parts = parallel.bounds(R, team)

        def chunk(c):
            lo, hi = parts[c]
            fn(hi - lo, N, type_ptrs(*[p + lo * s for p, s in zip(ptrs, steps)]), st, 1)
    elif R == 1 and not kernel.reductions and not any(o.per_row for o in outs):
        steps = [(0 if inp.inner == "zero" else 1 if inp.inner == "one" else st[2 * i + 1])
                 * _ITEMSIZE[inp.dtype] for i, inp in enumerate(ins)]
        steps += [_ITEMSIZE[o.dtype] for o in outs]
        parts = parallel.bounds(N, team)

        def chunk(c):
            lo, hi = parts[c]
            fn(1, hi - lo, type_ptrs(*[p + lo * s for p, s in zip(ptrs, steps)]), st, 1)
    else:
        return False
    type_ptrs = ctypes.c_void_p * (n_in + len(outs))
    parallel.run(chunk, len(parts), team)
    return True
