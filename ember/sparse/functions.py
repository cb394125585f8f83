"""torch.sparse's functions on ember's sparse tensors: sum, addmm, sampled_addmm, softmax,
log_softmax, spdiags, check_sparse_tensor_invariants, and ember.spmm (mm is in coo.py).

All are written with ember ops on the values tensor, so gradients reach it.
"""
import numpy as np

from ..core.tensor import sparse_coo, sparse_csr
from ..ops import creation as _creation
from . import coo as _coo
from .coo import SparseCooTensor, _long, _is_sparse, norm_dim, _check_dtype
from .csr import SparseCsrTensor


def _layout_name(x):
    if _is_sparse(x):
        return "SparseCsr" if x.layout is sparse_csr else "Sparse"
    return "Strided"


def _need_coo(x, what="coalesce"):
    if not (_is_sparse(x) and x.layout is sparse_coo):
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got "
                           f"{_layout_name(x)}")


def sum(input, dim=None, dtype=None):
    """torch.sparse.sum: over all dims a dense 0-dim tensor; over some dims a coalesced
    sparse tensor of the remaining ones (dense when `dim` names every dim)."""
    _need_coo(input)
    v = input._v if dtype is None else input._v.to(dtype)
    if dim is None:
        return v.sum() if dtype is None else v.sum(dtype=dtype)
    dims = [dim] if isinstance(dim, int) else list(dim)
    n = input.dim()
    dims = sorted({norm_dim(d, n) for d in dims})
    if len(dims) == n:
        return v.sum() if dtype is None else v.sum(dtype=dtype)
    keep = [d for d in range(n) if d not in dims]
    size = tuple(input._size[d] for d in keep)
    return SparseCooTensor(input._i[keep], v, size, False).coalesce()


def _coo_sum(self, dim=None, keepdim=False, dtype=None):
    """SparseCooTensor.sum: torch.sparse.sum (keepdim is not supported)."""
    if keepdim:
        raise NotImplementedError("ember.sparse: sum(keepdim=True) is not supported")
    return sum(self, dim, dtype)


SparseCooTensor.sum = _coo_sum


def addmm(mat, mat1, mat2, *, beta=1., alpha=1.):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse; dense result
    (mat is not read when beta is 0)."""
    r = _coo.mm(mat1, mat2)
    if alpha != 1:
        r = r * alpha
    if beta == 0:
        return r
    return (mat if beta == 1 else mat * beta) + r


def sampled_addmm(input, mat1, mat2, *, beta=1., alpha=1., out=None):
    """torch.sparse.sampled_addmm: a CSR tensor of input's pattern holding
    alpha * (mat1 @ mat2) at those places plus beta * input's values (2-D, no batch);
    gradients reach mat1, mat2 and input's values."""
    if not (_is_sparse(input) and input.layout is sparse_csr):
        raise NotImplementedError("Could not run 'aten::sparse_sampled_addmm' with arguments "
                                  f"from the '{'Sparse' if _is_sparse(input) else ''}CPU' "
                                  "backend (ember.sparse: input must be a CSR tensor)")
    if out is not None:
        raise NotImplementedError("ember.sparse: sampled_addmm(out=) is not supported")
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.dim() != 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got "
                               f"{t.dim()}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same number "
                           f"of columns and rows, got {mat1.shape[1]} and {mat2.shape[0]}")
    if tuple(input.shape) != (mat1.shape[0], mat2.shape[1]):
        raise RuntimeError(f"sampled_addmm: Expected input to have shape "
                           f"[{mat1.shape[0]}, {mat2.shape[1]}], got {list(input.shape)}")
    _check_dtype(input, mat1), _check_dtype(input, mat2)
    rows, cols = _long(input._rows()), _long(input._col)
    prod = (mat1.index_select(0, rows) * mat2.index_select(1, cols).t()).sum(1)
    v = prod if alpha == 1 else prod * alpha
    if beta != 0:
        v = v + (input._v if beta == 1 else input._v * beta)
    return SparseCsrTensor(input._crow, input._col, v, input._size)


def spmm(input, mat2):
    """torch.spmm: sparse @ dense -> dense."""
    return _coo.mm(input, mat2)


