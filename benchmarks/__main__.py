"""Run the benchmark suite: `python -m benchmarks [NAME ...] [--threads N ...] [--busy] [--write]`.

By default each library runs in its own worker subprocess (benchmarks/workers.py): torch with
its defaults, ember with its own, the two taking turns sample by sample. `--in-process` runs
both in this one process instead (cheaper to start, but both OpenMP runtimes share it, so both
are given OMP_WAIT_POLICY=PASSIVE; its rows are labelled). `--torch-env KEY=VALUE` adds a
labelled tuned torch variant beside torch's defaults. `--busy` measures every workload quiet
and again beside one other CPU-bound process (benchmarks/busy.py). Training and inference
rows measured at several thread counts also get a "best vs best" row: each library at its own
fastest thread count. `--write` regenerates BENCHMARKS.md, with each workload's definition.
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile

from . import harness, workers
from .busy import BusyProcess
from .train_workloads import CASES as TRAIN_CASES

WORKLOADS = ["op_overhead", "mlp_train", "cnn_train", "gpt_train", "pointwise", "gpt_infer",
             "matmul", "memory", "pointwise_compiled", "gpt_train_compiled", "compile_time",
             "func_workloads", "export_workloads"]
IN_PROCESS = "in-process, OMP_WAIT_POLICY=PASSIVE (both)"
GAP = 0.0           # seconds between two workers' samples, beyond waiting until idle


def _sampling(name):
    """(samples, seconds per sample) of a workload's measurement."""
    return (5, 0.2) if name in TRAIN_CASES else (7, 0.05)


def _row(name, spec, threads, te, tt, cpu, load, torch_run):
    return dict(workload=name, case=spec["case"], threads=str(threads), load=load,
                torch_run=torch_run, ember=workers.value(te, spec),
                torch=workers.value(tt, spec), unit=spec["unit"], speed=tt / te, cpu=cpu,
                te=te, tt=tt)


def show(r):
    print(f"{r['workload']:12s} {r['case']:34s} t={r['threads']:5s} {r['load']:5s} "
          f"ember {r['ember']:10.2f} torch {r['torch']:10.2f} {r['unit']:8s} speed "
          f"ember/torch {r['speed']:5.2f}x  (torch: {r['torch_run']}; cpu busy {r['cpu']:.0%})",
          flush=True)


def run_workers(name, threads, load, variants, infos):
    """Rows of workload `name` at each thread count, through one worker per library (and one
    per tuned torch variant), started for this workload and closed after it."""
    samples, target = _sampling(name)
    specs = [("ember", "ember", None), ("defaults", "torch", workers.torch_env())]
    specs += [(label, "torch", workers.torch_env(env)) for label, env in variants]
    ws, rows = [], []
    try:
        for label, lib, env in specs:
            ws.append(workers.Worker(label, lib, env))
            infos.setdefault(label, ws[-1].info)
        for th in threads:
            built = [w.call("setup", workload=name, threads=th)["cases"] for w in ws]
            if any([c["case"] for c in b] != [c["case"] for c in built[0]] for b in built):
                raise RuntimeError(f"{name}: the libraries built different cases: {built}")
            cases = built[0]
            for spec in cases:
                secs, cpu = workers.measure(ws, spec["case"], samples, target, GAP,
                                            max_busy=1.0 if load == "busy" else 0.75)
                for w, tt in zip(ws[1:], secs[1:]):
                    rows.append(_row(name, spec, th, secs[0], tt, cpu, load, w.label))
                    show(rows[-1])
    finally:
        for w in ws:
            w.close()
    return rows


def run_in_process(name, threads, load, torch, ember):
    samples, target = _sampling(name)
    rows = []
    for th in threads:
        harness.set_threads(th, torch, ember)
        ce, ct = workers.load_cases(name, ember), workers.load_cases(name, torch)
        for se, st in zip(ce, ct):
            te, tt, cpu = harness.measure_pair(se["fn"], st["fn"], samples=samples,
                                               target=target,
                                               max_busy=1.0 if load == "busy" else None)
            rows.append(_row(name, se, th, te, tt, cpu, load, IN_PROCESS))
            show(rows[-1])
    return rows


