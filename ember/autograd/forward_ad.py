"""Forward-mode AD (``ember.autograd.forward_ad``): dual tensors carry a tangent beside their
value, and every op computes its result's tangent as it runs (JVPs, no graph, no backward).

    >>> import ember.autograd.forward_ad as fwAD
    >>> x, t = ember.tensor([1., 2.]), ember.tensor([1., 0.])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, t).sin()
    ...     fwAD.unpack_dual(y).tangent          # cos(x) * t
    tensor([0.5403, 0.0000])

How it works. Each dual level is a dispatch mode (an object with ``call(op, fn, args,
kwargs)`` on ``grad_mode.state.modes``, like the profiler and the compiler's tracer), with its
own level number. A tensor's tangents live in its ``_fw`` slot, a dict {level: tangent}.
When the level sees an op call where no argument has a tangent at that level it just runs
the op; otherwise forward_rules.py computes the primal result and its tangent from the op's
forward rule (OpDef.jvp, else derived from its kind and backward formulas, else the
double-vjp fallback). The tangent math is written in ember ops and runs with this level
popped off the mode stack, so outer modes see it: an outer dual level differentiates it
(jvp of jvp), vmap batches it and autograd records it (reverse-over-forward). With no dual
level active nothing here runs: the op call path is unchanged.

PyTorch refuses to nest the public API (``enter_dual_level`` inside a level raises), and so
does ember. The transforms (ember.func.jvp, jacfwd, hessian) nest levels through the private
entry points ``_enter_nested_dual_level() -> int``, ``_exit_nested_dual_level(level)`` and
the context manager ``_nested_dual_level()`` (yields the level number); pass that number as
``level=`` to make_dual / unpack_dual. A primal that already has a tangent at an outer level
may be made dual at an inner one: its outer tangent stays, and the inner level's ops are
themselves differentiated by the outer level (jvp(jvp(f)) gives second derivatives).
"""
import collections
import threading
import weakref

from .grad_mode import state, call_mode, _DecoratorContextManager
from ..core.tensor import Tensor
from . import forward_rules as _rules

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "What unpack_dual returns: ``(primal, tangent)``, by name too."


class _Local(threading.local):
    levels = ()       # the active _DualLevel objects, outermost first


_local = _Local()


class _DualLevel:
    """One dual level: the dispatch mode that gives every op's result its tangent.

    It is ``observing`` (ember/ops/nn_ops.py): a composite op (softmax, layer_norm...) hands
    it the whole call, which runs the fast path when no argument is dual, and the op's
    forward rule or its decomposition when one is."""
    observing = True
    differentiates = True      # helpers of backward formulas hand it their calls

    def __init__(self, number, public):
        self.level = number
        self.public = public
        self.duals = []          # weak references to the tensors given a tangent here

    def call(self, op, fn, args, kwargs):
        for a in args:
            if _has(a, self):
                return _rules.handle(self, op, fn, args, kwargs)
        for a in kwargs.values():
            if _has(a, self):
                return _rules.handle(self, op, fn, args, kwargs)
        if state.modes and not getattr(fn, "_dispatches", False):
            return call_mode(op, fn, args, kwargs)     # the modes below see the op (vmap)
        return fn(*args, **kwargs)

    def __repr__(self):
        return f"<forward AD level {self.level}>"


def _has(a, lvl):
    if isinstance(a, Tensor):
        return tangent_of(a, lvl) is not None
    if type(a) is list or type(a) is tuple:
        for b in a:
            if isinstance(b, Tensor) and tangent_of(b, lvl) is not None:
                return True
    return False


def tangent_of(t, lvl):
    """t's tangent at level object `lvl`, or None. A view that has none (made before its
    base got one, by an in-place op) has the same view of its base's tangent, as in
    PyTorch; ``_fw[lvl] = None`` (unpack_dual's primal) means no tangent, inherited or not."""
    fw = getattr(t, "_fw", None)
    if fw is not None and lvl in fw:
        return fw[lvl]
    base = t._base
    if base is None:
        return None
    bfw = getattr(base, "_fw", None)
    bt = None if bfw is None else bfw.get(lvl)
    if bt is None or bt.stride() != base.stride():
        return None
    view = bt.as_strided(tuple(t.shape), t.stride(),
                         bt.storage_offset() + t.storage_offset() - base.storage_offset())
    set_tangent(t, lvl, view)
    return view


def set_tangent(t, lvl, tangent):
    fw = getattr(t, "_fw", None)
    if fw is None:
        t._fw = fw = {}
    fw[lvl] = tangent
    refs = lvl.duals
    refs.append(weakref.ref(t))
    if len(refs) > 4096 and len(refs) & 4095 == 0:     # drop references to dead tensors
        refs[:] = [r for r in refs if r() is not None]


