"""Forward-mode function transforms, like ``torch.func``: jvp, linearize, jacfwd, hessian.

``jvp`` runs the function on dual tensors (ember/autograd/forward_ad.py: each op's forward
formula on its OpDef pushes the tangent along) inside a fresh dual level, so jvp nests in
jvp and in the reverse-mode transforms (``jvp(grad(f))`` is a Hessian-vector product,
``jacfwd(jacrev(f))`` a Hessian). ``jacfwd`` is ``vmap`` of ``jvp`` over the basis of
tangents; there the dual level sits on top of that vmap, so only the tangents are batched and
the primal computation runs once, unbatched. Under any other vmap the dual level sits below
the vmap levels and works on their physical tensors, like the reverse transforms, so
``vmap(jacfwd(jacrev(f)))``, ``vmap(hessian(f))`` and ``vmap(jvp(grad(f)))`` are exact
(ember/func/_physical.py). ``linearize`` records the tangent computation once
(ember/func/_linear_trace.py).

    >>> import ember as torch
    >>> from ember.func import jvp, jacfwd, hessian
    >>> x = torch.randn(3)
    >>> jvp(torch.sin, (x,), (torch.ones(3),))      # (x.sin(), x.cos())
    >>> jacfwd(torch.sin)(x)                        # torch.diag(x.cos())
    >>> hessian(lambda x: (x ** 3).sum())(x)        # torch.diag(6 * x)
"""
import functools

from ..core.tensor import Tensor
from ._pytree import tree_flatten, tree_unflatten, treespec_repr
from . import _physical as _ph
from .transforms import check_argnums, select_args, replace_args, jacrev, outer_can_see


