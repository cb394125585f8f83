"""Guards: what a compiled variant assumed about its call, checked before each replay.

Each Guard has a `source` (``args[0].shape[0]``, ``model.training``), a Python expression
that is True when the assumption holds, and `describe(args, kwargs)`, the sentence a failed
check prints ("args[0].shape[0]: expected 32, got 17") — computed only on a miss. The
expressions of one variant are compiled into one function, so checking costs one call.
"""

from ..core.tensor import Tensor
from ..core import dtype as D
from ..autograd.grad_mode import state as _grad_state

_PLAIN = (bool, int, float, str, type(None))


class Guard:
    __slots__ = ("kind", "source", "expr", "expected", "read")

    def __init__(self, kind, source, expr, expected, read):
        self.kind = kind            # shape, dtype, requires_grad, value, training, ...
        self.source = source        # what it reads, in the user's words
        self.expr = expr            # Python expression over args, kwargs and env names
        self.expected = expected    # the value seen at trace time (for messages)
        self.read = read            # read(args, kwargs, env) -> the current value

    def describe(self, args, kwargs, env):
        try:
            got = self.read(args, kwargs, env)
        except Exception as e:      # e.g. a tuple got shorter
            got = f"<{type(e).__name__}>"
        return f"{self.source}: expected {_show(self.expected)}, got {_show(got)}"

    def __repr__(self):
        return f"Guard({self.kind}: {self.source} == {_show(self.expected)})"


def _show(v):
    if isinstance(v, D.dtype):
        return str(v)
    if isinstance(v, tuple) and len(v) > 8:
        return f"({', '.join(map(str, v[:8]))}, ...)"
    return repr(v)


class GuardSet:
    """The guards of one variant, compiled into `check(args, kwargs) -> bool`."""

    def __init__(self):
        self.guards = []
        self.env = {"Tensor": Tensor, "_state": _grad_state, "D": D}
        self._check = None

    def add(self, kind, source, expr, expected, read):
        self.guards.append(Guard(kind, source, expr, expected, read))

    def const(self, value):
        """A name for `value` in the guard expressions' environment."""
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def compile(self):
        body = " and ".join(f"({g.expr})" for g in self.guards) or "True"
        src = f"def check(args, kwargs):\n    try:\n        return {body}\n" \
              f"    except Exception:\n        return False\n"
        ns = dict(self.env)
        exec(compile(src, "<ember guards>", "exec"), ns)
        self._check = ns["check"]
        self.source = src
        return self

    def check(self, args, kwargs):
        return self._check(args, kwargs)

    def first_failure(self, args, kwargs):
        """The first guard that fails now, or None."""
        for g in self.guards:
            ns = dict(self.env, args=args, kwargs=kwargs)
            try:
                ok = eval(g.expr, ns)
            except Exception:
                ok = False
            if not ok:
                return g
        return None

    def __len__(self):
        return len(self.guards)


def guard_value(gs, path, source, value, dynamic_dims=None):
    """Guards for one argument (recursing into tuples, lists and dicts)."""
    if isinstance(value, Tensor):
        _guard_tensor(gs, path, source, value, (dynamic_dims or {}).get(path, ()))
    elif type(value) in (tuple, list):
        t = gs.const(type(value))
        gs.add("type", source, f"type({path}) is {t} and len({path}) == {len(value)}",
               (type(value).__name__, len(value)),
               lambda a, k, e, p=path: (type(eval(p, {"args": a, "kwargs": k})).__name__,
                                        len(eval(p, {"args": a, "kwargs": k}))))
        for i, v in enumerate(value):
            guard_value(gs, f"{path}[{i}]", f"{source}[{i}]", v, dynamic_dims)
    elif type(value) is dict:
        keys = tuple(value)
        gs.add("keys", source, f"tuple({path}) == {keys!r}", keys,
               lambda a, k, e, p=path: tuple(eval(p, {"args": a, "kwargs": k})))
        for key, v in value.items():
            guard_value(gs, f"{path}[{key!r}]", f"{source}[{key!r}]", v, dynamic_dims)
    elif type(value) in _PLAIN:
        t = type(value).__name__
        expr = f"{path} is None" if value is None else \
            f"type({path}) is {t} and {path} == {value!r}" if value == value else \
            f"type({path}) is float and {path} != {path}"
        gs.add("value", source, expr, value, _reader(path))
    elif isinstance(value, D.dtype):
        gs.add("value", source, f"{path} is {gs.const(value)}", value, _reader(path))
    else:
        # any other object (a module, a function, a device...): the same object
        gs.add("identity", source, f"{path} is {gs.const(value)}", value, _reader(path))


