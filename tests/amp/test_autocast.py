"""ember.autocast against torch.autocast("cpu"): the dtype (and, loosely, the value) every op
gives inside a region, for float32/bfloat16/float16/float64 inputs and both autocast dtypes;
nesting, enabled=False regions, the decorator form, thread-locality, and gradients that
flow back to float32 parameters in float32."""
import threading
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

E_DT = {"float32": ember.float32, "bfloat16": ember.bfloat16, "float16": ember.float16,
        "float64": ember.float64}
T_DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
        "float64": torch.float64}


class Lib:
    """Builds the same inputs for torch and ember: r() normal data, u() in (0.05, 0.95),
    eye() a well-conditioned matrix, i() int64 data."""

    def __init__(self, is_torch, dt, seed):
        self.t = is_torch
        self.m = torch if is_torch else ember
        self.F = TF if is_torch else EF
        self.dt = (T_DT if is_torch else E_DT)[dt]
        self.rng = np.random.default_rng(seed)

    def _mk(self, a, dt=None):
        x = torch.from_numpy(a.copy()) if self.t else ember.from_numpy(a.copy())
        return x.to(self.dt if dt is None else dt)

    def r(self, *shape):
        return self._mk(self.rng.standard_normal(shape).astype(np.float32))

    def u(self, *shape):
        return self._mk(self.rng.uniform(0.05, 0.95, shape).astype(np.float32))

    def eye(self, n):
        return self._mk((np.eye(n) * 2 + 0.1 * self.rng.standard_normal((n, n)))
                        .astype(np.float32))

    def spd(self, n):
        a = self.rng.standard_normal((n, n)).astype(np.float32)
        return self._mk(a @ a.T + n * np.eye(n, dtype=np.float32))

    def i(self, values):
        return self._mk(np.array(values, dtype=np.int64), (torch if self.t else ember).int64)

    def sign(self, n):
        return self._mk(np.where(self.rng.standard_normal(n) > 0, 1.0, -1.0).astype(np.float32))


