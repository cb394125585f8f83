"""Custom differentiable functions: subclass ``ember.autograd.Function``.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * y

    Exp.apply(x)

`forward` runs without recording; `apply` then links the outputs to one node (the ctx,
named ``ExpBackward``) whose `backward` is yours. The newer style, with `forward(*args)`
and a separate `setup_context(ctx, inputs, output)`, works too.
"""
import functools

from .grad_mode import state, no_grad
from .graph import Node, SavedTensor, edge_of


class FunctionCtx(Node):
    """The `ctx` of a custom Function; it is also the graph node of its call."""
    __slots__ = ("__dict__",)

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    @property
    def saved_tensors(self):
        saved = self.__dict__.get("_saved")
        if saved is None:
            return tuple(self.__dict__.get("_to_save", ()))
        return tuple(s.unpack(self) if isinstance(s, SavedTensor) else s for s in saved)

    def apply(self, grads):
        cls = self._cls
        # one grad per output, even for outputs no gradient reached
        grads = tuple(grads) + (None,) * (len(self._out_meta) - len(grads))
        if self._materialize:
            from ..ops.creation import zeros
            grads = tuple(g if g is not None or dt is None else zeros(shape, dtype=dt)
                          for g, (shape, dt) in zip(grads, self._out_meta))
        # a Function may define `vjp` instead of `backward`
        bw = cls.vjp if cls.backward is Function.backward else cls.backward
        result = bw(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self._arg_is_tensor)
        if len(result) < n and all(r is None for r in result[len(result):]):
            pass
        if len(result) != n:
            if len(result) > n and all(r is None for r in result[n:]):
                result = result[:n]
            else:
                raise RuntimeError(f"function {type(self).__name__} returned an incorrect number "
                                   f"of gradients (expected {n}, got {len(result)})")
        out = []
        for i, (is_t, r) in enumerate(zip(self._arg_is_tensor, result)):
            if is_t:
                out.append(r)
            elif r is not None:
                raise RuntimeError(f"function {type(self).__name__} returned a gradient "
                                   f"different than None at position {i + 1}, but the "
                                   "corresponding forward input was not a Variable")
        return tuple(out)

    def release(self):
        saved = self.__dict__.get("_saved")
        if saved:
            for s in saved:
                if isinstance(s, SavedTensor):
                    s.released = True
                    s.tensor = None


class FunctionMeta(type):
    """Gives every Function subclass its node class (``<Name>Backward``)."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (FunctionCtx,), {"_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom autograd functions; call them through ``apply``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..core.tensor import Tensor, make_view
        ctx = cls._backward_cls.__new__(cls._backward_cls)
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx._materialize = True
        uses_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            if uses_setup:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if uses_setup:
            cls.setup_context(ctx, args, output)
        record = state.enabled and any(ctx.needs_input_grad)
        single = not isinstance(output, tuple)
        outs = (output,) if single else output
        dirty = ctx.__dict__.get("_dirty", ())
        non_diff = ctx.__dict__.get("_non_diff", ())
        if not record:
            return output
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        ctx._setup(tuple(edge_of(a) for a in tensor_args),
                   tuple((a._data.shape, a.dtype) for a in tensor_args))
        ctx._arg_is_tensor = is_tensor
        ctx._out_meta = tuple((o._data.shape, o.dtype) if isinstance(o, Tensor) else ((), None)
                              for o in outs)
        new_outs = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                new_outs.append(o)
                continue
            non_differentiable = any(o is n for n in non_diff)
            if any(o is d for d in dirty):
                if o._requires_grad and o.grad_fn is None and o._base is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                       "in-place operation.")
            elif any(o is a for a in tensor_args):
                o = make_view(o, o._data)   # an input returned as-is becomes a view of it
            if non_differentiable or o.dtype._kind < 2:
                if o is not outs[i]:
                    o._requires_grad = False   # a fresh view of an input, cut from the graph
                new_outs.append(o)
                continue
            o.grad_fn = ctx
            o._requires_grad = True
            o._output_nr = i
            new_outs.append(o)
        to_save = ctx.__dict__.pop("_to_save", ())
        saved = []
        for t in to_save:
            if t is None or not isinstance(t, Tensor):
                saved.append(t)
            else:
                saved.append(SavedTensor(t, any(t is o for o in new_outs)))
        ctx._saved = saved
        return new_outs[0] if single else tuple(new_outs)


def once_differentiable(fn):
    """Mark a Function's backward as not itself differentiable: it runs without recording,
    and when its inputs require grad (``create_graph``) its outputs lead to a node that
    refuses to be differentiated, so a double backward fails loudly instead of being wrong."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from ..core.tensor import Tensor
        with no_grad():
            outputs = fn(ctx, *args)
        req = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
        if not state.enabled or not req:
            return outputs
        node = _DelayedError.__new__(_DelayedError)
        node._setup(tuple(edge_of(a) for a in req), tuple((a._data.shape, a.dtype) for a in req))
        single = not isinstance(outputs, tuple)
        wrapped = []
        for i, o in enumerate((outputs,) if single else outputs):
            if isinstance(o, Tensor) and o.dtype._kind >= 2:
                o = Tensor._make(o._data, o.dtype)   # an alias: `o` may be one of the args
                o.grad_fn, o._requires_grad, o._output_nr = node, True, i
            wrapped.append(o)
        return wrapped[0] if single else tuple(wrapped)
    return wrapper


class _DelayedError(Node):
    __slots__ = ()

    def apply(self, grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


_DelayedError.__name__ = "DelayedError"
