"""The memory viewer: the page's data (timeline replay, diff) checked exactly, the page
self-contained, the command line, and the page in a real headless Chromium (no console
errors, the expected site names, a stack shown on click, a screenshot)."""
import json
import os
import subprocess
import sys

import pytest

import ember
from ember import memory as M
from ember.memory import viz

from . import cdp


def grow(n):
    return [ember.ones(n) for _ in range(3)]


def temporary(n):
    return ember.zeros(n).sum()


def snapshot_of_a_run():
    """(snapshot, tensors kept): three blocks that stay, one temporary that goes."""
    M._record_memory_history("all", clear_history=True)
    keep = grow(256)
    temporary(1024)
    return M.memory_snapshot(), keep


def test_timeline_replays_the_trace_per_site(history):
    snap, keep = snapshot_of_a_run()
    tl = viz.timeline(snap)
    grow_site = next(s for s in tl["sites"] if s.endswith("in grow"))
    tmp_site = next(s for s in tl["sites"] if s.endswith("in temporary"))
    block = keep[0].nbytes
    # grow's blocks come one by one and stay; temporary's come and go, ending at zero
    g = tl["series"][grow_site]
    assert g[0] == 0 and g[-1] == 3 * block
    assert sorted(set(g)) == [0, block, 2 * block, 3 * block]
    t = tl["series"][tmp_site]
    assert t[0] == 0 and t[-1] == 0 and max(t) >= ember.zeros(1024).nbytes
    assert len(tl["t"]) == len(g) == len(snap["trace"]) + 1


def test_diff_names_what_grew_and_what_is_new(history):
    before, keep = snapshot_of_a_run()
    more = grow(512)
    after = M.memory_snapshot()
    d = viz.diff(before, after)
    row = next(r for r in d["sites"] if r["site"].endswith("in grow"))
    assert row["delta"] == sum(t.nbytes for t in more)
    new = [b for b in d["new_blocks"] if b["site"].endswith("in grow")]
    assert sorted(b["size"] for b in new) == [t.nbytes for t in more]
    assert d["after_total"] - d["before_total"] == sum(t.nbytes for t in more)
    del keep


def test_the_page_is_self_contained(history):
    snap, keep = snapshot_of_a_run()
    page = viz.render(snap)
    assert "<link" not in page and " src=" not in page
    assert page.count("http") == page.count("http://www.w3.org/2000/svg")  # no network
    data = page.split('id="data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data.replace("<\\/", "</"))["n_blocks"] == len(snap["blocks"])


def test_command_line(tmp_path, history, capsys):
    snap, keep = snapshot_of_a_run()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(snap))
    b.write_text(json.dumps(M.memory_snapshot()))
    assert viz.main([str(a), str(b), "-o", str(tmp_path / "two.html")]) == 0
    assert "Diff against" in (tmp_path / "two.html").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SystemExit):
        viz.main([str(bad)])
    assert "not an ember memory snapshot" in capsys.readouterr().err
    # and once as the documented command, in a fresh interpreter
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ember.__file__)))
    r = subprocess.run([sys.executable, "-m", "ember.memory.viz", str(a), "-o",
                        str(tmp_path / "one.html")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "one.html").read_text().startswith("<!DOCTYPE html>")


def _need_browser():
    if cdp.chromium() is None:
        if os.environ.get("EMBER_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required here (EMBER_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("chromium is not installed (`make test` installs it where it can)")


PROBE = """JSON.stringify({
  ready: document.body.dataset.ready,
  text: document.body.innerText,
  bands: document.querySelectorAll('#timeline path').length,
  rows: document.querySelectorAll('tr.blk').length,
  stack: (() => { const r = [...document.querySelectorAll('tr.blk')]
                    .find(row => row.innerText.includes('in grow'));
                  if (!r) return null;
                  r.click();
                  return r.nextSibling.hidden ? null : r.nextSibling.innerText; })()
})"""


def test_the_page_in_a_real_browser(tmp_path, history):
    _need_browser()
    before, keep = snapshot_of_a_run()
    more = grow(64)
    after = M.memory_snapshot()
    path = tmp_path / "memory.html"
    path.write_text(viz.render(after, before, title="test"))
    result = cdp.load(str(path), PROBE)
    assert result["errors"] == []
    page = json.loads(result["value"])
    assert page["ready"] == "1"
    assert "in grow" in page["text"] and "in temporary" in page["text"]
    assert "Diff against the earlier snapshot" in page["text"]
    assert page["bands"] == len(viz.timeline(after)["sites"])
    # (the table shows the largest MAX_BLOCKS blocks; a test worker may hold many more)
    assert page["rows"] == min(len(after["blocks"]), viz.MAX_BLOCKS)
    assert page["stack"] is not None and "test_viz.py" in page["stack"]   # rows open
    assert result["png"][:8] == b"\x89PNG\r\n\x1a\n"
    del keep, more
