"""Where a forward-mode tangent comes from, for one op call on dual tensors (forward_ad.py).

`handle(level, op, fn, args, kwargs)` runs the op and gives its floating-point results their
tangents at `level`. The rule, in order:
1. ``OpDef.jvp`` written at the op's definition site: ``jvp(tan, result, *args, **kwargs)``
   returns the result's tangent (a tuple for several results; None means zero). ``tan(x)``
   is x's tangent, or None. Helpers outside the registry (``copy_``, ``__setitem__``...) may
   carry the same function as a ``jvp`` attribute; for an in-place one it returns self's new
   tangent.
2. ``OpDef.jvp == LINEAR`` (VIEW ops by default): the op applied to the tangents.
   ``MULTILINEAR``: the sum over inputs of the op with that input replaced by its tangent.
3. POINTWISE ops with backward formulas: an elementwise op's backward formula applied to a
   tangent broadcast to the output's shape is that input's tangent contribution.
4. COMPOSITE ops with a decomposition, pointwise fronts and helpers outside the registry:
   run with the level still active, so each op they are made of gets its own tangent.
5. Any other op whose backward autograd can differentiate: the double-vjp trick. With
   u = zeros like the output (requiring grad), v = vjp(u) is linear in u, so
   d<v, t>/du = J t exactly. An op autograd cannot differentiate raises PyTorch's
   "Trying to use forward AD with ... that does not support it" NotImplementedError.
All tangent math is written in ember ops and runs with this level popped off the mode stack.
"""
from ..core.tensor import Tensor
from ..ops.registry import (OpDef, POINTWISE, VIEW, COMPOSITE, CREATION, RANDOM, LINEAR,
                            MULTILINEAR, NO_FORWARD_AD)
from ..ops.creation import zeros_like, empty_strided
from .. import dispatch
from .grad_mode import state, enable_grad
from . import graph
from .engine import grad as _grad

# filled by forward_ad.py (which imports this module)
tangent_of = None
set_tangent = None


def not_supported(name):
    return NotImplementedError(
        f"Trying to use forward AD with {name} that does not support it because it has not "
        "been implemented yet.\nPlease file an issue to ember so that we can prioritize its "
        "implementation.")


def handle(lvl, op, fn, args, kwargs):
    def tan(x):
        return tangent_of(x, lvl) if isinstance(x, Tensor) else None

    raw = fn
    if state.modes:
        # `fn` runs the op itself, past the modes below this level; they must see the op
        # (an outer level differentiates it, vmap batches it): call it through them
        fn = dispatch.with_mode_seam(op, fn)
    if isinstance(op, OpDef):
        name = op.name
        if op.kind == CREATION or op.kind == RANDOM:
            return fn(*args, **kwargs)     # zeros_like(x), rand_like(x): no tangent
        if kwargs.get("out") is not None:
            raise not_supported(name + " (out=)")
        if op.kind == POINTWISE and getattr(raw, "__name__", "") == name + "_":
            return _pointwise_inplace(lvl, op, fn, tan, args, kwargs)
        rule = op.jvp
        if rule == NO_FORWARD_AD:
            raise not_supported(name)
        if rule is None and op.kind == VIEW:
            rule = LINEAR
        decomp = op.decomp or raw
        if rule == LINEAR:
            # no need to look at what was recorded: a linear op's backward reads no values
            result = fn(*args, **kwargs)
            _attach(lvl, result, _linear(op, fn, tan, args, kwargs), args, kwargs)
            return result
        if op.kind == POINTWISE and op.grads and not any(type(k) is tuple for k in op.grads):
            result = fn(*args, **kwargs)       # one node, saving inputs and result
            _attach(lvl, result, derived_pointwise(op, tan, args, kwargs, result), args, kwargs)
            return result
        if callable(rule) or rule == MULTILINEAR:
            result, done = _primal(lvl, name, fn, decomp, args, kwargs)
            if not done:
                t = (rule(tan, result, *args, **kwargs) if callable(rule)
                     else _multilinear(fn, tan, args, kwargs))
                _attach(lvl, result, t, args, kwargs, complex_ok=callable(rule))
            return result
        if op.kind == COMPOSITE and op.decomp is not None:
            return _through(lvl, name, op.decomp, fn, args, kwargs)
        if op.kind == POINTWISE:
            return _through(lvl, name, raw, fn, args, kwargs)
        result, done = _primal(lvl, name, fn, decomp, args, kwargs)
        if not done:
            _fill_missing(lvl, name, fn, args, kwargs, result)
        return result
    name = str(op)
    rule = getattr(raw, "jvp", None)
    if rule is not None and (name.endswith("_") or name == "__setitem__"):
        return _rule_inplace(lvl, fn, rule, tan, args, kwargs)
    if rule == LINEAR:
        result = fn(*args, **kwargs)
        _attach(lvl, result, _linear(op, fn, tan, args, kwargs), args, kwargs)
        return result
    return _through(lvl, name, raw, fn, args, kwargs)


