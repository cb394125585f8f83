"""Thread settings (PyTorch's API): ember.set_num_threads(n) / ember.get_num_threads().

The value is the OpenMP thread count generated C kernels are called with (build.KernelFn reads
`_num_threads` at every call, so a change applies to kernels already built) and NumPy's BLAS
thread count, set through threadpoolctl (a runtime dependency: without it OpenBLAS kept its own
thread count and `set_num_threads(1)` did not hold under contention). The default is
$OMP_NUM_THREADS when set, else the CPUs this process may run on.
"""
import os


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


def _positive(n, name):
    n = int(n)
    if n < 1:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(n):
    """Set the threads used by compiled kernels and by BLAS (matmul)."""
    global _num_threads
    _num_threads = n = _positive(n, "set_num_threads")
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
