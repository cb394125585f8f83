"""Tensor.softmax / Tensor.log_softmax and ember.softmax / ember.log_softmax against torch."""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_methods_match_torch(name, dim):
    data = np.random.default_rng(dim + 3).standard_normal((3, 4)).astype(np.float32)
    e, t = ember.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    ye, yt = getattr(e, name)(dim), getattr(t, name)(dim)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    fe, ft = getattr(ember, name)(e, dim), getattr(torch, name)(t, dim)
    np.testing.assert_allclose(fe.detach().numpy(), ft.detach().numpy(), rtol=1e-6, atol=1e-6)
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_softmax_method_dtype_argument():
    e = ember.ones(2, 3).softmax(-1, dtype=ember.float64)
    t = torch.ones(2, 3).softmax(-1, dtype=torch.float64)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
