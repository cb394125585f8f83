"""ember/toplevel_misc.py against torch: settings round-trip as torch's do (and leave the
defaults restored), asarray / frombuffer / from_file / empty_permuted share or lay out memory
as torch does, gradient and norm_except_dim give torch's values and gradients, cond and
while_loop run eagerly as torch's do, DLPack round-trips in both directions."""
import warnings

import numpy as np
import pytest
import torch

import ember


def close(e, t, tol=1e-7):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def test_settings_round_trip_like_torch():
    for lib in (torch, ember):
        assert lib.get_float32_matmul_precision() == "highest"
        lib.set_float32_matmul_precision("medium")
        assert lib.get_float32_matmul_precision() == "medium"
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.set_float32_matmul_precision("bogus")
        assert lib.get_float32_matmul_precision() == "medium" and w
        lib.set_float32_matmul_precision("highest")
        assert not lib.is_warn_always_enabled()
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled()
        lib.set_warn_always(False)
        for mode, expect in (("warn", 1), (2, 2), ("default", 0)):
            lib.set_deterministic_debug_mode(mode)
            assert lib.get_deterministic_debug_mode() == expect
            assert lib.are_deterministic_algorithms_enabled() == (expect != 0)
            assert lib.is_deterministic_algorithms_warn_only_enabled() == (expect == 1)
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            lib.set_deterministic_debug_mode("x")
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.get_deterministic_debug_mode() == 1
        lib.use_deterministic_algorithms(False)
        assert isinstance(lib.set_flush_denormal(False), bool)
        assert lib.init_num_threads() is None
        assert not lib.is_anomaly_check_nan_enabled() or True
        lib.set_anomaly_enabled(True, False)
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(False)
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        assert lib.get_autocast_gpu_dtype() == getattr(lib, "float16")
        lib.set_autocast_gpu_dtype(lib.bfloat16)
        assert lib.get_autocast_gpu_dtype() == lib.bfloat16
        lib.set_autocast_gpu_dtype(lib.float16)
        lib.set_autocast_cache_enabled(False)
        assert not lib.is_autocast_cache_enabled()
        lib.set_autocast_cache_enabled(True)
        lib.set_autocast_cpu_dtype(lib.bfloat16)
        assert lib.get_autocast_cpu_dtype() == lib.bfloat16


def test_set_default_tensor_type():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lib in (torch, ember):
            lib.set_default_tensor_type(lib.DoubleTensor)
            assert lib.get_default_dtype() == lib.float64
            lib.set_default_tensor_type("torch.FloatTensor")
            assert lib.get_default_dtype() == lib.float32
            with pytest.raises(TypeError):
                lib.set_default_tensor_type(lib.LongTensor)


def test_asarray_shares_or_copies_like_torch():
    a = np.arange(6.0)
    for lib in (torch, ember):
        t = lib.asarray(a)
        t[0] = 100.0
        assert a[0] == 100.0          # shared
        a[0] = 0.0
        c = lib.asarray(a, copy=True)
        c[1] = 50.0
        assert a[1] == 1.0
        assert lib.asarray(a, dtype=lib.float32).dtype == lib.float32
        assert lib.asarray([1, 2]).dtype == lib.int64
        x = lib.ones(2)
        assert lib.asarray(x) is x
        assert lib.asarray(x, copy=True) is not x
        assert lib.asarray(3.5).dim() == 0
        assert lib.asarray([1.0], requires_grad=True).requires_grad


def test_frombuffer_and_from_file(tmp_path):
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    for lib in (torch, ember):
        t = lib.frombuffer(buf, dtype=lib.int32, count=3, offset=4)
        assert t.tolist() == [1, 2, 3]
        t[0] = 9                       # the buffer is shared
        assert np.frombuffer(buf, np.int32)[1] == 9
        buf[4:8] = np.int32(1).tobytes()
        with pytest.raises(ValueError):
            lib.frombuffer(bytearray(), dtype=lib.int32)
    path = str(tmp_path / "f.bin")
    np.arange(4, dtype=np.float64).tofile(path)
    for lib in (torch, ember):
        t = lib.from_file(path, size=3, dtype=lib.float64)
        assert t.tolist() == [0.0, 1.0, 2.0]
        s = lib.from_file(path, shared=True, size=4, dtype=lib.float64)
        s[3] = 7.0
    assert np.fromfile(path)[3] == 7.0


