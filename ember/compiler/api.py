"""ember.compile: capture on the first call, replay compiled variants behind their guards.

A compiled function keeps a list of variants. Each call checks the variants' guards in
order and replays the first that holds; when none does, it compiles the call again (a
recompile, logged with the guard that failed) — until `config.cache_size_limit` variants
exist, after which it warns once and runs eagerly. Compiling is the list of named stages in
pipeline.py (capture, backward_capture, unify, guards, partition, passes, fusion, codegen,
build, buffer_plan, replay); replaying never goes through it. A trace with graph breaks
becomes a split variant (segments.py: compiled segments, the function's Python between
them) or, where it cannot be split, an "eager" variant: calls that pass its guards run the
function as written. A replay redoes the call's Python side effects (effects.py).
"""
import warnings

from ..autograd.grad_mode import state as _grad_state
from . import config, pipeline, disk_cache
from .config import log, logs_on  # noqa: F401  (the logs were set up here before)
from .program import Variant  # noqa: F401
from .tracer import user_source
from . import dynamic as dynamic_marks


_ALL = []     # every compiled function, for reset()
# the modes torch.compile accepts: "reduce-overhead" replays one prebuilt plan (replay.py),
# the max-autotune ones tune kernel configurations (autotune.py); "lite" is "default" here
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


class CompiledFunction:
    """What `ember.compile(fn)` returns for a function (see the module docstring)."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="c", mode=None,
                 options=None, module=None):
        if backend not in ("c", "numpy"):
            raise ValueError(f"unknown backend {backend!r}: expected 'c' or 'numpy'")
        if mode is not None and options:
            raise RuntimeError("Either mode or options can be specified, but both can't be "
                               "specified at the same time.")
        if mode is not None and mode not in MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                               + ", ".join(MODES))
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
        self.stateful = set()       # places whose Python value the function changes each call
        self.marked = set()         # (input path, dim) marked with mark_dynamic so far
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
            if failed is not None and failed.kind == "shape":
                reason += _drop_last_hint(failed, args, kwargs, self.variants[-1].guards.env)
            if len(self.variants) >= config.cache_size_limit:
                self.fell_back = reason
                warnings.warn(f"ember.compile: {self.__name__} hit the cache size limit "
                              f"({config.cache_size_limit}) and now runs eagerly; last "
                              f"recompile because {reason}", stacklevel=2)
                return self.fn(*args, **kwargs)
            if failed is not None and failed.kind == "side_effect":
                self.stateful.add(failed.source)
            if failed is not None and failed.kind == "shape":
                # a size changed: trace again, then try to make the changed sizes symbolic
                base = next((v for v in reversed(self.variants)
                             if disk_cache.capture_of(v) is not None), None)
                marked = base is not None and dynamic_marks.only_marked_changed(
                    base.capture, args, kwargs, self.marked)
                if self.dynamic is not False or marked:
                    return self._compile(args, kwargs, unify_with=base, reason=reason,
                                         marked=marked)
            self._recompiled(reason)
        return self._compile(args, kwargs)

    def _recompiled(self, reason):
        self.recompiles.append(reason)
        if config.verbose or config.verbose_recompiles or logs_on("recompiles"):
            log.warning("recompiling %s (%s), called at %s: %s", self.__name__,
                        self._def_line(), user_source(), reason)

    def _def_line(self):
        from .effects import def_line
        return "defined at " + def_line(self).rsplit(" in ", 1)[0]

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

    def _compile(self, args, kwargs, unify_with=None, reason=None, marked=False):
        """Compile this call (pipeline.STAGES), keep its variant, return its result.
        `marked`: only sizes marked with mark_dynamic changed (no recompile is counted)."""
        self.marked |= dynamic_marks.marks_of(args, kwargs)
        key = None
        if unify_with is None and not marked:
            # a warm start: the variant from the disk cache, without tracing
            key = disk_cache.lookup_key(self, args, kwargs)
            v = disk_cache.load(self, args, kwargs, key) if key is not None else None
            if v is not None:
                if reason is not None:
                    self._recompiled(reason)
                self.variants.append(v)
                return v.run(args, kwargs)
        p = pipeline.compile_program(self, args, kwargs, unify_with)
        if key is not None:
            disk_cache.save(self, p, key)
        v = p.variant
        v.autotune = getattr(p, "autotune", None)
        if v.eager or v.root is not None:
            if reason is not None:
                self._recompiled(reason)
            self.breaks.extend(v.breaks)
            if logs_on("breaks"):
                for b in v.breaks:
                    log.warning("graph break in %s: %s (%s)", self.__name__, b,
                                "runs eagerly" if v.eager else "split into segments")
        elif p.unified:
            if logs_on("recompiles"):
                log.warning("%s: sizes %s are symbolic now", self.__name__,
                            ", ".join(v.dynamic))
            if self.dynamic is True or marked:
                self.variants.remove(unify_with)     # the general one replaces it
            else:
                self._recompiled(reason)
        elif marked:
            log.warning("ember.compile: %s: the sizes marked dynamic (mark_dynamic) could not "
                        "be made symbolic (the two traces differ in more than sizes); "
                        "recompiling: %s", self.__name__, reason)
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


def _drop_last_hint(guard, args, kwargs, env):
    """A sentence for a recompile caused by a smaller first dim (a last, partial batch)."""
    try:
        got = tuple(guard.read(args, kwargs, env))
    except Exception:
        return ""
    want = guard.expected
    if not (isinstance(want, tuple) and want and all(type(n) is int for n in want)) or \
            len(got) != len(want) or got[1:] != want[1:] or not got[0] < want[0]:
        return ""
    return (f" (the batch dim shrank from {want[0]} to {got[0]}: a smaller last batch? "
            "DataLoader(..., drop_last=True) keeps every batch the same size; or mark the "
            "dim dynamic: ember.compiler.mark_dynamic(x, 0))")


def reset():
    """Forget every compiled variant (the next call of each compiled function traces)."""
    for cf in _ALL:
        cf.reset()
