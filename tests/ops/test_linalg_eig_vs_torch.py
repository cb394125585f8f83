"""ember.linalg.eig / eigvals against torch.linalg.eig / eigvals (ember/ops/linalg_eig.py):
values (eigenvalues sorted, since LAPACK builds may order them differently), the
eigen-equation A V = V diag(L), unit-norm eigenvectors equal to torch's up to a phase,
dtypes, shapes (batches, empty batches, 1x1), strides, out=, meta tensors, autocast, torch's
errors (types and messages), and the gradients of phase-invariant losses (gradcheck, and
equal to torch's), the phase check of the backward, and double backward."""
import numpy as np
import pytest
import torch

import ember
import ember.autograd.forward_ad as efw

DTYPES = ["float32", "float64", "complex64", "complex128"]
RESULT = {"float32": "complex64", "float64": "complex128", "complex64": "complex64",
          "complex128": "complex128"}
TOL = {"complex64": dict(rtol=1e-4, atol=1e-4), "complex128": dict(rtol=1e-9, atol=1e-9)}


def draw(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.uniform(-2, 2, shape)
    return a.astype(dtype)


def both(a, requires_grad=False):
    e, t = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


def order(w):
    """Per matrix, the permutation sorting eigenvalues by (real, imag), rounded."""
    w = np.asarray(w)
    flat = w.reshape(-1, w.shape[-1]) if w.size else w.reshape(0, max(w.shape[-1], 0))
    idx = [np.lexsort((np.round(x.imag, 4), np.round(x.real, 4))) for x in flat]
    return np.array(idx, np.int64).reshape(w.shape)


def npy(t):
    return t.detach().resolve_conj().numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 3, 3), (1, 1), (0, 3, 3),
                                   (2, 0, 0), (5, 5)])
