"""Gradients of matmul and F.linear against torch for operands of every layout the BLAS fast
paths see: 2-D and batched, C-contiguous, transposed views, slices of wider rows (whose
batch dims fold into the rows without a copy) and strided views (whose fold copies), in
float32 and float64; once through the plain backward (ember/ops/matmul.py's NumPy fast
path) and once with create_graph=True (the same formulas in ember ops)."""
import numpy as np
import pytest
import torch

import ember
from ember.ops.matmul import _rows_fold

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-11, atol=1e-11)}


def _view(layout):
    """The function making the operand from its base tensor."""
    if layout == "contiguous":
        return lambda t: t
    if layout == "transposed":          # base (..., n, k): the operand is its mT
        return lambda t: t.transpose(-1, -2)
    if layout == "sliced":              # base (..., n, 2k): the first k columns
        return lambda t: t[..., : t.shape[-1] // 2]
    if layout == "strided":             # base (..., 2n, k): every other row
        return lambda t: t[..., ::2, :]
    raise AssertionError(layout)


def _base_shape(shape, layout):
    *lead, n, k = shape
    return {"contiguous": shape, "transposed": (*lead, k, n), "sliced": (*lead, n, 2 * k),
            "strided": (*lead, 2 * n, k)}[layout]


def _grads(lib, fn, arrays, views, create_graph):
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *[v(t) for v, t in zip(views, leaves)])
    loss = (out * out).sum()
    gs = (torch.autograd.grad if lib is torch else ember.autograd.grad)(
        loss, leaves, create_graph=create_graph)
    return out, gs


def _check(fn, shapes, layouts, dtype, create_graph):
    rng = np.random.default_rng(sum(map(len, shapes)))
    arrays = [rng.standard_normal(_base_shape(s, lay)).astype(dtype)
              for s, lay in zip(shapes, layouts)]
    views = [_view(lay) for lay in layouts]
    oe, ge = _grads(ember, fn, arrays, views, create_graph)
    ot, gt = _grads(torch, fn, arrays, views, create_graph)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), **TOL[dtype])
    for e, t, a in zip(ge, gt, arrays):
        assert tuple(e.shape) == tuple(t.shape) == a.shape
        assert e.dtype == getattr(ember, np.dtype(dtype).name)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL[dtype])


