"""Flatten and Unflatten: reshape a range of dims into one, and one dim into several.

    nn.Flatten()(ember.ones(32, 1, 5, 5)).shape          # (32, 25)
    nn.Unflatten(1, (2, 5))(ember.ones(3, 10)).shape     # (3, 2, 5)
"""
from .module import Module


class Flatten(Module):
    """Flatten dims `start_dim`..`end_dim` (default: all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim `dim` into `unflattened_size` (a tuple or list of ints; one may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            self._check(unflattened_size)
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    @staticmethod
    def _check(size):
        if not isinstance(size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(size).__name__}")
        for i, s in enumerate(size):
            if not isinstance(s, int):
                raise TypeError("unflattened_size must be tuple of ints, but found element of "
                                f"type {type(s).__name__} at pos {i}")

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
