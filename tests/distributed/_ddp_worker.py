"""The rank side of tests/distributed/test_ddp.py and test_syncbn.py (mpiexec -n 2; one
launch runs every check, to keep CI fast; _ddp_launch.py starts it).

    python _ddp_worker.py DIR      # DIR/inputs.npz in, DIR/rank{r}.npz out

The pytest process writes the initial weights and the data, and compares what the ranks
save with single-process torch on the concatenated batch. Checks that need no reference
(errors, which rank's buffers win, when buckets fire) assert here.
"""
import sys
import warnings

import numpy as np

import ember as torch
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP


def cnn():
    """The test CNN (the same layers as test_ddp.torch_cnn)."""
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 4 * 4, 10))


def load(model, arrays, prefix):
    model.load_state_dict({k[len(prefix):]: torch.tensor(v) for k, v in arrays.items()
                           if k.startswith(prefix)})


def state(model, prefix):
    return {prefix + k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def train_sync_bn(data, rank, ws, out, **ddp_kwargs):
    """3 SGD steps of DDP(SyncBN CNN), each rank on its share of the global batch."""
    net = cnn()
    load(net, data, "init.")
    if rank != 0:            # the construction broadcast must replace these
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(3.0).add_(1.0)
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(net), **ddp_kwargs)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    X, Y = data["X"], data["Y"]
    per = X.shape[1] // ws
    for s in range(X.shape[0]):
        opt.zero_grad()
        x = torch.tensor(X[s, rank * per:(rank + 1) * per])
        y = torch.tensor(Y[s, rank * per:(rank + 1) * per])
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def train_no_sync(data, rank, ws):
    """3 steps, each accumulating 2 micro-batches (the first under no_sync)."""
    net = cnn()
    load(net, data, "init.")
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(net), bucket_cap_mb=0.002)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    X, Y = data["X"], data["Y"]
    micro = X.shape[1] // 2
    per = micro // ws
    calls = count_all_reduces()
    for s in range(X.shape[0]):
        opt.zero_grad()
        for m in range(2):
            lo = m * micro + rank * per
            x, y = torch.tensor(X[s, lo:lo + per]), torch.tensor(Y[s, lo:lo + per])
            before = len(calls)      # (SyncBatchNorm's own all-reduces are not async)
            if m == 0:
                with model.no_sync():
                    F.cross_entropy(model(x), y).backward()
                assert len(calls) == before, "no_sync must not all-reduce gradients"
                # the gradients are local: they differ between the ranks
                g = model.module[0].weight.grad.clone()
                every = [torch.zeros_like(g) for _ in range(ws)]
                dist.all_gather(every, g)
                assert not torch.equal(every[0], every[1])
            else:
                n_buckets = len(model._buckets)    # (the first backward may re-cut them)
                F.cross_entropy(model(x), y).backward()
                assert len(calls) - before == n_buckets
        opt.step()
    uncount_all_reduces()
    return model


_real_all_reduce = dist.all_reduce


def count_all_reduces():
    """Patch dist.all_reduce to record the size of every asynchronous call (DDP's bucket
    all-reduces); returns the list."""
    calls = []

    def counting(tensor, *args, **kwargs):
        if kwargs.get("async_op", False):        # DDP's bucket all-reduces
            calls.append(tensor.numel())
        return _real_all_reduce(tensor, *args, **kwargs)
    dist.all_reduce = counting
    return calls


def uncount_all_reduces():
    dist.all_reduce = _real_all_reduce


def check_buckets_fire_during_backward(data, rank, ws):
    """With several buckets, some all-reduces are launched before backward reaches the
    first layer (so they overlap the rest of backward), all asynchronously; and when
    backward() returns, .grad already holds the average."""
    net = cnn()
    load(net, data, "init.")
    model = DDP(net, bucket_cap_mb=0.0005)
    assert len(model._buckets) >= 2, [b.indices for b in model._buckets]
    x = torch.tensor(data["X"][0, rank * 4:(rank + 1) * 4]).requires_grad_()
    y = torch.tensor(data["Y"][0, rank * 4:(rank + 1) * 4])
    n_buckets = len(model._buckets)
    calls = count_all_reduces()
    seen_at_input = []
    x.register_hook(lambda g: seen_at_input.append(len(calls)))   # the last gradient
    F.cross_entropy(model(x), y).backward()
    uncount_all_reduces()
    assert seen_at_input and seen_at_input[0] >= 1, (seen_at_input, calls)
    assert len(calls) == n_buckets, calls
    # averaged already: every rank holds the same gradients, and they are the mean of
    # the local ones (recomputed here without DDP)
    local = cnn()
    load(local, data, "init.")
    F.cross_entropy(local(x.detach()), y).backward()
    for p, q in zip(model.module.parameters(), local.parameters()):
        g = q.grad.clone()
        dist.all_reduce(g)
        assert torch.allclose(p.grad, g / ws, atol=1e-6), (p.grad - g / ws).abs().max()


