"""``ember.autograd.functional.jacobian/hessian(..., vectorize=True)``, built on ember.func.

autograd.functional sits below ember.func in the import layering, so it cannot import the
transforms it needs for ``vectorize=True``; ember/func/__init__.py puts this module in its
``VECTORIZED`` slot instead. Reverse mode is ``jacrev`` (vmap over the basis of
cotangents), forward mode ``jacfwd`` (vmap of jvp over the basis of tangents); the Hessian is
the Jacobian (of either kind) of the reverse-mode gradient. Results are shaped as
autograd.functional's: a tensor for one input and one output, tuples otherwise (lists for
the forward-mode strategies, as in PyTorch).
"""
from ..core.tensor import Tensor
from .transforms import jacrev
from .forward import jacfwd


def _inputs(inputs, create_graph):
    ins, single = ((tuple(inputs), False) if isinstance(inputs, (tuple, list))
                   else ((inputs,), True))
    if create_graph:
        # like autograd.functional: results differentiable w.r.t. (internal leaves of) inputs
        ins = tuple(x.view_as(x) if x.requires_grad else x.detach().requires_grad_()
                    for x in ins)
    return ins, single


def _finish(x, create_graph, as_list):
    if isinstance(x, Tensor):
        return x if create_graph else x.detach()
    out = [_finish(v, create_graph, as_list) for v in x]
    return out if as_list else tuple(out)


def jacobian(func, inputs, create_graph, strategy):
    ins, single = _inputs(inputs, create_graph)
    out_single = []

    def f(*xs):
        out = func(*xs)
        out_single.append(isinstance(out, Tensor))
        return out if isinstance(out, Tensor) else tuple(out)
    transform = jacrev if strategy == "reverse-mode" else jacfwd
    jac = transform(f, tuple(range(len(ins))))(*ins)     # [outputs][inputs]
    if out_single[0]:
        jac = jac[0] if single else jac
    else:
        jac = tuple(j[0] for j in jac) if single else jac
    return _finish(jac, create_graph, strategy == "forward-mode")


def hessian(func, inputs, create_graph, outer_jacobian_strategy):
    ins, single = _inputs(inputs, create_graph)

    def f(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())
    nums = tuple(range(len(ins)))
    outer = jacrev if outer_jacobian_strategy == "reverse-mode" else jacfwd
    hess = outer(jacrev(f, nums), nums)(*ins)           # [inputs][inputs]
    if single:
        hess = hess[0][0]
    return _finish(hess, create_graph, outer_jacobian_strategy == "forward-mode")
