"""ember.sparse's CSR tensor: `SparseCsrTensor`, `sparse_csr_tensor`, `Tensor.to_sparse_csr`
and `SparseCooTensor.to_sparse_csr` (2-D, no batch or dense dims).

A CSR tensor holds `crow_indices` (n + 1,), `col_indices` (nnz,) as int64 NumPy arrays and a
dense ember Tensor of values (nnz,). Its products and `to_dense` go through the COO form
(rows expanded from crow_indices), which keeps the same values tensor, so gradients reach
the values and the dense operand as for COO.
"""
import numpy as np

from ..core.tensor import Tensor, sparse_coo, sparse_csr
from ..ops import creation as _creation
from . import coo as _coo
from .coo import SparseCooTensor, _long


class SparseCsrTensor:
    """A 2-D CSR sparse tensor; build it with ``ember.sparse_csr_tensor(crow, col, values,
    size)`` or ``dense.to_sparse_csr()``."""
    layout = sparse_csr
    is_sparse = False
    is_sparse_csr = True
    _ember_sparse = True

    def __init__(self, crow, col, v, size):
        self._crow, self._col, self._v, self._size = crow, col, v, tuple(size)

    shape = SparseCooTensor.shape
    size = SparseCooTensor.size
    dtype = SparseCooTensor.dtype
    device = SparseCooTensor.device
    requires_grad = SparseCooTensor.requires_grad
    dim = SparseCooTensor.dim
    ndim = SparseCooTensor.ndim

    def _nnz(self):
        return self._col.shape[0]

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return 0

    def crow_indices(self):
        return _long(self._crow)

    def col_indices(self):
        return _long(self._col)

    def values(self):
        return self._v

    def _rows(self):
        return np.repeat(np.arange(self._size[0], dtype=np.int64), np.diff(self._crow))

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is sparse_csr:
            return self
        if layout is not None and layout is not sparse_coo:
            raise NotImplementedError(f"ember.sparse: to_sparse(layout={layout}) from CSR is "
                                      "not supported")
        i = np.stack([self._rows(), self._col]).reshape(2, -1)
        return SparseCooTensor(i, self._v, self._size, True)

    to_sparse_coo = to_sparse

    def to_sparse_csr(self, dense_dim=None):
        return self

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self.to_sparse().to_dense(dtype)

    def detach(self):
        return SparseCsrTensor(self._crow, self._col, self._v.detach(), self._size)

    def mm(self, mat2):
        return _coo.mm(self, mat2)

    def matmul(self, other):
        return _coo.matmul(self, other)

    def __matmul__(self, other):
        return _coo.matmul(self, other)

    def __rmatmul__(self, other):
        return _coo.matmul(other, self)

    _sparse_matmul = staticmethod(lambda a, b: _coo.matmul(a, b))   # ember.matmul's hook

    def __repr__(self):
        extra = "" if self.dtype.name == "float32" else f", dtype={self.dtype}"
        return (f"tensor(crow_indices={self.crow_indices()!r},\n       col_indices="
                f"{self.col_indices()!r},\n       values={self._v!r}, size={self._size}, "
                f"nnz={self._nnz()}{extra},\n       layout=ember.sparse_csr)")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  "'SparseCsrCPU' backend (ember.sparse supports only a few ops)")


def _int_array(x, what):
    a = np.asarray(x._numpy() if isinstance(x, Tensor) else x)
    if a.ndim != 1:
        raise RuntimeError(f"{what} must have dim=1 but got {what}.dim()={a.ndim}")
    return a.astype(np.int64)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """torch.sparse_csr_tensor: a 2-D CSR tensor (no batch or dense dims)."""
    crow = _int_array(crow_indices, "crow_indices")
    col = _int_array(col_indices, "col_indices")
    v = values if isinstance(values, Tensor) else _creation.tensor(values, dtype=dtype)
    if dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    if v.dim() != 1:
        raise NotImplementedError("ember.sparse: CSR tensors with dense dims are not supported")
    if col.shape[0] != v.shape[0]:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={v.shape[0]}) as "
                           f"defined by values.shape[0], but got {col.shape[0]}")
    if size is None:
        size = (crow.shape[0] - 1, int(col.max()) + 1 if col.shape[0] else 0)
    size = tuple(size)
    if len(size) != 2:
        raise NotImplementedError("ember.sparse: batched CSR tensors are not supported")
    check = _coo.INVARIANTS[0] if check_invariants is None else check_invariants
    if check:
        if crow.shape[0] != size[0] + 1:
            raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows "
                               f"+ 1 (={size[0] + 1}), but got {crow.shape[0]}")
        if crow[0] != 0:
            raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
        if crow[-1] != col.shape[0]:
            raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
        if np.any(np.diff(crow) < 0) or np.any(np.diff(crow) > size[1]):
            raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` "
                               "is not satisfied.")
        if col.shape[0] and (col.min() < 0 or col.max() >= size[1]):
            raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    if requires_grad:
        v = v.detach().requires_grad_(True)
    return SparseCsrTensor(crow, col, v, size)


def _crow(rows, n):
    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]).astype(np.int64)


def coo_to_sparse_csr(self, dense_dim=None):
    """SparseCooTensor.to_sparse_csr: coalesce (summing duplicates), then compress rows."""
    if self.dim() != 2:
        raise RuntimeError(f"Only tensors with two sparse dimensions can be converted to the "
                           f"SparseCsr layout, got self with {self.dim()} sparse dimensions.")
    c = self.coalesce()
    return SparseCsrTensor(_crow(c._i[0], self._size[0]), c._i[1].copy(), c._v, self._size)


def to_sparse_csr(t, dense_dim=None):
    """Tensor.to_sparse_csr (2-D strided): its non-zeros in row-major order."""
    if dense_dim:
        raise NotImplementedError("ember.sparse: hybrid CSR tensors are not supported")
    if t.dim() != 2:
        raise RuntimeError(f"to_sparse_csr: expected a 2-D tensor (ember.sparse has no batched "
                           f"CSR), got {t.dim()}-D")
    return coo_to_sparse_csr(_coo.to_sparse(t))


SparseCooTensor.to_sparse_csr = coo_to_sparse_csr
