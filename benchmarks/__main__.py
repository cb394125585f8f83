"""Run the benchmark suite: `python -m benchmarks [NAME ...] [--threads N] [--write]`."""
import argparse
import datetime
import importlib
import os
import platform
import sys

# ember's generated kernels and torch's intra-op pool are both OpenMP teams in this one
# process: with the default (spinning) wait policy, whichever library ran last keeps its
# threads spinning on the cores the other one needs next. Both sleep between calls here.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import harness  # noqa: E402

WORKLOADS = ["op_overhead", "mlp_train", "cnn_train", "gpt_train", "pointwise", "gpt_infer",
             "matmul", "memory", "pointwise_compiled", "gpt_train_compiled", "compile_time",
             "func_workloads", "export_workloads"]


def run_training(name, threads, torch, ember):
    from .train_workloads import CASES
    build, work, unit = CASES[name]
    harness.set_threads(threads, torch, ember)
    fe, ft = build(ember), build(torch)
    te, tt, busy = harness.measure_pair(fe, ft, samples=5, target=0.2)
    if work is None:
        ve, vt, ratio = te * 1e3, tt * 1e3, tt / te
    else:
        ve, vt = work / te, work / tt
        ratio = ve / vt
    print(f"{name:12s} {'':34s} t={threads} ember {ve:10.2f} torch {vt:10.2f} {unit:8s}"
          f" speed ember/torch {ratio:5.2f}x  (cpu busy {busy:.0%})", flush=True)
    return [(name, "", threads, ve, vt, ratio, unit, busy)]


MEMORY_SCRIPT = """
import resource, sys
lib = sys.argv[1]
if lib == "torch":
    import torch
    torch.set_num_threads(1)
else:
    import ember as torch
from benchmarks.train_workloads import gpt_train
step = gpt_train(torch)
for _ in range(20):
    step()
print([int(l.split()[1]) / 1024.0 for l in open("/proc/self/status") if l.startswith("VmHWM")][0])
"""


def run_memory(threads):
    import subprocess
    peaks = {}
    for lib in ("ember", "torch"):
        out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, lib], capture_output=True,
                             text=True, check=True, cwd=os.path.dirname(os.path.dirname(
                                 os.path.abspath(__file__))))
        peaks[lib] = float(out.stdout.strip().splitlines()[-1])
    ratio = peaks["torch"] / peaks["ember"]
    print(f"{'memory':12s} {'peak RSS, gpt_train 20 steps':34s} ember {peaks['ember']:10.1f} "
          f"torch {peaks['torch']:10.1f} MiB      torch/ember {ratio:5.2f}x", flush=True)
    return [("memory", "peak RSS, gpt_train 20 steps", 1, peaks["ember"], peaks["torch"], ratio,
             "MiB", 0.0)]


COMPILE_SCRIPT = """
import sys, time
t0 = time.perf_counter()
lib = sys.argv[1]
if lib == "torch":
    import torch
else:
    import ember as torch
from benchmarks.train_workloads import gpt_train_compiled
t1 = time.perf_counter()
gpt_train_compiled(torch)      # builds the model and runs (compiles) two steps
t2 = time.perf_counter()
print(t2 - t1)
"""


def run_compile_time(threads):
    """Seconds to build the GPT model and run its first two compiled training steps, in a
    fresh process: ember with an empty kernel cache (cold), ember again with that cache
    (warm), torch.compile (cold, its own caches as they are)."""
    import subprocess
    import tempfile
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    secs = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, EMBER_CACHE_DIR=cache)
        for key, lib in (("cold", "ember"), ("warm", "ember"), ("torch", "torch")):
            out = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, lib], capture_output=True,
                                 text=True, check=True, cwd=root, env=env)
            secs[key] = float(out.stdout.strip().splitlines()[-1])
    rows = [("compile_time", "gpt_train: ember cold vs torch.compile", 1, secs["cold"],
             secs["torch"], secs["torch"] / secs["cold"], "s", 0.0),
            ("compile_time", "gpt_train: ember warm (disk cache) vs torch.compile", 1,
             secs["warm"], secs["torch"], secs["torch"] / secs["warm"], "s", 0.0)]
    for r in rows:
        print(f"{r[0]:12s} {r[1]:34s} ember {r[3]:10.2f} torch {r[4]:10.2f} s", flush=True)
    return rows


