"""ember.sparse: a minimal COO sparse tensor (torch.sparse_coo_tensor's common part).

A `SparseCooTensor` is not a Tensor: it holds `_i` (int64 indices, (sparse_dim, nnz)) and
`_v` (a dense ember Tensor of values, (nnz, *dense dims)). Dense ops never see it, so their
hot path is untouched; any Tensor method it lacks raises NotImplementedError naming the
'SparseCPU' backend, as torch does. Only sparse dims (dense_dim 0) are supported.
"""
import numpy as np

from ..core.tensor import sparse_coo, strided  # noqa: F401  (ember.sparse_coo, ember.strided)
from ..ops import creation as _creation


def _tensor(x, dtype=None):
    return _creation.tensor(x, dtype=dtype)


class SparseCooTensor:
    """A COO sparse tensor; build it with ``ember.sparse_coo_tensor(indices, values, size)``."""
    layout = sparse_coo
    is_sparse = True

    def __init__(self, i, v, size, coalesced):
        self._i, self._v, self._size, self._coalesced = i, v, tuple(size), coalesced

    @property
    def shape(self):
        from ..core.tensor import Size
        return Size(self._size)

    def size(self, dim=None):
        return self.shape if dim is None else self._size[dim]

    @property
    def dtype(self):
        return self._v.dtype

    def dim(self):
        return len(self._size)

    def sparse_dim(self):
        return self._i.shape[0]

    def dense_dim(self):
        return 0

    def _nnz(self):
        return self._i.shape[1]

    def _indices(self):
        return _tensor(self._i)

    def _values(self):
        return self._v

    def is_coalesced(self):
        return self._coalesced

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._indices()

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._v

    def coalesce(self):
        if self._coalesced:
            return self
        v = self._v.numpy() if not self._v.requires_grad else self._v.detach().numpy()
        if self._nnz() == 0:
            return SparseCooTensor(self._i, self._v, self._size, True)
        lin = np.ravel_multi_index(tuple(self._i), self._size)
        u, inv = np.unique(lin, return_inverse=True)
        out = np.zeros(len(u), dtype=v.dtype)
        np.add.at(out, inv, v)
        i = np.stack(np.unravel_index(u, self._size)).astype(np.int64)
        return SparseCooTensor(i, _tensor(out, dtype=self.dtype), self._size, True)

    def to_dense(self):
        out = np.zeros(self._size, dtype=self._v.detach().numpy().dtype)
        np.add.at(out, tuple(self._i), self._v.detach().numpy())
        return _tensor(out, dtype=self.dtype)

    def __repr__(self):
        return (f"tensor(indices={self._indices()!r},\n       values={self._v!r},\n"
                f"       size={self._size}, nnz={self._nnz()}, layout=ember.sparse_coo)")

    def __getattr__(self, name):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  "'SparseCPU' backend (ember.sparse supports only a few ops)")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: a COO tensor of `values` at `indices` (sparse_dim, nnz)."""
    i = np.asarray(indices.numpy() if hasattr(indices, "numpy") else indices)
    if i.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(i.shape)}")
    i = i.astype(np.int64)
    v = values if hasattr(values, "numpy") else _tensor(values, dtype=dtype)
    if dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    if v.shape[0] != i.shape[1] or v.dim() != 1:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from "
                           f"indices: {i.shape[1]}, nnz from values: {v.shape[0]}")
    if size is None:
        size = tuple(int(m) + 1 for m in i.max(axis=1)) if i.shape[1] else (0,) * i.shape[0]
    else:
        size = tuple(size)
        if len(size) != i.shape[0]:
            raise RuntimeError(f"number of dimensions must be sparse_dim ({i.shape[0]}) + "
                               f"dense_dim (0), but got {len(size)}")
        if check_invariants and i.shape[1]:
            for d in range(i.shape[0]):
                if i[d].max() >= size[d] or i[d].min() < 0:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, "
                                       f"size is {size[d]} but found index {int(i[d].max())}")
    if requires_grad:
        v = v.detach().requires_grad_(True)
    return SparseCooTensor(i, v, size, bool(is_coalesced))


def to_sparse(t):
    """Tensor.to_sparse / to_sparse_coo: the coalesced COO form of a dense tensor."""
    a = t.detach().numpy()
    nz = np.nonzero(a)
    i = np.stack(nz).astype(np.int64) if a.ndim else np.zeros((0, 1), np.int64)
    return SparseCooTensor(i, _tensor(a[nz], dtype=t.dtype), tuple(t.shape), True)


def mm(mat1, mat2):
    """torch.sparse.mm(sparse (n, m), dense (m, p)) -> dense (n, p); gradients flow to the
    dense operand and to the sparse tensor's values (ember ops: gather, scale, index_add)."""
    if mat1.dim() != 2 or mat2.dim() != 2 or mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    rows, cols = _tensor(mat1._i[0]), _tensor(mat1._i[1])
    contrib = mat1._v.unsqueeze(1) * mat2.index_select(0, cols)
    out = _creation.zeros((mat1.shape[0], mat2.shape[1]), dtype=contrib.dtype)
    return out.index_add(0, rows, contrib)


SparseCooTensor.__matmul__ = lambda self, other: mm(self, other)