def check_grad_identity(data, rank, ws):
    """The averaged .grad handed out after backward: a .grad that existed before the
    forward (zero_grad(set_to_none=False)) keeps its identity and gets the average; one
    made by this backward (the bucket's slot, no copy) is never touched by the next
    backward, even when the user keeps it."""
    net = cnn()
    load(net, data, "init.")
    model = DDP(net)
    local = cnn()
    load(local, data, "init.")
    for step in range(3):
        x = torch.tensor(data["X"][step, rank * 4:(rank + 1) * 4])
        y = torch.tensor(data["Y"][step, rank * 4:(rank + 1) * 4])
        kept = [p.grad for p in model.parameters()]
        kept_values = [None if g is None else g.clone() for g in kept]
        model.zero_grad(set_to_none=step != 1)
        before = [p.grad for p in model.parameters()]
        F.cross_entropy(model(x), y).backward()
        local.zero_grad()
        F.cross_entropy(local(x), y).backward()
        for p, q, b, k, kv in zip(model.parameters(), local.parameters(), before, kept,
                                  kept_values):
            if step == 1:
                assert p.grad is b           # the same tensor, holding the average
            if k is not None and k is not p.grad:
                assert torch.equal(k, kv), "a kept .grad changed under the user"
            g = q.grad.clone()
            dist.all_reduce(g)
            assert torch.allclose(p.grad, g / ws, atol=1e-6), (step, (p.grad - g / ws).abs().max())


class Backwards(nn.Module):
    """Registered in the opposite order to the one it runs in."""

    def __init__(self):
        super().__init__()
        self.last = nn.Linear(5, 2)
        self.first = nn.Linear(3, 5)

    def forward(self, x):
        return self.last(self.first(x).relu())


def check_buckets_rebuilt_in_gradient_order(data, rank, ws):
    """The first backward re-cuts the buckets in the order the gradients arrived (here:
    `last`'s parameters, registered first, are ready first); training stays correct."""
    model = DDP(Backwards(), bucket_cap_mb=1e-6)       # one parameter per bucket
    assert [b.indices[0] for b in model._buckets] == [3, 2, 1, 0]
    x = torch.tensor(data["xb"][rank][:, :3])
    for it in range(2):
        model.zero_grad()
        model(x).sum().backward()
        g = model.module.last.weight.grad.clone()
        every = [torch.zeros_like(g) for _ in range(ws)]
        dist.all_gather(every, g)
        assert torch.equal(every[0], every[1]), it         # averaged on every rank
    first_two = {b.indices[0] for b in model._buckets[:2]}
    assert first_two == {0, 1}, [b.indices for b in model._buckets]


