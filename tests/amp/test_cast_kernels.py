"""The 16-bit float conversions (ember/core/lowp_cast.py, C kernels from
ember/compiler/cast_kernels.py) against ml_dtypes/NumPy bit for bit and against torch's
values: every 16-bit pattern widened, every rounding boundary narrowed, strided layouts,
the threaded path, the fallback without kernels; and the autocast paths they serve (gelu,
attention, linear in bfloat16, their gradients) against torch.autocast("cpu")."""
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember.core import lowp_cast as L

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
TORCH = {BF16: torch.bfloat16, F16: torch.float16}

needs_kernels = pytest.mark.skipif(not L.installed(), reason="no C compiler: ml_dtypes only")


def _astype(a, d):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # NumPy's overflow/invalid warnings
        return a.astype(d)


def _boundary_floats():
    """float32 bit patterns at and around every rounding boundary of both 16-bit formats
    (ties, half-ulps, subnormal and overflow thresholds), NaNs with assorted payloads, and
    random patterns."""
    hi = np.arange(0, 1 << 16, dtype=np.uint32) << 16
    parts = [hi + off for off in (0, 1, 0x7fff, 0x8000, 0x8001, 0xffff)]
    h = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    hb = h[np.isfinite(h)].view(np.uint32)
    parts += [hb + off for off in (0, 1, 0xfff, 0x1000, 0x1001)] + [hb - 1]
    parts.append(np.array([0x33000000, 0x33000001, 0x387fffff, 0x38800000, 0x477fefff,
                           0x477ff000, 0x477ff001, 0x47800000, 0x7f7fffff, 0x7f800000,
                           0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, 0x00000001],
                          dtype=np.uint32))
    parts.append(np.random.default_rng(0).integers(0, 1 << 32, 1 << 18, dtype=np.uint32))
    b = np.concatenate(parts).astype(np.uint32)
    return np.concatenate([b, b | np.uint32(0x80000000)]).view(np.float32)


@needs_kernels
@pytest.mark.parametrize("d", [BF16, F16], ids=["bfloat16", "float16"])
def test_widening_every_pattern(d):
    a = np.arange(1 << 16, dtype=np.uint16).view(d)
    before = L.stats["kernel"]
    r = L.astype(a, np.float32)
    assert L.stats["kernel"] == before + 1
    assert r.dtype == F32
    np.testing.assert_array_equal(r.view(np.uint32), _astype(a, F32).view(np.uint32))


@needs_kernels
@pytest.mark.parametrize("d", [BF16, F16], ids=["bfloat16", "float16"])
def test_narrowing_boundaries(d):
    f = _boundary_floats()
    r = L.astype(f, d)
    np.testing.assert_array_equal(r.view(np.uint16), _astype(f, d).view(np.uint16))
    # torch's values: round to nearest even everywhere; NaN stays NaN (torch's bits differ)
    t = torch.from_numpy(f).to(TORCH[d]).float().numpy()
    rf = _astype(r, F32)
    nan = np.isnan(f)
    assert np.isnan(rf[nan]).all()
    np.testing.assert_array_equal(rf[~nan].view(np.uint32), t[~nan].view(np.uint32))


@needs_kernels
@pytest.mark.parametrize("layout", ["transpose", "slice", "heads", "step", "size1", "neg"])
def test_strided_layouts_as_astype(layout):
    base = np.random.default_rng(1).standard_normal((4, 48, 96)).astype(np.float32)
    a = {"transpose": base.transpose(2, 0, 1), "slice": base[:, :, 8:72],
         "heads": base.reshape(4, 48, 4, 24).transpose(0, 2, 1, 3)[..., 3:],
         "step": base[:, ::2], "size1": base[:, :1], "neg": base[::-1]}[layout]
    for d in (BF16, F16):
        r, e = L.astype(a, d), _astype(a, d)
        assert r.shape == e.shape and r.strides == e.strides
        np.testing.assert_array_equal(r.view(np.uint16), e.view(np.uint16))
        w, we = L.astype(e, np.dtype(np.float32)), _astype(e, F32)
        assert w.strides == we.strides
        np.testing.assert_array_equal(w.view(np.uint32), we.view(np.uint32))


