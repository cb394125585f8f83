"""Training with ember.compile: compiled forward + eager optimizer, and a whole compiled train
step (zero_grad, forward, loss.backward(), optimizer.step() inside the compiled function),
against the same steps in eager mode from the same initial weights (state_dict copy). After
every step the parameters (and optimizer-visible grads) must equal eager's. Also: explain()
lists the tensors saved for the backward of the joint graph; gradients w.r.t. inputs.
"""
import os
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")   # the C backend: tests/compiler/test_c_backend.py


def cfun(obj):
    return getattr(obj, "_compiled", obj)


class MLPLoss(nn.Module):
    """A small classifier that returns its loss (LayerNorm, GELU, dropout-free)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(),
                                 nn.Linear(16, 4))

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


class ConvBNLoss(nn.Module):
    """Conv + BatchNorm (running stats change every step) + pooling + MSE."""

    def __init__(self):
        super().__init__()
        # no conv bias: BatchNorm cancels it, so its gradient is rounding noise, which Adam
        # normalises into full-size steps that differ between BLAS builds and CPUs
        self.conv = nn.Conv2d(2, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x, y):
        h = F.relu(self.bn(self.conv(x)))
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return F.mse_loss(self.fc(h), y)


def pair(cls):
    """Two models with identical weights (the second gets the first's state_dict)."""
    ember.manual_seed(0)
    a = cls()
    b = cls()
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    return a, b


def batches(cls, n=3):
    rng = np.random.default_rng(11)
    out = []
    for _ in range(n):
        if cls is MLPLoss:
            out.append((rng.standard_normal((8, 6)).astype(np.float32),
                        rng.integers(0, 4, 8)))
        else:
            out.append((rng.standard_normal((4, 2, 5, 5)).astype(np.float32),
                        rng.standard_normal((4, 3)).astype(np.float32)))
    return out


def assert_state_equal(a, b, rtol=1e-5, atol=1e-6):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        np.testing.assert_allclose(sa[k].numpy(), sb[k].numpy(), rtol=rtol, atol=atol,
                                   err_msg=k)


OPTIMIZERS = {
    "sgd_momentum": lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "adamw": lambda ps: ember.optim.AdamW(ps, lr=1e-2, weight_decay=0.05),
}


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("cls", [MLPLoss, ConvBNLoss])
def test_compiled_forward_backward_with_eager_optimizer(cls, opt_name):
    """loss = compiled_model(x, y); loss.backward(); opt.step() — 3 steps like eager."""
    m_c, m_e = pair(cls)
    cm = ember.compile(m_c, backend=BACKEND)
    opt_c, opt_e = OPTIMIZERS[opt_name](m_c.parameters()), OPTIMIZERS[opt_name](m_e.parameters())
    losses = []
    for x, y in batches(cls):
        for model, opt in ((cm, opt_c), (m_e, opt_e)):
            opt.zero_grad()
            loss = model(ember.tensor(x), ember.tensor(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        for p_c, p_e in zip(m_c.parameters(), m_e.parameters()):
            np.testing.assert_allclose(p_c.grad.numpy(), p_e.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)
        assert_state_equal(m_c, m_e)
    np.testing.assert_allclose(losses[0::2], losses[1::2], rtol=1e-5)
    assert losses[-2] != losses[0]                     # the steps changed something
    cf = cfun(cm)
    assert len(cf.variants) == 1 and not cf.variants[0].eager and cf.recompiles == []


def make_step(model, opt):
    def train_step(x, y):
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        opt.step()
        return loss
    return train_step


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("cls", [MLPLoss, ConvBNLoss])
def test_whole_compiled_train_step(cls, opt_name):
    """zero_grad, forward, backward and optimizer step all inside the compiled function."""
    m_c, m_e = pair(cls)
    opt_c, opt_e = OPTIMIZERS[opt_name](m_c.parameters()), OPTIMIZERS[opt_name](m_e.parameters())
    step_c = ember.compile(make_step(m_c, opt_c), backend=BACKEND)
    step_e = make_step(m_e, opt_e)
    for i, (x, y) in enumerate(batches(cls)):
        l_c = step_c(ember.tensor(x), ember.tensor(y))
        l_e = step_e(ember.tensor(x), ember.tensor(y))
        np.testing.assert_allclose(l_c.item(), l_e.item(), rtol=1e-5)
        assert_state_equal(m_c, m_e)
        for p_c, p_e in zip(m_c.parameters(), m_e.parameters()):
            np.testing.assert_allclose(p_c.grad.numpy(), p_e.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)
    # optimizer state (momentum buffers / Adam moments) advanced like eager's
    for p_c, p_e in zip(m_c.parameters(), m_e.parameters()):
        for k, v in opt_e.state[p_e].items():
            got = opt_c.state[p_c][k]
            np.testing.assert_allclose(np.asarray(got.numpy() if hasattr(got, "numpy")
                                                  else got),
                                       np.asarray(v.numpy() if hasattr(v, "numpy") else v),
                                       rtol=1e-5, atol=1e-7, err_msg=k)
    cf = cfun(step_c)
    assert len(cf.variants) == 1, cf.recompiles
    assert not cf.variants[0].eager, [str(b) for b in cf.breaks]


def test_compiled_train_step_with_grad_accumulation_across_calls():
    """Without zero_grad inside, .grad accumulates across compiled calls exactly as eager."""
    m_c, m_e = pair(MLPLoss)

    def accum(model):
        def step(x, y):
            loss = model(x, y)
            loss.backward()
            return loss
        return step
    step_c = ember.compile(accum(m_c), backend=BACKEND)
    step_e = accum(m_e)
    for x, y in batches(MLPLoss):
        step_c(ember.tensor(x), ember.tensor(y))
        step_e(ember.tensor(x), ember.tensor(y))
        for p_c, p_e in zip(m_c.parameters(), m_e.parameters()):
            np.testing.assert_allclose(p_c.grad.numpy(), p_e.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)
    assert not cfun(step_c).variants[0].eager


def test_explain_lists_saved_tensors_of_the_joint_graph():
    m = MLPLoss()
    cm = ember.compile(m, backend=BACKEND)
    x, y = batches(MLPLoss)[0]
    report = ember.compiler.explain(cm)(ember.tensor(x), ember.tensor(y))
    text = str(report)
    v = report.variants[0]
    assert set(v.graphs) == {"forward", "backward"}
    assert v.saved, "nothing saved for the backward"
    assert f"saved for backward ({len(v.saved)})" in text
    for s in v.saved:
        assert s in text
    # each saved entry names a forward value with its dtype and shape
    fwd_names = {n.name for n in v.graphs["forward"].nodes}
    for s in v.saved:
        name, meta = s.split(": ")
        assert name in fwd_names and meta.split("[")[0] in ("float32", "int64"), s
    # the backward graph takes exactly the saved values (then the output gradients)
    bwd_inputs = [n.name for n in v.graphs["backward"].inputs()]
    assert bwd_inputs[:len(v.saved)] == [s.split(":")[0] for s in v.saved]
    assert v.graphs["forward"].verify() and v.graphs["backward"].verify()


def test_cheap_pointwise_values_are_recomputed_not_saved():
    """A chain of cheap pointwise ops: its intermediates need not all be saved."""
    def fn(x, w):
        h = (x @ w).tanh() * 2 + 1
        return (h * h).sigmoid().sum()
    cf = ember.compile(fn, backend=BACKEND)
    x = ember.randn(4, 3)
    w = ember.randn(3, 5, requires_grad=True)
    cf(x, w)
    v = cf.variants[0]
    assert set(v.graphs) == {"forward", "backward"}
    n_fwd_values = sum(1 for n in v.graphs["forward"].nodes if n.kind == "call")
    assert len(v.saved) < n_fwd_values, v.saved
    assert v.recomputed or len(v.saved) <= 3, (v.saved, v.recomputed)


@pytest.mark.parametrize("with_params", [False, True])
def test_grads_with_respect_to_inputs(with_params):
    lin = nn.Linear(5, 3)
    lin.requires_grad_(with_params)

    def fn(x, y):
        return (lin(x) * y.sigmoid()).pow(2).mean()
    cf = ember.compile(fn, backend=BACKEND)
    rng = np.random.default_rng(5)
    for _ in range(3):
        a = rng.standard_normal((4, 5)).astype(np.float32)
        b = rng.standard_normal((4, 3)).astype(np.float32)
        xc, yc = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
        xe, ye = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
        lin.zero_grad()
        cf(xc, yc).backward()
        gw = lin.weight.grad.numpy().copy() if with_params else None
        lin.zero_grad()
        fn(xe, ye).backward()
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(yc.grad.numpy(), ye.grad.numpy(), rtol=1e-5, atol=1e-7)
        if with_params:
            np.testing.assert_allclose(gw, lin.weight.grad.numpy(), rtol=1e-5, atol=1e-7)
        else:
            assert lin.weight.grad is None
    cf_v = cf.variants
    assert len(cf_v) == 1 and set(cf_v[0].graphs) == {"forward", "backward"}


def test_only_some_inputs_require_grad():
    def fn(x, y, z):
        return (x * y + z.exp()).sum(), (y * 2).detach()
    cf = ember.compile(fn, backend=BACKEND)
    rng = np.random.default_rng(6)
    for _ in range(2):
        a, b, c = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
        xc, xe = ember.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
        (lc, dc), (le, de) = cf(xc, ember.tensor(b), ember.tensor(c)), \
            fn(xe, ember.tensor(b), ember.tensor(c))
        assert not dc.requires_grad and dc.grad_fn is None
        np.testing.assert_allclose(dc.numpy(), de.numpy())
        lc.backward()
        le.backward()
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
    assert len(cf.variants) == 1


def test_backward_twice_needs_retain_graph_like_eager():
    def fn(x):
        return (x.exp() * 3).sum()
    cf = ember.compile(fn, backend=BACKEND)
    cf(ember.randn(3, requires_grad=True))
    x = ember.randn(3, requires_grad=True)
    out = cf(x)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3 * np.exp(x.detach().numpy()), rtol=1e-5)


def test_compiled_loss_in_a_loop_matches_eager_losses_with_scheduler():
    """Compiled model + AdamW + StepLR over 4 steps: the loss trajectories agree."""
    m_c, m_e = pair(MLPLoss)
    cm = ember.compile(m_c, backend=BACKEND)
    runs = []
    for model, params in ((cm, m_c.parameters()), (m_e, m_e.parameters())):
        opt = ember.optim.AdamW(params, lr=5e-2)
        sched = ember.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
        losses = []
        for x, y in batches(MLPLoss, 4):
            opt.zero_grad()
            loss = model(ember.tensor(x), ember.tensor(y))
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        runs.append(losses)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-5)
    assert_state_equal(m_c, m_e)


@pytest.mark.parametrize("compiled", [False, True])
def test_leaf_grad_layout_and_accumulation_match_torch(compiled):
    # a compiled backward accumulates into .grad by the engine's rule, PyTorch's: the first
    # gradient takes the leaf's layout (here a transposed one), later ones add in place
    import torch

    def run(lib, compile):
        w = lib.tensor(np.arange(12.).reshape(4, 3)).t().detach().requires_grad_()
        x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3))

        def step(x, w):
            loss = (x @ w).pow(2).sum()
            loss.backward()
            return loss
        f = lib.compile(step, backend=BACKEND) if compile else step
        f(x, w)
        first, stride = w.grad, w.grad.stride()
        f(x, w)
        return stride, w.grad.stride(), w.grad is first, w.grad.detach().numpy()
    e, t = run(ember, compiled), run(torch, False)
    assert e[:3] == t[:3]
    np.testing.assert_allclose(e[3], t[3], rtol=1e-12)