def _primal(lvl, name, fn, decomp, args, kwargs):
    """(result, done): the op's result, computed below this level. When autograd recorded
    it as several nodes, or a node saving values made inside the op, a later backward would
    read values without tangents (forward-over-reverse would lose them): the op then runs
    again op by op under this level (`done`: its results have their tangents)."""
    if not state.enabled:
        return fn(*args, **kwargs), False
    start = graph._next_seq()
    result = fn(*args, **kwargs)
    if not _records_intermediates(result, args, kwargs, start):
        return result, False
    return _through(lvl, name, decomp, fn, args, kwargs), True


def _records_intermediates(result, args, kwargs, start):
    outs = _flat(result, [])
    ins = {id(x) for x in _flat(list(args) + list(kwargs.values()), [])}
    datas = {id(o._data) for o in outs}
    stack = [o.grad_fn for o in outs]
    seen = set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or type(n) is graph.AccumulateGrad or \
                getattr(n, "_seq", 0) <= start:
            continue
        seen.add(id(n))
        if len(seen) > 1:
            return True
        saved = getattr(n, "_saved", None) or ()
        for v in (saved.values() if type(saved) is dict else saved):
            if type(v) is graph.SavedTensor and v.tensor is not None and \
                    id(v.tensor) not in ins and not (v.is_output and id(v.tensor._data) in datas):
                return True
        stack.extend(e[0] for e in n.next_functions)
    return False


# ---- results and their tangents ----
def _flat(x, out):
    if isinstance(x, Tensor):
        out.append(x)
    elif type(x) in (list, tuple) or isinstance(x, tuple):
        for y in x:
            _flat(y, out)
    return out


def _attach(lvl, result, tangent, args, kwargs, complex_ok=False):
    """Give each floating-point result its tangent (a result that is an input keeps its own,
    saved copies of outputs share them); with `complex_ok` (the tangents come from the op's
    own forward rule) complex results too."""
    if tangent is None:
        return
    if isinstance(result, Tensor):
        pairs = [(result, tangent)]
    else:
        pairs = zip(_flat(result, []), _flat_tangents(result, tangent))
    inputs = _flat(list(args) + list(kwargs.values()), [])
    for r, t in pairs:
        if t is None or not isinstance(r, Tensor) or not (
                r.dtype.is_floating_point or complex_ok and r.dtype._kind == 3):
            continue
        if any(r is x for x in inputs):
            continue
        set_tangent(r, lvl, t)
        _share_with_saved(r)


def _flat_tangents(result, tangent):
    if isinstance(result, Tensor):
        return [tangent]
    out = []
    for r, t in zip(result, tangent if tangent is not None else [None] * len(result)):
        out.extend(_flat_tangents(r, t) if not isinstance(r, Tensor) else [t])
    return out


def _share_with_saved(r):
    """A node saves its own output as an alias (graph.SavedTensor); the alias shares the
    output's tangents, so a backward run under forward AD (forward-over-reverse) sees them."""
    node = r.grad_fn
    saved = getattr(node, "_saved", None) if node is not None else None
    if not saved:
        return
    for v in (saved.values() if type(saved) is dict else saved):
        if type(v) is graph.SavedTensor and v.is_output and v.tensor is not None and \
                v.tensor._data is r._data:
            v.tensor._fw = r._fw


