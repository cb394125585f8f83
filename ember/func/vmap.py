"""``ember.func.vmap``: vectorize a function over a batch dimension, like ``torch.func.vmap``.

``vmap(f)(x)`` runs `f` once on a BatchedTensor that stands for all of ``x[0], x[1], ...``:
each op inside `f` runs once on the whole batch through its batching rule (see
ember/func/batching.py), and the results are stacked along `out_dims`. Levels nest:
``vmap(vmap(f))`` maps over two dims, and each level's values stay apart.

    >>> import ember as torch
    >>> x, w = torch.randn(5, 3), torch.randn(3, 2)
    >>> torch.func.vmap(lambda row: row @ w)(x).shape      # one matmul, not five
    ember.Size([5, 2])

Primitives for the other transforms (ember.func.grad & co under vmap), re-exported here from
ember/func/_batched.py:

- ``active_levels()``: the running vmap levels, outermost first, as
  ``Level(level, size)`` entries (``[]`` outside vmap);
- ``to_physical(x, levels)``: one plain tensor with a leading dim per level (outermost
  first; expanded where `x` is not batched at that level), then x's logical dims;
- ``from_physical(p, levels)``: the inverse: `p`'s leading dims become batch dims again;
- ``make_batched(x, levels=None)``: `x` batched (expanded) at `levels` (default: all);
- ``batched_levels(x)``: the level ids `x` is batched at; ``is_batched(x)``.

``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)``: grad makes its inputs batched at
the running levels, differentiates their physical tensors with ember.autograd.grad, and
hands back per-sample gradients.
"""
import functools

from ..autograd.grad_mode import state
from ..core.tensor import Tensor
from ._pytree import tree_flatten, tree_unflatten, LEAF, TreeSpec
from ._batched import (BatchedTensor, wrap, LEVELS, Level, active_levels,  # noqa: F401
                       to_physical, from_physical, make_batched, batched_levels)
from .batching import VmapMode

__all__ = ["vmap", "active_levels", "to_physical", "from_physical", "make_batched",
           "batched_levels", "is_batched"]


def is_batched(x):
    """True for a value batched at some running vmap level."""
    return type(x) is BatchedTensor


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize `func` over dim `in_dims` of its inputs; outputs are stacked along
    `out_dims`.

    `in_dims`: an int (or None) for every input, or a tuple with one entry per positional
    argument, each an int, None (not mapped) or a pytree matching that argument.
    `out_dims`: the same for the outputs. `randomness`: "error" (random ops raise),
    "different" (each sample draws its own numbers) or "same" (one draw for all).
    `chunk_size`: run the batch in chunks of this many samples (None: all at once).

    >>> import ember as torch
    >>> torch.vmap(torch.dot)(torch.ones(4, 3), torch.ones(4, 3))
    tensor([3., 3., 3., 3.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    if not callable(func):
        raise TypeError(f"'{type(func).__name__}' object is not callable")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return wrapped


def _fname(func):
    return getattr(func, "__name__", None) or repr(func)


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    name = _fname(func)
    where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        if in_dims is not None:
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    flat, spec = tree_flatten(tuple(args))
    if isinstance(in_dims, tuple):
        if len(in_dims) != len(args):
            _, dspec = tree_flatten(in_dims)
            raise ValueError(f"{where}: in_dims is not compatible with the structure of "
                             f"`inputs`. in_dims has structure {_spec_str(dspec)} but inputs "
                             f"has structure {_spec_str(spec)}.")
        dims = []
        for d, a in zip(in_dims, args):
            dims.extend(_broadcast_prefix(d, a, where, "in_dims", "inputs", in_dims, args))
    else:
        dims = [in_dims] * len(flat)
    size = None
    sizes = []
    for x, d in zip(flat, dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"{where}: in_dim must be None or an int, got {d!r}")
        if not isinstance(x, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a "
                             f"Tensor of dimensionality {n} so expected in_dim to satisfy -{n} "
                             f"<= in_dim < {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    size = sizes[0]
    dims = [None if d is None else d % x.dim() for x, d in zip(flat, dims)]
    if chunk_size is not None and chunk_size < size:
        return _chunked(func, flat, spec, dims, size, chunk_size, out_dims, randomness, kwargs,
                        name)
    return _run(func, flat, spec, dims, size, out_dims, randomness, kwargs, name)


def _run(func, flat, spec, dims, size, out_dims, randomness, kwargs, name):
    LEVELS.counter += 1
    level = LEVELS.counter
    mode = VmapMode(level, size, randomness)
    saved_levels = LEVELS.stack
    LEVELS.stack = saved_levels + (Level(level, size),)
    state.modes = state.modes + (mode,)
    try:
        batched = [x if d is None else wrap(x, d, level) for x, d in zip(flat, dims)]
        out = func(*tree_unflatten(batched, spec), **kwargs)
    finally:
        state.modes = tuple(m for m in state.modes if m is not mode)
        LEVELS.stack = saved_levels
        if level in LEVELS.broken:
            LEVELS.broken = LEVELS.broken - {level}
    return _unwrap_outputs(out, out_dims, level, size, name)


def _unwrap_outputs(out, out_dims, level, size, name):
    leaves, ospec = tree_flatten(out)
    where = f"vmap({name}, ..., out_dims={out_dims})(<inputs>)"
    if isinstance(out_dims, (tuple, list, dict)):
        if ospec is LEAF or not _prefix_ok(out_dims, out):
            _, dspec = tree_flatten(out_dims)
            raise ValueError(f"{where}: out_dims is not compatible with the structure of "
                             f"`outputs`. out_dims has structure {_spec_str(dspec)} but outputs "
                             f"has structure {_spec_str(ospec)}.")
        dims = _broadcast_prefix(out_dims, out, where, "out_dims", "outputs", out_dims, out)
    else:
        if out_dims is not None and (not isinstance(out_dims, int) or
                                     isinstance(out_dims, bool)):
            raise ValueError(f"{where}: expected `out_dims` to be int or a (potentially "
                             f"nested) tuple matching the structure of outputs, got: "
                             f"{type(out_dims)}.")
        dims = [out_dims] * len(leaves)
    res = []
    for x, d in zip(leaves, dims):
        if d is None:
            if type(x) is BatchedTensor and x._level == level:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a "
                                 "BatchedTensor when out_dim is None")
            res.append(x)
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(x)}. Did you mean to set out_dims= to None for output?")
        res.append(_move_out(x, d, level, size))
    return tree_unflatten(res, ospec)


def _move_out(x, d, level, size):
    if type(x) is BatchedTensor and x._level == level:
        p, b = x._value, x._bdim
        n = p.dim()
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {d})")
        d %= n
        return p if b == d else p.movedim(b, d)
    # not batched at this level: every sample gets the same value
    n = x.dim() + 1
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    d %= n
    shape = list(x.shape)
    shape.insert(d, size)
    return x.unsqueeze(d).expand(*shape)


