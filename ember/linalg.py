"""ember.linalg: PyTorch's torch.linalg over NumPy's batched LAPACK routines.

Every routine takes a batch of matrices (..., m, n) and hands the whole batch to one NumPy
call. Derivatives are written with ember ops (so they can be differentiated again): inv,
solve, det, slogdet, cholesky, qr, svd (distinct singular values), eigh (distinct
eigenvalues); pinv, matrix_power, lstsq's solution and the matrix norms are compositions of
differentiable ops. Singular inputs raise `LinAlgError`, a RuntimeError, as in PyTorch.

The decompositions (inv, solve, det, cholesky, qr, svd, eigh and their kin) are defined and
registered in ember/ops/linalg_decomp.py, eig and eigvals (general matrices) in
ember/ops/linalg_eig.py; this module composes the rest from them and publishes them all,
with ember/ops/linalg_more.py's and linalg_lu.py's routines.
"""
import math

import numpy as np

from .core import dtype as D
from .core import strides as S
from .core.tensor import Tensor, contiguous_format
from .dispatch import wrap, torch_name, not_implemented
from .dispatch_args import int_arg, tensor_args
from .return_types import _make
from .ops.registry import OpDef, EXTERN, FP32, LOWER_PRECISION, register
from .ops import reduction as _reduction
from .ops.linalg import linalg_cross, _out
from .ops.linalg import matmul  # noqa: F401  (torch.linalg.matmul)
from .ops.linalg_more import _check_float
from .ops.linalg_decomp import (LinAlgError, slogdet_t, svd_t, eigh_t, qr_t,  # noqa: F401
                                _check_matrix, _public, inv, solve, det, slogdet, logdet,
                                cholesky, qr, svd, svdvals, eigh, eigvalsh)


cross = linalg_cross

lstsq_t = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
torch_svd_t = _make("svd", ("U", "S", "V"))


# ---- pinv, lstsq, matrix_rank, matrix_power ------------------------------------------------
def _tolerance(A, s, atol, rtol):
    """PyTorch's rule: tol = max(atol, rtol * s_max), rtol = eps * max(m, n) by default."""
    if rtol is None:
        rtol = 0.0 if (atol is not None and not (isinstance(atol, (int, float)) and atol <= 0)
                       ) else np.finfo(A.dtype.np).eps * max(A.shape[-2:])
    atol = 0.0 if atol is None else atol
    atol = atol._data if isinstance(atol, Tensor) else atol
    rtol = rtol._data if isinstance(rtol, Tensor) else rtol
    smax = s.max(axis=-1) if s.shape[-1] else np.zeros(s.shape[:-1])
    return np.maximum(atol, rtol * smax)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse through the SVD (differentiable by composition)."""
    if A.dim() < 2 or A.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"linalg.pinv({torch_name(A.dtype)}{{{list(A.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble "
                           "types")
    U, Sv, Vh = svd(A, full_matrices=False)
    tol = _tolerance(A, Sv._data, atol, rtol)
    keep = wrap(Sv._data > np.asarray(tol)[..., None], D.bool_)
    safe = Sv.masked_fill(keep.logical_not(), 1.0)
    sinv = (1 / safe).masked_fill(keep.logical_not(), 0.0)
    return _out(Vh.mT @ (sinv.unsqueeze(-1) * U.mT), out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """Number of singular values above the tolerance (int64)."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at "
                           "least 2 dimensions.")
    _check_matrix("linalg.matrix_rank", A, square=False)
    if tol is not None:
        atol, rtol = tol, 0.0
    s = np.linalg.svd(A._data, compute_uv=False)
    t = _tolerance(A, s, atol, rtol)
    return wrap((s > np.asarray(t)[..., None]).sum(axis=-1), D.int64)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A X = B (solution = pinv(A) @ B, differentiable)."""
    if driver is None:
        driver = "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           f"gelsy, gelsd, gelss)")
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    _check_matrix("torch.linalg.lstsq", A, square=False)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {A.dtype} and other's dtype {B.dtype}")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    X = pinv(A, rtol=rcond) @ Bm
    s = np.linalg.svd(A._data, compute_uv=False)
    rank = matrix_rank(A, rtol=rcond)
    res = np.zeros((0,), A.dtype.np)
    if driver != "gelsy" and m > n and bool((rank._data == n).all()):
        r = np.matmul(A._data, X._data) - Bm._data
        res = (r * r).sum(axis=-2)
        if vector:
            res = res[..., 0]
    sv = s if driver in ("gelsd", "gelss") else np.zeros((0,), A.dtype.np)
    if driver == "gels":
        rank = wrap(np.zeros((0,), np.int64), D.int64)
    return lstsq_t(X.squeeze(-1) if vector else X, wrap(res, A.dtype), rank,
                   wrap(sv, A.dtype))


def matrix_power(A, n, *, out=None):
    """A^n by repeated squaring (n < 0 uses the inverse), as a product of ember ops."""
    tensor_args("matrix_power", ("input", 1, A))
    n = int_arg(n, "matrix_power", "n", 2)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if n == 0:
        eye = np.broadcast_to(np.eye(A.shape[-1], dtype=A.dtype.np), A.shape)
        return _out(wrap(eye.copy() if type(A._data) is not _M.MetaArray else
                         _M.meta_array(A.shape, A.dtype.np), A.dtype), out)
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:   # a loop over the bits of the exponent
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(result, out)


# ---- norms --------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The p-norm of `x` over `dim` (all elements by default); ord may be inf, -inf or 0.
    One implementation, shared with torch.norm: ember/ops/reduction.py."""
    return _out(_reduction.vector_norm(x, ord, dim, keepdim, dtype=dtype), out)