# ---- rules derived from the OpDef ----
def derived_pointwise(op, tan, args, kwargs, result):
    """Sum over inputs with a tangent of the input's backward formula applied to its tangent
    (broadcast to the result's shape): exact for elementwise ops."""
    if not result.dtype.is_floating_point:
        return None
    kw = dict(kwargs)
    kw.pop("out", None)
    bound = dispatch._bind(op, args, kw) if len(args) != len(op.inputs) or kw else args
    env = dict(op.attrs)
    env.update(kw)
    env.update(zip(op.inputs, bound))
    env["result"] = result
    total = None
    shape = tuple(result.shape)
    for name, x in zip(op.inputs, bound):
        t = tan(x)
        if t is None:
            continue
        formula = op.grads.get(name)
        if formula is None:
            raise not_supported(op.name)
        given = t
        if tuple(t.shape) != shape:
            t = t.expand(shape)
        c = formula(t, *[env[p] for p in op.saves[name]])
        if c is t:     # an identity formula (add's): the result gets a tangent of its own
            c = given.clone() if t is given else t.contiguous()
        total = c if total is None else total + c
    if total is not None and total.dtype is not result.dtype:
        total = total.to(result.dtype)
    return total


def _sub_tangents(x, tan):
    if isinstance(x, Tensor):
        if not x.dtype.is_floating_point:
            return x
        t = tan(x)
        return t if t is not None else zeros_like(x)
    if type(x) in (list, tuple):
        return type(x)(_sub_tangents(y, tan) for y in x)
    return x


def _linear(op, fn, tan, args, kwargs):
    if isinstance(args[0], Tensor) and not args[0].dtype.is_floating_point:
        return None        # ``int_tensor.to(float_tensor)``: the other tensor gives only a dtype
    targs = [_sub_tangents(a, tan) for a in args]
    tkw = {k: _sub_tangents(v, tan) for k, v in kwargs.items()}
    try:
        return fn(*targs, **tkw)
    except RuntimeError:
        if getattr(op, "kind", None) != VIEW:
            raise
        # a view the tangent's own strides refuse (``view`` of a transposed tangent)
        targs = [a.contiguous() if isinstance(a, Tensor) else a for a in targs]
        return fn(*targs, **tkw)


def _multilinear(fn, tan, args, kwargs):
    """Sum over each dual input of the op with that input replaced by its tangent."""
    slots = []     # (container path) of every dual tensor argument

    def find(x, path):
        if isinstance(x, Tensor):
            if tan(x) is not None:
                slots.append(path)
        elif type(x) in (list, tuple):
            for i, y in enumerate(x):
                find(y, path + (i,))

    find(list(args), ())

    def replace(x, path):
        if not path:
            return tan(x)
        x = list(x) if type(x) is not tuple else list(x)
        x[path[0]] = replace(x[path[0]], path[1:])
        return x

    total = None
    for path in slots:
        a = list(args)
        a[path[0]] = replace(a[path[0]], path[1:])
        a = [type(o)(v) if type(o) in (list, tuple) and type(v) is list else v
             for o, v in zip(args, a)]
        r = fn(*a, **kwargs)
        total = r if total is None else total + r
    return total


# ---- running an op's parts under this level ----
def _through(lvl, name, fn, seamed, args, kwargs):
    """Run `fn` with this level active, so each op it calls gets its own tangent; then any
    floating result that still has none gets one from the double-vjp fallback. A function
    that checks the mode stack itself (a generated pointwise one) would hand the call back
    here: it runs below this level."""
    if getattr(fn, "_dispatches", False):
        result = fn(*args, **kwargs)
        _fill_missing(lvl, name, fn, args, kwargs, result)
        return result
    saved = state.modes
    state.modes = saved + (lvl,)
    try:
        result = fn(*args, **kwargs)
    finally:
        state.modes = saved
    if saved and _missing(lvl, args, kwargs, result):
        # `fn` computed (part of) its result itself, unseen by the modes below this level
        # (an outer level, vmap): run the op through them, and differentiate it whole
        result = seamed(*args, **kwargs)
    _fill_missing(lvl, name, seamed, args, kwargs, result)
    return result


def _missing(lvl, args, kwargs, result):
    inputs = _flat(list(args) + list(kwargs.values()), [])
    return [i for i, r in enumerate(_flat(result, [])) if r.dtype.is_floating_point and
            tangent_of(r, lvl) is None and not any(r is x for x in inputs)]


def _fill_missing(lvl, name, fn, args, kwargs, result):
    outs = _flat(result, [])
    missing = _missing(lvl, args, kwargs, result)
    if not missing:
        return
    tangents = double_vjp(lvl, name, fn, args, kwargs)
    for i in missing:
        if tangents[i] is not None:
            set_tangent(outs[i], lvl, tangents[i])
            _share_with_saved(outs[i])