LAYOUTS = ["contiguous", "transposed", "sliced", "strided"]
DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("create_graph", [False, True], ids=["fast", "create_graph"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lay_a", LAYOUTS)
@pytest.mark.parametrize("lay_b", ["contiguous", "transposed"])
@pytest.mark.parametrize("shapes", [((6, 5), (5, 7)), ((3, 6, 5), (5, 7)),
                                    ((2, 3, 6, 5), (5, 7)), ((3, 6, 5), (3, 5, 7)),
                                    ((6, 5), (3, 5, 7)), ((2, 1, 6, 5), (3, 5, 7))],
                         ids=["2d", "3d@2d", "4d@2d", "bmm", "2d@3d", "broadcast"])
def test_matmul_grads_match_torch(shapes, lay_a, lay_b, dtype, create_graph):
    _check(lambda lib, a, b: lib.matmul(a, b), shapes, (lay_a, lay_b), dtype, create_graph)


@pytest.mark.parametrize("create_graph", [False, True], ids=["fast", "create_graph"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lay_x", LAYOUTS)
@pytest.mark.parametrize("lay_w", ["contiguous", "transposed"])
@pytest.mark.parametrize("x_shape", [(6, 5), (3, 6, 5), (2, 3, 6, 5)])
def test_linear_grads_match_torch(x_shape, lay_x, lay_w, dtype, create_graph):
    def fn(lib, x, w, b):
        return lib.nn.functional.linear(x, w, b.reshape(-1))
    _check(fn, (x_shape, (4, 5), (1, 4)), (lay_x, lay_w, "contiguous"), dtype, create_graph)


def test_batched_input_weight_grad_is_one_gemm(monkeypatch):
    """x @ W with a batched x: W's gradient is one 2-D product over the folded batch (not a
    stacked product summed afterwards), and equals torch's."""
    import ember.ops.matmul as mm
    seen = []
    real = mm._matmul_arrays

    def spy(a, b):
        seen.append((a.shape, b.shape))
        return real(a, b)
    monkeypatch.setattr(mm, "_matmul_arrays", spy)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 6, 5)), rng.standard_normal((5, 3))
    xe, we = ember.tensor(x), ember.tensor(w, requires_grad=True)
    (xe.transpose(0, 1) @ we).sum().backward()
    wt = torch.tensor(w, requires_grad=True)
    (torch.tensor(x).transpose(0, 1) @ wt).sum().backward()
    assert ((5, 24), (24, 3)) in seen
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_folds_a_slice_of_wider_rows(dtype, monkeypatch):
    """A (16, 8, 4) slice of (16, 8, 12) rows times a matrix: folded into one product (a
    view, no copy), the values are torch's and the result is C-contiguous."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((16, 8, 12)).astype(dtype)
    w = rng.standard_normal((4, 3)).astype(dtype)
    xe, we = ember.from_numpy(base), ember.from_numpy(w)
    seen, real = [], np.matmul

    def spy(a, b, *args, **kwargs):
        seen.append((a.shape, np.shares_memory(a, base)))
        return real(a, b, *args, **kwargs)
    monkeypatch.setattr(np, "matmul", spy)
    got = xe[..., :4] @ we
    monkeypatch.undo()
    assert seen == [((128, 4), True)]
    want = torch.tensor(base)[..., :4] @ torch.tensor(w)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL[dtype])
    assert got.is_contiguous()


def test_rows_fold_says_when_reshape_is_a_view():
    x = np.zeros((4, 6, 10), np.float32)
    cases = [x, x[..., :3], x[:, ::2], x[None], x[:, :1], x.swapaxes(0, 1),
             np.broadcast_to(x[:1], (4, 6, 10)), x.reshape(4, 6, 2, 5).transpose(0, 2, 1, 3),
             x[::2, :, :3], x[:, 1:2, :3][:, :, None]]
    for a in cases:
        assert _rows_fold(a) == np.shares_memory(a.reshape(-1, a.shape[-1]), a), a.strides


def _qkv_views(lib, qkv, H):
    """q, k, v as the GPT example makes them: (B, H, T, E) views of one (B, T, 3*H*E)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    return [t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [True, False])
@pytest.mark.parametrize("T,E", [(64, 32), (16, 32), (160, 16), (64, 128)],
                         ids=["mid", "small", "long", "wide"])
def test_attention_products_match_torch(T, E, is_causal, dtype):
    """SDPA on head views (k^T, v^T are column-major): values and q/k/v gradients are
    torch's, in the fast backward and with create_graph=True."""
    H = 2
    rng = np.random.default_rng(T + E)
    base = rng.standard_normal((3, T, 3 * H * E)).astype(dtype)
    g = rng.standard_normal((3, H, T, E)).astype(dtype)
    for create_graph in (False, True):
        res = []
        for lib in (ember, torch):
            qkv = lib.tensor(base, requires_grad=True)
            q, k, v = _qkv_views(lib, qkv, H)
            out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
            (gq,) = (torch.autograd.grad if lib is torch else ember.autograd.grad)(
                out, [qkv], grad_outputs=[lib.tensor(g)], create_graph=create_graph)
            res.append((out.detach().numpy(), gq.detach().numpy()))
        for e, t in zip(*res):
            np.testing.assert_allclose(e, t, **TOL[dtype])


def test_folded_weight_grad_differentiates_again():
    """The folded x @ W weight gradient, recorded with create_graph, has the right second
    derivatives (gradgradcheck in float64), for a contiguous and a transposed-view x."""
    from ember.autograd import gradcheck, gradgradcheck
    x = ember.randn(3, 4, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(5, 2, dtype=ember.float64, requires_grad=True)
    for f in (lambda a, b: a @ b, lambda a, b: a.transpose(0, 1) @ b):
        assert gradcheck(f, (x, w))
        assert gradgradcheck(f, (x, w))


@pytest.mark.parametrize("create_graph", [False, True], ids=["fast", "create_graph"])
@pytest.mark.parametrize("shapes", [((2, 3, 0), (0, 4)), ((0, 3, 5), (5, 4)),
                                    ((2, 3, 5), (5, 0))], ids=["k=0", "batch=0", "n=0"])
def test_folded_weight_grad_of_empty_operands(shapes, create_graph):
    _check(lambda lib, a, b: lib.matmul(a, b), shapes, ("contiguous", "contiguous"),
           np.float64, create_graph)
