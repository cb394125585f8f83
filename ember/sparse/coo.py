"""ember.sparse's COO tensor: the `SparseCooTensor` class, `sparse_coo_tensor`,
`Tensor.to_sparse`, and the sparse x dense products (`mm`, `matmul`, `dense @ sparse`).

A `SparseCooTensor` is not a Tensor: it holds `_i` (int64 indices as a NumPy array,
(sparse_dim, nnz)) and `_v` (a dense ember Tensor of values, (nnz,)). Dense ops never see
it, so their hot path is untouched; any Tensor method it lacks raises NotImplementedError
naming the 'SparseCPU' backend, as torch does. Only sparse dims (dense_dim 0) are supported.

Everything that moves values (coalesce, to_dense, the products, the sums) is written with
ember ops (index_select, index_add, mul), so gradients reach the values tensor the sparse
tensor was built from, and the dense operand of a product.
"""
import numpy as np

from ..core.dtype import torch_name
from ..core.tensor import Size, Tensor, sparse_coo, sparse_csr, strided  # noqa: F401
from ..ops import creation as _creation

# check_sparse_tensor_invariants' global switch (functions.py toggles it)
INVARIANTS = [False]


def _tensor(x, dtype=None):
    return _creation.tensor(x, dtype=dtype)


def _long(a):
    return _creation.tensor(np.ascontiguousarray(a, dtype=np.int64))


def _is_sparse(x):
    return getattr(type(x), "_ember_sparse", False)


def _dim_error(d, n):
    return IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, "
                      f"{max(n, 1) - 1}], but got {d})")


def norm_dim(d, n):
    """A dim in [-n, n) as a non-negative int, else torch's IndexError."""
    if not -max(n, 1) <= d < max(n, 1):
        raise _dim_error(d, n)
    return d % max(n, 1)


class SparseCooTensor:
    """A COO sparse tensor; build it with ``ember.sparse_coo_tensor(indices, values, size)``."""
    layout = sparse_coo
    is_sparse = True
    is_sparse_csr = False
    _ember_sparse = True
    _leaf = False          # built with requires_grad=True: its values are a leaf of its own

    def __init__(self, i, v, size, coalesced):
        self._i, self._v, self._size, self._coalesced = i, v, tuple(size), coalesced

    @property
    def shape(self):
        return Size(self._size)

    def size(self, dim=None):
        return self.shape if dim is None else self._size[dim]

    @property
    def dtype(self):
        return self._v.dtype

    @property
    def device(self):
        return self._v.device

    @property
    def requires_grad(self):
        return self._v.requires_grad

    @property
    def is_leaf(self):
        return self._leaf or not self._v.requires_grad

    @property
    def grad(self):
        """A leaf's gradient, as torch's: a sparse tensor at its distinct indices (sorted)
        holding dL/dS there (each entry of the values got that same gradient)."""
        if not self._leaf or self._v.grad is None:
            return None
        if not self._nnz():
            return SparseCooTensor(self._i, self._v.grad, self._size, True)
        lin = np.ravel_multi_index(tuple(self._i), self._size) if self._size else \
            np.zeros(self._nnz(), np.int64)
        u, first = np.unique(lin, return_index=True)
        i = np.stack(np.unravel_index(u, self._size)).astype(np.int64).reshape(self.dim(), -1)
        return SparseCooTensor(i, self._v.grad.index_select(0, _long(first)), self._size, True)

    @grad.setter
    def grad(self, value):
        if value is not None:
            raise NotImplementedError("ember.sparse: only `grad = None` can be assigned")
        self._v.grad = None

    def dim(self):
        return len(self._size)

    ndim = property(dim)

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
        """Sorted, duplicate-free indices; duplicates' values are summed (differentiably)."""
        if self._coalesced:
            return self
        if self._nnz() == 0:
            return SparseCooTensor(self._i, self._v, self._size, True)
        lin = np.ravel_multi_index(tuple(self._i), self._size)
        u, inv = np.unique(lin, return_inverse=True)
        out = _creation.zeros((len(u),), dtype=self.dtype).index_add(0, _long(inv), self._v)
        i = np.stack(np.unravel_index(u, self._size)).astype(np.int64).reshape(self.dim(), -1)
        return SparseCooTensor(i, out, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        v = self._v if dtype is None else self._v.to(dtype)
        if not self._size:             # 0-dim: the sum of its (0 or more) entries
            return v.sum(dtype=v.dtype)
        if not v.requires_grad:
            a = v._numpy()
            out = np.zeros(self._size, dtype=a.dtype)
            np.add.at(out, tuple(self._i), a)
            return _tensor(out, dtype=v.dtype)
        n = int(np.prod(self._size, dtype=np.int64))
        lin = np.ravel_multi_index(tuple(self._i), self._size) if self._nnz() else \
            np.zeros(0, np.int64)
        flat = _creation.zeros((n,), dtype=v.dtype).index_add(0, _long(lin), v)
        return flat.reshape(self._size)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is not None and layout is not sparse_coo:
            return getattr(self, "to_" + layout.name)()
        return self

    def to_sparse_coo(self):
        return self

    def detach(self):
        return SparseCooTensor(self._i, self._v.detach(), self._size, self._coalesced)

    def t(self):
        if self.dim() != 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.dim()} sparse and 0 dense dimensions")
        return SparseCooTensor(self._i[::-1].copy(), self._v, self._size[::-1], False)

    def mm(self, mat2):
        return mm(self, mat2)

    def matmul(self, other):
        return matmul(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    _sparse_matmul = staticmethod(lambda a, b: matmul(a, b))   # ember.matmul's hook

    def __repr__(self):
        extra = "" if self.dtype.name == "float32" else f", dtype={self.dtype}"
        return (f"tensor(indices={self._indices()!r},\n       values={self._v!r},\n"
                f"       size={self._size}, nnz={self._nnz()}{extra}, layout=ember.sparse_coo)")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  "'SparseCPU' backend (ember.sparse supports only a few ops)")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: a COO tensor of `values` at `indices` (sparse_dim, nnz).
    A `values` tensor that requires grad gets the gradients of what is computed from it."""
    i = np.asarray(indices.numpy() if isinstance(indices, Tensor) else indices)
    if i.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(i.shape)}")
    i = i.astype(np.int64)
    v = values if isinstance(values, Tensor) else _tensor(values, dtype=dtype)
    if dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    if v.dim() != 1 or v.shape[0] != i.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from "
                           f"indices: {i.shape[1]}, nnz from values: {v.shape[0] if v.dim() else 0}")
    if size is None:
        size = tuple(int(m) + 1 for m in i.max(axis=1)) if i.shape[1] else (0,) * i.shape[0]
    else:
        size = tuple(size)
        if len(size) != i.shape[0]:
            raise RuntimeError(f"number of dimensions must be sparse_dim ({i.shape[0]}) + "
                               f"dense_dim (0), but got {len(size)}")
        check = INVARIANTS[0] if check_invariants is None else check_invariants
        if check and i.shape[1]:
            for d in range(i.shape[0]):
                if i[d].min() < 0:
                    raise RuntimeError(f"found negative index {int(i[d].min())} for dim {d}")
                if i[d].max() >= size[d]:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, "
                                       f"size is {size[d]} but found index {int(i[d].max())}")
    if requires_grad:
        v = v.detach().requires_grad_(True)
    out = SparseCooTensor(i, v, size, bool(is_coalesced))
    out._leaf = bool(requires_grad)
    return out


def to_sparse(t, sparseDims=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse / to_sparse_coo: the coalesced COO form of a dense tensor; its values
    are gathered from `t` differentiably."""
    if layout is not None and layout is not sparse_coo:
        if layout is sparse_csr:
            return t.to_sparse_csr(dense_dim)
        raise NotImplementedError(f"ember.sparse: to_sparse(layout={layout}) is not supported")
    if (sparseDims is not None and sparseDims != t.dim()) or dense_dim:
        raise NotImplementedError("ember.sparse: hybrid sparse tensors (dense_dim > 0) are "
                                  "not supported")
    a = t.detach()._numpy()
    if not a.ndim:
        return SparseCooTensor(np.zeros((0, 1), np.int64), t.reshape(1), (), True)
    i = np.stack(np.nonzero(a)).astype(np.int64)
    v = t.reshape(-1).index_select(0, _long(np.flatnonzero(a)))
    return SparseCooTensor(i, v, tuple(t.shape), True)


