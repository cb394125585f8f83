"""Differential tests of ember.sparse's products, sums, CSR tensors and torch.sparse
functions against torch: values, shapes, dtypes, layouts, gradients (for the dense operand
and for the values tensor a sparse tensor is built from) and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember

warnings.filterwarnings("ignore", message=".*Sparse.*")   # torch's beta / invariants notes

I = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
V = [3., 4., 5., 1., -2.]
I3 = [[0, 1, 1, 0, 2, 1], [2, 0, 2, 2, 1, 0], [1, 0, 3, 1, 2, 2]]
V3 = [3., 4., 5., 1., -2., 0.5]


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(dtype)


def _close(e, t, **kw):
    e, t = (x.detach() if hasattr(x, "detach") else x for x in (e, t))
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6, **kw)


def _pair(idx, vals, size, dtype=np.float32, grad=True):
    """(ember sparse, torch sparse, ember values, torch values) with values requiring grad."""
    ev = ember.tensor(np.asarray(vals, dtype), requires_grad=grad)
    tv = torch.tensor(np.asarray(vals, dtype), requires_grad=grad)
    return (ember.sparse_coo_tensor(idx, ev, size), torch.sparse_coo_tensor(idx, tv, size),
            ev, tv)


def _dense(a):
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


PRODUCTS = {
    "mm": lambda m, s, d: m.mm(s, d),
    "spmm": lambda m, s, d: m.spmm(s, d),
    "matmul": lambda m, s, d: m.matmul(s, d),
    "at": lambda m, s, d: s @ d,
    "sparse.mm": lambda m, s, d: m.sparse.mm(s, d),
    "method_mm": lambda m, s, d: s.mm(d),
}
RPRODUCTS = {
    "mm": lambda m, d, s: m.mm(d, s),
    "matmul": lambda m, d, s: m.matmul(d, s),
    "at": lambda m, d, s: d @ s,
    "sparse.mm": lambda m, d, s: m.sparse.mm(d, s),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_at_dense_values_and_grads(name, layout):
    es, ts, ev, tv = _pair(I, V, (3, 3))
    if layout == "csr":
        es, ts = es.to_sparse_csr(), ts.to_sparse_csr()
        assert es.layout is ember.sparse_csr and ts.layout is torch.sparse_csr
    ed, td = _dense(_rand(3, 4))
    eo, to = PRODUCTS[name](ember, es, ed), PRODUCTS[name](torch, ts, td)
    assert to.layout is torch.strided and eo.layout is ember.strided
    _close(eo, to)
    w = _rand(3, 4, seed=1)
    (to * torch.tensor(w)).sum().backward()
    (eo * ember.tensor(w)).sum().backward()
    _close(ed.grad, td.grad)
    if layout == "coo":
        _close(ev.grad, tv.grad)


@pytest.mark.parametrize("name", sorted(RPRODUCTS))
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_dense_at_sparse_values_and_grads(name, layout):
    es, ts, ev, tv = _pair(I, V, (3, 3))
    if layout == "csr":
        es, ts = es.to_sparse_csr(), ts.to_sparse_csr()
    ed, td = _dense(_rand(5, 3))
    eo, to = RPRODUCTS[name](ember, ed, es), RPRODUCTS[name](torch, td, ts)
    assert eo.layout is ember.strided and to.layout is torch.strided
    _close(eo, to)
    w = _rand(5, 3, seed=2)
    if layout == "csr" and name == "sparse.mm":
        # torch has no backward for dense @ CSR in sparse.mm (it transposes to CSC, then
        # "unsupported combination of layouts"): the dense product is the oracle
        to = td @ ts.to_dense()
    (to * torch.tensor(w)).sum().backward()
    (eo * ember.tensor(w)).sum().backward()
    _close(ed.grad, td.grad)
    if layout == "coo":
        _close(ev.grad, tv.grad)


def test_matmul_with_vectors_and_float64():
    es, ts, ev, tv = _pair(I, V, (3, 3), dtype=np.float64)
    a = _rand(3, dtype=np.float64)
    _close(ember.matmul(es, ember.tensor(a)), torch.matmul(ts, torch.tensor(a)))
    _close(ember.tensor(a) @ es, torch.tensor(a) @ ts)
    eo, to = ember.sparse.mm(es, ember.tensor(_rand(3, 2, dtype=np.float64))), \
        torch.sparse.mm(ts, torch.tensor(_rand(3, 2, dtype=np.float64)))
    _close(eo, to)
    eo.sum().backward(), to.sum().backward()
    _close(ev.grad, tv.grad)


def test_product_errors():
    es, ts, _, _ = _pair(I, V, (3, 3), grad=False)
    for m, s, d, dd in ((ember, es, ember.ones(2, 2), ember.ones(5, 2)),
                        (torch, ts, torch.ones(2, 2), torch.ones(5, 2))):
        with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
            m.sparse.mm(s, d)
        with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
            dd @ s
        with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
            m.mm(s, d)
        with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
            m.mm(dd, s)
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            m.sparse.mm(s, d.double().reshape(4, 1).expand(4, 3)[:3])


def test_dense_matmul_still_refuses_non_tensors():
    with pytest.raises(TypeError):
        torch.matmul(torch.ones(2, 2), [[1., 0.], [0., 1.]])
    with pytest.raises(TypeError):
        ember.matmul(ember.ones(2, 2), [[1., 0.], [0., 1.]])


@pytest.mark.parametrize("dim", [None, 0, 1, 2, -1, (0, 2), (0, 1, 2), [1, -1]])
def test_sparse_sum(dim):
    es, ts, ev, tv = _pair(I3, V3, (3, 3, 4))
    eo = ember.sparse.sum(es) if dim is None else ember.sparse.sum(es, dim)
    to = torch.sparse.sum(ts) if dim is None else torch.sparse.sum(ts, dim)
    assert (eo.layout is ember.sparse_coo) == (to.layout is torch.sparse_coo)
    if to.layout is torch.sparse_coo:
        assert eo.is_coalesced() == to.is_coalesced()
        np.testing.assert_array_equal(eo.indices().numpy(), to.indices().numpy())
        _close(eo.values(), to.values())
        _close(eo.to_dense(), to.to_dense())
        w = _rand(*to.shape, seed=3)
        (to.to_dense() * torch.tensor(w)).sum().backward()
        (eo.to_dense() * ember.tensor(w)).sum().backward()
    else:
        assert eo.dim() == 0
        _close(eo, to)
        (to * 2).backward(), (eo * 2).backward()
    _close(ev.grad, tv.grad)


def test_sparse_sum_dtypes_and_errors():
    ei = ember.sparse_coo_tensor(I, [1, 2, 3, 4, 5], (3, 3))
    ti = torch.sparse_coo_tensor(I, [1, 2, 3, 4, 5], (3, 3))
    _close(ember.sparse.sum(ei), torch.sparse.sum(ti))
    _close(ember.sparse.sum(ei, 1).to_dense(), torch.sparse.sum(ti, 1).to_dense())
    _close(ember.sparse.sum(ei, 0, dtype=ember.float64).to_dense(),
           torch.sparse.sum(ti, 0, dtype=torch.float64).to_dense())
    _close(ember.sparse.sum(ei, dtype=ember.float64), torch.sparse.sum(ti, dtype=torch.float64))
    _close(ei.sum(), ti.sum())
    _close(ei.sum(0).to_dense(), ti.sum(0).to_dense())
    for m, s in ((ember, ei), (torch, ti)):
        with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
            m.sparse.sum(s, 2)
        with pytest.raises(RuntimeError, match="expected sparse coordinate tensor layout but "
                                               "got Strided"):
            m.sparse.sum(m.ones(2))
        with pytest.raises(RuntimeError, match="got SparseCsr"):
            m.sparse.sum(m.ones(2, 2).to_sparse_csr())


@pytest.mark.parametrize("beta,alpha", [(1., 1.), (0.5, 2.), (0., -1.)])
def test_sparse_addmm(beta, alpha):
    es, ts, ev, tv = _pair(I, V, (3, 3))
    ed, td = _dense(_rand(3, 4))
    em, tm = _dense(_rand(3, 4, seed=5))
    eo = ember.sparse.addmm(em, es, ed, beta=beta, alpha=alpha)
    to = torch.sparse.addmm(tm, ts, td, beta=beta, alpha=alpha)
    _close(eo, to)
    eo.sum().backward(), to.sum().backward()
    for e, t in ((ed, td), (ev, tv), (em, tm)):
        if e.grad is None:     # beta == 0: ember does not read mat, torch's grad is 0
            assert beta == 0 and not np.any(t.grad.numpy())
        else:
            _close(e.grad, t.grad)


def test_values_grad_through_to_dense_coalesce_and_to_sparse():
    idx = [[0, 1, 1, 0, 0], [2, 0, 2, 2, 2]]        # duplicates at (0, 2)
    es, ts, ev, tv = _pair(idx, V, (2, 3))
    w = _rand(2, 3, seed=7)
    (ts.to_dense() * torch.tensor(w)).sum().backward()
    (es.to_dense() * ember.tensor(w)).sum().backward()
    _close(ev.grad, tv.grad)
    es, ts, ev, tv = _pair(idx, V, (2, 3))
    ec, tc = es.coalesce(), ts.coalesce()
    np.testing.assert_array_equal(ec.indices().numpy(), tc.indices().numpy())
    _close(ec.values(), tc.values())
    (tc.values() * torch.arange(3.)).sum().backward()
    (ec.values() * ember.arange(3.)).sum().backward()
    _close(ev.grad, tv.grad)
    a = np.array([[0., 2., 0.], [1., 0., 3.]], np.float32)
    ex, tx = _dense(a)
    eo, to = ember.sparse.sum(ex.to_sparse()), torch.sparse.sum(tx.to_sparse())
    (eo * 3).backward(), (to * 3).backward()
    _close(ex.grad, tx.grad)


def test_csr_construct_and_accessors():
    crow, col, val = [0, 1, 3, 3], [1, 0, 2], [2., 1., 3.]
    ec = ember.sparse_csr_tensor(crow, col, val, (3, 3))
    tc = torch.sparse_csr_tensor(crow, col, val, (3, 3))
    assert ec.layout is ember.sparse_csr and tc.layout is torch.sparse_csr
    assert (ec.is_sparse, ec.is_sparse_csr) == (tc.is_sparse, tc.is_sparse_csr) == (False, True)
    for name in ("crow_indices", "col_indices", "values"):
        _close(getattr(ec, name)(), getattr(tc, name)())
    _close(ec.to_dense(), tc.to_dense())
    assert ec._nnz() == tc._nnz() and tuple(ec.shape) == tuple(tc.shape) and ec.dim() == 2
    assert tuple(ember.sparse_csr_tensor(crow, col, val).shape) == \
        tuple(torch.sparse_csr_tensor(crow, col, val).shape)
    a = _rand(4, 5)
    a[a < 0.3] = 0
    e2, t2 = ember.tensor(a).to_sparse_csr(), torch.tensor(a).to_sparse_csr()
    for name in ("crow_indices", "col_indices", "values"):
        _close(getattr(e2, name)(), getattr(t2, name)())
    _close(e2.to_sparse().to_dense(), t2.to_sparse().to_dense())
    assert e2.to_sparse().is_coalesced() == t2.to_sparse().is_coalesced()
    e3 = ember.tensor(a).to_sparse(layout=ember.sparse_csr)
    t3 = torch.tensor(a).to_sparse(layout=torch.sparse_csr)
    assert e3.layout is ember.sparse_csr and t3.layout is torch.sparse_csr
    es, ts, _, _ = _pair(I, V, (3, 3), grad=False)
    for name in ("crow_indices", "col_indices", "values"):
        _close(getattr(es.to_sparse_csr(), name)(), getattr(ts.to_sparse_csr(), name)())
    assert not ember.ones(2).is_sparse_csr and not torch.ones(2).is_sparse_csr
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match=r"col_indices.shape\[-1\] must be equal to nnz"):
            m.sparse_csr_tensor(crow, col[:2], val, (3, 3), check_invariants=True)


def test_csr_values_grad_through_to_dense():
    tv, ev = torch.tensor([2., 1., 3.], requires_grad=True), ember.tensor([2., 1., 3.],
                                                                          requires_grad=True)
    tc = torch.sparse_csr_tensor([0, 1, 3], [1, 0, 2], tv, (2, 3))
    ec = ember.sparse_csr_tensor([0, 1, 3], [1, 0, 2], ev, (2, 3))
    w = _rand(2, 3, seed=9)
    (tc.to_dense() * torch.tensor(w)).sum().backward()
    (ec.to_dense() * ember.tensor(w)).sum().backward()
    _close(ev.grad, tv.grad)


def test_invariant_checks():
    bad = ([[0, 3]], [1., 2.], (2,))
    for m in (ember, torch):
        assert not m.sparse.check_sparse_tensor_invariants.is_enabled()
        with m.sparse.check_sparse_tensor_invariants():
            assert m.sparse.check_sparse_tensor_invariants.is_enabled()
            with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
                m.sparse_coo_tensor(*bad)
            with pytest.raises(RuntimeError):
                m.sparse_csr_tensor([0, 1, 2], [0, 5], [1., 2.], (2, 3))
        assert not m.sparse.check_sparse_tensor_invariants.is_enabled()
        m.sparse_coo_tensor(*bad)                # unchecked by default
        for crow, col, msg in (([1, 1, 2], [0, 1], r"crow_indices\[..., 0\] == 0"),
                               ([0, 1, 3], [0, 1], r"crow_indices\[..., -1\] == nnz"),
                               ([0, 1], [0], "number of rows"),
                               ([0, 1, 2], [0, 5], "col_indices < ncols")):
            with pytest.raises(RuntimeError, match=msg):
                m.sparse_csr_tensor(crow, col, [1., 2.][:len(col)], (2, 3),
                                    check_invariants=True)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sparse_softmax(fn, dim):
    es, ts, ev, tv = _pair(I3, V3, (3, 3, 4))
    # torch's backward is wrong for a negative dim (its grads for -1 differ from those for
    # 2, the same softmax): the oracle gets the dim normalized
    eo, to = getattr(ember.sparse, fn)(es, dim), getattr(torch.sparse, fn)(ts, dim % 3)
    assert eo.layout is ember.sparse_coo and to.layout is torch.sparse_coo
    np.testing.assert_array_equal(eo.coalesce().indices().numpy(),
                                  to.coalesce().indices().numpy())
    _close(eo.to_dense(), to.to_dense())
    w = _rand(3, 3, 4, seed=11)
    (to.to_dense() * torch.tensor(w)).sum().backward()
    (eo.to_dense() * ember.tensor(w)).sum().backward()
    _close(ev.grad, tv.grad)
    _close(getattr(ember.sparse, fn)(es, dim, dtype=ember.float64).to_dense(),
           getattr(torch.sparse, fn)(ts, dim, dtype=torch.float64).to_dense())


@pytest.mark.parametrize("shape", [(3, 3), (3, 4), (4, 2)])
@pytest.mark.parametrize("layout", [None, "csr"])
def test_spdiags(shape, layout):
    d = np.arange(12, dtype=np.float32).reshape(3, 4)
    ed = ember.tensor(d, requires_grad=True)
    off = [0, -1, 1]
    eo = ember.sparse.spdiags(ed, ember.tensor(off), shape,
                              None if layout is None else ember.sparse_csr)
    assert eo.layout is (ember.sparse_coo if layout is None else ember.sparse_csr)
    if shape[0] <= shape[1]:
        to = torch.sparse.spdiags(torch.tensor(d), torch.tensor(off), shape,
                                  None if layout is None else torch.sparse_csr)
        assert eo.layout.name == str(to.layout).split(".")[-1]
        _close(eo.to_dense(), to.to_dense())
        if layout is None:
            assert eo.is_coalesced() == to.is_coalesced()
            np.testing.assert_array_equal(eo._indices().numpy(), to._indices().numpy())
    # torch writes out-of-range indices for a tall shape ((3, 0) in a (4, 2) matrix);
    # the oracle there (and for all shapes) is scipy.sparse.spdiags, built the same way
    scipy_sparse = pytest.importorskip("scipy.sparse")
    want = scipy_sparse.spdiags(d, off, *shape).toarray()
    np.testing.assert_array_equal(eo.to_dense().detach().numpy(), want)
    # torch has no derivative for spdiags; ember's gathers: d(out[j - o, j])/d(diag[k, j]) = 1
    w = _rand(*shape, seed=13)
    (eo.to_dense() * ember.tensor(w)).sum().backward()
    g = np.zeros_like(d)
    for k, o in enumerate(off):
        for j in range(d.shape[1]):
            if 0 <= j - o < shape[0] and j < shape[1]:
                g[k, j] = w[j - o, j]
    np.testing.assert_allclose(ed.grad.numpy(), g)


def test_transpose_detach_and_flags():
    es, ts, _, _ = _pair(I, V, (3, 4))
    _close(es.t().to_dense(), ts.t().to_dense())
    assert es.requires_grad == ts.requires_grad is True
    assert es.detach().requires_grad == ts.detach().requires_grad is False
    assert ember.sparse_csc is not ember.sparse_csr and str(ember.sparse_csr) == "ember.sparse_csr"


@pytest.mark.parametrize("beta,alpha", [(1., 1.), (0.5, 2.), (0., 3.)])
def test_sampled_addmm(beta, alpha):
    a = np.array([[0., 2., 0.], [1., 0., 3.]], np.float32)
    ev, tv = _dense(a[a != 0])
    ec = ember.sparse_csr_tensor([0, 1, 3], [1, 0, 2], ev, (2, 3))
    tc = torch.sparse_csr_tensor([0, 1, 3], [1, 0, 2], tv, (2, 3))
    e1, t1 = _dense(_rand(2, 4))
    e2, t2 = _dense(_rand(4, 3, seed=4))
    eo = ember.sparse.sampled_addmm(ec, e1, e2, beta=beta, alpha=alpha)
    to = torch.sparse.sampled_addmm(tc, t1, t2, beta=beta, alpha=alpha)
    assert eo.layout is ember.sparse_csr and to.layout is torch.sparse_csr
    for name in ("crow_indices", "col_indices", "values"):
        _close(getattr(eo, name)(), getattr(to, name)())
    w = np.array([1., -2., 0.5], np.float32)
    (to.values() * torch.tensor(w)).sum().backward()
    (eo.values() * ember.tensor(w)).sum().backward()
    _close(e1.grad, t1.grad), _close(e2.grad, t2.grad)
    if beta != 0:
        _close(ev.grad, tv.grad)
    for m, c, x, y in ((ember, ec, e1, e2), (torch, tc, t1, t2)):
        with pytest.raises(NotImplementedError, match="SparseCPU"):
            m.sparse.sampled_addmm(c.detach().to_sparse(), x, y)
        with pytest.raises(RuntimeError):
            m.sparse.sampled_addmm(c, x, x)


def test_empty_and_zero_dim():
    for m in (ember, torch):
        assert m.tensor(3.).to_sparse().to_dense().item() == 3.
    ee = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0), (2, 3))
    te = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 3))
    _close(ember.sparse.sum(ee), torch.sparse.sum(te))
    _close(ember.sparse.sum(ee, 0).to_dense(), torch.sparse.sum(te, 0).to_dense())
    _close(ee @ ember.ones(3, 2), te @ torch.ones(3, 2))
    _close(ember.ones(4, 2) @ ee, torch.ones(4, 2) @ te)
    _close(ee.to_sparse_csr().crow_indices(), te.to_sparse_csr().crow_indices())
    _close(ember.zeros(2, 3).to_sparse_csr().crow_indices(),
           torch.zeros(2, 3).to_sparse_csr().crow_indices())


LEAF_LOSSES = {
    "mm": lambda m, s, d, w: (m.sparse.mm(s, d) ** 2).sum(),
    "sum": lambda m, s, d, w: m.sparse.sum(s) * 2,
    "to_dense": lambda m, s, d, w: (s.to_dense() * w).sum(),
    "sum0": lambda m, s, d, w: (m.sparse.sum(s, 0).to_dense() ** 2).sum(),
}


@pytest.mark.parametrize("name", sorted(LEAF_LOSSES))
def test_sparse_leaf_grad(name):
    idx, vals = [[0, 1, 1, 0], [2, 0, 2, 2]], [3., 4., 5., 1.]     # a duplicate at (0, 2)
    d, w = _rand(3, 4), _rand(2, 3, seed=17)
    es = ember.sparse_coo_tensor(idx, vals, (2, 3), requires_grad=True)
    ts = torch.sparse_coo_tensor(idx, vals, (2, 3), requires_grad=True)
    assert es.is_leaf and ts.is_leaf and es.grad is None and ts.grad is None
    LEAF_LOSSES[name](ember, es, ember.tensor(d), ember.tensor(w)).backward()
    LEAF_LOSSES[name](torch, ts, torch.tensor(d), torch.tensor(w)).backward()
    assert es.grad.layout is ember.sparse_coo and ts.grad.layout is torch.sparse_coo
    np.testing.assert_array_equal(es.grad._indices().numpy(), ts.grad._indices().numpy())
    _close(es.grad._values(), ts.grad._values())
    v = ember.tensor(vals, requires_grad=True)
    assert not ember.sparse_coo_tensor(idx, v, (2, 3)).is_leaf
    assert not torch.sparse_coo_tensor(idx, torch.tensor(vals, requires_grad=True)).is_leaf


def test_mm_out_with_sparse_refused():
    es = ember.sparse_coo_tensor(I, V, (3, 3))
    with pytest.raises(NotImplementedError):    # not silently ignored
        ember.mm(es, ember.ones(3, 2), out=ember.empty(3, 2))
