"""Python side effects of a compiled function: found while it is traced, replayed at every call.

A compiled variant replays tensor ops only; the Python code of the function does not run
again. So what the function did to Python state on its traced call must be redone by the
replay, with this call's values (Dynamo's side-effect tracking; ember finds the effects by
comparison rather than by reading bytecode):

    def forward(self, x, y):              # llama2.c style
        logits = self.head(x)
        self.last_loss = F.cross_entropy(logits, y)   # replayed: the new loss every call
        return logits

Before the trace, `Watch` takes a shallow copy of every container reachable from the
function's roots: the module and its submodules (their attributes), the arguments (lists,
dicts, plain objects), the function's closure cells and the globals its code names, a few
levels deep. After the trace, `Watch.changes()` compares: an attribute or dict entry set, a
list item set or appended, a closure cell rebound. Each change becomes an `Effect` whose new
value is kept as a structure with its tensors made graph outputs, and the replay applies
the effects after the graph ran, with the new tensors (`apply`).

Values: a tensor the trace made (an output of the graph), a tensor that existed before (the
same object), new lists/tuples/dicts of those (built anew at each call), existing objects
(the same object), plain Python values (the same value; the location's old value is then
guarded, so ``self.steps += 1`` is not replayed as ``self.steps = 1``: it recompiles once,
and a location that changes again is a graph break). What cannot be replayed is a graph
break (the call runs eagerly): deleting an entry, shrinking a list, storing a new object of
another type, reassigning a registered buffer or parameter, or replacing a tensor the trace
read by reference (state carried across calls in a plain attribute: use a buffer updated in
place). A last check asks the garbage collector which pre-existing objects hold a tensor the
trace made: one outside the watched containers (a hook's dict, another module's global) is
a graph break too, so a stored tensor is never a stale one.

Limits: effects are applied after the graph, in the order the containers were found, not
in program order; a mutation of a non-tensor object reached only through a function call,
more than MAX_DEPTH levels down or beyond MAX_ENTRIES containers, is not seen.
"""
import types

from ..core.tensor import Tensor

MAX_DEPTH = 4            # levels of containers below a root
MAX_ENTRIES = 20000      # containers watched per trace
_PLAIN = PLAIN = (bool, int, float, complex, str, bytes, type(None))
_MISSING = MISSING = object()
_SKIP_TYPES = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
               types.ModuleType, types.CodeType, property, staticmethod, classmethod)


class Unsupported(Exception):
    """A side effect the replay cannot redo (the trace becomes a graph break)."""


