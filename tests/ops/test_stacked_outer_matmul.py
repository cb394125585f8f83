"""Stacked outer products, ``(..., m, 1) @ (..., 1, n)`` (the per-sample weight gradients of
``vmap(grad(loss))``): ember's C kernel (ops/native_pointwise.py) and its NumPy fallbacks
give torch's values, for contiguous, transposed and strided operands."""
import numpy as np
import pytest
import torch

import ember
from ember.ops import native, native_pointwise


def _pair(shape_a, shape_b, dtype, layout):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a).astype(dtype)
    b = rng.standard_normal(shape_b).astype(dtype)
    if layout == "a-transposed":        # a (..., m, 1) as the transpose of a (..., 1, m)
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        a = np.swapaxes(a, -1, -2)
    elif layout == "b-strided":         # b's rows not contiguous: the NumPy fallback
        b = np.repeat(b, 2, axis=-1)[..., ::2]
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "a-transposed", "b-strided"])
@pytest.mark.parametrize("shapes", [((64, 50, 1), (64, 1, 70)), ((2, 3, 40, 1), (2, 3, 1, 90)),
                                    ((3, 5, 1), (3, 1, 4)), ((8, 30, 1), (1, 1, 200))],
                         ids=["batched", "two-batch-dims", "small", "broadcast-batch"])
def test_stacked_outer_matches_torch(dtype, layout, shapes):
    a, b = _pair(*shapes, dtype, layout)
    got = ember.matmul(ember.from_numpy(a), ember.from_numpy(b))
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=0)


def test_the_c_kernel_runs_and_agrees_with_numpy():
    a, b = _pair((64, 50, 1), (64, 1, 70), np.float32, "a-transposed")
    r = native_pointwise.stacked_outer(a, b)
    if native_pointwise.OUTER_LIB.broken:
        pytest.fail(f"the outer-product kernel did not build: {native_pointwise.OUTER_LIB.broken}")
    assert r is not None
    np.testing.assert_array_equal(r, np.multiply(a, b))
    # where it does not apply it says so, and matmul keeps NumPy's product
    assert native_pointwise.stacked_outer(a, b.astype(np.float64)) is None
    assert native_pointwise.stacked_outer(*_pair((64, 50, 1), (64, 1, 70), np.float32,
                                                 "b-strided")) is None


def test_per_sample_gradients_without_eager_kernels(monkeypatch):
    """vmap(grad) of a linear layer gives the same per-sample gradients with the C kernel
    and with the kernels turned off (the NumPy path)."""
    w = ember.randn(40, 30)
    x = ember.randn(16, 30)

    def loss(w, xi):
        return (xi @ w.T).tanh().sum()
    per_sample = ember.func.vmap(ember.func.grad(loss), in_dims=(None, 0))
    with_kernel = per_sample(w, x)
    monkeypatch.setattr(native, "enabled", False)
    without = per_sample(w, x)
    np.testing.assert_allclose(with_kernel.numpy(), without.numpy(), rtol=1e-6, atol=1e-7)
    tw, tx = torch.from_numpy(w.numpy()), torch.from_numpy(x.numpy())
    want = torch.func.vmap(torch.func.grad(lambda w, xi: (xi @ w.T).tanh().sum()),
                           in_dims=(None, 0))(tw, tx)
    np.testing.assert_allclose(with_kernel.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
