"""ember.func's grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd and hessian against
torch.func: values, shapes, pytree structure of results, and torch's errors."""
import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef


def T(a, dtype=np.float64):
    """The same data as an ember tensor and a torch tensor."""
    a = np.asarray(a, dtype=dtype)
    return ember.tensor(a), torch.tensor(a)


def rnd(*shape, seed=0):
    return T(np.random.default_rng(seed).standard_normal(shape))


def same(e, t, tol=1e-10):
    """Recursively equal pytrees of results (ember vs torch)."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    elif isinstance(t, dict):
        assert isinstance(e, dict) and list(e) == list(t)
        for k in t:
            same(e[k], t[k], tol)
    elif isinstance(t, (tuple, list)):
        assert type(e) is type(t) and len(e) == len(t), (type(e), type(t))
        for a, b in zip(e, t):
            same(a, b, tol)
    else:
        assert e == t


def both(fn_of_lib, *args):
    """Run `fn_of_lib(lib_module, func_module)` with ember and with torch."""
    return fn_of_lib(ember, ef), fn_of_lib(torch, tf)


def raises_like(fn_of_lib):
    """Both libraries raise the same exception type; returns the two messages."""
    msgs = []
    for lib, fmod in ((torch, tf), (ember, ef)):
        with pytest.raises(Exception) as info:
            fn_of_lib(lib, fmod)
        msgs.append(info)
    assert msgs[1].type is msgs[0].type, (msgs[0].value, msgs[1].value)
    return str(msgs[1].value), str(msgs[0].value)


# ---- grad / grad_and_value ----

def f_scalar(x):
    return (x.sin() * x).sum()


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(argnums):
    (xe, xt), (ye, yt) = rnd(3), rnd(3, seed=1)
    e, t = both(lambda lib, F: F.grad(lambda x, y: (x.exp() * y.cos()).sum(), argnums)(
        *((xe, ye) if lib is ember else (xt, yt))))
    same(e, t)


def test_grad_pytree_input_and_kwargs():
    (xe, xt), (ye, yt) = rnd(2, 3), rnd(3, seed=1)

    def f(lib):
        def loss(d, scale=1.0):
            return ((d["a"] @ d["b"][0]).tanh().sum() * scale)
        x, y = (xe, ye) if lib is ember else (xt, yt)
        return loss, {"a": x, "b": [y]}
    (le, de), (lt, dt) = f(ember), f(torch)
    same(ef.grad(le)(de, scale=3.0), tf.grad(lt)(dt, scale=3.0))


def test_grad_and_value_with_aux():
    xe, xt = rnd(4)
    e = ef.grad_and_value(lambda x: (f_scalar(x), {"y": x * 2, "n": [x]}), has_aux=True)(xe)
    t = tf.grad_and_value(lambda x: (f_scalar(x), {"y": x * 2, "n": [x]}), has_aux=True)(xt)
    same(e, t)
    g, (v, aux) = e
    assert not v.requires_grad and not aux["y"].requires_grad     # unwrapped, as torch's
    e2 = ef.grad(lambda x: (f_scalar(x), x.cos()), has_aux=True)(xe)
    t2 = tf.grad(lambda x: (f_scalar(x), x.cos()), has_aux=True)(xt)
    same(e2, t2)


def test_grad_of_unrelated_output_is_zero():
    xe, xt = rnd(3)
    same(ef.grad(lambda x: ember.ones(()))(xe), tf.grad(lambda x: torch.ones(()))(xt))


def test_grad_keeps_outer_graph():
    # an input that requires grad (or a closure tensor that does) stays differentiable
    xe, xt = rnd(3)
    xe.requires_grad_()
    xt.requires_grad_()
    ge = ef.grad(lambda x: (x ** 3).sum())(xe)
    gt = tf.grad(lambda x: (x ** 3).sum())(xt)
    assert ge.requires_grad and gt.requires_grad
    ge.sum().backward()
    gt.sum().backward()
    same(xe.grad, xt.grad)
    we, wt = rnd(3, seed=2)
    we.requires_grad_()
    wt.requires_grad_()
    (ze, zt) = rnd(3, seed=3)
    ef.grad(lambda z: (we * z ** 2).sum())(ze).sum().backward()
    tf.grad(lambda z: (wt * z ** 2).sum())(zt).sum().backward()
    same(we.grad, wt.grad)


def test_grad_ignores_outer_no_grad():
    xe, xt = rnd(3)
    with ember.no_grad():
        e = ef.grad(f_scalar)(xe)
    with torch.no_grad():
        t = tf.grad(f_scalar)(xt)
    same(e, t)


@pytest.mark.parametrize("case", [
    lambda lib, F: F.grad(lambda x: x * 2)(lib.ones(3)),                     # not scalar
    lambda lib, F: F.grad(lambda x: x.sum(), argnums=1)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum(), argnums=-2)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x, y: x.sum(), argnums=(0, 0))(lib.ones(3), lib.ones(3)),
    lambda lib, F: F.grad(lambda x, y: x.sum(), argnums=(0, -2))(lib.ones(3), lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum(), argnums=1.0)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum(), argnums=[0])(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum(), argnums=(0, 1.0))(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum(), argnums=())(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum(), has_aux=True)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: (x.sum(),), has_aux=True)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: [x.sum(), 1], has_aux=True)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: (x.sum(), 1), has_aux=True)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: 3.0)(lib.ones(3)),
    lambda lib, F: F.grad(lambda x: x.sum())(3.0),
    lambda lib, F: F.grad(lambda x: x.sum())(lib.arange(3)),
    lambda lib, F: F.grad(lambda x: x.sum())(),
])
def test_grad_errors(case):
    raises_like(case)


def test_grad_error_messages():
    e, t = raises_like(lambda lib, F: F.grad(lambda x: x * 2)(lib.ones(3)))
    assert "Expected f(*args) to return a scalar Tensor, got tensor with 1 dims" in e
    e, t = raises_like(lambda lib, F: F.grad(lambda x: x.sum(), argnums=1)(lib.ones(3)))
    assert e == t


# ---- vjp ----

def test_vjp_values_structure_and_reuse():
    (xe, xt), (ye, yt) = rnd(3), rnd(3, seed=1)
    oe, fe = ef.vjp(lambda x, y: {"p": x * y, "q": (x.sin(),)}, xe, ye)
    ot, ft = tf.vjp(lambda x, y: {"p": x * y, "q": (x.sin(),)}, xt, yt)
    same(oe, ot)
    assert not oe["p"].requires_grad
    (ce, ct), (de, dt) = rnd(3, seed=4), rnd(3, seed=5)
    for _ in range(2):                 # the graph is kept: vjp_fn may be called again
        same(fe({"p": ce, "q": (de,)}), ft({"p": ct, "q": (dt,)}))


def test_vjp_has_aux_and_cotangent_dtype():
    xe, xt = rnd(3)
    oe, fe, ae = ef.vjp(lambda x: (x * 2, x.cos()), xe, has_aux=True)
    ot, ft, at = tf.vjp(lambda x: (x * 2, x.cos()), xt, has_aux=True)
    same((oe, ae), (ot, at))
    same(fe(ember.ones(3, dtype=ember.float32)), ft(torch.ones(3, dtype=torch.float32)))


@pytest.mark.parametrize("case", [
    lambda lib, F: F.vjp(lambda x: x * 2, lib.ones(3))[1](lib.ones(4)),
    lambda lib, F: F.vjp(lambda x: (x * 2, x), lib.ones(3))[1]([lib.ones(3), lib.ones(3)]),
    lambda lib, F: F.vjp(lambda x: (x * 2, x), lib.ones(3))[1](lib.ones(3)),
    lambda lib, F: F.vjp(lambda x: x * 2, lib.ones(3), has_aux=True),
    lambda lib, F: F.vjp(lambda x: 3, lib.ones(3)),
    lambda lib, F: F.vjp(lambda x: x * 2, 3.0),
])
def test_vjp_errors(case):
    raises_like(case)


# ---- jvp / linearize ----

def test_jvp_values_and_aux():
    (xe, xt), (ye, yt) = rnd(3), rnd(3, seed=1)
    (ue, ut), (ve, vt) = rnd(3, seed=2), rnd(3, seed=3)
    f = lambda x, y: ((x * y).sin(), x.exp().sum())      # noqa: E731
    same(ef.jvp(f, (xe, ye), (ue, ve)), tf.jvp(f, (xt, yt), (ut, vt)))
    g = lambda x: (x.tanh(), {"aux": x * 3})             # noqa: E731
    same(ef.jvp(g, (xe,), (ue,), has_aux=True), tf.jvp(g, (xt,), (ut,), has_aux=True))
    # an output that does not depend on the input gets a zero tangent
    same(ef.jvp(lambda x: ember.ones(2), (xe,), (ue,)),
         tf.jvp(lambda x: torch.ones(2), (xt,), (ut,)))


@pytest.mark.parametrize("case", [
    lambda lib, F: F.jvp(lambda x: x * 2, lib.ones(3), lib.ones(3)),
    lambda lib, F: F.jvp(lambda x: x * 2, [lib.ones(3)], [lib.ones(3)]),
    lambda lib, F: F.jvp(lambda x: x * 2, (lib.ones(3),), (lib.ones(3), lib.ones(3))),
    lambda lib, F: F.jvp(lambda x: x * 2, (lib.ones(3),), [lib.ones(3)]),
    lambda lib, F: F.jvp(lambda x: x * 2, (lib.ones(3),), (lib.ones(4),)),
    lambda lib, F: F.jvp(lambda x: x * 2, (lib.ones(3),), (3.0,)),
    lambda lib, F: F.jvp(lambda x: x * 2, (3.0,), (lib.ones(3),)),
    lambda lib, F: F.jvp(lambda x: x * 2, (), ()),
    lambda lib, F: F.jvp(lambda x: 2, (lib.ones(3),), (lib.ones(3),)),
    lambda lib, F: F.jvp(lambda x: x, (lib.ones(3),), (lib.ones(3),), has_aux=True),
])
def test_jvp_errors(case):
    raises_like(case)


def test_linearize():
    (xe, xt), (ue, ut) = rnd(3), rnd(3, seed=1)
    oe, fe = ef.linearize(lambda x: x.sin() * x, xe)
    ot, ft = tf.linearize(lambda x: x.sin() * x, xt)
    same(oe, ot)
    same(fe(ue), ft(ut))
    raises_like(lambda lib, F: F.linearize(lambda x: x.sin(), lib.ones(3))[1](lib.ones(4)))
    raises_like(lambda lib, F: F.linearize(lambda x: x.sin(), lib.ones(3))[1](
        lib.ones(3), lib.ones(3)))


# ---- jacrev / jacfwd / hessian ----

JAC_FUNCS = {
    "sin": lambda x: x.sin(),
    "matrix": lambda x: (x @ x.T).tanh(),
    "scalar": lambda x: (x ** 3).sum(),
}


@pytest.mark.parametrize("name", list(JAC_FUNCS))
@pytest.mark.parametrize("kind", ["jacrev", "jacfwd"])
def test_jacobians_match_torch(name, kind):
    xe, xt = rnd(2, 3)
    f = JAC_FUNCS[name]
    same(getattr(ef, kind)(f)(xe), getattr(tf, kind)(f)(xt))


@pytest.mark.parametrize("kind", ["jacrev", "jacfwd"])
def test_jacobians_pytrees_argnums_aux(kind):
    (xe, xt), (ye, yt) = rnd(3), rnd(3, seed=1)

    def f(x, y):
        return {"a": x * y, "b": (x.sum() * y[0],)}
    same(getattr(ef, kind)(f, argnums=(0, 1))(xe, ye), getattr(tf, kind)(f, argnums=(0, 1))(xt, yt))
    same(getattr(ef, kind)(lambda d: d["q"].sin())({"q": xe}),
         getattr(tf, kind)(lambda d: d["q"].sin())({"q": xt}))
    same(getattr(ef, kind)(lambda x: (x.sin(), x * 2), has_aux=True)(xe),
         getattr(tf, kind)(lambda x: (x.sin(), x * 2), has_aux=True)(xt))
    ze, zt = T(2.0)
    same(getattr(ef, kind)(lambda x: x * x)(ze), getattr(tf, kind)(lambda x: x * x)(zt))


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_jacrev_chunks(chunk):
    xe, xt = rnd(4)
    same(ef.jacrev(lambda x: x.exp()[:3] * x.sum(), chunk_size=chunk)(xe),
         tf.jacrev(lambda x: x.exp()[:3] * x.sum(), chunk_size=chunk)(xt))


def test_jacobian_errors():
    raises_like(lambda lib, F: F.jacrev(lambda x: x.sin(), chunk_size=0)(lib.ones(3)))
    raises_like(lambda lib, F: F.jacrev(lambda x: x.sin(), argnums=1)(lib.ones(3)))
    raises_like(lambda lib, F: F.jacfwd(lambda x: x.sin(), randomness="bad")(lib.ones(3)))
    raises_like(lambda lib, F: F.jacfwd(lambda x: lib.rand(3) * x)(lib.ones(3)))
    raises_like(lambda lib, F: F.jacrev(lambda x: 3.0)(lib.ones(3)))
    raises_like(lambda lib, F: F.jacrev(lambda x: x.sin())(lib.arange(3)))


def test_hessian():
    (xe, xt), (ye, yt) = rnd(3), rnd(3, seed=1)
    f = lambda x: (x.sin() * x ** 2).sum()             # noqa: E731
    same(ef.hessian(f)(xe), tf.hessian(f)(xt))
    g = lambda x, y: (x ** 2 * y.exp()).sum()           # noqa: E731
    same(ef.hessian(g, argnums=(0, 1))(xe, ye), tf.hessian(g, argnums=(0, 1))(xt, yt))


# ---- autograd.functional with vectorize / forward mode ----

@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_autograd_functional_vectorized(strategy):
    from ember.autograd import functional as EF
    from torch.autograd import functional as TF
    (xe, xt), (ye, yt) = rnd(3), rnd(3, seed=1)
    f = lambda x: x.sin() * x                           # noqa: E731
    same(EF.jacobian(f, xe, vectorize=True, strategy=strategy),
         TF.jacobian(f, xt, vectorize=True, strategy=strategy))
    g = lambda x, y: (x * y, x.exp())                   # noqa: E731
    same(EF.jacobian(g, (xe, ye), vectorize=True, strategy=strategy),
         TF.jacobian(g, (xt, yt), vectorize=True, strategy=strategy))
    h = lambda x, y: (x ** 3 * y).sum()                 # noqa: E731
    same(EF.hessian(h, (xe, ye), vectorize=True, outer_jacobian_strategy=strategy),
         TF.hessian(h, (xt, yt), vectorize=True, outer_jacobian_strategy=strategy))
    same(EF.hessian(lambda x: (x ** 3).sum(), xe, vectorize=True,
                    outer_jacobian_strategy=strategy),
         TF.hessian(lambda x: (x ** 3).sum(), xt, vectorize=True,
                    outer_jacobian_strategy=strategy))


def test_autograd_functional_vectorized_create_graph_and_errors():
    from ember.autograd import functional as EF
    xe, xt = rnd(3)
    je = EF.jacobian(lambda x: x.sin(), xe, vectorize=True, create_graph=True)
    assert je.requires_grad
    for kw in ({"strategy": "forward-mode"}, {"strategy": "bad"},
               {"strategy": "forward-mode", "vectorize": True, "create_graph": True},
               {"vectorize": True, "strict": True}):
        raises_like(lambda lib, F: __import__(f"{lib.__name__}.autograd.functional",
                                              fromlist=["x"]).jacobian(lambda x: x.sin(),
                                                                       lib.ones(3), **kw))
    raises_like(lambda lib, F: __import__(f"{lib.__name__}.autograd.functional",
                                          fromlist=["x"]).hessian(
        lambda x: (x ** 3).sum(), lib.ones(3), outer_jacobian_strategy="forward-mode"))


def test_namedtuple_pytrees():
    import collections
    P = collections.namedtuple("P", ["w", "b"])
    (we, wt), (be, bt) = rnd(3), rnd(3, seed=1)
    ge = ef.grad(lambda p: (p.w.sin() * p.b).sum())(P(we, be))
    gt = tf.grad(lambda p: (p.w.sin() * p.b).sum())(P(wt, bt))
    assert type(ge) is P
    same(tuple(ge), tuple(gt))
    je = ef.jacrev(lambda x: P(x.sin(), x * 2))(we)
    jt = tf.jacrev(lambda x: P(x.sin(), x * 2))(wt)
    assert type(je) is P
    same(tuple(je), tuple(jt))
