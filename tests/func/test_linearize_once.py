"""ember.func.linearize records the tangent computation once (ember/func/_linear_trace.py):
its jvp_fn matches torch.func.linearize on a first call and torch.func.jvp always (torch's
trace refuses control flow, and replays in-place ops wrongly after its first call), f's
Python body runs once however often jvp_fn is called, jvp_fn composes with vmap, jvp, grad
and backward, and where the recording is not used (linearize under vmap) the values are
the same."""
import numpy as np
import pytest
import torch

import ember
from ember import func as efunc
from ember.func import _linear_trace

rng = np.random.default_rng(41)
A = rng.standard_normal((4, 3))
B = rng.standard_normal(3)
W = rng.standard_normal((2, 3))
TANS = [(rng.standard_normal((4, 3)), rng.standard_normal(3)) for _ in range(3)]


def _fns(lib):
    w = lib.tensor(W)
    return {
        "sin_mul": lambda a, b: a.sin() * a * b,
        "mlp_softmax": lambda a, b: (lib.softmax(a @ w.t(), -1) * (a * b).exp()[:, :2]).tanh(),
        "pytree_out": lambda a, b: {"s": (a.sin() * b).sum(), "m": (a @ b, a.t()[1:].exp())},
        "inplace_views": lambda a, b: a.clone().mul_(2).add_(b).t().reshape(-1)[2:9].cos(),
        "reductions": lambda a, b: lib.logsumexp(a * b, 1) + a.max(1).values + a.cumsum(0)[-1, 0],
        "indexing": lambda a, b: (a[[0, 2]] * b).sum(0) + a[:, 1][[0, 1, 2]],
    }


def _flat(x):
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _flat(x[k])]
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _flat(v)]
    return [x]


def _close(e, t):
    e, t = _flat(e), _flat(t)
    assert len(e) == len(t)
    for a, b in zip(e, t):
        assert tuple(a.shape) == tuple(b.shape)
        assert not a.requires_grad
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def _counted(f, box):
    def g(*args):
        box[0] += 1
        return f(*args)
    return g


@pytest.mark.parametrize("name", list(_fns(torch)))
def test_linearize_matches_torch_and_runs_f_once(name):
    box = [0]
    out, jvp_fn = efunc.linearize(_counted(_fns(ember)[name], box), ember.tensor(A),
                                  ember.tensor(B))
    t_out, t_jvp_fn = torch.func.linearize(_fns(torch)[name], torch.tensor(A), torch.tensor(B))
    _close(out, t_out)
    _close(jvp_fn(ember.tensor(TANS[0][0]), ember.tensor(TANS[0][1])),
           t_jvp_fn(torch.tensor(TANS[0][0]), torch.tensor(TANS[0][1])))
    # later calls against torch.func.jvp: torch's own linearize replays in-place ops wrongly
    # from its second call on (inplace_views)
    prim = (torch.tensor(A), torch.tensor(B))
    for ta, tb in TANS:
        _close(jvp_fn(ember.tensor(ta), ember.tensor(tb)),
               torch.func.jvp(_fns(torch)[name], prim, (torch.tensor(ta), torch.tensor(tb)))[1])
    assert box[0] == 1          # the recording replays; f's body is not run again
    # batched tangents: vmap of the replay
    ta = np.stack([t[0] for t in TANS])
    tb = np.stack([t[1] for t in TANS])
    _close(efunc.vmap(jvp_fn)(ember.tensor(ta), ember.tensor(tb)),
           torch.func.vmap(lambda u, v: torch.func.jvp(_fns(torch)[name], prim, (u, v))[1])(
               torch.tensor(ta), torch.tensor(tb)))
    assert box[0] == 1