class Branchy(nn.Module):
    """`used` always feeds the output; `rank0_only` only on rank 0; `never` never."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 3)
        self.rank0_only = nn.Linear(4, 3)
        self.never = nn.Linear(4, 3)

    def forward(self, x, rank):
        out = self.used(x)
        if rank == 0:
            out = out + self.rank0_only(x)
        return out


def check_find_unused(data, rank, ws, out):
    model = DDP(Branchy(), find_unused_parameters=True)
    x = torch.tensor(data["xb"][rank])
    for _ in range(2):                       # twice: the state resets between iterations
        model.zero_grad()
        model(x, rank).pow(2).sum().backward()
    assert model.module.never.weight.grad is None and model.module.never.bias.grad is None
    out["unused.used.weight"] = model.module.used.weight.grad.numpy()
    out["unused.rank0_only.weight"] = model.module.rank0_only.weight.grad.numpy()
    out["unused.init"] = np.concatenate([p.detach().numpy().ravel()
                                         for p in model.module.parameters()])

    # without find_unused_parameters: backward returns, the next forward raises torch's
    # error naming the parameters that got no gradient
    model = DDP(Branchy())
    model(x, 1).sum().backward()
    try:
        model(x, 1)
    except RuntimeError as e:
        msg = str(e)
        assert "Expected to have finished reduction in the prior iteration" in msg, msg
        assert "find_unused_parameters=True" in msg and "rank0_only.weight" in msg, msg
    else:
        raise AssertionError("DDP did not raise on a parameter without gradient")


def check_broadcast_buffers(data, rank, ws):
    """Buffers come from rank 0 at the start of each forward that follows a synced one;
    with broadcast_buffers=False each rank keeps its own."""
    x = torch.tensor(data["X"][0, rank * 8:(rank + 1) * 8])
    for broadcast in (True, False):
        net = cnn()
        load(net, data, "init.")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = DDP(net, broadcast_buffers=broadcast)     # deprecated in torch 2.13
        assert any(issubclass(w.category, FutureWarning) for w in caught)
        model(x).sum().backward()            # each rank: running stats of its own data
        mine = model.module[1].running_mean.clone()
        every = [torch.zeros_like(mine) for _ in range(ws)]
        dist.all_gather(every, mine)
        assert not torch.equal(every[0], every[1])
        model.eval()
        with torch.no_grad():
            y = model(x[:2])                 # starts with the broadcast (previous: synced)
        after = model.module[1].running_mean
        assert torch.equal(after, every[0] if broadcast else every[rank]), (broadcast, rank)
        assert torch.allclose(y, model.module(x[:2]), atol=1e-6)   # eval: these stats
        # the no_grad forward is not synced: the next forward does not broadcast
        with torch.no_grad():
            model.module[1].running_mean.fill_(float(rank))
            model(x[:2])
        assert torch.equal(model.module[1].running_mean,
                           torch.full_like(after, float(rank)))


def check_errors(data, rank, ws):
    net = cnn()
    for kwargs, exc, text in [
            ({"device_ids": [0]}, ValueError, "device_ids and output_device arguments"),
            ({"device_ids": [0, 1]}, ValueError, "device_ids can only be None")]:
        try:
            DDP(net, **kwargs)
        except exc as e:
            assert text in str(e), str(e)
        else:
            raise AssertionError(f"DDP({kwargs}) did not raise")
    frozen = nn.Linear(2, 2).requires_grad_(False)
    try:
        DDP(frozen)
    except RuntimeError as e:
        assert "doesn't have any parameter that requires a gradient" in str(e)
    else:
        raise AssertionError("DDP of a module without trainable parameters did not raise")


def check_state_dict(data, rank, ws):
    net = cnn()
    load(net, data, "init.")
    model = DDP(net)
    keys = list(model.state_dict())
    assert keys == ["module." + k for k in net.state_dict()], keys
    assert model.module is net
    fresh = DDP(cnn())
    fresh.load_state_dict(model.state_dict())
    for p, q in zip(fresh.parameters(), model.parameters()):
        assert torch.equal(p, q)


def run_sync_bn_case(data, name, rank, out, group):
    """SyncBatchNorm on this rank's slice of a global batch (uneven: `split` rows go to
    rank 0): forward, backward of the upstream gradient's slice, a second training step,
    then an eval-mode forward; everything saved for test_syncbn.py."""
    key = "sbn." + name + "."
    x_all, dy_all = data[key + "x"], data[key + "dy"]
    split = int(data[key + "split"])
    affine, momentum = bool(data[key + "affine"]), float(data[key + "momentum"])
    lo, hi = (0, split) if rank == 0 else (split, x_all.shape[0])
    bn = nn.SyncBatchNorm(x_all.shape[1], momentum=None if momentum < 0 else momentum,
                          affine=affine, process_group=group)
    if affine:
        with torch.no_grad():
            bn.weight.copy_(torch.tensor(data[key + "weight"]))
            bn.bias.copy_(torch.tensor(data[key + "bias"]))
    x = torch.tensor(x_all[lo:hi]).requires_grad_()
    y = bn(x)
    y.backward(torch.tensor(dy_all[lo:hi]))
    out[key + "y"] = y.detach().numpy()
    out[key + "xgrad"] = x.grad.numpy()
    if affine:
        out[key + "wgrad"] = bn.weight.grad.numpy()
        out[key + "bgrad"] = bn.bias.grad.numpy()
    with torch.no_grad():
        bn(torch.tensor(x_all[lo:hi]) * 2 + 1)          # a second step for the running stats
    out[key + "running_mean"] = bn.running_mean.numpy()
    out[key + "running_var"] = bn.running_var.numpy()
    out[key + "num_batches_tracked"] = bn.num_batches_tracked.numpy()
    bn.eval()
    out[key + "eval"] = bn(torch.tensor(x_all[lo:hi])).detach().numpy()


def main(folder):
    dist.init_process_group("mpi")
    rank, ws = dist.get_rank(), dist.get_world_size()
    data = dict(np.load(f"{folder}/inputs.npz"))
    out = {}
    group = dist.new_group([0, 1])
    names = sorted({k.split(".")[1] for k in data if k.startswith("sbn.")})
    for i, name in enumerate(names):       # every other case on an explicit process group
        run_sync_bn_case(data, name, rank, out, group if i % 2 else None)
    out.update(state(train_sync_bn(data, rank, ws, out).module, "ddp."))
    out.update(state(train_sync_bn(data, rank, ws, out, gradient_as_bucket_view=True,
                                   bucket_cap_mb=0.001).module, "view."))
    out.update(state(train_no_sync(data, rank, ws).module, "nosync."))
    check_buckets_fire_during_backward(data, rank, ws)
    check_grad_identity(data, rank, ws)
    check_buckets_rebuilt_in_gradient_order(data, rank, ws)
    check_find_unused(data, rank, ws, out)
    check_broadcast_buffers(data, rank, ws)
    check_errors(data, rank, ws)
    check_state_dict(data, rank, ws)
    np.savez(f"{folder}/rank{rank}.npz", **out)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: ok")


if __name__ == "__main__":
    main(sys.argv[1])
