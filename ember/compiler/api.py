"""ember.compile: capture on the first call, replay compiled variants behind their guards.

A compiled function keeps a list of variants. Each call checks the variants' guards in
order and replays the first that holds; when none does, it compiles the call again (a
recompile, logged with the guard that failed) — until `config.cache_size_limit` variants
exist, after which it warns once and runs eagerly. Compiling is the list of named stages in
pipeline.py (capture, backward_capture, unify, guards, partition, passes, fusion, codegen,
build, buffer_plan, replay); replaying never goes through it. A trace that hit a graph break
becomes an "eager" variant: calls that pass its guards run the function as written.
"""
import warnings

from ..autograd.grad_mode import state as _grad_state
from . import config, pipeline
from .config import log, logs_on  # noqa: F401  (the logs were set up here before)
from .pipeline import Variant  # noqa: F401


_ALL = []     # every compiled function, for reset()


class CompiledFunction:
    """What `ember.compile(fn)` returns for a function (see the module docstring)."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="c", mode=None,
                 options=None, module=None):
        if backend not in ("c", "numpy"):
            raise ValueError(f"unknown backend {backend!r}: expected 'c' or 'numpy'")
        self.fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.mode = mode
        self.options = dict(options or {})
        self._check = bool(self.options.get("check"))
        self.module = module
        self.variants = []
        self.recompiles = []        # sentences: why each recompile happened
        self.breaks = []
        self.fell_back = None       # the reason, once the cache size limit was hit
        self.check_failures = []    # options={"check": True}: nodes that left tolerance
        self.calls = 0
        self._warned_backend = False
        _ALL.append(self)
        try:
            self.__name__ = getattr(fn, "__name__", "compiled")
            self.__doc__ = getattr(fn, "__doc__", None)
            self.__wrapped__ = fn
        except AttributeError:
            pass

    def reset(self):
        self.variants.clear()
        self.recompiles.clear()
        self.breaks.clear()
        self.fell_back = None

    def __call__(self, *args, **kwargs):
        if _grad_state.modes:        # already tracing (nested compile), profiling...
            return self.fn(*args, **kwargs)
        self.calls += 1
        for v in self.variants:
            if v.guards.check(args, kwargs):
                if v.eager:
                    return self.fn(*args, **kwargs)
                if self._check and v.check_fn is not None:
                    from .check import checked_call
                    return checked_call(self, v, args, kwargs)
                return v.run(args, kwargs)
        if self.fell_back is not None:
            return self.fn(*args, **kwargs)
        if self.variants:
            failed = self.variants[-1].guards.first_failure(args, kwargs)
            reason = failed.describe(args, kwargs, self.variants[-1].guards.env) \
                if failed is not None else "no guard failed (unknown)"
            if len(self.variants) >= config.cache_size_limit:
                self.fell_back = reason
                warnings.warn(f"ember.compile: {self.__name__} hit the cache size limit "
                              f"({config.cache_size_limit}) and now runs eagerly; last "
                              f"recompile because {reason}", stacklevel=2)
                return self.fn(*args, **kwargs)
            if failed is not None and failed.kind == "shape" and self.dynamic is not False:
                # a size changed: trace again, then try to make the changed sizes symbolic
                base = next((v for v in reversed(self.variants) if v.capture is not None),
                            None)
                return self._compile(args, kwargs, unify_with=base, reason=reason)
            self._recompiled(reason)
        return self._compile(args, kwargs)

    def _recompiled(self, reason):
        self.recompiles.append(reason)
        if config.verbose_recompiles or logs_on("recompiles"):
            log.warning("recompiling %s: %s", self.__name__, reason)

    # ---- capture ----
    def _lifted_names(self):
        names = {}
        if self.module is not None:
            for n, p in self.module.named_parameters(remove_duplicate=False):
                names.setdefault(id(p), "self_" + n.replace(".", "_"))
            for n, b in self.module.named_buffers(remove_duplicate=False):
                names.setdefault(id(b), "self_" + n.replace(".", "_"))
        return names

    def _arg_name(self, i):
        try:
            import inspect
            fn = self.module.forward if self.module is not None else self.fn
            names = [p for p in inspect.signature(fn).parameters]
            if i < len(names) and not names[i].startswith("*"):
                return names[i]
        except (TypeError, ValueError):
            pass
        return f"args[{i}]"

    def _compile(self, args, kwargs, unify_with=None, reason=None):
        """Compile this call (pipeline.STAGES), keep its variant, return its result."""
        p = pipeline.compile_program(self, args, kwargs, unify_with)
        v = p.variant
        if v.eager:
            if reason is not None:
                self._recompiled(reason)
            self.breaks.extend(v.breaks)
            if logs_on("breaks"):
                for b in v.breaks:
                    log.warning("graph break in %s: %s (runs eagerly)", self.__name__, b)
        elif p.unified:
            if logs_on("recompiles"):
                log.warning("%s: sizes %s are symbolic now", self.__name__,
                            ", ".join(v.dynamic))
            if self.dynamic is True:
                self.variants.remove(unify_with)     # the general one replaces it
            else:
                self._recompiled(reason)
        elif reason is not None:
            self._recompiled(reason)
        self.variants.append(v)
        return p.result

    def _backend_unavailable(self, why):
        """The C backend cannot build this function's kernels: warn once (the build stage
        then uses the numpy backend)."""
        if not self._warned_backend:
            warnings.warn(f"ember.compile: the C backend is unavailable ({why}); using the "
                          "numpy backend", stacklevel=6)
            self._warned_backend = True


def reset():
    """Forget every compiled variant (the next call of each compiled function traces)."""
    for cf in _ALL:
        cf.reset()