def run_workload(name, threads, torch, ember):
    from .train_workloads import CASES
    if name in CASES:
        return run_training(name, threads, torch, ember)
    mod = importlib.import_module(f"benchmarks.{name}")
    harness.set_threads(threads, torch, ember)
    ce, ct = mod.cases(ember), mod.cases(torch)
    rows = []
    for case in ce:
        fe, ft = ce[case], ct[case]
        flops = None
        if isinstance(fe, tuple):
            (fe, flops), (ft, _) = fe, ft
        te, tt, busy = harness.measure_pair(fe, ft)
        if flops is not None:
            ve, vt = flops / te / 1e9, flops / tt / 1e9
            ratio = ve / vt   # throughput: ember relative to torch, higher is better
        else:
            ve, vt = te * mod.SCALE, tt * mod.SCALE
            ratio = vt / ve   # time: torch/ember, so >1 means ember is faster
        rows.append((name, case, threads, ve, vt, ratio, mod.UNIT, busy))
        print(f"{name:12s} {case:34s} t={threads} ember {ve:10.2f} torch {vt:10.2f} {mod.UNIT:8s}"
              f" speed ember/torch {ratio:5.2f}x  (cpu busy {busy:.0%})", flush=True)
    return rows


def machine():
    return f"{harness.cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_markdown(rows, command, path="BENCHMARKS.md"):
    import numpy
    import torch
    lines = [
        "# Benchmarks",
        "",
        "Generated by `benchmarks/__main__.py --write`; do not edit by hand.",
        "",
        f"- command: `{command}`",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- machine: {machine()}",
        f"- torch {torch.__version__}, numpy {numpy.__version__}, BLAS: {harness.blas_info()}",
        f"- OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} (for both libraries: their "
        "OpenMP teams share the process and its cores)",
        "- `*_compiled` rows: `ember.compile` (C backend) beside `torch.compile` (inductor), "
        "both called the same way; `compile_time`: seconds to build the GPT and run its first "
        "two compiled training steps in a fresh process (ember with an empty kernel cache, "
        "then again with that cache; torch.compile with its caches as they are).",
        "- 'speed' is ember relative to torch: torch time / ember time (or ember throughput /"
        " torch throughput); above 1 means ember is faster (for memory: torch peak / ember"
        " peak). Medians of alternating samples; 'busy' is the CPU load sampled just before"
        " the pair was measured.",
        "",
        "| workload | case | threads | ember | torch | unit | speed ember/torch | busy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, case, th, ve, vt, ratio, unit, busy in rows:
        lines.append(f"| {name} | {case} | {th} | {ve:.2f} | {vt:.2f} | {unit} | {ratio:.2f}x |"
                     f" {busy:.0%} |")
    # the sections after the table ("## ..."), written by other benchmark commands
    # (benchmarks.distributed, benchmarks.ddp), are kept as they are
    kept = []
    if os.path.exists(path):
        with open(path) as f:
            old = f.read().split("\n")
        heads = [i for i, line in enumerate(old) if line.startswith("## ")]
        if heads:
            kept = [""] + old[heads[0]:]
    with open(path, "w") as f:
        f.write("\n".join(lines + kept).rstrip("\n") + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks")
    p.add_argument("names", nargs="*", help=f"workloads (default: all of {WORKLOADS})")
    p.add_argument("--threads", type=int, nargs="*", default=[2, 1])
    p.add_argument("--write", action="store_true", help="regenerate BENCHMARKS.md")
    args = p.parse_args(argv)
    import torch
    import ember
    print(f"machine: {machine()}\nBLAS: {harness.blas_info()}", flush=True)
    rows = []
    for name in args.names or WORKLOADS:
        if name == "memory":
            rows.extend(run_memory(1))
            continue
        if name == "compile_time":
            rows.extend(run_compile_time(1))
            continue
        for th in args.threads:
            rows.extend(run_workload(name, th, torch, ember))
    if args.write:
        write_markdown(rows, "python -m benchmarks " + " ".join(argv or sys.argv[1:]))


if __name__ == "__main__":
    main()
