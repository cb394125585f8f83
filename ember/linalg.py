"""ember.linalg: PyTorch's torch.linalg over NumPy's batched LAPACK routines.

Every routine takes a batch of matrices (..., m, n) and hands the whole batch to one NumPy
call. Derivatives are written with ember ops (so they can be differentiated again): inv,
solve, det, slogdet, cholesky, qr, svd (distinct singular values), eigh (distinct
eigenvalues); pinv, matrix_power, lstsq's solution and the matrix norms are compositions of
differentiable ops. Singular inputs raise `LinAlgError`, a RuntimeError, as in PyTorch.
"""
import math

import numpy as np

from .core import dtype as D
from .core import strides as S
from .core.tensor import Tensor
from .dispatch import int_arg, wrap, torch_name, not_implemented, tensor_args
from .return_types import _make
from .ops.registry import OpDef, EXTERN, FP32, LOWER_PRECISION, register
from .ops import reduction as _reduction
from .ops.linalg import finish, record_fn, linalg_cross, _out, diag_embed as _diag_embed
from .ops.linalg import matmul  # noqa: F401  (torch.linalg.matmul)
from .ops.linalg_more import _check_float


class LinAlgError(RuntimeError):
    """Raised for singular or non-positive-definite inputs (``torch.linalg.LinAlgError``)."""


cross = linalg_cross

slogdet_t = _make("linalg_slogdet", ("sign", "logabsdet"))
svd_t = _make("linalg_svd", ("U", "S", "Vh"))
eigh_t = _make("linalg_eigh", ("eigenvalues", "eigenvectors"))
qr_t = _make("linalg_qr", ("Q", "R"))
lstsq_t = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
torch_svd_t = _make("svd", ("U", "S", "V"))


# ---- checks -------------------------------------------------------------------------------
def _check_matrix(name, A, square=True, kernel=None, ints=False, arg="A"):
    _check_float(name, A, kernel, ints)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _batch_prefix(a, b):
    return f"(Batch element {b}): " if a.ndim > 2 else ""


def _first_zero_pivot(a):
    """(batch element, 1-based pivot) of the first exactly-zero pivot of LU with partial
    pivoting, as LAPACK's getrf reports it. Vectorised over the batch (error path only)."""
    n = a.shape[-1]
    m = a.reshape(-1, n, n).astype(np.float64, copy=True)
    rows = np.arange(m.shape[0])
    piv = np.zeros((m.shape[0], n))
    for k in range(n):
        p = k + np.argmax(np.abs(m[:, k:, k]), axis=1)
        top = m[rows, k].copy()
        m[rows, k] = m[rows, p]
        m[rows, p] = top
        piv[:, k] = m[:, k, k]
        safe = np.where(piv[:, k] == 0, 1.0, piv[:, k])
        f = m[:, k + 1:, k] / safe[:, None]
        m[:, k + 1:, :] -= f[:, :, None] * m[:, None, k, :]
    zero = np.abs(piv) == 0
    if not zero.any():   # rounding hid the exact zero: report the smallest pivot
        b, k = np.unravel_index(np.argmin(np.abs(piv)), piv.shape)
    else:
        b = int(np.argmax(zero.any(axis=1)))
        k = int(np.argmax(zero[b]))
    return int(b), int(k) + 1


def _singular(name, a):
    b, k = _first_zero_pivot(a)
    return LinAlgError(f"{name}: {_batch_prefix(a, b)}The diagonal element {k} is zero, the "
                       "inversion could not be completed because the input matrix is singular.")


# ---- inv, solve ------------------------------------------------------------------------------
_INV = OpDef("linalg_inv", EXTERN, node_name="LinalgInvExBackward0",
             grads={"self": lambda g, result: -(result.mT @ g @ result.mT)})


def inv(A, *, out=None):
    """Inverse of each square matrix in the batch; singular ones raise LinAlgError."""
    _check_matrix("linalg.inv", A)
    a = A._data
    try:
        r = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _singular("linalg.inv", a) from None
    return _out(finish(_INV, (A,), r, A.dtype), out)


def _solve_mat(A, B):
    """X with A X = B for matrices B (..., n, k); batch dims broadcast."""
    try:
        with np.errstate(all="ignore"):
            r = np.linalg.solve(A._data, B._data)
    except np.linalg.LinAlgError:
        b, _ = _first_zero_pivot(np.broadcast_to(A._data, A._data.shape))
        raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(A._data, b)}The solver failed "
                          "because the input matrix is singular.") from None
    return finish(_SOLVE, (A, B), r, A.dtype)