def double_vjp(lvl, name, fn, args, kwargs):
    """The tangent of each of fn's flattened results (None for non-floating ones), from two
    reverse passes: exact whenever the op's backward is itself differentiable."""
    duals = []     # (input, leaf requiring grad, the value passed in, tangent)

    def sub(x):
        if isinstance(x, Tensor):
            t = tangent_of(x, lvl)
            if t is None:
                return x
            for d in duals:
                if d[0] is x:
                    return d[2]
            leaf = x.detach().requires_grad_()
            fw = getattr(x, "_fw", None)
            # tangents at outer levels must flow through: x - x.detach() has value 0 and x's
            # outer tangents
            val = leaf + (x - x.detach()) if fw and len(fw) > 1 else leaf
            duals.append((x, leaf, val, t))
            return val
        if type(x) in (list, tuple):
            return type(x)(sub(y) for y in x)
        return x

    with enable_grad():
        out = fn(*[sub(a) for a in args], **{k: sub(v) for k, v in kwargs.items()})
    outs = _flat(out, [])
    diff = [i for i, o in enumerate(outs) if o.dtype.is_floating_point and o.requires_grad]
    result = [None] * len(outs)
    if not diff:
        if any(o.dtype.is_floating_point for o in outs):
            raise not_supported(name)
        return result
    leaves = [d[1] for d in duals]
    create = state.enabled and any(
        isinstance(x, Tensor) and x.requires_grad
        for x in _flat(list(args) + list(kwargs.values()), []) + [d[3] for d in duals])
    with enable_grad():
        us = [zeros_like(outs[i]).requires_grad_() for i in diff]
        vs = _grad([outs[i] for i in diff], leaves, us, create_graph=True, allow_unused=True)
        pairs = []
        for v, d in zip(vs, duals):
            if v is None:
                continue
            if not v.requires_grad:     # a backward on raw arrays: it cannot be differentiated
                raise not_supported(name)
            pairs.append((v, d[3]))
        js = (_grad([p[0] for p in pairs], us, [p[1] for p in pairs], create_graph=create,
                    allow_unused=True) if pairs else [None] * len(us))
    for i, j, u in zip(diff, js, us):
        result[i] = j if j is not None else zeros_like(outs[i])
    return result


# ---- in-place ops ----
def _pointwise_inplace(lvl, op, fn, tan, args, kwargs):
    self = args[0]
    reads_self = any("self" in op.saves.get(k, ()) for k in op.grads)
    if not op.grads or any(type(k) is tuple for k in op.grads):
        raise not_supported(op.name + "_")
    old = self.clone() if reads_self else self
    fn(*args, **kwargs)

    def tan_old(x):
        return tan(self) if x is old else tan(x)
    new_args = (old,) + tuple(old if a is self else a for a in args[1:])
    t = derived_pointwise(op, tan_old, new_args, kwargs, self)
    write_inplace(lvl, self, t)
    return self


def _rule_inplace(lvl, fn, rule, tan, args, kwargs):
    self = args[0]
    fn(*args, **kwargs)
    t = rule(tan, self, *args, **kwargs)
    if getattr(rule, "sets", False):
        set_tangent(self, lvl, t)
    else:
        write_inplace(lvl, self, t)
    return self


def write_inplace(lvl, self, t):
    """Make `t` self's tangent after an in-place op. An existing tangent is written into (so
    views of it, and the base it views, see the change); a view without one gets a view of
    its base's tangent (made, zero, if the base has none), as in PyTorch."""
    cur = tangent_of(self, lvl)
    if t is cur and t is not None:
        return
    if cur is not None:
        if t is None:
            cur.zero_()
        elif tuple(cur.shape) == tuple(self.shape):
            cur.copy_(t)
        else:                       # the op changed self's geometry (t_, squeeze_)
            set_tangent(self, lvl, t)
        return
    if t is None:
        return
    base = self._base
    if base is not None and base.dtype.is_floating_point:
        bt = tangent_of(base, lvl)
        if bt is None:
            bt = empty_strided(tuple(base.shape), base.stride(), dtype=base.dtype).zero_()
            set_tangent(base, lvl, bt)
        if bt.stride() == base.stride():
            view = bt.as_strided(tuple(self.shape), self.stride(),
                                 bt.storage_offset() + self.storage_offset()
                                 - base.storage_offset())
            view.copy_(t)
            set_tangent(self, lvl, view)
            return
    z = zeros_like(self)
    z.copy_(t)
    set_tangent(self, lvl, z)
