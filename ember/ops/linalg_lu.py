"""torch.linalg's LU and LDL factorizations and the `_ex` variants of inv, solve and
cholesky (a status tensor `info` instead of an error), with torch's legacy top-level forms
(torch.lu, torch.lu_solve, torch.lu_unpack).

The factorizations call the LAPACK routines torch calls (getrf, sytrf, potrf) through SciPy,
one matrix of the batch at a time, so pivots, packed factors and the `info` codes are
torch's, singular inputs included. Pivots are int32 and 1-based, as in torch. Derivatives:
lu_factor / lu (square inputs) carry torch's formula on their OpDef; lu_solve and lu_unpack
are compositions of differentiable ops; the `_ex` variants return the differentiable result
of inv / solve / cholesky when every matrix succeeded. LDL has no derivative (torch neither).
"""
import numpy as np

from ..core import dtype as D
from ..dispatch import wrap
from ..dispatch_args import tensor_args
from .registry import OpDef, EXTERN, COMPOSITE, FUNCTIONS as F, register
from .matmul import finish, record_fn, _out
from ..core.meta import MetaData, is_meta_array
from . import meta_rules as M
from .linalg_more import (_linalg, scipy_linalg, _check_float, _check_square, solve_triangular,
                          lu_factor_t, lu_factor_ex_t, lu_t, lu_unpack_t, inv_ex_t,
                          cholesky_ex_t, solve_ex_t, ldl_factor_t, ldl_factor_ex_t,
                          lapack_strides)


def _lapack(name, dtype):
    return getattr(scipy_linalg("linalg." + name).lapack, ("s" if dtype == np.float32 else "d")
                   + name)


def _each(a, fn, *outs):
    """Run fn(matrix) -> tuple over the batch dims of `a`; stack each result."""
    if is_meta_array(a):    # (LAPACK would read the meta mapping's zeros): callers catch it
        raise MetaData("a LAPACK factorization of a meta tensor")
    batch = a.shape[:-2]
    flat = a.reshape((int(np.prod(batch)),) + a.shape[-2:])   # (-1 is ambiguous at size 0)
    res = [fn(m) for m in flat]
    if not res:
        return tuple(np.zeros(batch + s, d) for s, d in outs)
    return tuple(np.stack([r[k] for r in res]).reshape(batch + np.shape(res[0][k]))
                 for k in range(len(outs)))


# ---- lu_factor ------------------------------------------------------------------------------
def _getrf(a):
    m, n = a.shape[-2:]
    k = min(m, n)

    def one(mat):
        if mat.size == 0:
            return mat.copy(), np.arange(1, k + 1, dtype=np.int32), 0
        lu, piv, info = _lapack("getrf", mat.dtype)(mat)
        return lu, (piv + 1).astype(np.int32), max(int(info), 0)   # SciPy's are 0-based
    lu, piv, info = _each(a, one, ((m, n), a.dtype), ((k,), np.int32), ((), np.int32))
    return lu, piv, info.astype(np.int32)


def _info_meta(a):
    """The int32 `info` of a meta batch of matrices (one per matrix)."""
    return M.out_array(a.shape[:-2], np.int32)


def _getrf_meta(a):
    """_getrf's results' metadata for a meta `a` (LU column-major, as LAPACK's)."""
    k = min(a.shape[-2:])
    return (M.out_array(a.shape, a.dtype, strides=lapack_strides(a.shape)),
            M.out_array(a.shape[:-2] + (k,), np.int32), _info_meta(a))


def _getrf_any(a):
    try:
        return _getrf(a)
    except MetaData:
        return _getrf_meta(a)


def _lu_backward_square(gL, gU, L, U, P):
    """torch's derivative of A = P L U for square A: P L^-T (tril(L^T gL, -1) +
    triu(gU U^T)) U^-T, from the strictly lower gL and the upper gU."""
    phi = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
    X = solve_triangular(L.mT, phi, upper=True, unitriangular=True)
    X = solve_triangular(U.mT, X, upper=False, left=False)
    return P @ X


