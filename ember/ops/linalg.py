"""Matrix products through BLAS (NumPy's matmul). More of linear algebra lives here as the
op library grows; every kernel calls BLAS on whole batches, never a Python loop.
"""
import numpy as np

from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, EXTERN, register


def _mm_self_grad(g, self, other):
    if self.dim() == 1 and other.dim() == 1:
        return g * other
    if self.dim() == 1:
        return (g.unsqueeze(-2) @ other.mT).squeeze(-2)
    if other.dim() == 1:
        return g.unsqueeze(-1) * other
    return g @ other.mT


def _mm_other_grad(g, self, other):
    if self.dim() == 1 and other.dim() == 1:
        return g * self
    if self.dim() == 1:
        return self.unsqueeze(-1) * g.unsqueeze(-2)
    if other.dim() == 1:
        return (self.mT @ g.unsqueeze(-1)).squeeze(-1)
    return self.mT @ g


_MATMUL = OpDef("matmul", EXTERN, inputs=("self", "other"),
                grads={"self": _mm_self_grad, "other": _mm_other_grad}, node_name="MmBackward0")


def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rules for 1-D operands and broadcast batch dims.

    >>> (ember.ones(2, 3) @ ember.ones(3)).shape
    ember.Size([2])
    """
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul(): argument 'other' must be Tensor")
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{input.dtype.name.replace('float32', 'float')} != "
                           f"{other.dtype.name.replace('float32', 'float')}")
    if input.dtype.name == "bool":
        raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    try:
        r = np.matmul(a, b)
    except ValueError:
        _matmul_error(a, b)
        raise
    result = wrap(r, input.dtype)
    if state.enabled and (input._requires_grad or other._requires_grad):
        graph.record(_MATMUL, (input, other), result, {})
    if out is not None:
        from ..dispatch import copy_into_out
        return copy_into_out(out, result)
    return result


def _matmul_error(a, b):
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1, a.shape[-1])
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a2.shape[0]}x"
                           f"{a2.shape[1]} and {b2.shape[-2]}x{b2.shape[-1]})")
    from ..core.strides import broadcast_shapes
    broadcast_shapes(a.shape[:-2], b.shape[:-2])


def mm(input, mat2, *, out=None):
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'self' if input.dim() != 2 else 'mat2'} must be a matrix")
    return matmul(input, mat2, out=out)


register(_MATMUL, matmul)
register(OpDef("mm", EXTERN), mm)
