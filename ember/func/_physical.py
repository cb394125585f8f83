"""How grad/vjp/jvp see vmap: the active vmap levels, and values moved to and from their
physical tensors.

The derivative transforms run ember's ordinary autograd (and forward AD) on *physical*
tensors: a value at the current vmap nesting is turned into one plain tensor with a leading
dim per active vmap level (outermost first; a value not batched at some level is expanded
there), differentiated, and the results are turned back into values batched at those
levels. So `vmap(grad(f))` gives per-sample gradients, also for inputs the vmap does not
batch (their expanded physical tensor is differentiated, one gradient per sample).

This module is the one place that knows vmap's internals (ember/func/_batched.py); when vmap
is not active everything here is the identity.

    >>> levels = active_levels()          # [] outside vmap
    >>> p = to_physical(x, levels)        # (B_outer, ..., B_inner, *x.shape)
    >>> y = from_physical(p, levels)      # batched at each level again
"""
from . import _batched as _b


def active_levels():
    """The vmap levels to differentiate on physical tensors, outermost first: the running
    ones, or none when a forward-AD level was entered inside the innermost vmap (jacfwd's
    vmap over tangents, as in ``jacfwd(jacrev(f))``): the tangents live on the logical
    (wrapper) values there, so the reverse-mode transforms must work on those, unbatched
    (see `check_unbatched`)."""
    levels = _b.active_levels()
    if levels and _dual_inside_vmap():
        return []
    return levels


def _dual_inside_vmap():
    from ..autograd.grad_mode import state
    from ..autograd.forward_ad import _DualLevel
    for m in reversed(state.modes):
        if isinstance(m, _DualLevel):
            return True
        if isinstance(m, _b_mode()):
            return False
    return False


def _b_mode():
    from .batching import VmapMode
    return VmapMode


def check_unbatched(values, what):
    """Under a forward-AD level inside vmap (active_levels() is then empty), reverse mode
    works on unbatched values only; a batched one would get a wrong gradient, so refuse."""
    if not _b.active_levels():
        return
    for v in values:
        if _b.batched_levels(v):
            raise NotImplementedError(
                f"ember.func: {what} of a value batched by an outer vmap, inside a forward-mode "
                "transform (jvp/jacfwd) that runs inside that vmap, is not supported yet; "
                "move the vmap inside, or use jacrev instead of jacfwd")


def to_physical(x, levels):
    """A plain tensor with one leading dim per level in `levels` (expanded where `x` is not
    batched at that level), then `x`'s logical dims."""
    if not levels:
        return x
    return _b.to_physical(x, levels)


def from_physical(p, levels):
    """The inverse of `to_physical`: the leading dims of `p` become the batch dims of
    `levels`."""
    if not levels:
        return p
    return _b.from_physical(p, levels)


def batch_sizes(levels):
    return _b.level_sizes(levels)


def has_tangent(t):
    """Whether `t` carries a forward-AD tangent at some level."""
    return bool(getattr(t, "_fw", None))


def forward_ad_active():
    """Whether a forward-AD level is active: the reverse-mode transforms then keep their
    results attached (detaching would drop the tangents that jvp(grad(f)) needs)."""
    from ..autograd import forward_ad
    return bool(forward_ad._local.levels)


def wrap(p, level):
    """Plain `p` batched at `level` only, batch dim 0 (its logical value may itself be a
    physical tensor of older levels)."""
    return _b.wrap(p, 0, level.level)