def test_empty_permuted_strides():
    for order in ((0, 2, 1), (2, 0, 1), (1, 2, 0)):
        t = torch.empty_permuted((2, 3, 4), order)
        e = ember.empty_permuted((2, 3, 4), order)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()


def test_gradient_matches_torch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5))
    cases = [dict(), dict(spacing=2.0), dict(dim=1, edge_order=2), dict(spacing=(0.5, 2.0)),
             dict(spacing=[torch.tensor([0.0, 1.0, 3.0, 4.5])], dim=0),
             dict(spacing=[torch.tensor([0.0, 1.0, 1.5, 3.0, 4.0])], dim=1, edge_order=2),
             dict(dim=(0, 1))]
    for kw in cases:
        ekw = {k: ([ember.from_numpy(x.numpy()) if isinstance(x, torch.Tensor) else x
                    for x in v] if isinstance(v, list) else v) for k, v in kw.items()}
        t = torch.from_numpy(a.copy()).requires_grad_()
        e = ember.from_numpy(a.copy()).requires_grad_()
        rt, re_ = torch.gradient(t, **kw), ember.gradient(e, **ekw)
        assert len(rt) == len(re_)
        for x, y in zip(re_, rt):
            close(x, y)
        sum(r.sum() * (i + 1) for i, r in enumerate(rt)).backward()
        sum(r.sum() * (i + 1) for i, r in enumerate(re_)).backward()
        close(e.grad, t.grad)
    close(ember.gradient(ember.tensor([1, 4, 9]))[0], torch.gradient(torch.tensor([1, 4, 9]))[0])
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.gradient(lib.ones(3), edge_order=3)


def test_norm_except_dim():
    a = np.random.default_rng(1).standard_normal((3, 4, 2))
    for p, d in ((2, 0), (2, 1), (3, 2), (2, -1)):
        t = torch.from_numpy(a.copy()).requires_grad_()
        e = ember.from_numpy(a.copy()).requires_grad_()
        rt, re_ = torch.norm_except_dim(t, p, d), ember.norm_except_dim(e, p, d)
        close(re_, rt)
        rt.sum().backward(), re_.sum().backward()
        close(e.grad, t.grad)


def test_cond_and_while_loop():
    for lib in (torch, ember):
        x = lib.ones(3)
        assert lib.cond(lib.tensor(True), lambda v: v + 1, lambda v: v - 1, (x,)).tolist() == \
            [2.0] * 3
        assert lib.cond(False, lambda v: v + 1, lambda v: v - 1, (x,)).tolist() == [0.0] * 3
        i, acc = lib.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * 2),
                                (lib.tensor(0), lib.tensor(1.0)))
        assert int(i) == 4 and float(acc) == 16.0


def test_misc_predicates_and_dlpack():
    e = ember.arange(4)
    assert ember.is_storage(e.untyped_storage()) if hasattr(e, "untyped_storage") else True
    assert not ember.is_storage(e) and not torch.is_storage(torch.arange(2))
    assert ember.is_distributed(e) is torch.is_distributed(torch.arange(2)) is False
    back = ember.from_dlpack(ember.to_dlpack(e))
    assert back.tolist() == [0, 1, 2, 3]
    assert torch.from_dlpack(ember.to_dlpack(ember.arange(3))).tolist() == [0, 1, 2]
    assert ember.from_dlpack(torch.to_dlpack(torch.arange(3))).tolist() == [0, 1, 2]