def _lu_factor_grad(g, self, result, pivots):
    n, m = self.shape[-2:]
    if n != m:
        raise NotImplementedError("ember: the derivative of lu_factor for non-square "
                                  "matrices is not implemented")
    P, L, U = lu_unpack(result, pivots)
    return _lu_backward_square(g.tril(-1), g.triu(), L, U, P)


_LU_FACTOR = OpDef("linalg_lu_factor_ex", EXTERN, function=False, method=False,
                   node_name="LinalgLuFactorExBackward0", attrs={"pivots": None},
                   grads={"self": _lu_factor_grad})


def _check_pivot(name, pivot):
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None,
                 _name="torch.linalg.lu_factor_ex"):
    """(LU, pivots, info): the packed LU factorization with partial pivoting; info is the
    1-based index of the first zero pivot of each matrix (0 when nonsingular)."""
    tensor_args("linalg_lu_factor" if _name == "torch.linalg.lu_factor" else
                "linalg_lu_factor_ex", ("A", 1, A))
    if A.dim() < 2:
        raise RuntimeError("torch.lu_factor: Expected tensor with 2 or more "
                           f"dimensions. Got size: {list(A.shape)} instead")
    if A.numel():    # (torch runs no kernel on an empty A: any dtype gives empty factors)
        _check_float("torch.linalg.lu_factor_ex", A, "lu_cpu", ints=True)
    _check_pivot("linalg.lu_factor", pivot)
    lu, piv, info = _getrf_any(A._data)
    pivots = wrap(piv, D.int32)
    LU = finish(_LU_FACTOR, (A,), lu, A.dtype, {"pivots": pivots})
    if check_errors and not is_meta_array(info) and info.any():   # (meta: no values to check)
        k = int(info[info > 0].min())
        raise RuntimeError(f"{_name}: U[{k},{k}]"
                           " is zero and using it on lu_solve would result in a division by "
                           "zero. If you still want to perform the factorization, consider "
                           "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return lu_factor_ex_t(LU, pivots, wrap(info, D.int32))


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots): the packed LU factorization A = P L U with partial pivoting.

    >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[1., 2.], [3., 4.]]))
    >>> pivots
    tensor([2, 2], dtype=ember.int32)
    """
    LU, piv, _ = lu_factor_ex(A, pivot=pivot, check_errors=True, _name="torch.linalg.lu_factor")
    return lu_factor_t(LU, piv)


# ---- unpacking and the (P, L, U) form ---------------------------------------------------------
def _perm_matrix(piv, m, dtype):
    """The permutation matrices P (A = P L U) of LAPACK's 1-based row interchanges."""
    batch = piv.shape[:-1]
    flat = piv.reshape(-1, piv.shape[-1]) if piv.size else np.zeros((int(np.prod(batch)), 0),
                                                                    np.int32)
    P = np.zeros((flat.shape[0], m, m), dtype)
    for b in range(flat.shape[0]):        # a loop over the batch (pivots are tiny)
        perm = np.arange(m)
        for i, p in enumerate(flat[b]):
            j = int(p) - 1
            perm[i], perm[j] = perm[j], perm[i]
        P[b, perm, np.arange(m)] = 1
    return P.reshape(batch + (m, m))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed form (L with a unit diagonal; L and U
    differentiable in LU_data)."""
    tensor_args("lu_unpack", ("LU_data", 1, LU_data), ("LU_pivots", 2, LU_pivots))
    if LU_pivots.dtype is not D.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of torch.int32 dtype. Note: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    dev = LU_data.device    # (the constants go to the input's device: meta stays meta)
    empty = wrap(np.zeros((0,), LU_data.dtype.np), LU_data.dtype).to(dev)
    if unpack_data:
        eye = wrap(np.eye(m, k, dtype=LU_data.dtype.np), LU_data.dtype).to(dev)
        L = LU_data[..., :, :k].tril(-1) + eye
        U = LU_data[..., :k, :].triu()
    else:
        L = U = empty
    if not unpack_pivots:
        P = empty
    elif is_meta_array(LU_pivots._data):    # (the permutation is read from the values)
        P = wrap(M.out_array(LU_pivots.shape[:-1] + (m, m), LU_data.dtype.np, LU_data,
                             LU_pivots), LU_data.dtype)
    else:
        P = wrap(_perm_matrix(LU_pivots._data, m, LU_data.dtype.np), LU_data.dtype)
    return lu_unpack_t(P, L, U)


def _lu_grad(grads, needs, A, P, L, U):
    gL = grads[1] if len(grads) > 1 else None      # (trailing outputs without a gradient
    gU = grads[2] if len(grads) > 2 else None      # are left out of `grads`)
    if A.shape[-1] != A.shape[-2]:
        raise NotImplementedError("ember: the derivative of linalg.lu for non-square matrices "
                                  "is not implemented")
    gL = F["zeros_like"](L) if gL is None else gL
    gU = F["zeros_like"](U) if gU is None else gU
    return (_lu_backward_square(gL.tril(-1), gU.triu(), L, U, P),)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U: P a permutation matrix, L unit lower, U upper triangular.

    >>> P, L, U = ember.linalg.lu(ember.tensor([[1., 2.], [3., 4.]]))
    >>> U
    tensor([[3.0000, 4.0000],
            [0.0000, 0.6667]])
    """
    if A.dim() < 2:
        raise RuntimeError("linalg.lu: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    if A.numel():    # (as lu_factor_ex: an empty A of any dtype factors)
        _check_float("linalg.lu", A, "lu_cpu", ints=True)
    _check_pivot("linalg.lu", pivot)
    lu_, piv, _ = _getrf_any(A._data)
    P, L, U = lu_unpack(wrap(lu_, A.dtype), wrap(piv, D.int32))
    record_fn("LinalgLuBackward0", (A,), (P, L, U), _lu_grad, (A, P, L, U),
              nondifferentiable=(0,))
    return lu_t(P, L, U)


# ---- lu_solve --------------------------------------------------------------------------------
def _permute_rows(B, piv, inverse):
    """P^T B (inverse=False) or P B, for LAPACK pivots, as a differentiable row gather."""
    m = B.shape[-2]
    P = _perm_matrix(piv._data, m, np.float64)
    perm = np.argmax(P if inverse else np.swapaxes(P, -1, -2), axis=-1)   # row sources
    idx = wrap(np.ascontiguousarray(perm).astype(np.int64), D.int64)
    shape = tuple(np.broadcast_shapes(idx.shape[:-1], tuple(B.shape[:-2])))
    Bb = B.expand(*shape, *B.shape[-2:])
    idx = idx.expand(*shape, m).unsqueeze(-1).expand(*shape, m, B.shape[-1])
    return Bb.gather(-2, idx)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve A X = B (or X A = B with left=False; A^T instead of A with adjoint=True) from
    lu_factor's (LU, pivots); differentiable in LU and B."""
    tensor_args("linalg_lu_solve", ("LU", 1, LU), ("pivots", 2, pivots), ("B", 3, B))
    _check_float("linalg.lu_solve", LU)
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    n = LU.shape[-1]
    if LU.shape[-2] != n:
        raise RuntimeError(f"linalg.lu_solve: A must be batches of square matrices, but they "
                           f"are {LU.shape[-2]} by {n} matrices")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {D.TORCH_NAMES[LU.dtype.name]} and B of type "
                           f"{D.TORCH_NAMES[B.dtype.name]} instead")
    if pivots.dtype is not D.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type "
                           "torch.int32")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if pivots.dim() == 0 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the "
                           f"same, but got pivots with shape {list(pivots.shape)} instead")
    if not left:       # X A = B  <=>  A^T X^T = B^T
        return _out(lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT, out)
    if not adjoint:    # X = U^-1 L^-1 P^T B
        Y = _permute_rows(B, pivots, inverse=False)
        Y = solve_triangular(LU, Y, upper=False, unitriangular=True)
        return _out(solve_triangular(LU, Y, upper=True), out)
    # A^T X = B: X = P L^-T U^-T B
    Y = solve_triangular(LU.mT, B, upper=False)
    Y = solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    return _out(_permute_rows(Y, pivots, inverse=True), out)


