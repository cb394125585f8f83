"""ember.utils.checkpoint against torch.utils.checkpoint: values and gradients (inputs and
parameters), both variants, keyword arguments, nested outputs, checkpoint_sequential, the
same dropout masks in the recomputation, the memory it saves, and torch's errors/warnings."""
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import ember
import ember.utils.checkpoint as ecp
from ember import nn


def _pair_mlp(seed=0):
    """The same small MLP in torch and ember (ember's weights copied from torch's)."""
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 6),
                            torch.nn.GELU(), torch.nn.Linear(6, 3)).double()
    e = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6), nn.GELU(),
                      nn.Linear(6, 3)).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, e


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                               b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("reentrant", [False, True])
def test_values_and_gradients_match_torch(reentrant):
    t, e = _pair_mlp()
    xn = np.random.default_rng(0).standard_normal((5, 4))
    tx = torch.tensor(xn, requires_grad=True)
    ex = ember.tensor(xn, requires_grad=True)
    ty = tcp.checkpoint(t, tx, use_reentrant=reentrant)
    ey = ecp.checkpoint(e, ex, use_reentrant=reentrant)
    _close(ey, ty)
    (ty ** 2).sum().backward()
    (ey ** 2).sum().backward()
    _close(ex.grad, tx.grad)
    for (n, tp), ep in zip(t.named_parameters(), e.parameters()):
        _close(ep.grad, tp.grad)


def test_non_reentrant_params_get_grads_when_input_does_not_require_grad():
    t, e = _pair_mlp(1)
    xn = np.random.default_rng(1).standard_normal((3, 4))
    ty = tcp.checkpoint(t, torch.tensor(xn), use_reentrant=False)
    ey = ecp.checkpoint(e, ember.tensor(xn), use_reentrant=False)
    assert ey.requires_grad == ty.requires_grad is True
    ty.sum().backward()
    ey.sum().backward()
    for tp, ep in zip(t.parameters(), e.parameters()):
        _close(ep.grad, tp.grad)