def _check_dtype(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {torch_name(a.dtype)} but found "
                           f"{torch_name(b.dtype)}")


def _dense_check(x):
    if not isinstance(x, Tensor):
        raise TypeError(f"ember.sparse: expected a dense Tensor, got {type(x).__name__}")


def mm(mat1, mat2):
    """torch.sparse.mm: sparse (n, m) @ dense (m, p) -> dense (n, p), or dense (n, m) @
    sparse (m, p) -> dense; gradients flow to the dense operand and to the sparse tensor's
    values (ember ops: gather, scale, index_add)."""
    if not _is_sparse(mat1):
        return _dense_sparse(mat1, mat2)
    mat1 = mat1.to_sparse()            # CSR -> COO (same values)
    if _is_sparse(mat2):
        raise NotImplementedError("ember.sparse: sparse @ sparse is not supported")
    _dense_check(mat2)
    _check_product(mat1, mat2, mat1.shape[1], mat2.shape[0])
    rows, cols = _long(mat1._i[0]), _long(mat1._i[1])
    contrib = mat1._v.unsqueeze(1) * mat2.index_select(0, cols)
    out = _creation.zeros((mat1.shape[0], mat2.shape[1]), dtype=contrib.dtype)
    return out.index_add(0, rows, contrib)


def _check_product(mat1, mat2, expected, got):
    """torch's checks of a 2-d product with one sparse operand (its message names the
    sparse side's inner size as `expected`)."""
    for t in (mat1, mat2):
        if t.dim() != 2:
            raise _dim_error(1, t.dim())
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {expected}, "
                           f"got {got}")
    _check_dtype(mat1, mat2)


def _dense_sparse(mat1, mat2):
    """dense (n, k) @ sparse (k, p) -> dense (n, p)."""
    _dense_check(mat1)
    mat2 = mat2.to_sparse()
    _check_product(mat1, mat2, mat2.shape[0], mat1.shape[1])
    rows, cols = _long(mat2._i[0]), _long(mat2._i[1])
    contrib = mat1.index_select(1, rows) * mat2._v.unsqueeze(0)
    out = _creation.zeros((mat1.shape[0], mat2.shape[1]), dtype=contrib.dtype)
    return out.index_add(1, cols, contrib)


def matmul(a, b):
    """matmul / @ with a sparse operand (2-D sparse; the dense one 1-D or 2-D), dense out."""
    if _is_sparse(a) and not _is_sparse(b) and isinstance(b, Tensor) and b.dim() == 1:
        return mm(a, b.unsqueeze(1)).squeeze(1)
    if _is_sparse(b) and not _is_sparse(a) and isinstance(a, Tensor) and a.dim() == 1:
        return mm(a.unsqueeze(0), b).squeeze(0)
    return mm(a, b)
