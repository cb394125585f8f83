"""``torch.nn.utils.stateless``: call a module with other parameters for one call.

    out = functional_call(model, {"weight": w, "bias": b}, (x,))

Deprecated in torch since 2.0 (FutureWarning) in favour of ``ember.func.functional_call``,
which this forwards to (one implementation, in ember/func/functional_call.py).
"""
import warnings

from ...func.functional_call import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with `parameters_and_buffers` (name -> tensor) in place
    of its own for this call.

    >>> functional_call(nn.Linear(3, 2), {"weight": w, "bias": b}, (x,))   # doctest: +SKIP
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
