"""vmap's interpreter: the dispatch mode of one vmap level, and the batching rules.

Each running vmap level pushes a `VmapMode` onto the dispatch mode stack (grad_mode's
`state.modes`). Every op call reaches `VmapMode.call(op, fn, args, kwargs)`. When no
argument is batched at this level the call goes on unchanged to the modes below (outer vmap
levels, forward AD, a tracer) and then to `fn`. Otherwise each batched argument is replaced
by its physical tensor with the batch dim moved to the front, the op's batching rule runs
on those (ember ops, so the outer levels and autograd see them), and the rule's results are
wrapped as BatchedTensors of this level again.

A batching rule is ``rule(v, args, kwargs)``: `v` is a `Batch` (the batch size `v.size`,
`v.is_batched(x)`, `v.call(*args, **kwargs)` to run the op itself on physical values,
`v.pad`, `v.expand`, `v.logical_dim`, `v.wrap_dim`), `args`/`kwargs` are the call's with
every batched tensor replaced by its physical tensor, batch dim first. It returns the
physical result(s), batch dim first, or NotImplemented to fall back to the loop.

Where the rule comes from (`rule_for`): the op's own `OpDef.batch`, written at its
definition site in ember/ops/ (matmul, linear, views with shapes, softmax, losses...); else
one derived from the op's kind: POINTWISE ops (and their in-place forms) align the batch
dims and pad the logical dims so broadcasting lines up; REDUCTION ops and scans with a
``dim`` parameter shift the dims (``dim=None``: the batch is flattened per sample); VIEW
ops with dim parameters shift them. An op with no rule runs as a loop over the batch whose
results are stacked (`fallback`), with torch's performance warning naming the op.
"""
import functools
import inspect
import warnings

from ..autograd.grad_mode import state, call_mode
from ..core.tensor import Tensor
from ..core.strides import wrap_dim as _wrap_dim
from ..ops import registry as R
from ..ops import batch_rules as _br
from ..ops.reduce_common import ALL_DIMS
from ._batched import (BatchedTensor, wrap, LEVELS, Level, active_levels,  # noqa: F401
                       level_sizes, to_physical, from_physical, make_batched, mark_broken)

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")


