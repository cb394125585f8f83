"""Every collective on 2 ranks against a NumPy reference, in one mpiexec launch (each launch
costs seconds): in-place results, non-contiguous tensors, dtypes, async Work, groups,
object collectives and point-to-point. Each check prints "PASS <name>" or "FAIL <name>";
the test asserts every check passed on both ranks."""
import re

from _mpi import requires_mpi, run_ranks

CHECKS = r'''
import traceback
import numpy as np
import ember
import ember.distributed as dist
from datetime import timedelta

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
R, N = dist.get_rank(), dist.get_world_size()
assert N == 2

def per_rank(r, shape=(3, 4), dtype=np.float32):
    # each rank's distinct input: the reference sees all of them
    rng = np.random.default_rng(100 + r)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-5, 6, shape).astype(dtype)

def check(name):
    def deco(fn):
        try:
            fn()
            print("PASS", name, flush=True)
        except Exception:
            print("FAIL", name, traceback.format_exc().replace("\n", " | "), flush=True)
        return fn
    return deco

def close(a, b, tol=1e-5):
    a = a.numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    assert a.shape == np.shape(b), (a.shape, np.shape(b))
    np.testing.assert_allclose(a.astype(np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)

REFS = {"SUM": np.sum, "PRODUCT": np.prod, "MIN": np.min, "MAX": np.max,
        "AVG": lambda x, axis: np.mean(x, axis=axis)}

@check("state")
def _():
    assert dist.is_initialized() and dist.is_available()
    assert dist.get_backend() == "mpi"
    assert dist.group.WORLD is not None and dist.group.WORLD.size() == 2
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0, 1]
    try:
        dist.init_process_group("mpi")
        raise AssertionError("double init accepted")
    except ValueError as e:
        assert "twice" in str(e)

for opname, ref in REFS.items():
    for dt in (np.float32, np.float64, np.int64):
        if opname == "AVG" and dt is np.int64:
            continue
        @check(f"all_reduce {opname} {np.dtype(dt).name}")
        def _():
            t = ember.tensor(per_rank(R, dtype=dt))
            dist.all_reduce(t, op=getattr(dist.ReduceOp, opname))
            close(t, ref(np.stack([per_rank(r, dtype=dt) for r in range(N)]), axis=0))

@check("all_reduce bool/int8/float16/bfloat16")
def _():
    t = ember.tensor(per_rank(R, dtype=bool))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert (t.numpy() == np.logical_or(per_rank(0, dtype=bool), per_rank(1, dtype=bool))).all()
    t = ember.tensor(per_rank(R, dtype=np.int8))
    dist.all_reduce(t)
    assert t.dtype == ember.int8
    close(t, per_rank(0, dtype=np.int8) + per_rank(1, dtype=np.int8))
    for edt in (ember.float16, ember.bfloat16):
        x = ember.tensor(per_rank(R)).to(edt)
        dist.all_reduce(x)
        assert x.dtype == edt
        want = sum(ember.tensor(per_rank(r)).to(edt).float().numpy() for r in range(N))
        close(x.float(), want, tol=2e-2)

@check("all_reduce non-contiguous, 0-d, empty, version bump")
def _():
    base = ember.tensor(per_rank(R, (4, 6)))
    view = base.t()[::2]                       # non-contiguous view into base
    v0 = base._version
    dist.all_reduce(view)
    full = sum(per_rank(r, (4, 6)) for r in range(N))
    mine = per_rank(R, (4, 6))
    expect = mine.copy(); expect.T[::2] = full.T[::2]
    close(base, expect)                        # the view's elements changed in base, only they
    assert base._version > v0
    s = ember.tensor(float(R + 1)); dist.all_reduce(s); close(s, 3.0)
    e = ember.zeros(0); dist.all_reduce(e); assert e.shape == (0,)

@check("async all_reduce Work")
def _():
    t = ember.tensor(per_rank(R, (1000,)))
    w = dist.all_reduce(t, async_op=True)
    assert isinstance(w, dist.Work)
    assert w.wait() is True and w.is_completed()
    close(t, per_rank(0, (1000,)) + per_rank(1, (1000,)))
    ws = [dist.all_reduce(ember.ones(5) * i, async_op=True) for i in range(3)]
    for w in ws:
        w.wait(timeout=timedelta(seconds=30))
    r = ws[2].result()[0]
    close(r, np.full(5, 4.0))

@check("broadcast from each root, group_src")
def _():
    for root in range(N):
        t = ember.tensor(per_rank(R, (2, 3), np.int32))
        dist.broadcast(t, src=root)
        close(t, per_rank(root, (2, 3), np.int32))
    t = ember.tensor(per_rank(R, (5,), np.float64)).to(ember.bfloat16)
    dist.broadcast(t, group_src=1)
    close(t.float(), ember.tensor(per_rank(1, (5,), np.float64)).to(ember.bfloat16).float(), 0)
    try:
        dist.broadcast(t)
        raise AssertionError("no src accepted")
    except ValueError:
        pass

@check("reduce")
def _():
    for root in range(N):
        t = ember.tensor(per_rank(R))
        dist.reduce(t, dst=root, op=dist.ReduceOp.MAX)
        if R == root:
            close(t, np.max([per_rank(r) for r in range(N)], axis=0))
        else:
            close(t, per_rank(R))

@check("all_gather (even and uneven) and all_gather_into_tensor")
def _():
    outs = [ember.zeros(3, 4) for _ in range(N)]
    dist.all_gather(outs, ember.tensor(per_rank(R)))
    for r in range(N):
        close(outs[r], per_rank(r))
    outs = [ember.zeros(r + 1, dtype=ember.int64) for r in range(N)]
    dist.all_gather(outs, ember.arange(R + 1) + 10 * R)
    for r in range(N):
        close(outs[r], np.arange(r + 1) + 10 * r)
    out = ember.zeros(N * 3, 4)
    dist.all_gather_into_tensor(out, ember.tensor(per_rank(R)))
    close(out, np.concatenate([per_rank(r) for r in range(N)]))
    out = ember.zeros(N, 3, 4)
    w = dist.all_gather_into_tensor(out, ember.tensor(per_rank(R)).t().contiguous().t(),
                                    async_op=True)
    w.wait()
    close(out, np.stack([per_rank(r) for r in range(N)]))
    try:
        dist.all_gather_into_tensor(ember.zeros(5), ember.zeros(3))
        raise AssertionError("bad size accepted")
    except ValueError:
        pass

@check("reduce_scatter and reduce_scatter_tensor")
def _():
    ins = [ember.tensor(per_rank(R, (2, 2)) + i) for i in range(N)]
    out = ember.zeros(2, 2)
    dist.reduce_scatter(out, ins)
    close(out, sum(per_rank(r, (2, 2)) + R for r in range(N)))
    inp = ember.tensor(per_rank(R, (N * 3, 2)))
    out = ember.zeros(3, 2)
    dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.AVG)
    full = np.mean([per_rank(r, (N * 3, 2)) for r in range(N)], axis=0)
    close(out, full[3 * R:3 * R + 3])

@check("all_to_all and all_to_all_single")
def _():
    ins = [ember.full((j + 1,), float(10 * R + j)) for j in range(N)]
    outs = [ember.zeros(R + 1) for _ in range(N)]
    dist.all_to_all(outs, ins)
    for src in range(N):
        close(outs[src], np.full(R + 1, 10 * src + R))
    inp = ember.arange(4 * N, dtype=ember.float32).reshape(2 * N, 2) + 100 * R
    out = ember.zeros(2 * N, 2)
    dist.all_to_all_single(out, inp)
    want = np.concatenate([(np.arange(4 * N).reshape(2 * N, 2) + 100 * s)[2 * R:2 * R + 2]
                           for s in range(N)])
    close(out, want)
    # uneven splits: rank s sends s+1+j rows to rank j
    ins_rows = [s_j for s_j in range(N)]
    in_split = [R + 1 + j for j in range(N)]
    out_split = [s + 1 + R for s in range(N)]
    inp = ember.tensor(np.arange(sum(in_split) * 3, dtype=np.float32).reshape(-1, 3) + 1000 * R)
    out = ember.zeros(sum(out_split), 3)
    dist.all_to_all_single(out, inp, out_split, in_split)
    pieces = []
    for s in range(N):
        src = np.arange(sum(s + 1 + j for j in range(N)) * 3, dtype=np.float32).reshape(-1, 3) + 1000 * s
        start = sum(s + 1 + j for j in range(R))
        pieces.append(src[start:start + s + 1 + R])
    close(out, np.concatenate(pieces))

@check("gather and scatter")
def _():
    for root in range(N):
        lst = [ember.zeros(3, 4) for _ in range(N)] if R == root else None
        dist.gather(ember.tensor(per_rank(R)), lst, dst=root)
        if R == root:
            for r in range(N):
                close(lst[r], per_rank(r))
        out = ember.zeros(3, 4)
        lst = [ember.tensor(per_rank(root) + i) for i in range(N)] if R == root else None
        dist.scatter(out, lst, src=root)
        close(out, per_rank(root) + R)

@check("send/recv/isend/irecv, batch_isend_irecv")
def _():
    peer = 1 - R
    if R == 0:
        dist.send(ember.tensor(per_rank(0)), dst=1)
        t = ember.zeros(3, 4)
        assert dist.recv(t) == 1            # any source: returns the sender
        close(t, per_rank(1))
    else:
        t = ember.zeros(3, 4)
        assert dist.recv(t, src=0) == 0
        close(t, per_rank(0))
        dist.send(ember.tensor(per_rank(1)), dst=0)
    out = ember.zeros(6).reshape(2, 3).t()     # non-contiguous receive buffer
    ws = dist.batch_isend_irecv([dist.P2POp(dist.isend, ember.arange(6.).reshape(3, 2) * (R + 1), peer),
                                 dist.P2POp(dist.irecv, out, peer)])
    for w in ws:
        w.wait()
    close(out, np.arange(6.).reshape(3, 2) * (peer + 1))
    try:
        dist.send(ember.zeros(1), dst=R)
        raise AssertionError("send to self accepted")
    except ValueError:
        pass

@check("barrier and monitored_barrier")
def _():
    dist.barrier()
    dist.barrier(async_op=True).wait()
    dist.monitored_barrier(timeout=timedelta(seconds=30))

@check("new_group: member and non-member")
def _():
    g_all = dist.new_group([1, 0])
    assert dist.get_world_size(g_all) == 2 and dist.get_rank(g_all) == R
    t = ember.ones(2) * (R + 1)
    dist.all_reduce(t, group=g_all)
    close(t, [3, 3])
    g1 = dist.new_group([1])
    if R == 1:
        assert dist.get_rank(g1) == 0 and dist.get_world_size(g1) == 1
        t = ember.ones(2) * 7
        dist.all_reduce(t, group=g1)
        close(t, [7, 7])
        dist.broadcast(t, src=1, group=g1)   # src is a global rank
    else:
        assert g1 is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g1) == -1
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert dist.all_reduce(ember.ones(1), group=g1) is None
        assert any("does not belong" in str(x.message) for x in w)
    dist.destroy_process_group(g_all)

@check("object collectives")
def _():
    objs = [{"a": 1, "r": R}, "x" * (R + 5), None] if R == 1 else [None, None, None]
    dist.broadcast_object_list(objs, src=1)
    assert objs == [{"a": 1, "r": 1}, "x" * 6, None], objs
    out = [None] * N
    dist.all_gather_object(out, {"rank": R, "data": list(range(R * 3))})
    assert out == [{"rank": r, "data": list(range(r * 3))} for r in range(N)], out
    for root in range(N):
        lst = [None] * N if R == root else None
        dist.gather_object(("hi", R), lst, dst=root)
        if R == root:
            assert lst == [("hi", r) for r in range(N)], lst
    got = [None]
    dist.scatter_object_list(got, [f"to{r}" for r in range(N)] if R == 0 else None, src=0)
    assert got == [f"to{R}"], got

@check("dropped async Works stay alive until they complete")
def _():
    import gc
    # the group keeps Works the caller dropped (and their packed buffers) until they
    # complete, so nothing is freed under MPI's feet
    outs = [[ember.zeros(1000) for _ in range(N)] for _ in range(100)]
    for o in outs:
        dist.all_gather(o, ember.full((1000,), float(R)), async_op=True)
    gc.collect()
    for w in list(dist.group.WORLD.inflight):
        w.wait()
    assert not dist.group.WORLD.inflight
    for o in outs:
        for r in range(N):
            close(o[r], np.full(1000, float(r)))

dist.destroy_process_group()
assert not dist.is_initialized()
print("DONE", R, flush=True)
'''


@requires_mpi
def test_collectives_match_numpy_on_two_ranks():
    out = run_ranks(CHECKS, nproc=2, timeout=120)
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert not fails, "\n".join(fails) + "\n---- all output ----\n" + out
    passes = re.findall(r"^PASS (.+)$", out, re.M)
    assert len(passes) >= 2 * 26, out       # every check ran on both ranks
    assert out.count("DONE") == 2, out

