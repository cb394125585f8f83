"""ember.testing: torch.testing's helpers for test suites -- assert_close (and the deprecated
assert_allclose) to compare tensors, scalars and nested containers with dtype-aware
tolerances, make_tensor to build random test inputs, and FileCheck to check IR text."""
from ._comparison import assert_close, assert_allclose  # noqa: F401
from ._creation import make_tensor  # noqa: F401
from ._filecheck import FileCheck  # noqa: F401

__all__ = ["FileCheck", "assert_close", "assert_allclose", "make_tensor"]
