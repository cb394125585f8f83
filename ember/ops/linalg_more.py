"""More of torch.linalg: triangular solves, the `_ex` variants (a status tensor instead of an
error), LU (lu_factor, lu, lu_solve, lu_unpack), LDL (ldl_factor, ldl_solve), matrix_exp,
householder_product, tensorinv / tensorsolve, vander and cond, and the top-level legacy
forms (torch.lu, torch.cholesky_solve, torch.triangular_solve, torch.geqrf, ...).

ember/linalg.py re-exports these into ember.linalg. The routines that ember/linalg.py and
ops/linalg_decomp.py define (inv, solve, cholesky, svdvals, matrix_norm) are called through
the registry (`_linalg`), not imported, so those modules can import this one. Derivatives
are formulas in ember ops on each OpDef, or come from composing differentiable ops
(householder_product, tensorinv, vander, cond). LU and LDL factorizations use LAPACK
through SciPy (imported on first use).
"""
import numpy as np

from ..core import dtype as D
from ..core import strides as S
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name, not_implemented
from ..dispatch_args import int_arg, tensor_args
from ..return_types import _make
from .registry import OpDef, EXTERN, COMPOSITE, FP32, OPS, FUNCTIONS as F_, register
from .matmul import finish, _out
from ..core.meta import MetaData, is_meta_array
from . import meta_rules as M

lu_factor_t = _make("linalg_lu_factor", ("LU", "pivots"))
lu_factor_ex_t = _make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
lu_t = _make("linalg_lu", ("P", "L", "U"))
lu_unpack_t = _make("lu_unpack", ("P", "L", "U"))
inv_ex_t = _make("linalg_inv_ex", ("inverse", "info"))
cholesky_ex_t = _make("linalg_cholesky_ex", ("L", "info"))
solve_ex_t = _make("linalg_solve_ex", ("result", "info"))
ldl_factor_t = _make("linalg_ldl_factor", ("LD", "pivots"))
ldl_factor_ex_t = _make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
triangular_solve_t = _make("triangular_solve", ("solution", "cloned_coefficient"))
geqrf_t = _make("geqrf", ("a", "tau"))


def _linalg(name):
    """ember.linalg's routine `name` (registered as linalg_<name> by ember/linalg.py or
    ops/linalg_decomp.py)."""
    return OPS["linalg_" + name].fn


def scipy_linalg(what):
    try:
        import scipy.linalg as sl
    except ImportError:
        raise ImportError(f"ember's {what} needs SciPy for its LAPACK routines: pip install "
                          "scipy (or pip install ember[fast])") from None
    return sl


def _check_float(name, A, kernel=None, ints=False):
    """torch's dtype errors of a LAPACK-backed function: `kernel` names the cpu kernel whose
    NotImplementedError torch raises for float16/bfloat16 (and, with `ints`, for integer and
    bool input, which such functions hand to the kernel unchecked); otherwise the function's
    own RuntimeError."""
    if kernel is not None and (A.dtype in (D.float16, D.bfloat16) or
                               (ints and not A.dtype.is_floating_point)):
        raise not_implemented(kernel, A.dtype)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{torch_name(A.dtype)}")
    if A.dtype in (D.float16, D.bfloat16):
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got "
                           f"{torch_name(A.dtype)}")


def _check_square(name, A, what="A", kernel=None):
    _check_float(name, A, kernel)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: {what} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


# ---- solve_triangular -----------------------------------------------------------------------
def lapack_strides(shape):
    """Element strides of LAPACK's results stacked over a batch: each matrix column-major,
    the matrices one after another (what np.stack of SciPy's Fortran arrays gives)."""
    m, n = shape[-2:]
    batch = tuple(s * m * n for s in S.contiguous_strides(tuple(shape[:-2]) + (1,))[:-1])
    return batch + (1, m)