@needs_kernels
def test_threaded_path_and_fallback_agree():
    from ember.compiler import cast_kernels
    a = np.random.default_rng(2).standard_normal(cast_kernels.PARALLEL_ELEMENTS + 77) \
        .astype(np.float32) * 1e4
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        threaded = [L.astype(a, d) for d in (BF16, F16)]
    finally:
        ember.set_num_threads(old)
    L.install({})                    # no kernels: ml_dtypes/NumPy convert, same bits
    try:
        assert L.installed() == []
        plain = [L.astype(a, d) for d in (BF16, F16)]
    finally:
        cast_kernels.install()
    for r, e in zip(threaded, plain):
        np.testing.assert_array_equal(r.view(np.uint16), e.view(np.uint16))
    assert L.installed()


def test_small_and_other_dtypes_pass_through():
    a = np.arange(10, dtype=np.float32)
    assert L.astype(a, BF16).dtype == BF16                # below MIN_ELEMENTS
    big = np.arange(L.MIN_ELEMENTS * 2, dtype=np.float64)
    np.testing.assert_array_equal(L.astype(big, np.int32), big.astype(np.int32))


# ---- the autocast paths the kernels serve, against torch --------------------------------
def _pair(shape, seed, requires_grad=True, scale=1.0):
    a = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(e, t, rtol=2e-2, atol=2e-2):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.float().detach().numpy(), t.float().detach().numpy(),
                               rtol=rtol, atol=atol)


