"""torch.linalg.eig and torch.linalg.eigvals: eigenvalues and eigenvectors of general
(non-symmetric) square matrices, batched over the leading dims, through LAPACK's geev
(numpy.linalg.eig).

The results are complex whatever the input: complex64 for float32 and complex64 input,
complex128 for float64 and complex128. Each eigenvector (a column of V) has unit 2-norm and,
as geev returns it, its largest component real; the order of the eigenvalues is geev's. So
A @ V == V @ diag(L), and V is unique only up to a phase e^{i phi} per column.

Derivatives are torch's (linalg_eig_backward, in its complex convention), written with
ember ops so they can be differentiated again:
    gA = V^{-H} (diag(gL) + (V^H gV - V^H V diag(re(V^H gV))) / conj(E)) V^H,
    E_ij = L_j - L_i off the diagonal,
and, as in torch, a loss that depends on the eigenvectors' phases (im(diag(V^H gV)) != 0)
raises. eigvals differentiates through eig (torch: eigvals of a tensor that requires grad,
or of a dual tensor, is eig's eigenvalues). Forward mode is torch's linalg_eig_jvp
(`eig_jvp_parts`).

ember/linalg.py re-exports both into ember.linalg.
"""
import numpy as np

from ..core import dtype as D
from ..dispatch import wrap, torch_name, not_implemented, tensor_args
from ..return_types import _make
from .registry import OpDef, EXTERN, FP32, register
from .matmul import record_fn, _out
from ..autograd.grad_mode import state
from . import meta_rules as M
from .linalg_more import lapack_strides
from .linalg import diag_embed

eig_t = _make("linalg_eig", ("eigenvalues", "eigenvectors"))

_PHASE_ERROR = ("linalg_eig_backward: The eigenvectors in the complex case are specified up "
                "to multiplication by e^{i phi}. The specified loss function depends on this "
                "quantity, so it is ill-defined.")


