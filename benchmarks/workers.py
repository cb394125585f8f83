"""Benchmark workers: each library timed in its own subprocess, the two taking turns.

`python -m benchmarks` (the default, "worker" mode) starts one worker per library for each
workload: ``python -m benchmarks.workers torch`` and ``python -m benchmarks.workers ember``.
torch's worker gets the parent's environment with the OpenMP wait settings removed
(OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME: torch's defaults, as users run it) and never
imports ember; ember's worker runs with ember's own defaults. Neither library shares a process
(or an OpenMP runtime) with the other, so neither one's wait policy changes the other's figure.

The parent drives them over a line-per-message JSON protocol (commands on the worker's stdin,
replies on a private copy of its stdout; the workload's own prints go to stderr):

    {"op": "hello"}                              -> versions, environment, thread defaults
    {"op": "setup", "workload": W, "threads": n} -> set n threads, build W: {"cases": [...]}
    {"op": "calibrate", "case": C, "target": s}  -> {"number": calls per ~s-second sample}
    {"op": "sample", "case": C, "number": k}     -> {"seconds": mean seconds per call}
    {"op": "quit"}

`measure` asks each worker for one sample in turn and waits for its reply, and then until that
worker's process has stopped using CPU (idle threads may spin for a while after a call),
before asking the next: the libraries never run at the same time, and machine drift hits
both alike.
"""
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# environment variables that tune an OpenMP runtime's waiting; torch's worker runs without them
OMP_WAIT_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
# what a worker reports of its environment (after importing its library)
REPORTED_VARS = OMP_WAIT_VARS + ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                 "OPENBLAS_CORETYPE")


def load_cases(name, lib):
    """The cases of workload `name` built with library module `lib` (torch or ember):
    a list of dicts {case, fn, work, unit, scale}. A row's value is work / seconds when work
    is set (a throughput), else seconds * scale (a time)."""
    from .train_workloads import CASES
    if name in CASES:
        build, work, unit = CASES[name]
        return [dict(case="", fn=build(lib), work=work, unit=unit,
                     scale=1e3 if work is None else 1.0)]
    mod = importlib.import_module(f"benchmarks.{name}")
    out = []
    for case, fn in mod.cases(lib).items():
        if isinstance(fn, tuple):        # (fn, flops): a GFLOP/s row
            fn, flops = fn
            out.append(dict(case=case, fn=fn, work=flops / 1e9, unit=mod.UNIT, scale=1.0))
        else:
            out.append(dict(case=case, fn=fn, work=None, unit=mod.UNIT, scale=mod.SCALE))
    return out


def value(seconds, spec):
    """The figure a row shows for `seconds` per call (see load_cases)."""
    return spec["work"] / seconds if spec["work"] else seconds * spec["scale"]


# ---------------------------------------------------------------- the worker side
def _hello(lib, mod):
    info = {"lib": lib, "version": mod.__version__, "pid": os.getpid(),
            "default_threads": mod.get_num_threads(),
            "env": {k: os.environ.get(k) for k in REPORTED_VARS},
            "ember_imported": "ember" in sys.modules}
    if lib == "ember":
        from . import harness
        info["blas"] = harness.blas_info()
    return info