def _groups(c, dim):
    """For a coalesced COO tensor: each entry's group along `dim` (the linear index of its
    other coordinates) and the number of groups."""
    keep = [d for d in range(c.dim()) if d != dim]
    if not keep or not c._nnz():
        return np.zeros(c._nnz(), np.int64), 1
    lin = np.ravel_multi_index(tuple(c._i[keep]), tuple(c._size[d] for d in keep))
    u, inv = np.unique(lin, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), len(u)


def _softmax_parts(input, dim, dtype):
    _need_coo(input, "softmax")
    dim = norm_dim(dim, input.dim())
    c = input.coalesce()
    v = c._v if dtype is None else c._v.to(dtype)
    g, ng = _groups(c, dim)
    m = np.full(ng, -np.inf, dtype=v.detach()._numpy().dtype)
    np.maximum.at(m, g, v.detach()._numpy())
    gi = _long(g)
    shifted = v - _creation.tensor(m[g], dtype=v.dtype)
    total = _creation.zeros((ng,), dtype=v.dtype).index_add(0, gi, shifted.exp())
    return c, shifted, total, gi


def softmax(input, dim, *, dtype=None):
    """torch.sparse.softmax: softmax over the specified entries along `dim` (the unspecified
    ones count as -inf); a coalesced sparse tensor of the same pattern."""
    c, shifted, total, gi = _softmax_parts(input, dim, dtype)
    return SparseCooTensor(c._i, shifted.exp() / total.index_select(0, gi), c._size, True)


def log_softmax(input, dim, *, dtype=None):
    """torch.sparse.log_softmax, with softmax's convention for unspecified entries."""
    c, shifted, total, gi = _softmax_parts(input, dim, dtype)
    return SparseCooTensor(c._i, shifted - total.log().index_select(0, gi), c._size, True)


def spdiags(diagonals, offsets, shape, layout=None):
    """torch.sparse.spdiags: row k of `diagonals` on diagonal offsets[k] of a `shape` matrix
    (element j of the row lands in column j); COO (uncoalesced) or the given layout."""
    if diagonals.dim() != 2:
        raise RuntimeError(f"Diagonals must be 2D, got {diagonals.dim()}D")
    off = np.asarray(offsets.numpy() if hasattr(offsets, "numpy") else offsets).reshape(-1)
    if off.shape[0] != diagonals.shape[0]:
        raise RuntimeError("Number of diagonals must match the number of offsets")
    if len(np.unique(off)) != len(off):
        raise RuntimeError("Offset tensor contains duplicate values")
    nrow, ncol = shape
    rows, cols, src = [], [], []
    for k, o in enumerate(off.tolist()):
        j = np.arange(max(0, o), min(ncol, nrow + o, diagonals.shape[1]), dtype=np.int64)
        rows.append(j - o), cols.append(j), src.append(k * diagonals.shape[1] + j)
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
    v = diagonals.reshape(-1).index_select(0, _long(cat(src)))
    out = SparseCooTensor(np.stack([cat(rows), cat(cols)]), v, (nrow, ncol), False)
    if layout is None or layout is sparse_coo:
        return out
    if layout is sparse_csr:
        return out.to_sparse_csr()
    raise RuntimeError(f"Only COO and CSR layouts are supported in ember.sparse.spdiags, got "
                       f"{layout}")


class check_sparse_tensor_invariants:
    """torch.sparse.check_sparse_tensor_invariants: a context manager / decorator that turns
    on (or off) the invariant checks of sparse_coo_tensor / sparse_csr_tensor when their
    `check_invariants` is None; `is_enabled()`, `enable()`, `disable()` set it globally."""

    @staticmethod
    def is_enabled():
        return _coo.INVARIANTS[0]

    @staticmethod
    def enable():
        _coo.INVARIANTS[0] = True

    @staticmethod
    def disable():
        _coo.INVARIANTS[0] = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved = None

    def __enter__(self):
        if self.saved is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved = _coo.INVARIANTS[0]
        _coo.INVARIANTS[0] = self.state
        return self

    def __exit__(self, *exc):
        _coo.INVARIANTS[0] = self.saved
        self.saved = None

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return run
