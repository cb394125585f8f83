"""Forward-over-reverse nesting with vmap (issue 14): jacfwd(jacrev(f)), vmap(hessian(f)),
vmap(jacfwd(jacrev(f))), jacfwd(vmap(jacrev(f))), vmap(jvp(grad(f))) and friends against
torch.func, on functions built from common ops (sin, exp, mul, matmul, sum, tanh, softmax,
logsumexp), also with batched closures and unbatched arguments; and the nesting ember still
refuses (a public dual_level inside vmap with grad inside), pinned as the
NotImplementedError it raises (never a wrong number)."""
import numpy as np
import pytest
import torch

import ember
import ember.autograd.forward_ad as efw
from ember import func as efunc

B, D, H = 4, 3, 2
rng = np.random.default_rng(14)
X = rng.standard_normal((B, D)).astype(np.float64)
Y = rng.standard_normal((B, D)).astype(np.float64)
T = rng.standard_normal((B, D)).astype(np.float64)
C = rng.standard_normal((B, H)).astype(np.float64)
W = rng.standard_normal((H, D)).astype(np.float64)
BIAS = rng.standard_normal(H).astype(np.float64)

SCALAR = ["sin_x", "tanh_sum", "softmax_exp", "matmul_quad", "logsumexp"]
ALL = SCALAR + ["tanh_layer", "exp_mul"]


def _fns(lib):
    w, b = lib.tensor(W), lib.tensor(BIAS)
    return {"sin_x": lambda x: (x.sin() * x).sum(),
            "tanh_sum": lambda x: (x @ w.t() + b).tanh().sum(),
            "softmax_exp": lambda x: (lib.softmax(x @ w.t(), -1) * x.exp()[:H]).sum(),
            "matmul_quad": lambda x: (x.reshape(1, D) @ w.t() @ w @ x.reshape(D, 1)).sum(),
            "logsumexp": lambda x: lib.logsumexp(x * 2, 0) + lib.softmax(x, 0)[0] * x.sum(),
            "tanh_layer": lambda x: (x @ w.t() + b).tanh(),
            "exp_mul": lambda x: (x @ w.t()).sin() * x[:H].exp()}


def _two(lib):
    w = lib.tensor(W)
    return lambda a, c: ((a * c).sin() @ w.t()).tanh().sum() + (a.exp() * c).sum()