def test_linearize_records_and_replays_only_tangent_ops():
    f = _fns(ember)["sin_mul"]
    leaves = [ember.tensor(A), ember.tensor(B)]
    from ember.func._pytree import tree_flatten
    p_leaves, p_spec = tree_flatten(tuple(leaves))
    rec = _linear_trace.record(f, p_leaves, p_spec)
    assert rec is not None
    # sin_mul's tangent: a handful of elementwise ops on the tangents, not a rerun of f
    calls = []
    orig = _linear_trace.dispatch.with_mode_seam

    def spy(op, fn):
        calls.append(op)
        return orig(op, fn)
    _linear_trace.dispatch.with_mode_seam = spy
    try:
        rec[1]([ember.tensor(TANS[0][0]), ember.tensor(TANS[0][1])])
    finally:
        _linear_trace.dispatch.with_mode_seam = orig
    assert 0 < len(calls) <= 12      # (a few muls and adds; f has 2 muls and a sin)
    assert not any(getattr(op, "name", op) == "sin" for op in calls)


def test_linearize_of_transforms_and_control_flow():
    # torch's linearize traces with make_fx, which refuses data-dependent control flow;
    # torch.func.jvp is then the reference
    def fns(F, lib):
        w = lib.tensor(W)
        g = lambda x: ((x @ w.t()).tanh() * lib.softmax(x, -1)[..., :2]).sum()  # noqa: E731
        return [F.grad(g), F.vmap(F.grad(g)), F.jacrev(lambda x: (x @ w.t()).tanh()),
                F.vmap(lambda r: (r @ w.t()).sin() * r.sum()),
                lambda x: x.sin() if bool(x.sum() > 0) else x.cos() * 3]
    x, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    for fe, ft in zip(fns(efunc, ember), fns(torch.func, torch)):
        box = [0]
        _, jvp_fn = efunc.linearize(_counted(fe, box), ember.tensor(x))
        for k in (1.0, -2.0):
            _close(jvp_fn(ember.tensor(k * t)),
                   torch.func.jvp(ft, (torch.tensor(x),), (torch.tensor(k * t),))[1])
        assert box[0] == 1


def test_linearize_under_vmap_falls_back_to_jvp_with_the_same_values():
    # (torch's linearize cannot run under vmap; torch.func.jvp is the reference)
    def run(F, lib, lin):
        w = lib.tensor(W)
        f = lambda x: (x @ w.t()).tanh()  # noqa: E731
        return F.vmap(lambda a, t: F.linearize(f, a)[1](t) if lin else F.jvp(f, (a,), (t,))[1])(
            lib.tensor(A), lib.tensor(TANS[0][0]))
    _close(run(efunc, ember, True), run(torch.func, torch, False))


def test_linearize_tangent_dtype_and_errors():
    _, jvp_fn = efunc.linearize(lambda x: x.exp(), ember.tensor(B))
    t32 = TANS[1][1].astype(np.float32)
    _close(jvp_fn(ember.tensor(t32)),
           torch.func.jvp(lambda x: x.exp(), (torch.tensor(B),),
                          (torch.tensor(t32.astype(np.float64)),))[1])
    with pytest.raises(RuntimeError, match="doesn't match the shape"):
        jvp_fn(ember.ones(4))


def test_transforms_of_the_replayed_jvp_fn():
    def run(F, lib):
        w = lib.tensor(W)
        _, jvp_fn = F.linearize(
            lambda x: (lib.softmax(x @ w.t(), -1) * x[:, :2].exp()).tanh(), lib.tensor(A))
        t1, t2 = lib.tensor(TANS[0][0]), lib.tensor(TANS[1][0])
        u = lib.tensor(TANS[2][0]).requires_grad_()
        (jvp_fn(u) ** 2).sum().backward()
        return [F.jvp(jvp_fn, (t1,), (t2,))[1], F.grad(lambda v: jvp_fn(v).sin().sum())(t1),
                F.jacrev(jvp_fn)(t1), u.grad]
    for e, t in zip(run(efunc, ember), run(torch.func, torch)):
        _close(e, t)
