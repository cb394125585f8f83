"""The transforms composed with each other and with vmap, against torch.func on the same
inputs: vmap(grad), grad(grad), jacrev(jacrev), jacfwd(jacrev), vmap(jacrev), grad(vmap),
per-sample gradients w.r.t. unbatched parameters, Hessian-vector products, nested vmaps."""
import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef


def rnd(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a), torch.tensor(a)


def close(e, t, tol=1e-9):
    if isinstance(t, torch.Tensor):
        assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    elif isinstance(t, dict):
        assert list(e) == list(t)
        for k in t:
            close(e[k], t[k], tol)
    else:
        assert len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, tol)


def f(x):
    return (x.sin() * x ** 2).sum()


def g(x):
    return (x.tanh() * x.exp()).sum() + (x ** 3).sum()


@pytest.mark.parametrize("fn", [f, g])
@pytest.mark.parametrize("name", ["grad(grad)", "jacrev(jacrev)", "jacfwd(jacrev)",
                                  "hessian", "jacrev(jacfwd)", "jacfwd(jacfwd)"])
def test_second_derivatives(name, fn):
    xe, xt = rnd(3)

    def build(F):
        return {
            "grad(grad)": lambda h: F.grad(lambda x: F.grad(h)(x).sum()),
            "jacrev(jacrev)": lambda h: F.jacrev(F.jacrev(h)),
            "jacfwd(jacrev)": lambda h: F.jacfwd(F.jacrev(h)),
            "hessian": lambda h: F.hessian(h),
            "jacrev(jacfwd)": lambda h: F.jacrev(F.jacfwd(h)),
            "jacfwd(jacfwd)": lambda h: F.jacfwd(F.jacfwd(h)),
        }[name](fn)
    close(build(ef)(xe), build(tf)(xt))


def test_grad_grad_grad_and_closures():
    xe, xt = rnd(3)
    e = ef.grad(lambda x: ef.grad(lambda y: ef.grad(lambda z: (z ** 4).sum())(y).sum())(x)
                .sum())(xe)
    t = tf.grad(lambda x: tf.grad(lambda y: tf.grad(lambda z: (z ** 4).sum())(y).sum())(x)
                .sum())(xt)
    close(e, t)
    # the inner level differentiates w.r.t. y only; x is a constant to it
    e = ef.grad(lambda x: ef.grad(lambda y: (x * y ** 2).sum())(x).sum())(xe)
    t = tf.grad(lambda x: tf.grad(lambda y: (x * y ** 2).sum())(x).sum())(xt)
    close(e, t)


def test_hvp_by_jvp_of_grad():
    (xe, xt), (ve, vt) = rnd(4), rnd(4, seed=1)
    close(ef.jvp(ef.grad(g), (xe,), (ve,)), tf.jvp(tf.grad(g), (xt,), (vt,)))


def test_vmap_of_grad_and_grad_of_vmap():
    xe, xt = rnd(5, 3)
    close(ef.vmap(ef.grad(f))(xe), tf.vmap(tf.grad(f))(xt))
    close(ef.grad(lambda x: ef.vmap(f)(x).sum())(xe), tf.grad(lambda x: tf.vmap(f)(x).sum())(xt))
    close(ef.vmap(ef.grad_and_value(f))(xe), tf.vmap(tf.grad_and_value(f))(xt))


def test_per_sample_gradients_of_unbatched_parameters():
    (we, wt), (be, bt) = rnd(4, 3), rnd(4, seed=1)
    (xe, xt), (ye, yt) = rnd(6, 3, seed=2), rnd(6, 4, seed=3)

    def loss(lib):
        def fn(params, x, y):
            out = (params["w"] @ x + params["b"]).tanh()
            return ((out - y) ** 2).sum()
        return fn
    pe, pt = {"w": we, "b": be}, {"w": wt, "b": bt}
    ge = ef.vmap(ef.grad(loss(ember)), in_dims=(None, 0, 0))(pe, xe, ye)
    gt = tf.vmap(tf.grad(loss(torch)), in_dims=(None, 0, 0))(pt, xt, yt)
    close(ge, gt)
    assert tuple(ge["w"].shape) == (6, 4, 3)
    # and they sum to the full-batch gradient
    full = ef.grad(lambda p: ef.vmap(loss(ember), in_dims=(None, 0, 0))(p, xe, ye).sum())(pe)
    close(full, {k: v.sum(0) for k, v in gt.items()})


def test_vmap_of_jacrev_jacfwd_and_vjp():
    xe, xt = rnd(4, 3)
    h = lambda x: x.sin() * x.sum()                   # noqa: E731
    close(ef.vmap(ef.jacrev(h))(xe), tf.vmap(tf.jacrev(h))(xt))
    close(ef.vmap(ef.jacfwd(h))(xe), tf.vmap(tf.jacfwd(h))(xt))
    (ce, ct) = rnd(4, 3, seed=5)
    close(ef.vmap(lambda x, c: ef.vjp(h, x)[1](c))(xe, ce),
          tf.vmap(lambda x, c: tf.vjp(h, x)[1](c))(xt, ct))
    close(ef.vmap(lambda x, c: ef.jvp(h, (x,), (c,)))(xe, ce),
          tf.vmap(lambda x, c: tf.jvp(h, (x,), (c,)))(xt, ct))


