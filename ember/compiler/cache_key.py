"""The graph cache's key (disk_cache.py): one sha256 over everything that decides what
compiling a call produces, so that a stored variant is loaded only where a fresh trace would
have made the same one.

It covers ember's version and a fingerprint of its installed sources (size and mtime of every
.py file: an edited ember never loads graphs an older one traced), the C compiler's version and
the CPU's flags, compile()'s arguments and the compiler settings, the global state the guards
check (grad mode, inference mode, autocast, default dtype), every argument as the guards see it
(tensors: shape, dtype, device, requires_grad, strides; plain values; containers), and the code:
for a function its code objects and those of the functions and classes it reaches through its
globals and closure; for a Module, every class of its tree that is not ember's (each method's
code, recursively), each submodule's name, `training`, plain attributes, and its parameters'
and buffers' names, shapes, dtypes, strides and requires_grad. A call it cannot describe (an
object guarded by identity, module hooks) raises Uncacheable.
"""
import hashlib
import os
import types

from ..core.tensor import Tensor
from ..core import dtype as D
from ..autograd.grad_mode import state as _grad_state
from . import config

FORMAT = 1
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PLAIN = (bool, int, float, str, type(None))
# compiler settings that do not change what a compile produces
_NOT_IN_KEY = {"cache_dir", "cache_size_limit", "verbose", "verbose_recompiles", "logs",
               "verify_stages", "graph_cache", "graph_cache_dir", "log", "pool_bytes"}


class Uncacheable(Exception):
    """This call's variant cannot be stored or looked up (the message says why)."""


_FINGERPRINT = []


def ember_fingerprint():
    """ember's version and the size and mtime of each of its .py files (an edited ember must
    not load graphs traced by the old one)."""
    if not _FINGERPRINT:
        from ..version import __version__
        h = hashlib.sha256(__version__.encode())
        for root, dirs, files in os.walk(_EMBER_DIR):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(root, f))
                    h.update(f"{root[len(_EMBER_DIR):]}/{f}:{st.st_size}:{st.st_mtime_ns};"
                             .encode())
        _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def _is_ember(obj):
    mod = getattr(obj, "__module__", None) or ""
    return mod == "ember" or mod.startswith("ember.")


class _Digest:
    """sha256 over the code a compiled function can run (see the module docstring)."""

    def __init__(self):
        self.h = hashlib.sha256()
        self.seen = set()
        self._depth = 0

    def add(self, *parts):
        for p in parts:
            self.h.update(repr(p).encode())
            self.h.update(b"\0")

    def code(self, code, globs):
        self.add(code.co_name, code.co_code, code.co_names, code.co_varnames,
                 code.co_freevars, code.co_argcount, code.co_kwonlyargcount, code.co_flags)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self.code(c, globs)
            else:
                self.add(c)
        for name in code.co_names:
            if globs is not None and name in globs:
                self.value(globs[name], name)

    def function(self, fn):
        if id(fn) in self.seen:
            return
        self.seen.add(id(fn))
        fn = getattr(fn, "__func__", fn)
        if _is_ember(fn) or not hasattr(fn, "__code__"):
            self.add("fn", getattr(fn, "__module__", None), getattr(fn, "__qualname__", None))
            return
        self.code(fn.__code__, fn.__globals__)
        self.add(fn.__defaults__ if _all_plain(fn.__defaults__) else "defaults")
        for cell in fn.__closure__ or ():
            try:
                self.value(cell.cell_contents, "cell")
            except ValueError:
                self.add("empty cell")

    def cls(self, c):
        if id(c) in self.seen:
            return
        self.seen.add(id(c))
        self.add("class", c.__module__, c.__qualname__)
        for k in c.__mro__:
            if k is object or _is_ember(k):
                self.add("base", k.__module__, k.__qualname__)
                continue
            for name, attr in sorted(vars(k).items()):
                if isinstance(attr, (staticmethod, classmethod)):
                    attr = attr.__func__
                if isinstance(attr, property):
                    for f in (attr.fget, attr.fset):
                        if f is not None:
                            self.function(f)
                elif isinstance(attr, types.FunctionType):
                    self.add(name)
                    self.function(attr)
                elif isinstance(attr, _PLAIN):
                    self.add(name, attr)

    def value(self, v, name):
        if isinstance(v, types.ModuleType):
            self.add(name, "module", v.__name__)
        elif isinstance(v, (types.FunctionType, types.MethodType)):
            self.function(v)
        elif isinstance(v, type):
            if _is_ember(v):
                self.add(name, v.__module__, v.__qualname__)
            else:
                self.cls(v)
        elif _all_plain(v):
            self.add(name, v)
        elif isinstance(v, D.dtype):
            self.add(name, "dtype", v.name)
        elif type(v) in (tuple, list) and len(v) <= 64:
            self.add(name, type(v).__name__, len(v))
            for i, x in enumerate(v):
                self.value(x, f"{name}[{i}]")
        elif hasattr(v, "__dict__") and not isinstance(v, Tensor) and self._depth < 4:
            # a plain record (a config dataclass, a sample): its class and its fields, which
            # must themselves be describable; anything else is guarded by identity in the
            # process that compiled it and has no key across processes
            self.cls(type(v))
            self._depth += 1
            try:
                for k, x in sorted(vars(v).items()):
                    self.value(x, f"{name}.{k}")
            finally:
                self._depth -= 1
        else:
            # its type alone would let two different objects share an entry (a stale graph
            # that computes something else): refuse to cache instead
            raise Uncacheable(f"{name} is a {type(v).__name__}, which has no key across "
                              "processes")