def best_rows(rows):
    """For training/inference rows measured at several thread counts: each library at its own
    fastest thread count ("best vs best"), per case, load and torch variant."""
    groups = {}
    for r in rows:
        if r["workload"] in TRAIN_CASES and r["threads"].isdigit():
            key = (r["workload"], r["case"], r["load"], r["torch_run"])
            groups.setdefault(key, []).append(r)
    out = []
    for rs in groups.values():
        if len(rs) < 2:
            continue
        be, bt = min(rs, key=lambda r: r["te"]), min(rs, key=lambda r: r["tt"])
        out.append(dict(be, case="best vs best",
                        threads=f"e{be['threads']}/t{bt['threads']}", torch=bt["torch"],
                        tt=bt["tt"], speed=bt["tt"] / be["te"], cpu=max(be["cpu"], bt["cpu"])))
        show(out[-1])
    return out


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


def _lib_env(lib, extra=None):
    """The environment of a one-off subprocess for `lib`: torch's defaults or ember's."""
    env = workers.torch_env() if lib == "torch" else dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (workers.ROOT, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _one_off(script, lib, extra_env=None):
    out = subprocess.run([sys.executable, "-c", script, lib], capture_output=True, text=True,
                         check=True, cwd=workers.ROOT, env=_lib_env(lib, extra_env))
    return float(out.stdout.strip().splitlines()[-1])


def _fixed_row(name, case, ve, vt, ratio, unit):
    r = dict(workload=name, case=case, threads="1", load="quiet", torch_run="defaults",
             ember=ve, torch=vt, unit=unit, speed=ratio, cpu=0.0, te=None, tt=None)
    print(f"{name:12s} {case:34s} ember {ve:10.2f} torch {vt:10.2f} {unit:8s} ratio "
          f"{ratio:5.2f}x", flush=True)
    return r


def run_memory():
    """Peak resident memory (VmHWM, MiB) of a fresh process that builds gpt_train's model and
    runs 20 of its training steps, one process per library (torch with 1 thread and its
    default environment, ember with its defaults); the ratio is torch peak / ember peak."""
    peaks = {lib: _one_off(MEMORY_SCRIPT, lib) for lib in ("ember", "torch")}
    return [_fixed_row("memory", "peak RSS, gpt_train 20 steps", peaks["ember"], peaks["torch"],
                       peaks["torch"] / peaks["ember"], "MiB")]


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


def run_compile_time():
    """Seconds to build the GPT model and run its first two compiled training steps, in a
    fresh process: ember with an empty kernel cache (cold), ember again with that cache
    (warm), torch.compile (cold, its own caches as they are); the ratio is torch / ember."""
    with tempfile.TemporaryDirectory() as cache:
        extra = {"EMBER_CACHE_DIR": cache}
        secs = {key: _one_off(COMPILE_SCRIPT, lib, extra)
                for key, lib in (("cold", "ember"), ("warm", "ember"), ("torch", "torch"))}
    return [_fixed_row("compile_time", f"gpt_train: ember {k} vs torch.compile", secs[k],
                       secs["torch"], secs["torch"] / secs[k], "s") for k in ("cold", "warm")]


RUNNERS = {"memory": run_memory, "compile_time": run_compile_time}


def machine():
    return f"{harness.cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _env_text(info):
    return ", ".join(f"{k}={v if v is not None else '(unset)'}"
                     for k, v in info["env"].items() if v is not None or k == "OMP_WAIT_POLICY")


def how_run(args, infos):
    """The header lines saying exactly how each library was run."""
    samples = "medians of 5 samples of ~0.2 s (training/inference rows) or 7 of ~0.05 s"
    if args.in_process:
        lines = [f"- mode: in-process (`--in-process`): torch and ember in one process, "
                 f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} for both (their OpenMP "
                 "teams share the process and its cores); samples alternate ember, torch; "
                 f"{samples}; threads set for both with torch.set_num_threads, "
                 "ember.set_num_threads and threadpoolctl."]
    else:
        lines = ["- mode: worker subprocesses (benchmarks/workers.py): each library in its own "
                 "process (`python -m benchmarks.workers torch|ember`), one per library per "
                 "workload; the parent asks one worker for one sample and waits for it before "
                 "asking the other, so they never run at once; after each sample it also "
                 "waits until that worker's process has used no CPU for 20 ms, at most 1 s "
                 "(a library's idle threads may spin for a while after a call; they must not "
                 "hold cores during the other's sample), "
                 f"{'plus %g s, ' % GAP if GAP else ''}before the other starts; the order is "
                 "reversed every round; each worker calibrates its own calls per sample after "
                 f"a warm-up call; {samples}."]
        t, e = infos.get("defaults"), infos.get("ember")
        if t:
            lines.append(f"- torch (column 'torch', run 'defaults'): torch {t['version']}, as "
                         "users run it: the shell's environment with OMP_WAIT_POLICY, "
                         "GOMP_SPINCOUNT and KMP_BLOCKTIME removed; seen in its worker: "
                         f"{_env_text(t)}; default threads {t['default_threads']}; threads "
                         "set with `torch.set_num_threads(n)` only; ember imported in that "
                         f"process: {t['ember_imported']}.")
        if e:
            lines.append(f"- ember (column 'ember'): ember's own defaults; seen in its worker: "
                         f"{_env_text(e)} (ember.compiler sets OMP_WAIT_POLICY=PASSIVE at "
                         "import unless set: its kernels' OpenMP threads sleep between "
                         "kernels so they do not starve NumPy's BLAS threads); default threads "
                         f"{e['default_threads']}; threads set with `ember.set_num_threads(n)` "
                         f"(kernels' OpenMP and BLAS through threadpoolctl); BLAS: {e['blas']}.")
        for label, env in args.variants:
            lines.append(f"- torch variant (run '{label}'): torch's worker as above with "
                         f"{', '.join(f'{k}={v}' for k, v in env.items())} added; a tuned "
                         "setting, not torch's default.")
    lines.append("- memory and compile_time: one fresh process per library and figure, torch "
                 "with its default environment, ember with its own.")
    if args.busy:
        lines.append("- load 'busy' (`--busy`): measured while one other CPU-bound process ran "
                     "(benchmarks/busy.py: a pure-Python loop, one thread, pinned to no core), "
                     "started before the workload's busy pass and stopped after it; 'quiet' "
                     "rows ran without it, just before. Busy measurements are kept whatever "
                     "the load; quiet ones taken above 75% CPU load are retaken (twice at most).")
    lines.append("- 'best vs best' rows (training/inference workloads measured at several thread "
                 "counts): ember at its fastest thread count against torch at its own "
                 "('e2/t1': ember 2 threads, torch 1), from the rows above them.")
    return lines


GENERATED = ("## Workload definitions", "## Under contention")


def contention_lines(rows):
    """busy/quiet slowdown of each library, per row measured both ways."""
    quiet = {(r["workload"], r["case"], r["threads"], r["torch_run"]): r
             for r in rows if r["load"] == "quiet" and r["te"]}
    out = []
    for r in rows:
        q = quiet.get((r["workload"], r["case"], r["threads"], r["torch_run"]))
        if r["load"] == "busy" and q and r["case"] != "best vs best":
            out.append(f"| {r['workload']} | {r['case']} | {r['threads']} | {r['torch_run']} | "
                       f"{r['te'] / q['te']:.2f}x | {r['tt'] / q['tt']:.2f}x |")
    if not out:
        return []
    return ["## Under contention", "",
            "Time per call busy / quiet (1.00x: unaffected by the other process).", "",
            "| workload | case | threads | torch run | ember slowdown | torch slowdown |",
            "|---|---|---|---|---|---|"] + out + [""]


def write_markdown(rows, command, args, infos, names, path="BENCHMARKS.md"):
    import numpy
    import torch
    from . import definitions
    lines = [
        "# Benchmarks", "",
        "Generated by `benchmarks/__main__.py --write`; do not edit by hand.", "",
        f"- command: `{command}`",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- machine: {machine()}",
        f"- torch {torch.__version__}, numpy {numpy.__version__}, "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}",
    ] + how_run(args, infos) + [
        "- `*_compiled` rows: `ember.compile` (C backend) beside `torch.compile` (inductor), "
        "both called the same way.",
        "- 'speed' is ember relative to torch: torch time / ember time (= ember throughput / "
        "torch throughput); above 1 means ember is faster (memory: torch peak / ember peak; "
        "compile_time: torch seconds / ember seconds). 'cpu busy' is the load of all cores "
        "sampled just before the row was measured.",
        "- each workload's exact definition is in 'Workload definitions' below.", "",
        "| workload | case | threads | load | torch run | ember | torch | unit | "
        "speed ember/torch | cpu busy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['case']} | {r['threads']} | {r['load']} | "
                     f"{r['torch_run']} | {r['ember']:.2f} | {r['torch']:.2f} | {r['unit']} | "
                     f"{r['speed']:.2f}x | {r['cpu']:.0%} |")
    lines += [""] + contention_lines(rows)
    lines += definitions.section(names, torch, RUNNERS)
    # sections written by other benchmark commands (benchmarks.distributed, benchmarks.ddp,
    # ...) are kept as they are; the ones this function writes are replaced
    kept = []
    if os.path.exists(path):
        with open(path) as f:
            old = f.read().split("\n")
        heads = [i for i, line in enumerate(old) if line.startswith("## ")] + [len(old)]
        for a, b in zip(heads, heads[1:]):
            if old[a].strip() not in GENERATED:
                kept += [""] + old[a:b]
    with open(path, "w") as f:
        f.write("\n".join(lines + kept).rstrip("\n") + "\n")


