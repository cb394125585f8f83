"""ember.testing.make_tensor: a random tensor for tests, as torch.testing.make_tensor.

Values are uniform on [low, high) with per-dtype defaults (bool [0, 2), unsigned [0, 10),
signed integers [-9, 10), floating and complex [-9, 9)); bounds outside the dtype's finite
range are clamped to it. The draws use ember's generator (ember.manual_seed reproduces them).
"""
import math
import warnings
from collections.abc import Sequence

from ..core import dtype as _dt
from ..ops.creation import empty as _empty
from ..ops.random import randint as _randint
from ..ops.registry import FUNCTIONS

__all__ = ["make_tensor"]

_INTEGRAL = (_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64)
_BOOL_OR_INTEGRAL = (_dt.bool_, *_INTEGRAL)
_FLOATING = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)
_COMPLEX = (_dt.complex64, _dt.complex128)
_FLOATING_OR_COMPLEX = (*_FLOATING, *_COMPLEX)


def _is(dtype, group):
    # identity, not ==: a Python type such as `float` is no ember dtype and must not match
    return any(dtype is d for d in group)


def _bounds(low, high, dtype, lowest, highest, default_low, default_high):
    """The [low, high) actually drawn from: defaults filled in, checked, clamped to the dtype
    (and, for integers, made integral: ceil of both, since randint's high is exclusive)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and _is(dtype, _FLOATING_OR_COMPLEX):
        warnings.warn("make_tensor() with low == high for a floating or complex dtype is "
                      "deprecated, as in torch since 2.1; build the tensor with "
                      "ember.full(...) instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if _is(dtype, _BOOL_OR_INTEGRAL):
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform_(t, low, high):
    # a span wider than the dtype's max would overflow inside uniform_: draw half, then double
    if high - low >= _dt.finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of `shape` (ints, or one sequence) filled with values uniform on [low, high).

    `noncontiguous=True` returns a strided view (every other element of a tensor twice as
    long in the last dim), unless it has fewer than two elements; `memory_format` clones into
    that format (not with noncontiguous). `exclude_zero=True` replaces zeros by 1 (bool and
    integers) or by the dtype's smallest normal number (finfo.tiny; tiny+0j for complex). Raises
    ValueError for low >= high, NaN bounds, an interval outside the dtype, requires_grad with
    a bool/integer dtype or noncontiguous with memory_format; TypeError for other dtypes.
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and _is(dtype, _BOOL_OR_INTEGRAL):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        # twice as long in the last dim, then every other element from offset 1: the view has
        # distinct values, and a kernel that ignores the storage offset shows it
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype is _dt.bool_:
        low, high = _bounds(low, high, dtype, 0, 2, 0, 2)
        result = _randint(low, high, shape, device=device, dtype=dtype)
    elif _is(dtype, _INTEGRAL):
        info = _dt.iinfo(dtype)
        # int64's max itself cannot be drawn: randint's exclusive high would overflow int64
        highest = info.max + (0 if dtype is _dt.int64 else 1)
        low, high = _bounds(low, high, dtype, info.min, highest, -9, 10)
        result = _randint(low, high, shape, device=device, dtype=dtype)
    elif _is(dtype, _FLOATING_OR_COMPLEX):
        info = _dt.finfo(dtype)
        low, high = _bounds(low, high, dtype, info.min, info.max, -9, 9)
        result = _empty(shape, device=device, dtype=dtype)
        if _is(dtype, _COMPLEX):
            # real and imaginary parts are drawn independently, each on [low, high)
            _uniform_(FUNCTIONS["view_as_real"](result), low, high)
        else:
            _uniform_(result, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "ember.testing.make_tensor().")

    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if _is(dtype, _BOOL_OR_INTEGRAL) else _dt.finfo(dtype).tiny
    if _is(dtype, _FLOATING_OR_COMPLEX):
        result.requires_grad = requires_grad
    return result