class _Unwrapped:
    """A rule's result that is already in BatchedTensor form (Batch.decompose)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _redispatch(op, fn, args, kwargs):
    """Run the op on (physical) values: through the remaining modes, else `fn` itself."""
    if state.modes:
        return call_mode(op, fn, args, kwargs)
    return fn(*args, **kwargs)


class Batch:
    """What a batching rule knows about the call it handles (see the module docstring)."""
    __slots__ = ("op", "fn", "size", "_ids", "mode", "_orig")

    def __init__(self, op, fn, size, ids, mode, orig=None):
        self.op, self.fn, self.size, self._ids, self.mode = op, fn, size, ids, mode
        self._orig = orig

    def decompose(self):
        """Run the op's own implementation on the batched values, with this vmap level
        active again: right for ops written in other ember ops (mm, outer, ...), whose
        checks read the logical shapes."""
        args, kwargs = self._orig
        op = self.op
        fn = op.decomp if isinstance(op, R.OpDef) and op.decomp is not None else self.fn
        saved = state.modes
        state.modes = saved + (self.mode,)
        try:
            return _Unwrapped(fn(*args, **kwargs))
        finally:
            state.modes = saved

    def is_batched(self, x):
        return id(x) in self._ids

    def call(self, *args, **kwargs):
        """The op itself on physical values."""
        return _redispatch(self.op, self.fn, args, kwargs)

    def mark(self, x):
        """Declare a tensor made inside a rule as batched (batch dim first)."""
        self._ids.add(id(x))
        return x

    def logical_dim(self, x):
        if not isinstance(x, Tensor):
            return 0
        return x.dim() - 1 if id(x) in self._ids else x.dim()

    def pad(self, x, n):
        """Batched `x` with size-1 dims after the batch dim up to `n` logical dims, so that
        it broadcasts against other values of `n` logical dims; anything else unchanged."""
        if id(x) not in self._ids:
            return x
        k = n - (x.dim() - 1)
        if k <= 0:
            return x
        shape = x.shape
        return self.mark(x.reshape((shape[0],) + (1,) * k + tuple(shape[1:])))

    def expand(self, x):
        """`x` with a batch dim: batched values as they are, others expanded (a view)."""
        if id(x) in self._ids:
            return x
        return self.mark(x.unsqueeze(0).expand(self.size, *x.shape))

    def arange(self, n):
        """``ember.arange(n)`` (int64), for rules that pair each sample with its index."""
        from ..ops.creation import arange
        return arange(n)

    def wrap_dim(self, d, n):
        """Logical dim `d` of a value with `n` logical dims, as a non-negative int."""
        return _wrap_dim(d, n)


class VmapMode:
    """The dispatch mode of one vmap level (see the module docstring)."""
    batching = True      # composites with a batching rule hand it their whole call (nn_ops)

    def __init__(self, level, size, randomness):
        self.level, self.size, self.randomness = level, size, randomness

    def call(self, op, fn, args, kwargs):
        lvl = self.level
        hit = False
        for a in args:
            if type(a) is BatchedTensor:
                if a._level == lvl:
                    hit = True
                    break
            elif type(a) in (list, tuple):
                if any(type(t) is BatchedTensor and t._level == lvl for t in a):
                    hit = True
                    break
        if not hit and kwargs:
            hit = any(type(v) is BatchedTensor and v._level == lvl for v in kwargs.values())
        if _is_random(op, fn):
            return self._random(op, fn, args, kwargs, hit)
        if not hit:
            return _redispatch(op, fn, args, kwargs)
        # a deterministic op on values each the same in every sample makes such a value
        same = _all_same(args, kwargs, lvl)
        ids = set()
        pargs = tuple(self._unwrap(a, ids) for a in args)
        pkw = {k: self._unwrap(v, ids) for k, v in kwargs.items()} if kwargs else kwargs
        v = Batch(op, fn, self.size, ids, self, (args, kwargs))
        inplace = _is_inplace(op, fn)
        if inplace:
            _check_inplace(v, args, pargs, same)
        rule = rule_for(op, fn)
        r = NotImplemented if rule is None else rule(v, pargs, pkw)
        if r is NotImplemented and isinstance(op, R.OpDef) and op.decomp is not None:
            r = v.decompose()       # a composite: its decomposition, each op batched
        if r is NotImplemented:
            r = fallback(v, pargs, pkw, _op_name(op, fn))
        if inplace and type(args[0]) is BatchedTensor:
            return args[0]
        if not same and kwargs and "out" in kwargs:
            mark_broken(lvl)
        if type(r) is _Unwrapped:
            return r.value
        return self._wrap(r, same)

    def _unwrap(self, x, ids):
        if type(x) is BatchedTensor and x._level == self.level:
            p = x._value
            if x._bdim:
                p = p.movedim(x._bdim, 0)
            ids.add(id(p))
            return p
        if type(x) in (list, tuple) and any(type(t) is BatchedTensor for t in x):
            return type(x)(self._unwrap(t, ids) for t in x)
        return x

    def _wrap(self, r, same=False):
        if isinstance(r, Tensor):
            return wrap(r, 0, self.level, same)
        if isinstance(r, tuple):
            items = [self._wrap(x, same) for x in r]
            return type(r)(*items) if hasattr(type(r), "_fields") else type(r)(items)
        if isinstance(r, list):
            return [self._wrap(x, same) for x in r]
        return r

    # ---- random ops (OpDef.impure) ----
    def _random(self, op, fn, args, kwargs, hit):
        if self.randomness == "error":
            raise RuntimeError(_RANDOM_ERROR)
        ids = set()
        pargs = tuple(self._unwrap(a, ids) for a in args)
        pkw = {k: self._unwrap(v, ids) for k, v in kwargs.items()} if kwargs else kwargs
        v = Batch(op, fn, self.size, ids, self)
        same = self.randomness == "same"
        if _is_inplace(op, fn):
            self_ = pargs[0]
            # (a value marked `_same` is unbatched for torch: no per-sample draws into it)
            if not v.is_batched(self_) or (not same and _trusted_same(args[0], self.level)):
                if same and not hit:
                    return _redispatch(op, fn, args, kwargs)
                raise RuntimeError("vmap: Cannot ask for different inplace randomness on an "
                                   "unbatched tensor. This will appear like same randomness. "
                                   "If this is necessary for your usage, please file an issue "
                                   "with functorch.")
            if same:
                from ..ops.creation import empty
                one = empty(tuple(self_.shape[1:]), dtype=self_.dtype)
                _redispatch(op, fn, (one,) + pargs[1:], pkw)
                self_.copy_(one)
            else:
                _redispatch(op, fn, pargs, pkw)
            return args[0]
        if not hit:
            if same:
                return _redispatch(op, fn, args, kwargs)
            return self._wrap(_random_fresh(v, op, fn, pargs, pkw))
        # a random op on batched values (rand_like(x), bernoulli(p), multinomial(p), ...)
        if same:
            r = _random_same(v, op, fn, pargs, pkw)
            if r is not NotImplemented:
                return self._wrap(r)
        return self._wrap(fallback(v, pargs, pkw, _op_name(op, fn), warn=False))


def _all_same(args, kwargs, lvl):
    """Whether every argument batched at level `lvl` is marked `_same` (and the mark is
    trusted there: no in-place op has broken it)."""
    if lvl in LEVELS.broken:
        return False
    for a in args:
        if type(a) is BatchedTensor:
            if a._level == lvl and not a._same:
                return False
        elif type(a) in (list, tuple):
            for t in a:
                if type(t) is BatchedTensor and t._level == lvl and not t._same:
                    return False
    if kwargs:
        for a in kwargs.values():
            if type(a) is BatchedTensor and a._level == lvl and not a._same:
                return False
    return True


def _trusted_same(t, lvl):
    """Whether `t` is batched at `lvl` and marked `_same` there: torch's vmap does not batch
    it (a derivative transform's primal), so in-place ops writing varying values into it
    are refused as they are for an unbatched self."""
    return type(t) is BatchedTensor and t._level == lvl and t._same and \
        lvl not in LEVELS.broken


def _random_fresh(v, op, fn, args, kwargs):
    """A random op with no batched input under randomness="different": one draw per sample,
    made as one call with the batch size in front of the shape when the op takes one."""
    size = kwargs.get("size")
    if args and all(isinstance(a, int) for a in args) and "size" not in kwargs and \
            _params(fn)[:1] == ["size"]:
        return v.call(v.size, *args, **kwargs)
    if args and len(args) == 1 and isinstance(args[0], (tuple, list)) and \
            _params(fn)[:1] == ["size"]:
        return v.call((v.size,) + tuple(args[0]), **kwargs)
    if size is not None:
        return v.call(*args, **dict(kwargs, size=(v.size,) + tuple(size)))
    return fallback(v, args, kwargs, _op_name(op, fn), warn=False)


def _random_same(v, op, fn, args, kwargs):
    """randomness="same" with a batched input whose shape is all that matters (rand_like)."""
    x = args[0]
    if len(args) == 1 and isinstance(x, Tensor) and _params(fn)[:1] == ["input"] and \
            _name(fn).endswith("_like"):
        from ..ops.creation import empty
        one = v.call(empty(tuple(x.shape[1:]), dtype=x.dtype), **kwargs)
        return one.unsqueeze(0).expand(v.size, *one.shape)
    return NotImplemented


def fallback(v, args, kwargs, name, warn=True):
    """Run the op once per batch element and stack the results (correct for any op whose
    per-sample results have one shape; in-place ops write through the per-sample views)."""
    if warn:
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for {name}. Please file us an issue on GitHub so that "
                      "we can prioritize its implementation.", UserWarning, stacklevel=4)
    outs = []
    for i in range(v.size):
        a = tuple(_select(v, x, i) for x in args)
        k = {key: _select(v, x, i) for key, x in kwargs.items()} if kwargs else kwargs
        outs.append(v.call(*a, **k))
    return _stack(outs)


def _select(v, x, i):
    if v.is_batched(x):
        return x.select(0, i)
    if type(x) in (list, tuple) and any(v.is_batched(t) for t in x):
        return type(x)(_select(v, t, i) for t in x)
    return x


def _stack(outs):
    from ..ops.joining import stack
    first = outs[0]
    if isinstance(first, Tensor):
        return stack(outs)
    if isinstance(first, (tuple, list)):
        items = [_stack([o[j] for o in outs]) for j in range(len(first))]
        if hasattr(type(first), "_fields"):
            return type(first)(*items)
        return type(first)(items)
    if all(o == first for o in outs):
        return first
    raise RuntimeError("vmap: the function returned Python values that differ across the "
                       "batch; only Tensor results can be batched")


# ---- finding an op's rule ----
def _name(fn):
    return getattr(fn, "__name__", "") or ""


def _op_name(op, fn):
    n = _name(fn)
    if isinstance(op, R.OpDef):
        return n if n.endswith("_") and not n.startswith("__") else op.name
    return str(op)


def _is_inplace(op, fn):
    n = _name(fn) if isinstance(op, R.OpDef) else str(op)
    return (n.endswith("_") and not n.startswith("__")) or n == "__setitem__" or \
        n.startswith("__i") and n not in ("__invert__", "__index__", "__int__")


def _is_random(op, fn):
    if isinstance(op, R.OpDef):
        return op.impure
    return getattr(fn, "_impure", False)


def _params(fn):
    return list(_signature(fn).parameters) if _signature(fn) is not None else []


@functools.lru_cache(maxsize=None)
def _signature(fn):
    f = fn
    while hasattr(f, "__wrapped__"):
        f = f.__wrapped__
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None


_RULES = {}       # (OpDef or name, fn) -> derived rule or None, made once per op and form


def rule_for(op, fn):
    """The batching rule for this call of `op` (see the module docstring), or None."""
    key = (op, fn)
    try:
        return _RULES[key]
    except KeyError:
        pass
    except TypeError:
        r = _derive(op, fn)
        return None if r is _br.loop else r
    r = _derive(op, fn)
    if r is _br.loop:
        r = None
    _RULES[key] = r
    return r


def _derive(op, fn):
    inplace = _is_inplace(op, fn)
    if not isinstance(op, R.OpDef):
        rule = getattr(fn, "batch", None)     # a method with no OpDef (copy_, __setitem__)
        if rule is not None:
            return rule
        name = str(op)
        base = R.op_for(name[:-1]) if inplace and name.endswith("_") else None
        if base is not None and base.kind == R.POINTWISE and base.batch is None:
            return _inplace_pointwise
        if base is not None and base.batch is not None and inplace:
            return base.batch if getattr(base.batch, "inplace_ok", False) else None
        return None
    if op.batch is not None:
        if inplace and not getattr(op.batch, "inplace_ok", False):
            return _inplace_pointwise if op.kind == R.POINTWISE else None
        return op.batch
    if op.kind == R.POINTWISE:
        return _inplace_pointwise if inplace else _pointwise(op)
    if inplace:
        return None
    sig = _signature(fn)
    if sig is None:
        return None
    params = sig.parameters
    if op.kind == R.REDUCTION and "dim" in params:
        d = params["dim"].default
        if "keepdim" in params or (d is not inspect.Parameter.empty and d is not None
                                   and d is not ALL_DIMS):
            return _dim_rule(sig, reduction=True)
        if d is inspect.Parameter.empty:
            return _dim_rule(sig, reduction=True)
    if op.kind == R.VIEW and any(p in _DIM_PARAMS for p in params):
        return _dim_rule(sig, reduction=False)
    if op.kind == R.CREATION and list(params)[:1] == ["input"] and op.name.endswith("_like"):
        return _direct
    if op.kind == R.COMPOSITE:
        return _br.decompose        # written in other ember ops: each of them batched
    return None


def _direct(v, args, kwargs):
    """Ops that act per element or on trailing dims: the physical call is the batched one."""
    return v.call(*args, **kwargs)


# ---- POINTWISE ----
def _pointwise(op):
    rule = op.dtype_rule

    def pointwise_rule(v, args, kwargs):
        n = 0
        zero_d = False
        for x in args:
            if isinstance(x, Tensor):
                d = v.logical_dim(x)
                n = max(n, d)
                zero_d = zero_d or (d == 0 and v.is_batched(x))
        for x in kwargs.values():
            if isinstance(x, Tensor):
                n = max(n, v.logical_dim(x))
        want = None
        if zero_d and n and rule is not None:
            # a batched 0-d operand takes part in promotion as a 0-d tensor (weakly), which
            # its physical 1-d tensor would not
            want = _logical_result_dtype(v, args, rule, op.name)
        if n:
            args = tuple(v.pad(x, n) for x in args)
            if kwargs:
                kwargs = {k: v.pad(x, n) for k, x in kwargs.items()}
        r = v.call(*args, **kwargs)
        if want is not None and isinstance(r, Tensor) and want is not r.dtype:
            r = r.to(want)
        return r
    return pointwise_rule


def _logical_result_dtype(v, args, rule, name):
    from ..core import dtype as D
    metas = []
    for x in args:
        if isinstance(x, Tensor):
            metas.append((x.dtype, 0 if v.logical_dim(x) else 1))
        elif isinstance(x, (bool, int, float)):
            metas.append((D.scalar_dtype(x), 2))
    try:
        return rule(D.result_type_of(metas), name)[1]
    except Exception:   # noqa: BLE001 - the op's own call already succeeded; keep its dtype
        return None


def _check_inplace(v, args, pargs, same):
    """torch's refusal: an in-place op cannot write a batched value into an unbatched self
    (or one marked `_same`: unbatched for torch, see `_trusted_same`)."""
    self_ = pargs[0]
    if not (isinstance(self_, Tensor) and not v.is_batched(self_)):
        if same or not _trusted_same(args[0], v.mode.level):
            return
        self_ = args[0]
    for a in pargs[1:]:
        if isinstance(a, Tensor) and v.is_batched(a):
            shape = list(self_.shape)
            raise RuntimeError(
                f"vmap: inplace arithmetic(self, *extra_args) is not possible because "
                f"there exists a Tensor `other` in extra_args that has more elements than "
                f"`self`. This happened due to `other` being vmapped over but `self` not "
                f"being vmapped over in a vmap (output with shape {shape} doesn't match "
                f"the broadcast shape {[v.size] + shape}). Please try to use out-of-place "
                "operators instead of inplace arithmetic.")


_inplace_pointwise = _br.inplace


# ---- dims: REDUCTION (and scans, sorts), VIEW ops with dim parameters ----
_DIM_PARAMS = ("dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "source", "destination",
               "axis0", "axis1", "dimension")


def _dim_rule(sig, reduction):
    names = [p for p in sig.parameters if p in _DIM_PARAMS]

    def dim_rule(v, args, kwargs):
        try:
            ba = sig.bind(*args, **kwargs)
        except TypeError:
            return NotImplemented
        a = ba.arguments
        x = next(iter(a.values()))
        if not v.is_batched(x):
            return NotImplemented
        for k, val in a.items():
            if val is not x and isinstance(val, Tensor) and v.is_batched(val):
                return NotImplemented       # another batched tensor operand: not a dim shift
        n = x.dim() - 1
        if n == 0:
            return NotImplemented           # 0-d samples: dim 0/-1 name the sample itself
        full = False
        for k in names:
            if k not in a:
                d = sig.parameters[k].default
                if d is inspect.Parameter.empty:
                    continue
                if d is None or d == () or d is ALL_DIMS:
                    full = reduction and k == "dim"
                    continue
                a[k] = d
            val = a[k]
            if val is None or (isinstance(val, tuple) and not val and k == "dim"):
                full = reduction and k == "dim"
                if full:
                    a.pop(k)
                continue
            a[k] = _shift(val, n)
        if full:
            keepdim = a.get("keepdim", False)
            a["input" if "input" in a else next(iter(a))] = x.reshape(x.shape[0], -1)
            a["dim"] = 1
            args2, kw2 = _unbind(sig, a)
            r = v.call(*args2, **kw2)
            if isinstance(r, tuple) and hasattr(r, "indices"):
                r = r.values        # max(x), median(x): the values only
            if keepdim:
                r = _map(lambda t: t.reshape((t.shape[0],) + (1,) * n), r)
            return r
        args2, kw2 = _unbind(sig, a)
        return v.call(*args2, **kw2)
    return dim_rule


def _shift(d, n):
    if isinstance(d, (tuple, list)):
        return type(d)(_wrap_dim(int(x), n) + 1 for x in d)
    return _wrap_dim(int(d), n) + 1


def _map(f, r):
    if isinstance(r, Tensor):
        return f(r)
    items = [f(t) for t in r]
    return type(r)(*items) if hasattr(type(r), "_fields") else type(r)(items)


def _unbind(sig, arguments):
    """Bound arguments back to (args, kwargs); after a missing positional one, and for
    keyword-only ones, by keyword."""
    args, kwargs = [], {}
    gap = False
    for name, p in sig.parameters.items():
        if name not in arguments:
            gap = gap or p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            continue
        val = arguments[name]
        if p.kind is p.VAR_POSITIONAL:
            args.extend(val)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(val)
        elif p.kind is p.KEYWORD_ONLY or gap:
            kwargs[name] = val
        else:
            args.append(val)
    return tuple(args), kwargs