class Const:
    """A value the replay stores as is (an object that existed before the call)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Effect:
    """One change to Python state: `kind` setattr/setitem/list/cell on `obj`."""
    __slots__ = ("kind", "obj", "key", "where", "old", "plain")

    def __init__(self, kind, obj, key, where, old):
        self.kind, self.obj, self.key, self.where, self.old = kind, obj, key, where, old
        self.plain = False

    def __repr__(self):
        return f"Effect({self.where})"


class _Entry:
    __slots__ = ("obj", "path", "kind", "snap", "keys", "registry")

    def __init__(self, obj, path, kind, keys=None, registry=False):
        self.obj, self.path, self.kind, self.keys = obj, path, kind, keys
        self.registry = registry      # a Module's _parameters/_buffers/_modules dict
        self.snap = self.contents()

    def contents(self):
        o = self.obj
        if self.kind == "list":
            return list(o)
        if self.kind == "dict":
            return dict(o)
        if self.kind == "globals":
            return {k: o[k] for k in self.keys if k in o}
        if self.kind == "attrs":
            return dict(vars(o))
        try:                                      # a closure cell
            return o.cell_contents
        except ValueError:
            return _MISSING


def _same(a, b):
    return a is b or (type(a) in _PLAIN and type(a) is type(b) and a == b)


class Watch:
    """The containers reachable from the roots, with their contents when it was made."""

    def __init__(self, roots, skip=()):
        self.entries = {}
        self._skip = tuple(skip)
        for obj, path in roots:
            self._walk(obj, path, 0)

    def _add(self, obj, path, kind, **kw):
        e = self.entries[id(obj)] = _Entry(obj, path, kind, **kw)
        return e

    def _walk(self, v, path, depth):
        if id(v) in self.entries or len(self.entries) >= MAX_ENTRIES or depth > MAX_DEPTH:
            return
        t = type(v)
        if t in _PLAIN or isinstance(v, (Tensor,) + _SKIP_TYPES + self._skip):
            return
        if t is tuple:
            for i, x in enumerate(v):
                self._walk(x, f"{path}[{i}]", depth + 1)
            return
        if t is list:
            self._add(v, path, "list")
            for i, x in enumerate(v[:64]):
                self._walk(x, f"{path}[{i}]", depth + 1)
            return
        if t is dict:
            self._add(v, path, "dict")
            for k, x in list(v.items())[:256]:
                self._walk(x, f"{path}[{k!r}]", depth + 1)
            return
        if t is types.CellType:
            self._add(v, path, "cell")
            if self.entries[id(v)].snap is not _MISSING:
                self._walk(v.cell_contents, path, depth)
            return
        d = getattr(v, "__dict__", None)
        if type(d) is not dict or t.__module__.startswith(("ember.", "numpy", "builtins")) \
                and not _is_module(v):
            return
        self._add(v, path, "attrs")
        module = _is_module(v)
        for k, x in list(d.items()):
            p = f"{path}.{k}"
            if module and k in ("_parameters", "_buffers", "_modules") and type(x) is dict:
                self._add(x, p, "dict", registry=True)
                for n, m in x.items():
                    if k == "_modules" and m is not None:
                        self._walk(m, f"{path}.{n}", depth + 1)
                continue
            self._walk(x, p, depth + 1)

    def add_globals(self, g, names, path="global"):
        if names and id(g) not in self.entries:
            self._add(g, path, "globals", keys=tuple(names))
            for k in names:
                if k in g:
                    self._walk(g[k], k, 1)

    def watched_ids(self):
        """ids of the watched containers (and of the attribute dicts of watched objects)."""
        out = set(self.entries)
        out.update(id(vars(e.obj)) for e in self.entries.values() if e.kind == "attrs")
        return out

    def state(self):
        return {i: e.contents() for i, e in self.entries.items()}

    def absorb(self, before):
        """An opaque call (optimizer step, a `disable`d function) ran since `state()`
        returned `before`: what it changed is its own effect, redone by calling it again at
        replay, so those containers' baselines move to now. Raises Unsupported when the
        function had already changed such a container itself."""
        for i, e in self.entries.items():
            now = e.contents()
            if not _equal(now, before[i], e.kind):
                if not _equal(before[i], e.snap, e.kind):
                    raise Unsupported(f"{e.path} is changed both by the function and by an "
                                      "opaque call inside it")
                e.snap = now

    def changes(self):
        """The Effects since the Watch was made (raises Unsupported)."""
        out = []
        for e in self.entries.values():
            now = e.contents()
            if _equal(now, e.snap, e.kind):
                continue
            if e.registry:
                raise Unsupported(f"{e.path} is reassigned (a registered parameter, buffer "
                                  "or submodule; update a buffer in place: buf.copy_(...))")
            if e.kind == "cell":
                out.append(Effect("cell", e.obj, None, e.path, e.snap))
                continue
            if e.kind == "list":
                n = len(e.snap)
                if len(now) < n:
                    raise Unsupported(f"{e.path}: items removed from a list")
                for i in range(n):
                    if not _same(now[i], e.snap[i]):
                        out.append(Effect("setitem", e.obj, i, f"{e.path}[{i}]", e.snap[i]))
                if len(now) > n:
                    out.append(Effect("extend", e.obj, n, f"{e.path}.append", _MISSING))
                continue
            for k in e.snap:
                if k not in now:
                    raise Unsupported(f"{e.path}: {k!r} deleted")
            for k, v in now.items():
                old = e.snap.get(k, _MISSING)
                if old is _MISSING or not _same(v, old):
                    kind = "setattr" if e.kind == "attrs" else "setitem"
                    where = f"{e.path}.{k}" if e.kind == "attrs" else \
                        k if e.kind == "globals" else f"{e.path}[{k!r}]"
                    out.append(Effect(kind, e.obj, k, where, old))
        return out


def _equal(a, b, kind):
    if kind == "cell":
        return _same(a, b)
    if kind == "list":
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)


def _is_module(v):
    from ..nn.modules.module import Module
    return isinstance(v, Module)


def current(effect):
    """The effect's new value as it is now (after the traced call)."""
    o, k = effect.obj, effect.key
    if effect.kind == "cell":
        return o.cell_contents
    if effect.kind == "setattr":
        return vars(o)[k]
    if effect.kind == "extend":
        return list(o[k:])
    return o[k]


