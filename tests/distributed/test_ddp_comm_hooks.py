"""DDP communication hooks (register_comm_hook, default_hooks, GradBucket) and the Futures
they return (ember.futures, Work.get_future), against torch.

The 2-rank runs (one mpiexec launch, _commhook_worker.py) are compared with single-process
torch on the global batch; the registration errors with torch's own DDP (gloo, one
process); ember.futures.Future side by side with torch.futures.Future.
"""
import json
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember.distributed import GradBucket

try:
    from ._mpi import requires_mpi, run_ranks
except ImportError:
    from _mpi import requires_mpi, run_ranks

WORKER = Path(__file__).with_name("_commhook_worker.py")
STEPS, BATCH, SCALE = 3, 8, 0.5


def torch_mlp():
    """The worker's MLP in torch."""
    nn = torch.nn
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))


def _inputs():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    data = {f"init.{k}": v.numpy() for k, v in torch_mlp().state_dict().items()}
    data.update(X=rng.standard_normal((STEPS, BATCH, 6)).astype(np.float32),
                Y=rng.integers(0, 4, (STEPS, BATCH)), scale=np.array(SCALE))
    return data


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """(inputs, [rank 0's (arrays, info), rank 1's])."""
    folder = tmp_path_factory.mktemp("commhook")
    data = _inputs()
    np.savez(folder / "inputs.npz", **data)
    run_ranks(WORKER.read_text(), nproc=2, args=[str(folder)], timeout=120)
    ranks = [(dict(np.load(folder / f"rank{r}.npz")),
              json.loads((folder / f"rank{r}.json").read_text())) for r in range(2)]
    return data, ranks


def _model(data):
    net = torch_mlp()
    net.load_state_dict({k[5:]: torch.tensor(v) for k, v in data.items()
                         if k.startswith("init.")})
    return net


def torch_reference(data, loss_scale=1.0, micro_batches=1):
    """Single-process torch, the same 3 steps on the whole batch (accumulated over
    `micro_batches` parts of it): (params, last grads)."""
    net = _model(data)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    rows = BATCH // micro_batches
    for s in range(STEPS):
        opt.zero_grad()
        for m in range(micro_batches):
            part = slice(m * rows, (m + 1) * rows)
            loss = torch.nn.functional.cross_entropy(net(torch.tensor(data["X"][s, part])),
                                                     torch.tensor(data["Y"][s, part]))
            (loss * loss_scale).backward()
        if s < STEPS - 1:
            opt.step()
    return ({k: v.detach().numpy() for k, v in net.state_dict().items()},
            {k: p.grad.numpy() for k, p in net.named_parameters()})


def _check(results, name, atol, rtol, loss_scale=1.0, micro_batches=1):
    data, ranks = results
    params, grads = torch_reference(data, loss_scale, micro_batches)
    for arrays, _ in ranks:
        for k in params:
            np.testing.assert_allclose(arrays[f"{name}.param.{k}"], params[k], rtol=rtol,
                                       atol=atol, err_msg=f"{name} {k}")
            np.testing.assert_allclose(arrays[f"{name}.grad.{k}"], grads[k], rtol=rtol,
                                       atol=atol, err_msg=f"{name} grad {k}")
    return ranks


# ---- 2 ranks: the hooks train as torch does ----
@requires_mpi
@pytest.mark.parametrize("name", ["allreduce", "allreduce_buckets"])
def test_allreduce_hook_equals_torch_and_ddp_without_a_hook(results, name):
    ranks = _check(results, name, atol=1e-5, rtol=1e-5)
    for arrays, _ in ranks:    # the hook divides as DDP does: the same float operations
        for key in arrays:
            if key.startswith("none."):
                np.testing.assert_array_equal(arrays[key.replace("none", name, 1)],
                                              arrays[key])


@requires_mpi
def test_allreduce_hook_after_no_sync_averages_the_accumulated_sum(results):
    _check(results, "nosync", atol=1e-5, rtol=1e-5, micro_batches=2)


@requires_mpi
def test_allreduce_hook_with_find_unused_parameters(results):
    for _, info in results[1]:
        assert info["unused.none_grad"] == [False] * 4 + [True, True]
        assert info["unused.same"]


@requires_mpi
@pytest.mark.parametrize("name,dtype,atol", [
    ("fp16", torch.float16, 2e-3), ("fp16_wrapper", torch.float16, 2e-3),
    ("builtin_fp16", torch.float16, 2e-3), ("bf16", torch.bfloat16, 2e-2)])
