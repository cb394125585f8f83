"""Differential tests of ember.sparse's COO tensor against torch.sparse_coo_tensor."""
import numpy as np
import pytest
import torch

import ember

I = [[0, 1, 1, 0], [2, 0, 2, 2]]
V = [3., 4., 5., 1.]


def test_build_and_to_dense():
    t = torch.sparse_coo_tensor(I, V, (2, 3))
    e = ember.sparse_coo_tensor(I, V, (2, 3))
    assert e.is_sparse and t.is_sparse and e.layout is ember.sparse_coo
    assert tuple(e.shape) == tuple(t.shape) and e.sparse_dim() == t.sparse_dim()
    assert e.dense_dim() == t.dense_dim() and e._nnz() == t._nnz() == 4
    assert e.is_coalesced() == t.is_coalesced() is False
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())
    assert str(e.dtype) .endswith("float32")


def test_coalesce_indices_values():
    t = torch.sparse_coo_tensor(I, V, (2, 3)).coalesce()
    e = ember.sparse_coo_tensor(I, V, (2, 3)).coalesce()
    assert e.is_coalesced() and e._nnz() == t._nnz()
    np.testing.assert_array_equal(e.indices().numpy(), t.indices().numpy())
    np.testing.assert_array_equal(e.values().numpy(), t.values().numpy())


def test_indices_uncoalesced_raises():
    with pytest.raises(RuntimeError):
        torch.sparse_coo_tensor(I, V, (2, 3)).indices()
    with pytest.raises(RuntimeError):
        ember.sparse_coo_tensor(I, V, (2, 3)).indices()


def test_size_inferred_and_checks():
    assert tuple(ember.sparse_coo_tensor(I, V).shape) == tuple(torch.sparse_coo_tensor(I, V).shape)
    for kw in ({"check_invariants": True},):
        with pytest.raises(RuntimeError):
            torch.sparse_coo_tensor(I, V, (2, 2), **kw)
        with pytest.raises(RuntimeError):
            ember.sparse_coo_tensor(I, V, (2, 2), **kw)
    with pytest.raises(RuntimeError):
        torch.sparse_coo_tensor(I, V[:3], (2, 3))
    with pytest.raises(RuntimeError):
        ember.sparse_coo_tensor(I, V[:3], (2, 3))


def test_to_sparse_round_trip():
    a = np.array([[0., 2., 0.], [1., 0., 3.]], dtype=np.float32)
    t, e = torch.tensor(a).to_sparse(), ember.tensor(a).to_sparse_coo()
    assert e.is_coalesced() and t.is_coalesced()
    np.testing.assert_array_equal(e.indices().numpy(), t.indices().numpy())
    np.testing.assert_array_equal(e.values().numpy(), t.values().numpy())
    np.testing.assert_array_equal(e.to_dense().numpy(), a)
    assert not ember.tensor(a).is_sparse and ember.tensor(a).layout is ember.strided


def test_unsupported_op_raises():
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        ember.sparse_coo_tensor(I, V, (2, 3)).exp()


def test_sparse_mm_and_grads():
    d = np.arange(12, dtype=np.float32).reshape(3, 4)
    tv, ev = torch.tensor(V, requires_grad=True), ember.tensor(V, requires_grad=True)
    td, ed = torch.tensor(d, requires_grad=True), ember.tensor(d, requires_grad=True)
    to = torch.sparse.mm(torch.sparse_coo_tensor(I, tv, (2, 3)), td)
    eo = ember.sparse.mm(ember.sparse_coo_tensor(I, ev, (2, 3)), ed)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy())
    np.testing.assert_allclose((ember.sparse_coo_tensor(I, V, (2, 3)) @ ed).detach().numpy(),
                               to.detach().numpy())
    (to * to).sum().backward()
    (eo * eo).sum().backward()
    np.testing.assert_allclose(ed.grad.numpy(), td.grad.numpy())
    np.testing.assert_allclose(ev.grad.numpy(), tv.grad.numpy())
    with pytest.raises(RuntimeError):
        ember.sparse.mm(ember.sparse_coo_tensor(I, V, (2, 3)), ember.ones(2, 2))
