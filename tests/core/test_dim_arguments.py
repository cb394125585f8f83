"""Dim arguments: a bool or a float is torch's TypeError (not an AttributeError, and not read as
0/1), and a refused call leaves no trace: the same call with proper ints works after it."""
import numpy as np
import pytest
import torch

import ember

BAD_CALLS = [
    ("transpose", (True, 3)), ("transpose", (1.0, 3)), ("sum", (1.0,)), ("size", (True,)),
    ("unsqueeze", (True,)), ("softmax", (1.5,)), ("movedim", (True, 0)),
]


@pytest.mark.parametrize("name,args", BAD_CALLS, ids=lambda v: repr(v))
def test_bool_or_float_dims_raise_type_error_like_torch(name, args):
    with pytest.raises(TypeError):
        getattr(torch.zeros(2, 3, 4, 5), name)(*args)
    with pytest.raises(TypeError):
        getattr(ember.zeros(2, 3, 4, 5), name)(*args)


def test_a_refused_transpose_does_not_poison_the_next_one():
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    with pytest.raises(TypeError):
        ember.tensor(x).transpose(True, 3)
    got = ember.tensor(x).transpose(1, 3)
    want = torch.tensor(x).transpose(1, 3)
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_integer_likes_are_dims():
    x = ember.zeros(2, 3)
    assert x.sum(np.int64(1)).shape == torch.zeros(2, 3).sum(np.int64(1)).shape
