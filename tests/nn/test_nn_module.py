"""Module-system behaviour of ember.nn against torch.nn: the same model built with each
library must register the same names in the same order (parameters, buffers, modules,
state_dict), print the same repr, load state dicts with the same results and errors, and
call hooks in the same order with the same arguments.
"""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import nn

try:
    from ._nn_common import E, close, norm_repr, pair
except ImportError:
    from _nn_common import E, close, norm_repr, pair


def build(lib):
    """A small model exercising every registration path (same code for torch and ember)."""
    tnn = lib.nn

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tnn.Linear(3, 4)
            self.act = tnn.ReLU()
            self.register_buffer("running", lib.zeros(4))
            self.register_buffer("scratch", lib.ones(2), persistent=False)
            self.scale = tnn.Parameter(lib.ones(4))
            self.count = tnn.Buffer(lib.zeros((), dtype=lib.int64))

        def forward(self, x):
            return self.act(self.fc(x)) * self.scale + self.running

    class Net(tnn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = Block()
            self.b2 = Block()
            self.alias = self.b1.fc                  # a shared module
            self.head = tnn.Sequential(tnn.Linear(4, 2), tnn.Tanh())
            self.tied = self.b2.scale                # a shared parameter
            self.register_parameter("nothing", None)
            self.empty = None
            self.plain = 3

        def forward(self, x):
            return self.head(self.b1(x) + self.b2(x))

    return Net()


def both():
    torch.manual_seed(0)
    return pair(build(torch), build(ember))


def names(it):
    return [n for n, _ in it]


def test_registration_names_and_order():
    t, e = both()
    for kw in ({}, {"remove_duplicate": False}, {"recurse": False}, {"prefix": "net"}):
        assert names(e.named_parameters(**kw)) == names(t.named_parameters(**kw)), kw
        assert names(e.named_buffers(**kw)) == names(t.named_buffers(**kw)), kw
    for kw in ({}, {"remove_duplicate": False}, {"prefix": "root"}):
        assert names(e.named_modules(**kw)) == names(t.named_modules(**kw)), kw
    assert names(e.named_children()) == names(t.named_children())
    assert len(list(e.parameters())) == len(list(t.parameters()))
    assert len(list(e.buffers())) == len(list(t.buffers()))
    assert [type(m).__name__ for m in e.modules()] == [type(m).__name__ for m in t.modules()]
    assert [type(m).__name__ for m in e.children()] == [type(m).__name__ for m in t.children()]


def test_state_dict_keys_values_and_repr():
    t, e = both()
    for kw in ({}, {"prefix": "p."}, {"keep_vars": True}):
        ts, es = t.state_dict(**kw), e.state_dict(**kw)
        assert list(es) == list(ts)
        for k in ts:
            close(es[k], ts[k], what=k)
            assert es[k].requires_grad == ts[k].requires_grad, k
    assert norm_repr(repr(t)) == repr(e)


def test_forward_backward_after_load():
    t, e = both()
    x = torch.randn(5, 3, dtype=torch.float32, requires_grad=True)
    ex = E(x)
    tout, eout = t(x), e(ex)
    close(eout, tout)
    tout.sum().backward()
    eout.sum().backward()
    close(ex.grad, x.grad)
    ep = dict(e.named_parameters())
    for n, p in t.named_parameters():
        close(ep[n].grad, p.grad, what=n)


def test_load_state_dict_results_and_errors():
    t, e = both()
    sd_t, sd_e = t.state_dict(), e.state_dict()
    r_t, r_e = t.load_state_dict(sd_t), e.load_state_dict(sd_e)
    assert repr(r_e) == repr(r_t) == "<All keys matched successfully>"
    # missing and unexpected keys, non-strict
    for edit in (lambda d: d.pop("b1.fc.weight"), lambda d: d.__setitem__("b1.extra", None),
                 lambda d: d.__setitem__("zzz.w", None)):
        dt, de = copy.copy(sd_t), copy.copy(sd_e)
        edit(dt)
        edit(de)
        dt = {k: (v if v is not None else torch.zeros(1)) for k, v in dt.items()}
        de = {k: (v if v is not None else ember.zeros(1)) for k, v in de.items()}
        r_t, r_e = t.load_state_dict(dt, strict=False), e.load_state_dict(de, strict=False)
        assert (r_e.missing_keys, r_e.unexpected_keys) == (r_t.missing_keys, r_t.unexpected_keys)
        assert repr(r_e) == repr(r_t)
        with pytest.raises(RuntimeError) as et:
            t.load_state_dict(dt)
        with pytest.raises(RuntimeError) as ee:
            e.load_state_dict(de)
        assert str(ee.value) == str(et.value)
    # shape mismatch raises even when not strict
    dt, de = dict(sd_t), dict(sd_e)
    dt["head.0.weight"], de["head.0.weight"] = torch.zeros(3, 4), ember.zeros(3, 4)
    for strict in (True, False):
        with pytest.raises(RuntimeError) as et:
            t.load_state_dict(dt, strict=strict)
        with pytest.raises(RuntimeError) as ee:
            e.load_state_dict(de, strict=strict)
        assert str(ee.value) == norm_repr(str(et.value))
        assert "size mismatch for head.0.weight" in str(ee.value)
    with pytest.raises(TypeError):
        e.load_state_dict([1, 2])


def test_load_state_dict_assign_and_copy_semantics():
    e = nn.Linear(3, 2)
    w = e.weight
    e.load_state_dict({"weight": ember.ones(2, 3), "bias": ember.zeros(2)})
    assert e.weight is w and float(w.sum()) == 6.0
    new = ember.full((2, 3), 2.0)
    e.load_state_dict({"weight": new, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(e.weight, nn.Parameter) and e.weight is not w
    assert e.weight.requires_grad and float(e.weight.sum()) == 12.0


def test_attribute_errors_match_torch():
    def attempts(lib):
        m = lib.nn.Linear(2, 2)
        yield lambda: setattr(m, "weight", lib.zeros(2, 2))        # tensor as parameter
        yield lambda: setattr(m, "weight", 3)
        m.sub = lib.nn.ReLU()
        yield lambda: setattr(m, "sub", 3)                         # non-module as module
        yield lambda: m.register_parameter("a.b", None)
        yield lambda: m.register_parameter("", None)
        yield lambda: m.register_parameter(1, None)
        yield lambda: m.register_parameter("in_features", None)    # existing attribute
        yield lambda: m.register_parameter("p", lib.zeros(2))
        yield lambda: m.register_parameter("p", lib.nn.Parameter(lib.zeros(2)) * 2)
        yield lambda: m.register_buffer("b.c", lib.zeros(2))
        yield lambda: m.register_buffer("b", 3)
        yield lambda: m.register_buffer("weight", lib.zeros(2))
        m.plain = 3
        yield lambda: setattr(m, "plain", lib.nn.Buffer(lib.zeros(1)))   # over an attribute
        yield lambda: m.add_module("x.y", lib.nn.ReLU())
        yield lambda: m.add_module("z", 3)
        yield lambda: m.add_module("", lib.nn.ReLU())
        yield lambda: m.missing_attribute
        yield lambda: m.get_submodule("sub.nothing")
        yield lambda: m.get_submodule("in_features")
        yield lambda: m.get_parameter("nope")
        yield lambda: m.get_parameter("in_features")
        yield lambda: m.get_buffer("weight")
        yield lambda: m.train("yes")
        yield lambda: m.to(lib.int64)
        yield lambda: lib.nn.Module()(1)
    for ft, fe in zip(attempts(torch), attempts(ember)):
        with pytest.raises(Exception) as et:
            ft()
        with pytest.raises(Exception) as ee:
            fe()
        assert type(ee.value) is type(et.value), (et.value, ee.value)
        assert str(ee.value) in (str(et.value), norm_repr(str(et.value)))


def test_setattr_none_delattr_and_dir():
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 3)
        m.bias = None
        assert [n for n, _ in m.named_parameters()] == ["weight"]
        assert m.bias is None and "bias" in m._parameters
        m.buf = lib.nn.Buffer(lib.zeros(3), persistent=False)
        m.register_buffer("kept", lib.ones(1))
        assert list(m.state_dict()) == ["weight", "kept"]
        m.buf = lib.ones(2)          # a tensor assigned to a buffer name stays a buffer
        assert "buf" in m._buffers and "buf" not in m.state_dict()
        del m.weight, m.buf
        assert [n for n, _ in m.named_parameters()] == [] and "buf" not in m._buffers
        m.weight = lib.nn.Parameter(lib.ones(1))
        d = dir(m)
        assert "weight" in d and "kept" in d and "forward" in d and d == sorted(d)
    seq_t, seq_e = torch.nn.Sequential(torch.nn.ReLU()), nn.Sequential(nn.ReLU())
    assert not any(k.isdigit() for k in dir(seq_e)) and not any(k.isdigit() for k in dir(seq_t))


def test_get_submodule_parameter_buffer():
    t, e = both()
    assert type(e.get_submodule("head.0")).__name__ == "Linear"
    assert e.get_submodule("") is e
    assert e.get_parameter("b1.fc.weight") is e.b1.fc.weight
    assert e.get_buffer("b2.running") is e.b2.running
    close(e.get_buffer("b1.running"), t.get_buffer("b1.running"))


def test_train_eval_requires_grad_zero_grad():
    t, e = both()
    for m in (t, e):
        m.eval()
    assert [m.training for m in e.modules()] == [m.training for m in t.modules()]
    assert all(not m.training for m in e.modules())
    assert e.train() is e and all(m.training for m in e.modules())
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())
    e.requires_grad_()
    e(ember.randn(2, 3)).sum().backward()
    e.zero_grad(set_to_none=False)
    assert all(p.grad is not None and float(p.grad.abs().sum()) == 0 for p in e.parameters())
    e.zero_grad()
    assert all(p.grad is None for p in e.parameters())


def test_to_and_casts_keep_parameter_identity():
    e = build(ember)
    params = list(e.parameters())
    e(ember.randn(2, 3)).sum().backward()
    assert e.to(ember.float64) is e
    assert all(p is q for p, q in zip(params, e.parameters()))
    assert all(p.dtype is ember.float64 and p.grad.dtype is ember.float64 for p in params)
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    assert e.b1.running.dtype is ember.float64 and e.b1.count.dtype is ember.int64
    for name, dt in (("float", ember.float32), ("half", ember.float16),
                     ("bfloat16", ember.bfloat16), ("double", ember.float64)):
        getattr(e, name)()
        assert all(p.dtype is dt for p in e.parameters())
        assert e.b1.count.dtype is ember.int64
    e.to("cpu")
    e.to(ember.zeros(1, dtype=ember.float32))
    assert all(p.dtype is ember.float32 for p in e.parameters())
    e.to(device="cpu", dtype=ember.float64)
    assert e.head[0].weight.dtype is ember.float64


def test_apply_order():
    seen_t, seen_e = [], []
    t, e = both()
    t.apply(lambda m: seen_t.append(type(m).__name__))
    e.apply(lambda m: seen_e.append(type(m).__name__))
    assert seen_e == seen_t


def test_forward_hooks_order_and_effects():
    def trace(lib):
        log = []
        m = lib.nn.Linear(3, 2)
        h1 = m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: (log.append("pre0"), None)[1],
                                    prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kw: (log.append(("prekw", sorted(kw))),
                                                           (args, kw))[1], with_kwargs=True)
        m.register_forward_pre_hook(lambda mod, args: args[0] * 2)   # single value -> (value,)
        m.register_forward_hook(lambda mod, args, out: log.append(("fwd", len(args))))
        m.register_forward_hook(lambda mod, args, kw, out: out + 1, with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)
        x = lib.ones(4, 3)
        y = m(x)
        h1.remove()
        m(x)
        with lib.no_grad():
            expected = lib.nn.functional.linear(x * 2, m.weight, m.bias) + 1
        return log, (y - expected).abs().max().item()
    log_t, err_t = trace(torch)
    log_e, err_e = trace(ember)
    assert log_e == log_t
    assert err_e < 1e-6 and err_t < 1e-6