_SOLVE = OpDef("linalg_solve", EXTERN, inputs=("A", "B"), node_name="LinalgSolveExBackward0",
               grads={"A": lambda g, A, result: -(_solve_mat(A.mT, g) @ result.mT),
                      "B": lambda g, A: _solve_mat(A.mT, g)})


def solve(A, B, *, left=True, out=None):
    """Solve ``A X = B`` (or ``X A = B`` with left=False). B may be a (batch of) vector(s)."""
    _check_matrix("linalg.solve", A, kernel="lu_cpu")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {torch_name(A.dtype)} and B of type {torch_name(B.dtype)} "
                           "instead")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    if not left:
        A, Bm = A.mT, Bm.mT
    if Bm.dim() < 2 or Bm.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-1] if vector else 'x'.join(map(str, B.shape[-2:]))}"
                           f"{'x1' if vector else ''})")
    S.broadcast_shapes(A.shape[:-2], Bm.shape[:-2])
    X = _solve_mat(A, Bm)
    if not left:
        X = X.mT
    return _out(X.squeeze(-1) if vector else X, out)


# ---- det, slogdet ---------------------------------------------------------------------------
def _cofactor(A):
    """d det(A) / dA, valid for singular A too: det(U)det(V) U diag(prod_{j!=i} s_j) V^T."""
    a = A._data.astype(np.float64)
    U, s, Vh = np.linalg.svd(a)
    n = s.shape[-1]
    ones = np.ones(s.shape[:-1] + (1,))
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    excl = left * right if n else s
    sign = np.linalg.det(U) * np.linalg.det(Vh)
    c = (U * excl[..., None, :]) @ Vh * sign[..., None, None]
    return wrap(c, A.dtype)


def _det_grad(g, self, result):
    ge = (g * result).unsqueeze(-1).unsqueeze(-1)
    if bool((result._data != 0).all()):
        return ge * inv(self).mT
    return g.unsqueeze(-1).unsqueeze(-1) * _cofactor(self)


_DET = OpDef("linalg_det", EXTERN, node_name="LinalgDetBackward0",
             grads={"self": _det_grad})


def det(A, *, out=None):
    """Determinant of each square matrix."""
    _check_matrix("linalg.det", A, kernel="lu_cpu")
    return _out(finish(_DET, (A,), np.linalg.det(A._data), A.dtype), out)


def slogdet(A, *, out=None):
    """(sign, log|det|) of each square matrix; log|det| is differentiable."""
    _check_matrix("linalg.slogdet", A)
    sign, lad = np.linalg.slogdet(A._data)
    sign_t, lad_t = wrap(sign, A.dtype), wrap(lad, A.dtype)

    def backward(grads, needs, A):
        g = grads[1] if len(grads) > 1 else None
        if g is None:
            return (None,)
        return (g.unsqueeze(-1).unsqueeze(-1) * inv(A).mT,)
    record_fn("LinalgSlogdetBackward0", (A,), (sign_t, lad_t), backward, (A,))
    return slogdet_t(sign_t, lad_t)


def logdet(A):
    """log(det(A)): nan for a negative determinant, -inf for a singular matrix."""
    sign, lad = slogdet(A)
    with np.errstate(all="ignore"):
        return lad + wrap(np.log(sign._data), A.dtype)


# ---- cholesky -----------------------------------------------------------------------------
def _cholesky_grad(gL, L):
    P = L.mT @ gL
    P = P.tril() - 0.5 * _diag_embed(P.diagonal(0, -2, -1))
    Linv = inv(L)
    Sm = Linv.mT @ P @ Linv
    return 0.5 * (Sm + Sm.mT)


_CHOL = OpDef("linalg_cholesky", EXTERN, attrs={"upper": False},
              node_name="LinalgCholeskyExBackward0",
              grads={"self": lambda g, result, upper:
                     _cholesky_grad(g.mT, result.mT) if upper else _cholesky_grad(g, result)})


