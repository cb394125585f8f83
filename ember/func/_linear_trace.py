"""``linearize``'s recording: run `f` once under forward AD and keep the tangent computation
as a list of op calls, so the returned ``jvp_fn`` replays only those (f's Python body and
its primal ops do not run again), as torch.func.linearize does with its trace.

How. The tangents are stand-ins: zeros batched by a private size-1 vmap level (exactly
jacfwd's configuration: the dual level on top of that vmap, the primal computation plain and
run once). A `_Recorder` dispatch mode sits just below the dual level, so it sees every op
call the tangent formulas make (they run with the dual level popped), before the vmap
batches them: a call with an argument derived from a stand-in is recorded, with slots for
the derived values and the other tensors kept as constants (the residuals: ``x.cos()`` for
``sin``); every other call runs unrecorded. ``jvp_fn(*tangents)`` replays the calls on the
real tangents through the dispatch seam, so vmap, jvp and grad of ``jvp_fn`` work.

Nothing is silently wrong: a derived value made where the recorder cannot see it is a
BatchedTensor of the private level (its raw data is only metadata, so raw math on it fails,
and a recorded call meeting one it does not know refuses the recording), and a tangent read
from Python (``.item()``, ``bool()``) raises on it. Any failure makes `record` return None;
linearize then reruns jvp at each call (exact, not cheaper).

    >>> rec = record(f, p_leaves, p_spec)      # None: not recordable
    >>> out, replay = rec                      # replay(tangent_leaves) -> tangent leaves
"""
from ..core.tensor import Tensor
from ..autograd.grad_mode import state, call_mode
from .. import dispatch
from ._pytree import tree_flatten, tree_unflatten
from . import _batched as _b


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _Refused(Exception):
    pass


class _Recorder:
    """The dispatch mode that records the tangent computation (module docstring)."""
    differentiates = True     # helpers of backward formulas hand it their calls

    def __init__(self, level, seeds):
        self.level = level                      # the private vmap level id
        self.slot = {}                          # id(derived tensor) -> slot index
        self.keep = []                          # the derived tensors, alive (ids stay unique)
        self.calls = []                         # (op, fn, args template, kwargs template, outs)
        for t in seeds:
            self._new_slot(t)

    def _new_slot(self, t):
        self.slot[id(t)] = len(self.keep)
        self.keep.append(t)

    def _template(self, x):
        """(template, derived?) of one argument."""
        if isinstance(x, Tensor):
            i = self.slot.get(id(x))
            if i is not None:
                return _Slot(i), True
            if _b.level_of(x) == self.level:
                raise _Refused("a tangent value made where the recorder cannot see it")
            return x, False
        if type(x) in (list, tuple):
            parts = [self._template(y) for y in x]
            return type(x)(p for p, _ in parts), any(d for _, d in parts)
        return x, False

    def call(self, op, fn, args, kwargs):
        targs = [self._template(a) for a in args]
        tkw = {k: self._template(v) for k, v in (kwargs or {}).items()}
        derived = any(d for _, d in targs) or any(d for _, d in tkw.values())
        result = call_mode(op, fn, args, kwargs) if state.modes else fn(*args, **kwargs)
        if derived:
            outs = []
            for t in _tensors(result, []):
                if id(t) in self.slot:        # an input handed back (an in-place op's self)
                    outs.append(None)
                    continue
                outs.append(len(self.keep))
                self._new_slot(t)
            self.calls.append((op, fn, tuple(a for a, _ in targs),
                               {k: v for k, (v, _) in tkw.items()}, outs))
        return result


def _tensors(x, out):
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    return out


def _fill(x, env):
    if type(x) is _Slot:
        return env[x.i]
    if type(x) in (list, tuple):
        return type(x)(_fill(y, env) for y in x)
    return x