def value_struct(v, known_objects, is_traced, existed):
    """The replayable form of new value `v`: tensors stay (slots() makes them graph
    outputs), new lists/tuples/dicts are rebuilt around them, existing objects are Consts,
    plain values stay. Raises Unsupported for anything else."""
    t = type(v)
    if t in _PLAIN:
        return v
    if isinstance(v, Tensor):
        if is_traced(v) or existed(v):
            return v
        raise Unsupported("a tensor made by an op the tracer does not see is stored")
    if id(v) in known_objects or existed(v):
        return Const(v)
    if t in (list, tuple):
        return t(value_struct(x, known_objects, is_traced, existed) for x in v)
    if t is dict:
        return {k: value_struct(x, known_objects, is_traced, existed) for k, x in v.items()}
    raise Unsupported(f"a new {t.__name__} object is stored")


def unwrap(x):
    """A rebuilt value struct with the Consts replaced by their objects."""
    if type(x) is Const:
        return x.value
    if type(x) in (list, tuple):
        return type(x)(unwrap(v) for v in x)
    if type(x) is dict:
        return {k: unwrap(v) for k, v in x.items()}
    return x


def apply(effects, values):
    """Redo `effects` with the new `values` (one per effect, in order)."""
    for e, v in zip(effects, values):
        v = unwrap(v)
        if e.kind == "setattr":
            setattr(e.obj, e.key, v)
        elif e.kind == "setitem":
            e.obj[e.key] = v
        elif e.kind == "extend":
            e.obj.extend(v)
        else:
            e.obj.cell_contents = v


def watch_for(cf, args, kwargs):
    """The Watch of a call of CompiledFunction `cf` (its roots: see `roots`)."""
    from ..optim.optimizer import Optimizer
    from ..optim.lr_scheduler_base import LRScheduler
    found, globs = roots(cf.fn, cf.module, args, kwargs, cf._arg_name)
    # optimizers and schedulers change only through their recorded (opaque) steps
    w = Watch(found, skip=(Optimizer, LRScheduler))
    for g, names in globs:
        w.add_globals(g, names)
    return w


def read_location(effect):
    """What the effect's place holds now (MISSING when absent)."""
    o, k = effect.obj, effect.key
    try:
        if effect.kind == "cell":
            return o.cell_contents
        if effect.kind == "setattr":
            return vars(o).get(k, _MISSING)
        return o[k] if not isinstance(o, dict) else o.get(k, _MISSING)
    except (ValueError, IndexError):
        return _MISSING


def guard_old_value(gs, effect):
    """A guard (kind "side_effect") that the effect's place holds its traced old value."""
    old = effect.old
    ref = gs.const(lambda e=effect, old=old: _same(read_location(e), old))
    gs.add("side_effect", effect.where, f"{ref}()", old if old is not _MISSING else
           "<not set>", lambda a, k, env, e=effect: (lambda v: "<not set>" if v is _MISSING
                                                     else v)(read_location(e)))