def _variant(text):
    env = {}
    for item in text.split(","):
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE[,KEY=VALUE], got {text!r}")
        env[key.strip()] = val.strip()
    return text, env


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks")
    p.add_argument("names", nargs="*", help=f"workloads (default: all of {WORKLOADS})")
    p.add_argument("--threads", type=int, nargs="*", default=[2, 1])
    p.add_argument("--write", action="store_true", help="regenerate BENCHMARKS.md")
    p.add_argument("--in-process", action="store_true",
                   help="both libraries in this process (OMP_WAIT_POLICY=PASSIVE for both)")
    p.add_argument("--torch-env", dest="variants", type=_variant, action="append", default=[],
                   metavar="KEY=VALUE[,...]",
                   help="also measure a tuned torch variant with these environment variables")
    p.add_argument("--busy", action="store_true",
                   help="measure each workload quiet, then beside one CPU-bound process")
    args = p.parse_args(argv)
    names = args.names or WORKLOADS
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workloads {unknown}; known: {WORKLOADS}")
    torch = ember = None
    if args.in_process:
        if args.variants:
            p.error("--torch-env needs the worker mode (no --in-process)")
        # both OpenMP teams share this process: with the default (spinning) wait policy,
        # whichever library ran last keeps its threads spinning on the cores the other needs
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch
        import ember
    print(f"machine: {machine()}", flush=True)
    rows, infos = [], {}
    loads = ["quiet", "busy"] if args.busy else ["quiet"]
    for name in names:
        if name in RUNNERS:
            rows.extend(RUNNERS[name]())
            continue
        got = []
        for load in loads:
            busy = BusyProcess() if load == "busy" else None
            try:
                if busy:
                    busy.start()
                if args.in_process:
                    got += run_in_process(name, args.threads, load, torch, ember)
                else:
                    got += run_workers(name, args.threads, load, args.variants, infos)
            finally:
                if busy:
                    busy.stop()
        rows += got + best_rows(got)
    if args.write:
        write_markdown(rows, "python -m benchmarks " + " ".join(argv or sys.argv[1:]), args,
                       infos, names)
    return rows


if __name__ == "__main__":
    main()