def _close(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert not e.requires_grad and e.grad_fn is None
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def _both(build, name):
    """build(F, lib, f) run with ember and with torch on function `name`."""
    return (build(efunc, ember, _fns(ember)[name]),
            build(torch.func, torch, _fns(torch)[name]))


@pytest.mark.parametrize("name", ["sin_x", "tanh_layer"])
def test_jacfwd_jacrev_matches_torch(name):
    _close(*_both(lambda F, L, f: F.jacfwd(F.jacrev(f))(L.tensor(X[0])), name))


@pytest.mark.parametrize("name", SCALAR)
def test_vmap_hessian_matches_torch(name):
    _close(*_both(lambda F, L, f: F.vmap(F.hessian(f))(L.tensor(X)), name))


@pytest.mark.parametrize("name", ALL)
def test_vmap_jacfwd_jacrev_matches_torch(name):
    _close(*_both(lambda F, L, f: F.vmap(F.jacfwd(F.jacrev(f)))(L.tensor(X)), name))


@pytest.mark.parametrize("name", ["sin_x", "tanh_layer"])
def test_vmap_jacrev_jacrev_matches_torch_vmap_jacfwd_jacrev(name):
    _close(*_both(lambda F, L, f: F.vmap(F.jacrev(F.jacrev(f)))(L.tensor(X)), name))


@pytest.mark.parametrize("name", ALL)
def test_jacfwd_of_vmap_jacrev_matches_torch(name):
    # the forward-AD level sits on top of jacfwd's own vmap, the inner vmap above it
    _close(*_both(lambda F, L, f: F.jacfwd(F.vmap(F.jacrev(f)))(L.tensor(X)), name))


@pytest.mark.parametrize("name", ALL)
def test_jacfwd_of_vmap_matches_torch(name):
    _close(*_both(lambda F, L, f: F.jacfwd(F.vmap(f))(L.tensor(X)), name))


@pytest.mark.parametrize("name", ALL)
def test_vmap_jvp_and_vmap_jacfwd_match_torch(name):
    _close(*_both(lambda F, L, f: F.vmap(lambda x, t: F.jvp(f, (x,), (t,))[1])(
        L.tensor(X), L.tensor(T)), name))
    _close(*_both(lambda F, L, f: F.vmap(F.jacfwd(f))(L.tensor(X)), name))


@pytest.mark.parametrize("name", SCALAR)
def test_vmap_jvp_of_grad_matches_torch(name):
    # per-sample Hessian-vector products; and the batched HVP at one point (tangents only
    # batched: the dual level stays on top of the vmap)
    _close(*_both(lambda F, L, f: F.vmap(lambda x, t: F.jvp(F.grad(f), (x,), (t,))[1])(
        L.tensor(X), L.tensor(T)), name))
    _close(*_both(lambda F, L, f: F.vmap(lambda t: F.jvp(F.grad(f), (L.tensor(X[0]),),
                                                         (t,))[1])(L.tensor(T)), name))


@pytest.mark.parametrize("name", ["sin_x", "softmax_exp"])
def test_vmap_jvp_of_vjp_and_reverse_over_forward(name):
    _close(*_both(lambda F, L, f: F.vmap(lambda x, t: F.jvp(
        lambda y: F.vjp(f, y)[1](L.ones_like(f(y)))[0], (x,), (t,))[1])(
        L.tensor(X), L.tensor(T)), name))
    _close(*_both(lambda F, L, f: F.jacrev(lambda x: F.vmap(F.jacfwd(f))(x).sum(0))(
        L.tensor(X)), name))


@pytest.mark.parametrize("name", ["sin_x", "tanh_sum", "matmul_quad"])
def test_deeper_nestings_match_torch(name):
    x3 = X.reshape(2, 2, D)
    _close(*_both(lambda F, L, f: F.vmap(F.vmap(F.jacfwd(F.jacrev(f))))(L.tensor(x3)), name))
    _close(*_both(lambda F, L, f: F.vmap(F.jacfwd(F.vmap(F.jacrev(f))))(L.tensor(x3)), name))
    _close(*_both(lambda F, L, f: F.vmap(F.jacfwd(F.jacfwd(f)))(L.tensor(X)), name))
    _close(*_both(lambda F, L, f: F.vmap(F.hessian(f), in_dims=1)(L.tensor(X.T.copy())),
                  name))
    _close(*_both(lambda F, L, f: F.vmap(F.hessian(f), chunk_size=3)(L.tensor(X)), name))
    _close(*_both(lambda F, L, f: F.jvp(lambda a: F.vmap(F.grad(f))(a), (L.tensor(X),),
                                        (L.tensor(T),))[1], name))


def test_vmap_hessian_with_unbatched_and_closed_over_arguments():
    def run(F, L):
        h = _two(L)
        x, y, z = L.tensor(X), L.tensor(Y), L.tensor(X[1])
        return [F.vmap(F.hessian(h, argnums=(0, 1)))(x, y)[0][1],
                F.vmap(F.hessian(h), in_dims=(0, None))(x, z),
                F.vmap(F.hessian(h), in_dims=(None, 0))(z, y),        # params-style
                F.vmap(lambda c: F.hessian(lambda a: h(a, c))(z))(y),  # batched closure
                F.vmap(lambda c: F.jacfwd(lambda a: (a * c).sin())(z))(y)]
    for e, t in zip(run(efunc, ember), run(torch.func, torch)):
        _close(e, t)


def test_vmap_jacfwd_has_aux_matches_torch():
    def run(F, L):
        return F.vmap(F.jacfwd(lambda a: (a.sin() * 2, a.cos().sum()), has_aux=True))(
            L.tensor(X))
    (ej, ea), (tj, ta) = run(efunc, ember), run(torch.func, torch)
    _close(ej, tj)
    _close(ea, ta)


def test_plain_jacfwd_keeps_control_flow_on_the_primal():
    # only the tangents are batched in jacfwd's vmap: the primal stays a plain tensor
    def f(x):
        return x.sin() if bool(x.sum() > 0) else x.cos()
    for row in X:
        _close(efunc.jacfwd(f)(ember.tensor(row)), torch.func.jacfwd(f)(torch.tensor(row)))


def test_vmap_of_jvp_over_tangents_with_batched_closures():
    # per-sample Hessian-vector products w.r.t. shared (unbatched) weights: the vmap batches
    # the tangents and the data the loss closes over, not the primal
    def run(F, lib):
        w0 = lib.tensor(W)

        def loss(w, x):
            return ((x @ w.t()).tanh() * lib.softmax(x @ w.t(), -1)).sum()
        vs = lib.tensor(np.stack([W * k for k in range(1, B + 1)]))
        return [F.vmap(lambda x, v: F.jvp(F.grad(lambda w: loss(w, x)), (w0,), (v,))[1])(
                    lib.tensor(X), vs),
                F.vmap(lambda t, c: F.jvp(lambda a: F.grad(lambda u: (u.sin() * c).sum())(a),
                                          (lib.tensor(X[0]),), (t,))[1])(
                    lib.tensor(T), lib.tensor(Y))]
    for e, t in zip(run(efunc, ember), run(torch.func, torch)):
        _close(e, t)


def test_jvp_of_a_vjp_fn_made_outside_vmap():
    def run(F, lib):
        w = lib.tensor(W)
        _, vjp_fn = F.vjp(lambda x: (x @ w.t()).sin(), lib.tensor(X[0]))
        c = lib.tensor(C)
        return [F.vmap(F.jacfwd(lambda u: vjp_fn(u)[0]))(c),
                F.vmap(lambda u, t: F.jvp(lambda u: vjp_fn(u)[0], (u,), (t,))[1])(c, c)]
    for e, t in zip(run(efunc, ember), run(torch.func, torch)):
        _close(e, t)


def test_still_refused_public_dual_level_inside_vmap_with_grad():
    def per_sample(x, t):
        with efw.dual_level():
            g = efunc.grad(lambda u: (u.sin() * u).sum())(efw.make_dual(x, t))
            return efw.unpack_dual(g).tangent
    # the public level sits on top of the vmap (as torch's API does): its tangents live on
    # the batched wrappers, so reverse mode inside refuses rather than return a wrong number
    with pytest.raises(NotImplementedError, match="forward_ad.dual_level"):
        efunc.vmap(per_sample)(ember.tensor(X), ember.tensor(T))