def test_reentrant_without_grad_inputs_warns_and_output_has_no_grad():
    t, e = _pair_mlp()
    x = np.ones((2, 4))
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        ty = tcp.checkpoint(t, torch.tensor(x), use_reentrant=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        ey = ecp.checkpoint(e, ember.tensor(x), use_reentrant=True)
    assert ey.requires_grad == ty.requires_grad is False
    with pytest.raises(RuntimeError):
        ty.sum().backward()
    with pytest.raises(RuntimeError):
        ey.sum().backward()


@pytest.mark.parametrize("reentrant", [False, True])
def test_autograd_grad(reentrant):
    """Non-reentrant works under autograd.grad; reentrant raises torch's RuntimeError."""
    t, e = _pair_mlp()
    xn = np.random.default_rng(2).standard_normal((2, 4))
    tx = torch.tensor(xn, requires_grad=True)
    ex = ember.tensor(xn, requires_grad=True)
    ty = tcp.checkpoint(t, tx, use_reentrant=reentrant).sum()
    ey = ecp.checkpoint(e, ex, use_reentrant=reentrant).sum()
    if reentrant:
        with pytest.raises(RuntimeError, match="incompatible with .grad()") as ti:
            torch.autograd.grad(ty, tx)
        with pytest.raises(RuntimeError, match="incompatible with .grad()"):
            ember.autograd.grad(ey, ex)
        assert "use_reentrant=False" in str(ti.value)
        return
    (tg,) = torch.autograd.grad(ty, tx)
    (eg,) = ember.autograd.grad(ey, ex)
    _close(eg, tg)


def test_kwargs_and_structured_outputs():
    def tf(a, b, *, scale):
        return {"s": (a * b).sin() * scale, "pair": (a.exp(), b.cos()), "n": 3}

    def ef(a, b, *, scale):
        return {"s": (a * b).sin() * scale, "pair": (a.exp(), b.cos()), "n": 3}

    an, bn = np.random.default_rng(3).standard_normal((2, 3, 2))
    ta, tb = torch.tensor(an, requires_grad=True), torch.tensor(bn, requires_grad=True)
    ea, eb = ember.tensor(an, requires_grad=True), ember.tensor(bn, requires_grad=True)
    to = tcp.checkpoint(tf, ta, tb, scale=2.0, use_reentrant=False)
    eo = ecp.checkpoint(ef, ea, eb, scale=2.0, use_reentrant=False)
    assert eo["n"] == to["n"] == 3
    _close(eo["s"], to["s"])
    (to["s"].sum() + to["pair"][0].sum() * to["pair"][1].sum()).backward()
    (eo["s"].sum() + eo["pair"][0].sum() * eo["pair"][1].sum()).backward()
    _close(ea.grad, ta.grad)
    _close(eb.grad, tb.grad)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale") as ti:
        tcp.checkpoint(tf, ta, tb, scale=2.0, use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale") as ei:
        ecp.checkpoint(ef, ea, eb, scale=2.0, use_reentrant=True)
    assert str(ei.value) == str(ti.value)


def test_missing_use_reentrant_warns_and_defaults_to_reentrant():
    t, e = _pair_mlp()
    x = np.ones((2, 4))
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        ty = tcp.checkpoint(t, torch.tensor(x, requires_grad=True))
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        ey = ecp.checkpoint(e, ember.tensor(x, requires_grad=True))
    assert type(ty.grad_fn).__name__ == "CheckpointFunctionBackward"
    assert type(ey.grad_fn).__name__ == "CheckpointFunctionBackward"
    with pytest.raises(ValueError, match="context_fn"):
        tcp.checkpoint(t, torch.tensor(x), use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="context_fn"):
        ecp.checkpoint(e, ember.tensor(x), use_reentrant=True, debug=True)


@pytest.mark.parametrize("reentrant", [False, True])
def test_dropout_recomputed_with_the_same_rng_state(reentrant):
    """Gradients through dropout equal those without checkpointing (torch's guarantee with
    preserve_rng_state=True); the RNG stream after the step is the one without checkpoint."""
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 4))
    x = ember.randn(6, 8, requires_grad=True)

    def step(ck):
        ember.manual_seed(5)
        y = ecp.checkpoint(m, x, use_reentrant=reentrant) if ck else m(x)
        y.pow(2).sum().backward()
        grads = [x.grad.clone()] + [p.grad.clone() for p in m.parameters()]
        after = ember.rand(3)
        m.zero_grad()
        x.grad = None
        return y.detach(), grads, after

    y0, g0, r0 = step(False)
    y1, g1, r1 = step(True)
    _close(y0, y1, 0)
    _close(r0, r1, 0)
    for a, b in zip(g0, g1):
        _close(a, b, 1e-6)
    # without preserving the state the recomputation draws other masks
    ember.manual_seed(5)
    y = ecp.checkpoint(m, x, use_reentrant=reentrant, preserve_rng_state=False)
    y.pow(2).sum().backward()
    assert not np.allclose(x.grad.numpy(), g0[0].numpy())


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_sequential_matches_torch(reentrant):
    t, e = _pair_mlp(4)
    xn = np.random.default_rng(4).standard_normal((3, 4))
    tx = torch.tensor(xn, requires_grad=True)
    ex = ember.tensor(xn, requires_grad=True)
    ty = tcp.checkpoint_sequential(t, 3, tx, use_reentrant=reentrant)
    ey = ecp.checkpoint_sequential(e, 3, ex, use_reentrant=reentrant)
    _close(ey, ty)
    ty.sum().backward()
    ey.sum().backward()
    _close(ex.grad, tx.grad)
    for tp, ep in zip(t.parameters(), e.parameters()):
        _close(ep.grad, tp.grad)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        tcp.checkpoint_sequential(t, 2, tx, use_reentrant=reentrant, foo=1)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        ecp.checkpoint_sequential(e, 2, ex, use_reentrant=reentrant, foo=1)


