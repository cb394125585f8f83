"""Reverse-mode function transforms, like ``torch.func``: grad, grad_and_value, vjp, jacrev.

Each transform is built on ember's ordinary autograd (``ember.autograd.grad``):

- The tensors being differentiated become fresh leaves. An input that already requires grad
  (from an outer ``grad``, or user autograd) becomes ``x.view_as(x)`` instead, so it stays
  connected to the outer graph; the inner ``autograd.grad`` then records its backward
  (``create_graph=True``) so an outer level can differentiate the result. That is how
  ``grad(grad(f))`` and ``jacrev(jacrev(f))`` nest without confusing each other's tensors: each
  level asks autograd for the gradient with respect to its own leaves only. When nothing
  outside this level needs the graph (the common, outermost case), no backward graph is built.
- Inside ``vmap`` the leaves are made on the *physical* tensors (ember/func/_physical.py):
  one leading dim per active vmap level, expanded where the input is not batched. So
  ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` yields one gradient per sample,
  also with respect to the unbatched ``params``.

    >>> import ember as torch
    >>> from ember.func import grad, vmap
    >>> x = torch.randn(3)
    >>> grad(lambda x: (x ** 2).sum())(x)            # 2 * x
    >>> grad(lambda x: grad(lambda y: (y ** 3).sum())(x).sum())(x)   # 6 * x: levels nest

Forward mode (jvp, jacfwd, hessian, linearize) lives in ember/func/forward.py.
"""
import functools
import weakref

from ..core.tensor import Tensor
from ..autograd.grad_mode import enable_grad
from ..autograd.engine import grad as _autograd_grad
from ..autograd.graph import AccumulateGrad
from ._pytree import tree_flatten, tree_unflatten, spec_str
from . import _physical as _ph


# ---- shared helpers (also used by forward.py) ----

