"""Python side effects inside compiled functions are redone at every call with the call's own
values (ember/compiler/effects.py), never left at the traced call's: attribute assignments on
modules and plain objects (llama2.c's ``self.last_loss = loss``), list appends and item
sets, dict updates, closure cells. What cannot be redone is a graph break, and the result is
still eager's. Each test runs the same function compiled and eagerly, call after call.
"""
import copy
import os

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import GraphBreakError

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")   # c: test_c_backend.py


def rn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def same(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()),
                               rtol=tol, atol=tol)


def compiled_variant(cf):
    cf = getattr(cf, "_compiled", cf)
    return [v for v in cf.variants if not v.eager]


class Llama2cStyle(nn.Module):
    """forward stores the loss on the module and returns only the logits (llama2.c)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.head = nn.Linear(8, 11)
        self.last_loss = None

    def forward(self, tokens, targets=None):
        logits = self.head(F.gelu(self.emb(tokens)))
        if targets is not None:
            self.last_loss = F.cross_entropy(logits.view(-1, 11), targets.view(-1))
        else:
            self.last_loss = None
        return logits


def test_module_attribute_loss_trains_like_eager():
    ember.manual_seed(0)
    eager = Llama2cStyle()
    model = copy.deepcopy(eager)
    cm = ember.compile(model, backend=BACKEND)
    opt_c = ember.optim.SGD(model.parameters(), lr=0.5)
    opt_e = ember.optim.SGD(eager.parameters(), lr=0.5)
    rng = np.random.default_rng(1)
    losses = []
    for step in range(4):
        tok = ember.tensor(rng.integers(0, 11, (3, 5)))
        tgt = ember.tensor(rng.integers(0, 11, (3, 5)))
        same(cm(tok, tgt), eager(tok, tgt), 1e-5)
        same(model.last_loss, eager.last_loss, 1e-5)
        losses.append(model.last_loss.item())
        model.last_loss.backward()           # a fresh graph every call (was: "backward
        eager.last_loss.backward()           # through the graph a second time")
        opt_c.step(), opt_e.step(), opt_c.zero_grad(), opt_e.zero_grad()
    assert len(set(losses)) == 4             # not the first call's loss again
    for pc, pe in zip(model.parameters(), eager.parameters()):
        same(pc, pe, 1e-5)
    v = compiled_variant(cm)
    assert len(v) == 1 and v[0].effects == ["self.last_loss"]
    assert "self.last_loss" in str(ember.compiler.explain(cm)(tok, tgt))
    # inference: the other branch sets None (a new variant: targets is None)
    with ember.no_grad():
        cm(tok)
    assert model.last_loss is None


def test_list_append_and_item_set_from_an_argument_closure_and_global():
    closure_log = []

    def fn(x, out):
        y = x * 2
        out.append(y.sum())             # an argument
        closure_log.append(y + 1)       # a closure variable
        GLOBAL_LOG.append((y, 3))       # a global, a new tuple with a tensor in it
        out[0] = y.mean()               # an item set
        return y - 1

    cf = ember.compile(fn, backend=BACKEND)
    outs_c, outs_e = [ember.zeros(())], [ember.zeros(())]
    GLOBAL_LOG.clear()
    for i in range(3):
        x = rn(2, 3, seed=i)
        same(cf(x, outs_c), fn(x, outs_e))
    assert len(outs_c) == len(outs_e) == 4
    for a, b in zip(outs_c, outs_e):
        same(a, b)
    assert len(closure_log) == 6 and len(GLOBAL_LOG) == 6
    for k in range(3):                  # compiled calls first, eager second, per step
        same(closure_log[2 * k], closure_log[2 * k + 1])
        same(GLOBAL_LOG[2 * k][0], GLOBAL_LOG[2 * k + 1][0])
        assert type(GLOBAL_LOG[2 * k]) is tuple and GLOBAL_LOG[2 * k][1] == 3
    assert GLOBAL_LOG[0][0] is not GLOBAL_LOG[2][0]     # a new tensor at each call
    # (the list argument's length is guarded: it grows, so calls recompile, none eager)
    assert cf.variants and not any(v.eager for v in cf.variants)


GLOBAL_LOG = []


def test_dict_update_and_plain_object_attributes():
    class State:
        pass

    def fn(x, stats, st):
        h = x.relu()
        stats["act"] = h
        stats["mean"] = h.mean()
        st.hidden = h * 3
        st.pair = (h.sum(), [h.max()])
        return h + st.hidden

    cf = ember.compile(fn, backend=BACKEND)
    for i in range(3):
        x = rn(4, seed=i)
        sc, se, oc, oe = {}, {}, State(), State()
        if i:      # the same objects again, already holding last call's values
            sc, se, oc, oe = keep
        same(cf(x, sc, oc), fn(x, se, oe))
        for k in ("act", "mean"):
            same(sc[k], se[k])
        same(oc.hidden, oe.hidden)
        same(oc.pair[0], oe.pair[0]), same(oc.pair[1][0], oe.pair[1][0])
        keep = (sc, se, oc, oe)
    assert all(not v.eager for v in getattr(cf, "variants"))


def test_closure_cell_rebinding():
    last = None

    def fn(x):
        nonlocal last
        last = x.exp()
        return last * 2

    cf = ember.compile(fn, backend=BACKEND)
    for i in range(3):
        x = rn(3, seed=i)
        cf(x)
        got = last
        fn(x)
        same(got, last)
        assert got is not last
    assert len(compiled_variant(cf)) == 1


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.steps = 0
        self.mode = None

    def forward(self, x):
        self.steps += 1             # a Python counter: cannot be a replayed constant
        self.mode = "ran"           # the same value every call: replayed
        return self.lin(x)


def test_python_counter_is_a_break_and_an_idempotent_set_is_replayed():
    ember.manual_seed(0)
    net = Counting()
    cm = ember.compile(net, backend=BACKEND)
    for i in range(5):
        x = rn(2, 3, seed=i)
        same(cm(x), net.lin(x))
        assert net.steps == i + 1 and net.mode == "ran"
    cf = cm._compiled
    assert len(cf.variants) <= 2 and cf.variants[-1].eager
    assert any("self.steps" in str(b) and "every call" in str(b) for b in cf.breaks)

    class SetsMode(Counting):
        def forward(self, x):
            self.mode = "ran"
            return self.lin(x)
    net2 = SetsMode()
    cm2 = ember.compile(net2, backend=BACKEND)
    for i in range(4):
        net2.mode = None if i == 2 else net2.mode      # changed from outside: replayed
        x = rn(2, 3, seed=i)
        same(cm2(x), net2.lin(x))
        assert net2.mode == "ran"
    assert len(compiled_variant(cm2)) >= 1 and not cm2._compiled.breaks


def test_state_carried_in_a_plain_attribute_is_a_break():
    class Ema(nn.Module):
        def __init__(self):
            super().__init__()
            self.avg = ember.zeros(3)

        def forward(self, x):
            self.avg = self.avg * 0.5 + x       # reads the old tensor, stores a new one
            return self.avg * 2

    m_c, m_e = Ema(), Ema()
    cm = ember.compile(m_c, backend=BACKEND)
    for i in range(4):
        x = rn(3, seed=i)
        same(cm(x), m_e(x))
        same(m_c.avg, m_e.avg)
    assert any("self.avg" in str(b) for b in cm._compiled.breaks)


def test_unsupported_effects_break_and_stay_exact():
    def deletes(x, d):
        d.pop("old", None)
        return x + 1

    def escapes(x):
        return _helper(x * 2) + 1      # stores into a list the compiler does not watch

    for fn, args_of in ((deletes, lambda i: ({"old": 1},)), (escapes, lambda i: ())):
        cf = ember.compile(fn, backend=BACKEND)
        _STORE.clear()
        for i in range(3):
            a, b = args_of(i), args_of(i)
            same(cf(rn(3, seed=i), *a), fn(rn(3, seed=i), *b))
            assert a == b
        assert cf.breaks and "side effect" in str(cf.breaks[0])
        with pytest.raises(GraphBreakError, match="side effect"):
            ember.compile(fn, backend=BACKEND, fullgraph=True)(rn(3), *args_of(0))
    assert len(_STORE) == 6 + 1 and _STORE[0] is not _STORE[1]


_STORE = []


def _helper(t, store=_STORE):
    store.append(t)
    return t


def test_forward_hook_storing_activations():
    acts = {}
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    net[1].register_forward_hook(lambda mod, inp, out: acts.__setitem__("tanh", out))
    cm = ember.compile(net, backend=BACKEND)
    for i in range(3):
        x = rn(2, 3, seed=i)
        cm(x)
        got = acts["tanh"]
        same(got, net[1](net[0](x)))
        assert i == 0 or got is not prev
        prev = got


def test_training_step_with_optimizer_inside_and_a_loss_history():
    """The optimizer's own state changes are its recorded step's, not side effects to redo;
    the history append is one."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    twin = copy.deepcopy(model)

    def make(m, hist):
        opt = ember.optim.Adam(m.parameters(), lr=0.01)

        def step(x, y):
            loss = F.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            hist.append(loss.detach())
            return loss
        return step

    hist_c, hist_e = [], []
    cs, es = ember.compile(make(model, hist_c), backend=BACKEND), make(twin, hist_e)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x, y = (ember.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((5, 4),
                                                                                 (5, 2)))
        same(cs(x, y), es(x, y), 1e-5)
    assert len(hist_c) == len(hist_e) == 4
    for a, b in zip(hist_c, hist_e):
        same(a, b, 1e-5)
    for p, q in zip(model.parameters(), twin.parameters()):
        same(p, q, 1e-5)
    v = compiled_variant(cs)
    assert len(v) == 1 and v[0].effects == ["hist.append"]
