"""Faults never hang: a missing, dead or early-exiting rank makes the others raise a
RuntimeError naming the collective and the missing rank within the group's timeout;
mismatched collectives raise on every rank under TORCH_DISTRIBUTED_DEBUG=DETAIL (without
it a mismatch is MPI's undefined behaviour, so it is not tested); calls before init raise
torch's error.

Several faults share one launch (each on its own process group, since a failed group is
unusable), to keep CI fast; the dead rank comes last."""
import os
import re
import sys
import tempfile
from datetime import timedelta

import pytest

import ember
import ember.distributed as dist
from _mpi import env_for_ranks, requires_mpi, run_command, run_ranks

LAUNCH = ["-m", "ember.distributed.run", "--nproc-per-node", "2"]

FAULTS = r'''
import os, sys, time, signal
import ember, ember.distributed as dist
from datetime import timedelta

# the world group waits long (aligning the cases); each fault runs on its own group with a
# short timeout, since a group where a collective failed is unusable
dist.init_process_group("mpi", timeout=timedelta(seconds=60))
R = dist.get_rank()
short = timedelta(seconds=1.5)
g_trap, g_x, g_y, g_dead = (dist.new_group([0, 1], timeout=short) for _ in range(4))
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"      # read when a group is made
g_detail = dist.new_group([0, 1], timeout=short)
del os.environ["TORCH_DISTRIBUTED_DEBUG"]
flag = sys.argv[1]

def expect_error(label, fn):
    t0 = time.monotonic()
    try:
        fn()
    except RuntimeError as e:
        print(f"ERR {label} rank{R} {time.monotonic() - t0:.1f}s: {e}", flush=True)
        return True
    print(f"NOERR {label} rank{R}", flush=True)

# the seeds' trap: rank 0 "validates" (until rank 1 has given up) while rank 1 waits in barrier
if R == 0:
    deadline = time.monotonic() + 60
    while not os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.05)
    dist.barrier(g_trap)          # completes: rank 1 had posted its half before timing out
    print("rank0 validated", flush=True)
else:
    if expect_error("trap", lambda: dist.barrier(g_trap)):
        open(flag, "w").close()
    # the next call on a failed group raises at once
    expect_error("reuse", lambda: dist.all_reduce(ember.ones(1), group=g_trap))

# the ranks wait on different groups: each error says where the other rank is
dist.barrier()
expect_error("where", lambda: dist.barrier(g_x) if R == 0 else dist.all_reduce(ember.ones(2),
                                                                               group=g_y))
# mismatched collectives, caught by TORCH_DISTRIBUTED_DEBUG=DETAIL's check on every rank
dist.barrier()
t = ember.ones(4)
expect_error("order", lambda: dist.all_reduce(t, group=g_detail) if R == 0
             else dist.broadcast(t, src=0, group=g_detail))
dist.barrier()
expect_error("dtype", lambda: dist.all_reduce(
    ember.ones(4, dtype=ember.float32 if R == 0 else ember.float64), group=g_detail))
dist.barrier()
expect_error("shape", lambda: dist.all_gather_into_tensor(ember.zeros(2 * (3 + R)),
                                                          ember.ones(3 + R), group=g_detail))
# the check leaves the group usable
dist.all_reduce(t, group=g_detail)
print(f"detail group usable rank{R} {t.tolist()}", flush=True)

# a dead rank: rank 1 is killed while rank 0 is in all_reduce
dist.barrier()
if R == 1:
    os.kill(os.getpid(), signal.SIGKILL)
expect_error("dead", lambda: dist.all_reduce(ember.ones(8), group=g_dead))
'''


def _errors(out, label):
    return {int(m.group(1)): (float(m.group(2)), m.group(3)) for m in
            re.finditer(rf"^ERR {label} rank(\d) ([\d.]+)s: (.*)$", out, re.M)}


@requires_mpi
def test_faults_raise_instead_of_hanging():
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, dir="/tmp") as f:
        f.write(FAULTS)
    flag = f.name + ".gave-up"
    try:
        rc, out = run_command([sys.executable, *LAUNCH, f.name, flag], timeout=120,
                              env=env_for_ranks(), expect_rc=None)
    finally:
        for p in (f.name, flag):
            if os.path.exists(p):
                os.unlink(p)
    assert rc != 0, out                              # a rank was killed: the job failed
    assert "NOERR" not in out, out
    trap = _errors(out, "trap")
    assert set(trap) == {1}, out
    secs, msg = trap[1]
    assert "barrier" in msg and "rank 0 did not join" in msg and secs < 10, out  # not 60 s
    assert "rank0 validated" in out
    assert "unusable after an earlier failure" in _errors(out, "reuse")[1][1], out
    where = _errors(out, "where")
    assert set(where) == {0, 1}, out
    # each names where the other is, instead of calling it missing: still waiting in its
    # collective, already failed in it, or (if it gave up first) waiting in the next one
    assert re.search(r"Rank 1 (is waiting|already failed) in (all_reduce \(collective #1 on "
                     r"process group group3\)|barrier \(collective #\d+ on process group "
                     r"WORLD\))", where[0][1]), out
    assert re.search(r"Rank 0 (is waiting|already failed) in barrier \(collective #\d+ on "
                     r"process group (group2|WORLD)\)", where[1][1]), out
    assert "did not join" not in where[0][1] + where[1][1], out
    for label, words in (("order", ("all_reduce", "broadcast")), ("dtype", ("float32", "float64")),
                         ("shape", ("(3,)", "(4,)"))):
        errs = _errors(out, label)
        assert set(errs) == {0, 1}, out                         # every rank raises
        for _, msg in errs.values():
            assert "mismatched collectives" in msg and all(w in msg for w in words), out
    assert out.count("detail group usable") == 2 and "[2.0, 2.0, 2.0, 2.0]" in out, out
    dead = _errors(out, "dead")
    assert set(dead) == {0}, out
    assert "all_reduce" in dead[0][1] and "rank 1 did not join" in dead[0][1], out
    assert dead[0][0] < 10, out


