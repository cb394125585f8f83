"""The meta device's plumbing, differential against torch's meta device (which torch's CPU
build has): factories, metadata, the errors of reading data, mixed devices, views, in-place
initialisers, the default device and its context manager, modules built on meta
(`to_empty`, `load_state_dict(assign=True)`), autograd on meta, and that building a model
too big for memory on meta allocates nothing.
"""
import copy
import tracemalloc

import numpy as np
import pytest
import torch

import ember
from ember import nn


def same_meta(e, t):
    assert isinstance(e, ember.Tensor) and e.is_meta and e.device == ember.device("meta")
    assert t.is_meta
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert e.stride() == t.stride(), (e.stride(), t.stride())
    assert e.storage_offset() == t.storage_offset()


def raises_like(fe, ft):
    """ember's exception has torch's type and message."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    assert type(ee.value).__name__ == type(te.value).__name__, (ee.value, te.value)
    assert str(ee.value) == str(te.value)


FACTORIES = [
    ("empty", lambda L: L.empty(2, 3, device="meta")),
    ("zeros", lambda L: L.zeros((4,), dtype=L.int64, device="meta")),
    ("ones", lambda L: L.ones(2, 0, 3, device="meta")),
    ("full", lambda L: L.full((2, 2), 7, device="meta")),
    ("randn", lambda L: L.randn(3, 5, device="meta")),
    ("rand", lambda L: L.rand(2, device="meta", dtype=L.float64)),
    ("randint", lambda L: L.randint(0, 9, (3, 2), device="meta")),
    ("arange", lambda L: L.arange(5, device="meta")),
    ("tensor", lambda L: L.tensor([[1.0, 2.0]], device="meta")),
    ("empty_strided", lambda L: L.empty_strided((2, 3), (1, 2), device="meta")),
    ("eye", lambda L: L.eye(3, device="meta")),
    ("linspace", lambda L: L.linspace(0, 1, 5, device="meta")),
    ("scalar", lambda L: L.empty((), device="meta")),
]


@pytest.mark.parametrize("name,make", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_factories_on_meta(name, make):
    same_meta(make(ember), make(torch))


def test_metadata_and_repr():
    e, t = ember.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")
    assert repr(e) == repr(t).replace("torch.", "ember.")
    for L in (ember, torch):
        assert repr(L.empty(2, dtype=L.int64, device="meta")).endswith(
            "size=(2,), dtype=" + L.__name__ + ".int64)")
    assert repr(ember.empty(2, device="meta", requires_grad=True)) == \
        repr(torch.empty(2, device="meta", requires_grad=True))
    assert e.nbytes == t.nbytes
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    assert e.data_ptr() == t.data_ptr() == 0
    assert e.is_meta and not e.is_cpu and str(e.device) == "meta"
    assert e.untyped_storage().device == ember.device("meta")


@pytest.mark.parametrize("read", ["item", "tolist", "numpy", "bool", "float", "int", "cpu",
                                  "to_cpu"])
def test_reading_data_raises_torchs_error(read):
    def f(L):
        x = L.empty((), device="meta")
        return {"item": x.item, "tolist": x.tolist, "numpy": x.numpy,
                "bool": lambda: bool(x), "float": lambda: float(x), "int": lambda: int(x),
                "cpu": x.cpu, "to_cpu": lambda: x.to("cpu")}[read]()
    raises_like(lambda: f(ember), lambda: f(torch))


def test_copying_a_meta_tensor_into_cpu_raises():
    raises_like(lambda: ember.ones(2).copy_(ember.empty(2, device="meta")),
                lambda: torch.ones(2).copy_(torch.empty(2, device="meta")))


@pytest.mark.parametrize("order", ["meta_first", "cpu_first"])
def test_mixed_devices(order):
    def f(L):
        m, c = L.empty(2, 3, device="meta"), L.ones(2, 3)
        return m + c if order == "meta_first" else c + m
    raises_like(lambda: f(ember), lambda: f(torch))
    raises_like(lambda: ember.cat([ember.empty(2, device="meta"), ember.ones(2)]),
                lambda: torch.cat([torch.empty(2, device="meta"), torch.ones(2)]))


def test_zero_dim_cpu_tensors_mix_with_meta():
    for L in (ember, torch):
        r = L.empty(2, 3, device="meta") * L.tensor(2.0)
        assert r.is_meta and tuple(r.shape) == (2, 3)
    same_meta(ember.tensor(2.0) + ember.empty(2, device="meta"),
              torch.tensor(2.0) + torch.empty(2, device="meta"))


def test_broadcast_and_view_errors_are_those_of_cpu():
    for dev in ("cpu", "meta"):
        with pytest.raises(RuntimeError) as e:
            ember.empty(2, 3, device=dev) + ember.empty(4, 3, device=dev)
        msg = str(e.value)
        with pytest.raises(RuntimeError) as v:
            ember.empty(2, 3, device=dev).t().view(6)
        assert "view size is not compatible" in str(v.value)
    with pytest.raises(RuntimeError) as cpu_err:
        ember.empty(2, 3) + ember.empty(4, 3)
    assert msg == str(cpu_err.value)
    with pytest.raises(RuntimeError):
        torch.empty(2, 3, device="meta").t().view(6)


def test_views_match_torch():
    def chain(L):
        x = L.empty(4, 6, 5, device="meta")
        return [x.transpose(0, 2), x[1:, ::2], x.permute(2, 0, 1)[..., 1],
                x.unsqueeze(1).expand(4, 3, 6, 5),
                x.view(24, 5), x.transpose(0, 1).reshape(6, 20), x.narrow(1, 2, 3),
                x.unfold(2, 2, 1), x.diagonal(0, 0, 1), x.select(0, 2)[1:]]
    for e, t in zip(chain(ember), chain(torch)):
        same_meta(e, t)


def test_ops_match_torch_metadata():
    def ops(L):
        a = L.empty(3, 4, device="meta")
        b = L.empty(4, 5, device="meta")
        return [a @ b, (a.t() * 2).exp(), a.sum(1, keepdim=True), a.mean(), a.max(1).values,
                L.softmax(a, -1), L.cat([a, a], 1), L.stack([a, a]), a.argmax(0),
                L.nn.functional.linear(a, b.t()), a.to(L.float64), (a > 0).all(1)]
    for e, t in zip(ops(ember), ops(torch)):
        assert e.is_meta and tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


def test_data_dependent_ops_refuse_like_torch():
    for name in ("nonzero", "unique"):
        for L, exc in ((ember, NotImplementedError), (torch, NotImplementedError)):
            with pytest.raises(exc):
                getattr(L, name)(L.empty(3, device="meta"))


def test_in_place_initialisers_keep_metadata():
    def inits(L):
        x = L.empty(3, 4, device="meta").t()
        return [x.normal_(), x.uniform_(-1, 1), x.zero_(), x.fill_(2.0),
                x.copy_(L.ones(4, 3)), x.copy_(L.empty(4, 3, device="meta")), x.add_(1)]
    for e, t in zip(inits(ember), inits(torch)):
        same_meta(e, t)


def test_to_meta_and_like_factories():
    for make in (lambda L: L.ones(3, 4).t().to("meta"),
                 lambda L: L.zeros_like(L.empty(2, 3, device="meta")),
                 lambda L: L.empty(2, 3, device="meta").new_zeros(5),
                 lambda L: L.randn_like(L.empty(2, 3, device="meta")),
                 lambda L: L.empty(2, 3, device="meta").clone(),
                 lambda L: L.empty(2, 3, device="meta").t().contiguous(),
                 lambda L: copy.deepcopy(L.empty(2, 3, device="meta"))):
        same_meta(make(ember), make(torch))


def test_default_device_and_its_context():
    assert str(ember.get_default_device()) == str(torch.get_default_device()) == "cpu"
    for L in (ember, torch):
        with L.device("meta"):
            assert L.empty(2).is_meta and L.get_default_device() == L.device("meta")
            assert L.empty(2, device="cpu").is_cpu
        assert not L.empty(2).is_meta
        L.set_default_device("meta")
        try:
            assert L.zeros(3).is_meta
        finally:
            L.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")


def test_module_on_meta_then_to_empty_and_assign():
    with ember.device("meta"):
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.Linear(8, 2))
    assert all(p.is_meta for p in net.parameters())
    out = net(ember.empty(5, 4, device="meta"))
    assert out.is_meta and tuple(out.shape) == (5, 2)
    ref = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.Linear(8, 2))
    sd = ref.state_dict()
    result = net.load_state_dict(sd, assign=True)
    assert not result.missing_keys and not result.unexpected_keys
    for (k, p), v in zip(net.named_parameters(), sd.values()):
        assert not p.is_meta and np.array_equal(p.detach().numpy(), v.numpy()), k
        assert isinstance(p, nn.Parameter)
    x = ember.randn(5, 4)
    np.testing.assert_allclose(net(x).detach().numpy(), ref(x).detach().numpy())
    with ember.device("meta"):
        net2 = nn.Linear(3, 2)
    net2.to_empty(device="cpu")
    assert net2.weight.is_cpu and tuple(net2.weight.shape) == (2, 3)
    assert net2.weight.requires_grad


def test_backward_on_meta_gives_meta_grads_like_torch():
    def step(L):
        with L.device("meta"):
            net = L.nn.Sequential(L.nn.Linear(6, 16), L.nn.GELU(), L.nn.Linear(16, 3))
            x = L.empty(4, 6)
            y = L.empty(4, dtype=L.int64)
        loss = L.nn.functional.cross_entropy(net(x), y) + net[0].weight.pow(2).mean()
        loss.backward()
        return [loss] + [p.grad for p in net.parameters()]
    for e, t in zip(step(ember), step(torch)):
        same_meta(e, t)


def test_a_model_too_big_for_memory_allocates_nothing_on_meta():
    # 8 x (16384 x 8192) float32 weights: 1.07e9 parameters, 4.3 GB on cpu
    before = ember.memory.memory_allocated()      # (the first call turns counting on)
    tracemalloc.start()
    try:
        with ember.device("meta"):
            net = nn.Sequential(*[nn.Linear(16384 if i % 2 == 0 else 8192,
                                            8192 if i % 2 == 0 else 16384) for i in range(8)])
        out = net(ember.empty(2, 16384, device="meta"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(p.numel() for p in net.parameters()) > 1_000_000_000
    assert out.is_meta and tuple(out.shape) == (2, 16384)
    assert peak < 20 * 2 ** 20, peak      # a few MB of Python objects, no tensor data
    assert ember.memory.memory_allocated() - before < 2 ** 20   # ember's own counter too


def test_module_to_meta_keeps_parameters():
    for L in (ember, torch):
        net = L.nn.Linear(3, 2).to("meta")
        w = net.weight
        assert w.is_meta and isinstance(w, L.nn.Parameter)
        assert tuple(w.shape) == (2, 3) and w.requires_grad
        assert net(L.empty(4, 3, device="meta")).is_meta