CASES = {
    # lower-precision list
    "matmul": lambda L: L.m.matmul(L.r(2, 3, 4), L.r(4, 5)),
    "matmul_op": lambda L: L.r(3, 4) @ L.r(4),
    "mm": lambda L: L.m.mm(L.r(3, 4), L.r(4, 5)),
    "mm_method": lambda L: L.r(3, 4).mm(L.r(4, 5)),
    "bmm": lambda L: L.m.bmm(L.r(2, 3, 4), L.r(2, 4, 5)),
    "baddbmm": lambda L: L.m.baddbmm(L.r(2, 3, 5), L.r(2, 3, 4), L.r(2, 4, 5), alpha=0.5),
    "addmm": lambda L: L.m.addmm(L.r(5), L.r(3, 4), L.r(4, 5)),
    "addbmm": lambda L: L.m.addbmm(L.r(3, 5), L.r(2, 3, 4), L.r(2, 4, 5)),
    "einsum_mm": lambda L: L.m.einsum("ij,jk->ik", L.r(3, 4), L.r(4, 5)),
    "einsum_dot": lambda L: L.m.einsum("i,i->", L.r(4), L.r(4)),
    "einsum_mv_implicit": lambda L: L.m.einsum("ij,j", L.r(3, 4), L.r(4)),
    "einsum_mul": lambda L: L.m.einsum("ij,ij->ij", L.r(3, 4), L.r(3, 4)),
    "einsum_outer": lambda L: L.m.einsum("i,j->ij", L.r(3), L.r(4)),
    "einsum_one": lambda L: L.m.einsum("ij->j", L.r(3, 4)),
    "tensordot": lambda L: L.m.tensordot(L.r(3, 4), L.r(4, 5), 1),
    "linear": lambda L: L.F.linear(L.r(3, 4), L.r(5, 4), L.r(5)),
    "linear_nobias": lambda L: L.F.linear(L.r(2, 3, 4), L.r(5, 4)),
    "conv1d": lambda L: L.F.conv1d(L.r(1, 2, 5), L.r(3, 2, 2), L.r(3)),
    "conv2d": lambda L: L.F.conv2d(L.r(1, 2, 5, 5), L.r(3, 2, 2, 2), padding=1),
    "conv3d": lambda L: L.F.conv3d(L.r(1, 2, 3, 3, 3), L.r(3, 2, 2, 2, 2)),
    "conv_transpose1d": lambda L: L.F.conv_transpose1d(L.r(1, 2, 5), L.r(2, 3, 2), L.r(3)),
    "conv_transpose2d": lambda L: L.F.conv_transpose2d(L.r(1, 2, 4, 4), L.r(2, 3, 2, 2)),
    "conv_transpose3d": lambda L: L.F.conv_transpose3d(L.r(1, 2, 3, 3, 3), L.r(2, 3, 2, 2, 2)),
    "prelu": lambda L: L.F.prelu(L.r(2, 3), L.r(3)),
    "sdpa": lambda L: L.F.scaled_dot_product_attention(L.r(1, 2, 3, 4), L.r(1, 2, 3, 4),
                                                       L.r(1, 2, 3, 4)),
    "sdpa_mask": lambda L: L.F.scaled_dot_product_attention(L.r(1, 3, 4), L.r(1, 3, 4),
                                                            L.r(1, 3, 4), attn_mask=L.r(3, 3)),
    "linalg_vecdot": lambda L: L.m.linalg.vecdot(L.r(3, 4), L.r(3, 4)),
    "multi_dot": lambda L: L.m.linalg.multi_dot([L.r(3, 4), L.r(4, 4), L.r(4, 2)]),
    "matrix_power": lambda L: L.m.linalg.matrix_power(L.r(3, 3), 2),
    # float32 list
    "avg_pool3d": lambda L: L.F.avg_pool3d(L.r(1, 1, 4, 4, 4), 2),
    "max_pool3d": lambda L: L.F.max_pool3d(L.r(1, 1, 4, 4, 4), 2),
    "adaptive_avg_pool3d": lambda L: L.F.adaptive_avg_pool3d(L.r(1, 1, 4, 4, 4), 2),
    "adaptive_max_pool3d": lambda L: L.F.adaptive_max_pool3d(L.r(1, 1, 4, 4, 4), 2),
    "max_unpool1d": lambda L: L.F.max_unpool1d(*L.F.max_pool1d(L.r(1, 1, 6), 2,
                                                               return_indices=True), 2),
    "max_unpool2d": lambda L: L.F.max_unpool2d(*L.F.max_pool2d(L.r(1, 1, 4, 4), 2,
                                                               return_indices=True), 2),
    "grid_sample": lambda L: L.F.grid_sample(L.r(1, 1, 3, 3), L.u(1, 2, 2, 2) * 2 - 1,
                                             align_corners=False),
    "reflect_pad": lambda L: L.F.pad(L.r(1, 2, 4), (1, 2), mode="reflect"),
    "replicate_pad": lambda L: L.F.pad(L.r(1, 1, 3, 3), (1, 1, 1, 1), mode="replicate"),
    "prod": lambda L: L.m.prod(L.r(5)),
    "prod_dim": lambda L: L.r(2, 3).prod(1),
    "quantile": lambda L: L.m.quantile(L.r(5), 0.3),
    "nanquantile": lambda L: L.m.nanquantile(L.r(2, 5), 0.5, dim=1),
    "cdist": lambda L: L.m.cdist(L.r(3, 4), L.r(2, 4)),
    "trace": lambda L: L.m.trace(L.r(3, 3)),
    "inverse": lambda L: L.m.inverse(L.eye(3)),
    "linalg_inv": lambda L: L.m.linalg.inv(L.eye(3)),
    "pinverse": lambda L: L.m.pinverse(L.eye(3)),
    "cholesky": lambda L: L.m.linalg.cholesky(L.spd(3)),
    "solve": lambda L: L.m.linalg.solve(L.eye(3), L.r(3, 2)),
    "svdvals": lambda L: L.m.linalg.svdvals(L.r(3, 3)),
    "eigvalsh": lambda L: L.m.linalg.eigvalsh(L.spd(3)),
    "qr_r": lambda L: L.m.linalg.qr(L.eye(3))[1].abs(),
    "lstsq": lambda L: L.m.linalg.lstsq(L.eye(3), L.r(3, 2)).solution,
    "matrix_rank": lambda L: L.m.linalg.matrix_rank(L.eye(3)),
    "mse_loss": lambda L: L.F.mse_loss(L.r(4), L.r(4)),
    "l1_loss": lambda L: L.F.l1_loss(L.r(4), L.r(4)),
    "smooth_l1_loss": lambda L: L.F.smooth_l1_loss(L.r(4), L.r(4)),
    "huber_loss": lambda L: L.F.huber_loss(L.r(4), L.r(4)),
    "cross_entropy": lambda L: L.F.cross_entropy(L.r(3, 4), L.i([0, 1, 3])),
    "nll_loss": lambda L: L.F.nll_loss(L.r(3, 4), L.i([0, 1, 2]), weight=L.u(4)),
    "nll_loss2d": lambda L: L.F.nll_loss(L.r(2, 3, 2, 2), L.i([[[0, 1], [2, 0]]] * 2)),
    "binary_cross_entropy": lambda L: L.F.binary_cross_entropy(L.u(4), L.u(4)),
    "bce_with_logits": lambda L: L.F.binary_cross_entropy_with_logits(L.r(4), L.u(4)),
    "kl_div": lambda L: L.F.kl_div(L.r(4), L.u(4), reduction="batchmean"),
    "poisson_nll_loss": lambda L: L.F.poisson_nll_loss(L.r(4), L.u(4)),
    "cosine_embedding_loss": lambda L: L.F.cosine_embedding_loss(L.r(3, 4), L.r(3, 4), L.sign(3)),
    "margin_ranking_loss": lambda L: L.F.margin_ranking_loss(L.r(4), L.r(4), L.sign(4)),
    "hinge_embedding_loss": lambda L: L.F.hinge_embedding_loss(L.r(4), L.sign(4)),
    "soft_margin_loss": lambda L: L.F.soft_margin_loss(L.r(4), L.sign(4)),
    "triplet_margin_loss": lambda L: L.F.triplet_margin_loss(L.r(3, 4), L.r(3, 4), L.r(3, 4)),
    "multi_margin_loss": lambda L: L.F.multi_margin_loss(L.r(3, 4), L.i([0, 1, 2])),
    "multilabel_margin_loss": lambda L: L.F.multilabel_margin_loss(
        L.r(3, 4), L.i([[0, 1, -1, 0]] * 3)),
    "ctc_loss": lambda L: L.F.ctc_loss(L.F.log_softmax(L.r(5, 1, 3), 2), L.i([[1, 2]]), L.i([5]),
                                       L.i([2])),
    # neither list: the inputs' own (promoted) dtype
    "mv": lambda L: L.m.mv(L.r(3, 4), L.r(4)),
    "dot": lambda L: L.m.dot(L.r(4), L.r(4)),
    "addmv": lambda L: L.m.addmv(L.r(3), L.r(3, 4), L.r(4)),
    "outer": lambda L: L.m.outer(L.r(3), L.r(4)),
    "avg_pool2d": lambda L: L.F.avg_pool2d(L.r(1, 1, 4, 4), 2),
    "max_pool2d": lambda L: L.F.max_pool2d(L.r(1, 1, 4, 4), 2),
    "constant_pad": lambda L: L.F.pad(L.r(1, 1, 3, 3), (1, 1)),
    "circular_pad": lambda L: L.F.pad(L.r(1, 2, 4), (1, 1), mode="circular"),
    "layer_norm": lambda L: L.F.layer_norm(L.r(3, 4), (4,)),
    "group_norm": lambda L: L.F.group_norm(L.r(2, 4, 3), 2),
    "batch_norm": lambda L: L.F.batch_norm(L.r(3, 4), None, None, training=True),
    "softmax": lambda L: L.F.softmax(L.r(3, 4), 1),
    "log_softmax": lambda L: L.F.log_softmax(L.r(3, 4), 1),
    "gelu": lambda L: L.F.gelu(L.r(4)),
    "sum": lambda L: L.r(3, 4).sum(),
    "cumsum": lambda L: L.r(4).cumsum(0),
    "vector_norm": lambda L: L.m.linalg.vector_norm(L.r(4)),
    "gaussian_nll_loss": lambda L: L.F.gaussian_nll_loss(L.r(4), L.r(4), L.u(4)),
    "multilabel_soft_margin_loss": lambda L: L.F.multilabel_soft_margin_loss(L.r(3, 4),
                                                                             L.u(3, 4)),
    "mixed_add": lambda L: L.r(3) + L.r(3).double(),
}

