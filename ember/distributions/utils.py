"""Helpers shared by the distributions (torch.distributions.utils): broadcasting parameters,
logits <-> probabilities, lazily computed parameters, triangular packing.

    >>> loc, scale = broadcast_all(ember.zeros(3), 1.0)
    >>> scale.shape
    ember.Size([3])
"""
import numbers
from functools import update_wrapper

from ..autograd.grad_mode import enable_grad
from . import _fn

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the first tensor's
    dtype (the default dtype when all are numbers)."""
    if not all(isinstance(v, (_fn.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, _fn.Tensor) for v in values):
        dtype = next((v.dtype for v in values if isinstance(v, _fn.Tensor)),
                     _fn.get_default_dtype())
        values = [v if isinstance(v, _fn.Tensor) else _fn.tensor(v, dtype=dtype)
                  for v in values]
    return _fn.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device=None):
    return _fn.randn(tuple(shape), dtype=dtype)


def _sum_rightmost(value, dim):
    """Sum the `dim` rightmost dimensions of `value` away."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Log-odds -> probability (binary), or log-weights -> softmax over the last dim."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def clamp_probs(probs):
    """Clamp into [eps, 1 - eps] of the dtype, so logs stay finite."""
    eps = _fn.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Probability -> log-odds (binary), or -> log-probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


class lazy_property:
    """A parameter computed on first access (with grad enabled) and then stored on the
    instance: `Bernoulli(probs=p).logits` is derived from `probs` once."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: a property (for docs) that argument
    validation still recognises as lazy."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower-triangular entries (on and below diagonal `diag`) of the last two dims, in
    row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = _fn.arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of `tril_matrix_to_vec`: a vector of n(n+1)/2 (for diag=0) entries -> an
    n x n lower-triangular matrix."""
    # size of the vector: n * (n + 1) / 2 + diag-dependent correction; solve for n
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (
        diag + 1)) ** 0.5) / 2
    eps = _fn.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    arange = _fn.arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat
