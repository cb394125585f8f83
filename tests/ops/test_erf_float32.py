"""The blocked float32 erf kernel (ember/ops/pointwise_math.py): within 3 ulp of torch's erf over
the whole float32 range, special values exact, any layout and size."""
import numpy as np
import pytest
import torch

import ember


def _ulp_error(got, want):
    want64 = want.astype(np.float64)
    return np.abs(got.astype(np.float64) - want64) / np.spacing(np.abs(want).astype(np.float32))


def test_erf_float32_matches_torch_within_3_ulp():
    x = np.concatenate([np.linspace(-5, 5, 400_001), np.geomspace(1e-38, 10, 20_000),
                        -np.geomspace(1e-38, 10, 20_000)]).astype(np.float32)
    got = ember.from_numpy(x).erf().numpy()
    want = torch.erf(torch.from_numpy(x)).numpy()
    assert got.dtype == np.float32
    assert _ulp_error(got, want).max() <= 3


def test_erf_float32_special_values():
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.9, 4.0, -4.0, 1e30, -1e-45]
    x = np.array(specials * 400, np.float32)      # big enough for the blocked kernel
    got = ember.from_numpy(x).erf().numpy()
    want = torch.erf(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert _ulp_error(got[ok], want[ok]).max() <= 3
    assert np.signbit(got[1]) and not np.signbit(got[0])          # erf(-0.) == -0.


@pytest.mark.parametrize("shape", [(5000,), (3, 70001), (64, 128, 3)])
def test_erf_float32_strided_and_ragged_blocks(shape):
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape).astype(np.float32) * 2
    e, t = ember.from_numpy(base), torch.from_numpy(base)
    for fe, ft in ((lambda a: a, lambda a: a), (lambda a: a.transpose(0, -1), lambda a: a.transpose(0, -1)),
                   (lambda a: a[..., ::2], lambda a: a[..., ::2])):
        got, want = fe(e).erf(), ft(t).erf()
        assert tuple(got.shape) == tuple(want.shape)
        assert _ulp_error(got.numpy(), want.numpy()).max() <= 3


def test_gelu_large_float32_matches_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 512)).astype(np.float32) * 3
    got = ember.nn.functional.gelu(ember.from_numpy(x)).numpy()
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    # 1 + erf(x) cancels for negative x (in torch too): an absolute tolerance of a few ulp
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6)