def test_compress_hooks_equal_torch_within_their_precision(results, name, dtype, atol):
    ranks = _check(results, name, atol=atol, rtol=atol)
    for arrays, _ in ranks:    # the gradients went through the 16-bit format
        for key in arrays:
            if key.startswith(name + ".grad."):
                g = torch.tensor(arrays[key])
                assert torch.equal(g.to(dtype).float(), g), key
    np.testing.assert_array_equal(ranks[0][0][f"{name}.param.0.weight"],
                                  ranks[1][0][f"{name}.param.0.weight"])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [2, 3, 7])
def test_compressed_copy_is_torchs_cast_then_divide_bit_for_bit(dtype, n):
    from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import _compressed
    rng = np.random.default_rng(n)
    x = np.concatenate([rng.standard_normal(4000) * 10.0 ** rng.integers(-9, 5, 4000),
                        [65504.0, 65520.0, 7e4, -7e4, 1e-8, 6e-8, 0.0, -0.0, 3e38]])
    x = x.astype(np.float32)
    theirs = torch.tensor(x).to(getattr(torch, dtype)).div_(n)
    mine = _compressed(ember.tensor(x), getattr(ember, dtype), n)
    assert str(mine.dtype) == f"ember.{dtype}"
    assert torch.equal(torch.tensor(mine.float().numpy()), theirs.float())


@requires_mpi
def test_custom_hook_with_then_scales_the_sum(results):
    ranks = _check(results, "custom", atol=1e-5, rtol=1e-5, loss_scale=SCALE)
    for _, info in ranks:
        # once per bucket and backward, in bucket order, is_last on the last only (the
        # buckets are re-cut after the first backward, so their number can change once)
        seen = [tuple(x) for x in info["custom.seen"]]
        starts = [k for k, (i, _) in enumerate(seen) if i == 0] + [len(seen)]
        steps = [seen[a:b] for a, b in zip(starts, starts[1:])]
        assert len(steps) == STEPS
        for step in steps:
            assert step == [(i, i == len(step) - 1) for i in range(len(step))]
        assert len(steps[-1]) == info["custom.nbuckets"] > 1


@requires_mpi
def test_noop_hook_keeps_each_ranks_undivided_gradients(results):
    data, ranks = results
    per = BATCH // 2
    for r, (arrays, _) in enumerate(ranks):
        net = _model(data)
        torch.nn.functional.cross_entropy(net(torch.tensor(data["X"][0, r * per:(r + 1) * per])),
                                          torch.tensor(data["Y"][0, r * per:(r + 1) * per])
                                          ).backward()
        for k, p in net.named_parameters():
            np.testing.assert_allclose(arrays[f"noop.grad.{k}"], p.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)


def _per_param(buffer, order, shapes):
    """The bucket buffer cut into its parameters' gradients, keyed by parameter number."""
    out, offset = {}, 0
    for i in order:
        n = int(np.prod(shapes[i]))
        out[int(i)] = buffer[offset:offset + n].reshape(shapes[i])
        offset += n
    return out


@requires_mpi
def test_grad_bucket_is_what_torch_gives_a_hook(results, torch_ddp):
    # (the first backward's bucket layout differs: torch 2.13 starts with one bucket in
    # registration order, ember with buckets in reverse order; compare what does not
    # depend on it)
    data, ranks = results
    seen_torch, buffer_torch, order_torch = torch_ddp["spy"]
    shapes = [v.shape for k, v in data.items() if k.startswith("init.")]
    for r, (arrays, info) in enumerate(ranks):
        one = info["spy.one"]
        assert info["spy.one.nbuckets"] == len(seen_torch) == len(one) == 1
        b, t = one[0], seen_torch[0]
        for key in ("state", "index", "is_last", "numel", "views", "concat"):
            assert b[key] == t[key], key
        assert b["dtype"] == "ember.float32" and t["dtype"] == "torch.float32"
        assert sorted(b["param_ids"]) == sorted(t["param_ids"]) == list(range(4))
        assert b["grad_shapes"] == b["param_shapes"] == [list(shapes[i]) for i in
                                                         b["param_ids"]]
        assert t["grad_shapes"] == t["param_shapes"]
        if r == 0:              # the local, undivided gradients (torch ran rank 0's shard)
            mine = _per_param(arrays["spy.buffer"], arrays["spy.order"], shapes)
            theirs = _per_param(buffer_torch, order_torch, shapes)
            for i in range(4):
                np.testing.assert_allclose(mine[i], theirs[i], rtol=1e-5, atol=1e-6)
        many = info["spy.many"]
        n = info["spy.many.nbuckets"]
        assert n > 1 and [(m["index"], m["is_last"]) for m in many] == \
            [(i, i == n - 1) for i in range(n)]
        assert sorted(i for m in many for i in m["param_ids"]) == list(range(4))
        assert all(m["views"] and m["concat"] and m["grad_shapes"] == m["param_shapes"]
                   for m in many)