def cholesky(A, *, upper=False, out=None):
    """Lower (or upper) Cholesky factor of symmetric positive-definite matrices."""
    tensor_args("linalg_cholesky", ("input", 1, A))
    _check_matrix("linalg.cholesky", A, kernel="cholesky_cpu")
    a = A._data
    if upper:    # torch (LAPACK uplo='U') reads the upper triangle: the lower one of A^H
        a = np.conj(np.swapaxes(a, -1, -2))
    try:
        L = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        # the order of the first leading minor that is not positive-definite
        n = a.shape[-1]
        flat = a.reshape(-1, n, n)
        for k in range(1, n + 1):   # a loop over the matrix order, on the error path only
            bad = ~(np.linalg.eigvalsh(flat[:, :k, :k]).min(axis=-1) > 0)
            if bad.any():
                b = int(np.argmax(bad))
                break
        raise LinAlgError(f"linalg.cholesky: {_batch_prefix(a, b)}The factorization could not "
                          "be completed because the input is not positive-definite (the leading "
                          f"minor of order {k} is not positive-definite).") from None
    r = np.ascontiguousarray(np.conj(np.swapaxes(L, -1, -2))) if upper else L   # U = L^H
    return _out(finish(_CHOL, (A,), r, A.dtype, {"upper": upper}), out)


# ---- qr -----------------------------------------------------------------------------------
def _qr_grad_tall(gQ, gR, Q, R):
    """A = QR with A (m, n), m >= n, reduced mode."""
    M = R @ gR.mT - gQ.mT @ Q
    low = M.tril(-1)
    M = low + low.mT + _diag_embed(M.diagonal(0, -2, -1))
    b = gQ + Q @ M
    return solve(R, b.mT).mT     # b R^{-T}


def qr(A, mode="reduced", *, out=None):
    """QR decomposition; mode 'reduced' (default), 'complete' or 'r' (Q is then empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _check_matrix("linalg.qr", A, square=False, kernel="geqrf_cpu")
    m, n = A.shape[-2:]
    if mode == "r":
        R = np.linalg.qr(A._data, mode="r")
        Q = np.zeros((0,), A.dtype.np)
    else:
        Q, R = np.linalg.qr(A._data, mode=mode)
    Qt, Rt = wrap(Q, A.dtype), wrap(R, A.dtype)

    def backward(grads, needs, A, Q, R):
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        gQ = grads[0] if grads[0] is not None else Q * 0
        gR = grads[1] if len(grads) > 1 and grads[1] is not None else R * 0
        if m >= n:
            return (_qr_grad_tall(gQ, gR, Q, R),)
        # wide: A = Q [X | Y]; Y = Q^T A[:, m:] feeds gQ through the extra columns
        X, Y = R[..., :, :m], R[..., :, m:]
        gX, gY = gR[..., :, :m], gR[..., :, m:]
        V = A[..., :, m:]
        gU = _qr_grad_tall(gQ + V @ gY.mT, gX, Q, X)
        from .ops.joining import cat
        return (cat([gU, Q @ gY], -1),)
    record_fn("LinalgQrBackward0", (A,), (Qt, Rt), backward, (A, Qt, Rt))
    return qr_t(Qt, Rt)


# ---- svd, eigh ------------------------------------------------------------------------------
def _offdiag_inverse(d):
    """F[i, j] = 1 / d[i, j] off the diagonal, 0 on it (d: differences of eigen/sing. values)."""
    k = d.shape[-1]
    eye = wrap(np.eye(k, dtype=bool), D.bool_)
    safe = d.masked_fill(eye, 1.0)
    return (1 / safe).masked_fill(eye, 0.0)


def _svd_grad(gU, gS, gVh, U, S, Vh, full):
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full:   # PyTorch ignores the gradients of the extra columns/rows
        U, Vh = U[..., :, :k], Vh[..., :k, :]
        gU = gU[..., :, :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
    if gU is None and gVh is None:
        return (U * gS.unsqueeze(-2)) @ Vh
    V = Vh.mT
    gU = gU if gU is not None else U * 0
    gV = gVh.mT if gVh is not None else V * 0
    s2 = S * S
    F = _offdiag_inverse(s2.unsqueeze(-2) - s2.unsqueeze(-1))   # 1 / (s_j^2 - s_i^2)
    UtgU = U.mT @ gU
    VtgV = V.mT @ gV
    Sm = S.unsqueeze(-1)      # column: scales rows
    inner = (F * (UtgU - UtgU.mT)) * S.unsqueeze(-2) + Sm * (F * (VtgV - VtgV.mT))
    if gS is not None:
        inner = inner + _diag_embed(gS)
    gA = U @ inner @ Vh
    if m > k:
        gA = gA + (gU - U @ UtgU) @ (Vh / Sm)
    if n > k:
        gA = gA + (U / S.unsqueeze(-2)) @ (gV.mT - VtgV.mT @ Vh)
    return gA


def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh, singular values in descending order."""
    tensor_args("linalg_svd", ("A", 1, A))
    _check_matrix("linalg.svd", A, square=False, kernel="linalg_svd_cpu")
    U, s, Vh = np.linalg.svd(A._data, full_matrices=full_matrices)
    Ut, St, Vht = wrap(U, A.dtype), wrap(s, A.dtype), wrap(Vh, A.dtype)

    def backward(grads, needs, U, S, Vh):
        grads = tuple(grads) + (None,) * (3 - len(grads))
        return (_svd_grad(grads[0], grads[1], grads[2], U, S, Vh, full_matrices),)
    record_fn("LinalgSvdBackward0", (A,), (Ut, St, Vht), backward, (Ut, St, Vht))
    return svd_t(Ut, St, Vht)