EARLY = r'''
import sys, time
import ember, ember.distributed as dist
from datetime import timedelta
# a rank that raises tells the others: they must not need the (long) timeout to notice
dist.init_process_group("mpi", timeout=timedelta(seconds=60 if sys.argv[1] == "raise" else 1.5))
R = dist.get_rank()
dist.all_reduce(ember.ones(2))
if R == 1:
    if sys.argv[1] == "raise":
        raise ValueError("a bug on rank 1")
    sys.exit(0)                        # finished early, normally
t0 = time.monotonic()
try:
    dist.all_reduce(ember.ones(2))
except RuntimeError as e:
    print(f"ERR {time.monotonic() - t0:.1f}s", e, flush=True)
    sys.exit(5)
'''


@requires_mpi
@pytest.mark.parametrize("how", ["raise", "return"])
def test_rank_that_exits_early(how, tmp_path):
    script = tmp_path / "early.py"
    script.write_text(EARLY)
    rc, out = run_command([sys.executable, *LAUNCH, str(script), how],
                          timeout=90, env=env_for_ranks(), expect_rc=None)
    m = re.search(r"^ERR ([\d.]+)s (.*)$", out, re.M)
    assert m and "all_reduce" in m.group(2), out
    if how == "raise":
        assert "left the job with an error (rank 1: it raised ValueError: a bug on rank 1)" \
            in m.group(2), out
        assert float(m.group(1)) < 20, out           # well before the 60 s timeout
        assert "ValueError: a bug on rank 1" in out  # rank 1's traceback
    else:
        assert "rank 1 did not join" in m.group(2), out
    # the launcher reports the first failing rank's status
    assert rc == (1 if how == "raise" else 5), out


@requires_mpi
def test_plain_mpiexec_dead_rank_ends_the_job():
    # without the launcher, Open MPI kills the job when a rank dies: no RuntimeError, no hang
    out = run_ranks("""
        import os, signal, time, ember, ember.distributed as dist
        dist.init_process_group("mpi")
        if dist.get_rank() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(ember.ones(2))
        print("SURVIVED", flush=True)
    """, expect_rc=1, timeout=60)
    assert "SURVIVED" not in out


# ---- before init (no MPI needed) ----

NOT_INIT = "Default process group has not been initialized"


@pytest.mark.parametrize("call", [
    lambda: dist.get_rank(), lambda: dist.get_world_size(), lambda: dist.barrier(),
    lambda: dist.all_reduce(ember.ones(1)), lambda: dist.broadcast(ember.ones(1), 0),
    lambda: dist.all_gather([ember.ones(1)], ember.ones(1)), lambda: dist.new_group([0]),
    lambda: dist.send(ember.ones(1), 1), lambda: dist.get_backend(),
    lambda: dist.all_gather_object([None], 1), lambda: dist.destroy_process_group()])
def test_calls_before_init_raise_torchs_error(call):
    import torch
    import torch.distributed as tdist
    assert not dist.is_initialized()
    assert dist.group.WORLD is None and tdist.group.WORLD is None
    with pytest.raises(ValueError, match=NOT_INIT):
        tdist.all_reduce(torch.ones(1))          # the oracle's error ...
    with pytest.raises(ValueError, match=NOT_INIT):
        call()                                   # ... is ember's, for every entry point


def test_init_argument_errors_like_torch():
    import torch.distributed as tdist
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("nccl2")
    with pytest.raises(ValueError, match="init_method"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:23456")
    with pytest.raises(TypeError) as ref:
        tdist.init_process_group("gloo", timeout=5)
    with pytest.raises(TypeError) as got:
        dist.init_process_group("mpi", timeout=5)
    assert str(got.value) == str(ref.value)
    assert dist.default_pg_timeout == tdist.default_pg_timeout == timedelta(minutes=30)
    assert set(dist.ReduceOp.RedOpType.__members__) <= set(tdist.ReduceOp.RedOpType.__members__)
    assert not dist.is_initialized()
