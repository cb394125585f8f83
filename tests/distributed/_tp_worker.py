"""The tensor-parallel checks, run on every rank under mpiexec (test_tensor_parallel.py).

`main()` runs every check (in one launch: starting ranks and importing torch and ember cost
more than the checks) and prints "OK <check> (wall and cpu seconds)" per passed check; an
assertion failure ends the rank (and the job) with the traceback. torch (single process, plain tensors) is the oracle: every DTensor result is
compared with torch computing the same thing on the whole tensors.
"""
import importlib.util
import io
import os
import re
import time
import tokenize

import numpy as np
import torch

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
from ember.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from ember.distributed.tensor.parallel import (ColwiseParallel, LocalShardParameter,
                                               RowwiseParallel, parallelize_module)
from ember.distributed.tensor.parallel import clip_grad_norm_ as tp_clip_grad_norm_

torch.set_num_threads(1)
RANK = WORLD = None


_T0 = [time.perf_counter(), time.process_time()]


def ok(name):
    now, cpu = time.perf_counter(), time.process_time()
    print("OK", name, f"({now - _T0[0]:.2f} s, cpu {cpu - _T0[1]:.2f} s)", flush=True)
    _T0[:] = [now, cpu]


def e(t):
    """ember tensor from a torch tensor (same values)."""
    return ember.tensor(t.detach().numpy().copy())