def check_argnums(argnums, n):
    """argnums normalised to non-negative ints (an int stays an int), with torch's errors."""
    def one(a):
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        return a % n
    if isinstance(argnums, int):
        return one(argnums)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    nums = tuple(one(a) for a in argnums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return nums


def select_args(args, nums):
    """The differentiated arguments: one pytree (int argnums) or a tuple of them."""
    return args[nums] if isinstance(nums, int) else tuple(args[i] for i in nums)


def replace_args(args, nums, new):
    args = list(args)
    if isinstance(nums, int):
        args[nums] = new
    else:
        for i, v in zip(nums, new):
            args[i] = v
    return tuple(args)


def check_tensor_input(x):
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _new_leaf(x, levels):
    """(the value the function sees, the physical tensor autograd differentiates)."""
    check_tensor_input(x)
    p = _ph.to_physical(x, levels)
    if p.requires_grad:
        leaf = p.view_as(p)
    elif _ph.has_tangent(p):
        leaf = p.view_as(p).requires_grad_()       # (detach would drop the tangent)
    else:
        leaf = p.detach().requires_grad_()
    return _ph.from_physical(leaf, levels, like=x), leaf


# The fresh leaves of transforms that have returned (id -> weak reference): nothing outside
# can differentiate with respect to them any more, so a graph that reaches only them needs
# no recording (and results attached to them only are detached, see `_outer_can_see`).
_DEAD = {}


def _retire(leaves):
    for t in leaves:
        if t.grad_fn is None:
            i = id(t)
            _DEAD[i] = weakref.ref(t, lambda _, i=i: _DEAD.pop(i, None))


def _dead(t):
    r = _DEAD.get(id(t))
    return r is not None and r() is t


def _needs_graph(roots, leaves):
    """Whether an outer level can see this computation: the graph from `roots` reaches a
    tensor requiring grad that is not one of this level's fresh `leaves` (an outer level's
    input, or a tensor captured by closure). Then the backward must be recorded."""
    own = {id(t) for t in leaves if t.grad_fn is None}
    stack, seen = [], set()
    for r in roots:
        if r.grad_fn is not None:
            stack.append(r.grad_fn)
        elif r.requires_grad and id(r) not in own and not _dead(r):
            return True
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad or isinstance(node, AccumulateGrad):
            if id(node.variable) not in own and not _dead(node.variable):
                return True
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return False


def outer_can_see(values):
    """Whether results must stay attached: an active forward-AD level (their tangents), or
    a graph reaching tensors requiring grad outside finished transforms."""
    return _ph.forward_ad_active() or _needs_graph([v for v in values
                                                    if isinstance(v, Tensor)], ())


def _physical_vjp(outs, leaves, cots, create_graph, retain_graph):
    """autograd.grad of physical `outs` w.r.t. physical `leaves`; zeros where unused."""
    from ..ops.creation import zeros_like
    pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
    if pairs:
        gs = _autograd_grad([o for o, _ in pairs], leaves, [c for _, c in pairs],
                            retain_graph=retain_graph, create_graph=create_graph,
                            allow_unused=True)
    else:
        gs = (None,) * len(leaves)
    return [zeros_like(x) if g is None else g for g, x in zip(gs, leaves)]


def _release(value, keep, levels):
    """A result handed back to the caller: cut from this level's graph unless an outer level
    needs it (then it stays as computed)."""
    if not isinstance(value, Tensor):
        raise RuntimeError(f"Expected tensors, got unsupported type {type(value)}")
    if keep:
        return value
    return _ph.from_physical(_ph.to_physical(value, levels).detach(), levels)


# ---- grad, grad_and_value ----

def grad_and_value(func, argnums=0, has_aux=False):
    """Like ``grad``, returning ``(gradient, value)`` (``((gradient, (value, aux))`` with
    ``has_aux``).

    >>> g, v = grad_and_value(lambda x: (x ** 2).sum())(torch.ones(3))   # (2, 2, 2), 3
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a function returning a scalar tensor, with respect to the arguments
    `argnums` (an int or a tuple of ints; each argument a tensor or a pytree of tensors).

    With ``has_aux=True`` the function returns ``(output, aux)`` and ``grad`` returns
    ``(gradient, aux)``. Composes with vmap, jacrev, jacfwd and with itself.

    >>> grad(lambda x: x.sin().sum())(x)                       # x.cos()
    >>> vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)  # per-sample gradients
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, v[1]) if has_aux else g
    return wrapper


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    nums = check_argnums(argnums, len(args))
    leaves, spec = tree_flatten(select_args(args, nums))
    levels = _ph.active_levels()
    with enable_grad():
        made = [_new_leaf(x, levels) for x in leaves]
        phys = [p for _, p in made]
        with _ph.running():
            out = func(*replace_args(args, nums, tree_unflatten([v for v, _ in made], spec)),
                       **kwargs)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be "
                                   "a tuple: (output, aux) if has_aux is True")
            out, aux = out
        if not isinstance(out, Tensor):
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                               f"Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar "
                               f"Tensor, got tensor with {out.dim()} dims. Maybe you wanted to "
                               "use the vjp or jacrev APIs instead?")
        _ph.check_unbatched(leaves + [out], "grad")
        po = _ph.to_physical(out, levels)
        keep = _needs_graph([po], phys) or _ph.forward_ad_active()
        from ..ops.creation import ones_like
        gs = _physical_vjp([po], phys, [ones_like(po)], create_graph=keep, retain_graph=keep)
    _retire(phys)
    if keep:        # recorded for an outer level, or a forward-AD level: is one still there?
        keep = outer_can_see([po] + list(gs))
    grads = tree_unflatten([_release(_ph.from_physical(g, levels), keep, levels) for g in gs],
                           spec)
    value = _release(out, keep, levels)
    if has_aux:
        aux_leaves, aux_spec = tree_flatten(aux)
        value = (value, tree_unflatten([_release(a, keep, levels) for a in aux_leaves],
                                       aux_spec))
    return grads, value


# ---- vjp ----

def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns the vector-Jacobian
    products, one per primal (a tuple shaped like `primals`). `cotangents` has the structure
    of the output. ``vjp_fn`` may be called several times, and under vmap (that is how
    ``jacrev`` computes all rows of a Jacobian at once).

    >>> out, vjp_fn = vjp(torch.sin, x)
    >>> vjp_fn(torch.ones(3))        # (x.cos(),)
    """
    leaves, spec = tree_flatten(primals)
    levels = _ph.active_levels()
    with enable_grad():
        made = [_new_leaf(x, levels) for x in leaves]
        phys = [p for _, p in made]
        with _ph.running():
            out = func(*tree_unflatten([v for v, _ in made], spec))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
        out_leaves, out_spec = tree_flatten(out)
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError("vjp(f, *primals): expected f(*primals) to return only "
                                   f"tensors, got unsupported type {type(o)}")
        _ph.check_unbatched(leaves + out_leaves, "vjp")
        po = [_ph.to_physical(o, levels) for o in out_leaves]
    keep = _needs_graph(po, phys) or _ph.forward_ad_active()
    _retire(phys)
    out_keep = keep and outer_can_see(po)
    shapes = [tuple(o.shape) for o in out_leaves]
    dtypes = [o.dtype for o in out_leaves]

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        c_leaves, c_spec = tree_flatten(cotangents)
        if c_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{spec_str(c_spec)}, primal output: {spec_str(out_spec)}")
        for i, (c, shape) in enumerate(zip(c_leaves, shapes)):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(c)}")
            if tuple(c.shape) != shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{c.shape} and output[{i}] has a shape of "
                                   f"{out_leaves[i].shape}.")
        now = _ph.active_levels()
        if now[:len(levels)] != levels:
            raise RuntimeError("vjp_fn: called outside the vmap in which vjp was called")
        cg = keep or bool(create_graph) or _ph.forward_ad_active()   # (keeps tangents)
        c_leaves = [c if c.dtype is dt else c.to(dt) for c, dt in zip(c_leaves, dtypes)]
        with enable_grad():
            if len(now) == len(levels):
                pc = [_ph.to_physical(c, levels) for c in c_leaves]
                gs = _physical_vjp(po, phys, pc, cg, retain_graph or cg)
                gs = [_ph.from_physical(g, levels) for g in gs]
            elif not levels:
                # vjp outside vmap, vjp_fn inside (jacrev): the engine runs the backward
                # formulas on the batched cotangents, so vmap vectorizes the whole backward
                gs = _physical_vjp(po, phys, c_leaves, cg, True)
            else:
                gs = _vjp_under_new_levels(po, phys, c_leaves, levels, now, cg)
        return tree_unflatten(gs, spec)

    result = [_release(o, out_keep, levels) for o in out_leaves]
    result = tree_unflatten(result, out_spec)
    if has_aux:
        aux_leaves, aux_spec = tree_flatten(aux)
        return result, vjp_fn, tree_unflatten([_release(a, out_keep, levels)
                                               for a in aux_leaves], aux_spec)
    return result, vjp_fn