def _all_plain(v):
    if isinstance(v, _PLAIN):
        return True
    if type(v) is dict:
        return all(_all_plain(k) and _all_plain(x) for k, x in v.items())
    return type(v) in (tuple, list) and all(_all_plain(x) for x in v)


def _module_structure(d, module):
    for name, m in module.named_modules(remove_duplicate=False):
        for k, v in vars(m).items():
            if "hook" in k and v:
                raise Uncacheable(f"module {name or 'self'} has hooks ({k})")
        d.cls(type(m))
        d.add("module", name, bool(m.training))
        for k, v in sorted(vars(m).items()):
            if k in ("_parameters", "_buffers", "_modules", "training") or "hook" in k:
                continue
            if isinstance(v, Tensor):
                d.add(k, "tensor", v._data.shape, v.dtype.name)
            elif isinstance(v, (dict, set, frozenset)) and k.startswith("_"):
                d.add(k, type(v).__name__)   # nn.Module's own bookkeeping (state-dict hooks...)
            else:
                d.value(v, k)     # plain values, functions' code, classes, others by type
        for kind in ("_parameters", "_buffers"):
            for pname, p in getattr(m, kind).items():
                d.add(kind, pname, None if p is None else
                      (tuple(p._data.shape), p.dtype.name, bool(p._requires_grad),
                       p._data.strides))


def _describe_value(d, v, path):
    """Add what the guards check of argument `v` to the digest."""
    if isinstance(v, Tensor):
        a = v._data
        d.add(path, "tensor", a.shape, v.dtype.name, str(v.device), bool(v._requires_grad),
              True if a.flags.c_contiguous else a.strides)
    elif type(v) in (tuple, list):
        d.add(path, type(v).__name__, len(v))
        for i, x in enumerate(v):
            _describe_value(d, x, f"{path}[{i}]")
    elif type(v) is dict:
        d.add(path, "dict", tuple(v))
        for k, x in v.items():
            _describe_value(d, x, f"{path}[{k!r}]")
    elif type(v) in _PLAIN:
        d.add(path, type(v).__name__, v)
    elif isinstance(v, D.dtype):
        d.add(path, "dtype", v.name)
    else:
        raise Uncacheable(f"argument {path} is a {type(v).__name__} (guarded by identity)")


def call_key(cf, args, kwargs):
    """The cache key of this call of CompiledFunction `cf` (raises Uncacheable)."""
    from . import build
    d = _Digest()
    d.add(FORMAT, ember_fingerprint(), build._CPU_FLAGS)
    try:
        d.add(build.compiler_version())
    except build.CompilerUnavailable:
        d.add("no compiler")
    d.add(cf.backend, cf.fullgraph, cf.dynamic, cf.mode, sorted(cf.options.items(), key=str))
    for k, v in sorted(vars(config).items()):
        if not k.startswith("_") and k not in _NOT_IN_KEY and _all_plain(v):
            d.add(k, v)
    if cf.mode in ("max-autotune", "max-autotune-no-cudagraphs"):
        from .threads import get_num_threads
        d.add("threads", get_num_threads())
    s = _grad_state
    d.add(bool(s.enabled), bool(s.inference), bool(s.autocast_enabled),
          s.autocast_dtype.name if s.autocast_enabled and s.autocast_dtype else None,
          D.get_default_dtype().name)
    if cf.module is not None:
        _module_structure(d, cf.module)
    elif isinstance(cf.fn, (types.FunctionType, types.MethodType)) and not _is_ember(cf.fn):
        d.function(cf.fn)
        if isinstance(cf.fn, types.MethodType):
            raise Uncacheable("a bound method (its object is guarded by identity)")
    else:
        raise Uncacheable(f"cannot identify the code of {type(cf.fn).__name__}")
    for i, a in enumerate(args):
        _describe_value(d, a, f"args[{i}]")
    for k, v in kwargs.items():
        _describe_value(d, v, f"kwargs[{k!r}]")
    return d.h.hexdigest()
