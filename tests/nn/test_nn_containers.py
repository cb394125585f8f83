"""Containers (Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict) and the small
structural layers (Identity, Flatten, Unflatten) against torch: the same sequence of
operations on both must leave the same keys, reprs and results, and raise the same errors.
"""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import nn

try:
    from ._nn_common import E, close, norm_repr, run_both
except ImportError:
    from _nn_common import E, close, norm_repr, run_both


def keys(m):
    return list(m._modules)


def layers(lib):
    return [lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 3), lib.nn.Tanh()]


def same(t, e):
    assert keys(e) == keys(t)
    assert repr(e) == norm_repr(repr(t))


def test_sequential_indexing_and_mutation():
    t, e = torch.nn.Sequential(*layers(torch)), nn.Sequential(*layers(ember))
    same(t, e)
    for idx in (0, 2, -1, -4):
        assert repr(e[idx]) == repr(t[idx])
    for sl in (slice(1, 3), slice(None, None, 2), slice(-2, None)):
        same(t[sl], e[sl])
        assert type(e[sl]) is nn.Sequential
    assert len(e) == len(t) == 4
    for i in (4, -5):
        with pytest.raises(IndexError):
            t[i]
        with pytest.raises(IndexError):
            e[i]
    for lib, m in ((torch, t), (ember, e)):
        m.append(lib.nn.Sigmoid())
        m.insert(1, lib.nn.Identity())
        m.insert(-1, lib.nn.Softsign())
        m.extend([lib.nn.ReLU6()])
        m[0] = lib.nn.Linear(2, 3, bias=False)
        del m[2]
        del m[1:3]
    same(t, e)
    for lib, m in ((torch, t), (ember, e)):
        m.pop(1)
    same(t, e)
    with pytest.raises(IndexError):
        t.insert(10, torch.nn.ReLU())
    with pytest.raises(IndexError):
        e.insert(10, nn.ReLU())
    same(t + t, e + e)
    same(t * 2, e * 2)


def test_sequential_ordereddict_and_forward():
    def make(lib):
        torch.manual_seed(0)
        return lib.nn.Sequential(OrderedDict([("fc", lib.nn.Linear(4, 3)), ("act", lib.nn.GELU()),
                                              ("out", lib.nn.Linear(3, 2))]))
    t, e = make(torch), make(ember)
    e.load_state_dict({k: E(v) for k, v in t.state_dict().items()})
    same(t, e)
    assert list(e.state_dict()) == list(t.state_dict()) == ["fc.weight", "fc.bias",
                                                             "out.weight", "out.bias"]
    assert repr(e.fc) == repr(t.fc)
    run_both(t, e, torch.randn(5, 4, requires_grad=True))
    assert [type(m).__name__ for m in e] == [type(m).__name__ for m in t]


def test_modulelist():
    def make(lib):
        return lib.nn.ModuleList([lib.nn.Linear(2, 2) for _ in range(3)] + [lib.nn.ReLU()])
    t, e = make(torch), make(ember)
    same(t, e)                       # repeated blocks print as "(0-2): 3 x Linear(...)"
    same(t[1:], e[1:])
    assert repr(e[-1]) == repr(t[-1])
    for lib, m in ((torch, t), (ember, e)):
        m.append(lib.nn.Tanh())
        m.extend([lib.nn.Tanh(), lib.nn.ReLU()])
        m.insert(1, lib.nn.Sigmoid())
        m += [lib.nn.Identity()]
        del m[0]
        m[2] = lib.nn.ReLU()
        m.pop(-1)
    same(t, e)
    same(t + t, e + e)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList()) == "ModuleList()"
    with pytest.raises(TypeError):
        t.extend(3)
    with pytest.raises(TypeError):
        e.extend(3)
    with pytest.raises(IndexError):
        e[10]
    with pytest.raises(NotImplementedError):
        e(1)
    assert len(list(e.parameters())) == len(list(t.parameters()))


