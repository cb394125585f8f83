"""ember.profiler: spans per op with self/total times, backward nodes, record_function,
the key_averages table and a chrome trace — and the same user code runs under torch."""
import json

import pytest
import torch

import ember


def _program(lib, prof_mod, path):
    """PyTorch-style profiling code, run unchanged with either library."""
    x = lib.ones(4, 4, requires_grad=True)
    with prof_mod.profile() as prof:
        with prof_mod.record_function("my_step"):
            for _ in range(5):
                y = x + x
            (y * y).sum().backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    prof.export_chrome_trace(path)
    return prof, table


def test_same_code_runs_under_torch_and_ember(tmp_path):
    for lib in (torch, ember):
        path = str(tmp_path / f"{lib.__name__}.json")
        prof, table = _program(lib, lib.profiler, path)
        assert "my_step" in table and "Self CPU" in table
        events = json.load(open(path))["traceEvents"]
        assert any(e.get("name") == "my_step" for e in events)


def test_counts_times_and_backward_nodes(tmp_path):
    prof, _ = _program(ember, ember.profiler, str(tmp_path / "t.json"))
    rows = {r.key: r for r in prof.key_averages()}
    # 5 forward adds, plus one per gradient summed in backward (x used twice by x + x, and
    # y used twice by y * y)
    assert rows["ember::add"].count == 7
    assert rows["ember::mul"].count >= 1
    assert "autograd::engine::evaluate_function: MulBackward0" in rows
    assert "autograd::engine::evaluate_function: SumBackward0" in rows
    for r in rows.values():
        assert 0 <= r.self_cpu_time_total <= r.cpu_time_total + 1e-6
    # every span nests inside my_step, so the self times add up to its total
    step = rows["my_step"]
    self_sum = sum(r.self_cpu_time_total for r in rows.values())
    assert abs(self_sum - step.cpu_time_total) <= 1e-6 * step.cpu_time_total + 1e-3


def test_trace_events_are_well_formed(tmp_path):
    prof, _ = _program(ember, ember.profiler, str(tmp_path / "t.json"))
    events = json.load(open(tmp_path / "t.json"))["traceEvents"]
    assert len(events) == len(prof.events())
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0


def test_table_is_sorted_and_limited():
    with ember.profiler.profile() as prof:
        a = ember.ones(64, 64)
        for _ in range(3):
            a @ a
        a + a
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=1)
    body = [ln for ln in table.splitlines() if ln.startswith("ember::")]
    assert len(body) == 1
    best = max(prof.key_averages(), key=lambda r: r.self_cpu_time_total)
    assert body[0].startswith(best.key)


def test_mode_seam_restored_and_no_nesting():
    from ember.autograd.grad_mode import state
    assert state.modes == ()
    with ember.profiler.profile():
        assert len(state.modes) == 1
        with pytest.raises(RuntimeError):
            with ember.profiler.profile():
                pass
    assert state.modes == ()


def test_every_op_kind_passes_the_mode_seam():
    """Views, reductions, indexing, linalg and creation ops all reach the mode."""
    with ember.profiler.profile() as prof:
        a = ember.arange(12.).view(3, 4)
        a.t().sum(0)
        a[1:, ::2].mean()
        ember.matmul(a, a.t())
        ember.cat([a, a])
    keys = {r.key for r in prof.key_averages()}
    assert {"ember::arange", "ember::view", "ember::t", "ember::sum", "ember::getitem",
            "ember::mean", "ember::matmul", "ember::cat"} <= keys


def test_record_function_decorator_and_inactive():
    @ember.profiler.record_function("decorated")
    def f(t):
        return t * 2
    assert f(ember.ones(2)).sum().item() == 4.0       # no profile active: just runs
    with ember.profiler.profile() as prof:
        f(ember.ones(2))
    assert [r.count for r in prof.key_averages() if r.key == "decorated"] == [1]


def test_record_shapes():
    with ember.profiler.profile(record_shapes=True) as prof:
        ember.ones(2, 3) + ember.ones(2, 3)
    add = [e for e in prof.events() if e.name == "ember::add"][0]
    assert add.shapes == [[2, 3], [2, 3]]
