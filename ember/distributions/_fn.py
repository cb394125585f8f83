"""The ember functions that distributions call, looked up in the op registry when called.

This package sits above the ops (DESIGN.md's layering) and may not import the top `ember`
namespace, so `_fn.exp(x)` reads ``registry.FUNCTIONS["exp"]`` instead; a lookup at call
time also sees ops registered after this package was imported. Dtypes, `finfo`, `Size`
and `linalg` are the few names that are not registry functions.
"""
from .. import linalg  # noqa: F401
from ..core.dtype import (bool_ as bool, float32, float64, int64, finfo,  # noqa: F401
                          get_default_dtype)
from ..core.tensor import Tensor, Size  # noqa: F401
from ..ops.registry import FUNCTIONS, OPS


def __getattr__(name):
    """``_fn.exp`` is ember.exp; a torch.special-only op (i0e, i1, xlog1py...) is found under
    its registry name ``special_<name>``."""
    fn = FUNCTIONS.get(name)
    if fn is None and "special_" + name in OPS:
        fn = OPS["special_" + name].fn
    if fn is None:
        raise AttributeError(f"ember has no function {name!r} (ember.distributions needs it)")
    return fn


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes over tuples (ints allowed), as a Size."""
    from ..core.strides import broadcast_shapes as _b
    return Size(_b(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))
