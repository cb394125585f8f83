"""The ``__torch_function__`` protocol's helpers (PyTorch's ``torch.overrides``): find the
arguments that override a function, and hand the call to them.

ember's own ops do not consult ``__torch_function__``; these helpers let user code that
follows PyTorch's pattern work unchanged::

    def scaled(x, k=2):
        if has_torch_function_unary(x):
            return handle_torch_function(scaled, (x,), x, k=k)
        return x * k

An argument is dispatchable when its type defines ``__torch_function__`` or is a tensor
subclass; exact Tensors and Parameters never are (``has_torch_function`` is False), but
``handle_torch_function`` lets them take part, as PyTorch's Tensor does: a tensor without its
own override runs the function unless another argument's type is not one of its bases.
There are no torch-function modes here, so nothing but the arguments decides, and results
are not converted to a tensor subclass (ember has no ``as_subclass``).
"""
import warnings

from ..core.tensor import Tensor

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "is_tensor_like"]


# exact types that are never dispatchable (has_torch_function is False for them);
# ember.nn adds Parameter
_PLAIN_TYPES = {Tensor}


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """What a tensor (sub)class without its own ``__torch_function__`` does when handed a
    call: run it, unless an argument of a type that is not a base of `cls` takes part."""
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    return func(*args, **(kwargs or {}))


def _method_of(arg):
    """The ``__torch_function__`` that handles `arg`, or None."""
    m = getattr(arg, "__torch_function__", None)
    if m is None and isinstance(arg, Tensor):
        cls = type(arg)
        return lambda func, types, args=(), kwargs=None: \
            _tensor_torch_function(cls, func, types, args, kwargs)
    return m


def _overrides(arg_type):
    """Whether values of `arg_type` dispatch (tensor subclasses do, as in PyTorch)."""
    if arg_type in _PLAIN_TYPES:
        return False
    return getattr(arg_type, "__torch_function__", None) is not None or \
        issubclass(arg_type, Tensor)


def _get_overloaded_args(relevant_args):
    """The arguments that take part in dispatch (tensors included), one per type,
    subclasses before their superclasses, else in the order given."""
    types, out = set(), []
    for arg in relevant_args:
        t = type(arg)
        if t in types or not (getattr(t, "__torch_function__", None) is not None or
                              isinstance(arg, Tensor)):
            continue
        types.add(t)
        index = len(out)
        for i, old in enumerate(out):
            if issubclass(t, type(old)):
                index = i
                break
        out.insert(index, arg)
    return out


def has_torch_function(relevant_args):
    """True when an element of the sequence ``relevant_args`` is dispatchable (overrides
    ``__torch_function__``, or is a tensor subclass). A non-sequence is a TypeError."""
    if not hasattr(relevant_args, "__getitem__") or not hasattr(relevant_args, "__len__"):
        raise TypeError("expected a sequence")
    return any(_overrides(type(a)) for a in relevant_args)


def has_torch_function_unary(obj):
    """``has_torch_function((obj,))`` for one argument."""
    return _overrides(type(obj))


def has_torch_function_variadic(*args):
    """``has_torch_function(args)`` with the arguments given one by one."""
    return any(_overrides(type(a)) for a in args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call ``__torch_function__(public_api, types, args, kwargs)`` of each overriding
    argument in turn; the first result that is not ``NotImplemented`` is returned. When
    none handles the call: TypeError."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(map(type, overloaded))
    for arg in overloaded:
        method = _method_of(arg)
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated "
                          "and will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=2)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[type(a) for a in overloaded]}")


def is_tensor_like(inp):
    """True for tensors (and tensor subclasses, instances or classes) and for anything that
    implements ``__torch_function__``."""
    return isinstance(inp, Tensor) or (isinstance(inp, type) and issubclass(inp, Tensor)) \
        or hasattr(inp, "__torch_function__")
