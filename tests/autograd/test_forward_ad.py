"""ember.autograd.forward_ad against torch.autograd.forward_ad on the same inputs: the API and
its errors, tangents of many ops (broadcasting, views, in-place), nested levels (jvp of jvp),
forward-over-reverse (jvp of a gradient is torch's Hessian-vector product),
reverse-over-forward, and the NotImplementedError of an op forward AD cannot handle.
"""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import ember
import ember.autograd.forward_ad as efw
import ember.nn.functional as EF
import torch.nn.functional as TF


def pair(*shape, seed=0, lo=-2.0, hi=2.0):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def close(e, t, tol=1e-7):
    assert e is not None and t is not None, (e, t)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def both_raise(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    return str(te.value), str(ee.value)


# ---- the API ----
def test_make_dual_outside_a_level():
    (xe, xt), (te, tt) = pair(3), pair(3, seed=1)
    msgs = both_raise(lambda: efw.make_dual(xe, te), lambda: tfw.make_dual(xt, tt))
    assert "no level exists" in msgs[1]


@pytest.mark.parametrize("case", ["int_primal", "int_tangent", "shape", "twice", "nested",
                                  "level"])
def test_make_dual_errors(case):
    (xe, xt), (te, tt) = pair(3), pair(3, seed=1)
    with efw.dual_level(), tfw.dual_level():
        if case == "int_primal":
            msgs = both_raise(lambda: efw.make_dual(ember.arange(3), ember.arange(3)),
                              lambda: tfw.make_dual(torch.arange(3), torch.arange(3)))
            assert "Expected primal to be floating point" in msgs[1]
        elif case == "int_tangent":
            both_raise(lambda: efw.make_dual(xe, ember.arange(3)),
                       lambda: tfw.make_dual(xt, torch.arange(3)))
        elif case == "shape":
            msgs = both_raise(lambda: efw.make_dual(xe, ember.ones(4, dtype=ember.float64)),
                              lambda: tfw.make_dual(xt, torch.ones(4, dtype=torch.float64)))
            assert "is of size [3] while the given forward gradient is of size [4]" in msgs[1]
        elif case == "twice":
            de, dt = efw.make_dual(xe, te), tfw.make_dual(xt, tt)
            msgs = both_raise(lambda: efw.make_dual(de, te), lambda: tfw.make_dual(dt, tt))
            assert "already has a forward gradient at the same level 0" in msgs[1]
        elif case == "nested":
            msgs = both_raise(efw.enter_dual_level, tfw.enter_dual_level)
            assert "Nested forward mode AD is not supported" in msgs[1]
        else:
            both_raise(lambda: efw.make_dual(xe, te, level=5),
                       lambda: tfw.make_dual(xt, tt, level=5))


def test_exit_without_a_level():
    both_raise(efw.exit_dual_level, tfw.exit_dual_level)


def test_dual_and_unpack():
    (xe, _), (te, _) = pair(3), pair(3, seed=1)
    with efw.dual_level() as lvl:
        assert lvl == 0
        d = efw.make_dual(xe, te)
        assert d is not xe and efw.unpack_dual(xe).tangent is None   # xe itself stays plain
        u = efw.unpack_dual(d)
        assert isinstance(u, efw.UnpackedDualTensor) and u.tangent is te and u[1] is te
        assert efw.unpack_dual(u.primal).tangent is None
        np.testing.assert_array_equal(u.primal.numpy(), xe.numpy())
    assert efw.unpack_dual(d).tangent is None           # tangents end with their level
    lvl = efw.enter_dual_level()
    assert efw.unpack_dual(d).tangent is None
    efw.exit_dual_level(level=lvl)
    assert efw.unpack_dual(d) == (d, None)


def test_float32_tangent_on_float64_primal_is_kept():
    (xe, xt) = pair(3)
    with efw.dual_level(), tfw.dual_level():
        te = efw.unpack_dual(efw.make_dual(xe, ember.ones(3))).tangent
        tt = tfw.unpack_dual(tfw.make_dual(xt, torch.ones(3))).tangent
        assert str(te.dtype)[-7:] == str(tt.dtype)[-7:] == "float32"


# ---- tangents of ops, against torch ----
UNARY = {
    "sin": lambda L, x: x.sin(), "exp_tanh": lambda L, x: x.tanh().exp(),
    "relu": lambda L, x: L.relu(x), "sigmoid": lambda L, x: L.sigmoid(x),
    "pow": lambda L, x: x.abs() ** 2.5, "sqrt_log": lambda L, x: (x * x + 1).sqrt().log(),
    "clamp": lambda L, x: x.clamp(-0.5, 0.7), "where": lambda L, x: L.where(x > 0, x, -x * 3),
    "div": lambda L, x: 1 / (x * x + 1), "sum": lambda L, x: x.sum(1),
    "mean": lambda L, x: x.mean(), "softmax": lambda L, x: L.softmax(x, 1),
    "log_softmax": lambda L, x: L.log_softmax(x, 0), "cumsum": lambda L, x: x.cumsum(1),
    "views": lambda L, x: x.t().reshape(-1)[1:5].unsqueeze(0).expand(2, 4),
    "getitem": lambda L, x: x[[0, 2], 1:], "cat": lambda L, x: L.cat([x, x * 2], 1),
    "stack": lambda L, x: L.stack([x, x.exp()]), "flip": lambda L, x: x.flip(0),
    "amax": lambda L, x: x.amax(1), "prod": lambda L, x: x.prod(1),
    "logsumexp": lambda L, x: L.logsumexp(x, 1), "var": lambda L, x: x.var(0),
    "norm": lambda L, x: x.norm(), "sort": lambda L, x: x.sort(1)[0],
    "max_dim": lambda L, x: x.max(1)[0], "mm": lambda L, x: x @ x.t(),
    "gelu": lambda L, x: L.nn.functional.gelu(x),
    "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, (4,)),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 3, 1])),
    "to_float32": lambda L, x: x.float() * 2, "detach": lambda L, x: x.detach() * x,
    "chunk": lambda L, x: L.cat(x.chunk(2, 1)[::-1], 1),
    "einsum": lambda L, x: L.einsum("ij,kj->ik", x, x.exp()),
    "linear": lambda L, x: L.nn.functional.linear(x, x[:2] * 3, x[0, :2]),
    "addmm": lambda L, x: L.addmm(x[:, 0], x, x.t()),
    "masked_fill": lambda L, x: x.masked_fill(x > 0.5, 2.0),
    "conv1d": lambda L, x: L.nn.functional.conv1d(x.unsqueeze(0),
                                                 x[:2, :2].unsqueeze(1).expand(2, 3, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_tangent_matches_torch(name):
    f = UNARY[name]
    (xe, xt), (te, tt) = pair(3, 4), pair(3, 4, seed=1)
    with efw.dual_level(), tfw.dual_level():
        ye = f(ember, efw.make_dual(xe, te))
        yt = f(torch, tfw.make_dual(xt, tt))
        close(efw.unpack_dual(ye).primal, tfw.unpack_dual(yt).primal)
        close(efw.unpack_dual(ye).tangent, tfw.unpack_dual(yt).tangent)


BINARY = {
    "add": lambda L, x, y: x + y, "mul": lambda L, x, y: x * y, "sub": lambda L, x, y: x - y,
    "div": lambda L, x, y: x / (y * y + 1), "atan2": lambda L, x, y: L.atan2(x, y),
    "maximum": lambda L, x, y: L.maximum(x, y), "pow": lambda L, x, y: x.abs() ** y,
    "lerp": lambda L, x, y: L.lerp(x, y.expand(3, 4), 0.3), "matmul": lambda L, x, y: x @ y.t(),
    "addcmul": lambda L, x, y: L.addcmul(x, x, y, value=0.5),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("which", ["both", "x", "y"])
def test_broadcasting_binary(name, which):
    """x (3, 4) with y (4,) or (1, 4): the tangents broadcast like the values."""
    f = BINARY[name]
    (xe, xt), (ye, yt) = pair(3, 4), pair(1, 4, seed=2)
    (txe, txt), (tye, tyt) = pair(3, 4, seed=3), pair(1, 4, seed=4)
    with efw.dual_level(), tfw.dual_level():
        if which != "y":
            xe, xt = efw.make_dual(xe, txe), tfw.make_dual(xt, txt)
        if which != "x":
            ye, yt = efw.make_dual(ye, tye), tfw.make_dual(yt, tyt)
        close(efw.unpack_dual(f(ember, xe, ye)).tangent, tfw.unpack_dual(f(torch, xt, yt)).tangent)


def test_non_floating_results_have_no_tangent():
    (xe, _), (te, _) = pair(3, 4), pair(3, 4, seed=1)
    with efw.dual_level():
        d = efw.make_dual(xe, te)
        for r in (d > 0, d.argmax(1), d.sort(1)[1], d.long(), ember.zeros_like(d)):
            assert efw.unpack_dual(r).tangent is None


# ---- views and in-place ----
INPLACE = {
    "mul_": lambda L, b, d: b.mul_(d),
    "view_add_": lambda L, b, d: b[1].add_(d[0]),
    "view_mul_": lambda L, b, d: b[:, 1:].mul_(d[:, :3]),
    "exp_": lambda L, b, d: b.add_(d).exp_(),
    "copy_": lambda L, b, d: b[0].copy_(d[1]),
    "fill_": lambda L, b, d: b.add_(d)[1:].fill_(3.0),
    "zero_": lambda L, b, d: b.add_(d)[:, 0].zero_(),
    "setitem": lambda L, b, d: b.__setitem__((slice(None), 2), d[:, 0] * 2),
    "setitem_advanced": lambda L, b, d: b.__setitem__(L.tensor([0, 2]), d[:2]),
    "tril_": lambda L, b, d: b.add_(d).tril_(),
    "index_add_": lambda L, b, d: b.index_add_(0, L.tensor([0, 0]), d[1:]),
    "t_": lambda L, b, d: b.add_(d)[:, :3].t_().mul_(d[:, :3].t()),
    "clamp_": lambda L, b, d: b.add_(d).clamp_(min=0.1),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_updates_tangents_like_torch(name):
    """The base is a plain tensor written with values of dual `d`; its tangent (and views')
    follow, as torch's do."""
    f = INPLACE[name]
    (be, bt), (xe, xt), (te, tt) = pair(3, 4, seed=5), pair(3, 4), pair(3, 4, seed=1)
    with efw.dual_level(), tfw.dual_level():
        de, dt = efw.make_dual(xe, te), tfw.make_dual(xt, tt)
        ve = be[1:]
        vt = bt[1:]
        f(ember, be, de)
        f(torch, bt, dt)
        close(be, bt)
        close(efw.unpack_dual(be).tangent, tfw.unpack_dual(bt).tangent)
        close(efw.unpack_dual(ve).tangent if efw.unpack_dual(ve).tangent is not None
              else ember.zeros(2, 4, dtype=ember.float64),
              tfw.unpack_dual(vt).tangent if tfw.unpack_dual(vt).tangent is not None
              else torch.zeros(2, 4, dtype=torch.float64))


def test_results_own_their_tangents():
    """An identity formula (add's) or a broadcast gives the result a tangent of its own: an
    in-place op on the result leaves the input's tangent alone."""
    (xe, xt), (te, tt) = pair(3), pair(3, seed=1)
    with efw.dual_level(), tfw.dual_level():
        de, dt = efw.make_dual(xe, te), tfw.make_dual(xt, tt)
        ye, yt = de + 0, dt + 0
        ze = ember.zeros(2, 3, dtype=ember.float64) + de
        zt = torch.zeros(2, 3, dtype=torch.float64) + dt
        for a, b in ((ye, yt), (ze, zt)):
            a.mul_(3)
            b.mul_(3)
            close(efw.unpack_dual(a).tangent, tfw.unpack_dual(b).tangent)
        close(efw.unpack_dual(de).tangent, tfw.unpack_dual(dt).tangent)


def test_view_of_dual_has_a_view_tangent():
    (xe, xt), (te, tt) = pair(3, 4), pair(3, 4, seed=1)
    with efw.dual_level(), tfw.dual_level():
        de, dt = efw.make_dual(xe, te), tfw.make_dual(xt, tt)
        ve, vt = de[1], dt[1]
        de.mul_(2)        # the base's tangent changes in place: the view's follows
        dt.mul_(2)
        close(efw.unpack_dual(ve).tangent, tfw.unpack_dual(vt).tangent)


# ---- nesting and composition with reverse mode ----
SECOND = {
    "mix": lambda L, x: (x.sin() * x.exp()).sum() + (x @ x).tanh(),
    "cummax": lambda L, x: (L.cummax(x.sin() * x, 0)[0] ** 2).sum(),     # double-vjp fallback
    "sort": lambda L, x: (x.sort()[0] * x.exp()).pow(2).sum(),            # fallback
    "prod": lambda L, x: (x * x.sin()).prod(),
    "norm_amax": lambda L, x: x.exp().norm() * (x * x).amax(),
    "softmax": lambda L, x: (L.softmax(x * 2, 0) * x).sum(),
    "gelu": lambda L, x: L.nn.functional.gelu(x * 3).pow(2).sum(),
    "layer_norm": lambda L, x: (L.nn.functional.layer_norm(x.exp(), (4,)) ** 3).sum(),
    "getitem": lambda L, x: (x[[0, 2, 2]] ** 3).sum() * x[1:].sum(),
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_jvp_of_jvp_second_derivative(name):
    """Two nested levels (the private entry point ember.func builds on): u' H v, against the
    Hessian torch computes by reverse mode (torch.func's jvp of jvp of layer_norm is off)."""
    f = SECOND[name]
    (xe, xt), (ue, ut), (ve, vt) = pair(4), pair(4, seed=1), pair(4, seed=2)
    hess = torch.autograd.functional.hessian(lambda x: f(torch, x), xt)
    with efw._nested_dual_level() as outer:
        x = efw.make_dual(xe, ve, level=outer)
        with efw._nested_dual_level() as inner:
            assert inner == outer + 1
            y = f(ember, efw.make_dual(x, ue, level=inner))
            inner_t = efw.unpack_dual(y, level=inner).tangent
        got = efw.unpack_dual(inner_t, level=outer).tangent
    close(got, ut @ hess @ vt, 1e-6)


@pytest.mark.parametrize("name", sorted(SECOND))
@pytest.mark.parametrize("create_graph", [True, False])
def test_forward_over_reverse_is_hvp(name, create_graph):
    """jvp of a gradient (the backward formulas are ember ops): torch's hvp. As in torch,
    the gradient has its tangent with or without create_graph."""
    f = SECOND[name]
    (xe, xt), (ve, vt) = pair(4), pair(4, seed=1)
    expected = torch.autograd.functional.hvp(lambda x: f(torch, x), xt, vt)[1]
    with efw.dual_level():
        x = efw.make_dual(xe.requires_grad_(), ve)
        (g,) = ember.autograd.grad(f(ember, x), x, create_graph=create_graph)
        got = efw.unpack_dual(g).tangent
    close(got, expected, 1e-6)


def test_forward_over_reverse_mlp():
    """Hessian-vector product through linear, tanh, log_softmax and nll_loss."""
    (we, wt), (ve, vt), (xe, xt) = pair(5, 3), pair(5, 3, seed=1), pair(4, 3, seed=2)

    def loss(L, w, x):
        return L.nn.functional.cross_entropy(L.nn.functional.linear(x, w).tanh(),
                                             L.tensor([0, 1, 4, 2]))
    expected = torch.autograd.functional.hvp(lambda w: loss(torch, w, xt), wt, vt)[1]
    with efw.dual_level():
        w = efw.make_dual(we.requires_grad_(), ve)
        (g,) = ember.autograd.grad(loss(ember, w, xe), w, create_graph=True)
        got = efw.unpack_dual(g).tangent
    close(got, expected)


def test_reverse_over_forward():
    """The tangent math is recorded by autograd: grad of <tangent, u> w.r.t. the primal."""
    (xe, xt), (te, tt) = pair(4), pair(4, seed=1)
    xe.requires_grad_()
    xt.requires_grad_()
    with efw.dual_level(), tfw.dual_level():
        ye = efw.unpack_dual(SECOND["mix"](ember, efw.make_dual(xe, te))).tangent
        yt = tfw.unpack_dual(SECOND["mix"](torch, tfw.make_dual(xt, tt))).tangent
        (ge,) = ember.autograd.grad(ye, xe)
        (gt,) = torch.autograd.grad(yt, xt)
    close(ge, gt)


def test_fallback_op_is_exact():
    """An op without a direct rule (cummax, via the double-vjp trick) still matches torch
    (nested: test_jvp_of_jvp_second_derivative)."""
    (xe, xt), (te, tt) = pair(3, 4), pair(3, 4, seed=1)
    with efw.dual_level(), tfw.dual_level():
        ye = ember.cummax(efw.make_dual(xe, te), 1)[0]
        yt = torch.cummax(tfw.make_dual(xt, tt), 1)[0]
        close(efw.unpack_dual(ye).tangent, tfw.unpack_dual(yt).tangent)


def test_op_without_a_derivative_raises():
    (xe, _), (te, _) = pair(6), pair(6, seed=1)
    with efw.dual_level():
        d = efw.make_dual(xe, te)
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with histc"):
            ember.histc(d, bins=3)
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
            ember.sin(d, out=ember.empty(6, dtype=ember.float64))


def test_no_level_no_cost_path():
    """Outside a level the op path is untouched: no mode is on the stack."""
    from ember.autograd.grad_mode import state
    assert state.modes == ()
    with efw.dual_level():
        assert len(state.modes) == 1
    assert state.modes == ()