_TOL = {ember.float32: 1e-4, ember.float64: 1e-6, ember.bfloat16: 6e-2, ember.float16: 5e-3}


def _compare(te, tt):
    if isinstance(tt, (tuple, list)):
        for a, b in zip(te, tt):
            _compare(a, b)
        return
    assert str(te.dtype).split(".")[1] == str(tt.dtype).split(".")[1], (te.dtype, tt.dtype)
    assert tuple(te.shape) == tuple(tt.shape)
    a = te.detach().double().numpy()
    b = tt.detach().double().numpy()
    # low-precision results may round differently (and products are computed from rounded
    # operands), so the tolerance is loose and relative to the result's scale
    tol = 6e-2 if str(tt.dtype) in ("torch.bfloat16", "torch.float16") else 2e-3
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * (1 + np.abs(b).max(initial=0)))


@pytest.mark.parametrize("ac", ["bfloat16", "float16"])
@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_op_dtype_under_autocast(name, dt, ac):
    fn = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.autocast("cpu", dtype=T_DT[ac]):
                tt = fn(Lib(True, dt, 0))
        except (RuntimeError, NotImplementedError) as e:
            with pytest.raises(type(e)):
                with ember.autocast("cpu", dtype=E_DT[ac]):
                    fn(Lib(False, dt, 0))
            return
        with ember.autocast("cpu", dtype=E_DT[ac]):
            te = fn(Lib(False, dt, 0))
    _compare(te, tt)