def _vjp_under_new_levels(po, phys, cots, levels, now, create_graph):
    """vjp_fn called inside vmaps entered after vjp: the cotangents carry extra (inner) batch
    levels the recorded graph does not have. One backward per element of those levels,
    stacked (the graph is kept for the next one)."""
    from ..ops.joining import stack
    k = len(levels)
    if len(now) == k + 1:
        return _vjp_one_new_level(po, phys, cots, now, create_graph)
    extra = _ph.batch_sizes(now[k:])
    n = 1
    for s in extra:
        n *= s
    pcs = []
    for c in cots:
        p = _ph.to_physical(c, now)                   # (*outer, *extra, *logical)
        pcs.append(p.reshape(tuple(p.shape[:k]) + (n,) + tuple(p.shape[k + len(extra):])))
    rows = [_physical_vjp(po, phys, [p.select(k, i) for p in pcs], create_graph, True)
            for i in range(n)]
    out = []
    for j, leaf in enumerate(phys):
        g = stack([r[j] for r in rows], dim=k)          # (*outer, n, *leaf logical)
        g = g.reshape(tuple(g.shape[:k]) + tuple(extra) + tuple(g.shape[k + 1:]))
        out.append(_ph.from_physical(g, now))
    return out


def _vjp_one_new_level(po, phys, cots, now, create_graph):
    """One new level (vmap(jacrev(f))): the cotangents become values batched at that level
    only, whose logical values are physical at the older levels; the engine then runs the
    recorded (physical) backward once on them, and vmap batches it."""
    k = len(now) - 1
    new = now[-1]
    pcs = [_ph.wrap(_ph.to_physical(c, now).movedim(k, 0), new) for c in cots]
    gs = _physical_vjp(po, phys, pcs, create_graph, True)
    return [_ph.from_physical(_ph.to_physical(g, [new]).movedim(0, k), now) for g in gs]