def svdvals(A, *, driver=None, out=None):
    """Singular values, descending."""
    if A._requires_grad:
        return svd(A, full_matrices=False).S
    _check_matrix("linalg.svd", A, square=False,   # (torch's svdvals: its svd's checks)
                  kernel="linalg_svd_cpu")
    return wrap(np.linalg.svd(A._data, compute_uv=False), A.dtype)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices; only the
    `UPLO` triangle is read."""
    _check_matrix("linalg.eigh", A, kernel="linalg_eigh_cpu", ints=True)
    _check_uplo(UPLO)
    w, V = np.linalg.eigh(A._data, UPLO=UPLO)
    wt, Vt = wrap(w, A.dtype), wrap(V, A.dtype)

    def backward(grads, needs, w, V):
        gw = grads[0]
        gV = grads[1] if len(grads) > 1 else None
        inner = _diag_embed(gw) if gw is not None else None
        if gV is not None:
            F = _offdiag_inverse(w.unsqueeze(-2) - w.unsqueeze(-1))   # 1 / (w_j - w_i)
            term = F * (V.mT @ gV)
            inner = term if inner is None else inner + term
        return (V @ inner @ V.mT,)
    record_fn("LinalgEighBackward0", (A,), (wt, Vt), backward, (wt, Vt))
    return eigh_t(wt, Vt)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues of symmetric matrices, ascending."""
    if A._requires_grad:
        return eigh(A, UPLO).eigenvalues
    _check_matrix("linalg.eigvalsh", A, kernel="linalg_eigh_cpu", ints=True)
    _check_uplo(UPLO)
    return wrap(np.linalg.eigvalsh(A._data, UPLO=UPLO), A.dtype)


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
        return _out(wrap(eye.copy(), A.dtype), out)
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
    if isinstance(x, Tensor) and isinstance(y, Tensor) and x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {torch_name(x.dtype)} and y of type "
                           f"{torch_name(y.dtype)} instead")
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
    if isinstance(input, Tensor) and not (input.dtype.is_floating_point or
                                          input.dtype.is_complex):
        raise not_implemented("cholesky_cpu", input.dtype)   # (torch.cholesky: the kernel's)
    return cholesky(input, upper=upper, out=out)


def _torch_qr(input, some=True, *, out=None):
    return qr(input, "reduced" if some else "complete")


def _pinverse(input, rcond=1e-15):
    tensor_args("pinverse", ("input", 1, input))
    return pinv(input, rtol=rcond)


# ---- the public functions: one OpDef each ----------------------------------------------------
# Each is published behind the mode seam (tracer, profiler) and its autocast policy, which the
# registry applies (OpDef.amp): the LAPACK routines run in float32 under autocast, as in
# PyTorch's CPU autocast lists; vecdot runs in the lower precision. Where a record above
# already carries the op's derivative (inv, solve, cholesky), that record is the op's one
# definition; the others attach their backward with record_fn.
def _public(name, **fields):
    return OpDef(name, EXTERN, function=False, method=False, **fields)


_INV.amp = _SOLVE.amp = _CHOL.amp = FP32
for _op in (_INV, _SOLVE, _CHOL):
    _op.function = _op.method = False
inv = register(_INV, inv)
solve = register(_SOLVE, solve)
cholesky = register(_CHOL, cholesky)
qr = register(_public("linalg_qr", amp=FP32), qr)
svd = register(_public("linalg_svd", amp=FP32), svd)
svdvals = register(_public("linalg_svdvals", amp=FP32), svdvals)
eigh = register(_public("linalg_eigh", amp=FP32), eigh)
eigvalsh = register(_public("linalg_eigvalsh", amp=FP32), eigvalsh)
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