# ---- the _ex variants -----------------------------------------------------------------------
def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info the first zero pivot's 1-based index per matrix, 0 if
    invertible (the inverse of a singular matrix is LAPACK's inf/NaN, as in torch)."""
    tensor_args("linalg_inv_ex", ("A", 1, A))
    _check_square("linalg.inv_ex", A)
    if is_meta_array(A._data):      # (no values: the inverse's metadata, info per matrix)
        return inv_ex_t(_linalg("inv")(A), wrap(_info_meta(A._data), D.int32))
    lu_, piv, info = _getrf(A._data)
    if not info.any():
        return inv_ex_t(_linalg("inv")(A), wrap(info, D.int32))
    if check_errors:
        _linalg("inv")(A)            # raises torch's LinAlgError
    eye = np.broadcast_to(np.eye(A.shape[-1], dtype=A.dtype.np), A.shape)
    with np.errstate(all="ignore"):
        x = _getrs(lu_, piv, np.ascontiguousarray(eye))
    # (row-major, as np.linalg.inv's inverse of an invertible A: the layout does not
    # depend on the values, so the meta result's is the cpu one)
    return inv_ex_t(wrap(np.ascontiguousarray(x), A.dtype), wrap(info, D.int32))


def _getrs(lu_, piv, b):
    def one(pair):
        lu1, p1, b1 = pair
        return _lapack("getrs", lu1.dtype)(lu1, p1 - 1, b1)[0]
    flat = zip(lu_.reshape((-1,) + lu_.shape[-2:]), piv.reshape((-1, piv.shape[-1])),
               b.reshape((-1,) + b.shape[-2:]))
    res = [one(t) for t in flat]
    return np.stack(res).reshape(b.shape) if res else b.copy()


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info) of linalg.solve: info as in inv_ex."""
    _check_square("linalg.solve_ex", A, kernel="lu_cpu")
    if is_meta_array(A._data):
        return solve_ex_t(_linalg("solve")(A, B, left=left), wrap(_info_meta(A._data), D.int32))
    _, _, info = _getrf(A._data)
    if not info.any() or check_errors:
        return solve_ex_t(_linalg("solve")(A, B, left=left), wrap(info, D.int32))
    with np.errstate(all="ignore"):
        X = lu_solve(*lu_factor_ex(A.detach())[:2], B.detach().unsqueeze(-1) if B.dim() == 1 or (
            B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1])) else B.detach(),
            left=left)
    if X.dim() > B.dim():
        X = X.squeeze(-1)
    return solve_ex_t(X, wrap(info, D.int32))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info the order of the first leading minor that is not positive-definite
    (0 on success); L is LAPACK's partial factor where it failed, as in torch."""
    _check_square("linalg.cholesky_ex", A, kernel="cholesky_cpu")
    if is_meta_array(A._data):
        return cholesky_ex_t(_linalg("cholesky")(A, upper=upper),
                             wrap(_info_meta(A._data), D.int32))

    def one(mat):
        if mat.size == 0:
            return mat.copy(), 0
        # (upper: LAPACK's uplo='U' reads and writes the upper triangle, as torch's)
        c, info = _lapack("potrf", mat.dtype)(mat, lower=0 if upper else 1, clean=1)
        return (np.triu(c) if upper else np.tril(c)), max(int(info), 0)
    L, info = _each(A._data, one, (tuple(A.shape[-2:]), A.dtype.np), ((), np.int32))
    info = info.astype(np.int32)
    if not info.any() or check_errors:
        return cholesky_ex_t(_linalg("cholesky")(A, upper=upper), wrap(info, D.int32))
    return cholesky_ex_t(wrap(L, A.dtype), wrap(info, D.int32))