def _tri_solve_array(a, b, upper, unit):
    """X with tri(a) X = b, batch dims broadcast; a zero pivot gives inf/nan like LAPACK's
    trtrs (no error). LAPACK through np.linalg.solve, substitution when it refuses."""
    n = a.shape[-1]
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t.copy()
        idx = np.arange(n)
        t[..., idx, idx] = 1
    shape = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, shape + t.shape[-2:])
    b = np.broadcast_to(b, shape + b.shape[-2:])
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        pass
    x = np.zeros(b.shape, np.result_type(t, b))
    rows = range(n - 1, -1, -1) if upper else range(n)
    for i in rows:          # a loop over the matrix order (the singular path only)
        s = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, :], x)
        x[..., i, :] = s / t[..., i, i][..., None]
    return x


def _solve_triangular_grad_A(g, self, result, upper, left, unitriangular):
    gB = solve_triangular(self.mT, g, upper=not upper, left=left, unitriangular=unitriangular)
    gA = -(gB @ result.mT) if left else -(result.mT @ gB)
    gA = gA.triu() if upper else gA.tril()
    if unitriangular:
        gA = gA - gA.diagonal(0, -2, -1).diag_embed()
    return gA


_SOLVE_TRIANGULAR = OpDef(
    "linalg_solve_triangular", EXTERN, inputs=("self", "B"), function=False, method=False,
    attrs={"upper": None, "left": True, "unitriangular": False}, amp=FP32,
    node_name="LinalgSolveTriangularBackward0",
    grads={"self": _solve_triangular_grad_A,
           "B": lambda g, self, upper, left, unitriangular: solve_triangular(
               self.mT, g, upper=not upper, left=left, unitriangular=unitriangular)})


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solve ``A X = B`` (``X A = B`` with left=False) for triangular A, reading only its
    upper or lower triangle (and taking a unit diagonal with unitriangular=True).

    >>> A = ember.tensor([[2., 0.], [1., 1.]])
    >>> ember.linalg.solve_triangular(A, ember.tensor([[2.], [2.]]), upper=False)
    tensor([[1.],
            [1.]])
    """
    name = "linalg.solve_triangular"
    for t, w in ((A, "A"), (B, "B")):
        if t.dim() < 2:
            raise RuntimeError(f"{name}: The input tensor {w} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    S.broadcast_shapes(B.shape[:-2], A.shape[:-2])    # (torch's order in its message)
    _check_float(name, A, "triangular_solve_cpu", ints=True)   # (after the shapes, as torch)
    dt = D.promote_types(A.dtype, B.dtype)
    a, b = A._data.astype(dt.np, copy=False), B._data.astype(dt.np, copy=False)
    try:
        with np.errstate(all="ignore"):
            if left:
                r = _tri_solve_array(a, b, upper, unitriangular)
            else:   # X A = B  <=>  A^T X^T = B^T
                r = np.swapaxes(_tri_solve_array(np.swapaxes(a, -1, -2),
                                                 np.swapaxes(b, -1, -2), not upper,
                                                 unitriangular), -1, -2)
        r = np.ascontiguousarray(r)
    except MetaData:    # meta inputs: the solution's metadata (B's matrix shape, contiguous)
        shape = tuple(S.broadcast_shapes(A.shape[:-2], B.shape[:-2])) + tuple(B.shape[-2:])
        r = M.out_array(shape, dt.np, A, B)
    attrs = {"upper": upper, "left": left, "unitriangular": unitriangular}
    return _out(finish(_SOLVE_TRIANGULAR, (A, B), r, dt, attrs), out)


solve_triangular = register(_SOLVE_TRIANGULAR, solve_triangular)


# ---- matrix_exp ---------------------------------------------------------------------------
def _matrix_exp_grad(g, self):
    """exp of the block matrix [[A^T, G], [0, A^T]]: its upper-right block is the gradient."""
    n = self.shape[-1]
    At = self.mT
    z = F_["zeros_like"](At)
    top = F_["cat"]([At, g], -1)
    bottom = F_["cat"]([z, At], -1)
    return matrix_exp(F_["cat"]([top, bottom], -2))[..., :n, n:]


_MATRIX_EXP = OpDef("matrix_exp", EXTERN, node_name="LinalgMatrixExpBackward0",
                    grads={"self": _matrix_exp_grad})


def matrix_exp(A):
    """The matrix exponential of each square matrix (scaling and squaring, SciPy's expm).

    >>> ember.linalg.matrix_exp(ember.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _check_square("linalg.matrix_exp", A)
    a = A._data
    if is_meta_array(a):    # (SciPy would read the meta mapping's zeros)
        return finish(_MATRIX_EXP, (A,), M.out_array(a.shape, a.dtype, A), A.dtype)
    r = scipy_linalg("linalg.matrix_exp").expm(a) if a.size else a.copy()
    return finish(_MATRIX_EXP, (A,), np.asarray(r, a.dtype), A.dtype)


# ---- Householder products and QR in LAPACK's form ---------------------------------------------
def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i the i-th column
    of A below the diagonal (and 1 on it): the Q of geqrf's (a, tau). Differentiable."""
    tensor_args("linalg_householder_product", ("input", 1, A), ("tau", 2, tau))
    name = "torch.linalg.householder_product"
    _check_float(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    k = tau.shape[-1]
    if k > n:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    _check_batch(name, A, (("tau", tau, 1),))
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {torch_name(tau.dtype)} does not match input "
                           f"dtype {torch_name(A.dtype)}")
    return _out(_householder_q(A, tau, m)[..., :, :n], out)


def _check_batch(name, A, others):
    """torch's checks of (name, tensor, dims fewer than A) against A's batch dims: the number
    of dims first, then the batch shape."""
    for n, t, less in others:
        if t.dim() != A.dim() - less:
            what = "one dimension less than" if less else "the same number of dimensions as"
            raise RuntimeError(f"{name}: Expected {n} to have {what} input, but got {n}.ndim "
                               f"equal to {t.dim()} and input.ndim is equal to {A.dim()}")
    for n, t, less in others[::-1]:
        if tuple(t.shape[:A.dim() - 2]) != tuple(A.shape[:-2]):
            raise RuntimeError(f"{name}: Expected batch dimensions of {n} to be equal to "
                               f"input.shape[:-2], but got {list(t.shape[:A.dim() - 2])}")


def _householder_q(A, tau, cols):
    """H_1 ... H_k as m x m matrices (batched), then its first `cols` columns."""
    m = A.shape[-2]
    # (the constants go to A's device: a meta A gets meta constants)
    eye = wrap(np.eye(m, dtype=A.dtype.np), A.dtype).to(A.device)
    Q = eye.expand(*A.shape[:-2], m, m)
    for i in range(tau.shape[-1]):      # a loop over the reflectors
        below = A[..., i + 1:, i]
        head = wrap(np.eye(1, i + 1, i, dtype=A.dtype.np).reshape(-1), A.dtype).to(A.device)
        v = F_["cat"]([head.expand(*A.shape[:-2], i + 1), below], -1)
        Qv = (Q @ v.unsqueeze(-1))
        Q = Q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * (Qv @ v.unsqueeze(-2))
    return Q[..., :, :cols]


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Q @ other (or other @ Q; Q^T with transpose=True) for Q of geqrf's (input, tau)."""
    tensor_args("ormqr", ("input", 1, input), ("input2", 2, tau), ("input3", 3, other))
    for t, n in ((input, "input"), (other, "other")):
        if t.dim() < 2:
            raise RuntimeError(f"torch.ormqr: {n} must have at least 2 dimensions.")
    m = other.shape[-2] if left else other.shape[-1]
    if tau.shape[-1] != min(m, input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape"
                           f"[{-2 if left else -1}], input.shape[-1])")
    if input.shape[-2] != m:
        raise RuntimeError(f"torch.ormqr: input.shape[-2] must be equal to other.shape"
                           f"[{-2 if left else -1}]")
    _check_batch("torch.ormqr", input, (("other", other, 0), ("tau", tau, 1)))
    for t, n in ((tau, "tau"), (other, "other")):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {n} to have the same dtype, "
                               f"but input has dtype{torch_name(input.dtype)} and {n} has "
                               f"dtype {torch_name(t.dtype)}")
    Q = _householder_q(input, tau, m)
    if transpose:
        Q = Q.mT
    return _out(Q @ other if left else other @ Q, out)


def geqrf(input, *, out=None):
    """(a, tau): LAPACK's QR in Householder form (R on and above the diagonal of a)."""
    _check_float("geqrf", input, "geqrf_cpu", ints=True)
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    a = input._data
    m, n = a.shape[-2:]
    k = min(m, n)
    if is_meta_array(a):    # (LAPACK would read the meta mapping's zeros)
        st = lapack_strides(a.shape)
        return geqrf_t(wrap(M.out_array(a.shape, a.dtype, input, strides=st), input.dtype),
                       wrap(M.out_array(a.shape[:-2] + (k,), a.dtype, input), input.dtype))
    fn = getattr(scipy_linalg("geqrf").lapack, ("s" if a.dtype == np.float32 else "d") + "geqrf")
    res = [fn(mat)[:2] for mat in a.reshape((-1, m, n))] if a.size else []
    qr = np.stack([r[0] for r in res]).reshape(a.shape) if res else a.copy()
    tau = np.stack([r[1] for r in res]).reshape(a.shape[:-2] + (k,)) if res else \
        np.zeros(a.shape[:-2] + (k,), a.dtype)
    return geqrf_t(wrap(qr, input.dtype), wrap(tau.astype(a.dtype), input.dtype))


# ---- tensorinv, tensorsolve, cond ----------------------------------------------------------------
def tensorinv(A, ind=2, *, out=None):
    """The inverse of A seen as a matrix prod(shape[:ind]) x prod(shape[ind:])."""
    tensor_args("linalg_tensorinv", ("input", 1, A))
    if type(ind) is not int:
        ind = int_arg(ind, "linalg_tensorinv", "ind", 2)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = int(np.prod(left)), int(np.prod(right))
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {cols} != {rows}")
    inv = _linalg("inv")(A.reshape(rows, cols))
    return _out(inv.reshape(*right, *left), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B (dims of A moved to the end first)."""
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        A = A.movedim(dims, list(range(nd - len(dims), nd)))
    rest = tuple(A.shape[B.dim():])
    rows, cols = int(np.prod(tuple(A.shape[:B.dim()]))), int(np.prod(rest))
    if cols != B.numel():      # (torch compares the solution's size with B's first)
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {cols} != "
                           f"{B.numel()}")
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    x = _linalg("solve")(A.reshape(rows, cols), B.reshape(rows))
    return _out(x.reshape(*rest), out)


def _mnorm(A, p):
    if p == "fro":
        return (A * A).sum((-2, -1)).sqrt()
    if p == "nuc":
        return _linalg("svdvals")(A).sum(-1)
    if p in (1, -1):
        s = A.abs().sum(-2)
    elif p in (float("inf"), -float("inf")):
        s = A.abs().sum(-1)
    else:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    return s.amax(-1) if p > 0 else s.amin(-1)


_COND_ORDS = (2, -2, 1, -1, float("inf"), -float("inf"))


def _cond_name(p):
    """torch's "linalg.cond(ord=...)" spelling of a number `p` (C++ std::to_string)."""
    if isinstance(p, float):
        return "%f" % p if np.isfinite(p) else ("inf" if p > 0 else "-inf")
    return str(int(p))


def cond(A, p=None, *, out=None):
    """The condition number of each matrix in the norm `p` (None: 2, the ratio of extreme
    singular values; 2, -2, 'fro', 'nuc', 1, -1, inf, -inf).

    torch's order of checks: a str norm wants square matrices first, then a known name; a
    number is checked first; an empty A then gives zeros (of its real dtype, whatever the
    dtype: no kernel runs); then the svd's or inv's own dtype errors."""
    tensor_args("linalg_cond", ("input", 1, A))
    if isinstance(p, str):
        M._square(f"linalg.cond(ord={p})", A)
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    else:
        if A.dim() < 2:
            raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
        if p is not None and p not in _COND_ORDS:
            raise RuntimeError(f"linalg.cond got an invalid norm type: {'%g' % float(p)}")
    if A.numel() == 0:    # (NumPy has no condition number of a 0x0 matrix: torch says 0)
        dt = D.float64 if A.dtype is D.complex128 else D.float32 if A.dtype.is_complex \
            else A.dtype
        return _out(wrap(np.zeros(tuple(A.shape[:-2]), dt.np), dt).to(A.device), out)
    if p is None or p in (2, -2):
        s = _linalg("svdvals")(A)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return _out(r, out)
    if not isinstance(p, str):
        M._square(f"linalg.cond(ord={_cond_name(p)})", A)
    Ainv = _linalg("inv")(A)    # (first: its dtype errors are torch's)
    return _out(_mnorm(A, p) * _mnorm(Ainv, p), out)


# ---- Cholesky-based solves, triangular_solve (torch's top-level forms) -------------------------
def cholesky_solve(B, L, upper=False, *, out=None):
    """X with (L L^T) X = B from the Cholesky factor L (U^T U with upper=True).

    The gradient for L is torch's: that of solving with the full matrix L L^T."""
    for t, n in ((B, "b"), (L, "u")):
        if isinstance(t, Tensor) and t.dim() < 2:
            raise RuntimeError(f"{n} should have at least 2 dimensions, but has {t.dim()} "
                               "dimensions instead")
    if isinstance(B, Tensor) and isinstance(L, Tensor) and B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{torch_name(B.dtype)} and A of type {torch_name(L.dtype)} instead.")
    A = L.mT @ L if upper else L @ L.mT
    return _out(_linalg("solve")(A, B), out)


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of L L^T (U^T U with upper=True) from its Cholesky factor."""
    tensor_args("cholesky_inverse", ("input", 1, L))
    M._square("cholesky_inverse", L)    # (then the kernel refuses the dtype)
    if not L.dtype.is_floating_point or L.dtype in (D.float16, D.bfloat16):
        raise not_implemented("cholesky_inverse_out_cpu", L.dtype)
    eye = wrap(np.broadcast_to(np.eye(L.shape[-1], dtype=L.dtype.np), L.shape).copy(),
               L.dtype).to(L.device)
    return _out(cholesky_solve(eye, L, upper), out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve: (X, A's copy) with op(A) X = b, A upper by default."""
    for t, n in ((b, "b"), (A, "A")):
        if isinstance(t, Tensor) and t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {n} to have at least 2 "
                               f"dimensions, but it has {t.dim()} dimensions instead")
    if isinstance(b, Tensor) and isinstance(A, Tensor) and b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{torch_name(b.dtype)} and A of type {torch_name(A.dtype)} instead.")
    M = A.mT if transpose else A
    X = solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return triangular_solve_t(X, A.clone())


def _pub(name, fn, kind=COMPOSITE, **fields):
    return register(OpDef(name, kind, decomp=fn if kind == COMPOSITE else None, **fields), fn)


matrix_exp = register(_MATRIX_EXP, matrix_exp)
householder_product = _pub("linalg_householder_product", householder_product, function=False,
                           method=False)
register(OpDef("orgqr", COMPOSITE, decomp=householder_product), householder_product,
         names=("orgqr",))
ormqr = _pub("ormqr", ormqr)
geqrf = _pub("geqrf", geqrf, kind=EXTERN)
tensorinv = _pub("linalg_tensorinv", tensorinv, function=False, method=False)
tensorsolve = _pub("linalg_tensorsolve", tensorsolve, function=False, method=False)
cond = _pub("linalg_cond", cond, function=False, method=False,
            uint64_scalars={"p"})     # (a Scalar: torch's parser takes uint64)
cholesky_solve = _pub("cholesky_solve", cholesky_solve)
cholesky_inverse = _pub("cholesky_inverse", cholesky_inverse)
triangular_solve = _pub("triangular_solve", triangular_solve)

