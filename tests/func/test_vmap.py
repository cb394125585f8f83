"""ember.func.vmap against torch.func.vmap on the same inputs: in_dims/out_dims forms,
several inputs and outputs, closures and scalars, nesting, randomness modes, in-place ops,
errors (types and messages), the loop fallback, and vmap of a backward pass."""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF
import torch.nn.functional as TF
from ember.func import vmap


def pair(*shape, dtype=np.float32, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a), torch.tensor(a)


def close(e, t, tol=1e-5):
    if isinstance(t, (tuple, list)):
        assert type(e) in (tuple, list) and len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, tol)
        return
    if isinstance(t, dict):
        assert set(e) == set(t)
        for k in t:
            close(e[k], t[k], tol)
        return
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def both(fe, ft, *args, **kw):
    """Run vmap(fe) on ember args and torch.func.vmap(ft) on the torch twins."""
    ea = [a[0] if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], torch.Tensor)
          else a for a in args]
    ta = [a[1] if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], torch.Tensor)
          else a for a in args]
    close(vmap(fe, **kw)(*ea), torch.func.vmap(ft, **kw)(*ta))


def raises_alike(fe, ft):
    """Both raise; ember's exception has torch's type and the gist of its message."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    return str(te.value), str(ee.value)


# ---- in_dims / out_dims ----
@pytest.mark.parametrize("in_dims,out_dims", [(0, 0), (1, 0), (-1, 1), (0, -1), (2, 2)])
def test_int_dims(in_dims, out_dims):
    x = pair(3, 4, 5)
    both(lambda a: a.sin() * 2, lambda a: a.sin() * 2, x, in_dims=in_dims, out_dims=out_dims)


def test_tuple_none_and_nested_in_dims():
    x, y, z = pair(3, 4), pair(4, 3, seed=1), pair(4, seed=2)
    both(lambda a, b, c: a + b + c, lambda a, b, c: a + b + c, x, y, z, in_dims=(0, 1, None))
    e = vmap(lambda p, c: p[0] * p[1] + c, in_dims=((0, 1), None))((x[0], y[0]), z[0])
    t = torch.func.vmap(lambda p, c: p[0] * p[1] + c, in_dims=((0, 1), None))(
        (x[1], y[1]), z[1])
    close(e, t)


def test_dict_and_list_inputs_and_outputs():
    x, y = pair(3, 4), pair(3, 4, seed=1)

    def f(d, lst):
        return {"s": d["a"] + lst[0], "p": [d["a"] * lst[0], lst[0].sum()]}
    e = vmap(f, in_dims=({"a": 0}, [1]))({"a": x[0]}, [y[0].t()])
    t = torch.func.vmap(f, in_dims=({"a": 0}, [1]))({"a": x[1]}, [y[1].t()])
    close(e, t)
    e = vmap(f, out_dims={"s": 1, "p": [0, 0]})({"a": x[0]}, [y[0]])
    t = torch.func.vmap(f, out_dims={"s": 1, "p": [0, 0]})({"a": x[1]}, [y[1]])
    close(e, t)


def test_several_outputs_with_out_dims_tuple_and_none():
    x = pair(3, 4)
    both(lambda a: (a * 2, a.sum()), lambda a: (a * 2, a.sum()), x, out_dims=(1, 0))
    c = pair(5)
    close(vmap(lambda a: (a, c[0]), out_dims=(0, None))(x[0]),
          torch.func.vmap(lambda a: (a, c[1]), out_dims=(0, None))(x[1]))


def test_unbatched_output_is_expanded():
    x, c = pair(3, 4), pair(4, seed=1)
    close(vmap(lambda a: c[0] * 2)(x[0]), torch.func.vmap(lambda a: c[1] * 2)(x[1]))


def test_closure_scalars_and_kwargs():
    x, w = pair(3, 4), pair(4, 2, seed=1)
    close(vmap(lambda a, s: (a @ w[0]) * s + 1.5, in_dims=(0, None))(x[0], 3),
          torch.func.vmap(lambda a, s: (a @ w[1]) * s + 1.5, in_dims=(0, None))(x[1], 3))
    close(vmap(lambda a, *, k: a * k)(x[0], k=2.0),
          torch.func.vmap(lambda a, *, k: a * k)(x[1], k=2.0))


def test_metadata_inside_is_logical():
    x = pair(4, 3)
    seen = {}

    def probe(lib):
        def f(a):
            seen[lib] = (tuple(a.shape), a.dim(), a.numel(), a.stride(), a.is_contiguous(),
                         len(a), a.size(0))
            return a
        return f
    vmap(probe("e"))(x[0].t())
    torch.func.vmap(probe("t"))(x[1].t())
    assert seen["e"] == seen["t"]


# ---- nesting ----
def test_nested_vmap():
    x, y = pair(2, 3, 4), pair(3, 4, seed=1)
    both(lambda a, b: vmap(lambda p, q: p * q + p.sum())(a, b),
         lambda a, b: torch.func.vmap(lambda p, q: p * q + p.sum())(a, b), x, y,
         in_dims=(0, None))
    e = vmap(vmap(lambda p, q: p @ q, in_dims=(0, None)), in_dims=(None, 0))(x[0][0], y[0])
    t = torch.func.vmap(torch.func.vmap(lambda p, q: p @ q, in_dims=(0, None)),
                        in_dims=(None, 0))(x[1][0], y[1])
    close(e, t)


def test_nested_closure_over_outer_batched_value():
    x, y = pair(2, 3), pair(5, 3, seed=1)
    e = vmap(lambda a: vmap(lambda b: (a * b).sum())(y[0]))(x[0])
    t = torch.func.vmap(lambda a: torch.func.vmap(lambda b: (a * b).sum())(y[1]))(x[1])
    close(e, t)


# ---- ops with hand-written rules ----
@pytest.mark.parametrize("sa,sb,da,db", [
    ((3, 4), (4, 5), 0, None), ((3, 4), (4,), 0, None), ((4,), (3, 4, 5), None, 0),
    ((3, 4), (3, 4), 0, 0), ((5, 4), (3, 4), None, 0), ((3, 2, 4), (3, 4, 2), 0, 0),
    ((3, 2, 4), (4, 3), 0, 1), ((4,), (3, 4), None, 0), ((3, 4), (3, 4, 2), 0, 0)])
def test_matmul_cases(sa, sb, da, db):
    a, b = pair(*sa), pair(*sb, seed=1)
    both(lambda x, y: x @ y, lambda x, y: x @ y, a, b, in_dims=(da, db))


def test_linear_batched_input_and_batched_weight():
    x, w, b = pair(4, 5), pair(3, 5, seed=1), pair(3, seed=2)
    both(lambda p: EF.linear(p, w[0], b[0]), lambda p: TF.linear(p, w[1], b[1]), x)
    ws, bs = pair(4, 3, 5, seed=3), pair(4, 3, seed=4)
    both(EF.linear, TF.linear, x, ws, bs)
    xs = pair(4, 6, 5, seed=5)
    both(EF.linear, TF.linear, xs, ws, bs)


def test_nn_composites():
    x, t = pair(4, 5), (ember.tensor([1, 0, 3, 2]), torch.tensor([1, 0, 3, 2]))
    both(lambda p: EF.softmax(p, -1), lambda p: TF.softmax(p, -1), x)
    both(lambda p: EF.log_softmax(p, 0), lambda p: TF.log_softmax(p, 0), x)
    both(lambda p: EF.layer_norm(p, (5,)), lambda p: TF.layer_norm(p, (5,)), x)
    both(EF.cross_entropy, TF.cross_entropy, x, t)
    x2, t2 = pair(4, 3, 5), (ember.tensor([[1, 0, 4]] * 4), torch.tensor([[1, 0, 4]] * 4))
    for red in ("mean", "sum", "none"):
        both(lambda p, q: EF.cross_entropy(p, q, reduction=red, label_smoothing=0.1),
             lambda p, q: TF.cross_entropy(p, q, reduction=red, label_smoothing=0.1), x2, t2)
    table = pair(7, 3)
    idx = (ember.tensor([[0, 6], [2, 2], [1, 5], [3, 4]]),
           torch.tensor([[0, 6], [2, 2], [1, 5], [3, 4]]))
    both(lambda i: EF.embedding(i, table[0]), lambda i: TF.embedding(i, table[1]), idx)
    q, k, v = pair(4, 2, 3, 8), pair(4, 2, 5, 8, seed=1), pair(4, 2, 5, 8, seed=2)
    both(EF.scaled_dot_product_attention, TF.scaled_dot_product_attention, q, k, v)
    img, w = pair(3, 2, 4, 6, 6), pair(5, 4, 3, 3, seed=1)
    both(lambda p: EF.conv2d(p, w[0], padding=1), lambda p: TF.conv2d(p, w[1], padding=1),
         img)
    ws = pair(3, 5, 4, 3, 3, seed=2)
    both(lambda p, q: EF.conv2d(p, q), lambda p, q: TF.conv2d(p, q), img, ws)
    both(lambda p: EF.max_pool2d(p, 3, 2, padding=1), lambda p: TF.max_pool2d(p, 3, 2, padding=1),
         img)
    both(lambda p: EF.avg_pool2d(p, 2), lambda p: TF.avg_pool2d(p, 2), img)
    both(lambda p: EF.interpolate(p, scale_factor=2), lambda p: TF.interpolate(p, scale_factor=2),
         img)
    seq = pair(3, 4, 6)
    both(lambda p: EF.pad(p, (1, 2), mode="reflect"), lambda p: TF.pad(p, (1, 2), mode="reflect"),
         seq)
    row = pair(3, 6)
    both(lambda p: EF.pad(p, (1, 2), value=3.0), lambda p: TF.pad(p, (1, 2), value=3.0), row)
    both(lambda p: (p > 0).float().mean(), lambda p: (p > 0).float().mean(), row)


def test_views_and_indexing():
    x = pair(3, 4, 5)
    for f in (lambda a: a.view(20), lambda a: a.reshape(5, 2, 2), lambda a: a.T,
              lambda a: a.permute(1, 0), lambda a: a.unsqueeze(-1).expand(4, 5, 3),
              lambda a: a[1:, ::2], lambda a: a[..., 0], lambda a: a[None, 2],
              lambda a: a.flatten(), lambda a: a.squeeze(), lambda a: a.narrow(1, 1, 2),
              lambda a: a.unbind(1)[2], lambda a: a.split(2, 1)[1], lambda a: a.t(),
              lambda a: a.movedim(0, 1), lambda a: a.diagonal()):
        both(f, f, x)
    i = (ember.tensor([2, 0]), torch.tensor([2, 0]))
    both(lambda a, j: a[j], lambda a, j: a[j], x, i, in_dims=(0, None))
    both(lambda a, j: a[:, j], lambda a, j: a[:, j], x, i, in_dims=(0, None))
    x4 = pair(3, 4, 5, 2)
    both(lambda a, j: a[j, :, 1], lambda a, j: a[j, :, 1], x4, i, in_dims=(0, None))
    # integers with tensors: the integers apply first (torch's order), wherever they stand
    i2 = (ember.tensor([1, 0]), torch.tensor([1, 0]))
    for f in (lambda a, j: a[1, :, j], lambda a, j: a[:, 1, j], lambda a, j: a[0, j, 1],
              lambda a, j: a[..., 1, j]):
        both(f, f, x4, i2, in_dims=(0, None))
    per = (ember.tensor([3, 0, 1]), torch.tensor([3, 0, 1]))
    both(lambda a, j: a[j], lambda a, j: a[j], x, per)     # one index per sample


def test_reductions_and_joining():
    x, y = pair(3, 4, 5), pair(3, 4, 5, seed=1)
    for f in (lambda a: a.sum(), lambda a: a.mean(1, keepdim=True), lambda a: a.amax((0, 1)),
              lambda a: a.max(), lambda a: a.max(0).values, lambda a: a.std(-1),
              lambda a: a.argmax(), lambda a: a.cumsum(0), lambda a: a.sort(1).indices,
              lambda a: a.logsumexp(1), lambda a: a.norm(), lambda a: a.topk(2).values):
        both(f, f, x)
    both(lambda a, b: ember.cat([a, b], 1), lambda a, b: torch.cat([a, b], 1), x, y)
    both(lambda a, b: ember.stack([a, b], -1), lambda a, b: torch.stack([a, b], -1), x, y)
    c = pair(4, 5, seed=2)
    close(vmap(lambda a: ember.cat([a, c[0]]))(x[0]),
          torch.func.vmap(lambda a: torch.cat([a, c[1]]))(x[1]))
    both(lambda a, b: ember.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b), x, y)


def test_batched_zero_dim_operand_promotes_weakly():
    x = pair(3, 4)
    s = (ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64),
         torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    both(lambda a, b: a * b, lambda a, b: a * b, x, s)


# ---- in-place ----
def test_inplace_on_batched_tensor():
    def f(lib):
        def g(a, b):
            c = a.clone()
            c.add_(b).mul_(2)
            c[0] = 5.0
            return c
        return g
    x, y = pair(3, 4), pair(3, 4, seed=1)
    both(f(ember), f(torch), x, y)
    x2 = pair(3, 4)
    vmap(lambda a: a.add_(1))(x2[0])
    torch.func.vmap(lambda a: a.add_(1))(x2[1])
    close(x2[0], x2[1])        # written through to the caller's tensor


def test_inplace_into_unbatched_raises_like_torch():
    x = pair(3, 4)
    raises_alike(lambda: vmap(lambda a: ember.zeros(4).add_(a))(x[0]),
                 lambda: torch.func.vmap(lambda a: torch.zeros(4).add_(a))(x[1]))
    z = ember.zeros(4)
    with pytest.raises(RuntimeError):
        vmap(lambda a: z.copy_(a))(x[0])


# ---- randomness ----
def test_randomness_error_same_different():
    x = pair(4, 3)
    raises_alike(lambda: vmap(lambda a: a + ember.rand(3))(x[0]),
                 lambda: torch.func.vmap(lambda a: a + torch.rand(3))(x[1]))
    raises_alike(lambda: vmap(lambda a: EF.dropout(a, 0.5))(x[0]),
                 lambda: torch.func.vmap(lambda a: TF.dropout(a, 0.5))(x[1]))
    z = ember.zeros(4, 3)
    d = vmap(lambda a: a + ember.rand(3), randomness="different")(z)
    assert tuple(d.shape) == (4, 3) and not np.allclose(d[0].numpy(), d[1].numpy())
    s = vmap(lambda a: a + ember.rand(3), randomness="same")(z)
    assert np.allclose(s[0].numpy(), s[1].numpy())
    s = vmap(lambda a: EF.dropout(a + 1, 0.5), randomness="same")(z)
    assert np.allclose(s[0].numpy(), s[3].numpy())
    d = vmap(lambda a: ember.rand_like(a), randomness="different")(z)
    assert not np.allclose(d[0].numpy(), d[1].numpy())
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="bad")


# ---- errors ----
def test_errors_match_torch():
    x, y = pair(3, 4), pair(5, 4, seed=1)
    cases = [
        (lambda v, lib: v(lib.add)),                                 # sizes differ below
        (lambda v, lib: v(lib.sum, in_dims=2)),
        (lambda v, lib: v(lib.sum, in_dims=-3)),
        (lambda v, lib: v(lib.add, in_dims=(0,))),
        (lambda v, lib: v(lib.add, in_dims=[0, 0])),
        (lambda v, lib: v(lib.add, in_dims=(None, None))),
        (lambda v, lib: v(lambda a, b: 1.0)),
        (lambda v, lib: v(lambda a, b: None)),
        (lambda v, lib: v(lambda a, b: a, out_dims=3)),
        (lambda v, lib: v(lambda a, b: a, out_dims=(0, 1))),
        (lambda v, lib: v(lambda a, b: a, out_dims=None)),
        (lambda v, lib: v(lambda a, b: a.sum().item())),
        (lambda v, lib: v(lambda a, b: a if a.sum() > 0 else b)),
    ]
    for k, case in enumerate(cases):
        second = (y if k == 0 else x)
        te, ee = raises_alike(lambda: case(vmap, ember)(x[0], second[0]),
                              lambda: case(torch.func.vmap, torch)(x[1], second[1]))
        if "vmap" in te:
            assert ee.split("(")[0].split(":")[0] == te.split("(")[0].split(":")[0], (te, ee)
    raises_alike(lambda: vmap(ember.sum)(1.0), lambda: torch.func.vmap(torch.sum)(1.0))
    raises_alike(lambda: vmap(ember.sum)(), lambda: torch.func.vmap(torch.sum)())
    te, ee = raises_alike(lambda: vmap(ember.sum)(ember.tensor(1.0)),
                          lambda: torch.func.vmap(torch.sum)(torch.tensor(1.0)))
    assert "dimensionality 0" in ee
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(ember.sum, chunk_size=0)


# ---- chunking ----
def test_chunk_size_gives_the_same_result():
    x = pair(7, 3)
    close(vmap(lambda a: (a * 2, a.sum()), chunk_size=3)(x[0]),
          torch.func.vmap(lambda a: (a * 2, a.sum()), chunk_size=3)(x[1]))


# ---- the loop fallback ----
def test_fallback_warns_once_per_op_and_is_correct():
    x = pair(3, 4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = vmap(lambda a: ember.trace(a) + ember.det(a))(x[0])
    names = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("batching rule for trace" in n for n in names)
    assert any("batching rule for det" in n for n in names)
    close(e, torch.func.vmap(lambda a: torch.trace(a) + torch.det(a))(x[1]), tol=1e-4)


def test_fallback_inplace_writes_through():
    x = pair(3, 5)
    idx = (ember.tensor([0, 2]), torch.tensor([0, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = vmap(lambda a: a.clone().index_fill_(0, idx[0], -1.0))(x[0])
    close(e, torch.func.vmap(lambda a: a.clone().index_fill_(0, idx[1], -1.0))(x[1]))


# ---- backward under vmap ----
def test_vmap_of_backward_is_the_jacobian():
    x, w = pair(4, 3), pair(5, 3, seed=1)
    ex = x[0].clone().requires_grad_()
    ew = w[0].clone().requires_grad_()

    def f_e(a, b):
        return (EF.linear(a, b).tanh().softmax(-1) * ember.arange(5.0)).sum(0)

    def f_t(a, b):
        return (TF.linear(a, b).tanh().softmax(-1) * torch.arange(5.0)).sum(0)
    y = f_e(ex, ew)
    got = vmap(lambda c: ember.autograd.grad(y, (ex, ew), c, retain_graph=True))(
        ember.eye(5))
    want = torch.func.jacrev(f_t, argnums=(0, 1))(x[1], w[1])
    close(got, want)


def test_vmap_grad_gives_per_sample_gradients():
    from ember.func import grad as egrad
    ws, xs = pair(3, 4), pair(6, 4, seed=1)
    ys = (ember.tensor([0, 2, 1, 1, 0, 2]), torch.tensor([0, 2, 1, 1, 0, 2]))

    def loss(lib, F):
        return lambda w, x, y: F.cross_entropy(F.linear(x, w).unsqueeze(0), y.unsqueeze(0))
    e = vmap(egrad(loss(ember, EF)), in_dims=(None, 0, 0))(ws[0], xs[0], ys[0])
    t = torch.func.vmap(torch.func.grad(loss(torch, TF)), in_dims=(None, 0, 0))(
        ws[1], xs[1], ys[1])
    close(e, t)


# ---- primitives for the other transforms ----
def test_physical_round_trip_over_nested_levels():
    from ember.func.vmap import active_levels, to_physical, from_physical, batched_levels
    x = pair(2, 3, 4)[0]
    c = ember.ones(4)
    out = {}

    def inner(b):
        lv = active_levels()
        out["levels"] = [(l.size) for l in lv]
        p = to_physical(b, lv)
        out["p"] = tuple(p.shape)
        out["pc"] = tuple(to_physical(c, lv).shape)
        out["n"] = len(batched_levels(from_physical(p, lv)))
        return from_physical(p * 2, lv)
    r = vmap(vmap(inner, in_dims=1))(x)
    assert out == {"levels": [2, 4], "p": (2, 4, 3), "pc": (2, 4, 4), "n": 2}
    np.testing.assert_allclose(r.numpy(), (x * 2).transpose(1, 2).numpy())
    assert active_levels() == []


def test_no_mode_left_behind_after_an_error():
    from ember.autograd.grad_mode import state
    with pytest.raises(RuntimeError):
        vmap(lambda a: a.sum().item())(ember.ones(2, 2))
    assert state.modes == ()


def test_backward_through_vmap():
    x, w = pair(4, 3), pair(3, 2, seed=1)
    ex, tx = x[0].clone().requires_grad_(), x[1].clone().requires_grad_()
    ew, tw = w[0].clone().requires_grad_(), w[1].clone().requires_grad_()
    (vmap(lambda r: (r @ ew).tanh().sum())(ex) ** 2).sum().backward()
    (torch.func.vmap(lambda r: (r @ tw).tanh().sum())(tx) ** 2).sum().backward()
    close(ex.grad, tx.grad)
    close(ew.grad, tw.grad)