# ---- checks and the meta rule ---------------------------------------------------------------
def _check(name, A):
    """torch's checks, in torch's order: the dtype's complex counterpart (integers and bool
    have none), the dims, squareness; half precision is refused by the cpu kernel."""
    tensor_args("linalg_" + name, ("input", 1, A))
    if A.dtype._kind < 2:
        raise RuntimeError(f"Unknown Complex ScalarType for {torch_name(A.dtype)}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype in (D.float16, D.bfloat16):
        raise not_implemented("linalg_eig_out_cpu", A.dtype)


def complex_dtype(dt):
    """The dtype of eig's results for an input of dtype `dt`."""
    return dt if dt._kind == 3 else D._TO_COMPLEX[dt]


def _check_out(name, out, what, dt):
    if out is not None and not D.can_cast(dt, out.dtype):
        raise RuntimeError(f"torch.linalg.{name}: Expected {what} to be safely castable from "
                           f"{torch_name(dt)} dtype, but got {what} with dtype "
                           f"{torch_name(out.dtype)}")


def _meta_eig(A, *, out=None):
    _check("eig", A)
    cdt = complex_dtype(A.dtype)
    shape = tuple(A.shape)
    return eig_t(M.result(shape[:-1], cdt), M.result(shape, cdt, lapack_strides(shape)))


def _meta_eigvals(A, *, out=None):
    _check("eigvals", A)
    return M.result(tuple(A.shape)[:-1], complex_dtype(A.dtype))


# ---- the kernel -------------------------------------------------------------------------------
def _geev(a, cdt, vectors):
    """(eigenvalues, eigenvectors or None) of the batch `a`, as `cdt` arrays; eigenvectors
    column-major per matrix, as LAPACK (and torch) lay them out."""
    shape = a.shape
    if a.size == 0:
        w = np.zeros(shape[:-1], cdt)
        v = np.zeros(shape, cdt) if vectors else None
    elif vectors:
        w, v = np.linalg.eig(a)
    else:
        w, v = np.linalg.eigvals(a), None
    w = np.ascontiguousarray(w, cdt)
    if v is not None:   # each matrix transposed in memory: column-major
        v = np.swapaxes(np.ascontiguousarray(np.swapaxes(v, -1, -2), cdt), -1, -2)
    return w, v


def _nonfinite_eigvals(a, cdt):
    """eigvals of matrices with infs or NaNs: torch hands them to geev unchecked, whose
    result is then undefined; ember gives NaN for those matrices (no error, as torch)."""
    flat = a.reshape((-1,) + a.shape[-2:])
    bad = ~np.isfinite(flat).all(axis=(-2, -1))
    safe = np.where(bad[:, None, None], 0, flat)
    w = _geev(safe, cdt, False)[0]
    w[bad] = np.nan + 1j * np.nan
    return w.reshape(a.shape[:-1])


# ---- the derivative -----------------------------------------------------------------------
def _solve(A, B):
    """X with A X = B, for complex A (ember.linalg.solve takes real matrices only);
    differentiable with the real-case formulas, which the node conjugates around."""
    try:
        r = np.linalg.solve(A._data, B._data)
    except np.linalg.LinAlgError:
        raise RuntimeError("torch.linalg.solve: The solver failed because the input matrix "
                           "is singular.") from None
    X = wrap(r, A.dtype)

    def backward(grads, needs, A, X):
        gB = _solve(A.mT, grads[0])
        return (-(gB @ X.mT) if needs[0] else None, gB if needs[1] else None)
    record_fn("LinalgSolveExBackward0", (A, B), (X,), backward, (A, X))
    return X


def eig_backward(gL, gV, L, V):
    """torch's linalg_eig_backward (complex convention: the gradient for A of a real loss
    is dloss/dre(A) + i dloss/dim(A)); gL or gV may be None."""
    VH = V.mH
    if gV is None:
        return _solve(VH, gL.unsqueeze(-1) * VH)
    VhgV = VH @ gV
    d = VhgV.diagonal(0, -2, -1)
    if not np.allclose(d.imag._data, 0, rtol=1e-2, atol=1e-2):
        raise RuntimeError(_PHASE_ERROR)
    gA = VhgV - VH @ (V * d.real.unsqueeze(-2))
    n = L.shape[-1]
    eye = wrap(np.eye(n, dtype=bool), D.bool_).to(L.device)
    Lc = L.conj()
    E = (Lc.unsqueeze(-2) - Lc.unsqueeze(-1)).masked_fill(eye, 1)
    gA = (gA / E).masked_fill(eye, 0)
    if gL is not None:
        gA = gA + diag_embed(gL)
    return _solve(VH, gA @ VH)


def _backward(grads, needs, L, V):
    grads = tuple(grads) + (None,) * (2 - len(grads))
    gL, gV = grads[:2]
    # the node conjugates complex gradients around its function (a holomorphic op's rule);
    # torch's formula is written for the complex convention already: undo that
    flip = any(g is not None and g.dtype._kind == 3 for g in grads)

    def c(t):
        return t.conj_physical() if flip and t is not None else t
    return (c(eig_backward(c(gL), c(gV), L, V)),)


# ---- forward mode -------------------------------------------------------------------------------
def eig_jvp_parts(dA, L, V, vectors=True):
    """torch's linalg_eig_jvp: with dP = V^{-1} dA V, dL = diag(dP) and
    dV = V (dX - diag(re(diag(V^H V dX)))), dX = dP / E off the diagonal, 0 on it (the
    correction keeps the columns at unit norm: re(v_i^H dv_i) = 0)."""
    if dA.dtype is not V.dtype:
        dA = dA.to(V.dtype)
    dP = _solve(V, dA @ V)
    dL = dP.diagonal(0, -2, -1)
    if not vectors:
        return dL, None
    eye = wrap(np.eye(L.shape[-1], dtype=bool), D.bool_).to(L.device)
    E = (L.unsqueeze(-2) - L.unsqueeze(-1)).masked_fill(eye, 1)
    dX = (dP / E).masked_fill(eye, 0)
    c = (V.mH @ (V @ dX)).diagonal(0, -2, -1).real
    return dL, V @ (dX - diag_embed(c.to(V.dtype)))


def _eig_jvp(tan, result, A, *, out=None):
    dA = tan(A)
    if dA is None:
        return None
    return eig_jvp_parts(dA, result[0], result[1])


def _eigvals_jvp(tan, result, A, *, out=None):
    dA = tan(A)
    if dA is None:
        return None
    L, V = eig(A)    # (eigvals of a dual tensor is eig's eigenvalues: the same order)
    return eig_jvp_parts(dA, L, V, vectors=False)[0]


# ---- the public functions ---------------------------------------------------------------------
def eig(A, *, out=None):
    """Eigenvalues and eigenvectors of square matrices (..., n, n): complex results with
    A @ V == V @ diag(L), each column of V of unit norm (defined up to a phase).

    >>> L, V = ember.linalg.eig(ember.tensor([[2., 0.], [0., 3.]]))
    >>> L
    tensor([2.+0.j, 3.+0.j])
    """
    _check("eig", A)
    cdt = complex_dtype(A.dtype)
    if out is not None:
        _check_out("eig", out[0], "eigenvalues", cdt)
        _check_out("eig", out[1], "eigenvectors", cdt)
    a = A._data
    if not np.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    w, v = _geev(a, cdt.np, True)
    L, V = wrap(w, cdt), wrap(v, cdt)
    record_fn("LinalgEigBackward0", (A,), (L, V), _backward, (L, V))
    if out is not None:
        return eig_t(_out(L, out[0]), _out(V, out[1]))
    return eig_t(L, V)


def eigvals(A, *, out=None):
    """Eigenvalues of square matrices (..., n, n), complex, in LAPACK's order (eig's)."""
    _check("eigvals", A)
    cdt = complex_dtype(A.dtype)
    _check_out("eigvals", out, "eigenvalues", cdt)
    if (state.enabled and A._requires_grad) or getattr(A, "_fw", None):
        # torch: differentiable (backward or forward mode) through eig
        return _out(eig(A).eigenvalues, out)
    a = A._data
    if np.isfinite(a).all():
        w = _geev(a, cdt.np, False)[0]
    else:
        w = _nonfinite_eigvals(a, cdt.np)
    return _out(wrap(w, cdt), out)


eig = register(OpDef("linalg_eig", EXTERN, function=False, method=False, amp=FP32,
                     jvp=_eig_jvp, meta=_meta_eig), eig)
eigvals = register(OpDef("linalg_eigvals", EXTERN, function=False, method=False, amp=FP32,
                         jvp=_eigvals_jvp, meta=_meta_eigvals), eigvals)
