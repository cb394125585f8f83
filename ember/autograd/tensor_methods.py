"""The autograd half of the Tensor API: backward, hooks, retain_grad, `.data`."""
import weakref

from .graph import RemovableHandle
from .grad_mode import state, call_mode
from . import engine
from ..core import dtype as D
from ..core.tensor import grad_dtype_of


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute gradients of this tensor w.r.t. the graph leaves (accumulated into ``.grad``)."""
    if state.modes:   # the compiler's tracer records the backward and the accumulation
        return call_mode("backward", _backward, (self, gradient, retain_graph, create_graph,
                                                 inputs), {})
    _backward(self, gradient, retain_graph, create_graph, inputs)


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    engine.backward((self,), None if gradient is None else (gradient,), retain_graph,
                    create_graph, inputs=inputs)


def register_hook(self, hook):
    """``hook(grad)`` runs when the gradient for this tensor is computed; it may return a
    replacement gradient. Returns a handle with ``.remove()``."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        return self.grad_fn._add_tensor_prehook(self._output_nr, hook)
    if self._hooks is None:
        self._hooks = []
    self._hooks.append(hook)
    return RemovableHandle(self._hooks, hook)


def register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs after the gradient was accumulated into this leaf's ``.grad``."""
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = []
    self._post_acc_hooks.append(hook)
    return RemovableHandle(self._post_acc_hooks, hook)


def retain_grad(self):
    """Keep ``.grad`` for this non-leaf tensor after backward."""
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self._retains_grad:
        return
    ref = weakref.ref(self)

    def store(g):
        t = ref()
        if t is None:
            return
        if t._grad is None:
            t._grad = g.detach().clone() if not g._requires_grad else g.clone()
        else:
            t._grad = t._grad + g.detach()
    self.grad_fn._add_tensor_prehook(self._output_nr, store, retain=True)
    self._retains_grad = True


def _retains_grad(self):
    return self._retains_grad


def _data_get(self):
    from ..ops.view import detach
    return detach(self)


def _data_set(self, new):
    from ..core.tensor import Tensor
    if not isinstance(new, Tensor):
        raise TypeError(f"data must be a Tensor, got {type(new).__name__}")
    self._data = new._data
    self._storage = new._storage_obj()
    self.dtype = new.dtype


def _grad_dtype_get(self):
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return grad_dtype_of(self)


def _grad_dtype_set(self, value):
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, D.dtype):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got "
                           f"{type(value).__name__}")
    g = self._grad
    if g is not None and value is not None and g.dtype is not value:
        raise RuntimeError(f"Cannot set grad_dtype to '{D.torch_name(value)}' because there is "
                           f"already a gradient with dtype '{D.CPP_NAMES[g.dtype.name]}'. "
                           "Please clear the gradient (.grad = None) before changing "
                           "grad_dtype, or ensure the new grad_dtype matches the existing "
                           "gradient's dtype.")
    self._grad_dtype = value


def install(tensor_cls):
    tensor_cls.grad_dtype = property(_grad_dtype_get, _grad_dtype_set, doc=(
        "The dtype a leaf's gradient takes (default: the leaf's dtype; None: any). Autograd "
        "casts incoming gradients to it, and assigning a ``.grad`` of another dtype fails."))
    tensor_cls.backward = backward
    tensor_cls.register_hook = register_hook
    tensor_cls.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    tensor_cls.retain_grad = retain_grad
    tensor_cls.retains_grad = property(_retains_grad)
    tensor_cls.data = property(_data_get, _data_set)