def test_under_no_grad_runs_plainly_and_closure_over_intermediate():
    t, e = _pair_mlp()
    x = np.ones((2, 4))
    with torch.no_grad():
        ty = tcp.checkpoint(t, torch.tensor(x), use_reentrant=False)
    with ember.no_grad():
        ey = ecp.checkpoint(e, ember.tensor(x), use_reentrant=False)
    assert ey.requires_grad == ty.requires_grad is False
    _close(ey, ty)
    # fn reads an intermediate (non-leaf) tensor of the caller: gradients still reach it
    wn = np.arange(4.0)
    tw = torch.tensor(wn, requires_grad=True)
    ew = ember.tensor(wn, requires_grad=True)
    th, eh = tw * 3, ew * 3
    ty = tcp.checkpoint(lambda a: (a * th).sin(), torch.tensor(wn, requires_grad=True),
                        use_reentrant=False)
    ey = ecp.checkpoint(lambda a: (a * eh).sin(), ember.tensor(wn, requires_grad=True),
                        use_reentrant=False)
    ty.sum().backward()
    ey.sum().backward()
    _close(ew.grad, tw.grad)


def test_detach_variable_and_check_backward_validity():
    a = ember.ones(2, requires_grad=True)
    d, n = ecp.detach_variable((a, 3))
    assert d.requires_grad and d.grad_fn is None and n == 3
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported"):
        tcp.detach_variable([torch.ones(1)])
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported"):
        ecp.detach_variable([a])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ecp.check_backward_validity((a,))


def test_checkpointing_gpt_blocks_lowers_peak_memory():
    """The examples' GPT: each block checkpointed keeps ~1/4 of the plain step's peak
    (benchmarks/checkpoint_memory.py prints the figures), with the same loss and gradients."""
    from benchmarks.checkpoint_memory import measure
    res = measure(layers=2, embd=32, heads=2, block=16, batch=4)
    plain = res["plain"][0]
    for name in ("checkpoint(use_reentrant=False)", "checkpoint(use_reentrant=True)"):
        peak, loss, gdiff = res[name]
        assert peak < 0.75 * plain, (name, peak, plain)
        assert loss == pytest.approx(res["plain"][1], abs=1e-6)
        assert gdiff < 1e-5


def test_double_backward_through_non_reentrant_checkpoint():
    """A gradient penalty through a checkpointed block: torch's non-reentrant variant
    supports create_graph, its reentrant one gives a gradient without history."""
    x0 = np.random.default_rng(7).standard_normal((3, 4))
    w0 = np.random.default_rng(8).standard_normal((4, 4))
    res = {}
    for lib, cp in ((torch, tcp), (ember, ecp)):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        y = cp.checkpoint(lambda a: (a @ w).tanh() * a.sin(), x, use_reentrant=False).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad
        ((g ** 2).sum() + y).backward()
        res[lib.__name__] = (g.detach().numpy(), x.grad.numpy(), w.grad.numpy())
        xr = lib.tensor(x0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yr = cp.checkpoint(lambda a: (a @ w).tanh(), xr, use_reentrant=True).sum()
        yr.backward(create_graph=True)
        assert not xr.grad.requires_grad
    for a, b in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reentrant", [False, True])
def test_nested_checkpoints(reentrant):
    x0 = np.random.default_rng(9).standard_normal((3, 4))
    w0 = np.random.default_rng(10).standard_normal((4, 4))
    out = []
    for lib, cp in ((torch, tcp), (ember, ecp)):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)

        def outer(a, cp=cp, w=w):
            return cp.checkpoint(lambda b: (b @ w).sin(), a * 2,
                                 use_reentrant=reentrant).cos() @ w
        cp.checkpoint(outer, x, use_reentrant=reentrant).sum().backward()
        out.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