# ---- registration errors, against torch's DDP ----
def ident(params, p):
    return next((k for k, q in enumerate(params) if q is p), -1)


@pytest.fixture(scope="module")
def torch_ddp(tmp_path_factory):
    """torch's DDP (gloo, world size 1): its register_comm_hook errors and what its hooks
    see, the same cases as the worker's."""
    import torch.distributed as tdist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as th
    from torch.nn.parallel import DistributedDataParallel as TDDP
    store = tmp_path_factory.mktemp("torchstore") / "store"
    tdist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    data = _inputs()
    out = {}
    try:
        def make():
            return TDDP(_model(data))

        def catch(key, fn):
            try:
                fn()
                out[key] = None
            except Exception as e:
                out[key] = [type(e).__name__, str(e)]

        def no_bucket(state, b):
            pass

        def bad_bucket(state, bucket: int):
            pass

        def bad_return(state, bucket) -> int:
            pass

        def good(state, bucket: tdist.GradBucket) -> torch.futures.Future[torch.Tensor]:
            pass
        catch("not_callable", lambda: make().register_comm_hook(None, 3))
        catch("no_bucket_param", lambda: make().register_comm_hook(None, no_bucket))
        catch("bad_bucket_annotation", lambda: make().register_comm_hook(None, bad_bucket))
        catch("bad_return_annotation", lambda: make().register_comm_hook(None, bad_return))
        catch("good_annotations", lambda: make().register_comm_hook(None, good))
        m = make()
        m.register_comm_hook(None, th.allreduce_hook)
        catch("twice", lambda: m.register_comm_hook(None, th.allreduce_hook))
        catch("builtin_after_hook",
              lambda: m._register_builtin_comm_hook(tdist.BuiltinCommHookType.ALLREDUCE))
        m = make()
        m._register_builtin_comm_hook(tdist.BuiltinCommHookType.FP16_COMPRESS)
        catch("hook_after_builtin", lambda: m.register_comm_hook(None, th.allreduce_hook))
        per = BATCH // 2
        x, y = torch.tensor(data["X"][0, :per]), torch.tensor(data["Y"][0, :per])
        m = make()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        catch("after_backward", lambda: m.register_comm_hook(None, th.allreduce_hook))
        m = make()
        m.register_comm_hook(None, lambda state, bucket: bucket.buffer())
        catch("returns_a_tensor", lambda: torch.nn.functional.cross_entropy(m(x), y).backward())
        # what a hook sees
        m = make()
        params = list(m.parameters())
        seen, spied = [], {}

        def spy(state, bucket):
            buf, grads = bucket.buffer(), bucket.gradients()
            seen.append({
                "state": state, "index": bucket.index(), "is_last": bucket.is_last(),
                "numel": buf.numel(), "dtype": str(buf.dtype),
                "param_ids": [ident(params, p) for p in bucket.parameters()],
                "grad_shapes": [list(g.shape) for g in grads],
                "param_shapes": [list(p.shape) for p in bucket.parameters()],
                "views": all(np.shares_memory(g.numpy(), buf.numpy()) for g in grads),
                "concat": bool(torch.equal(torch.cat([g.reshape(-1) for g in grads]), buf)),
            })
            spied["buffer"] = buf.numpy().copy()
            spied["order"] = np.array([ident(params, p) for p in bucket.parameters()])
            return th.allreduce_hook(None, bucket)
        m.register_comm_hook("one", spy)
        torch.nn.functional.cross_entropy(m(x), y).backward()
        out["spy"] = (seen, spied["buffer"], spied["order"])
    finally:
        tdist.destroy_process_group()
    return out


ERROR_CASES = ["not_callable", "no_bucket_param", "bad_bucket_annotation",
               "bad_return_annotation", "good_annotations", "twice", "builtin_after_hook",
               "hook_after_builtin", "after_backward"]


@requires_mpi
@pytest.mark.parametrize("case", ERROR_CASES)
def test_register_comm_hook_errors_match_torch(results, torch_ddp, case):
    for _, info in results[1]:
        assert info["err." + case] == torch_ddp[case]


@requires_mpi
def test_a_hook_that_returns_no_future_raises_like_torch(results, torch_ddp):
    kind, msg = torch_ddp["returns_a_tensor"]
    for _, info in results[1]:
        ekind, emsg = info["err.returns_a_tensor"]
        assert ekind == kind == "RuntimeError"
        head = "DDP communication hook's callback must return a torch.futures.Future " \
               "object, but got "
        assert head in msg and emsg == head + "ember.Tensor"


