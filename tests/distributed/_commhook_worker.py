"""The rank side of tests/distributed/test_ddp_comm_hooks.py (mpiexec -n 2, one launch for
every check).

    python _commhook_worker.py DIR      # DIR/inputs.npz in, DIR/rank{r}.npz + .json out

Trains the test MLP for 3 SGD steps under DDP with each communication hook, each rank on
its half of the global batch, and saves the parameters and the last gradients; the pytest
process compares them with single-process torch. Also records what hooks see (GradBucket),
the errors of register_comm_hook (compared there with torch's), and Work.get_future().
"""
import json
import sys

import numpy as np

import ember as torch
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP


def mlp():
    """The test MLP (the same layers as test_ddp_comm_hooks.torch_mlp)."""
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))


def make(data, **ddp_kwargs):
    net = mlp()
    net.load_state_dict({k[5:]: torch.tensor(v) for k, v in data.items()
                         if k.startswith("init.")})
    return DDP(net, **ddp_kwargs)


def shard(data, s, rank, ws):
    X, Y = data["X"], data["Y"]
    per = X.shape[1] // ws
    return (torch.tensor(X[s, rank * per:(rank + 1) * per]),
            torch.tensor(Y[s, rank * per:(rank + 1) * per]))


def train(data, rank, ws, out, name, hook=None, state=None, builtin=None, **ddp_kwargs):
    model = make(data, **ddp_kwargs)
    if hook is not None:
        model.register_comm_hook(state, hook)
    if builtin is not None:
        model._register_builtin_comm_hook(builtin)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for s in range(data["X"].shape[0]):
        opt.zero_grad()
        x, y = shard(data, s, rank, ws)
        F.cross_entropy(model(x), y).backward()
        if s < data["X"].shape[0] - 1:
            opt.step()
    for k, v in model.module.state_dict().items():
        out[f"{name}.param.{k}"] = v.numpy().copy()
    for k, p in model.module.named_parameters():
        out[f"{name}.grad.{k}"] = p.grad.numpy().copy()
    return model


def train_no_sync(data, rank, ws, out, name, hook):
    """3 steps, each accumulating 2 micro-batches, the first under no_sync: the hook gets
    the sum of both, undivided."""
    model = make(data)
    model.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    X, Y = data["X"], data["Y"]
    micro = X.shape[1] // 2
    per = micro // ws
    for s in range(X.shape[0]):
        opt.zero_grad()
        for m in range(2):
            lo = m * micro + rank * per
            x, y = torch.tensor(X[s, lo:lo + per]), torch.tensor(Y[s, lo:lo + per])
            if m == 0:
                with model.no_sync():
                    F.cross_entropy(model(x), y).backward()
            else:
                F.cross_entropy(model(x), y).backward()
        if s < X.shape[0] - 1:
            opt.step()
    for k, v in model.module.state_dict().items():
        out[f"{name}.param.{k}"] = v.numpy().copy()
    for k, p in model.module.named_parameters():
        out[f"{name}.grad.{k}"] = p.grad.numpy().copy()


class WithUnused(nn.Module):
    def __init__(self, data):
        super().__init__()
        self.mlp = make(data).module
        self.unused = nn.Linear(3, 3)

    def forward(self, x):
        return self.mlp(x)


def unused_parameters(data, rank, ws, info):
    """find_unused_parameters=True with allreduce_hook: the same .grad as without a hook
    (None for the parameter no rank used)."""
    grads = []
    for hook in (None, default_hooks.allreduce_hook):
        torch.manual_seed(0)
        model = DDP(WithUnused(data), find_unused_parameters=True)
        if hook is not None:
            model.register_comm_hook(None, hook)
        x, y = shard(data, 0, rank, ws)
        F.cross_entropy(model(x), y).backward()
        grads.append([None if p.grad is None else p.grad.numpy().copy()
                      for p in model.module.parameters()])
    info["unused.none_grad"] = [g is None for g in grads[1]]
    info["unused.same"] = all((a is None and b is None) or
                              (a is not None and b is not None and np.array_equal(a, b))
                              for a, b in zip(*grads))


def scaled_allreduce(state, bucket):
    """A custom hook: the sum over the ranks (then()), times state["scale"] / world size;
    records what it was given."""
    state["seen"].append([bucket.index(), bool(bucket.is_last())])
    fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

    def scale(f):
        return f.value()[0].mul_(state["scale"] / dist.get_world_size())
    return fut.then(scale)


