"""one_hot, atleast_1d/2d/3d and ravel: small reshaping helpers (split from joining.py).

Each is a composition of ember views (reshape), so autograd, vmap and the tracer see the
views; one_hot computes its int64 result directly (it has no gradient).
"""
import numpy as np

from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap
from .registry import COMPOSITE, LINEAR, register_each


# ---- one_hot, atleast_Nd, ravel --------------------------------------------------------------
def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding along a new last dim (``nn.functional.one_hot``)."""
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size and a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if a.size and (num_classes < 0 or a.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return wrap(a[..., None] == np.arange(num_classes), D.int64)


def _atleast(n, tensors):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        shape = tuple(t.shape)
        if len(shape) < n:
            if n == 3 and len(shape) == 1:
                shape = (1,) + shape + (1,)
            elif n == 3 and len(shape) == 2:
                shape = shape + (1,)
            else:
                shape = (1,) * (n - len(shape)) + shape
            t = t.reshape(shape)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


def ravel(input):
    """The flattened tensor: a view when possible, else a copy."""
    return input.reshape(-1)


# linear in their tensors (jvp=LINEAR: forward mode applies them to the tangents)
register_each(globals(), COMPOSITE, (atleast_1d, atleast_2d, atleast_3d), method=False,
              jvp=LINEAR)
register_each(globals(), COMPOSITE, (ravel,), jvp=LINEAR)