# ---- jacrev ----

def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of `func` with respect to the arguments `argnums`, by reverse mode: one
    vectorized vjp per output element (``vmap`` over the basis of cotangents), in chunks of
    `chunk_size` rows when given.

    For an input of shape ``I`` and output of shape ``O`` the Jacobian has shape ``O + I``;
    pytrees of outputs and inputs give nested structures (outputs outside, inputs inside).

    >>> jacrev(torch.sin)(x)              # torch.diag(x.cos())
    >>> jacrev(jacrev(f))(x)              # the Hessian
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = check_argnums(argnums, len(args))
        diff = select_args(args, nums)
        primals = (diff,) if isinstance(nums, int) else diff

        def f(*d):
            return func(*replace_args(args, nums, d[0] if isinstance(nums, int) else d),
                        **kwargs)
        res = vjp(f, *primals, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        out_leaves, out_spec = tree_flatten(out)
        in_leaves, in_spec = tree_flatten(primals)
        rows = _rows_of(vjp_fn, out_leaves, out_spec, in_leaves, chunk_size)  # (N, *in)
        jac = []
        offset = 0
        for o in out_leaves:
            n = o.numel()
            per_in = [r.narrow(0, offset, n).reshape(tuple(o.shape) + tuple(x.shape))
                      for r, x in zip(rows, in_leaves)]
            offset += n
            per_in = tree_unflatten(per_in, in_spec)
            jac.append(per_in[0] if isinstance(nums, int) else per_in)
        jac = tree_unflatten(jac, out_spec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def _basis(out_leaves, start, stop, total):
    """Rows start..stop of the identity over all output elements, split per output leaf and
    shaped like it: the cotangents of one chunk."""
    from ..ops.creation import eye, zeros
    from ..ops.joining import cat
    m = stop - start
    chunk = []
    offset = 0
    for o in out_leaves:
        n = o.numel()
        # (m, total) rows of the identity, built without the whole (total, total) one
        rows = eye(m, total - start, dtype=o.dtype, device=o.device)
        if start:
            rows = cat([zeros((m, start), dtype=o.dtype, device=o.device), rows], dim=1)
        chunk.append(rows.narrow(1, offset, n).reshape((m,) + tuple(o.shape)))
        offset += n
    return chunk


def _rows_of(vjp_fn, out_leaves, out_spec, in_leaves, chunk_size):
    """vjp_fn applied to every basis cotangent, vectorized with vmap; per primal leaf a
    tensor (N, *primal shape)."""
    from ..ops.joining import cat
    from ..ops.creation import zeros
    from .vmap import vmap
    total = sum(o.numel() for o in out_leaves)
    if total == 0:
        return [zeros((0,) + tuple(x.shape), dtype=x.dtype) for x in in_leaves]
    step = total if chunk_size is None else chunk_size
    parts = []
    for start in range(0, total, step):
        stop = min(total, start + step)
        basis = tree_unflatten(_basis(out_leaves, start, stop, total), out_spec)
        parts.append(tree_flatten(vmap(vjp_fn)(basis))[0])
    return [p[0] if len(parts) == 1 else cat(list(p)) for p in zip(*parts)]
