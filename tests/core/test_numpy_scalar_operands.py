"""A NumPy scalar on the left of an operator gives a Tensor, as in torch (Tensor's
``__array_priority__`` makes NumPy defer): dtype, values and autograd equal torch's."""
import operator

import numpy as np
import pytest
import torch

import ember

# (np.bool_ left out: torch reads it as the integer 1 in `np.bool_(True) - t`, where a Python
# True raises; ember raises for both)
SCALARS = [np.float32(3.0), np.float64(-2.5), np.int64(4)]
OPS = [operator.mul, operator.add, operator.sub, operator.truediv]


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_numpy_scalar_on_the_left(scalar, op):
    base = np.array([1.0, -2.0, 0.5], np.float32)
    t = torch.tensor(base, requires_grad=True)
    e = ember.tensor(base, requires_grad=True)
    rt, re = op(scalar, t), op(scalar, e)
    assert isinstance(re, ember.Tensor)
    assert str(re.dtype) == str(rt.dtype).replace("torch", "ember")
    np.testing.assert_allclose(re.detach().numpy(), rt.detach().numpy(), rtol=1e-6)
    rt.sum().backward()
    re.sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_an_array_on_the_left_is_refused_like_torch():
    with pytest.raises(TypeError):
        np.ones(2) * torch.ones(2, requires_grad=True)
    with pytest.raises(TypeError):
        np.ones(2) * ember.ones(2, requires_grad=True)
