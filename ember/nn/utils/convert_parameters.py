"""Flatten parameters into one vector and back (e.g. for second-order or evolutionary
optimisers).

    vec = nn.utils.parameters_to_vector(model.parameters())
    nn.utils.vector_to_parameters(vec * 0.5, model.parameters())
"""
from ...core.tensor import Tensor
from ...ops.joining import cat

from ..modules.module import typename


def parameters_to_vector(parameters):
    """One 1-D tensor: every parameter flattened, concatenated in order."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D `vec` into the parameters' data (in order)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
