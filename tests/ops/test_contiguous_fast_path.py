"""`contiguous()` and relu's fast paths (issue 22) against torch: `contiguous()` returns the
tensor itself exactly when torch says it is contiguous (size-1 dims and empty tensors
ignore strides), else a copy with the same values; relu keeps NaN and the dtype."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 1, 2, 3]), st.integers(0, 7)),
                min_size=0, max_size=4))
def test_contiguous_matches_torch_on_strided_views(dims):
    shape = tuple(s for s, _ in dims)
    strides = tuple(t for _, t in dims)
    base = np.arange(64, dtype=np.float32)
    tt = torch.as_strided(torch.from_numpy(base.copy()), shape, strides)
    et = ember.as_strided(ember.tensor(base), shape, strides)
    assert et.is_contiguous() == tt.is_contiguous()
    ec, tc = et.contiguous(), tt.contiguous()
    assert (ec is et) == (tc is tt)
    assert ec.is_contiguous() and list(ec.stride()) == list(tc.stride())
    np.testing.assert_array_equal(ec.numpy(), tc.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
def test_relu_values_and_dtype(dtype):
    data = np.array([[-2, 0, 3], [5, -1, 1]]).astype(dtype)
    if data.dtype.kind == "f":
        data[0, 1] = np.nan
    t = torch.from_numpy(data.copy()).relu()
    e = ember.tensor(data).relu()
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(e.numpy(), t.numpy())