def _reader(path):
    return lambda a, k, e: eval(path, {"args": a, "kwargs": k})


def _guard_tensor(gs, path, source, t, dyn):
    shape = tuple(t._data.shape)
    gs.add("type", source, f"isinstance({path}, Tensor)", "Tensor",
           lambda a, k, e, p=path: type(eval(p, {"args": a, "kwargs": k})).__name__)
    if dyn:
        static = [i for i in range(len(shape)) if i not in dyn]
        parts = [f"len({path}._data.shape) == {len(shape)}"]
        parts += [f"{path}._data.shape[{i}] == {shape[i]}" for i in static]
        parts += [f"{path}._data.shape[{i}] >= 2" for i in dyn]
        expected = tuple("s%d" % i if i in dyn else n for i, n in enumerate(shape))
        gs.add("shape", source + ".shape", " and ".join(parts), expected,
               lambda a, k, e, p=path: tuple(eval(p, {"args": a, "kwargs": k})._data.shape))
    else:
        gs.add("shape", source + ".shape", f"{path}._data.shape == {shape!r}", shape,
               lambda a, k, e, p=path: tuple(eval(p, {"args": a, "kwargs": k})._data.shape))
    gs.add("dtype", source + ".dtype", f"{path}.dtype is {gs.const(t.dtype)}", t.dtype,
           lambda a, k, e, p=path: eval(p, {"args": a, "kwargs": k}).dtype)
    gs.add("device", source + ".device", f"{path}.device == {gs.const(t.device)}", t.device,
           lambda a, k, e, p=path: eval(p, {"args": a, "kwargs": k}).device)
    gs.add("requires_grad", source + ".requires_grad",
           f"{path}._requires_grad is {bool(t._requires_grad)}", bool(t._requires_grad),
           lambda a, k, e, p=path: eval(p, {"args": a, "kwargs": k})._requires_grad)
    if t._data.flags.c_contiguous:
        gs.add("strides", source + ".is_contiguous()", f"{path}._data.flags.c_contiguous",
               True, lambda a, k, e, p=path: bool(
                   eval(p, {"args": a, "kwargs": k})._data.flags.c_contiguous))
    else:
        st = tuple(s // t._data.itemsize for s in t._data.strides)
        gs.add("strides", source + ".stride()",
               f"{path}._data.strides == {t._data.strides!r}", st,
               lambda a, k, e, p=path: tuple(
                   s // eval(p, {"args": a, "kwargs": k})._data.itemsize
                   for s in eval(p, {"args": a, "kwargs": k})._data.strides))


def guard_globals(gs):
    """Grad mode, inference mode, autocast and the default dtype."""
    gs.add("grad_mode", "ember.is_grad_enabled()", f"_state.enabled is {bool(_grad_state.enabled)}",
           bool(_grad_state.enabled), lambda a, k, e: _grad_state.enabled)
    gs.add("grad_mode", "ember.is_inference_mode_enabled()",
           f"_state.inference is {bool(_grad_state.inference)}", bool(_grad_state.inference),
           lambda a, k, e: _grad_state.inference)
    gs.add("autocast", "ember.is_autocast_enabled()",
           f"_state.autocast_enabled is {bool(_grad_state.autocast_enabled)}",
           bool(_grad_state.autocast_enabled), lambda a, k, e: _grad_state.autocast_enabled)
    if _grad_state.autocast_enabled:
        gs.add("autocast", "ember.get_autocast_dtype()",
               f"_state.autocast_dtype is {gs.const(_grad_state.autocast_dtype)}",
               _grad_state.autocast_dtype, lambda a, k, e: _grad_state.autocast_dtype)
    dd = D.get_default_dtype()
    gs.add("default_dtype", "ember.get_default_dtype()",
           f"D.get_default_dtype() is {gs.const(dd)}", dd, lambda a, k, e: D.get_default_dtype())


def guard_module(gs, module, prefix="self"):
    """`training` of every submodule and the identity of every parameter and buffer."""
    for name, m in module.named_modules(remove_duplicate=True):
        src = f"{prefix}.{name}" if name else prefix
        mref = gs.const(m)
        gs.add("training", src + ".training", f"{mref}.training is {bool(m.training)}",
               bool(m.training), lambda a, k, e, m=m: m.training)
        for kind in ("_parameters", "_buffers"):
            for pname, p in getattr(m, kind).items():
                pref = gs.const(p)
                what = "parameter" if kind == "_parameters" else "buffer"
                gs.add(what, f"{src}.{pname}", f"{mref}.{kind}.get({pname!r}) is {pref}",
                       f"the same {what} object", lambda a, k, e, m=m, kind=kind, n=pname, p=p:
                       "the same object" if getattr(m, kind).get(n) is p else "another object")
                if p is not None:
                    gs.add("requires_grad", f"{src}.{pname}.requires_grad",
                           f"{pref}._requires_grad is {bool(p._requires_grad)}",
                           bool(p._requires_grad), lambda a, k, e, p=p: p._requires_grad)
                    gs.add("shape", f"{src}.{pname}.shape",
                           f"{pref}._data.shape == {tuple(p._data.shape)!r} and "
                           f"{pref}.dtype is {gs.const(p.dtype)}",
                           (tuple(p._data.shape), p.dtype),
                           lambda a, k, e, p=p: (tuple(p._data.shape), p.dtype))


def guard_lifted(gs, tensors, names):
    """Metadata of the other tensors the function read by reference (closure constants)."""
    for t, name in zip(tensors, names):
        ref = gs.const(t)
        gs.add("lifted", name + ".shape", f"{ref}._data.shape == {tuple(t._data.shape)!r} and "
               f"{ref}.dtype is {gs.const(t.dtype)} and {ref}._requires_grad is "
               f"{bool(t._requires_grad)}", (tuple(t._data.shape), t.dtype),
               lambda a, k, e, t=t: (tuple(t._data.shape), t.dtype))


def guards_for_call(args, kwargs, arg_name, module, lifted_nodes, cap=None):
    """The compiled GuardSet of a traced call: global state, every argument (a size that
    `cap` made symbolic only checked >= 2, and sizes it found equal kept equal), the call's
    structure, the module's state and every lifted tensor that is not its parameter or
    buffer. `arg_name(i)` names positional argument i as the user wrote it."""
    gs = GuardSet()
    guard_globals(gs)
    dyn = {}
    if cap is not None:
        for k, d in cap.syms:
            dyn.setdefault(cap.input_paths[k], set()).add(d)
        for k, d, _ in cap.sym_equal:
            dyn.setdefault(cap.input_paths[k], set()).add(d)
    for i, a in enumerate(args):
        guard_value(gs, f"args[{i}]", arg_name(i), a, dyn)
    for k, v in kwargs.items():
        guard_value(gs, f"kwargs[{k!r}]", k, v, dyn)
    if cap is not None:
        for k, d, sym in cap.sym_equal:
            p0, d0 = cap.input_paths[cap.syms[sym][0]], cap.syms[sym][1]
            p1 = cap.input_paths[k]
            gs.add("shape", f"{p1}.shape[{d}] == {p0}.shape[{d0}]",
                   f"{p1}._data.shape[{d}] == {p0}._data.shape[{d0}]", True,
                   lambda a, kw, e, p1=p1, d=d, p0=p0, d0=d0:
                   eval(p1, {"args": a, "kwargs": kw})._data.shape[d] ==
                   eval(p0, {"args": a, "kwargs": kw})._data.shape[d0])
    gs.add("structure", "len(args)", f"len(args) == {len(args)}", len(args),
           lambda a, k, e: len(a))
    gs.add("structure", "kwargs", f"tuple(kwargs) == {tuple(kwargs)!r}", tuple(kwargs),
           lambda a, k, e: tuple(k))
    if module is not None:
        guard_module(gs, module)
    params = set(id(p) for p in module.parameters()) | set(
        id(b) for b in module.buffers()) if module is not None else set()
    others = [n for n in lifted_nodes if id(n.target) not in params]
    guard_lifted(gs, [n.target for n in others], [n.name for n in others])
    return gs.compile()