@requires_mpi
def test_a_future_holding_an_exception_raises_it_from_backward(results):
    for _, info in results[1]:      # (torch: RuntimeError "Unable to cast boom to Tensor")
        assert info["err.future_exception"] == ["ValueError", "boom"]


# ---- Work.get_future() ----
@requires_mpi
def test_work_get_future(results):
    for r, (_, info) in enumerate(results[1]):
        assert info["fut.same_future"] and info["fut.value_is_list_of_input"]
        assert info["fut.sum"] == [3.0] * 3 and info["fut.then"] == [9.0] * 3
        assert info["fut.done"] == [True, True, True]
        assert info["fut.broadcast"] == [1.0, 1.0]
        assert info["fut.chain"] == [30.0, 30.0]
        assert info["fut.wait_all"] == [[2.0], [4.0]]


# ---- ember.futures.Future against torch.futures.Future ----
def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:
        return (type(e).__name__, str(e).split("\n")[0])


@pytest.mark.parametrize("lib", [torch, ember])
def test_future_basics(lib):
    F = lib.futures.Future
    f = F()
    assert not f.done()
    f.set_result(3)
    assert f.done() and f.wait() == 3 and f.value() == 3


def test_future_behaves_like_torchs():
    cases = {}
    for lib in (torch, ember):
        F = lib.futures.Future
        got = cases.setdefault(lib.__name__, [])
        f = F()
        f.set_result(5)
        got.append(_outcome(lambda: f.set_result(6)))
        got.append(_outcome(lambda: f.then(lambda x: x.value() * 2).wait()))
        e = F()
        e.set_exception(ValueError("foo"))
        got.append(e.done())
        got.append(_outcome(e.wait))
        got.append(_outcome(e.value))
        got.append(_outcome(lambda: e.then(lambda x: x.value()).wait()))
        got.append(_outcome(lambda: f.then(lambda x: {}["k"]).wait()))
        got.append(_outcome(lambda: F().set_exception(3)))
        g = F()
        g.set_exception(KeyError("a"))
        got.append(_outcome(lambda: g.set_exception(KeyError("b"))))
        # callbacks of a pending Future run when it completes, in order; then() chains
        p, order = F(), []
        p.add_done_callback(lambda x: order.append(("cb", x.value())))
        q = p.then(lambda x: order.append("then") or x.value() + 1)
        r = q.then(lambda x: x.value() * 10)
        got.append((list(order), q.done(), r.done()))
        p.set_result(1)
        got.append((order, q.wait(), r.wait(), q.done()))
        # an already completed Future runs the callback at once
        done_now = []
        f.add_done_callback(lambda x: done_now.append(x.value()))
        got.append(done_now)
        got.append(lib.futures.wait_all([f, p, q]))
        c = lib.futures.collect_all([f, q])
        got.append([x.value() for x in c.wait()])
        got.append(_outcome(lambda: lib.futures.wait_all([f, e])))
    assert cases["torch"] == cases["ember"]


def test_future_set_from_another_thread_wakes_wait():
    f = ember.futures.Future()
    child = f.then(lambda x: x.value() + 1)
    t = threading.Timer(0.05, lambda: f.set_result(41))
    t.start()
    assert child.wait() == 42 and f.wait() == 41
    t.join()


def test_future_generic_alias_and_callback_error_chain():
    assert ember.futures.Future[ember.Tensor] == ember.futures.Future[ember.Tensor]
    f = ember.futures.Future()
    f.set_result(1)
    child = f.then(lambda x: 1 / 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError") as info:
        child.wait()
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_grad_bucket_has_torchs_methods():
    import torch.distributed as tdist
    public = {m for m in dir(tdist.GradBucket) if not m.startswith("_")}
    assert public <= {m for m in dir(GradBucket) if not m.startswith("_")}
    buf = ember.arange(5.0)
    views = [buf[:2].view(2, 1), buf[2:]]
    p = [ember.nn.Parameter(ember.zeros(2, 1)), ember.nn.Parameter(ember.zeros(3))]
    b = GradBucket(1, buf, views, p, True)
    assert b.index() == 1 and b.is_last() and b.buffer() is buf
    assert b.gradients()[0] is views[0] and b.parameters()[1] is p[1]
    half = buf.to(ember.float16)
    b.set_buffer(half)
    assert b.buffer() is half and b.gradients()[0] is views[0]
