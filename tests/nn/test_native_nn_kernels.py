"""The C kernels of ember/ops/native_nn.py (layer_norm without a recorded graph, the small
attention softmax of scaled_dot_product_attention) and the cheaper view/split/storage paths
that token-by-token generation runs: results against torch, against ember's NumPy path
(kernels off), and the views' strides, offsets and gradients against torch's."""
import numpy as np
import pytest
import torch

import ember
from ember.ops import native, native_nn


def _both(a):
    return ember.tensor(a), torch.tensor(a)


def _numpy_path(fn):
    saved = native.enabled
    native.enabled = False
    try:
        return fn()
    finally:
        native.enabled = saved


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,norm", [((1, 1, 128), (128,)), ((1, 37, 128), (128,)),
                                        ((3, 5, 7), (7,)), ((2, 3, 4, 6), (4, 6)),
                                        ((5, 1), (1,))])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_inference_matches_torch_and_numpy_path(dtype, shape, norm, affine):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(norm).astype(dtype) if affine in ("both", "weight") else None
    b = rng.standard_normal(norm).astype(dtype) if affine in ("both", "bias") else None
    ex, tx = _both(x)
    ew, tw = _both(w) if w is not None else (None, None)
    eb, tb = _both(b) if b is not None else (None, None)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    with ember.no_grad():
        got = ember.nn.functional.layer_norm(ex, norm, ew, eb)
        slow = _numpy_path(lambda: ember.nn.functional.layer_norm(ex, norm, ew, eb))
    ref = torch.nn.functional.layer_norm(tx, norm, tw, tb)
    assert got.dtype == slow.dtype and got.shape == slow.shape
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(got.numpy(), slow.numpy(), rtol=tol, atol=tol)


def test_layer_norm_kernel_runs_and_leaves_training_to_the_graph():
    x = ember.randn(4, 16)
    ln = ember.nn.LayerNorm(16)
    assert native_nn.layer_norm_rows(x._data, ln.weight._data, ln.bias._data, 16, 1e-5) \
        is not None or native_nn.LIB.broken is not None
    # with a graph to record the node, the op's autograd path runs as before
    xt = torch.tensor(x.numpy(), requires_grad=True)
    lt = torch.nn.LayerNorm(16)
    xe = x.detach().requires_grad_()
    ln(xe).pow(2).sum().backward()
    lt(xt).pow(2).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_layer_norm_non_contiguous_and_constant_rows_match_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    x[2] = 3.0                                  # a constant row: variance 0
    ex, tx = _both(x)
    with ember.no_grad():
        got = ember.nn.functional.layer_norm(ex.t(), (8,))   # a transposed input
        got_c = ember.nn.functional.layer_norm(ex, (6,))
    np.testing.assert_allclose(got.numpy(), torch.nn.functional.layer_norm(tx.t(), (8,)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_c.numpy(), torch.nn.functional.layer_norm(tx, (6,)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("B,H,L,S,E", [(1, 4, 1, 1, 32), (1, 4, 17, 17, 32),
                                       (2, 3, 5, 9, 8), (1, 2, 9, 5, 8), (1, 4, 64, 64, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_small_attention_matches_torch_and_numpy_path(dtype, B, H, L, S, E, causal):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((B, H, n, E)).astype(dtype) for n in (L, S, S))
    (eq, tq), (ek, tk), (ev, tv) = _both(q), _both(k), _both(v)
    f = ember.nn.functional.scaled_dot_product_attention
    got = f(eq, ek, ev, is_causal=causal)
    slow = _numpy_path(lambda: f(eq, ek, ev, is_causal=causal))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(got.numpy(), slow.numpy(), rtol=tol, atol=tol)


def test_small_attention_gradients_match_torch():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 7, 4)) for _ in range(3))
    es = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    ember.nn.functional.scaled_dot_product_attention(*es, is_causal=True).pow(2).sum().backward()
    torch.nn.functional.scaled_dot_product_attention(*ts, is_causal=True).pow(2).sum().backward()
    for e, t in zip(es, ts):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_softmax_kernel_rows_of_minus_inf_give_zero_and_nan_propagates():
    s = np.array([[[-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0], [np.nan, 0.0, 1.0]]],
                 np.float32)
    got = native_nn.softmax_scores(s.copy(), 1.0, False)
    if got is None:
        pytest.skip(f"no C kernel: {native_nn.LIB.broken}")
    ref = torch.softmax(torch.tensor(s), -1).numpy()
    assert (got[0, 0] == 0).all()                 # torch's sdpa answer for a dead row
    np.testing.assert_allclose(got[0, 1], ref[0, 1], rtol=1e-6)
    assert np.isnan(got[0, 2]).all()
    causal = native_nn.softmax_scores(np.zeros((1, 2, 3), np.float64), 1.0, True)
    np.testing.assert_array_equal(causal, [[[1, 0, 0], [0.5, 0.5, 0]]])


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_causal_sdpa_with_a_special_score_in_the_masked_part_is_torchs(special):
    """torch's kernel adds the causal mask, so a NaN or +inf score in a masked position makes
    its row NaN (a -inf one does not); found by the fuzzer (sdpa specials, seed 0)."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    k[0, 1, 1] = special          # key 1 of batch 0: masked for query 0 only
    outs = [lib.nn.functional.scaled_dot_product_attention(
        *(lib.tensor(a) for a in (q, k, v)), is_causal=True).numpy() for lib in (ember, torch)]
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-12, equal_nan=True)
    if special != special:
        assert np.isnan(outs[1][0, 0]).all()      # (query 0's row: what the case is about)


def test_views_of_split_pieces_have_torch_strides_offsets_and_gradients():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1, 5, 12))
    ea = ember.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    eo, to = [], []
    for e, t in zip(ea.split(4, dim=2), ta.split(4, dim=2)):
        ev, tv = e.view(1, 5, 2, 2), t.view(1, 5, 2, 2)
        assert ev.stride() == tv.stride() and ev.storage_offset() == tv.storage_offset()
        et, tt = ev.transpose(1, 2), tv.transpose(1, 2)
        assert et.stride() == tt.stride()
        eo.append(et)
        to.append(tt)
    w = rng.standard_normal((1, 2, 5, 2))
    sum(o * float(i + 1) * ember.tensor(w) for i, o in enumerate(eo)).sum().backward()
    sum(o * float(i + 1) * torch.tensor(w) for i, o in enumerate(to)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy())
    # split's error checks are narrow's and split's own, as before
    with pytest.raises(RuntimeError):
        ea.split([3, 3], dim=2)
    with pytest.raises(RuntimeError):
        ea.view(-1, 7)


def test_storage_of_a_reshaped_product_spans_its_own_elements():
    x = ember.randn(1, 3, 8)
    lin = ember.nn.Linear(8, 12)
    with ember.no_grad():
        y = lin(x)
    q = y.split(4, dim=2)[1]
    assert y.untyped_storage().nbytes() == 3 * 12 * 4
    assert q.storage_offset() == 4 and y.storage_offset() == 0
    assert q.untyped_storage().data_ptr() == y.data_ptr()
    base = np.zeros((1, 4, 3))[:, ::-1][:, :1]     # a negative stride on a size-1 dim
    with pytest.raises(ValueError):                 # torch's refusal, as before
        ember.from_numpy(base).untyped_storage()
    with pytest.raises(ValueError):
        torch.from_numpy(base)