def _move_to_end(A, dim):
    d0, d1 = S.wrap_dims(dim, A.dim())
    return A.movedim((d0, d1), (-2, -1)), (d0, d1)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Frobenius, nuclear, 1, -1, 2, -2, inf or -inf norm of each matrix."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    if ord == "fro":
        return _out(vector_norm(A, 2, dim, keepdim), out)
    if ord not in ("nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    _check_float("linalg.matrix_norm", A)
    M, (d0, d1) = _move_to_end(A, dim)
    if ord == "nuc":
        r = svdvals(M).sum(-1)
    elif ord in (2, -2):
        r = vector_norm(svdvals(M), math.inf if ord == 2 else -math.inf, -1)
    else:
        red, over = (-2, -1) if ord in (1, -1) else (-1, -2)
        r = vector_norm(M.abs().sum(red, keepdim=True), math.inf if ord > 0 else -math.inf,
                        over, keepdim=True).squeeze(-1).squeeze(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return _out(r, out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector norm or matrix norm, chosen from `ord` and `dim` as in PyTorch."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim if dim is not None
                           else (-2, -1), keepdim, dtype=dtype, out=out)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord}")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of vectors along `dim`: ``(x.conj() * y).sum(dim)``.

    >>> ember.linalg.vecdot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
    tensor(11.)
    """
    for t in (x, y):
        if isinstance(t, Tensor) and not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                               f"input. Got {torch_name(t.dtype)}")
    if isinstance(x, Tensor) and isinstance(y, Tensor) and x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {torch_name(x.dtype)} and y of type "
                           f"{torch_name(y.dtype)} instead")
    if isinstance(x, Tensor) and x.dtype.is_complex:
        x = x.conj()
    return _out((x * y).sum(dim), out)


def multi_dot(tensors, *, out=None):
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    r = tensors[0]
    for t in tensors[1:]:
        r = r @ t
    return _out(r, out)


# ---- torch.* aliases -----------------------------------------------------------------------
def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    if isinstance(input, Tensor) and input.dim() < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input.dim()} dimensions instead")
    U, Sv, Vh = svd(input, full_matrices=not some)
    return torch_svd_t(U, Sv, Vh.mT)


def _torch_cholesky(input, upper=False, *, out=None):
    # torch.cholesky returns an empty input (any shape, any dtype) before checking it, then
    # checks the matrix shape ("cholesky: ..."), then its kernel refuses the dtype
    if isinstance(input, Tensor):
        if input.numel() == 0:
            return _out(input.clone(memory_format=contiguous_format), out)
        if input.dim() < 2:
            raise RuntimeError("cholesky: The input tensor A must have at least 2 dimensions.")
        if input.shape[-1] != input.shape[-2]:
            raise RuntimeError(f"cholesky: A must be batches of square matrices, but they are "
                               f"{input.shape[-2]} by {input.shape[-1]} matrices")
        if not input.dtype.is_floating_point and not input.dtype.is_complex or \
                input.dtype in (D.float16, D.bfloat16):
            raise not_implemented("cholesky_cpu", input.dtype)
    return cholesky(input, upper=upper, out=out)


def _torch_qr(input, some=True, *, out=None):
    return qr(input, "reduced" if some else "complete")


def _pinverse(input, rcond=1e-15):
    tensor_args("pinverse", ("input", 1, input))
    return pinv(input, rtol=rcond)


# ---- the public functions: one OpDef each ----------------------------------------------------
# As for the decompositions (ops/linalg_decomp.py, which registers those): each is published
# behind the mode seam and its autocast policy (OpDef.amp); the LAPACK routines run in float32
# under autocast, vecdot in the lower precision.
matrix_rank = register(_public("linalg_matrix_rank", amp=FP32), matrix_rank)
lstsq = register(_public("linalg_lstsq", inputs=("A", "B"), amp=FP32), lstsq)
vecdot = register(_public("linalg_vecdot", inputs=("x", "y"), amp=LOWER_PRECISION), vecdot)


def _alias(f):
    return lambda *args, **kwargs: f(*args, **kwargs)


def _matrix_power_jvp(tan, result, A, n, *, out=None):
    """Forward mode: d(A^n) = sum_k A^k dA A^(n-1-k), by X_{m+1} = X_m A + A^m dA."""
    t = tan(A)
    if n == 0:
        return None
    if n < 0:
        A = inv(A)
        t = -(A @ t @ A)
        n = -n
    x, power = t, A
    for _ in range(n - 1):
        x = x @ A + power @ t
        power = power @ A
    return x


_JVP = {matrix_power: _matrix_power_jvp}   # forward-mode rules (autograd/forward_rules.py)
for _name, _f in (("inverse", inv), ("det", det), ("slogdet", slogdet), ("logdet", logdet),
                  ("pinverse", _pinverse), ("matrix_power", matrix_power), ("svd", _torch_svd),
                  ("cholesky", _torch_cholesky), ("qr", _torch_qr)):
    register(OpDef(_name, EXTERN, amp=FP32 if _name == "pinverse" else None,
                   jvp=_JVP.get(_f)), _alias(_f), names=(_name,))

from .ops.linalg_more import (solve_triangular, matrix_exp, householder_product,  # noqa: E402,F401
                              tensorinv, tensorsolve, cond)
from .ops.linalg_lu import (lu_factor, lu_factor_ex, lu, lu_solve, inv_ex,  # noqa: E402,F401
                            solve_ex, cholesky_ex, ldl_factor, ldl_factor_ex, ldl_solve)
from .ops.misc_functions import linalg_vander as vander  # noqa: E402,F401
from .ops.linalg_eig import eig, eigvals  # noqa: E402,F401
# meta rules (ember/ops/meta_rules.py): batch dims and matrix dims from the metadata
from .ops import meta_rules as _M  # noqa: E402
from .ops.registry import OPS as _OPS  # noqa: E402
for _name, _rule in (("linalg_inv", _M.square_matrix("linalg.inv")),
                     ("inverse", _M.square_matrix("linalg.inv")),
                     ("linalg_cholesky", _M.square_matrix("linalg.cholesky")),
                     ("cholesky", _M.square_matrix("linalg.cholesky")),
                     ("linalg_solve", _M.linalg_solve), ("det", _M.det), ("logdet", _M.det),
                     ("slogdet", _M.slogdet), ("linalg_qr", _M.linalg_qr), ("qr", _M.linalg_qr),
                     ("linalg_svd", _M.linalg_svd), ("linalg_svdvals", _M.svdvals),
                     ("linalg_eigh", _M.eigh), ("linalg_eigvalsh", _M.eigvalsh),
                     ("pinverse", _M.pinverse)):
    _OPS[_name].meta = _rule


def _matrix_rank_meta(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """matrix_rank on meta: the checks, then an int64 result of the batch shape."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at "
                           "least 2 dimensions.")
    _check_matrix("linalg.matrix_rank", A, square=False)
    return _M.result(tuple(A.shape[:-2]), D.int64)


_OPS["linalg_matrix_rank"].meta = _matrix_rank_meta