def _mm_dtype(mod, a, b):
    return str(mod.mm(a, b).dtype).split(".")[1]


def test_state_nesting_and_disabled_regions():
    a, b = ember.ones(2, 2), ember.ones(2, 2)
    ta, tb = torch.ones(2, 2), torch.ones(2, 2)
    seen_e, seen_t = [], []
    for mod, x, y, seen in ((ember, a, b, seen_e), (torch, ta, tb, seen_t)):
        seen.append((mod.is_autocast_enabled("cpu"), _mm_dtype(mod, x, y)))
        with mod.autocast("cpu"):
            seen.append((mod.is_autocast_enabled("cpu"), mod.is_autocast_enabled(),
                         str(mod.get_autocast_dtype("cpu")).split(".")[1], _mm_dtype(mod, x, y)))
            with mod.autocast("cpu", dtype=mod.float16):
                seen.append((str(mod.get_autocast_dtype("cpu")).split(".")[1],
                             _mm_dtype(mod, x, y)))
                with mod.autocast("cpu", enabled=False):
                    seen.append((mod.is_autocast_enabled("cpu"), _mm_dtype(mod, x, y)))
                seen.append((mod.is_autocast_enabled("cpu"), _mm_dtype(mod, x, y)))
            seen.append((str(mod.get_autocast_dtype("cpu")).split(".")[1], _mm_dtype(mod, x, y)))
        seen.append((mod.is_autocast_enabled("cpu"), _mm_dtype(mod, x, y)))
    assert seen_e == seen_t


def test_state_restored_after_exception():
    with pytest.raises(ValueError):
        with ember.autocast("cpu"):
            raise ValueError("boom")
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32