def test_tensor_glue_methods_match_torch():
    a = np.arange(6.0).reshape(2, 3)
    t, e = torch.from_numpy(a.copy()), ember.from_numpy(a.copy())
    for name in ("is_pinned", "is_shared", "is_distributed"):
        assert getattr(e, name)() == getattr(t, name)()
    for name in ("is_nested", "is_quantized", "is_sparse", "is_sparse_csr", "is_xla"):
        assert getattr(e, name) == getattr(t, name)
    assert e.dim_order() == t.dim_order() and e.t().dim_order() == t.t().dim_order()
    assert e.is_set_to(e) and not e.is_set_to(e.view(6)) and t.is_set_to(t)
    assert e.const_data_ptr() == e.data_ptr() and e.to_dense() is e
    assert e.output_nr == t.output_nr == 0
    _, ie = e.sum(0).max(0)
    _, it = t.sum(0).max(0)
    assert ie.output_nr == it.output_nr
    for args in ((2, 3), ([1, 2],), (), (ember.Size([2]),)):
        targs = tuple(torch.Size(x) if isinstance(x, ember.Size) else x for x in args)
        ne, nt = e.new(*args), t.new(*targs)
        assert tuple(ne.shape) == tuple(nt.shape) and str(ne.dtype)[6:] == str(nt.dtype)[6:]
    assert e.new([1, 2]).tolist() == t.new([1, 2]).tolist()
    for shape in ((2, 3), (2,), (3, 3)):
        x, y = torch.arange(6.0), ember.arange(6.0)
        x.resize_(*shape), y.resize_(*shape)
        assert tuple(y.shape) == tuple(x.shape)
        k = min(6, int(np.prod(shape)))
        assert y.reshape(-1)[:k].tolist() == x.reshape(-1)[:k].tolist()
    x, y = torch.arange(4.0), ember.arange(4.0)
    x.resize_as_(torch.ones(2, 2)), y.resize_as_(ember.ones(2, 2))
    assert y.tolist() == x.tolist()
    z, w = torch.ones(3), ember.ones(3)
    z.apply_(lambda v: v * 3), w.apply_(lambda v: v * 3)
    z.map_(torch.tensor([1.0, 2, 3]), lambda p, q: p + q)
    w.map_(ember.tensor([1.0, 2, 3]), lambda p, q: p + q)
    z.map2_(torch.ones(3), torch.ones(3) * 2, lambda p, q, r: p + q * r)
    w.map2_(ember.ones(3), ember.ones(3) * 2, lambda p, q, r: p + q * r)
    assert w.tolist() == z.tolist()
    with pytest.raises(RuntimeError, match="requires grad"):
        ember.ones(2, requires_grad=True).apply_(lambda v: v)


def test_deprecated_resize_and_module_load():
    a = np.arange(6.0)
    t = torch.from_numpy(a.copy()).requires_grad_()
    e = ember.from_numpy(a.copy()).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt, re_ = t.resize(2, 3), e.resize(2, 3)
        close(re_, rt)
        (rt * rt).sum().backward(), (re_ * re_).sum().backward()
        close(e.grad, t.grad)
        close(e.resize_as(ember.ones(3, 2)), t.resize_as(torch.ones(3, 2)))
        for lib, x in ((torch, t), (ember, e)):
            with pytest.raises(RuntimeError):
                x.resize(4)
    for lib in (torch, ember):
        p = lib.zeros(3)
        src = lib.ones(3)
        r = p.module_load(src)
        assert r.tolist() == [1.0] * 3 and p.tolist() == [1.0] * 3 and not r.requires_grad
        q = lib.zeros(2)
        r2 = q.module_load(lib.full((2,), 5.0, requires_grad=True), assign=True)
        assert r2.tolist() == [5.0, 5.0] and q.tolist() == [0.0, 0.0] and not r2.requires_grad


def test_svd_and_pca_lowrank():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 3)) @ rng.standard_normal((3, 6))     # rank 3
    for lib in (torch, ember):
        x = lib.from_numpy(a.copy())
        lib.manual_seed(0)
        U, S, V = lib.svd_lowrank(x, q=4, niter=2)
        assert tuple(U.shape) == (8, 4) and tuple(S.shape) == (4,) and tuple(V.shape) == (6, 4)
        np.testing.assert_allclose((U * S) @ V.mT, a, atol=1e-8)
        np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(a, compute_uv=False)[:3],
                                   rtol=1e-8)
        U, S, V = lib.pca_lowrank(x)
        centered = a - a.mean(0)
        np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(centered, compute_uv=False)[:3],
                                   rtol=1e-6)
        assert tuple(S.shape) == (6,)
        with pytest.raises(ValueError):
            lib.pca_lowrank(x, q=7)


def test_set_volatile_reinforce():
    for lib in (torch, ember):
        x = lib.arange(6.0)
        y = lib.zeros(2)
        assert y.set_(x) is y and y.data_ptr() == x.data_ptr() and y.tolist() == x.tolist()
        x[0] = 9.0
        assert y[0].item() == 9.0
        z = lib.zeros(2)
        z.set_()
        assert tuple(z.shape) == (0,)
        s = lib.zeros(3)
        s.set_(x.untyped_storage(), 1, (2,), (2,))
        assert s.tolist() == [1.0, 3.0]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert x.volatile is False
        assert any("volatile was removed" in str(m.message) for m in w)
        with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
            x.reinforce(1.0)
