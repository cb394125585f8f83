"""Timing harness: warm up, alternate ember and torch runs, take medians, watch the load.

`calibrate` and `cpu_busy` serve both modes; `measure_pair` and `set_threads` are the
`--in-process` mode's (both libraries in one process); the default mode's turn-taking
between worker subprocesses is benchmarks/workers.py's `measure`.

Shared machines are noisy: before each measured pair the harness samples how busy the CPUs
are from /proc/stat (the fraction of the last 0.2 s that the cores spent busy), reports it
beside the figure, and reruns a pair measured under high load.
"""
import os
import statistics
import time


def cpu_busy(interval=0.2):
    """Fraction of CPU time spent busy over `interval` seconds (all cores together)."""
    def snap():
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:]]
        idle = vals[3] + vals[4]
        return sum(vals), idle
    t0, i0 = snap()
    time.sleep(interval)
    t1, i1 = snap()
    total = t1 - t0
    return 0.0 if total <= 0 else 1.0 - (i1 - i0) / total


def cpu_name():
    """The CPU's model name from /proc/cpuinfo (or what `platform` knows)."""
    import platform
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def set_threads(n, torch_mod, ember_mod):
    """Give torch, ember and NumPy's BLAS the same thread count."""
    torch_mod.set_num_threads(n)
    ember_mod.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(n)
    except ImportError:
        pass


def blas_info():
    try:
        from threadpoolctl import threadpool_info
        return "; ".join(f"{i['internal_api']} {i.get('version')} ({i['num_threads']} threads, "
                         f"{i.get('architecture')})" for i in threadpool_info()
                         if i["user_api"] == "blas")
    except ImportError:
        return "unknown (threadpoolctl not installed)"


def _time(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def calibrate(fn, target=0.05):
    """How many calls make one sample of about `target` seconds."""
    fn()
    n = 1
    while True:
        t = _time(fn, n)
        if t * n >= target / 4 or n >= 1 << 20:
            return max(1, int(target / max(t, 1e-9)))
        n *= 4


def measure_pair(fn_a, fn_b, samples=7, target=0.05, max_busy=None, retries=2):
    """Median seconds per call of fn_a and fn_b, sampled alternately; plus the load seen."""
    n_a, n_b = calibrate(fn_a, target), calibrate(fn_b, target)
    limit = max_busy if max_busy is not None else float(os.environ.get("BENCH_MAX_BUSY", 0.75))
    for attempt in range(retries + 1):
        busy = cpu_busy()
        ta, tb = [], []
        for _ in range(samples):
            ta.append(_time(fn_a, n_a))
            tb.append(_time(fn_b, n_b))
        if busy <= limit or attempt == retries:
            return statistics.median(ta), statistics.median(tb), busy
    raise AssertionError("unreachable")