def close(a, b, name, rtol=1e-5, atol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (name, a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=name)


def expected_local(x, placements, mesh):
    """The local piece torch.chunk gives for `placements` at this rank's mesh coordinate
    (Partial: the whole tensor; only full_tensor is compared for it)."""
    for p, c, n in zip(placements, mesh.get_coordinate(), mesh.shape):
        if isinstance(p, Shard):
            pieces = x.chunk(n, p.dim)
            x = pieces[c] if c < len(pieces) else x.narrow(p.dim, 0, 0)
    return x


PLACEMENTS = [Shard(0), Shard(1), Replicate(), Partial()]


# ---------------------------------------------------------------- layouts
def check_mesh():
    m1 = init_device_mesh("cpu", (WORLD,))
    assert m1.ndim == 1 and m1.size() == WORLD and m1.get_local_rank() == RANK
    assert m1.get_coordinate() == (RANK,)
    assert dist.get_world_size(m1.get_group()) == WORLD
    m2 = init_device_mesh("cpu", (1, WORLD), mesh_dim_names=("dp", "tp"))
    assert m2.shape == (1, WORLD) and m2.size() == WORLD and m2.size(1) == WORLD
    assert m2["tp"].size() == WORLD and m2["tp"].get_local_rank() == RANK
    assert m2["dp"].size() == 1 and m2["dp"].get_local_rank() == 0
    assert m2.get_local_rank("tp") == RANK and m2.get_local_rank(0) == 0
    assert dist.get_world_size(m2.get_group("tp")) == WORLD
    assert dist.get_world_size(m2.get_group("dp")) == 1
    assert m2["dp", "tp"] is m2
    for bad, exc in [(lambda: m2.get_group(), RuntimeError), (lambda: m2["nope"], KeyError),
                     (lambda: m2["tp", "dp"], KeyError), (lambda: m1["x"], RuntimeError),
                     (lambda: m2.get_local_rank(), RuntimeError),
                     (lambda: init_device_mesh("cpu", (2, 2)), RuntimeError),
                     (lambda: init_device_mesh("cpu:0", (WORLD,)), RuntimeError),
                     (lambda: init_device_mesh("cpu", (1, WORLD), mesh_dim_names=("a",)),
                      RuntimeError)]:
        try:
            bad()
        except exc:
            pass
        else:
            raise AssertionError(f"no {exc.__name__}")
    # a mesh in reverse rank order: the group ranks follow the mesh, not the rank numbers
    rev = DeviceMesh("cpu", list(reversed(range(WORLD))))
    assert rev.get_local_rank() == WORLD - 1 - RANK
    x = torch.arange(8.).reshape(4, 2)
    dt = distribute_tensor(e(x), rev, [Shard(0)])
    close(dt.to_local(), expected_local(x, [Shard(0)], rev), "reversed mesh local")
    close(dt.full_tensor(), x, "reversed mesh full")
    with m1:
        assert DTensor.from_local(ember.ones(2)).placements == (Replicate(),)
    assert m1.mesh.tolist() == list(range(WORLD))
    # a mesh of rank 0 alone: every rank builds it, rank 1 is not part of it
    solo = init_device_mesh("cpu", (1,))
    if RANK == 0:
        assert solo.get_coordinate() == (0,)
        close(distribute_tensor(e(x), solo, [Shard(0)]).to_local(), x, "one-rank mesh")
    else:
        assert solo.get_coordinate() is None
        try:
            solo.get_group()
        except RuntimeError:
            pass
        else:
            raise AssertionError("a non-member got a group")
    ok("mesh")
    return m1, m2, DeviceMesh("cpu", [[r] for r in range(WORLD)], mesh_dim_names=("a", "b"))


def round_trips(mesh, shape, placement_sets, name):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    n = 0
    for src in placement_sets:
        dt = distribute_tensor(e(x), mesh, src)
        assert tuple(dt.shape) == shape and dt.placements == tuple(src)
        if not any(p.is_partial() for p in src):
            close(dt.to_local(), expected_local(x, src, mesh), f"{name} local {src}")
        close(dt.full_tensor(), x, f"{name} full {src}")
        for dst in placement_sets:
            if any(q.is_partial() and q != p for p, q in zip(src, dst)):
                try:
                    dt.redistribute(mesh, dst)
                except RuntimeError:   # refused, like torch; the internal path works
                    close(dt._redistribute(tuple(dst)).full_tensor(), x, f"{src}->{dst}")
                    continue
                raise AssertionError(f"redistribute {src} -> {dst} should refuse Partial")
            r = dt.redistribute(mesh, dst)
            assert r.placements == tuple(dst) and tuple(r.shape) == shape
            if not any(p.is_partial() for p in dst):   # (its full_tensor: checked above)
                close(r.to_local(), expected_local(x, dst, mesh), f"{name} {src}->{dst}")
            else:
                close(r.full_tensor(), x, f"{name} {src}->{dst} full")
            n += 1
        # from_local of the expected pieces builds the same DTensor (uneven: pass shape)
        if not any(p.is_partial() for p in src):
            back = DTensor.from_local(e(expected_local(x, src, mesh)), mesh, src, shape=shape)
            close(back.full_tensor(), x, f"{name} from_local {src}")
    assert n > 0
    ok(f"round trips {name}")


def check_round_trips(m1, m2, m3):
    one_d = [[p] for p in PLACEMENTS]
    round_trips(m1, (5, 3), one_d, "1-D uneven")
    round_trips(m1, (4, 6), one_d, "1-D even")
    two_d = [[p, q] for p in PLACEMENTS for q in PLACEMENTS]
    round_trips(m2, (5, 4), two_d, "2-D 1x2")
    round_trips(m3, (3, 4), two_d, "2-D 2x1")


def check_grads(m1, m2):
    """Gradients through distribute/redistribute/full_tensor/to_local equal torch's."""
    torch.manual_seed(1)
    x = torch.randn(5, 4, requires_grad=True)
    w = torch.randn(5, 4)
    ((x * x) * w).sum().backward()
    for mesh, sets in [(m1, [[p] for p in PLACEMENTS]),
                       (m2, [[p, q] for p in (Shard(1), Partial()) for q in PLACEMENTS])]:
        for src in sets:
            for dst in sets:
                if any(q.is_partial() and q != p for p, q in zip(src, dst)):
                    continue
                leaf = distribute_tensor(e(x).requires_grad_(), mesh, src)
                assert leaf.is_leaf and leaf.requires_grad
                y = leaf.redistribute(mesh, dst)
                full = y.full_tensor()
                ((full * full) * e(w)).sum().backward()
                g = leaf.grad
                assert isinstance(g, DTensor)
                assert g.placements == tuple(Replicate() if p.is_partial() else p for p in src)
                close(g.full_tensor(), x.grad, f"grad {src}->{dst}")
    # to_local of a Replicate DTensor: each rank's local loss is the global loss
    leaf = distribute_tensor(e(x).requires_grad_(), m1, [Shard(1)])
    loc = leaf.redistribute(m1, [Replicate()]).to_local()
    ((loc * loc) * e(w)).sum().backward()
    close(leaf.grad.full_tensor(), x.grad, "grad to_local")
    # from_local(grad_placements=...) and the backward of a DTensor scalar
    leaf = ember.tensor(x.detach().numpy().copy(), requires_grad=True)
    dt = DTensor.from_local(leaf, m1, [Replicate()])
    s = (dt * dt * DTensor.from_local(e(w), m1, [Replicate()])).sum()
    s.backward()
    close(leaf.grad, x.grad, "grad DTensor.backward")
    # run_check broadcasts Replicate pieces from the first rank; src_data_rank=None keeps
    # each rank's own values
    mine = ember.full((2,), float(RANK + 1), requires_grad=True)
    dt = DTensor.from_local(mine, m1, [Replicate()], run_check=True)
    assert dt.to_local().tolist() == [1.0, 1.0]
    (dt.to_local() * 3).sum().backward()
    assert mine.grad.tolist() == [3.0, 3.0]
    own = distribute_tensor(ember.full((2,), float(RANK + 1)), m1, [Partial()],
                            src_data_rank=None)
    assert own.full_tensor().tolist() == [1.5, 1.5]      # (1 + 2) / 2: Partial splits by n
    ok("grads")


def check_ops(m1, m3):
    """DTensor ops against torch on whole tensors, values and gradients."""
    torch.manual_seed(2)
    a, b = torch.randn(4, 6, requires_grad=True), torch.randn(6, 5, requires_grad=True)
    bias = torch.randn(5, requires_grad=True)
    ref = torch.relu(a @ b + bias) * 2 - 1
    ref.sum().backward()
    cases = [(Shard(0), Replicate(), Replicate()), (Replicate(), Shard(1), Shard(0)),
             (Shard(1), Shard(0), Replicate()), (Partial(), Replicate(), Replicate()),
             (Replicate(), Partial(), Partial()), (Shard(0), Shard(1), Shard(0)),
             (Shard(1), Replicate(), Replicate()), (Replicate(), Shard(0), Shard(0)),
             (Replicate(), Replicate(), Replicate())]
    # on the 2x1 mesh, the size-1 mesh dim carries other placements alongside
    cases2 = [([pa, qa], [pb, qb], [pc, Replicate()]) for (pa, pb, pc), (qa, qb) in
              zip(cases, [(Shard(1), Shard(0)), (Replicate(), Shard(1)), (Shard(0), Partial()),
                          (Partial(), Replicate()), (Shard(1), Shard(1))])]
    for mesh, (pa, pb, pc) in [(m1, ([pa], [pb], [pc])) for pa, pb, pc in cases] + \
            [(m3, c) for c in cases2]:
        da = distribute_tensor(e(a).requires_grad_(), mesh, pa)
        db = distribute_tensor(e(b).requires_grad_(), mesh, pb)
        dc = distribute_tensor(e(bias).requires_grad_(), mesh, pc)
        out = (da @ db + dc).relu() * 2 - 1
        assert tuple(out.shape) == (4, 5)
        close(out.full_tensor(), ref, f"ops {pa} {pb} {pc}")
        out.sum().backward()
        for d, t in [(da, a), (db, b), (dc, bias)]:
            close(d.grad.full_tensor(), t.grad, f"ops grad {pa} {pb} {pc}")
    # linear / embedding functions, transpose, mean, sum over a dim
    from ember.distributed.tensor.ops import embedding, linear
    w = torch.randn(5, 6)
    x = distribute_tensor(e(a), m1, [Replicate()])
    for pw in (Shard(0), Shard(1), Replicate()):
        y = linear(x, distribute_tensor(e(w), m1, [pw]))
        close(y.full_tensor(), torch.nn.functional.linear(a, w), f"linear {pw}")
    table = torch.randn(7, 4)
    idx = torch.tensor([[0, 6, 3], [2, 2, 5]])
    for pw in (Shard(0), Shard(1), Replicate()):
        for pad in (None, 2, 6):
            tw = table.clone().requires_grad_()
            tref = torch.nn.functional.embedding(idx, tw, padding_idx=pad)
            (tref * tref).sum().backward()
            dw = distribute_tensor(e(table).requires_grad_(), m1, [pw])
            y = embedding(DTensor.from_local(e(idx), m1, [Replicate()]), dw, padding_idx=pad)
            close(y.full_tensor(), tref, f"embedding {pw} {pad}")
            (y * y).sum().backward()
            close(dw.grad.full_tensor(), tw.grad, f"embedding grad {pw} {pad}")
    s = distribute_tensor(e(a), m1, [Shard(1)])
    close(s.t().full_tensor(), a.t(), "t")
    close(s.transpose(0, 1).full_tensor(), a.transpose(0, 1), "transpose")
    close(s.mean().full_tensor(), a.mean(), "mean")
    close(s.sum(0).full_tensor(), a.sum(0), "sum dim 0")
    close(s.sum(1, keepdim=True).full_tensor(), a.sum(1, keepdim=True), "sum dim 1")
    close(s.exp().full_tensor(), a.exp(), "exp")
    close((3 - s / 2).full_tensor(), 3 - a / 2, "scalars")
    ok("ops")


def check_errors(m1):
    dt = distribute_tensor(ember.ones(4, 2), m1, [Shard(0)])
    for fn, exc, words in [
            (lambda: dt.view(8), NotImplementedError, "view"),
            (lambda: dt.reshape(8), NotImplementedError, "reshape"),
            (lambda: dt.softmax(0), NotImplementedError, "softmax"),
            (lambda: dt.add_(1), NotImplementedError, "add_"),
            (lambda: dt + ember.ones(4, 2), RuntimeError, "mixed"),
            (lambda: dt.redistribute(m1, [Partial()]), RuntimeError, "Partial"),
            (lambda: dt.redistribute(m1), RuntimeError, "placements"),
            (lambda: DTensor.from_local(dt, m1), RuntimeError, "local_tensor"),
            (lambda: distribute_tensor(ember.ones(2), m1, [Shard(0), Shard(0)]), ValueError,
             "placements"),
            (lambda: distribute_tensor(ember.ones(2), m1, [Shard(1)]), IndexError, "Shard"),
            (lambda: dt @ distribute_tensor(ember.ones(3, 2), m1, [Replicate()]),
             RuntimeError, "shapes"),
            (lambda: DTensor.from_local(ember.ones(2), m1, [Partial("max")]).full_tensor(),
             NotImplementedError, "max"),
            (lambda: parallelize_module(nn.Conv1d(2, 2, 1), m1, ColwiseParallel()),
             NotImplementedError, "nn.Linear"),
            (lambda: ember.relu(dt), TypeError, "Tensor")]:
        try:
            fn()
        except exc as err:
            assert words in str(err), (words, str(err))
        else:
            raise AssertionError(f"expected {exc.__name__} ({words})")
    ok("errors")


# ---------------------------------------------------------------- training
def copy_into(t_model, e_model):
    e_model.load_state_dict({k: e(v) for k, v in t_model.state_dict().items()})


def full_params(model):
    return {n: (p.full_tensor() if isinstance(p, LocalShardParameter) else p)
            for n, p in model.named_parameters()}


def train_both(t_model, e_model, plan, mesh, make_batch, loss_fn, steps=3, lr=0.1,
               clip=None):
    """SGD `steps` on torch (one process) and on the parallelised ember model; the losses
    and the full weights after each step must agree. With `clip`, the gradients are clipped
    to that global norm first (torch's clip_grad_norm_ vs the tensor-parallel one)."""
    copy_into(t_model, e_model)
    parallelize_module(e_model, mesh, plan)
    assert any(isinstance(p, LocalShardParameter) for p in e_model.parameters())
    t_opt = torch.optim.SGD(t_model.parameters(), lr=lr)
    e_opt = ember.optim.SGD(e_model.parameters(), lr=lr)
    for step in range(steps):
        x, y = make_batch(step)
        t_opt.zero_grad()
        e_opt.zero_grad()
        t_loss = loss_fn(torch.nn.functional, t_model, x, y)
        e_loss = loss_fn(F, e_model, e(x), e(y))
        t_loss.backward()
        e_loss.backward()
        if clip is not None:
            t_norm = torch.nn.utils.clip_grad_norm_(t_model.parameters(), clip)
            e_norm = tp_clip_grad_norm_(e_model.parameters(), clip)
            assert t_norm.item() > clip    # the clipping does something
            assert abs(e_norm.item() - t_norm.item()) <= 1e-5 * (1 + t_norm.item()), \
                (e_norm.item(), t_norm.item())
        t_opt.step()
        e_opt.step()
        assert abs(e_loss.item() - t_loss.item()) <= 1e-5 * (1 + abs(t_loss.item())), \
            (step, e_loss.item(), t_loss.item())
        t_params = dict(t_model.named_parameters())
        for name, p in full_params(e_model).items():
            close(p, t_params[name], f"step {step} {name}", rtol=1e-4, atol=1e-5)


def mse(Fn, model, x, y):
    return Fn.mse_loss(model(x), y)


def mlp(lib, d_in, hidden, d_out):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(d_in, hidden)
            self.fc2 = lib.nn.Linear(hidden, d_out)

        def forward(self, x):
            return self.fc2(self.fc1(x).relu())
    return MLP()


def check_mlp(m1):
    # hidden 7: uneven shards (4 and 3 features); fc1 then hands fc2 its DTensor (with the
    # global shape) instead of the local tensor, whose global shape from_local would guess
    for hidden, local_out in ((8, True), (7, False)):
        torch.manual_seed(3)
        batches = [(torch.randn(6, 5), torch.randn(6, 3)) for _ in range(3)]
        train_both(mlp(torch, 5, hidden, 3), mlp(ember, 5, hidden, 3),
                   {"fc1": ColwiseParallel(use_local_output=local_out),
                    "fc2": RowwiseParallel()}, m1, lambda i: batches[i], mse,
                   clip=0.05 if local_out else None)
    ok("mlp")


class TokenNet:
    """An embedding then an MLP, for either library."""

    @staticmethod
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = lib.nn.Embedding(11, 6)
                self.fc1 = lib.nn.Linear(6, 8)
                self.fc2 = lib.nn.Linear(8, 4)

            def forward(self, idx):
                return self.fc2(self.fc1(self.emb(idx)).relu())
        return Net()


def check_embedding_models(m1):
    torch.manual_seed(4)
    batches = [(torch.randint(0, 11, (3, 5)), torch.randn(3, 5, 4)) for _ in range(3)]
    plans = [{"emb": RowwiseParallel(input_layouts=Replicate()), "fc1": ColwiseParallel(),
              "fc2": RowwiseParallel()},
             {"emb": ColwiseParallel(output_layouts=Replicate()), "fc1": ColwiseParallel(),
              "fc2": RowwiseParallel()}]
    for plan in plans:
        torch.manual_seed(5)
        train_both(TokenNet.build(torch), TokenNet.build(ember), plan, m1,
                   lambda i: batches[i], mse)
    ok("embedding models")


def gpt_module(lib):
    """ember/examples/gpt.py exec'd against `lib`, like tests/examples does."""
    path = os.path.join(os.path.dirname(ember.__file__), "examples", "gpt.py")
    src = open(path).read()
    if lib is torch:
        src = re.sub(r"^import ember\b", "import torch", src, flags=re.M)
        names = {t.string for t in tokenize.generate_tokens(io.StringIO(src).readline)
                 if t.type == tokenize.NAME}
        assert "ember" not in names
    spec = importlib.util.spec_from_loader(f"gpt_for_{lib.__name__}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def check_gpt_block(m1):
    torch.manual_seed(6)
    t_block = gpt_module(torch).Block(16, 2, 0.0)
    e_block = gpt_module(ember).Block(16, 2, 0.0)
    batches = [(torch.randn(2, 5, 16), torch.randn(2, 5, 16)) for _ in range(3)]
    train_both(t_block, e_block, {"mlp.0": ColwiseParallel(), "mlp.2": RowwiseParallel()},
               m1, lambda i: batches[i], mse)
    ok("gpt block")
    # the whole (tiny) GPT, its loss, tied embedding/head, every block's MLP split
    torch.manual_seed(7)
    cfg = dict(vocab_size=32, block_size=8, n_layer=2, n_head=2, n_embd=16)
    t_gpt, e_gpt = gpt_module(torch).GPT(**cfg), gpt_module(ember).GPT(**cfg)
    batches = [(torch.randint(0, 32, (2, 8)), torch.randint(0, 32, (2, 8))) for _ in range(3)]
    train_both(t_gpt, e_gpt, {"blocks.*.mlp.0": ColwiseParallel(),
                              "blocks.*.mlp.2": RowwiseParallel()}, m1,
               lambda i: batches[i], lambda Fn, m, x, y: m(x, y)[1], clip=0.5, lr=1.0)
    ok("gpt")


def main():
    global RANK, WORLD
    dist.init_process_group("mpi")
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    assert WORLD == 2
    m1, m2, m3 = check_mesh()
    check_round_trips(m1, m2, m3)
    check_grads(m1, m2)
    check_ops(m1, m3)
    check_errors(m1)
    check_mlp(m1)
    check_embedding_models(m1)
    check_gpt_block(m1)
    dist.destroy_process_group()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
