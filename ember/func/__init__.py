"""Composable function transforms, like ``torch.func``.

``vmap`` vectorizes a function over a batch dimension; the other transforms
(``grad``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``,
``functional_call``, ``functionalize``) compose with it.

Example::

    >>> import ember as torch
    >>> x = torch.randn(3, 4)
    >>> torch.func.vmap(torch.sum)(x).shape
    ember.Size([3])
"""

from .vmap import vmap
from .transforms import grad, grad_and_value, vjp, jacrev
from .forward import jvp, jacfwd, hessian, linearize
from ._functionalize import functionalize
from .functional_call import functional_call, stack_module_state, replace_all_batch_norm_modules_
from ..autograd import functional as _autograd_functional
from . import autograd_functional as _vectorized

# autograd.functional's vectorize=True runs on these transforms; autograd (a lower layer)
# cannot import ember.func, so ember.func plugs itself in here (see autograd/functional.py)
_autograd_functional.VECTORIZED = _vectorized

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "functionalize", "functional_call", "stack_module_state",
           "replace_all_batch_norm_modules_"]
