"""``functionalize``, like ``torch.func.functionalize``: a function with the same semantics
as `func` whose program has no mutations.

torch.func.functionalize exists so that a trace (make_fx) of the function holds only
out-of-place ops, with the mutations of the inputs copied back at the end. Run eagerly, as
ember's transforms run, that program computes what `func` computes and leaves the inputs
as `func` leaves them; so ``functionalize(f)`` runs `f` itself, and composes with vmap,
grad, jvp and backward as `f` does. What torch's form changes that can be seen from
outside is which outputs alias the inputs, and that is reproduced here:

- an output aliasing an input that `f` mutated is a fresh tensor (torch regenerates it from
  the updated value; the input gets the mutation);
- with ``remove="mutations_and_views"`` an output that is a view (of an input or of a value
  made inside `f`) is a copy (torch's ``{view}_copy`` ops), while an input returned as it is
  stays that very tensor.

Known difference: inside ``vmap``, torch's functionalized in-place ops may write a batched
value into an unbatched tensor made inside `f` (``torch.zeros(3).add_(x)``); ember raises
vmap's in-place error there, as it does for `f` itself. A view of a tensor `f` closes over
is copied under "mutations_and_views" (torch keeps that alias).

    >>> functionalize(lambda x: x.add_(1) * 2)(x)      # x + 1 doubled; x itself is x + 1
"""
import functools

from ..core.tensor import Tensor
from ._pytree import tree_flatten, tree_unflatten

_REMOVE_ERROR = (
    "functionalize(f, remove='mutations'): received invalid argument for remove={}. Valid "
    "options are:\n     remove='mutations': all inplace and out= operators will be removed "
    "from the program, and replaced with their out-of-place equivalents.\n     "
    "remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} "
    "will be replaced with their non-aliasing counterparts, {{view}}_copy.\n")


def functionalize(func, *, remove="mutations"):
    """`func` with its mutations (and, with ``remove="mutations_and_views"``, its views)
    removed from the program: the same outputs, the inputs mutated as `func` mutates them
    (see the module docstring for how outputs alias inputs).

    >>> def f(x):
    ...     y = x.clone(); y.mul_(2); x.add_(1); return y
    >>> functionalize(f)(x)         # 2 * x (old x); x is now x + 1
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(_REMOVE_ERROR.format(remove))
    copy_views = remove == "mutations_and_views"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)]
        versions = [_version(t) for t in inputs]
        out = func(*args, **kwargs)
        mutated = {id(_root(t)) for t, v in zip(inputs, versions) if _version(t) != v}
        given = {id(t) for t in inputs}
        leaves, spec = tree_flatten(out)
        return tree_unflatten([_fresh(o, given, mutated, copy_views) for o in leaves], spec)
    return wrapper


def _fresh(o, given, mutated, copy_views):
    """Output `o` as torch's functionalized program hands it back."""
    if not isinstance(o, Tensor):
        return o
    if id(_root(o)) in mutated:
        return o.clone()        # regenerated from the mutated input's new value
    if copy_views and id(o) not in given and o._base is not None:
        return o.clone()        # a {view}_copy
    return o


def _root(t):
    """The tensor owning `t`'s storage (its view base, else `t`)."""
    base = getattr(t, "_base", None)
    return t if base is None else base


def _version(t):
    try:
        return t._version
    except (AttributeError, RuntimeError):
        return None
