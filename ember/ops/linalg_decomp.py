"""The matrix decompositions of ember.linalg and what they solve: inv, solve, det, slogdet,
logdet, cholesky, qr, svd / svdvals and eigh / eigvalsh, each over a whole batch in one
NumPy LAPACK call, with derivatives written in ember ops (so they can be differentiated
again) and PyTorch's errors (`LinAlgError`, a RuntimeError, for singular inputs).

ember/linalg.py publishes these as ember.linalg, with the routines composed from them
(pinv, lstsq, matrix_rank, matrix_power, the norms) and the torch.* aliases.
"""
import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..dispatch import wrap, torch_name
from ..dispatch_args import tensor_args
from ..return_types import _make
from .registry import OpDef, EXTERN, FP32, register
from ..autograd.derivative import Derivative
from .linalg import finish, record_fn, _out, diag_embed as _diag_embed
from .linalg_more import _check_float
from . import meta_rules as _M


class LinAlgError(RuntimeError):
    """Raised for singular or non-positive-definite inputs (``torch.linalg.LinAlgError``)."""
    __module__ = "ember.linalg"      # where it is published (tracebacks name it so)


slogdet_t = _make("linalg_slogdet", ("sign", "logabsdet"))
svd_t = _make("linalg_svd", ("U", "S", "Vh"))
eigh_t = _make("linalg_eigh", ("eigenvalues", "eigenvectors"))
qr_t = _make("linalg_qr", ("Q", "R"))


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
    except _M.MetaData:     # meta operands: the metadata of NumPy's result
        _M.check_meta_devices((A, B), {})
        shape = S.broadcast_shapes(A._data.shape[:-2], B._data.shape[:-2])
        r = _M.meta_array(shape + B._data.shape[-2:], A.dtype.np,
                          _M.gufunc_layout(((A, 2), (B, 2)), shape, B._data.shape[-2:]))
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


_DET = Derivative("linalg_det", of="det", node_name="LinalgDetBackward0",
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
        from .joining import cat
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


# ---- the public functions: one OpDef each ----------------------------------------------------
# Each is published behind the mode seam (tracer, profiler) and its autocast policy, which the
# registry applies (OpDef.amp): the LAPACK routines run in float32 under autocast, as in
# PyTorch's CPU autocast lists. Where a record above already carries the op's derivative
# (inv, solve, cholesky), that record is the op's one definition; the others attach their
# backward with record_fn.
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