def test_vjp_fn_under_vmap_and_nested_vmaps():
    xe, xt = rnd(3)
    h = lambda x: (x.exp()[:, None] * x[None, :]).sum(0)    # noqa: E731
    oe, fe = ef.vjp(h, xe)
    ot, ft = tf.vjp(h, xt)
    ce, ct = rnd(5, 3, seed=1)
    close(ef.vmap(fe)(ce), tf.vmap(ft)(ct))
    ye, yt = rnd(2, 4, 3, seed=2)
    close(ef.vmap(ef.vmap(ef.grad(f)))(ye), tf.vmap(tf.vmap(tf.grad(f)))(yt))
    we, wt = rnd(3, seed=3)
    k = lambda w, x: (w * x).sin().sum()                    # noqa: E731
    close(ef.vmap(ef.vmap(ef.grad(k), in_dims=(None, 0)), in_dims=(None, 0))(we, ye),
          tf.vmap(tf.vmap(tf.grad(k), in_dims=(None, 0)), in_dims=(None, 0))(wt, yt))


def test_grad_through_functional_call_under_vmap():
    nn_e, nn_t = ember.nn, torch.nn
    me, mt = nn_e.Linear(3, 2), nn_t.Linear(3, 2)
    with torch.no_grad():
        mt.weight.copy_(torch.tensor(me.weight.detach().numpy()))
        mt.bias.copy_(torch.tensor(me.bias.detach().numpy()))
    xe, xt = rnd(4, 3)
    xe, xt = xe.float(), xt.float()
    pe = {k: v.detach() for k, v in me.named_parameters()}
    pt = {k: v.detach() for k, v in mt.named_parameters()}

    def loss(F, m):
        return lambda p, x: F.functional_call(m, p, (x,)).pow(2).sum()
    close(ef.vmap(ef.grad(loss(ef, me)), in_dims=(None, 0))(pe, xe),
          tf.vmap(tf.grad(loss(tf, mt)), in_dims=(None, 0))(pt, xt), tol=1e-5)


def test_results_come_back_plain_and_vmap_of_hessian():
    xe, xt = rnd(3)
    for r in (ef.grad(f)(xe), ef.hessian(f)(xe), ef.jacfwd(ef.jacrev(f))(xe),
              ef.jacrev(ef.jacrev(f))(xe), ef.jvp(ef.grad(f), (xe,), (xe,))[1]):
        assert not r.requires_grad and r.grad_fn is None
    ye, yt = rnd(4, 3)
    close(ef.vmap(ef.hessian(f))(ye), tf.vmap(tf.hessian(f))(yt))
    close(ef.vmap(ef.jacrev(ef.jacrev(g)))(ye), tf.vmap(tf.jacrev(tf.jacrev(g)))(yt))
    # reverse inside forward inside vmap, on batched values (the forward-AD level works on
    # the physical tensors, below the vmap levels)
    r = ef.vmap(ef.jacfwd(ef.jacrev(f)))(ye)
    close(r, tf.vmap(tf.jacfwd(tf.jacrev(f)))(yt))
    assert not r.requires_grad and r.grad_fn is None


def test_grad_inside_vmap_with_batched_closure():
    (we, wt), (xe, xt) = rnd(3), rnd(5, 3, seed=1)
    close(ef.vmap(lambda x: ef.grad(lambda w: (w * x).sin().sum())(we))(xe),
          tf.vmap(lambda x: tf.grad(lambda w: (w * x).sin().sum())(wt))(xt))
    # jacrev of a closure over batched data, w.r.t. an unbatched input
    close(ef.vmap(lambda x: ef.jacrev(lambda w: (w * x).tanh())(we))(xe),
          tf.vmap(lambda x: tf.jacrev(lambda w: (w * x).tanh())(wt))(xt))


UNARY = ["sin", "tanh", "exp", "cos", "sigmoid"]


@pytest.mark.parametrize("seed", range(6))
def test_random_compositions(seed):
    """Random chains of unary ops, matmuls and sums: every transform and composition agrees
    with torch.func on them."""
    rng = np.random.default_rng(seed)
    ops = [UNARY[i] for i in rng.integers(len(UNARY), size=3)]
    we, wt = rnd(3, 3, seed=seed + 10)

    def make(lib):
        w = we if lib is ember else wt

        def fn(x):
            h = x
            for name in ops:
                h = getattr(h, name)() @ w
            return h
        return fn, lambda x: fn(x).sum()
    (fe, se), (ft, st) = make(ember), make(torch)
    xe, xt = rnd(3, seed=seed)
    close(ef.jacrev(fe)(xe), tf.jacrev(ft)(xt))
    close(ef.jacfwd(fe)(xe), tf.jacfwd(ft)(xt))
    close(ef.hessian(se)(xe), tf.hessian(st)(xt))
    ye, yt = rnd(4, 3, seed=seed + 1)
    close(ef.vmap(ef.grad(se))(ye), tf.vmap(tf.grad(st))(yt))
    close(ef.vmap(ef.jacrev(fe))(ye), tf.vmap(tf.jacrev(ft))(yt))


def test_transforms_under_vmap_with_in_dims_out_dims_and_chunks():
    xe, xt = rnd(3, 5)
    close(ef.vmap(ef.grad(f), in_dims=1, out_dims=1)(xe),
          tf.vmap(tf.grad(f), in_dims=1, out_dims=1)(xt))
    close(ef.vmap(ef.jacrev(lambda x: x.sin()), in_dims=1, chunk_size=2)(xe),
          tf.vmap(tf.jacrev(lambda x: x.sin()), in_dims=1, chunk_size=2)(xt))
    close(ef.vmap(ef.jacfwd(lambda x: x.sin()), in_dims=1)(xe),
          tf.vmap(tf.jacfwd(lambda x: x.sin()), in_dims=1)(xt))