# ---- LDL ----------------------------------------------------------------------------------
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): the Bunch-Kaufman factorization A = L D L^T of symmetric A (its
    lower triangle is read), in LAPACK's compact form, as torch returns it."""
    tensor_args("linalg_ldl_factor_ex", ("input", 1, A))
    _check_square("torch.linalg.ldl_factor_ex", A, kernel="ldl_factor_kernel_cpu")

    def one(mat):
        if mat.size == 0:
            return mat.copy(), np.zeros(mat.shape[-1], np.int32), 0
        ld, piv, info = _lapack("sytrf", mat.dtype)(mat, lower=1)
        return np.tril(ld), piv.astype(np.int32), max(int(info), 0)
    n = A.shape[-1]
    if is_meta_array(A._data):      # (LD contiguous, as np.tril of LAPACK's factor gives)
        a = A._data
        return ldl_factor_ex_t(
            wrap(M.out_array(a.shape, a.dtype), A.dtype),
            wrap(M.out_array(a.shape[:-1], np.int32), D.int32), wrap(_info_meta(a), D.int32))
    LD, piv, info = _each(A._data, one, ((n, n), A.dtype.np), ((n,), np.int32),
                          ((), np.int32))
    info = info.astype(np.int32)
    if check_errors and info.any():
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: The factorization could not be "
                           f"completed because the input is not invertible (D[{int(info.max())}"
                           f",{int(info.max())}] is zero).")
    return ldl_factor_ex_t(wrap(LD, A.dtype), wrap(piv, D.int32), wrap(info, D.int32))


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) of ldl_factor_ex."""
    tensor_args("linalg_ldl_factor", ("input", 1, A))
    LD, piv, _ = ldl_factor_ex(A, hermitian=hermitian)
    return ldl_factor_t(LD, piv)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Solve A X = B from ldl_factor's (LD, pivots)."""
    _check_square("torch.linalg.ldl_solve", LD, "LD")
    if B.dim() < 2:
        raise RuntimeError("torch.linalg.ldl_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix "
                           f"is {n} by {n} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    shape = tuple(np.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2])))
    ld = np.broadcast_to(LD._data, shape + tuple(LD.shape[-2:]))
    pv = np.broadcast_to(pivots._data, shape + tuple(pivots.shape[-1:]))
    b = np.broadcast_to(B._data.astype(LD.dtype.np), shape + tuple(B.shape[-2:]))

    def one(t):
        return _lapack("sytrs", t[0].dtype)(t[0], t[1], t[2], lower=1)[0]
    flat = list(zip(ld.reshape((-1,) + ld.shape[-2:]), pv.reshape((-1, pv.shape[-1])),
                    b.reshape((-1,) + b.shape[-2:])))
    with np.errstate(all="ignore"):
        x = np.stack([one(t) for t in flat]).reshape(b.shape) if flat else b.copy()
    return _out(wrap(x, LD.dtype), out)


# ---- torch's legacy top-level forms ---------------------------------------------------------
def _torch_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu: (LU, pivots) or, with get_infos, (LU, pivots, infos) (without it a
    singular matrix is an error)."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos,
                                 _name="torch.linalg.lu_factor")
    return (LU, piv, info) if get_infos else (LU, piv)


