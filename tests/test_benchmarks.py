"""The benchmark suite's machinery (benchmarks/): the worker protocol, --busy's process, the
best-vs-best rows and the generated BENCHMARKS.md sections. No timing assertions: only that
figures come back positive, processes start and stop, and text is produced for every workload.
"""
import argparse
import os
import subprocess
import sys
import time

import pytest
import torch

import ember
from benchmarks import __main__ as suite
from benchmarks import busy, definitions, workers


def _gone(pid):
    """True once `pid` no longer runs (absent, or a zombie waiting for its new parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


# ---------------------------------------------------------------- worker protocol
def test_workers_measure_both_libraries_with_their_own_settings(monkeypatch):
    # a shell that set OMP_WAIT_POLICY: torch's worker must still run with torch's defaults
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    ws = [workers.Worker("ember", "ember"),
          workers.Worker("defaults", "torch", workers.torch_env())]
    try:
        te, tt = ws[0].info, ws[1].info
        assert tt["env"]["OMP_WAIT_POLICY"] is None
        assert tt["ember_imported"] is False and tt["version"] == torch.__version__
        assert te["env"]["OMP_WAIT_POLICY"] == "PASSIVE"
        cases = [w.call("setup", workload="op_overhead", threads=1) for w in ws]
        assert cases[0]["cases"] == cases[1]["cases"]
        assert cases[1]["ember_imported"] is False
        assert all(c["threads"] == 1 for c in cases)
        secs, cpu = workers.measure(ws, "a + b", samples=2, target=0.002, gap=0.0,
                                    max_busy=1.0)
        assert len(secs) == 2 and all(s > 0 for s in secs)
        assert 0.0 <= cpu <= 1.0
        with pytest.raises(RuntimeError, match="no_such_workload"):
            ws[1].call("setup", workload="no_such_workload", threads=1)
        ws[0].call("setup", workload="op_overhead", threads=1)    # still serving after errors
    finally:
        for w in ws:
            w.close()
    assert all(w.proc.poll() is not None for w in ws)


def test_worker_values_follow_the_row_units():
    assert workers.value(0.5, dict(work=64, scale=1.0)) == 128.0         # tokens/s
    assert workers.value(0.002, dict(work=None, scale=1e3)) == 2.0       # ms


def test_in_process_mode_still_measures(monkeypatch):
    monkeypatch.setattr(suite, "_sampling", lambda name: (1, 0.001))
    monkeypatch.setenv("BENCH_MAX_BUSY", "1.0")        # no retakes on this loaded machine
    rows = suite.run_in_process("op_overhead", [1], "quiet", torch, ember)
    assert [r["case"] for r in rows][:2] == ["a + b", "a * b"]
    assert all(r["te"] > 0 and r["tt"] > 0 and r["torch_run"] == suite.IN_PROCESS
               for r in rows)


# ---------------------------------------------------------------- --busy
def test_busy_process_runs_inside_the_block_and_is_gone_after():
    with busy.BusyProcess() as load:
        pid = load.pid
        assert load.proc.poll() is None and not _gone(pid)
    assert load.proc.poll() is not None and _gone(pid)
    with pytest.raises(KeyboardInterrupt):
        with busy.BusyProcess() as load:
            raise KeyboardInterrupt
    assert load.proc.poll() is not None


def test_busy_loop_exits_when_its_parent_dies_without_stopping_it():
    code = ("import os, sys; from benchmarks.busy import BusyProcess; "
            "b = BusyProcess().start(); print(b.pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=workers.ROOT, check=True)
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 20
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_main_busy_runs_quiet_then_busy_and_stops_its_process(monkeypatch):
    started, seen = [], []

    class Recording(busy.BusyProcess):
        def start(self):
            started.append(self)
            return super().start()

    def fake_run(name, threads, load, variants, infos):
        alive = bool(started) and started[-1].proc.poll() is None
        seen.append((load, alive))
        spec = dict(case="", work=1, unit="steps/s", scale=1.0)
        return [suite._row(name, spec, th, 0.01 * th, 0.02, 0.5, load, "defaults")
                for th in threads]
    monkeypatch.setattr(suite, "BusyProcess", Recording)
    monkeypatch.setattr(suite, "run_workers", fake_run)
    rows = suite.main(["mlp_train", "--threads", "2", "1", "--busy"])
    assert seen == [("quiet", False), ("busy", True)]
    assert len(started) == 1 and started[0].proc.poll() is not None
    assert {r["load"] for r in rows} == {"quiet", "busy"}
    assert sum(r["case"] == "best vs best" for r in rows) == 2      # one per load


# ---------------------------------------------------------------- best vs best
def test_best_rows_take_each_library_at_its_own_fastest_thread_count():
    spec = dict(case="", work=1, unit="steps/s", scale=1.0)
    rows = [suite._row("gpt_train", spec, 2, 0.010, 0.030, 0.0, "quiet", "defaults"),
            suite._row("gpt_train", spec, 1, 0.020, 0.015, 0.0, "quiet", "defaults"),
            suite._row("op_overhead", spec, 2, 1.0, 1.0, 0.0, "quiet", "defaults"),
            suite._row("op_overhead", spec, 1, 1.0, 1.0, 0.0, "quiet", "defaults")]
    (best,) = suite.best_rows(rows)          # op_overhead is not a training workload
    assert best["threads"] == "e2/t1" and best["case"] == "best vs best"
    assert best["te"] == 0.010 and best["tt"] == 0.015
    assert best["speed"] == pytest.approx(1.5)


# ---------------------------------------------------------------- definitions
def test_definitions_cover_every_workload():
    lines = definitions.section(suite.WORKLOADS, torch, suite.RUNNERS)
    text = "\n".join(lines)
    for name in suite.WORKLOADS:
        assert any(line.startswith(f"### {name}") for line in lines), name
    parts = text.split("\n### ")[1:]
    assert len(parts) == len(suite.WORKLOADS)
    assert all("(no docstring)" not in p for p in parts)
    gpt = next(p for p in parts if p.startswith("gpt_train ("))
    assert "is_causal=True" in gpt and "GELU(approximate='none')" in gpt
    assert "AdamW(" in gpt and "lr=0.001" in gpt and "`x` int64 (16, 64)" in gpt
    # the docstring's attention claim holds for the model's source
    src = open(os.path.join(workers.ROOT, "ember", "examples", "gpt.py")).read()
    assert "scaled_dot_product_attention(q, k, v, is_causal=True" in src
    mlp = next(p for p in parts if p.startswith("mlp_train ("))
    assert "SGD(" in mlp and "momentum=0.9" in mlp and "float32 (128, 784)" in mlp


def test_write_markdown_replaces_its_sections_and_keeps_others(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\nold table\n\n## Workload definitions\n\nstale\n\n"
                    "## ddp\n\nkept rows\n")
    spec = dict(case="", work=1, unit="steps/s", scale=1.0)
    rows = [suite._row("mlp_train", spec, 1, 0.01, 0.02, 0.1, load, "defaults")
            for load in ("quiet", "busy")]
    args = argparse.Namespace(in_process=False, variants=[], busy=True)
    info = dict(version="x", env={"OMP_WAIT_POLICY": None}, default_threads=2,
                ember_imported=False, blas="b")
    suite.write_markdown(rows, "python -m benchmarks mlp_train --busy", args,
                         {"defaults": info, "ember": info}, ["mlp_train"], path=str(path))
    text = path.read_text()
    assert text.count("## Workload definitions") == 1 and "stale" not in text
    assert "## ddp\n\nkept rows" in text and "old table" not in text
    assert "| mlp_train |  | 1 | busy | defaults |" in text
    assert "## Under contention" in text and "OMP_WAIT_POLICY=(unset)" in text
    assert os.path.getsize(path) > 0


def test_settle_returns_once_a_process_is_idle():
    t0 = workers.process_cpu_ticks(os.getpid())
    end = time.process_time() + 0.1
    while time.process_time() < end:      # use 0.1 s of CPU in this process
        pass
    assert workers.process_cpu_ticks(os.getpid()) > t0
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.5)                           # past its start-up
        assert workers.settle(sleeper.pid, limit=10.0) < 10.0
    finally:
        sleeper.kill()
        sleeper.wait()