def test_moduledict():
    def make(lib):
        return lib.nn.ModuleDict({"b": lib.nn.Linear(2, 2), "a": lib.nn.ReLU()})
    t, e = make(torch), make(ember)
    same(t, e)
    for lib, m in ((torch, t), (ember, e)):
        m["c"] = lib.nn.Tanh()
        m.update([("d", lib.nn.Identity()), ("b", lib.nn.Sigmoid())])
        m.update(OrderedDict(z=lib.nn.ReLU6()))
        del m["a"]
        m.pop("d")
    same(t, e)
    assert list(e.keys()) == list(t.keys()) and list(e) == list(t)
    assert "c" in e and "a" not in e and len(e) == len(t)
    assert [type(v).__name__ for v in e.values()] == [type(v).__name__ for v in t.values()]
    for bad, err in (([1], TypeError), ([("a", nn.ReLU(), 3)], ValueError)):
        with pytest.raises(err):
            e.update(bad)
        with pytest.raises(err):
            t.update([1] if err is TypeError else [("a", torch.nn.ReLU(), 3)])
    e.clear()
    assert len(e) == 0


def test_parameterlist():
    def make(lib):
        return lib.nn.ParameterList([lib.nn.Parameter(lib.zeros(2, 3)), lib.ones(4)])
    t, e = make(torch), make(ember)
    assert repr(e) == norm_repr(repr(t))
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert isinstance(e[1], nn.Parameter) and e[1].requires_grad
    for lib, m in ((torch, t), (ember, e)):
        m.append(lib.nn.Parameter(lib.zeros(1)))
        m.extend([lib.ones(2, 2, dtype=lib.float64)])
        m.append("text")
        m[0] = lib.full((5,), 2.0)
    assert repr(e) == norm_repr(repr(t))
    assert len(e) == len(t) == 5
    assert repr(e[1:3]) == norm_repr(repr(t[1:3]))
    assert [tuple(p.shape) for p in e.parameters()] == [tuple(p.shape) for p in t.parameters()]
    with pytest.raises(RuntimeError):
        e()
    with pytest.raises(TypeError):
        e.extend(ember.zeros(2))


def test_parameterdict():
    def make(lib):
        return lib.nn.ParameterDict({"w": lib.nn.Parameter(lib.zeros(2)), "a": lib.ones(3)})
    t, e = make(torch), make(ember)
    assert repr(e) == repr(t)   # names tensor types: 'torch.FloatTensor' in both
    assert list(e.keys()) == list(t.keys())           # a plain dict is taken sorted
    for lib, m in ((torch, t), (ember, e)):
        m["z"] = lib.zeros(1)
        m.update([("b", lib.ones(2)), ("w", lib.ones(4))])
        m.setdefault("q", lib.nn.Parameter(lib.ones(1)))
        del m["a"]
        m.pop("b")
    assert list(e.keys()) == list(t.keys())
    assert repr(e) == repr(t)   # names tensor types: 'torch.FloatTensor' in both
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert e.get("nope") is None and "z" in e and len(e) == len(t)
    k_t, _ = t.popitem()
    k_e, _ = e.popitem()
    assert k_e == k_t
    assert list((e | nn.ParameterDict({"n": ember.ones(1)})).keys()) == \
        list((t | torch.nn.ParameterDict({"n": torch.ones(1)})).keys())
    with pytest.raises(TypeError):
        e[1]
    e.clear()
    assert len(e) == 0


@pytest.mark.parametrize("args", [{}, {"start_dim": 0}, {"start_dim": 1, "end_dim": 2},
                                  {"start_dim": -2}])
def test_flatten(args):
    tm, em = torch.nn.Flatten(**args), nn.Flatten(**args)
    assert repr(em) == repr(tm)
    run_both(tm, em, torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True))


@pytest.mark.parametrize("dim,size", [(1, (2, 5)), (-1, [5, 2]), (1, (-1, 2)), (0, (3, 1))])
def test_unflatten(dim, size):
    tm, em = torch.nn.Unflatten(dim, size), nn.Unflatten(dim, size)
    assert repr(em) == repr(tm)
    run_both(tm, em, torch.randn(3, 10, dtype=torch.float64, requires_grad=True))
    for bad in ((2.0, 5), 7):
        with pytest.raises(TypeError):
            torch.nn.Unflatten(1, bad)
        with pytest.raises(TypeError):
            nn.Unflatten(1, bad)


def test_identity():
    x = ember.randn(3)
    m = nn.Identity(54, unused="x")
    assert m(x) is x and repr(m) == repr(torch.nn.Identity(54, unused="x")) == "Identity()"
    close(m(x), torch.nn.Identity()(torch.tensor(np.asarray(x.numpy()))))
