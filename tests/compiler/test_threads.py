"""ember.set_num_threads sets the BLAS's thread count too (through threadpoolctl, a runtime
dependency): without it OpenBLAS kept its own threads and "1 thread" runs fell to a tenth of
their speed beside another busy process."""
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_threadpoolctl_is_a_runtime_dependency():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = [d.split(">")[0].split("=")[0].strip() for d in meta["project"]["dependencies"]]
    assert "threadpoolctl" in deps


_PROBE = """
import ember, numpy, threadpoolctl
for n in {counts}:
    ember.set_num_threads(n)
    blas = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    print(n, ember.get_num_threads(), *blas)
"""


def test_set_num_threads_limits_blas():
    # a fresh process: the suite's conftest already pinned this one's threads
    out = subprocess.run([sys.executable, "-c", _PROBE.format(counts=[1, 2, 1])],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    rows = [list(map(int, line.split())) for line in out.stdout.split("\n") if line.strip()]
    assert len(rows) == 3
    for row in rows:
        asked, got = row[0], row[1]
        assert got == asked
        assert len(row) > 2, "no BLAS found by threadpoolctl"
        assert all(b == asked for b in row[2:]), row


def test_set_num_threads_rejects_non_positive():
    import ember
    with pytest.raises(RuntimeError):
        ember.set_num_threads(0)