def _chunked(func, flat, spec, dims, size, chunk_size, out_dims, randomness, kwargs, name):
    from ..ops.joining import cat
    parts = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        sub = [x if d is None else x.narrow(d, start, n) for x, d in zip(flat, dims)]
        parts.append(_run(func, sub, spec, dims, n, out_dims, randomness, kwargs, name))
    leaves0, ospec = tree_flatten(parts[0])
    if isinstance(out_dims, (tuple, list, dict)):
        odims = _broadcast_prefix(out_dims, parts[0], "", "out_dims", "outputs", out_dims,
                                  parts[0])
    else:
        odims = [out_dims] * len(leaves0)
    per = [tree_flatten(p)[0] for p in parts]
    out = []
    for j, d in enumerate(odims):
        out.append(per[0][j] if d is None else cat([p[j] for p in per], dim=d))
    return tree_unflatten(out, ospec)


def _prefix_ok(dims, tree):
    """`dims` is a tree prefix of `tree` (an int/None leaf covers a whole subtree)."""
    if dims is None or isinstance(dims, int):
        return True
    if isinstance(dims, dict):
        return isinstance(tree, dict) and set(dims) == set(tree) and \
            all(_prefix_ok(dims[k], tree[k]) for k in dims)
    if isinstance(dims, (tuple, list)):
        return isinstance(tree, (tuple, list)) and len(dims) == len(tree) and \
            all(_prefix_ok(a, b) for a, b in zip(dims, tree))
    return False


def _broadcast_prefix(dims, tree, where, what, against, all_dims, all_tree):
    """One dim per leaf of `tree`, where `dims` is a prefix of its structure."""
    if dims is None or (isinstance(dims, int) and not isinstance(dims, bool)):
        leaves, _ = tree_flatten(tree)
        return [dims] * len(leaves)
    if isinstance(dims, (tuple, list, dict)) and _prefix_ok(dims, tree):
        out = []
        if isinstance(dims, dict):
            for k in tree:
                out.extend(_broadcast_prefix(dims[k], tree[k], where, what, against,
                                             all_dims, all_tree))
        else:
            for a, b in zip(dims, tree):
                out.extend(_broadcast_prefix(a, b, where, what, against, all_dims, all_tree))
        return out
    if not isinstance(dims, (tuple, list, dict)):
        raise ValueError(f"{where}: expected `{what}` to be int or a (potentially nested) "
                         f"tuple matching the structure of {against}, got: {type(dims)}.")
    _, dspec = tree_flatten(all_dims)
    _, tspec = tree_flatten(all_tree)
    raise ValueError(f"{where}: {what} is not compatible with the structure of `{against}`. "
                     f"{what} has structure {_spec_str(dspec)} but {against} has structure "
                     f"{_spec_str(tspec)}.")


def _spec_str(spec):
    return "*" if spec is LEAF else repr(spec) if isinstance(spec, TreeSpec) else str(spec)
