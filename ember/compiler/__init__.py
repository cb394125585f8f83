"""ember.compiler: capture ordinary Python into a graph with guards, and compile it.

    model = ember.compile(model)            # a Module: same parameters, compiled forward
    @ember.compile(backend="c")
    def f(x, w, b):
        return F.layer_norm(F.gelu(x * w + b), (1024,))
    print(ember.compiler.explain(f)(x, w, b))      # graphs, breaks, guards, recompiles

The path of a call: guards (guards.py) -> capture (tracer.py) -> Graph IR (graph.py) ->
dynamic sizes (dynamic.py) -> joint forward/backward + partition (aot.py) -> passes
(passes.py) -> fusion into Kernels (fusion.py, kernel.py) -> C code (codegen_c.py, cmath.py)
-> build and disk cache (build.py) -> runtime (buffers.py, threads.py); or the numpy backend
(Graph.compile_python). pipeline.py runs them as one list of named stages (STAGES); api.py
replays the variants they make; explain.py and check.py say what happened.
"""
import functools
import os

# OpenMP threads of generated kernels sleep between kernels instead of spinning: spinning
# threads starve NumPy's BLAS threads on the same cores (measured: a GPT training step ran
# 4x slower with the default spin policy). Must be set before libgomp is first loaded.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import config  # noqa: F401
from .api import CompiledFunction, reset  # noqa: F401
from .tracer import GraphBreakError  # noqa: F401
from .explain import explain, show_code  # noqa: F401


def compile(model=None, *, fullgraph=False, dynamic=None, backend="c", mode=None,
            options=None):
    """Compile a function or Module (also usable as ``@ember.compile(...)``).

    backend: "c" (fused C kernels, built with the system compiler, cached on disk) or
    "numpy" (the graph replayed as Python calling NumPy). `fullgraph=True` raises on a
    graph break instead of running that call eagerly. `dynamic`: None retraces a size that
    changed as symbolic; True treats sizes as symbolic from the start; False never.
    options: {"check": True} compares each compiled node with eager execution.

    >>> f = ember.compile(lambda x: (x * 2).relu())
    >>> f(ember.ones(3))
    tensor([2., 2., 2.])
    """
    def wrap(m):
        from ..nn.modules.module import Module
        if isinstance(m, Module):
            return OptimizedModule(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                   mode=mode, options=options)
        cf = CompiledFunction(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                              mode=mode, options=options)
        return functools.wraps(m)(cf) if hasattr(m, "__name__") else cf
    return wrap if model is None else wrap(model)


def disable(fn=None, recursive=True):
    """Run `fn` eagerly even when called inside a compiled function: the trace records one
    opaque call to it, made again at each replay.

    >>> @ember.compiler.disable
    ... def log_stats(x): print(x.mean())
    """
    if fn is None:
        return lambda f: disable(f, recursive)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ..autograd.grad_mode import state
        from .tracer import Tracer
        tracer = next((m for m in reversed(state.modes) if isinstance(m, Tracer)), None)
        if tracer is None or tracer.broken:
            return fn(*args, **kwargs)
        saved = state.modes
        state.modes = tuple(m for m in saved if m is not tracer)
        try:
            return tracer.opaque_call(fn, args, kwargs)
        finally:
            state.modes = saved
    wrapper._ember_disabled = True
    return wrapper


def _module_class():
    from ..nn.modules.module import Module

    class OptimizedModule(Module):
        """A compiled Module: holds the original as `_orig_mod` (so parameters, state_dict
        and training flags are the original's) and runs its forward compiled."""

        def __init__(self, mod, **kw):
            super().__init__()
            self._orig_mod = mod
            self.__dict__["_compiled"] = CompiledFunction(mod, module=mod, **kw)
            self._compiled.__name__ = type(mod).__name__

        def forward(self, *args, **kwargs):
            return self._compiled(*args, **kwargs)

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._modules["_orig_mod"], name)
    return OptimizedModule


class _LazyModuleClass:
    cls = None


def OptimizedModule(mod, **kw):
    if _LazyModuleClass.cls is None:
        _LazyModuleClass.cls = _module_class()
    return _LazyModuleClass.cls(mod, **kw)
