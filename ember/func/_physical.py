"""How grad/vjp/jvp see vmap: the active vmap levels, and values moved to and from their
physical tensors.

The derivative transforms run ember's ordinary autograd (and forward AD) on *physical*
tensors: a value at the current vmap nesting is turned into one plain tensor with a leading
dim per active vmap level (outermost first; a value not batched at some level is expanded
there), differentiated, and the results are turned back into values batched at those
levels. So `vmap(grad(f))` gives per-sample gradients, also for inputs the vmap does not
batch (their expanded physical tensor is differentiated, one gradient per sample).

Forward AD: ember.func.jvp's dual level goes *below* the vmap levels running when it starts
(forward_ad `_push`, `dual_below_vmaps`): it then sees their physical tensors, so its
tangents sit on the tensors autograd records and ``vmap(jacfwd(jacrev(f)))`` /
``vmap(jvp(grad(f)))`` are exact. Only inside a plain jacfwd's own vmap over the tangent
basis (no primal batched there) it goes on top, tangents on the wrappers, the primal
computed once; reverse mode inside it works on the values not batched there
(`active_levels`, `check_unbatched`: a forward_ad.dual_level entered inside a vmap is the
one way to meet batched ones).

An expanded primal is still unbatched for torch: its wrappers at the levels that do not
batch it are marked as holding the same value in every sample (`from_physical(..., like=)`,
`_batched.BatchedTensor._same`), so Python control flow on it (``if x.sum() > 0``,
``.item()``) works as in torch, and writing a batched value into it in place is refused.

This module is the one place that knows vmap's internals (ember/func/_batched.py); when vmap
is not active everything here is the identity.

    >>> levels = active_levels()          # [] outside vmap
    >>> p = to_physical(x, levels)        # (B_outer, ..., B_inner, *x.shape)
    >>> y = from_physical(p, levels)      # batched at each level again
"""
from . import _batched as _b


def active_levels():
    """The vmap levels to differentiate on physical tensors, outermost first: the running
    ones above the innermost forward-AD level on the dispatch mode stack (all of them when
    none is active). A forward-AD level sees the physical tensors of the vmap levels above
    it, so its tangents are on the tensors autograd records there. Below it (jacfwd's own
    vmap over the tangent basis, when jacfwd's primals are not batched) the tangents live on
    the logical (wrapper) values: reverse mode works on values not batched there, and
    refuses the others (`check_unbatched`)."""
    levels = _b.active_levels()
    if not levels:
        return levels
    above = _vmap_ids_above_last_dual()
    if above is None:
        return levels
    return [lv for lv in levels if lv.level in above]


def _vmap_ids_above_last_dual():
    """The ids of the vmap levels whose modes sit above the innermost forward-AD level on the
    dispatch mode stack, or None when no forward-AD level is active."""
    from ..autograd.grad_mode import state
    from ..autograd.forward_ad import _DualLevel
    modes = state.modes
    last = max((i for i, m in enumerate(modes) if type(m) is _DualLevel), default=-1)
    if last < 0:
        return None
    return {m.level for m in modes[last + 1:] if getattr(m, "batching", False)}


def dual_below_vmaps(primals, basis_level=None):
    """Whether a new forward-AD level must go below the vmap levels running above the last
    one (forward_ad `_push`), to see their physical tensors. It may stay on top only when
    the one such level is `basis_level`, the vmap ``jacfwd`` runs over its tangent basis,
    and no primal is batched there: the function cannot close over values batched at a
    level jacfwd made, so only the tangents are, and the primal computation runs once,
    unbatched. A vmap the user wrote may batch values the function closes over
    (``vmap(lambda x, v: jvp(grad(lambda w: loss(w, x)), (w,), (v,)))``): below it, so
    reverse mode inside works on them."""
    levels = _b.active_levels()
    if not levels:
        return False
    above = _vmap_ids_above_last_dual()
    ids = [lv.level for lv in levels if above is None or lv.level in above]
    if not ids:
        return False
    if ids != [basis_level]:
        return True
    return any(basis_level in _b.batched_levels(p) for p in primals)


def running():
    """Context manager around a derivative transform's call of its function: a refusal of
    Python control flow on a value batched by a vmap around it gets torch's wording for
    reads through a transform."""
    return _b.transform_running()


def innermost_level():
    """The id of the innermost running vmap level (None outside vmap)."""
    levels = _b.active_levels()
    return levels[-1].level if levels else None


def levels_above(mode):
    """The running vmap levels whose modes sit above dispatch mode `mode` (a forward-AD
    level): the ones whose physical tensors that level sees, outermost first."""
    from ..autograd.grad_mode import state
    modes = state.modes
    i = next(k for k, m in enumerate(modes) if m is mode)
    ids = {m.level for m in modes[i + 1:] if getattr(m, "batching", False)}
    return [lv for lv in _b.active_levels() if lv.level in ids]


def check_unbatched(values, what):
    """Reverse mode differentiates the physical tensors of the levels `active_levels()`
    gives; a value batched at another running level (one below the innermost forward-AD
    level, whose tangents live on the wrappers) would get a wrong gradient, so refuse."""
    levels = _b.active_levels()
    if not levels:
        return
    ok = {lv.level for lv in active_levels()}
    for v in values:
        if set(_b.batched_levels(v)) - ok:
            raise NotImplementedError(
                f"ember.func: {what} of a value batched by a vmap that a forward-mode level "
                "sits inside of on the dispatch stack (a forward_ad.dual_level entered "
                "inside the vmap) is not supported: the tangents live on the batched "
                "wrappers there. Use ember.func.jvp instead of the dual_level")


def to_physical(x, levels):
    """A plain tensor with one leading dim per level in `levels` (expanded where `x` is not
    batched at that level), then `x`'s logical dims."""
    if not levels:
        return x
    return _b.to_physical(x, levels)


def from_physical(p, levels, like=None):
    """The inverse of `to_physical`: the leading dims of `p` become the batch dims of
    `levels`. With `like` (the value `p` was made from: a transform's primal), the levels
    where `like` is not batched are marked as holding the same value in every sample: there
    the primal was only expanded, and Python control flow on it is allowed, as torch.func
    allows it on a primal its vmap does not batch (``vmap(lambda t: jvp(f, (x,), (t,)))``
    with ``if x.sum() > 0`` in `f`)."""
    if not levels:
        return p
    return _b.from_physical(p, levels, like)


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
