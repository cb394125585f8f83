"""Higher-level derivatives built on autograd.grad: jacobian, hessian, vjp, jvp, vhp, hvp.

Each works on a function of one tensor or a tuple of tensors and returns results shaped like
PyTorch's ``torch.autograd.functional``: a single tensor in, a single tensor out; tuples in,
tuples out. Outputs that do not depend on an input get zeros (an error with ``strict=True``).

``jacobian(..., vectorize=True)`` and ``hessian(..., vectorize=True)`` (and their
``"forward-mode"`` strategies) are computed by ember.func's transforms (vmap over the basis
of cotangents or tangents). ember.func sits above autograd in the import layering, so
autograd cannot import it; instead ember.func installs its implementation in the
``VECTORIZED`` slot below when it is imported (``import ember`` imports it).
"""
from .engine import grad as _grad

# Filled by ember.func (ember/func/autograd_functional.py) at import: an object with
# ``jacobian(func, inputs, create_graph, strategy)`` and ``hessian(func, inputs,
# create_graph, outer_jacobian_strategy)``.
VECTORIZED = None

_STRATEGY = ('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
             'function has more outputs than inputs, "forward-mode" tends to be more '
             'performant. Otherwise, prefer to use "reverse-mode".')
_FWD_NEEDS_VECTORIZE = ("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                        "only implemented for `vectorize=True`.")


def _vectorized():
    if VECTORIZED is None:
        raise RuntimeError("vectorize=True needs ember.func (import ember loads it)")
    return VECTORIZED


def _tuple(x):
    """(tuple of tensors, was it a single tensor)."""
    return (tuple(x), False) if isinstance(x, (tuple, list)) else ((x,), True)


def _prep(inputs, create_graph):
    """Fresh leaves to differentiate with respect to; with create_graph, inputs that already
    require grad stay connected to their graph (so the result is differentiable)."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else
                 x.detach().requires_grad_() for x in inputs)


def _grads(outputs, inputs, grad_outputs, create_graph, retain_graph=None):
    """autograd.grad that tolerates outputs not requiring grad (they contribute nothing)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                 retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


def _fill(grads, like, strict, message):
    from ..ops.creation import zeros_like
    out = []
    for i, (g, x) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(message.format(i))
            g = zeros_like(x)
        out.append(g)
    return tuple(out)


def _finish(xs, create_graph):
    return tuple(x if create_graph else x.detach() for x in xs)


def _check_v(v, outs, what):
    from ..core.tensor import Tensor
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the {what} a single Tensor "
                               "with a single element.")
        from ..ops.creation import ones_like
        return (ones_like(outs[0]),)
    vs, _ = _tuple(v)
    for a, b in zip(vs, outs):
        if not isinstance(a, Tensor) or tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"v has invalid size: should be {b.shape} but got "
                               f"{getattr(a, 'shape', None)}.")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    ins, single = _tuple(inputs)
    ins = _prep(ins, create_graph)
    out = func(*ins)
    outs, out_single = _tuple(out)
    vs = _check_v(v, outs, "user-provided function returns")
    gs = _fill(_grads(outs, ins, vs, create_graph), ins, strict,
               "The output of the user-provided function is independent of input {}. This is "
               "not allowed in strict mode.")
    res = _finish(gs, create_graph)
    o = _finish(outs, create_graph)
    return (o[0] if out_single else o), (res[0] if single else res)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), computed with the double-vjp trick: J v = d(u^T J)/du . v."""
    from ..ops.creation import zeros_like
    ins, single = _tuple(inputs)
    vs = _check_v(v, ins, "input to the user-provided function is")
    ins = _prep(ins, create_graph)
    outs, out_single = _tuple(func(*ins))
    us = tuple(zeros_like(o).requires_grad_() for o in outs)
    gs = _grads(outs, ins, us, create_graph=True)
    pairs = [(g, w) for g, w in zip(gs, vs) if g is not None and g.requires_grad]
    jv = (None,) * len(outs) if not pairs else _grad(
        [g for g, _ in pairs], us, [w for _, w in pairs], create_graph=create_graph,
        allow_unused=True)
    jv = _finish(_fill(jv, outs, strict, "The output of the user-provided function is "
                                          "independent of input {}. This is not allowed in "
                                          "strict mode."), create_graph)
    o = _finish(outs, create_graph)
    return (o[0] if out_single else o), (jv[0] if out_single else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: one backward per output element, or with
    ``vectorize=True`` all of them at once (vmap); ``strategy="forward-mode"`` (needs
    vectorize) pushes the basis of input tangents forward instead. As in PyTorch, the
    forward-mode results for tuples come back as lists.

    >>> jacobian(ember.sin, x, vectorize=True)      # diag(cos(x))
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(_STRATEGY)
    if strategy == "forward-mode":
        if not vectorize:
            raise NotImplementedError(_FWD_NEEDS_VECTORIZE)
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
    if vectorize:
        if strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        return _vectorized().jacobian(func, inputs, create_graph, strategy)
    from ..ops.creation import zeros
    from ..ops.joining import stack
    ins, single = _tuple(inputs)
    ins = _prep(ins, create_graph)
    outs, out_single = _tuple(func(*ins))
    result = []
    for i, o in enumerate(outs):
        rows = [[] for _ in ins]
        flat = o.reshape(-1)
        for k in range(flat.numel()):
            gs = _grads((flat[k],), ins, (None,), create_graph, retain_graph=True)
            for j, g in enumerate(gs):
                if g is None and strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {j}. This is not allowed in "
                                       "strict mode.")
                rows[j].append(g)
        per_in = []
        for j, x in enumerate(ins):
            shape = tuple(o.shape) + tuple(x.shape)
            if rows[j] and all(g is not None for g in rows[j]):
                jac = stack(rows[j]).reshape(shape)
            else:
                filled = [g if g is not None else zeros(tuple(x.shape), dtype=x.dtype)
                          for g in rows[j]]
                jac = stack(filled).reshape(shape) if filled else zeros(shape, dtype=x.dtype)
            per_in.append(jac if create_graph else jac.detach())
        result.append(per_in[0] if single else tuple(per_in))
    return result[0] if out_single else tuple(result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function `func` at `inputs`; ``vectorize=True`` computes it
    with vmap (reverse-over-reverse, or forward-over-reverse with
    ``outer_jacobian_strategy="forward-mode"``).

    >>> hessian(lambda x: (x ** 3).sum(), x, vectorize=True)      # diag(6 x)
    """
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if outer_jacobian_strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(_FWD_NEEDS_VECTORIZE)
    if vectorize and not strict:      # (strict checks need the loop; the values agree)
        return _vectorized().hessian(func, inputs, create_graph, outer_jacobian_strategy)
    ins, single = _tuple(inputs)

    def gradient(*xs):
        out = func(*xs)
        if out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        gs = _fill(_grads((out,), xs, (None,), create_graph=True), xs, strict,
                   "The output of the user-provided function is independent of input {}. This "
                   "is not allowed in strict mode.")
        return gs[0] if single else gs
    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function: a vjp of its gradient."""
    ins, single = _tuple(inputs)
    vs = _check_v(v, ins, "input to the user-provided function is")
    ins = _prep(ins, create_graph)
    out = func(*ins)
    if out.numel() != 1:
        raise RuntimeError("The function given to vhp should return a single Tensor with a "
                           "single element.")
    gs = _fill(_grads((out,), ins, (None,), create_graph=True), ins, strict,
               "The output of the user-provided function is independent of input {}. This is "
               "not allowed in strict mode.")
    pairs = [(g, w) for g, w in zip(gs, vs) if g.requires_grad]
    res = (None,) * len(ins) if not pairs else _grad(
        [g for g, _ in pairs], ins, [w for _, w in pairs], create_graph=create_graph,
        allow_unused=True)
    res = _finish(_fill(res, ins, strict, "The Jacobian of the user-provided function is "
                                          "independent of input {}. This is not allowed in "
                                          "strict mode."), create_graph)
    return (out if create_graph else out.detach()), (res[0] if single else res)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); the Hessian of a twice-differentiable function is symmetric, so
    this equals ``vhp``."""
    return vhp(func, inputs, v, create_graph=create_graph, strict=strict)
