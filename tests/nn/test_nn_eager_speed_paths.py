"""Eager speed paths that must not change results: linear's cached contiguous weight.T
(few rows, outside training) follows every way a weight can change, and 2x2 max pooling's
strided-view forward and backward agree with torch, ties, infinities and NaNs included."""
import numpy as np
import pytest
import torch

import ember


def _linear_matches(lin, x):
    ref = x._data @ lin.weight._data.T + lin.bias._data
    np.testing.assert_allclose(lin(x).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_linear_weight_cache_follows_every_change_of_the_weight():
    lin = ember.nn.Linear(16, 32)
    x = ember.randn(4, 16)
    with ember.no_grad():
        _linear_matches(lin, x)
        lin.weight.mul_(2)
        _linear_matches(lin, x)
    with ember.inference_mode():
        lin.weight.add_(1)
        _linear_matches(lin, x)
    lin.load_state_dict({k: v * 3 for k, v in lin.state_dict().items()})
    with ember.no_grad():
        _linear_matches(lin, x)
    opt = ember.optim.SGD(lin.parameters(), lr=0.1)
    lin(x).sum().backward()
    opt.step()
    with ember.no_grad():
        _linear_matches(lin, x)
    lin.weight.data = ember.randn(32, 16)
    with ember.no_grad():
        _linear_matches(lin, x)
    lin.weight.data.fill_(0.5)
    with ember.no_grad():
        _linear_matches(lin, x)


@pytest.mark.parametrize("rows", [1, 7, 64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_few_row_linear_matches_torch_in_and_out_of_no_grad(rows, dtype):
    rng = np.random.default_rng(rows)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in [(2, rows, 24), (40, 24), (40,)])
    t = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b)).numpy()
    W = ember.tensor(w, requires_grad=True)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    with ember.no_grad():
        np.testing.assert_allclose(ember.nn.functional.linear(ember.tensor(x), W,
                                                              ember.tensor(b)).numpy(), t, **tol)
        # a transposed view of another weight with the same storage is not confused with it
        np.testing.assert_allclose(
            ember.nn.functional.linear(ember.tensor(x[..., :24]), W[:, :24], None).numpy(),
            t - b, **tol)
    np.testing.assert_allclose(ember.nn.functional.linear(ember.tensor(x), W,
                                                          ember.tensor(b)).detach().numpy(),
                               t, **tol)


def _pool_both(x, g):
    out = []
    for lib in (ember, torch):
        X = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(X, 2)
        y.backward(lib.tensor(g))
        out.append((y.detach().numpy(), X.grad.numpy()))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_max_pool_matches_torch_with_ties(dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (3, 4, 8, 6)).astype(dtype)        # many ties inside windows
    g = rng.standard_normal((3, 4, 4, 3)).astype(dtype)
    (ey, eg), (ty, tg) = _pool_both(x, g)
    np.testing.assert_array_equal(ey, ty)
    np.testing.assert_array_equal(eg, tg)


def test_tiled_max_pool_with_inf_gradient_and_nan_input_matches_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 4))
    x[0, 0, 1, 1] = np.nan
    x[1, 2, 0, 0] = np.inf
    g = rng.standard_normal((2, 3, 2, 2))
    g[0, 1, 0, 0] = np.inf
    g[1, 0, 1, 1] = np.nan
    (ey, eg), (ty, tg) = _pool_both(x, g)
    np.testing.assert_array_equal(ey, ty)
    np.testing.assert_array_equal(eg, tg)


def _ce_both(x, t, g, **kw):
    out = []
    for lib in (ember, torch):
        X = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.cross_entropy(X, lib.tensor(t), **kw)
        gx, = lib.autograd.grad(y, X, lib.tensor(g), create_graph=True)
        gg, = lib.autograd.grad((gx * gx).sum(), X)
        y2 = lib.nn.functional.cross_entropy(X, lib.tensor(t), **kw)
        y2.backward(lib.tensor(g))
        out.append((y.detach().numpy(), gx.detach().numpy(), gg.numpy(), X.grad.numpy(),
                    y.grad_fn.name()))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_fused_cross_entropy_matches_torch_to_second_order(dtype, reduction, ignore_index):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((9, 6)) * 4).astype(dtype)
    t = rng.integers(0, 6, 9)
    t[[1, 4]] = 2
    g = rng.standard_normal(9).astype(dtype) if reduction == "none" else np.array(1.7, dtype)
    e, tr = _ce_both(x, t, g, reduction=reduction, ignore_index=ignore_index)
    assert e[4] == tr[4] == "NllLossBackward0"
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)
    for a, b in zip(e[:4], tr[:4]):
        np.testing.assert_allclose(a, b, **tol)


def test_fused_cross_entropy_all_ignored_and_bad_targets_match_torch():
    x = np.random.default_rng(4).standard_normal((3, 4))
    e, tr = _ce_both(x, np.array([1, 1, 1]), np.array(1.0), ignore_index=1)
    for a, b in zip(e[:4], tr[:4]):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    with pytest.raises(IndexError, match="out of bounds"):
        ember.nn.functional.cross_entropy(ember.tensor(x), ember.tensor([0, 4, 1]))
    with pytest.raises(IndexError):
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor([0, 4, 1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_fast_path_matches_torch(dtype):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((10, 4)).astype(dtype)
    idx = np.array([[1, 3, 3], [9, 0, 1]])
    g = rng.standard_normal((2, 3, 4)).astype(dtype)
    res = []
    for lib in (ember, torch):
        W = lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor(idx), W)
        G = lib.tensor(g, requires_grad=True)
        gw, = lib.autograd.grad(out, W, G, create_graph=True)
        gg, = lib.autograd.grad((gw * gw).sum(), G)       # the backward is linear in g
        res.append((out.detach().numpy(), gw.detach().numpy(), gg.numpy(), out.grad_fn.name()))
    for a, b in zip(res[0][:3], res[1][:3]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert res[0][3] == res[1][3] == "EmbeddingBackward0"
    with pytest.raises(IndexError, match="index out of range"):
        ember.nn.functional.embedding(ember.tensor([10]), ember.tensor(w))


@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_with_many_duplicate_indices_matches_torch(dim):
    # >= 256 indices of whole slices take the sort-and-reduce path
    rng = np.random.default_rng(6)
    base = rng.standard_normal((50, 40))
    idx = rng.integers(0, 50 if dim == 0 else 40, 600)
    src = rng.standard_normal((600, 40) if dim == 0 else (50, 600))
    e = ember.tensor(base).index_add(dim, ember.tensor(idx), ember.tensor(src), alpha=0.5)
    t = torch.tensor(base).index_add(dim, torch.tensor(idx), torch.tensor(src), alpha=0.5)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_fused_cross_entropy_and_embedding_pass_gradcheck():
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    t = ember.tensor([0, 3, 3, 1, 2])
    for reduction in ("mean", "sum", "none"):
        assert ember.autograd.gradcheck(
            lambda x: ember.nn.functional.cross_entropy(x, t, reduction=reduction,
                                                        ignore_index=1), (x,))
    w = ember.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    idx = ember.tensor([[0, 5, 5], [2, 0, 1]])
    assert ember.autograd.gradcheck(lambda w: ember.nn.functional.embedding(idx, w), (w,))
    assert ember.autograd.gradgradcheck(lambda w: ember.nn.functional.embedding(idx, w) ** 2,
                                        (w,))