def noop(state, bucket):
    """torch's documented no-op hook: each rank keeps its own (undivided) gradients."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def ident(params, p):
    """Position of `p` in `params` by identity (-1: not a model parameter)."""
    return next((k for k, q in enumerate(params) if q is p), -1)


def spy_buckets(data, rank, ws, out, info):
    """What a hook is given, for one backward with one bucket and one with several."""
    for tag, kwargs in (("one", {}), ("many", {"bucket_cap_mb": 0.0001})):
        model = make(data, **kwargs)
        params = list(model.parameters())
        seen = []

        def spy(state, bucket):
            buf = bucket.buffer()
            grads = bucket.gradients()
            seen.append({
                "state": state, "index": bucket.index(), "is_last": bool(bucket.is_last()),
                "numel": buf.numel(), "dtype": str(buf.dtype),
                "param_ids": [ident(params, p) for p in bucket.parameters()],
                "grad_shapes": [list(g.shape) for g in grads],
                "param_shapes": [list(p.shape) for p in bucket.parameters()],
                "views": all(np.shares_memory(g.numpy(), buf.numpy()) for g in grads),
                "concat": bool(np.array_equal(np.concatenate([g.numpy().ravel() for g in grads]),
                                              buf.numpy())),
            })
            if tag == "one":
                out["spy.buffer"] = buf.numpy().copy()
                out["spy.order"] = np.array([ident(params, p) for p in bucket.parameters()])
            return default_hooks.allreduce_hook(None, bucket)
        model.register_comm_hook(tag, spy)
        info["spy." + tag + ".nbuckets"] = len(model._buckets)   # (before the re-cut)
        x, y = shard(data, 0, rank, ws)
        F.cross_entropy(model(x), y).backward()
        info["spy." + tag] = seen


def errors(data, info):
    """register_comm_hook's errors (type and message), for the pytest side to compare."""
    def catch(key, fn):
        try:
            fn()
            info["err." + key] = None
        except Exception as e:
            info["err." + key] = [type(e).__name__, str(e)]

    def no_bucket(state, b):
        pass

    def bad_bucket(state, bucket: int):
        pass

    def bad_return(state, bucket) -> int:
        pass

    def good(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        pass

    catch("not_callable", lambda: make(data).register_comm_hook(None, 3))
    catch("no_bucket_param", lambda: make(data).register_comm_hook(None, no_bucket))
    catch("bad_bucket_annotation", lambda: make(data).register_comm_hook(None, bad_bucket))
    catch("bad_return_annotation", lambda: make(data).register_comm_hook(None, bad_return))
    catch("good_annotations", lambda: make(data).register_comm_hook(None, good))
    m = make(data)
    m.register_comm_hook(None, default_hooks.allreduce_hook)
    catch("twice", lambda: m.register_comm_hook(None, default_hooks.allreduce_hook))
    catch("builtin_after_hook",
          lambda: m._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE))
    m = make(data)
    m._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    catch("hook_after_builtin",
          lambda: m.register_comm_hook(None, default_hooks.allreduce_hook))
    x, y = shard(data, 0, dist.get_rank(), dist.get_world_size())
    m = make(data)          # (registering after a backward is allowed, as in torch)
    F.cross_entropy(m(x), y).backward()
    catch("after_backward", lambda: m.register_comm_hook(None, default_hooks.allreduce_hook))
    m = make(data)
    m.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    catch("returns_a_tensor", lambda: F.cross_entropy(m(x), y).backward())

    def failed(state, bucket):
        fut = torch.futures.Future()
        fut.set_exception(ValueError("boom"))
        return fut
    m = make(data)
    m.register_comm_hook(None, failed)
    catch("future_exception", lambda: F.cross_entropy(m(x), y).backward())


def futures(rank, ws, info):
    """Work.get_future() on a few collectives."""
    t = torch.ones(3) * (rank + 1)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    info["fut.same_future"] = work.get_future() is fut
    tripled = fut.then(lambda f: f.value()[0] * 3)
    value = fut.wait()
    info["fut.value_is_list_of_input"] = isinstance(value, list) and len(value) == 1 \
        and value[0] is t
    info["fut.sum"] = t.tolist()
    info["fut.then"] = tripled.wait().tolist()
    info["fut.done"] = [fut.done(), tripled.done(), work.is_completed()]
    b = torch.full((2,), float(rank))
    info["fut.broadcast"] = dist.broadcast(b, 1, async_op=True).get_future().wait()[0].tolist()
    pending = dist.all_reduce(torch.ones(2), async_op=True).get_future()
    chained = pending.then(lambda f: f.value()[0] + 1).then(lambda f: f.value() * 10)
    info["fut.chain"] = chained.wait().tolist()
    info["fut.wait_all"] = [v[0].tolist() for v in torch.futures.wait_all(
        [dist.all_reduce(torch.ones(1) * k, async_op=True).get_future() for k in (1, 2)])]


def main():
    folder = sys.argv[1]
    dist.init_process_group("mpi")
    rank, ws = dist.get_rank(), dist.get_world_size()
    data = dict(np.load(f"{folder}/inputs.npz"))
    out, info = {}, {}
    H = default_hooks
    train(data, rank, ws, out, "none")
    train(data, rank, ws, out, "allreduce", H.allreduce_hook)
    train(data, rank, ws, out, "allreduce_buckets", H.allreduce_hook, dist.group.WORLD,
          bucket_cap_mb=0.0001, gradient_as_bucket_view=True)
    train(data, rank, ws, out, "fp16", H.fp16_compress_hook)
    train(data, rank, ws, out, "bf16", H.bf16_compress_hook)
    train(data, rank, ws, out, "fp16_wrapper", H.fp16_compress_wrapper(H.allreduce_hook))
    train(data, rank, ws, out, "builtin_fp16", builtin=dist.BuiltinCommHookType.FP16_COMPRESS)
    train_no_sync(data, rank, ws, out, "nosync", H.allreduce_hook)
    state = {"scale": float(data["scale"]), "seen": []}
    model = train(data, rank, ws, out, "custom", scaled_allreduce, state,
                  bucket_cap_mb=0.0001)
    info["custom.seen"] = state["seen"]
    info["custom.nbuckets"] = len(model._buckets)
    # the no-op hook: one backward, the rank's own gradients
    model = make(data)
    model.register_comm_hook(None, noop)
    x, y = shard(data, 0, rank, ws)
    F.cross_entropy(model(x), y).backward()
    for k, p in model.module.named_parameters():
        out[f"noop.grad.{k}"] = p.grad.numpy().copy()
    unused_parameters(data, rank, ws, info)
    spy_buckets(data, rank, ws, out, info)
    errors(data, info)
    futures(rank, ws, info)
    np.savez(f"{folder}/rank{rank}.npz", **out)
    with open(f"{folder}/rank{rank}.json", "w") as f:
        json.dump(info, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