def test_gelu_and_linear_bf16_under_autocast_match_torch():
    (ex, tx), (ew, tw), (eb, tb) = _pair((4, 40, 64), 0), _pair((96, 64), 1, scale=0.2), \
        _pair((96,), 2)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        eh = EF.gelu(EF.linear(ex, ew, eb))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        th = TF.gelu(TF.linear(tx, tw, tb))
    _close(eh, th)
    g = np.random.default_rng(3).standard_normal(eh.shape).astype(np.float32)
    (eh.float() * ember.tensor(g)).sum().backward()
    (th.float() * torch.tensor(g)).sum().backward()
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        assert e.grad.dtype == ember.float32
        _close(e.grad, t.grad, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_lowp_gelu_rounds_once_like_torch(dt):
    # a 16-bit gelu outside autocast: computed in float32, rounded once (torch's kernel)
    ex, tx = _pair((8, 1024), 4)
    ex16 = ex.detach().to(getattr(ember, dt)).requires_grad_()
    tx16 = tx.detach().to(getattr(torch, dt)).requires_grad_()
    ey, ty = EF.gelu(ex16), TF.gelu(tx16)
    assert ey.dtype == getattr(ember, dt)
    mism = (ey.float().detach().numpy() != ty.float().detach().numpy()).mean()
    assert mism < 0.01          # the same rounding of the same float32 value, nearly always
    ey.float().sum().backward()
    ty.float().sum().backward()
    _close(ex16.grad, tx16.grad, rtol=1e-2, atol=1e-2)


def test_sdpa_bf16_under_autocast_matches_torch():
    (eq, tq), (ek, tk), (ev, tv) = (_pair((2, 4, 32, 16), s) for s in (5, 6, 7))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        eo = EF.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        to = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    _close(eo, to)
    assert eo.grad_fn.name() == "ScaledDotProductAttentionBackward0"
    g = np.random.default_rng(8).standard_normal(eo.shape).astype(np.float32)
    (eo.float() * ember.tensor(g)).sum().backward()
    (to.float() * torch.tensor(g)).sum().backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        assert e.grad.dtype == ember.float32
        _close(e.grad, t.grad, rtol=5e-2, atol=5e-2)


def test_layer_norm_float32_under_autocast_is_float32():
    (ex, tx) = _pair((4, 8, 64), 9)
    with ember.autocast("cpu"):
        ey = EF.layer_norm(ex, (64,))
    with torch.autocast("cpu"):
        ty = TF.layer_norm(tx, (64,))
    assert ey.dtype == ember.float32 and ty.dtype == torch.float32
    _close(ey, ty, rtol=1e-5, atol=1e-5)


# ---- the weight-cast cache ---------------------------------------------------------------
def test_cast_cache_follows_the_version_counter():
    w = ember.randn(4, 4, requires_grad=True)
    x = ember.randn(2, 4)
    with ember.autocast("cpu"):
        y1 = x @ w
        entry = ember.amp.policy.cache.casts[(id(w), ember.bfloat16)]
        x @ w                        # a second use: the same cast
        assert ember.amp.policy.cache.casts[(id(w), ember.bfloat16)] is entry
        with ember.no_grad():
            w.mul_(2)                # in place: the cached cast is stale, cast again
        y2 = x @ w
        assert ember.amp.policy.cache.casts[(id(w), ember.bfloat16)] is not entry
    np.testing.assert_allclose(y2.float().detach().numpy(), 2 * y1.float().detach().numpy(),
                               rtol=2e-2, atol=1e-2)


def test_cache_enabled_default_follows_the_global_setting():
    for enabled in (False, True):
        ember.set_autocast_cache_enabled(enabled)
        torch.set_autocast_cache_enabled(enabled)
        try:
            with ember.autocast("cpu"), torch.autocast("cpu"):
                assert ember.is_autocast_cache_enabled() == torch.is_autocast_cache_enabled() \
                    == enabled
            with ember.autocast("cpu", cache_enabled=not enabled), \
                    torch.autocast("cpu", cache_enabled=not enabled):
                assert ember.is_autocast_cache_enabled() == \
                    torch.is_autocast_cache_enabled() == (not enabled)
            assert ember.is_autocast_cache_enabled() == torch.is_autocast_cache_enabled()
        finally:
            ember.set_autocast_cache_enabled(True)
            torch.set_autocast_cache_enabled(True)


def test_no_cast_of_inputs_already_in_the_autocast_dtype():
    w = ember.randn(4, 4, dtype=ember.bfloat16, requires_grad=True)
    x = ember.randn(2, 4, dtype=ember.bfloat16, requires_grad=True)
    with ember.autocast("cpu"):
        y = x @ w
        assert ember.amp.policy.cache.casts == {}
    assert y.dtype == ember.bfloat16
    # the product's inputs are the leaves themselves: no ToCopy in between
    assert all(f.name().endswith("AccumulateGrad") for f, _ in y.grad_fn.next_functions)
    assert len(y.grad_fn.next_functions) == 2


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_gpt_step_under_autocast_matches_torch(dt):
    # the examples' GPT (linear, gelu, sdpa, layer_norm, the tied head, cross_entropy): loss
    # and every parameter's gradient against torch.autocast on the same weights and tokens
    from benchmarks.train_workloads import example_module
    ge, gt = example_module(ember), example_module(torch)
    ember.manual_seed(0)
    me = ge.GPT(vocab_size=64, block_size=16, n_layer=1, n_head=2, n_embd=32)
    mt = gt.GPT(vocab_size=64, block_size=16, n_layer=1, n_head=2, n_embd=32)
    mt.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in me.state_dict().items()})
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 64, (4, 16)), rng.integers(0, 64, (4, 16))
    with ember.autocast("cpu", dtype=getattr(ember, dt)):
        le_logits, le = me(ember.tensor(x), ember.tensor(y))
    with torch.autocast("cpu", dtype=getattr(torch, dt)):
        lt_logits, lt = mt(torch.tensor(x), torch.tensor(y))
    assert le_logits.dtype == getattr(ember, dt) and lt_logits.dtype == getattr(torch, dt)
    np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-3)
    le.backward()
    lt.backward()
    for (name, pe), (_, pt) in zip(me.named_parameters(), mt.named_parameters()):
        a, b = pe.grad.numpy(), pt.grad.numpy()
        assert pe.grad.dtype == ember.float32
        assert np.abs(a - b).max() <= 0.03 * np.abs(b).max() + 1e-6, name


def test_meta_tensors_stay_meta():
    # a meta array has no data: the kernels must leave it to its own astype
    x = ember.empty(64, 64, device="meta")
    for dt in (ember.bfloat16, ember.float16):
        y = x.to(dt)
        assert y.is_meta and y.dtype == dt
        assert y.float().is_meta and (y @ y).is_meta
