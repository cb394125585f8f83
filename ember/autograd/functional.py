"""Higher-level derivatives built on autograd.grad: jacobian, hessian, vjp, jvp."""
from .engine import grad as _grad


def _tuple(x):
    return (x, False) if isinstance(x, tuple) else ((x,), True)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    ins, single = _tuple(inputs)
    ins = tuple(x.detach().requires_grad_() for x in ins)
    out = func(*ins)
    outs, out_single = _tuple(out)
    vs = None if v is None else _tuple(v)[0]
    gs = _grad(outs, ins, vs, create_graph=create_graph, allow_unused=True,
               materialize_grads=True)
    res = tuple(g if create_graph else g.detach() for g in gs)
    o = out if create_graph else (out.detach() if not isinstance(out, tuple)
                                  else tuple(x.detach() for x in out))
    return o, (res[0] if single else res)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), computed with the double-vjp trick."""
    from ..ops.creation import zeros_like
    ins, single = _tuple(inputs)
    ins = tuple(x.detach().requires_grad_() for x in ins)
    out = func(*ins)
    outs, out_single = _tuple(out)
    us = tuple(zeros_like(o).requires_grad_() for o in outs)
    gs = _grad(outs, ins, us, create_graph=True, allow_unused=True, materialize_grads=True)
    vs = _tuple(v)[0] if v is not None else tuple(zeros_like(x) + 1 for x in ins)
    jv = _grad(gs, us, vs, create_graph=create_graph, allow_unused=True,
               materialize_grads=True)
    jv = tuple(j if create_graph else j.detach() for j in jv)
    o = tuple(x.detach() for x in outs)
    return (o[0] if out_single else o), (jv[0] if out_single else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs` (one backward per output element)."""
    from ..ops.creation import zeros_like
    from .. import stack
    ins, single = _tuple(inputs)
    ins = tuple(x.detach().requires_grad_() for x in ins)
    out = func(*ins)
    outs, out_single = _tuple(out)
    result = []
    for o in outs:
        rows = [[] for _ in ins]
        flat = o.reshape(-1)
        for i in range(flat.numel()):
            gs = _grad((flat[i],), ins, retain_graph=True, create_graph=create_graph,
                       allow_unused=True, materialize_grads=True)
            for k, g in enumerate(gs):
                rows[k].append(g if create_graph else g.detach())
        per_in = []
        for k, x in enumerate(ins):
            if rows[k]:
                j = stack(rows[k]).reshape(tuple(o.shape) + tuple(x.shape))
            else:
                j = zeros_like(x).reshape((0,) + tuple(x.shape))
                j = j.reshape(tuple(o.shape) + tuple(x.shape))
            per_in.append(j)
        result.append(per_in[0] if single else tuple(per_in))
    return result[0] if out_single else tuple(result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function `func` at `inputs`."""
    ins, single = _tuple(inputs)

    def grad_fn(*xs):
        out = func(*xs)
        gs = _grad((out,), xs, create_graph=True, allow_unused=True, materialize_grads=True)
        return gs[0] if single else gs
    return jacobian(grad_fn, inputs, create_graph=create_graph)
