"""Linear algebra differential against torch: the matmul family, einsum, tensordot, kron,
trace, diag*, cross, cdist, and ember.linalg (inv, solve, det, slogdet, cholesky, qr, svd,
eigh, lstsq, pinv, matrix_power, matrix_rank, norms). Values and gradients are compared with
torch's on contiguous and non-contiguous inputs; every differentiable op is gradchecked in
float64; bad inputs must raise torch's exception type with the gist of its message."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from _oracle import same_error, layout as _layout  # noqa: E402
from ember.autograd import gradcheck, gradgradcheck

SETTINGS = settings(max_examples=20, deadline=None)
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9), "int64": (0, 0), "int32": (0, 0)}


# ---- helpers (local to this file) -----------------------------------------------------------
def _np(shape, dtype, rng):
    if dtype in ("int64", "int32"):
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def make_pair(arrays, layouts=None, grad=True):
    """Leaves for ember and torch built from the same arrays, plus the (possibly strided)
    inputs made from them."""
    layouts = layouts or ["C"] * len(arrays)
    e_leaves, t_leaves, e_in, t_in = [], [], [], []
    for a, lay in zip(arrays, layouts):
        base, fn = _layout(a, lay)
        rg = grad and base.dtype.kind == "f"
        e = ember.tensor(base.copy(), requires_grad=rg)
        t = torch.tensor(base.copy(), requires_grad=rg)
        e_leaves.append(e)
        t_leaves.append(t)
        e_in.append(fn(e))
        t_in.append(fn(t))
    return e_leaves, t_leaves, e_in, t_in


def assert_close(e, t, dtype=None):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            assert_close(a, b)
        return
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert str(e.dtype).replace("ember.", "") == str(t.dtype).replace("torch.", "")
    name = str(t.dtype).replace("torch.", "")
    rtol, atol = TOL.get(name, (1e-2, 1e-2))
    np.testing.assert_allclose(np.asarray(e.detach()._data, dtype=np.float64),
                               t.detach().double().numpy(), rtol=rtol, atol=atol)


def compare(fe, ft, arrays, layouts=None, grad=True, out_map=None):
    """Run fe/ft on the same inputs; compare outputs, then the gradients of a fixed random
    weighting of the floating outputs (out_map picks the differentiable outputs)."""
    el, tl, ei, ti = make_pair(arrays, layouts, grad)
    eo, to = fe(*ei), ft(*ti)
    assert_close(eo, to)
    if not grad or not any(x.requires_grad for x in tl):
        return
    eo = out_map(eo) if out_map else eo
    to = out_map(to) if out_map else to
    eo = eo if isinstance(eo, (tuple, list)) else (eo,)
    to = to if isinstance(to, (tuple, list)) else (to,)
    rng = np.random.default_rng(7)
    le, lt = 0, 0
    for a, b in zip(eo, to):
        if b.dtype.is_floating_point and b.requires_grad:
            w = rng.standard_normal(tuple(b.shape)).astype(str(b.dtype).replace("torch.", ""))
            le = le + (a * ember.tensor(w)).sum()
            lt = lt + (b * torch.tensor(w)).sum()
    if isinstance(lt, int):
        return
    le.backward()
    lt.backward()
    for a, b in zip(el, tl):
        if b.requires_grad:
            assert (a.grad is None) == (b.grad is None)
            if b.grad is not None:
                assert_close(a.grad, b.grad)


def f64(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def leaf(a):
    return ember.tensor(a, requires_grad=True)


layouts = st.sampled_from(["C", "T", "step"])
fdtypes = st.sampled_from(["float32", "float64"])


# ---- matmul family ------------------------------------------------------------------------
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
                 ((0, 2, 3), (3, 1)), ((2, 0), (0, 3))]


@SETTINGS
@given(shapes=st.sampled_from(MATMUL_SHAPES), la=layouts, lb=layouts,
       dtype=st.sampled_from(["float32", "float64", "int64"]), seed=st.integers(0, 99))
def test_matmul_values_and_grads(shapes, la, lb, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = _np(shapes[0], dtype, rng), _np(shapes[1], dtype, rng)
    compare(lambda x, y: x @ y, lambda x, y: x @ y, [a, b], [la, lb])
    compare(ember.matmul, torch.matmul, [a, b], [la, lb])


@SETTINGS
@given(b=st.integers(0, 3), n=st.integers(1, 4), m=st.integers(0, 4), p=st.integers(1, 4),
       la=layouts, lb=layouts, dtype=fdtypes, seed=st.integers(0, 99))
def test_mm_bmm_mv_dot(b, n, m, p, la, lb, dtype, seed):
    rng = np.random.default_rng(seed)
    compare(ember.mm, torch.mm, [_np((n, m), dtype, rng), _np((m, p), dtype, rng)], [la, lb])
    compare(ember.bmm, torch.bmm, [_np((b, n, m), dtype, rng), _np((b, m, p), dtype, rng)],
            [la, lb])
    compare(ember.mv, torch.mv, [_np((n, m), dtype, rng), _np((m,), dtype, rng)], [la, lb])
    compare(ember.dot, torch.dot, [_np((m,), dtype, rng), _np((m,), dtype, rng)], [lb, lb])
    compare(ember.vdot, torch.vdot, [_np((m,), dtype, rng), _np((m,), dtype, rng)])
    compare(ember.outer, torch.outer, [_np((n,), dtype, rng), _np((p,), dtype, rng)])
    compare(ember.ger, torch.ger, [_np((n,), dtype, rng), _np((p,), dtype, rng)])
    compare(lambda x, y: x.bmm(y), lambda x, y: x.bmm(y),
            [_np((b, n, m), dtype, rng), _np((b, m, p), dtype, rng)])


@SETTINGS
@given(n=st.integers(1, 4), m=st.integers(1, 4), p=st.integers(1, 4), b=st.integers(1, 3),
       beta=st.sampled_from([0, 1, 0.5]), alpha=st.sampled_from([1, -2.0]),
       bshape=st.sampled_from(["full", "row", "scalar"]), dtype=fdtypes, seed=st.integers(0, 99))
def test_addmm_family(n, m, p, b, beta, alpha, bshape, dtype, seed):
    rng = np.random.default_rng(seed)
    ish = {"full": (n, p), "row": (p,), "scalar": ()}[bshape]
    kw = dict(beta=beta, alpha=alpha)
    compare(lambda i, x, y: ember.addmm(i, x, y, **kw), lambda i, x, y: torch.addmm(i, x, y, **kw),
            [_np(ish, dtype, rng), _np((n, m), dtype, rng), _np((m, p), dtype, rng)],
            ["C", "T", "step"])
    compare(lambda i, x, y: ember.addmv(i, x, y, **kw), lambda i, x, y: torch.addmv(i, x, y, **kw),
            [_np((n,) if bshape == "full" else (), dtype, rng), _np((n, m), dtype, rng),
             _np((m,), dtype, rng)])
    compare(lambda i, x, y: ember.addbmm(i, x, y, **kw),
            lambda i, x, y: torch.addbmm(i, x, y, **kw),
            [_np(ish, dtype, rng), _np((b, n, m), dtype, rng), _np((b, m, p), dtype, rng)],
            ["C", "step", "T"])
    compare(lambda i, x, y: ember.baddbmm(i, x, y, **kw),
            lambda i, x, y: torch.baddbmm(i, x, y, **kw),
            [_np((b,) + ish if bshape == "full" else ish, dtype, rng), _np((b, n, m), dtype, rng),
             _np((b, m, p), dtype, rng)])
    compare(lambda i, x, y: i.addmm(x, y, **kw), lambda i, x, y: i.addmm(x, y, **kw),
            [_np(ish, dtype, rng), _np((n, m), dtype, rng), _np((m, p), dtype, rng)])


def test_addmm_beta_zero_ignores_nan():
    i = np.full((2, 2), np.nan, np.float32)
    a, b = f64(2, 3).astype(np.float32), f64(3, 2, seed=1).astype(np.float32)
    compare(lambda i, x, y: ember.addmm(i, x, y, beta=0), lambda i, x, y: torch.addmm(i, x, y,
                                                                                    beta=0),
            [i, a, b], grad=False)


def test_matmul_low_precision_and_int():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    for dt in ("float16", "bfloat16"):
        e = ember.tensor(a, dtype=getattr(ember, dt)) @ ember.tensor(b, dtype=getattr(ember, dt))
        t = torch.tensor(a, dtype=getattr(torch, dt)) @ torch.tensor(b, dtype=getattr(torch, dt))
        assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
        np.testing.assert_allclose(e.float()._data, t.float().numpy(), rtol=2e-2, atol=2e-2)
    ai = rng.integers(-3, 3, (3, 4)).astype(np.int32)
    compare(ember.mm, torch.mm, [ai, ai.T.copy()], grad=False)


# ---- einsum ---------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->", [(0, 2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("...ij,...jk", [(5, 1, 2, 3), (4, 3, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    ("ijj,jk->ik", [(2, 3, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum(eq, shapes):
    rng = np.random.default_rng(len(eq))
    arrays = [rng.standard_normal(s) for s in shapes]
    compare(lambda *x: ember.einsum(eq, *x), lambda *x: torch.einsum(eq, *x), arrays,
            ["T" if a.ndim >= 2 else "C" for a in arrays])
    compare(lambda *x: ember.einsum(eq, list(x)), lambda *x: torch.einsum(eq, list(x)), arrays)


@pytest.mark.parametrize("eq,shapes", [c for c in EINSUM_CASES if 0 not in sum(c[1], ())][::2])
def test_einsum_gradcheck(eq, shapes):
    ins = [leaf(f64(*s, seed=k)) for k, s in enumerate(shapes)]
    assert gradcheck(lambda *x: ember.einsum(eq, *x), tuple(ins))


def test_einsum_double_backward():
    a, b = leaf(f64(2, 3)), leaf(f64(3, 3, seed=1))
    assert gradgradcheck(lambda x, y: ember.einsum("ij,jj->ij", x, y), (a, b))


def test_einsum_int():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    for eq in ("ij->j", "ij->ji", "ii->i"):
        x = a[:, :2] if eq == "ii->i" else a
        compare(lambda x: ember.einsum(eq, x), lambda x: torch.einsum(eq, x), [x], grad=False)
    compare(lambda x, y: ember.einsum("ij,kj->ik", x, y),
            lambda x, y: torch.einsum("ij,kj->ik", x, y), [a, a], grad=False)


def test_einsum_errors():
    r = ember.randn, torch.randn
    cases = [("ij,jk->ik", (2, 3), (4, 2)), ("ij,jk->ik", (2, 3)), ("ij->ii", (2, 3)),
             ("ijk->i", (2, 3)), ("i1,i", (3,), (3,)), ("i->j", (2,)),
             ("...i,...i->...", (2, 3), (4, 3))]
    for eq, *shapes in cases:
        same_error(lambda: ember.einsum(eq, *[r[0](*s) for s in shapes]),
                   lambda: torch.einsum(eq, *[r[1](*s) for s in shapes]))
    same_error(lambda: ember.einsum("i,i", ember.ones(2), ember.ones(2, dtype=ember.float64)),
               lambda: torch.einsum("i,i", torch.ones(2), torch.ones(2, dtype=torch.float64)))


# ---- tensordot, kron, trace, diag*, cross, cdist -----------------------------------------------
@pytest.mark.parametrize("sa,sb,dims", [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 2), 1),
                                        ((2, 3), (4, 5), 0),
                                        ((2, 3, 4), (4, 2, 3), ([0, 1], [1, 2])),
                                        ((3, 4), (4, 3), ([1, 0], [0, 1]))])
def test_tensordot(sa, sb, dims):
    compare(lambda a, b: ember.tensordot(a, b, dims), lambda a, b: torch.tensordot(a, b, dims),
            [f64(*sa), f64(*sb, seed=1)], ["T", "C"])
    assert gradcheck(lambda a, b: ember.tensordot(a, b, dims),
                     (leaf(f64(*sa)), leaf(f64(*sb, seed=1))))


@pytest.mark.parametrize("sa,sb", [((2, 3), (2, 2)), ((2,), (3, 2)), ((), (2, 3)),
                                   ((2, 1, 2), (3, 2))])
def test_kron(sa, sb):
    compare(ember.kron, torch.kron, [f64(*sa), f64(*sb, seed=1)])
    assert gradcheck(ember.kron, (leaf(f64(*sa)), leaf(f64(*sb, seed=1))))


def test_trace_diag_family():
    for shape in [(3, 3), (2, 4), (4, 2), (0, 3)]:
        compare(ember.trace, torch.trace, [f64(*shape)], ["T"])
    compare(ember.trace, torch.trace, [np.arange(6).reshape(2, 3)], grad=False)
    for k in (-2, 0, 1):
        compare(lambda x: ember.diag(x, k), lambda x: torch.diag(x, k), [f64(3)])
        compare(lambda x: ember.diag(x, k), lambda x: torch.diag(x, k), [f64(3, 4)], ["T"])
        compare(lambda x: ember.diagflat(x, k), lambda x: torch.diagflat(x, k), [f64(2, 2)])
        compare(lambda x: x.diag_embed(k, 0, 2), lambda x: x.diag_embed(k, 0, 2), [f64(2, 3)],
                ["step"])
    compare(ember.diag_embed, torch.diag_embed, [f64(2, 3)])
    assert gradcheck(lambda x: ember.diag_embed(x, 1, -1, 0), (leaf(f64(2, 3)),))
    assert gradcheck(lambda x: ember.diag(x, -1), (leaf(f64(3, 3)),))
    assert gradcheck(ember.trace, (leaf(f64(3, 3)),))


@SETTINGS
@given(batch=st.sampled_from([(), (2,), (1, 3)]), dim=st.sampled_from([-1, 0]),
       seed=st.integers(0, 99))
def test_cross(batch, dim, seed):
    rng = np.random.default_rng(seed)
    shape = batch + (3,) if dim == -1 else (3,) + batch
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    compare(lambda x, y: ember.linalg.cross(x, y, dim=dim),
            lambda x, y: torch.linalg.cross(x, y, dim=dim), [a, b], ["step", "C"])
    compare(lambda x, y: ember.cross(x, y, dim=dim), lambda x, y: torch.cross(x, y, dim=dim),
            [a, b])
    assert gradcheck(lambda x, y: ember.linalg.cross(x, y, dim=dim), (leaf(a), leaf(b)))


def test_cross_broadcast_and_default_dim():
    compare(lambda x, y: ember.linalg.cross(x, y), lambda x, y: torch.linalg.cross(x, y),
            [f64(1, 3), f64(4, 3, seed=1)])
    compare(lambda x, y: ember.cross(x, y, dim=None), lambda x, y: torch.cross(x, y, dim=None),
            [f64(3, 4), f64(3, 4, seed=1)])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, math.inf])
def test_cdist(p):
    # p == 0 counts non-zeros: torch returns a zero gradient, ember none (nothing flows)
    compare(lambda a, b: ember.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p),
            [f64(2, 3, 4), f64(2, 5, 4, seed=1)], ["C", "step"], grad=p != 0)
    compare(lambda a, b: ember.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p),
            [f64(2, 1, 3, 4).astype(np.float32), f64(5, 2, 4, seed=1).astype(np.float32)],
            grad=p != 0)
    if p != 0:
        assert gradcheck(lambda a, b: ember.cdist(a, b, p),
                         (leaf(f64(3, 2)), leaf(f64(2, 2, seed=1))))


def test_product_errors():
    cases = [
        ("mm", lambda m: m.mm(m.randn(2, 3), m.randn(3, 2).double())),
        ("mm shape", lambda m: m.mm(m.randn(2, 3), m.randn(4, 2))),
        ("bmm 2d", lambda m: m.bmm(m.randn(2, 3), m.randn(3, 2))),
        ("bmm shape", lambda m: m.bmm(m.randn(2, 2, 3), m.randn(2, 4, 2))),
        ("bmm dtype", lambda m: m.bmm(m.randn(2, 2, 3), m.randn(2, 3, 2).double())),
        ("mv", lambda m: m.mv(m.randn(2, 3), m.randn(2))),
        ("mv dim", lambda m: m.mv(m.randn(2, 3), m.randn(3, 1))),
        ("dot 2d", lambda m: m.dot(m.randn(2, 3), m.randn(2, 3))),
        ("dot size", lambda m: m.dot(m.randn(3), m.randn(2))),
        ("dot dtype", lambda m: m.dot(m.randn(3), m.randn(3).double())),
        ("addmm dtype", lambda m: m.addmm(m.randn(3).double(), m.randn(2, 3), m.randn(3, 3))),
        ("addmm bcast", lambda m: m.addmm(m.randn(4), m.randn(2, 3), m.randn(3, 3))),
        ("addmm 1d", lambda m: m.addmm(m.randn(3), m.randn(3), m.randn(3, 3))),
        ("addmv", lambda m: m.addmv(m.randn(2), m.randn(2, 3), m.randn(4))),
        ("addbmm", lambda m: m.addbmm(m.randn(3, 3), m.randn(2, 3, 4), m.randn(3, 4, 3))),
        ("baddbmm", lambda m: m.baddbmm(m.randn(2, 3, 3), m.randn(2, 3, 4), m.randn(2, 5, 3))),
        ("matmul 0d", lambda m: m.matmul(m.randn(()), m.randn(3))),
        ("matmul bool", lambda m: m.matmul(m.ones(2, 2, dtype=m.bool), m.ones(2, 2, dtype=m.bool))),
        ("tensordot", lambda m: m.tensordot(m.randn(2, 3), m.randn(4, 2), dims=1)),
        ("tensordot neg", lambda m: m.tensordot(m.randn(2, 3), m.randn(3, 2), dims=-1)),
        ("tensordot lists", lambda m: m.tensordot(m.randn(2, 3), m.randn(3, 2),
                                                  dims=([1, 0], [0]))),
        ("trace", lambda m: m.trace(m.randn(2, 2, 2))),
        ("diag", lambda m: m.diag(m.randn(2, 2, 2))),
        ("diag_embed", lambda m: m.diag_embed(m.randn(2, 3), dim1=0, dim2=0)),
        ("cross", lambda m: m.cross(m.randn(2, 4), m.randn(2, 4), dim=1)),
        ("lcross", lambda m: m.linalg.cross(m.randn(3, 4), m.randn(3, 4))),
        ("cdist cols", lambda m: m.cdist(m.randn(2, 3), m.randn(4, 2))),
        ("cdist neg", lambda m: m.cdist(m.randn(2, 3), m.randn(4, 3), p=-1)),
        ("cdist 1d", lambda m: m.cdist(m.randn(3), m.randn(3))),
    ]
    for _, fn in cases:
        same_error(lambda: fn(ember), lambda: fn(torch))


# ---- ember.linalg decompositions ------------------------------------------------------------
def _spd(n, batch=(), seed=0):
    a = f64(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _well(n, batch=(), seed=0):
    return f64(*batch, n, n, seed=seed) + 3 * np.eye(n)


@SETTINGS
@given(n=st.integers(1, 4), batch=st.sampled_from([(), (2,), (2, 1)]), lay=layouts,
       dtype=fdtypes, seed=st.integers(0, 50))
def test_inv_det_slogdet_solve(n, batch, lay, dtype, seed):
    A = _well(n, batch, seed).astype(dtype)
    compare(ember.linalg.inv, torch.linalg.inv, [A], [lay])
    compare(ember.inverse, torch.inverse, [A])
    compare(ember.linalg.det, torch.linalg.det, [A], [lay])
    compare(lambda x: x.det(), lambda x: x.det(), [A])
    compare(lambda x: tuple(ember.linalg.slogdet(x)), lambda x: tuple(torch.linalg.slogdet(x)),
            [A], [lay], out_map=lambda o: o[1])
    B = f64(*batch, n, 2, seed=seed + 1).astype(dtype)
    compare(ember.linalg.solve, torch.linalg.solve, [A, B], [lay, "C"])
    v = f64(*batch, n, seed=seed + 2).astype(dtype)
    compare(ember.linalg.solve, torch.linalg.solve, [A, v], [lay, "C"])
    Bl = f64(*batch, 3, n, seed=seed + 3).astype(dtype)
    compare(lambda a, b: ember.linalg.solve(a, b, left=False),
            lambda a, b: torch.linalg.solve(a, b, left=False), [A, Bl])


def test_solve_broadcast_batch():
    A, B = _well(3, (2, 1)), f64(3, 3, 2, seed=1)
    compare(ember.linalg.solve, torch.linalg.solve, [A, B])
    compare(ember.linalg.solve, torch.linalg.solve, [A[0, 0], B])


def test_det_of_singular_matrix_grad():
    # rank n-1: the derivative is the (nonzero) cofactor matrix; checked by finite differences
    # (torch 2.13 returns zeros here, so it is not the oracle for this case)
    A = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 0.0]])
    compare(ember.linalg.det, torch.linalg.det, [A], grad=False)
    assert gradcheck(ember.linalg.det, (leaf(A),))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    A = _spd(3, (2,))
    # symmetric inputs: torch and ember both symmetrise the gradient
    compare(lambda a: ember.linalg.cholesky((a + a.mT) / 2, upper=upper),
            lambda a: torch.linalg.cholesky((a + a.mT) / 2, upper=upper), [A])
    assert gradcheck(lambda a: ember.linalg.cholesky((a + a.mT) / 2, upper=upper),
                     (leaf(_spd(3)),))


@pytest.mark.parametrize("shape,mode", [((4, 3), "reduced"), ((3, 3), "reduced"),
                                        ((2, 4, 2), "reduced"), ((2, 4), "reduced"),
                                        ((3, 4), "complete"), ((4, 2), "complete"),
                                        ((4, 2), "r")])
def test_qr(shape, mode):
    A = f64(*shape)
    grad = not (mode == "r" or (mode == "complete" and shape[-2] > shape[-1]))
    compare(lambda a: tuple(ember.linalg.qr(a, mode)), lambda a: tuple(torch.linalg.qr(a, mode)),
            [A], ["T"], grad=grad)
    if grad:
        assert gradcheck(lambda a: tuple(ember.linalg.qr(a, mode)), (leaf(A),))


def test_qr_not_differentiable_modes():
    for mode, shape in (("r", (3, 2)), ("complete", (3, 2))):
        same_error(lambda: ember.linalg.qr(ember.randn(*shape, requires_grad=True), mode)[1]
                   .sum().backward(),
                   lambda: torch.linalg.qr(torch.randn(*shape, requires_grad=True), mode)[1]
                   .sum().backward())


def _svd_invariant(mod):
    """Gauge-invariant functions of the SVD (singular vectors are unique up to sign)."""
    def f(a, full=False):
        U, S, Vh = mod.linalg.svd(a, full_matrices=full)
        k = S.shape[-1]
        return S, U[..., :, :k] @ Vh[..., :k, :], (U[..., :, :k] * U[..., :, :k]).sum(-2)
    return f


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    A = f64(*shape, seed=3)
    fe, ft = _svd_invariant(ember), _svd_invariant(torch)
    compare(lambda a: fe(a, full), lambda a: ft(a, full), [A], ["T"])
    e = ember.linalg.svd(ember.tensor(A), full_matrices=full)
    t = torch.linalg.svd(torch.tensor(A), full_matrices=full)
    assert [tuple(x.shape) for x in e] == [tuple(x.shape) for x in t]
    assert gradcheck(lambda a: fe(a, full), (leaf(A),))
    compare(ember.linalg.svdvals, torch.linalg.svdvals, [A])
    compare(lambda a: ember.svd(a)[1], lambda a: torch.svd(a)[1], [A])


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    A = f64(2, 3, 3, seed=5)
    A = A + np.swapaxes(A, -1, -2)

    def fe(mod):
        def f(a):
            w, V = mod.linalg.eigh(a, UPLO=uplo)
            return w, V * V, mod.linalg.eigvalsh(a, UPLO=uplo)
        return f
    # symmetric inputs and gauge-invariant outputs (V * V)
    compare(lambda a: fe(ember)((a + a.mT) / 2), lambda a: fe(torch)((a + a.mT) / 2), [A])
    assert gradcheck(lambda a: fe(ember)((a + a.mT) / 2), (leaf(A[0]),))


def test_pinv_lstsq_matrix_power_rank():
    for shape in [(4, 3), (3, 4), (2, 3, 3)]:
        A = f64(*shape, seed=2)
        compare(ember.linalg.pinv, torch.linalg.pinv, [A])
        compare(ember.pinverse, torch.pinverse, [A])
        assert gradcheck(ember.linalg.pinv, (leaf(A),))
        compare(ember.linalg.matrix_rank, torch.linalg.matrix_rank, [A], grad=False)
    low = f64(4, 2) @ f64(2, 4, seed=1)
    compare(ember.linalg.matrix_rank, torch.linalg.matrix_rank, [low], grad=False)
    compare(lambda a: ember.linalg.matrix_rank(a, hermitian=False, atol=1.0, rtol=0.0),
            lambda a: torch.linalg.matrix_rank(a, hermitian=False, atol=1.0, rtol=0.0), [low],
            grad=False)
    compare(ember.linalg.pinv, torch.linalg.pinv, [low], grad=False)
    for driver in (None, "gelsd", "gelss", "gels"):
        A, B = f64(2, 5, 3), f64(2, 5, 2, seed=1)
        compare(lambda a, b: tuple(ember.linalg.lstsq(a, b, driver=driver)),
                lambda a, b: tuple(torch.linalg.lstsq(a, b, driver=driver)), [A, B],
                out_map=lambda o: o[0])
    compare(lambda a, b: ember.linalg.lstsq(a, b).solution,
            lambda a, b: torch.linalg.lstsq(a, b).solution, [f64(4, 3), f64(4, seed=1)])
    assert gradcheck(lambda a, b: ember.linalg.lstsq(a, b).solution,
                     (leaf(f64(4, 3)), leaf(f64(4, 2, seed=1))))
    for n in (-2, -1, 0, 1, 2, 3, 5):
        # n == 0 gives the identity: torch records a zero gradient, ember records none
        compare(lambda a: ember.linalg.matrix_power(a, n),
                lambda a: torch.linalg.matrix_power(a, n), [_well(3, (2,))], grad=n != 0)
        compare(lambda a: a.matrix_power(n), lambda a: a.matrix_power(n), [_well(2)],
                grad=n != 0)
    assert gradcheck(lambda a: ember.linalg.matrix_power(a, 3), (leaf(f64(3, 3)),))


def test_decomposition_gradchecks():
    A = leaf(_well(3, (2,)))
    assert gradcheck(ember.linalg.inv, (A,))
    assert gradcheck(ember.linalg.det, (A,))
    assert gradcheck(lambda a: ember.linalg.slogdet(a).logabsdet, (A,))
    assert gradcheck(ember.linalg.solve, (A, leaf(f64(2, 3, 2, seed=1))))
    assert gradcheck(lambda a: ember.logdet(a @ a.mT), (A,))
    assert gradgradcheck(ember.linalg.inv, (leaf(_well(2)),))
    assert gradgradcheck(ember.linalg.det, (leaf(_well(2)),))
    assert gradgradcheck(ember.linalg.solve, (leaf(_well(2)), leaf(f64(2, 1))))


# ---- norms ----------------------------------------------------------------------------------
@SETTINGS
@given(shape=st.sampled_from([(3,), (2, 3), (2, 3, 4), ()]),
       ord=st.sampled_from([2, 1, 0, 3, 0.5, math.inf, -math.inf, -1]),
       dim=st.sampled_from([None, -1, (0, -1)]), keepdim=st.booleans(), lay=layouts,
       dtype=fdtypes, seed=st.integers(0, 99))
def test_vector_norm(shape, ord, dim, keepdim, lay, dtype, seed):
    if dim is not None and len(shape) == 0 or (isinstance(dim, tuple) and len(shape) < 2):
        dim = None
    if ord == 0:
        dim = dim  # gradient is zero everywhere, still compared
    a = _np(shape, dtype, np.random.default_rng(seed))
    compare(lambda x: ember.linalg.vector_norm(x, ord, dim, keepdim),
            lambda x: torch.linalg.vector_norm(x, ord, dim, keepdim), [a], [lay])


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm(ord):
    A = f64(2, 3, 4, seed=4)
    for dim, keepdim in (((-2, -1), False), ((0, 2), True), ((2, 0), False)):
        compare(lambda a: ember.linalg.matrix_norm(a, ord, dim, keepdim),
                lambda a: torch.linalg.matrix_norm(a, ord, dim, keepdim), [A])
    assert gradcheck(lambda a: ember.linalg.matrix_norm(a, ord), (leaf(A),))
    compare(lambda a: ember.linalg.norm(a, ord), lambda a: torch.linalg.norm(a, ord), [A[0]])


def test_norm_dispatch_and_gradcheck():
    A = f64(2, 3, seed=1)
    for args in [dict(), dict(ord=1), dict(dim=1), dict(dim=(0, 1)), dict(ord=3, dim=0),
                 dict(ord="nuc"), dict(dim=1, keepdim=True)]:
        compare(lambda a: ember.linalg.norm(a, **args), lambda a: torch.linalg.norm(a, **args),
                [A])
    compare(lambda a: ember.linalg.norm(a), lambda a: torch.linalg.norm(a), [f64(2, 2, 2)])
    compare(lambda a: ember.linalg.vector_norm(a, dtype=ember.float64),
            lambda a: torch.linalg.vector_norm(a, dtype=torch.float64), [A.astype(np.float32)])
    for ord in (2, 1, 3, math.inf):
        assert gradcheck(lambda a: ember.linalg.vector_norm(a, ord, 1), (leaf(A),))
    assert gradgradcheck(lambda a: ember.linalg.vector_norm(a, 2, 1), (leaf(A),))


# ---- bad inputs -------------------------------------------------------------------------------
def test_linalg_errors():
    sing = [[1.0, 2.0], [2.0, 4.0]]
    cases = [
        lambda m: m.linalg.inv(m.tensor(sing)),
        lambda m: m.linalg.inv(m.stack([m.eye(2), m.tensor(sing)])),
        lambda m: m.linalg.inv(m.randn(2, 3)),
        lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.int64)),
        lambda m: m.linalg.inv(m.randn(3)),
        lambda m: m.linalg.inv(m.randn(2, 2).half()),
        lambda m: m.linalg.solve(m.tensor(sing), m.randn(2)),
        lambda m: m.linalg.solve(m.randn(2, 2), m.randn(3)),
        lambda m: m.linalg.cholesky(-m.eye(3)),
        lambda m: m.linalg.cholesky(m.tensor([[1.0, 2.0], [2.0, 1.0]])),
        lambda m: m.linalg.det(m.randn(2, 3)),
        lambda m: m.linalg.det(m.ones(2, 2, dtype=m.int64)),
        lambda m: m.linalg.qr(m.randn(2, 3), mode="x"),
        lambda m: m.linalg.eigh(m.randn(2, 2), UPLO="X"),
        lambda m: m.linalg.matrix_power(m.randn(2, 3), 2),
        lambda m: m.linalg.matrix_power(m.zeros(2, 2), -1),
        lambda m: m.linalg.norm(m.randn(2, 2, 2), ord=2),
        lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.int64)),
        lambda m: m.linalg.vector_norm(m.ones(0), math.inf),
        lambda m: m.linalg.matrix_norm(m.randn(3)),
        lambda m: m.linalg.matrix_norm(m.randn(3, 3), ord=3),
        lambda m: m.outer(m.randn(2, 2), m.randn(2)),
        lambda m: m.outer(m.randn(2), m.randn(2, 2)),
        lambda m: m.linalg.cross(m.randn(3), m.randn(2, 3)),
        lambda m: m.linalg.solve(m.randn(2, 2), m.randn(2).double()),
        lambda m: m.linalg.lstsq(m.randn(3, 2), m.randn(4, 2)),
        lambda m: m.linalg.lstsq(m.randn(3, 2), m.randn(3, 2), driver="x"),
        lambda m: m.linalg.svd(m.randn(3)),
        lambda m: m.linalg.eigh(m.randn(2, 3)),
        lambda m: m.linalg.cholesky(m.randn(2, 3)),
        lambda m: m.linalg.pinv(m.randn(3)),
    ]
    for fn in cases:
        same_error(lambda: fn(ember), lambda: fn(torch))
    with pytest.raises(ember.linalg.LinAlgError) as e:
        ember.linalg.inv(ember.tensor(sing))
    assert isinstance(e.value, RuntimeError)
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)
