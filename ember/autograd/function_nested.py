"""``NestedIOFunction``: the legacy, instance-style custom function whose inputs and outputs
may be nested tuples/lists of tensors (PyTorch keeps it for backward compatibility; new
code should subclass ``Function`` and call ``apply``).

    class MulAdd(NestedIOFunction):
        def forward_extended(self, pair, c):
            a, b = pair
            self.save_for_backward(a, b)
            return (a * b, a + c)
        def backward_extended(self, g_mul, g_add):
            a, b = self.saved_tensors
            return (g_mul * b + g_add, g_mul * a), g_add

    out_mul, out_add = MulAdd()((a, b), c)

Calling an instance flattens the nested inputs, runs ``forward_extended`` inside a one-off
``Function`` (so the graph, saved tensors and version checks are the ordinary ones) and
gives the outputs back in the structure ``forward_extended`` returned. (PyTorch 2.x still
ships the class but its call path is broken; here it works.)
"""
from ..core.tensor import Tensor
from .function import Function

__all__ = ["NestedIOFunction"]


def _flatten(obj, allow_none):
    """The tensors (and Nones, when allowed) of a nested tuple/list, in order."""
    if isinstance(obj, Tensor) or (allow_none and obj is None):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten(o, allow_none)
    else:
        kinds = "only tuples and Variables" + (" or None" if allow_none else "")
        raise ValueError("NestedIOFunction doesn't know how to iterate an input object of "
                         f"type {type(obj).__name__}. Accepted types: {kinds}")


def _unflatten(flat, proto):
    """`flat` (a sequence) poured back into the nesting of `proto`."""
    it = iter(flat)

    def build(p):
        if isinstance(p, (list, tuple)):
            return tuple(build(x) for x in p)
        return next(it)
    return build(proto)


def _detached(obj):
    if isinstance(obj, Tensor):
        return obj.detach()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_detached(o) for o in obj)
    return obj


class NestedIOFunction(Function):
    """An instance-style custom function over nested inputs; define ``forward_extended``
    and ``backward_extended`` (instance methods) and call the instance."""

    def _do_forward(self, *input):
        self._nested_input = input
        flat_input = tuple(_flatten(input, False))
        me = self

        class _Call(Function):
            @staticmethod
            def forward(ctx, *flat):
                me._ctx = ctx
                flat_out = me.forward(*flat)
                if getattr(me, "to_save", None) is not None:
                    ctx.save_for_backward(*me.to_save)
                if getattr(me, "dirty_tensors", None):
                    ctx.mark_dirty(*me.dirty_tensors)
                if getattr(me, "non_differentiable", None):
                    ctx.mark_non_differentiable(*me.non_differentiable)
                return flat_out

            @staticmethod
            def backward(ctx, *grads):
                return me.backward(*grads)

        _Call.__name__ = _Call.__qualname__ = type(self).__name__
        flat_output = _Call.apply(*flat_input)
        if not isinstance(flat_output, tuple):
            flat_output = (flat_output,)
        return _unflatten(flat_output, self._nested_output)

    __call__ = _do_forward

    def _do_backward(self, gradients, retain_variables):
        self.retain_variables = retain_variables
        result = self.backward(*gradients)
        if not retain_variables:
            del self._nested_output
            del self._to_save_nested
        return result

    def forward(self, *args):
        """Shared forward utility: ``forward_extended`` on the nested inputs; returns its
        outputs flattened."""
        nested = _detached(self._nested_input)
        result = self.forward_extended(*nested)
        del self._nested_input
        self._nested_output = result
        return tuple(_flatten(result, False))

    def backward(self, *gradients):
        """Shared backward utility: ``backward_extended`` on the gradients nested like the
        outputs; returns its results flattened (None for no gradient)."""
        nested = _unflatten(gradients, self._nested_output)
        result = self.backward_extended(*nested)
        return tuple(_flatten(result, True))

    def save_for_backward(self, *args):
        """Save (nested) tensors for ``backward_extended``; see ``saved_tensors``."""
        self.to_save = tuple(_flatten(args, False))
        self._to_save_nested = args

    @property
    def saved_tensors(self):
        """The saved tensors, nested as they were given to ``save_for_backward``."""
        ctx = self.__dict__.get("_ctx")
        flat = ctx.saved_tensors if ctx is not None else self.to_save
        return _unflatten(flat, self._to_save_nested)

    def mark_dirty(self, *args, **kwargs):
        """Mark (nested) inputs as modified in place by ``forward_extended``."""
        self.dirty_tensors = tuple(_flatten((args, tuple(kwargs.values())), False))

    def mark_non_differentiable(self, *args, **kwargs):
        """Mark (nested) outputs as not differentiable."""
        self.non_differentiable = tuple(_flatten((args, tuple(kwargs.values())), False))

    def forward_extended(self, *input):
        """User defined forward."""
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        """User defined backward."""
        raise NotImplementedError