def roots(fn, module, args, kwargs, arg_name):
    """(object, path) of the function's roots, and the globals dicts with the names its
    code reads: [(globals, names)]."""
    out, globs = [], []
    if module is not None:
        out.append((module, "self"))
        codes = {}
        for m in module.modules():
            f = getattr(type(m).forward, "__code__", None)
            if f is not None:
                codes[id(f)] = (type(m).forward, f)
        funcs = [fn for fn, _ in codes.values()]
        for m in module.modules():          # forward hooks (an activation-capturing dict)
            for k in ("_forward_pre_hooks", "_forward_hooks"):
                for h in (getattr(m, "__dict__", {}).get(k) or {}).values():
                    funcs.append(getattr(h, "__func__", h))
    else:
        funcs = [getattr(fn, "__func__", fn)]
        if getattr(fn, "__self__", None) is not None:
            out.append((fn.__self__, "self"))
        if not isinstance(funcs[0], types.FunctionType) and hasattr(fn, "__dict__"):
            out.append((fn, "fn"))
    for i, a in enumerate(args):
        out.append((a, arg_name(i)))
    for k, a in kwargs.items():
        out.append((a, k))
    for f in funcs:
        code = getattr(f, "__code__", None)
        if code is None or not isinstance(f, types.FunctionType):
            continue
        for name, cell in zip(code.co_freevars, f.__closure__ or ()):
            out.append((cell, name))
        globs.append((f.__globals__, _names(code)))
    return out, globs


def _names(code, out=None):
    out = set() if out is None else out
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _names(c, out)
    return out


def escaped(traced, tracer, watched, ignore):
    """Pre-existing objects outside the watched containers that hold one of the `traced`
    tensors: [(holder type name, tensor)] (the garbage collector's referrers)."""
    if not traced:
        return []
    out = []
    for r in tracer.referrers(traced):
        if id(r) in watched or id(r) in ignore or isinstance(r, (Tensor, types.FrameType)) \
                or not tracer.existed(r):
            continue
        if _internal(r) or type(r) is dict and any(
                _internal(o) and getattr(o, "__dict__", None) is r
                for o in tracer.referrers([r])):
            continue       # autograd's, the tracer's and the pipeline's own records
        out.append(type(r).__name__)
    return out


def find(p):
    """The Python state the traced call of Program `p` changed: sets p.effects (redone after
    the graph at each replay) and p.effect_values (their new values, whose tensors become
    graph outputs); or a graph break on the tracer when one cannot be redone."""
    tracer, cf = p.tracer, p.compiled
    try:
        if tracer.effect_error is not None:
            raise Unsupported(tracer.effect_error)
        found = tracer.watch.changes() if tracer.watch is not None else []
        lifted = {id(n.target) for n in tracer.graph.lifted()}
        watched = tracer.watch.watched_ids() if tracer.watch is not None else set()
        values = []
        for e in found:
            if isinstance(e.old, Tensor) and id(e.old) in lifted:
                raise Unsupported(
                    f"{e.where} is replaced by the function after it read the tensor there "
                    "(state carried across calls in a Python attribute; a buffer updated in "
                    "place, buf.copy_(...), compiles)")
            v = current(e)
            if type(v) in PLAIN and (type(e.old) in PLAIN or e.old is MISSING):
                if e.where in cf.stateful:
                    raise Unsupported(
                        f"{e.where} changes at every call ({e.old!r} -> {v!r}): Python state "
                        "the function updates (a tensor buffer updated in place compiles)")
                e.plain = True
            values.append(value_struct(v, watched, tracer.known, tracer.existed))
        traced = [t for t in tracer.keep if isinstance(t, Tensor) and not tracer.existed(t)]
        ignore = {id(tracer.keep), id(tracer.pre_objects), id(tracer.record_values),
                  id(vars(p))}
        holders = escaped(traced, tracer, watched, ignore)
        if holders:
            raise Unsupported(
                f"a tensor made in the function is kept in a {holders[0]} that existed "
                "before the call and that the compiler does not watch (it cannot replay "
                "that store)")
    except Unsupported as e:
        tracer.side_effect_break(f"side effect: {e}", def_line(cf))
        return
    p.effects, p.effect_values = found, values


def def_line(cf):
    """'file:line in name' of the compiled function's (or Module forward's) definition."""
    fn = type(cf.module).forward if cf.module is not None else cf.fn
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"


def _internal(obj):
    return (type(obj).__module__ or "").startswith("ember.") and not _is_module(obj)

