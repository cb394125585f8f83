"""``custom_fwd`` / ``custom_bwd``: decorators that make a custom ``autograd.Function`` behave
under autocast as torch's do.

    class MyMM(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a, b): ...
        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g): ...

`custom_fwd` records on ctx whether autocast was on (and its dtype) when forward ran; with
`cast_inputs`, inside an autocast region it casts the floating tensor arguments to that dtype
and runs forward with autocast off. `custom_bwd` runs backward in the autocast state forward
saw, so the gradients' dtypes follow the forward's.
"""
import functools

from ..core.tensor import Tensor
from .autocast_mode import autocast, is_autocast_enabled, get_autocast_dtype, _KNOWN


def is_autocast_available(device_type):
    """Whether autocast knows `device_type` (``"cpu"``; ``"cuda"`` is accepted too, and
    disabled with a warning, as ember computes on the CPU).

    >>> ember.amp.is_autocast_available("cpu")
    True
    """
    return device_type in _KNOWN and device_type != "meta"


def _cast(value, dtype):
    if isinstance(value, Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom Function's ``forward`` (see the module's docstring)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_on = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(ctx, *_cast(args[1:], cast_inputs), **_cast(kwargs, cast_inputs))
        return fwd(*args, **kwargs)
    return decorated


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom Function's ``backward``: it runs in the autocast state that
    ``forward`` (decorated with `custom_fwd`) ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorated
