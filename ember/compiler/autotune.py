"""mode="max-autotune": try a few kernel configurations on the call's real inputs and keep the
fastest (the role of inductor's max_autotune).

The pipeline's `autotune` stage runs after buffer_plan, on the C backend only. For each graph
(the inference graph, or the forward and then the backward of a training step) it runs the
assembled replay function under every candidate configuration, `config.autotune_repeats`
times after one warm-up, and keeps the fastest median; the graph then always replays with
that configuration. The candidates come from `ember.compiler.config`:

    config.autotune_threads   OpenMP threads of the fused kernels (None: 1, 2, 4, ... up to
                              ember.get_num_threads())

A graph that changes state when it runs (in-place ops such as BatchNorm's running stats,
random ops such as dropout, opaque calls such as optimizer.step) is not tuned: running it
again would change the program's results. Each choice is logged with EMBER_LOGS=autotune
(and kept on the variant as `variant.autotune`, which explain() prints). Timings decide
only which configuration runs; every configuration computes the same values.
"""
import statistics
import time

from ..autograd.grad_mode import no_grad
from . import config, threads
from .config import log, logs_on

MODES = ("max-autotune", "max-autotune-no-cudagraphs")


def enabled(cf):
    return cf.mode in MODES or config.max_autotune


def candidates():
    """The configurations tried: dicts of knob -> value."""
    ts = config.autotune_threads
    if ts is None:
        n = max(1, threads.get_num_threads())
        ts, k = [], 1
        while k < n:
            ts.append(k)
            k *= 2
        ts.append(n)
    return [{"threads": int(t)} for t in dict.fromkeys(ts)]


def _why_not(graph):
    for n in graph.nodes:
        if n.kind != "call":
            continue
        if n.inplace:
            return f"{n.name} ({n.opname}) changes a tensor in place"
        if (n.op is not None and n.op.impure) or (n.opname or "").startswith(
                ("optimizer.", "ember.compiler.disabled")):
            return f"{n.name} ({n.opname}) is random or has effects"
    return None


def pinned(run, nthreads):
    """`run` with the fused kernels' thread count set to `nthreads` while it runs."""
    def run_pinned(*args):
        saved = threads._num_threads
        threads._num_threads = nthreads
        try:
            return run(*args)
        finally:
            threads._num_threads = saved
    run_pinned.kernels = getattr(run, "kernels", [])
    run_pinned.planned_peak_bytes = getattr(run, "planned_peak_bytes", None)
    run_pinned.pooled = getattr(run, "pooled", 0)
    run_pinned.autotuned = {"threads": nthreads}
    return run_pinned


def _time(run, args, repeats):
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        out = run(*args)
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _tune_one(p, name, args):
    """Choose the configuration of graph `name` given its run arguments; returns
    (choice dict, the output of the chosen run)."""
    run = p.runs[name]
    tried, best, best_out = {}, None, None
    for cand in candidates():
        t, out = _time(pinned(run, cand["threads"]), args, max(1, config.autotune_repeats))
        tried[cand["threads"]] = t
        if best is None or t < tried[best["threads"]]:
            best, best_out = cand, out
    p.runs[name] = pinned(run, best["threads"])
    choice = dict(best, seconds={k: round(v, 6) for k, v in tried.items()})
    p.autotune[name] = choice
    if logs_on("autotune"):
        log.warning("max-autotune %s %s: threads=%d (median %.3f ms; tried %s)",
                    p.compiled.__name__, name, best["threads"], 1e3 * tried[best["threads"]],
                    ", ".join(f"{k}: {1e3 * v:.3f} ms" for k, v in tried.items()))
    return choice, best_out


def tune(p):
    """The pipeline stage (see the module docstring); returns its summary."""
    from .runtime import extractor, sym_reader
    from ..ops.creation import ones
    p.autotune = {}
    cap = p.capture
    flat = extractor(cap.input_paths)(p.args, p.kwargs)
    syms = sym_reader(cap.syms)(flat)
    parts = []
    with no_grad():
        if "graph" in p.graphs:
            names = ["graph"]
        else:
            names = ["forward", "backward"]
        saved = None
        for name in names:
            g = p.graphs[name]
            why = _why_not(g)
            if name in p.fallback or why is not None:
                parts.append(f"{name}: not tuned ({why or 'numpy backend'})")
                if logs_on("autotune"):
                    log.warning("max-autotune %s %s: not tuned (%s)", p.compiled.__name__,
                                name, why or "numpy backend")
                if name == "forward":
                    break
                continue
            lifted = [n.target for n in g.lifted()]
            if name == "backward":
                outs, saved_vals = saved
                tangents = [ones(tuple(o.shape), dtype=m.meta[1])
                            for o, m in zip(outs, p.out_nodes) if m.meta and m.meta[3]]
                inputs = list(saved_vals) + tangents
            else:
                inputs = list(flat)
            choice, out = _tune_one(p, name, (inputs, lifted, syms))
            if name == "forward":
                saved = out
            parts.append(f"{name}: threads={choice['threads']}")
    return "; ".join(parts)