def test_forward_hook_always_call_on_error():
    for lib in (torch, ember):
        log = []

        class Bad(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        m = Bad()
        m.register_forward_hook(lambda mod, args, out: log.append("always"), always_call=True)
        m.register_forward_hook(lambda mod, args, out: log.append("normal"))
        with pytest.raises(ValueError):
            m(1)
        assert log == ["always"]


def _bw_trace(lib, input_grad=True, replace=False):
    torch.manual_seed(1)
    log = []
    m = lib.nn.Linear(3, 2)
    if lib is ember:
        tm = torch.nn.Linear(3, 2)
        m.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})

    def hook(mod, gin, gout):
        log.append(("hook", [None if g is None else tuple(g.shape) for g in gin],
                    [None if g is None else g.tolist() for g in gout]))
        if replace:
            return tuple(None if g is None else g * 0 + 1 for g in gin)

    def pre(mod, gout):
        log.append(("pre", [tuple(g.shape) for g in gout]))
        return (gout[0] * 2,)
    m.register_full_backward_hook(hook)
    m.register_full_backward_pre_hook(pre)
    x = lib.tensor(np.arange(6.0).reshape(2, 3), dtype=lib.float32, requires_grad=input_grad)
    out = m(x)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out.backward(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
    log.append(("warnings", len(w)))
    return log, (None if x.grad is None else x.grad.tolist()), m.weight.grad.tolist()


@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks(input_grad, replace):
    log_t, xg_t, wg_t = _bw_trace(torch, input_grad, replace)
    log_e, xg_e, wg_e = _bw_trace(ember, input_grad, replace)
    assert [entry[:2] for entry in log_e] == [entry[:2] for entry in log_t]
    for a, b in zip(log_e, log_t):
        if a[0] == "hook":
            np.testing.assert_allclose(a[2], b[2], rtol=1e-6)
    if xg_t is None:
        assert xg_e is None
    else:
        np.testing.assert_allclose(xg_e, xg_t, rtol=1e-5)
    np.testing.assert_allclose(wg_e, wg_t, rtol=1e-5)


def test_parameter_basics():
    data = ember.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    tp = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(p) == repr(tp).replace("torch", "ember") and repr(p).startswith(
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)")
    assert isinstance(p, ember.Tensor) and p.requires_grad and p.is_leaf
    assert type(p * 2) is ember.Tensor and type(p.detach()) is ember.Tensor
    with ember.no_grad():
        p.mul_(3)
    assert data.tolist() == [3.0, 6.0]       # shares the storage
    assert not nn.Parameter(ember.zeros(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == torch.nn.Parameter().shape
    with pytest.raises(RuntimeError):
        torch.nn.Parameter(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError):
        nn.Parameter(ember.tensor([1, 2]))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == p.tolist()
    r = copy.deepcopy(p)
    assert type(r) is nn.Parameter and r.tolist() == p.tolist() and r is not p
    # a Parameter works in every op; results are plain Tensors with the usual gradients
    w = np.random.default_rng(0).standard_normal((3, 3))
    tp, ep = torch.nn.Parameter(torch.tensor(w)), nn.Parameter(ember.tensor(w))
    for lib, q in ((torch, tp), (ember, ep)):
        x = lib.ones(2, 3, dtype=lib.float64)
        out = (q @ x.t()).exp().sum() + q[0].sum() + lib.cat([q, q]).mean() + (1 - q).pow(2).sum()
        out.backward()
    close(ep.grad, tp.grad)
    b = nn.Buffer(ember.ones(2), persistent=False)
    assert isinstance(b, ember.Tensor) and b.persistent is False and not b.requires_grad


def test_deepcopy_and_pickle_module():
    t, e = both()
    e2 = copy.deepcopy(e)
    assert names(e2.named_parameters()) == names(e.named_parameters())
    assert e2.alias is e2.b1.fc and e2.tied is e2.b2.scale     # sharing preserved
    with ember.no_grad():
        e2.b1.fc.weight.add_(1)
    assert not ember.equal(e2.b1.fc.weight, e.b1.fc.weight)
    lin = pickle.loads(pickle.dumps(nn.Linear(3, 2)))
    assert repr(lin) == "Linear(in_features=3, out_features=2, bias=True)"
    assert isinstance(lin.weight, nn.Parameter)


def test_module_init_errors_and_missing_forward():
    with pytest.raises(TypeError):
        nn.Module(foo=1)
    with pytest.raises(TypeError):
        torch.nn.Module(foo=1)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.zeros(1))
    with pytest.raises(AttributeError):
        Early()


def test_extra_state_and_state_dict_hooks():
    def make(lib):
        log = []

        class WithExtra(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(2, 2)
                self.register_buffer("b", lib.zeros(1))
                self.extra = {"step": 1}

            def get_extra_state(self):
                return dict(self.extra)

            def set_extra_state(self, state):
                log.append(("set", state))
                self.extra = state
        outer = lib.nn.Sequential(WithExtra())
        outer.register_state_dict_pre_hook(lambda m, prefix, keep: log.append(("pre", prefix)))
        outer[0].register_state_dict_post_hook(
            lambda m, sd, prefix, meta: log.append(("post", prefix, sorted(sd))))
        outer.register_load_state_dict_post_hook(
            lambda m, keys: log.append(("load", list(keys.missing_keys))))
        return outer, log
    (t, log_t), (e, log_e) = make(torch), make(ember)
    sd_t, sd_e = t.state_dict(), e.state_dict()
    assert list(sd_e) == list(sd_t) and sd_e["0._extra_state"] == sd_t["0._extra_state"]
    sd_e["0._extra_state"] = sd_t["0._extra_state"] = {"step": 7}
    e.load_state_dict(sd_e)
    t.load_state_dict(sd_t)
    assert log_e == log_t and e[0].extra == {"step": 7}
    del sd_e["0._extra_state"], sd_t["0._extra_state"]
    with pytest.raises(RuntimeError) as et:
        t.load_state_dict(sd_t)
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(sd_e)
    assert str(ee.value) == str(et.value)
