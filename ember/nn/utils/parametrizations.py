"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): weight_norm,
spectral_norm, orthogonal, each registered with `parametrize.register_parametrization`.

    m = weight_norm(nn.Linear(20, 40))          # weight = g * v / ||v||, per output row
    m.parametrizations.weight.original0         # g, shape (40, 1)
    m = spectral_norm(nn.Linear(20, 40))        # weight / sigma_max, one power step a call
    m = orthogonal(nn.Linear(20, 20))           # weight is orthogonal, Q^T Q = I
"""
from enum import Enum, auto

import numpy as np

from ...core.tensor import Tensor
from ...autograd.grad_mode import no_grad
from ... import linalg as _linalg
from ...ops.registry import FUNCTIONS
from .. import functional as F
from ..modules.module import Module
from ..modules._hooks import RemovableHandle
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _fn(name):
    """An ember op looked up when called (linalg ops defined by another part of ember)."""
    f = getattr(_linalg, name, None) or FUNCTIONS.get(name)
    if f is None:
        raise NotImplementedError(f"ember has no {name} yet (needed by this parametrization)")
    return f


# ---------------------------------------------------------------- weight_norm
def _norm_except_dim(v, dim):
    """torch.norm_except_dim(v, 2, dim): the 2-norm over every dim but `dim`, kept as size 1
    dims; dim == -1 means the norm of the whole tensor."""
    if dim == -1:
        return v.norm()
    d = dim % v.dim()
    others = [i for i in range(v.dim()) if i != d]
    return v.pow(2).sum(dim=others, keepdim=True).sqrt() if others else v.abs()


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def _register_load_pre_hook(module, hook):
    h = RemovableHandle(module._load_state_dict_pre_hooks)
    module._load_state_dict_pre_hooks[h.id] = hook
    return h


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but `dim`;
    ``dim=None``: the whole tensor). ``original0`` is g, ``original1`` is v.

    >>> m = weight_norm(nn.Linear(20, 40))
    >>> m.parametrizations.weight.original0.shape
    ember.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat(state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        # state dicts of the legacy nn.utils.weight_norm keep `<name>_g` / `<name>_v`
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    _register_load_pre_hook(module, compat)
    return module


# ---------------------------------------------------------------- spectral_norm
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = mat.new_empty(h).normal_(0, 1)
            v = mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n):
        # the buffers are updated in place: u and v keep their identity (state_dict, DDP)
        with no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize ``module.<name>`` as ``W / sigma(W)``, sigma the largest singular value
    estimated by power iteration (one step per access in training mode).

    >>> m = spectral_norm(nn.Linear(20, 40))
    >>> m.parametrizations.weight[0]._u.shape
    ember.Size([40])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def _is_conv_transpose(module):
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


# ---------------------------------------------------------------- orthogonal
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    eye = FUNCTIONS["eye"](k, dtype=q.dtype)
    eps = 10.0 * n * float(np.finfo(q.dtype.np).eps)
    return bool((q.mH @ q - eye).abs().le(eps + 1e-5 * eye.abs()).all())


def _make_orthogonal(a):
    """The Q of a = QR with diag(R) >= 0 (a tall)."""
    q, r = _linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf(a):
    """LAPACK's geqrf of each matrix (Householder vectors below the diagonal, R above; tau),
    through NumPy's ``qr(mode='raw')`` (which returns them transposed)."""
    x = a.detach()._numpy()
    flat = x.reshape(-1, *x.shape[-2:])
    hs, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m, mode="raw")
        hs.append(h.T)
        taus.append(tau)
    h = np.stack(hs).reshape(x.shape)
    tau = np.stack(taus).reshape(*x.shape[:-2], -1)
    return FUNCTIONS["tensor"](h, dtype=a.dtype), FUNCTIONS["tensor"](tau, dtype=a.dtype)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = FUNCTIONS["cat"]([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)],
                                     dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _fn("matrix_exp")(A)
            else:
                eye = FUNCTIONS["eye"](n, dtype=A.dtype)
                Q = _linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _fn("householder_product")(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:      # use_trivialization: Q = base @ map(X)
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError("Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                d.copy_(d.sign() * FUNCTIONS["where"](tau == 0.0, -1.0, 1.0).to(d.dtype))
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = FUNCTIONS["randn"](*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(FUNCTIONS["cat"]([Q, N], dim=-1))
            self.base = Q
            neg_id = FUNCTIONS["zeros_like"](Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Keep ``module.<name>`` orthogonal (unitary): ``Q^H Q = I`` (or ``Q Q^H`` when wide).
    `orthogonal_map`: "matrix_exp" (default for square or complex), "cayley" or
    "householder" (default otherwise).

    >>> m = orthogonal(nn.Linear(4, 4), orthogonal_map="cayley")
    >>> bool(((m.weight.T @ m.weight - ember.eye(4)).abs() < 1e-5).all())
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
