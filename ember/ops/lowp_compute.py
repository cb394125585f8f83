"""Computing a bfloat16/float16 op in float32 with one rounding at its output.

PyTorch's CPU kernels for the 16-bit floats (gelu, sdpa, their backward formulas) load the
inputs as float32, compute in float32 and round the result once. ember's fast paths are
written for float32 arrays; for 16-bit inputs they run on float32 copies of the inputs
(`widened`) and round the result (`rounded`): one conversion per input and output instead of
a rounding after each of the composition's 5-15 ops, and closer to PyTorch's values.

    x32 = widened(x)                     # a float32 tensor, no graph
    y = rounded(_gelu_fast(x32), x.dtype)
"""
import numpy as np

from ..core import dtype as D
from ..core.lowp_cast import astype
from ..core.tensor import Tensor
from ..dispatch import wrap

LOWP = (D.float16, D.bfloat16)


def is_lowp(t):
    """True for a bfloat16 or float16 tensor."""
    return isinstance(t, Tensor) and t.dtype in LOWP


def widened(t):
    """A float32 tensor (no graph) holding the values of the 16-bit tensor `t`; None and
    other dtypes pass through."""
    if not is_lowp(t):
        return t
    return wrap(astype(t._data, np.float32), D.float32)


def rounded(t, dtype):
    """The float32 tensor `t` (no graph) rounded to `dtype`; None passes through."""
    if t is None or t.dtype is dtype:
        return t
    return wrap(astype(t._data, dtype.np), dtype)