def test_decorator_form():
    def make(mod):
        @mod.autocast("cpu", dtype=mod.float16)
        def f(x):
            return mod.mm(x, x), mod.is_autocast_enabled("cpu")
        return f
    re, rt = make(ember)(ember.ones(2, 2)), make(torch)(torch.ones(2, 2))
    assert str(re[0].dtype).split(".")[1] == str(rt[0].dtype).split(".")[1] == "float16"
    assert re[1] == rt[1] is True
    assert ember.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is False
    # ember.amp.autocast is the same class; the decorator also nests inside a disabled region
    with ember.amp.autocast("cpu", enabled=False):
        assert make(ember)(ember.ones(2, 2))[0].dtype == ember.float16
        assert not ember.is_autocast_enabled("cpu")


def test_unsupported_dtype_and_device_disable_with_warning():
    for mod in (torch, ember):
        with pytest.warns(UserWarning, match="Disabling autocast"):
            with mod.autocast("cpu", dtype=mod.float64):
                assert not mod.is_autocast_enabled("cpu")
                assert mod.mm(mod.ones(2, 2), mod.ones(2, 2)).dtype == mod.float32
        with pytest.warns(UserWarning, match="Disabling autocast"):
            with mod.autocast("cuda"):
                assert not mod.is_autocast_enabled("cuda")
                assert not mod.is_autocast_enabled()
    for mod in (torch, ember):
        with pytest.raises(RuntimeError, match="Expected one of"):
            mod.autocast("xyz")


def test_thread_local():
    results = {}
    started, release = threading.Event(), threading.Event()

    def worker():
        started.set()
        release.wait()
        results["enabled"] = ember.is_autocast_enabled("cpu")
        results["dtype"] = ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    with ember.autocast("cpu"):
        release.set()
        t.join()
        assert ember.is_autocast_enabled("cpu")
    assert results == {"enabled": False, "dtype": ember.float32}


def _models(seed=0):
    rng = np.random.default_rng(seed)
    w1, b1 = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    w2, b2 = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0])
    out = []
    for mod in (ember, torch):
        m = mod.nn.Sequential(mod.nn.Linear(4, 8), mod.nn.ReLU(), mod.nn.Linear(8, 3))
        with mod.no_grad():
            for p, v in zip(m.parameters(), (w1, b1, w2, b2)):
                p.copy_(mod.tensor(v))
        out.append((m, mod.tensor(x), mod.tensor(y)))
    return out


@pytest.mark.parametrize("ac", ["bfloat16", "float16"])
@pytest.mark.parametrize("backward_inside", [False, True])
def test_gradients_flow_back_in_float32(ac, backward_inside):
    (em, ex, ey), (tm, tx, ty) = _models()
    res = []
    for mod, m, x, y, dt in ((ember, em, ex, ey, E_DT[ac]), (torch, tm, tx, ty, T_DT[ac])):
        with mod.autocast("cpu", dtype=dt):
            logits = m(x)
            loss = mod.nn.functional.cross_entropy(logits, y)
            if backward_inside:
                loss.backward()
        if not backward_inside:
            loss.backward()
        res.append((logits, loss, [p.grad for p in m.parameters()]))
    (le, lossE, ge), (lt, lossT, gt) = res
    _compare(le, lt)
    _compare(lossE, lossT)
    for a, b in zip(ge, gt):
        assert a.dtype == ember.float32 and b.dtype == torch.float32
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0.1, atol=0.05)


