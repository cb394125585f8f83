"""Module hooks: registration, the hooked call path (``Module.__call__``), removable handles
and the backward-hook bridge to autograd.

Full backward hooks ride on two identity autograd Functions, one over the module's inputs
and one over its outputs: the output one sees grad_output (and runs backward pre-hooks),
the input one sees grad_input once every input's gradient is known, and calls the hooks.
"""
import itertools
import warnings

from ...autograd import Function
from ...autograd.grad_mode import is_grad_enabled
from ...core.tensor import Tensor


class RemovableHandle:
    """Returned by ``register_*_hook``; ``handle.remove()`` unregisters the hook (also usable
    as a context manager)."""
    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict = hooks_dict
        self.id = next(RemovableHandle._ids)
        self.extra_dicts = [] if extra_dict is None else \
            (list(extra_dict) if isinstance(extra_dict, (list, tuple)) else [extra_dict])

    def remove(self):
        for d in [self.hooks_dict] + self.extra_dicts:
            if self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _Identity(Function):
    """Returns its tensor inputs unchanged; `backward` hands the gradients to `ctx.on_grad`."""

    @staticmethod
    def forward(ctx, on_grad, *tensors):
        ctx.on_grad = on_grad
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.on_grad(grads))


def _tensor_positions(values):
    return [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]


def _wrap(values, on_grad):
    """Pass the grad-requiring tensors of `values` through _Identity; same structure back."""
    pos = _tensor_positions(values)
    if not pos:
        return values, pos
    outs = _Identity.apply(on_grad, *[values[i] for i in pos])
    new = list(values)
    for i, o in zip(pos, outs):
        new[i] = o
    return new, pos


class BackwardHook:
    """Per-call state linking a module's inputs and outputs for its full backward hooks."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.n_inputs = 0
        self.input_pos = []
        self.grad_outputs = None

    def setup_input_hook(self, args):
        if not is_grad_enabled():
            return args
        self.n_inputs = len(args)
        new, self.input_pos = _wrap(list(args), self._on_input_grad)
        return tuple(new)

    def setup_output_hook(self, result):
        if not is_grad_enabled():
            return result
        single = isinstance(result, Tensor)
        values = [result] if single else list(result) if isinstance(result, (tuple, list)) \
            else None
        if values is None:
            return result
        self.n_outputs = len(values)
        new, self.output_pos = _wrap(values, self._on_output_grad)
        if single:
            return new[0]
        if isinstance(result, list):
            return new
        return tuple(new) if type(result) is tuple else type(result)(*new)  # namedtuple

    def _pack(self, pos, grads, n):
        full = [None] * n
        for i, g in zip(pos, grads):
            full[i] = g
        return tuple(full)

    def _on_output_grad(self, grads):
        full = self._pack(self.output_pos, grads, self.n_outputs)
        for hook in self.pre_hooks:
            res = hook(self.module, full)
            if res is not None:
                res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                if len(res) != len(full):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(res)}, but expected "
                                       f"{len(full)}")
                full = res
        self.grad_outputs = full
        if not self.input_pos and self.hooks:   # no input needs grad: call the hooks now
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "the documentation of Module.register_full_backward_hook for more "
                          "details.")
            self._call_hooks((None,) * self.n_inputs)
        return [full[i] for i in self.output_pos]

    def _on_input_grad(self, grads):
        full = self._call_hooks(self._pack(self.input_pos, grads, self.n_inputs))
        return [full[i] for i in self.input_pos]

    def _call_hooks(self, grad_input):
        for hook in self.hooks:
            res = hook(self.module, grad_input, self.grad_outputs)
            if res is None:
                continue
            res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            if len(res) != len(grad_input):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(res)}, but expected {len(grad_input)}")
            grad_input = res
        return grad_input


class HooksMixin:
    """Forward/backward hook registration and the call path that runs them."""

    def _add_hook(self, table, hook, prepend, extra=None):
        h = RemovableHandle(table, extra_dict=extra)
        table[h.id] = hook
        if prepend:
            table.move_to_end(h.id, last=False)
        return h

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with `with_kwargs`) runs
        before forward and may return replacement args (and kwargs)."""
        h = self._add_hook(self._forward_pre_hooks, hook, prepend,
                           self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs after
        forward and may return a replacement output.

        >>> h = m.register_forward_hook(lambda mod, args, out: out * 2); h.remove()
        """
        h = self._add_hook(self._forward_hooks, hook, prepend,
                           [self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs once the gradients w.r.t. the
        module's inputs are computed; it may return a replacement grad_input tuple."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients w.r.t. the module's outputs
        are computed; it may return a replacement grad_output tuple."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or
                self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        bw = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw = BackwardHook(self, list(self._backward_hooks.values()),
                              list(self._backward_pre_hooks.values()))
            args = bw.setup_input_hook(args)
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            for hid, hook in list(self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called:
                    if hid in self._forward_hooks_with_kwargs:
                        hook(self, args, kwargs, None)
                    else:
                        hook(self, args, None)
            raise
        for hid, hook in list(self._forward_hooks.items()):
            if hid in self._forward_hooks_with_kwargs:
                res = hook(self, args, kwargs, result)
            else:
                res = hook(self, args, result)
            if res is not None:
                result = res
        if bw is not None:
            result = bw.setup_output_hook(result)
        return result

    __call__ = _call_impl
