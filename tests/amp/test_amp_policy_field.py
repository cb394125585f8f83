"""Autocast reads each op's policy from its OpDef (`amp`): the registry publishes such ops
behind dispatch.with_autocast, and the policy is applied only inside an autocast region."""
import pytest
import torch

import ember
from ember import dispatch
from ember.ops.registry import EXTERN, FP32, LOWER_PRECISION, OpDef, op_for


@pytest.mark.parametrize("name, policy", [
    ("matmul", LOWER_PRECISION), ("bmm", LOWER_PRECISION), ("addmm", LOWER_PRECISION),
    ("baddbmm", LOWER_PRECISION), ("addbmm", LOWER_PRECISION), ("prod", FP32),
    ("quantile", FP32), ("nanquantile", FP32), ("trace", FP32), ("cdist", FP32),
    ("cross_entropy", FP32), ("nll_loss", FP32), ("scaled_dot_product_attention", LOWER_PRECISION),
    ("add", None), ("sum", None)])
def test_policies_live_on_the_opdefs(name, policy):
    assert op_for(name).amp == policy


def test_einsum_is_lower_precision_only_when_it_contracts():
    amp = op_for("einsum").amp
    assert amp(("ij,jk->ik",), {}) == LOWER_PRECISION
    assert amp(("ij,ij->ij",), {}) is None


def _seen(op):
    """An op function behind with_autocast that reports the dtypes it was called with and
    whether autocast was on."""
    calls = []

    def fn(a, b, *, out=None):
        calls.append((a.dtype, b.dtype, ember.is_autocast_enabled("cpu"), out))
        return a
    return dispatch.with_autocast(op, fn), calls


def test_fp32_policy_casts_to_float32_and_turns_autocast_off():
    f, calls = _seen(OpDef("fake_fp32", EXTERN, amp=FP32))
    a, b = ember.ones(2, dtype=ember.bfloat16), ember.ones(2, dtype=ember.float64)
    f(a, b)
    assert calls[-1][:3] == (ember.bfloat16, ember.float64, False)     # outside: untouched
    with ember.autocast("cpu", dtype=ember.bfloat16):
        f(a, b)
        assert ember.is_autocast_enabled("cpu")
    assert calls[-1][:3] == (ember.float32, ember.float64, False)      # float64 stays


def test_lower_precision_policy_casts_inputs_but_not_out():
    f, calls = _seen(OpDef("fake_lp", EXTERN, amp=LOWER_PRECISION))
    a, out = ember.ones(2), ember.empty(2)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        f(a, a, out=out)
    assert calls[-1][:3] == (ember.bfloat16, ember.bfloat16, True)
    assert calls[-1][3] is out


def test_a_compiled_lower_precision_op_casts_at_replay_like_torch():
    a, b = ember.randn(2, 3, 4), ember.randn(2, 4, 5)
    ta, tb = torch.from_numpy(a.numpy()), torch.from_numpy(b.numpy())
    cf = ember.compile(lambda x, y: ember.bmm(x, y) * 2, backend="numpy")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.bmm(ta, tb) * 2
    for _ in range(2):                 # the tracing call, then the replay
        with ember.autocast("cpu", dtype=ember.bfloat16):
            got = cf(a, b)
        assert got.dtype is ember.bfloat16 and want.dtype is torch.bfloat16
        torch.testing.assert_close(torch.from_numpy(got.float().numpy()), want.float(),
                                   rtol=2e-2, atol=2e-2)
    assert cf(a, b).dtype is ember.float32          # outside the region: a new variant