def serve(lib, stdin=None, out=None):
    """Answer the parent's commands until "quit" or end of input."""
    from . import harness
    if lib == "torch":
        import torch as mod
    elif lib == "ember":
        import ember as mod
    else:
        raise SystemExit(f"unknown library {lib!r}")
    stdin = stdin or sys.stdin
    cases = {}
    for line in stdin:
        msg = json.loads(line)
        op = msg["op"]
        try:
            if op == "hello":
                reply = _hello(lib, mod)
            elif op == "setup":
                mod.set_num_threads(msg["threads"])
                cases = {c["case"]: c for c in load_cases(msg["workload"], mod)}
                reply = {"cases": [{k: v for k, v in c.items() if k != "fn"}
                                   for c in cases.values()],
                         "threads": mod.get_num_threads(),
                         "ember_imported": "ember" in sys.modules}
            elif op == "calibrate":
                reply = {"number": harness.calibrate(cases[msg["case"]]["fn"], msg["target"])}
            elif op == "sample":
                fn, number = cases[msg["case"]]["fn"], msg["number"]
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                reply = {"seconds": (time.perf_counter() - t0) / number}
            elif op == "quit":
                reply = {}
            else:
                raise ValueError(f"unknown command {op!r}")
        except Exception:
            reply = {"error": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if op == "quit":
            return


def main():
    # the protocol keeps a private copy of stdout; anything the workload prints goes to stderr
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    serve(sys.argv[1], out=proto)


# ---------------------------------------------------------------- the parent side
def torch_env(extra=None):
    """torch's worker environment: the parent's, without the OpenMP wait settings (torch's
    defaults), plus `extra` (a labelled tuned variant, e.g. {"OMP_WAIT_POLICY": "PASSIVE"})."""
    env = {k: v for k, v in os.environ.items() if k not in OMP_WAIT_VARS}
    env.update(extra or {})
    return env


class Worker:
    """One library's worker subprocess; `call(op, ...)` sends a command and returns the reply.

    >>> with Worker("torch", "torch") as w:        # doctest: +SKIP
    ...     w.call("setup", workload="mlp_train", threads=1)
    """

    def __init__(self, label, lib, env=None):
        self.label, self.lib = label, lib
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.workers", lib],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
                                     env=env, text=True)
        self.info = self.call("hello")

    def call(self, op, **kw):
        self.proc.stdin.write(json.dumps(dict(kw, op=op)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label} worker exited (status {self.proc.wait()}) "
                               f"during {op!r}; its stderr is above")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.label} worker failed in {op!r}:\n{reply['error']}")
        return reply

    def close(self):
        if self.proc.poll() is None:
            try:
                self.call("quit")
            except (RuntimeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def process_cpu_ticks(pid):
    """CPU time (clock ticks, user + system, all threads) process `pid` has used, or None
    where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


def settle(pid, window=0.02, limit=1.0):
    """Wait until process `pid` uses no CPU for `window` seconds (at most `limit` seconds);
    return the seconds waited. After a sample a library's idle threads may keep spinning
    (OpenBLAS spins ~0.1 s after a call, OpenMP teams per their wait policy): the next
    library's sample must not start on cores they still hold."""
    t0 = time.perf_counter()
    last = process_cpu_ticks(pid)
    if last is None:                 # no /proc: a fixed pause longer than those spins
        time.sleep(0.2)
        return 0.2
    while time.perf_counter() - t0 < limit:
        time.sleep(window)
        now = process_cpu_ticks(pid)
        if now == last:
            break
        last = now
    return time.perf_counter() - t0


def measure(workers, case, samples=5, target=0.2, gap=0.0, max_busy=0.75, retries=2):
    """Median seconds per call of `case` in each worker, and the CPU load seen before.

    Each worker calibrates its own calls per sample (about `target` seconds, after a warm-up
    call). Then the workers take turns, one sample each, the order reversed every round so
    that neither library always runs right after the other; after each sample the parent
    waits until that worker is idle (`settle`), plus `gap` seconds. A measurement taken
    while the CPUs were busier than `max_busy` (another process's load) is retaken up to
    `retries` times; pass max_busy=1.0 to keep it whatever the load (the --busy runs).
    """
    from . import harness
    numbers = [w.call("calibrate", case=case, target=target)["number"] for w in workers]
    for attempt in range(retries + 1):
        busy = harness.cpu_busy()
        times = [[] for _ in workers]
        for r in range(samples):
            order = range(len(workers)) if r % 2 == 0 else reversed(range(len(workers)))
            for i in order:
                times[i].append(workers[i].call("sample", case=case,
                                                number=numbers[i])["seconds"])
                settle(workers[i].proc.pid)
                time.sleep(gap)
        if busy <= max_busy or attempt == retries:
            return [statistics.median(t) for t in times], busy
    raise AssertionError("unreachable")


if __name__ == "__main__":
    main()