def test_weight_cast_cache_and_input_grads():
    # the same parameter used twice in one region is cast once (cached), and the cast is
    # dropped when the region ends; gradients of the input keep its dtype
    w = ember.randn(4, 4, requires_grad=True)
    x = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    x32 = ember.randn(2, 4, requires_grad=True)
    with ember.autocast("cpu"):
        y1, y2 = x32 @ w, (x32 * 2) @ w
        assert y1.dtype == y2.dtype == ember.bfloat16
        assert len(ember.amp.policy.cache.casts) == 2   # w and x32 (leaves needing grad)
        z = x @ w.double()                     # float64 is never cast
        assert z.dtype == ember.float64
    assert ember.amp.policy.cache.casts is None
    (y1.float().sum() + y2.float().sum() + z.sum()).backward()
    assert w.grad.dtype == ember.float32 and x32.grad.dtype == ember.float32
    assert x.grad.dtype == ember.float64
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    tx32 = torch.tensor(x32.detach().numpy(), requires_grad=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    with torch.autocast("cpu"):
        t1, t2 = tx32 @ tw, (tx32 * 2) @ tw
        tz = tx @ tw.double()
    (t1.float().sum() + t2.float().sum() + tz.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=0.05, atol=0.05)
    np.testing.assert_allclose(x32.grad.numpy(), tx32.grad.numpy(), rtol=0.05, atol=0.05)


MODULES = {
    "Conv2d": (lambda mod: mod.nn.Conv2d(2, 3, 3, padding=1), (1, 2, 5, 5)),
    "Conv2d_reflect": (lambda mod: mod.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
                       (1, 2, 5, 5)),
    "ConvTranspose1d": (lambda mod: mod.nn.ConvTranspose1d(2, 3, 3), (2, 2, 5)),
    "MultiheadAttention": (lambda mod: mod.nn.MultiheadAttention(4, 2), (3, 2, 4)),
    "Sequential": (lambda mod: mod.nn.Sequential(mod.nn.Linear(4, 6), mod.nn.LayerNorm(6),
                                                 mod.nn.GELU(), mod.nn.Linear(6, 2)), (3, 4)),
}


@pytest.mark.parametrize("ac", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(MODULES))
def test_modules_under_autocast(name, ac):
    make, shape = MODULES[name]
    em, tm = make(ember), make(torch)
    with torch.no_grad(), ember.no_grad():
        for pe, pt in zip(em.parameters(), tm.parameters()):
            pe.copy_(ember.tensor(pt.detach().numpy()))
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with ember.autocast("cpu", dtype=E_DT[ac]):
        oe = em(xe, xe, xe)[0] if name == "MultiheadAttention" else em(xe)
    with torch.autocast("cpu", dtype=T_DT[ac]):
        ot = tm(xt, xt, xt)[0] if name == "MultiheadAttention" else tm(xt)
    _compare(oe, ot)
    oe.float().sum().backward()
    ot.float().sum().backward()
    for pe, pt in zip(list(em.parameters()) + [xe], list(tm.parameters()) + [xt]):
        assert pe.grad.dtype == ember.float32 and pt.grad.dtype == torch.float32
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=0.1,
                                   atol=0.1 * (1 + np.abs(pt.grad.numpy()).max()))


from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def _matmul_operands(draw):
    n, k, m = (draw(st.integers(0, 4)) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (1, 3), (0,)]))
    bb = draw(st.sampled_from([batch, batch[1:], ()]))
    a_t = draw(st.booleans())    # a transposed (non-contiguous) first operand
    dts = draw(st.sampled_from([("float32", "float32"), ("float32", "bfloat16"),
                                ("float16", "float32"), ("float64", "float64")]))
    return batch + (n, k), bb + (k, m), a_t, dts, draw(st.sampled_from(["bfloat16", "float16"]))


@settings(max_examples=40, deadline=None)
@given(_matmul_operands())
def test_matmul_shapes_strides_dtypes(case):
    sa, sb, a_t, (da, db), ac = case
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa[:-2] + sa[:-3:-1] if a_t else sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    res = []
    for mod, dts in ((ember, E_DT), (torch, T_DT)):
        x = mod.tensor(a).to(dts[da])
        x = x.transpose(-1, -2) if a_t else x
        y = mod.tensor(b).to(dts[db])
        x.requires_grad_(True)
        with mod.autocast("cpu", dtype=dts[ac]):
            try:
                out = x @ y
            except RuntimeError as e:
                res.append(type(e))
                continue
        out.float().sum().backward()
        res.append((out, x.grad))
    if not isinstance(res[1], tuple):
        assert res[0] is res[1]
        return
    _compare(res[0][0], res[1][0])
    _compare(res[0][1], res[1][1])
