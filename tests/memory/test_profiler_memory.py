"""profile(profile_memory=True): memory per op in key_averages() and its table, and torch's
[memory] events in the Chrome trace, checked against torch running the same program."""
import json

import torch

import ember


def program(lib, path):
    """The same profiling code for torch and ember."""
    x = lib.ones(128, 64)
    w = lib.ones(64, 32)
    with lib.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True) as prof:
        y = x + x                  # a new 128x64 float32 block
        z = y.mm(w)                # a new 128x32 block
        s = z.sum()                # a 0-d block
        del y
    prof.export_chrome_trace(path)
    return prof, (z, s)


def rows(prof, lib):
    prefix = "aten::" if lib is torch else "ember::"
    return {r.key[len(prefix):]: r for r in prof.key_averages() if r.key.startswith(prefix)}


def test_memory_per_op_matches_torch(tmp_path):
    tp, _ = program(torch, str(tmp_path / "t.json"))
    ep, _ = program(ember, str(tmp_path / "e.json"))
    theirs, mine = rows(tp, torch), rows(ep, ember)
    for op in ("add", "mm", "sum"):
        assert mine[op].self_cpu_memory_usage == theirs[op].self_cpu_memory_usage, op
        assert mine[op].cpu_memory_usage == theirs[op].cpu_memory_usage, op


def test_table_sorted_by_self_memory(tmp_path):
    ep, _ = program(ember, str(tmp_path / "e.json"))
    table = ep.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=3)
    lines = table.splitlines()
    head = lines[1]
    assert "CPU Mem" in head and "Self CPU Mem" in head
    body = [ln for ln in lines[3:] if ln.startswith("ember::")]
    assert body[0].startswith("ember::add") or body[0].startswith("ember::mm")
    assert "32.00 KB" in body[0]           # 128 * 64 * 4 bytes, torch's format
    stacked = ep.key_averages(group_by_stack_n=1).table(sort_by="self_cpu_memory_usage")
    assert "Source Location" in stacked and "test_profiler_memory.py" in stacked


def test_chrome_trace_has_torchs_memory_events(tmp_path):
    for lib, name in ((torch, "t.json"), (ember, "e.json")):
        path = str(tmp_path / name)
        _, keep = program(lib, path)
        events = json.load(open(path))["traceEvents"]
        mem = [e for e in events if e["name"] == "[memory]"]
        allocs = [e["args"]["Bytes"] for e in mem if e["args"]["Bytes"] > 0]
        frees = [e["args"]["Bytes"] for e in mem if e["args"]["Bytes"] < 0]
        assert 128 * 64 * 4 in allocs and 128 * 32 * 4 in allocs, lib.__name__
        assert -128 * 64 * 4 in frees, lib.__name__          # y freed inside the profile
        for e in mem:
            assert e["ph"] == "i" and {"Addr", "Total Allocated"} <= set(e["args"])
    ember_ops = [e for e in json.load(open(tmp_path / "e.json"))["traceEvents"]
                 if e["name"] == "ember::add"]
    assert ember_ops[0]["args"]["Self CPU Mem"] == 128 * 64 * 4
