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
(Graph.compile_python). pipeline.py runs them as one list of named stages (STAGES) over a
Program (program.py); api.py replays the variants they make, effects.py redoes their Python
side effects, segments.py splits a function at its graph breaks; explain.py and check.py say
what happened.
"""
import os

# OpenMP threads of generated kernels sleep between kernels instead of spinning: spinning
# threads starve NumPy's BLAS threads on the same cores (measured: a GPT training step ran
# 4x slower with the default spin policy). Must be set before libgomp is first loaded.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import config  # noqa: F401
from .api import CompiledFunction, reset  # noqa: F401
from .tracer import GraphBreakError  # noqa: F401
from .frontend import compile, disable, OptimizedModule  # noqa: F401
from .explain import explain, show_code  # noqa: F401
from .dynamic import mark_dynamic  # noqa: F401
from . import eager  # noqa: F401  (plugs the fused eager kernels into the composite ops)
from . import cast_kernels  # noqa: E402
cast_kernels.install()     # C float32 <-> bfloat16/float16 conversions for core/lowp_cast
