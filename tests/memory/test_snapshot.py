"""Snapshots: each live block with size, dtype, stack and owner; the JSON file; the trace;
memory_summary's table; the ember.cuda names against torch.cuda on a machine without GPU."""
import json
import subprocess
import sys

import pytest
import torch

import ember
from ember import memory as M


def make_activations(n):
    return ember.ones(n, 3)


def scratch(n):
    t = ember.zeros(n)
    return t.sum()


def test_snapshot_blocks_add_up_and_name_their_site(quiet_gc, history):
    a = make_activations(40)
    v = a[5:]                                  # a view: no block of its own
    snap = M.memory_snapshot()
    assert sum(b["size"] for b in snap["blocks"]) == M.memory_allocated()
    mine = [b for b in snap["blocks"] if b["site"].endswith("in make_activations")]
    assert len(mine) == 1
    b = mine[0]
    assert b["size"] == a.nbytes and b["dtype"] == "float32" and b["shape"] == [40, 3]
    assert b["device"] == "cpu"
    assert b["address"] == a.data_ptr()
    names = [f["name"] for f in b["frames"]]
    assert "make_activations" in names and names.index("make_activations") < names.index(
        "test_snapshot_blocks_add_up_and_name_their_site")
    assert any("local variable 'a'" in h for h in b["belongs_to"])
    assert any("local variable 'v'" in h for h in b["belongs_to"])
    assert len(b["tensors"]) == 2
    del v


def test_the_trace_records_allocs_and_frees_in_order(quiet_gc, history):
    M._record_memory_history("all", clear_history=True)
    scratch(1000)
    events = [e for e in M.memory_snapshot()["trace"] if e["site"].endswith("in scratch")]
    size = torch.zeros(1000).untyped_storage().nbytes()
    allocs = [e for e in events if e["action"] == "alloc"]
    frees = [e for e in events if e["action"] == "free"]
    assert [e["size"] for e in allocs] == [size, torch.zeros(()).untyped_storage().nbytes()]
    # the zeros block is freed when scratch returns; the sum is freed at once (unused)
    assert sorted(e["size"] for e in frees) == sorted(e["size"] for e in allocs)
    first_alloc = allocs[0]
    free_of_it = next(e for e in frees if e["address"] == first_alloc["address"])
    assert free_of_it["time_us"] >= first_alloc["time_us"]


def test_max_entries_bounds_the_trace(quiet_gc):
    M._record_memory_history("all", max_entries=5, clear_history=True)
    try:
        for _ in range(10):
            ember.ones(3)
        snap = M.memory_snapshot()
        assert len(snap["trace"]) == 5
        assert snap["trace_dropped"] == 15           # 10 allocs + 10 frees, 5 kept
    finally:
        M._record_memory_history(None)


def test_state_keeps_stacks_but_no_trace(quiet_gc):
    M._record_memory_history("state", clear_history=True)
    try:
        a = make_activations(4)
        snap = M.memory_snapshot()
        assert snap["trace"] == [] and snap["history"] == "state"
        assert any(b["site"].endswith("in make_activations") for b in snap["blocks"])
    finally:
        M._record_memory_history(None)
    b = make_activations(5)                          # history off: no stack
    blk = next(x for x in M.memory_snapshot()["blocks"] if x["address"] == b.data_ptr())
    assert blk["frames"] == [] and "unknown" in blk["site"]
    del a


def test_bad_arguments():
    with pytest.raises(ValueError):
        M._record_memory_history("everything")
    with pytest.raises(ValueError):
        M._record_memory_history("all", max_entries=0)


def test_dump_snapshot_is_json_loadable_without_ember(tmp_path, history):
    keep = make_activations(7)
    path = str(tmp_path / "snap.json")
    assert M._dump_snapshot(path) == path
    code = ("import json, sys; s = json.load(open(sys.argv[1])); "
            "assert 'ember' not in sys.modules; "
            "print(s['format'], len(s['blocks']), s['stats']['allocated_bytes.all.current'])")
    out = subprocess.run([sys.executable, "-I", "-c", code, path], capture_output=True,
                         text=True, check=True).stdout.split()
    snap = json.load(open(path))
    assert out == ["ember-memory-snapshot", str(len(snap["blocks"])),
                   str(snap["stats"]["allocated_bytes.all.current"])]
    assert any(b["site"].endswith("in make_activations") for b in snap["blocks"])
    del keep


def test_memory_summary_is_a_table_of_the_stats(quiet_gc, history):
    keep = make_activations(1000)
    text = M.memory_summary()
    st = M.memory_stats()
    line = next(ln for ln in text.splitlines() if ln.startswith("| Allocated memory"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[0] == "Allocated memory" and len(cells) == 5
    assert cells[1] == M._fmt(st["allocated_bytes.all.current"])
    assert cells[2] == M._fmt(st["allocated_bytes.all.peak"])
    assert "from large pool" in text and "Allocations" in text
    assert "in make_activations" in text                # the sites of live blocks
    assert "from large pool" not in M.memory_summary(abbreviated=True)
    del keep


# ---- ember.cuda's names, against torch.cuda on this machine (no GPU) ----
def test_cuda_counters_read_as_torchs_without_a_gpu():
    assert not torch.cuda.is_available() and not ember.cuda.is_available()
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "memory_stats", "memory_stats_as_nested_dict",
                 "empty_cache"):
        mine, theirs = getattr(ember.cuda, name)(), getattr(torch.cuda, name)()
        assert mine == theirs and type(mine) is type(theirs), name
    assert ember.cuda.memory.memory_allocated() == torch.cuda.memory.memory_allocated()


@pytest.mark.parametrize("call", ["memory_summary()", "reset_peak_memory_stats()",
                                  "reset_accumulated_memory_stats()", "memory_snapshot()",
                                  "memory._record_memory_history()", "memory._snapshot()",
                                  "memory._dump_snapshot()"])
def test_cuda_calls_that_need_a_device_raise_like_torch(call):
    with pytest.raises(Exception):
        eval("torch.cuda." + call)
    with pytest.raises(RuntimeError, match="cuda"):
        eval("ember.cuda." + call)