def _torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve(b, LU_data, LU_pivots): linalg.lu_solve's arguments in the old order."""
    return _out(lu_solve(LU_data, LU_pivots, b), out)


# ---- registration -------------------------------------------------------------------------
def _public(name, fn, kind=EXTERN):
    return register(OpDef(name, kind, function=False, method=False,
                          decomp=fn if kind == COMPOSITE else None), fn)


lu_factor_ex = register(_LU_FACTOR, lu_factor_ex)
lu_factor = _public("linalg_lu_factor", lu_factor, COMPOSITE)
lu = _public("linalg_lu", lu)
lu_solve = _public("linalg_lu_solve", lu_solve, COMPOSITE)
inv_ex = _public("linalg_inv_ex", inv_ex)
solve_ex = _public("linalg_solve_ex", solve_ex)
cholesky_ex = _public("linalg_cholesky_ex", cholesky_ex)
ldl_factor_ex = _public("linalg_ldl_factor_ex", ldl_factor_ex)
ldl_factor = _public("linalg_ldl_factor", ldl_factor)
ldl_solve = _public("linalg_ldl_solve", ldl_solve)
lu_unpack = register(OpDef("lu_unpack", COMPOSITE, decomp=lu_unpack, method=False), lu_unpack)
register(OpDef("lu", EXTERN), _torch_lu, names=("lu",))
register(OpDef("lu_solve", COMPOSITE, decomp=_torch_lu_solve), _torch_lu_solve,
         names=("lu_solve",))