def _cut_dead(calls):
    """The recorded calls with each constant attached only to finished transforms' graphs
    (the leaves of a grad inside `f`) detached, so a replay builds no graph to them; one
    reaching a live tensor requiring grad (a parameter `f` closes over) stays attached, as
    jvp keeps its results then."""
    from .transforms import _needs_graph
    memo = {}

    def cut(x):
        if isinstance(x, Tensor) and x.requires_grad:
            if id(x) not in memo:
                memo[id(x)] = x if _needs_graph([x], ()) else x.detach()
            return memo[id(x)]
        if type(x) in (list, tuple):
            return type(x)(cut(y) for y in x)
        return x
    return [(op, fn, tuple(cut(a) for a in targs), {k: cut(v) for k, v in tkw.items()}, outs)
            for op, fn, targs, tkw, outs in calls]


def recordable(p_leaves):
    """Whether linearize may record: no transform, tracer or profiler running (their levels
    would be baked into the recording), and floating-point primals not requiring grad."""
    return not state.modes and all(
        isinstance(p, Tensor) and not p.requires_grad and
        (p.is_floating_point() or p.is_complex()) for p in p_leaves)


def record(func, p_leaves, p_spec):
    """(primal output pytree, replay) or None when `func` cannot be recorded (module doc)."""
    from ..autograd import forward_ad as fwad
    from ..ops.creation import zeros, zeros_like
    from .vmap import vmap
    got = {}

    def push(*seeds):
        with fwad._nested_dual_level() as level:      # on top of the private vmap
            dual = fwad._mode_of(level)
            rec = _Recorder(_b.level_of(seeds[0]), seeds)
            modes = state.modes
            i = next(k for k, m in enumerate(modes) if m is dual)
            state.modes = modes[:i] + (rec,) + modes[i:]
            try:
                duals = [fwad.make_dual(p, s, level=level) for p, s in zip(p_leaves, seeds)]
                out = func(*tree_unflatten(duals, p_spec))
                out_leaves, out_spec = tree_flatten(out)
                prims, tans = [], []
                for o in out_leaves:
                    if not isinstance(o, Tensor):
                        raise _Refused("a non-tensor output")
                    po, to = fwad.unpack_dual(o, level=level)
                    prims.append(po)
                    tans.append(to)
            finally:
                state.modes = tuple(m for m in state.modes if m is not rec)
        for po in prims:
            if _b.level_of(po) != -1:
                raise _Refused("a primal output depends on the tangents")
        ends = []
        for po, to in zip(prims, tans):
            if to is None:
                ends.append(zeros_like(po))
            else:
                t, _ = rec._template(to)       # refuses a derived value it does not know
                ends.append(t)
        got.update(prims=prims, spec=out_spec, calls=rec.calls, ends=ends)
        return seeds[0]

    seeds = [zeros((1,) + tuple(p.shape), dtype=p.dtype, device=p.device) for p in p_leaves]
    try:
        vmap(push, randomness="same")(*seeds)
    except Exception:       # not recordable (or f raised): linearize falls back to jvp
        return None
    calls, ends, n_in = _cut_dead(got["calls"]), got["ends"], len(p_leaves)
    from .transforms import _needs_graph
    prims = [p if _needs_graph([p], ()) else p.detach() for p in got["prims"]]

    def replay(t_leaves):
        env = {}
        for i, t in enumerate(t_leaves[:n_in]):
            # a dense copy: the recorded views assume dense tangents, and an in-place op
            # the recording applies to a tangent must not reach the caller's tensor
            env[i] = t.clone() if t.is_contiguous() else t.contiguous()
        for op, fn, targs, tkw, outs in calls:
            args = tuple(_fill(a, env) for a in targs)
            kw = {k: _fill(v, env) for k, v in tkw.items()}
            r = dispatch.with_mode_seam(op, fn)(*args, **kw)
            made = _tensors(r, [])
            for k, j in enumerate(outs):
                if j is not None:
                    env[j] = made[k]
        return [_fill(e, env) if type(e) is _Slot else e.clone() for e in ends]

    try:        # one trial on plain zeros: a recording that cannot replay is not used
        replay([zeros_like(p) for p in p_leaves])
    except Exception:
        return None
    return tree_unflatten(prims, got["spec"]), replay