def test_eig_matches_torch(dtype, shape):
    a = draw(shape, dtype, seed=len(shape) * 7 + shape[-1])
    e, t = both(a)
    L, V = ember.linalg.eig(e)
    tL, tV = torch.linalg.eig(t)
    assert str(L.dtype) == str(V.dtype) == "ember." + RESULT[dtype]
    assert str(tL.dtype) == "torch." + RESULT[dtype]
    assert tuple(L.shape) == tuple(tL.shape) and tuple(V.shape) == tuple(tV.shape)
    assert L.stride() == tL.stride()
    if tV.numel():
        assert V.stride() == tV.stride()
    l, v, tl, tv = npy(L), npy(V), npy(tL), npy(tV)
    tol = TOL[RESULT[dtype]]
    i, ti = order(l), order(tl)
    np.testing.assert_allclose(np.take_along_axis(l, i, -1), np.take_along_axis(tl, ti, -1),
                               **tol)
    if not v.size:
        return
    # the eigen-equation and unit-norm columns
    ad = a.astype(np.complex128)
    np.testing.assert_allclose(ad @ v, v * l[..., None, :], rtol=0, atol=50 * tol["atol"])
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, **tol)
    # equal to torch's eigenvectors up to a phase: |<v, v_torch>| = 1, pairing by eigenvalue
    vs = np.take_along_axis(v, np.broadcast_to(i[..., None, :], v.shape), -1)
    tvs = np.take_along_axis(tv, np.broadcast_to(ti[..., None, :], tv.shape), -1)
    overlap = np.abs((vs.conj() * tvs).sum(-2))
    np.testing.assert_allclose(overlap, 1, rtol=0, atol=1e-3 if dtype.endswith("32")
                               or dtype == "complex64" else 1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigvals_matches_torch_and_eig(dtype):
    a = draw((3, 4, 4), dtype, seed=3)
    e, t = both(a)
    w, tw = ember.linalg.eigvals(e), torch.linalg.eigvals(t)
    assert str(w.dtype) == "ember." + RESULT[dtype] and tuple(w.shape) == tuple(tw.shape)
    l, tl = npy(w), npy(tw)
    np.testing.assert_allclose(np.take_along_axis(l, order(l), -1),
                               np.take_along_axis(tl, order(tl), -1), **TOL[RESULT[dtype]])
    # eigvals is eig's eigenvalues, in the same order
    np.testing.assert_allclose(l, npy(ember.linalg.eig(e).eigenvalues), rtol=1e-5, atol=1e-5)


def test_real_matrix_conjugate_pairs_and_named_fields():
    a = np.array([[0.0, -2.0, 0.5], [2.0, 0.0, 0.0], [0.0, 0.0, 1.5]])
    r = ember.linalg.eig(ember.from_numpy(a))
    tr = torch.linalg.eig(torch.from_numpy(a))
    assert type(r).__name__ == type(tr).__name__ == "linalg_eig"
    assert r.eigenvalues is r[0] and r.eigenvectors is r[1] and len(r) == len(tr) == 2
    l, tl = npy(r.eigenvalues), npy(tr.eigenvalues)
    np.testing.assert_allclose(np.sort_complex(l), np.sort_complex(tl), atol=1e-12)
    s = np.sort_complex(l)
    assert s[0] == np.conj(s[1]) and s[0].imag != 0 and s[2].imag == 0


ERROR_INPUTS = {
    "non-square": lambda lib: lib.ones(2, 3),
    "batched non-square": lambda lib: lib.ones(4, 2, 3, dtype=lib.float64),
    "1-d": lambda lib: lib.ones(3),
    "0-d": lambda lib: lib.tensor(1.0),
    "int64": lambda lib: lib.ones(2, 2, dtype=lib.int64),
    "int64 1-d": lambda lib: lib.ones(3, dtype=lib.int64),
    "int32": lambda lib: lib.ones(2, 2, dtype=lib.int32),
    "uint8": lambda lib: lib.ones(2, 2, dtype=lib.uint8),
    "bool": lambda lib: lib.ones(2, 2, dtype=lib.bool),
    "float16": lambda lib: lib.ones(2, 2, dtype=lib.float16),
    "bfloat16": lambda lib: lib.ones(2, 2, dtype=lib.bfloat16),
    "float16 non-square": lambda lib: lib.ones(2, 3, dtype=lib.float16),
    "list": lambda lib: [[1.0, 0.0], [0.0, 1.0]],
}
NONFINITE = {
    "nan": lambda lib: lib.tensor([[1.0, float("nan")], [0.0, 1.0]]),
    "inf": lambda lib: lib.tensor([[1.0, float("inf")], [0.0, 1.0]], dtype=lib.float64),
    "nan in one batch element": lambda lib: lib.tensor(
        [[[1.0, 0.0], [0.0, 1.0]], [[float("nan"), 0.0], [0.0, 1.0]]]),
    "complex nan": lambda lib: lib.tensor([[1.0, complex(0, float("nan"))], [0.0, 1.0]]),
}


def raises(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared with torch's
        return exc
    return None


@pytest.mark.filterwarnings("ignore::UserWarning")   # torch: ComplexHalf is experimental
@pytest.mark.parametrize("fname", ["eig", "eigvals"])
@pytest.mark.parametrize("case", sorted(ERROR_INPUTS) + sorted(NONFINITE))
def test_errors_match_torch(fname, case):
    make = ERROR_INPUTS.get(case) or NONFINITE[case]
    te = raises(lambda: getattr(torch.linalg, fname)(make(torch)))
    ee = raises(lambda: getattr(ember.linalg, fname)(make(ember)))
    if te is None:      # eigvals takes infs and NaNs (LAPACK's result is then undefined)
        assert case in NONFINITE and fname == "eigvals" and ee is None
        t, e = torch.linalg.eigvals(make(torch)), ember.linalg.eigvals(make(ember))
        assert tuple(t.shape) == tuple(e.shape)
        assert str(t.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
        return
    assert ee is not None, f"torch raised {te!r}, ember returned"
    assert type(ee).__name__ == type(te).__name__ or (
        isinstance(te, RuntimeError) and type(ee) is RuntimeError), (ee, te)
    assert isinstance(ee, (NotImplementedError,)) == isinstance(te, NotImplementedError)
    assert str(ee) == str(te).replace("torch", "ember") or str(ee) == str(te), (ee, te)


def test_eigvals_requiring_grad_checks_nan_as_eig():
    """torch's eigvals of a tensor that requires grad is eig's eigenvalues: eig's check."""
    a = [[1.0, float("nan")], [0.0, 1.0]]
    te = raises(lambda: torch.linalg.eigvals(torch.tensor(a, requires_grad=True)))
    ee = raises(lambda: ember.linalg.eigvals(ember.tensor(a, requires_grad=True)))
    assert isinstance(ee, RuntimeError) and str(ee) == str(te)


def test_out():
    a = draw((2, 3, 3), "float32", seed=1)
    e, t = both(a)
    w, v = ember.empty(0, dtype=ember.complex64), ember.empty(0, dtype=ember.complex64)
    r = ember.linalg.eig(e, out=(w, v))
    assert r.eigenvalues is w and r.eigenvectors is v and tuple(v.shape) == (2, 3, 3)
    np.testing.assert_allclose(npy(w), npy(ember.linalg.eig(e).eigenvalues))
    w128 = ember.empty(0, dtype=ember.complex128)
    assert ember.linalg.eigvals(e, out=w128) is w128 and tuple(w128.shape) == (2, 3)
    for fname, what in (("eig", "eigenvalues"), ("eig", "eigenvectors"),
                        ("eigvals", "eigenvalues")):
        def outs(lib):
            good, bad = lib.empty(0, dtype=lib.complex64), lib.empty(0, dtype=lib.float32)
            if fname == "eigvals":
                return bad
            return (bad, good) if what == "eigenvalues" else (good, bad)
        te = raises(lambda: getattr(torch.linalg, fname)(t, out=outs(torch)))
        ee = raises(lambda: getattr(ember.linalg, fname)(e, out=outs(ember)))
        assert isinstance(ee, RuntimeError) and str(ee) == str(te), (ee, te)


def test_meta():
    for shape in ((3, 3), (2, 4, 4), (0, 2, 2)):
        for dt in ("float32", "float64", "complex64"):
            m = ember.empty(shape, dtype=getattr(ember, dt), device="meta")
            tm = torch.empty(shape, dtype=getattr(torch, dt), device="meta")
            L, V = ember.linalg.eig(m)
            tL, tV = torch.linalg.eig(tm)
            w, tw = ember.linalg.eigvals(m), torch.linalg.eigvals(tm)
            for x, y in ((L, tL), (V, tV), (w, tw)):
                assert x.is_meta and tuple(x.shape) == tuple(y.shape)
                assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
            # strides: those of the cpu result (torch's meta kernel lays V out row-major,
            # its cpu kernel column-major, as LAPACK; ember's meta follows the cpu result)
            cpu = ember.linalg.eig(ember.zeros(shape, dtype=getattr(ember, dt)))
            assert V.stride() == cpu.eigenvectors.stride() and L.stride() == cpu[0].stride()
    with pytest.raises(RuntimeError, match="square matrices"):
        ember.linalg.eig(ember.empty(2, 3, device="meta"))


def test_autocast_runs_in_float32():
    a = draw((3, 3), "float32", seed=5)
    e, t = both(a)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tr = torch.linalg.eig(t.bfloat16())
    with ember.autocast("cpu", dtype=ember.bfloat16):
        er = ember.linalg.eig(e.bfloat16())
    assert str(er.eigenvalues.dtype).split(".")[-1] == str(tr.eigenvalues.dtype).split(".")[-1]


# ---- gradients ---------------------------------------------------------------------------
def phase_free_loss(lib, c):
    """A loss of (L, V) invariant to the eigenvectors' phases and to the eigenpairs' order:
    sums over eigenpairs of functions of L_i and |V_ji|."""
    def loss(A):
        L, V = lib.linalg.eig(A)
        mod = V.abs()
        return ((mod * mod) * c * L.real.unsqueeze(-2)).sum() + (L * L).real.sum() + \
            (mod ** 3).sum() + (L.imag * L.imag).sum()
    return loss


def eigvals_loss(lib):
    def loss(A):
        w = lib.linalg.eigvals(A)
        return (w * w * w).real.sum() + (w.imag * w.imag).sum() + w.abs().sum()
    return loss


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("which", ["eig", "eigvals"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)])
def test_gradients_match_torch(dtype, which, shape):
    a = draw(shape, dtype, seed=11 + shape[-1])
    c = draw(shape[-1:] + (1,), "float64", seed=2)
    e, t = both(a, requires_grad=True)
    ce, ct = ember.from_numpy(c.copy()), torch.from_numpy(c.copy())
    fe = phase_free_loss(ember, ce) if which == "eig" else eigvals_loss(ember)
    ft = phase_free_loss(torch, ct) if which == "eig" else eigvals_loss(torch)
    (ge,) = ember.autograd.grad(fe(e), e)
    (gt,) = torch.autograd.grad(ft(t), t)
    assert str(ge.dtype).split(".")[-1] == dtype
    np.testing.assert_allclose(npy(ge), gt.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gradcheck_phase_invariant(dtype):
    a = draw((3, 3), dtype, seed=4)
    c = ember.from_numpy(draw((3, 1), "float64", seed=6))
    x = ember.from_numpy(a).requires_grad_(True)
    assert ember.autograd.gradcheck(phase_free_loss(ember, c), (x,))
    assert ember.autograd.gradcheck(eigvals_loss(ember), (x,))
    # the eigenvalues themselves (a real view of the complex result)
    assert ember.autograd.gradcheck(lambda A: ember.view_as_real(ember.linalg.eigvals(A)),
                                    (x,))


ROTATION = np.array([[0.0, -2.0, 0.5], [2.0, 0.0, 0.0], [0.0, 0.0, 1.5]])
SYMMETRIC = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])


@pytest.mark.parametrize("a, raises_error", [
    (ROTATION, True),                       # complex eigenvectors: the loss sees phases
    (draw((3, 3), "complex128", seed=8), True),
    (SYMMETRIC, False)])                    # real eigenvectors: re(V) is phase-free here
def test_phase_dependent_loss_raises_like_torch(a, raises_error):
    e, t = both(a, requires_grad=True)
    te = raises(lambda: torch.linalg.eig(t).eigenvectors.real.sum().backward())
    ee = raises(lambda: ember.linalg.eig(e).eigenvectors.real.sum().backward())
    assert (te is not None) == raises_error
    if raises_error:
        assert isinstance(ee, RuntimeError) and str(ee) == str(te)
    else:   # (the gradient itself depends on the eigenvectors' signs, LAPACK's choice)
        assert ee is None and e.grad is not None


def test_double_backward_matches_torch():
    a = draw((3, 3), "float64", seed=9)
    e, t = both(a, requires_grad=True)
    (ge,) = ember.autograd.grad(eigvals_loss(ember)(e), e, create_graph=True)
    (gt,) = torch.autograd.grad(eigvals_loss(torch)(t), t, create_graph=True)
    (hge,) = ember.autograd.grad((ge * ge).sum(), e)
    (hgt,) = torch.autograd.grad((gt * gt).sum(), t)
    np.testing.assert_allclose(npy(hge), hgt.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_forward_ad_matches_torch(dtype, shape):
    """Tangents equal torch.func.jvp's: eigenvalues' paired by sorted eigenvalue, and the
    eigenvectors' once each column's phase is aligned with torch's (V -> V D gives
    dV -> dV D for constant phases D, so the comparison is exact)."""
    a, t = draw(shape, dtype, seed=21), draw(shape, dtype, seed=22)
    (tL, tV), (dtL, dtV) = torch.func.jvp(torch.linalg.eig, (torch.from_numpy(a),),
                                          (torch.from_numpy(t),))
    tw, dtw = torch.func.jvp(torch.linalg.eigvals, (torch.from_numpy(a),),
                             (torch.from_numpy(t),))
    with efw.dual_level():
        d = efw.make_dual(ember.from_numpy(a.copy()), ember.from_numpy(t.copy()))
        L, V = ember.linalg.eig(d)
        dL, dV = efw.unpack_dual(L).tangent, efw.unpack_dual(V).tangent
        w = ember.linalg.eigvals(d)
        dw = efw.unpack_dual(w).tangent
    assert dL is not None and dV is not None and dw is not None
    assert dV.dtype == V.dtype and tuple(dV.shape) == tuple(V.shape)
    i, ti = order(npy(L)), order(tL.numpy())
    idx, tidx = np.broadcast_to(i[..., None, :], shape), np.broadcast_to(ti[..., None, :], shape)

    def cols(x, k):
        return np.take_along_axis(x, k, -1)
    for got, want, g_ord, w_ord in ((dL, dtL, i, ti), (dw, dtw, order(npy(w)),
                                                       order(tw.numpy()))):
        np.testing.assert_allclose(cols(npy(got), g_ord), cols(want.numpy(), w_ord),
                                   rtol=1e-8, atol=1e-10)
    v, tv = cols(npy(V), idx), cols(tV.numpy(), tidx)
    phase = (v.conj() * tv).sum(-2)
    phase = phase / np.abs(phase)
    np.testing.assert_allclose(cols(npy(dV), idx) * phase[..., None, :],
                               cols(dtV.numpy(), tidx), rtol=1e-7, atol=1e-9)
