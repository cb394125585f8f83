"""relu's backward (threshold_backward): the mask is exact even for inf/NaN gradients,
and it matches torch on float32/float64 and non-contiguous inputs."""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward_with_nonfinite_grads(dtype):
    r = np.array([1.0, -1.0, 2.0, 0.0, -3.0, 5.0], dtype=dtype)
    g = np.array([np.inf, np.inf, np.nan, 3.0, np.nan, -np.inf], dtype=dtype)
    e, t = ember.tensor(r, requires_grad=True), torch.tensor(r, requires_grad=True)
    e.relu().backward(ember.tensor(g))
    t.relu().backward(torch.tensor(g))
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_relu_backward_transposed_input():
    x = np.random.default_rng(0).standard_normal((4, 3))
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    (e.t().relu() * 2).sum().backward()
    (t.t().relu() * 2).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