_rules.tangent_of = tangent_of
_rules.set_tangent = set_tangent


# ---- levels ----
def _push(public, below_vmaps=False):
    lvl = _DualLevel(len(_local.levels), public)
    _local.levels = _local.levels + (lvl,)
    modes = state.modes
    at = len(modes)
    if below_vmaps:
        # below the vmap levels running above the last dual level (ember.func.jvp of batched
        # primals): the level then works on their physical tensors, as autograd does, so a
        # reverse transform inside it records tensors that carry its tangents
        last = max((i for i, m in enumerate(modes) if type(m) is _DualLevel), default=-1)
        for i in range(last + 1, len(modes)):
            if getattr(modes[i], "batching", False):
                at = i
                break
    state.modes = modes[:at] + (lvl,) + modes[at:]
    return lvl.level


def _mode_of(level):
    """The _DualLevel object of level number `level` (private, for ember.func)."""
    return _find(level, "_mode_of")


def _pop(level):
    levels = _local.levels
    if not levels or levels[-1].level != level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    lvl = levels[-1]
    _local.levels = levels[:-1]
    state.modes = tuple(m for m in state.modes if m is not lvl)
    for r in lvl.duals:        # tangents end with their level, as in PyTorch
        t = r()
        if t is not None:
            fw = getattr(t, "_fw", None)
            if fw:
                fw.pop(lvl, None)
    lvl.duals = []


def enter_dual_level():
    """Start a dual level and return its number; ``dual_level()`` is the usual way.

    >>> lvl = fwAD.enter_dual_level(); fwAD.exit_dual_level(level=lvl)
    """
    if any(lvl.public for lvl in _local.levels):
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    return _push(True)


def exit_dual_level(*, level=None):
    """End the current dual level (or `level`, which must be it); its tangents are dropped."""
    public = [lvl for lvl in _local.levels if lvl.public]
    if level is None:
        if not public:
            raise RuntimeError("Dual level must be a positive number.")
        level = public[-1].level
    _pop(level)


class dual_level(_DecoratorContextManager):
    """Context manager (or decorator) for a dual level: tangents made inside live until it
    ends. Entering gives the level number.

    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(ember.ones(2), ember.ones(2))
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _enter_nested_dual_level():
    """Private, for ember.func: a dual level that may sit inside others; returns its number."""
    return _push(False)


def _exit_nested_dual_level(level):
    _pop(level)


class _nested_dual_level:
    """``with _nested_dual_level() as lvl:`` a nestable level (see the module docstring).
    ``below_vmaps=True`` puts it below the vmap levels started since the last dual level
    (on the dispatch mode stack), so it sees their physical tensors."""

    def __init__(self, below_vmaps=False):
        self.below_vmaps = below_vmaps

    def __enter__(self):
        self.level = _push(False, self.below_vmaps)
        return self.level

    def __exit__(self, *exc):
        _pop(self.level)


def _find(level, what):
    levels = _local.levels
    if level is None:
        return levels[-1] if levels else None
    for lvl in levels:
        if lvl.level == level:
            return lvl
    raise RuntimeError(f"Invalid level given to {what}")


# ---- dual tensors ----
def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` whose tangent at the level is `tangent` (same shape).

    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(ember.ones(3), ember.arange(3.))
    ...     fwAD.unpack_dual(d * 2).tangent
    tensor([0., 2., 4.])
    """
    if level is None and not _local.levels:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    lvl = _find(level, "_make_dual")
    if tangent_of(tensor, lvl) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {lvl.level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    dual = tensor.view_as(tensor)     # outer levels and vmap see the view
    set_tangent(dual, lvl, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of `tensor` at the level; tangent is None if it has none. The
    primal is a view of `tensor` without that tangent.

    >>> with fwAD.dual_level():
    ...     p, t = fwAD.unpack_dual(fwAD.make_dual(ember.ones(2), ember.zeros(2)))
    """
    if level is None and not _local.levels:
        return UnpackedDualTensor(tensor, None)
    lvl = _find(level, "_unpack_dual")
    tangent = tangent_of(tensor, lvl) if isinstance(tensor, Tensor) else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    saved = state.modes
    state.modes = tuple(m for m in saved if m is not lvl)   # the view gets no tangent here
    try:
        primal = tensor.view_as(tensor)
    finally:
        state.modes = saved
    fw = getattr(primal, "_fw", None)
    if fw is None:
        primal._fw = fw = {}
    fw[lvl] = None        # a view of a dual tensor, yet without its tangent
    return UnpackedDualTensor(primal, tangent)