def _fwad():
    from ..autograd import forward_ad
    return forward_ad


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product, in one forward pass.

    `primals` is a tuple of arguments (tensors or pytrees of tensors), `tangents` a tuple of
    the same structure and shapes. With ``has_aux=True``, `func` returns ``(output, aux)``
    and jvp returns ``(output, jvp_out, aux)``. (`strict` is accepted as in torch.func.)

    >>> jvp(lambda x, y: x * y, (x, y), (torch.ones(3), torch.zeros(3)))   # (x * y, y)
    """
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. "
                           "it should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure. For example, if primals is a tuple of "
                           "3 tensors, tangents also must be. Got primals with structure "
                           f"{treespec_repr(p_spec)} and tangents with structure "
                           f"{treespec_repr(t_spec)}")
    if not p_leaves:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to contain at least "
                           "one Tensor.")
    for what, leaves in (("primals", p_leaves), ("tangents", t_leaves)):
        for x in leaves:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected {what} to only "
                                   f"contain Tensors, got {type(x)}")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size "
                               "than that of the original Tensor, this is not supported. "
                               f"Tensor is of size {list(p.shape)} while the given forward "
                               f"gradient is of size {list(t.shape)}.")
    return _jvp(func, p_leaves, t_leaves, p_spec, has_aux)


def _jvp(func, p_leaves, t_leaves, spec, has_aux, basis_level=None):
    fwad = _fwad()
    # Under vmap the dual level goes below the running vmap levels (forward_ad._push): it
    # works on their physical tensors, one leading dim per level (a primal not batched at a
    # level is expanded there), as the reverse transforms do, so a vjp inside it records
    # tensors that carry its tangents (vmap(jacfwd(jacrev(f)))). Inside jacfwd's own vmap
    # over the tangent basis (`basis_level`), with no primal batched there, it goes on top:
    # the primal computation runs once, unbatched, with batched tangents.
    with fwad._nested_dual_level(_ph.dual_below_vmaps(p_leaves, basis_level)) as level:
        levels = _ph.levels_above(fwad._mode_of(level))
        duals = []
        for p, t in zip(p_leaves, t_leaves):
            if t.dtype is not p.dtype:
                t = t.to(p.dtype)
            d = fwad.make_dual(_ph.to_physical(p, levels), _ph.to_physical(t, levels),
                               level=level)
            duals.append(_ph.from_physical(d, levels, like=p))
        with _ph.running():
            out = func(*tree_unflatten(duals, spec))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be "
                                   "a tuple: (output, aux) if has_aux is True")
            out, aux = out
        out_leaves, out_spec = tree_flatten(out)
        primal_out, tangent_out = [], []
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError("jvp(f, primals, tangents): expected f(*primals) to return "
                                   f"only tensors, got unsupported type {type(o)}")
            po, to = fwad.unpack_dual(_ph.to_physical(o, levels), level=level)
            if to is None:
                from ..ops.creation import zeros_like
                to = zeros_like(po)
            primal_out.append(_ph.from_physical(po, levels))
            tangent_out.append(_ph.from_physical(to, levels))
        if has_aux:
            aux_leaves, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([_strip(a, fwad, level, levels) for a in aux_leaves],
                                 aux_spec)
    if not outer_can_see(primal_out + tangent_out):
        # attached only to finished inner transforms (hessian's jacrev): hand back plain values
        primal_out = [o.detach() for o in primal_out]
        tangent_out = [t.detach() for t in tangent_out]
    res = (tree_unflatten(primal_out, out_spec), tree_unflatten(tangent_out, out_spec))
    return res + (aux,) if has_aux else res


def _strip(a, fwad, level, levels):
    """An aux output without this level's tangent."""
    if not isinstance(a, Tensor):
        raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")
    return _ph.from_physical(fwad.unpack_dual(_ph.to_physical(a, levels), level=level)[0],
                             levels)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector
    product at `primals`. `func` runs once: its tangent computation is recorded and
    ``jvp_fn`` replays only that (ember/func/_linear_trace.py), as torch.func traces it.
    Called under another transform, or where the recording is refused, ``jvp_fn`` reruns
    ``jvp`` instead (the same values).

    >>> out, jvp_fn = linearize(torch.sin, x)
    >>> jvp_fn(torch.ones(3))                       # x.cos()
    """
    from . import _linear_trace
    p_leaves, p_spec = tree_flatten(primals)
    rec = _linear_trace.record(func, p_leaves, p_spec) \
        if _linear_trace.recordable(p_leaves) else None
    if rec is None:
        out, replay = func(*primals), None
    else:
        out, replay = rec

    def jvp_fn(*tangents):
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {treespec_repr(t_spec)} to have the same "
                               f"argspec as the primals {treespec_repr(p_spec)}")
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if tuple(getattr(t, "shape", ())) != tuple(p.shape):
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree "
                                   f"doesn't match the shape {p.shape} of the corresponding "
                                   "primal.")
        if replay is None:
            return _jvp(func, p_leaves, t_leaves, p_spec, False)[1]
        t_leaves = [t if t.dtype is p.dtype else t.to(p.dtype)
                    for p, t in zip(p_leaves, t_leaves)]
        _, out_spec = tree_flatten(out)
        return tree_unflatten(replay(t_leaves), out_spec)
    return out, jvp_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of `func` with respect to the arguments `argnums`, by forward mode: a
    ``vmap`` of ``jvp`` over the basis of input tangents (one column per input element).

    Shapes and pytree structure as ``jacrev``; `randomness` is passed to that vmap.

    >>> jacfwd(torch.sin)(x)                        # torch.diag(x.cos())
    >>> jacfwd(jacrev(f))(x)                        # the Hessian, forward-over-reverse
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ..ops.creation import eye
        from .vmap import vmap
        if randomness not in ("error", "different", "same"):
            raise RuntimeError("Only allowed values for randomness are 'error', 'different', "
                               f"or 'same'. Got {randomness}")
        nums = check_argnums(argnums, len(args))
        primals = select_args(args, nums)
        in_leaves, in_spec = tree_flatten(primals)
        for x in in_leaves:
            if not isinstance(x, Tensor):
                raise RuntimeError("jvp(f, primals, tangents): Expected primals to only "
                                   f"contain Tensors, got {type(x)}")
        total = sum(x.numel() for x in in_leaves)
        basis = []
        offset = 0
        for x in in_leaves:
            n = x.numel()
            cols = eye(total, dtype=x.dtype, device=x.device).narrow(1, offset, n)
            basis.append(cols.reshape((total,) + tuple(x.shape)))
            offset += n

        def f(*flat):
            d = tree_unflatten(list(flat), in_spec)
            return func(*replace_args(args, nums, d), **kwargs)

        def push(*tangent_leaves):
            res = _jvp(f, in_leaves, list(tangent_leaves), _flat_spec(len(in_leaves)),
                       has_aux, basis_level=_ph.innermost_level())
            return (res[1], res[2]) if has_aux else res[1]

        got = vmap(push, randomness=randomness)(*basis)
        tangents, aux = (got if has_aux else (got, None))
        out_leaves, out_spec = tree_flatten(tangents)
        jac = []
        for t in out_leaves:                       # (total, *out)
            out_shape = tuple(t.shape[1:])
            per_in, offset = [], 0
            for x in in_leaves:
                n = x.numel()
                block = t.narrow(0, offset, n).movedim(0, -1)
                per_in.append(block.reshape(out_shape + tuple(x.shape)))
                offset += n
            jac.append(tree_unflatten(per_in, in_spec))
        jac = tree_unflatten(jac, out_spec)
        if has_aux:
            aux_leaves, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([a.select(0, 0) if isinstance(a, Tensor) else a
                                  for a in aux_leaves], aux_spec)
            return jac, aux
        return jac
    return wrapper


def _flat_spec(n):
    """The spec of a flat tuple of `n` leaves."""
    return tree_flatten(tuple(range(n)))[1]


def hessian(func, argnums=0):
    """The Hessian of a scalar function with respect to the arguments `argnums`:
    ``jacfwd(jacrev(func, argnums), argnums)`` (forward-over-reverse).

    Composes with vmap: ``vmap(hessian(f))`` gives per-sample Hessians.

    >>> hessian(lambda x: (x ** 3).sum())(x)        # torch.diag(6 * x)
    """
    return jacfwd(jacrev(func, argnums), argnums)
