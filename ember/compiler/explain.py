"""explain() and show_code(): what the compiler did with a function, in words.

    report = ember.compiler.explain(f)(x)
    print(report)     # graphs and op counts, breaks with file:line, guards, recompiles,
                      # saved activations, fused kernels, planned peak bytes
"""


class ExplainOutput:
    """The report of `explain(fn)(*args)`; `str()` prints it."""

    def __init__(self, cf):
        self.compiled = cf
        self.variants = [v for v in cf.variants]
        graphs = [(name, g) for v in self.variants for name, g in _graphs_of(v)]
        self.graphs = [g for _, g in graphs]
        self.graph_count = len(self.graphs)
        self.op_counts = [sum(1 for n in g.nodes if n.kind == "call") for g in self.graphs]
        self.graph_breaks = list(cf.breaks)
        self.break_reasons = [str(b) for b in cf.breaks]
        self.recompile_reasons = list(cf.recompiles)
        self.guards = [g for v in self.variants for g in v.guards.guards]

    def __str__(self):
        cf = self.compiled
        lines = [f"ember.compiler.explain: {cf.__name__} (backend {cf.backend!r})",
                 f"Graph count: {self.graph_count}",
                 f"Graph break count: {len(self.graph_breaks)}",
                 f"Op count: {sum(self.op_counts)}"]
        for i, v in enumerate(self.variants):
            if getattr(v, "root", None) is not None:
                lines.append(f"\nVariant {i}: split at its graph breaks into compiled "
                             "segments; the function's Python runs between them")
                lines.extend(_segment_lines(v))
                lines.extend(_guard_lines(v))
                continue
            lines.append(f"\nVariant {i}:" + (" runs eagerly (graph break)" if v.eager else ""))
            split_blocked = getattr(v, "split_blocked", None)
            if v.eager and split_blocked:
                lines.append(f"  not split into segments: {split_blocked}")
            if getattr(v, "from_cache", None):
                lines.append(f"  loaded from the graph cache without tracing: {v.from_cache}")
            for gname, choice in (getattr(v, "autotune", None) or {}).items():
                lines.append(f"  max-autotune {gname}: threads={choice['threads']} (median "
                             "seconds per candidate: " + ", ".join(
                                 f"{k}: {t:.6f}" for k, t in choice["seconds"].items()) + ")")
            for b in v.breaks:
                lines.append(f"  Graph break at {b.source}: {b.reason}. Runs eagerly: the "
                             "call's result is exact; later calls with these guards run "
                             "eagerly too.")
            for name, g in v.graphs.items():
                n_ops = sum(1 for n in g.nodes if n.kind == "call")
                lines.append(f"  {name} graph: {n_ops} ops, {len(g.inputs())} inputs, "
                             f"{len(g.lifted())} lifted tensors")
            if getattr(v, "effects", None):
                lines.append("  Python side effects redone at every call, with the new "
                             "values: " + ", ".join(v.effects))
            if v.backward_note:
                lines.append("  " + v.backward_note)
            if v.pass_stats:
                lines.append("  passes: " + ", ".join(f"{k} {n}" for k, n in
                                                      v.pass_stats.items()))
            if v.saved:
                lines.append(f"  saved for backward ({len(v.saved)}): " + ", ".join(v.saved))
            if v.recomputed:
                lines.append(f"  recomputed in backward instead of saved: "
                             + ", ".join(v.recomputed))
            if v.kernels:
                lines.append(f"  fused kernels ({len(v.kernels)}):")
                for k in v.kernels:
                    lines.append(f"    {k}")
            if v.planned_peak_bytes is not None:
                lines.append(f"  planned peak of intermediate buffers: "
                             f"{v.planned_peak_bytes} bytes")
            lines.extend(_guard_lines(v))
        if self.recompile_reasons:
            lines.append("\nRecompiles:")
            for r in self.recompile_reasons:
                lines.append(f"  {r}")
        if cf.fell_back:
            lines.append(f"\nCache size limit reached: runs eagerly ({cf.fell_back})")
        return "\n".join(lines)

    __repr__ = __str__


def _guard_lines(v):
    lines = [f"  guards ({len(v.guards)}):"]
    for g in v.guards.guards:
        lines.append(f"    {g.source} == {g.expected!r}" if g.kind != "identity"
                     else f"    {g.source} is the same object")
    return lines


def _graphs_of(v):
    if getattr(v, "root", None) is not None:
        return [(f"segment_{k}", s.compiled_graph)
                for k, s in enumerate(v.root.all()) if s.run is not None]
    return list(v.graphs.items())


def _segment_lines(v):
    """The segment tree of a split variant, one segment a line, with its breaks."""
    lines, counter = [], [0]

    def walk(seg, depth, via):
        counter[0] += 1
        pad = "  " * (depth + 1)
        how = "no ops" if seg.run is None else \
            f"{seg.n_ops} ops, " + ("run eagerly under autograd, checked" if seg.grad else
                                    "nothing fused: run eagerly, checked"
                                    if seg.passthrough else
                                    f"compiled, {len(seg.kernels)} fused kernels"
                                    if seg.kernels else "compiled")
        lines.append(f"{pad}Segment {counter[0]}{via}: {how}")
        if seg.brk is None:
            return
        lines.append(f"{pad}  Graph break at {seg.brk.source}: {seg.brk.reason}; the "
                     f"statement runs in Python, then, by the value read "
                     f"({len(seg.children)} seen):")
        for key, child in seg.children.items():
            label = f" (after {key[0]} gave {_show_key(key)})"
            if child is None:
                lines.append(f"{pad}    rest runs eagerly{label}")
            else:
                walk(child, depth + 2, label)
    walk(v.root, 0, "")
    st = v.stats
    lines.append(f"  calls {st.calls}: segments run {st.segments_run}, ops checked against "
                 f"the record {st.served_ops} ({st.passthrough_ops} of them run eagerly), "
                 f"ops run eagerly off the record {st.eager_ops}, traces {st.traces}")
    for why in st.diverged[-3:]:
        lines.append(f"  a call left the segments: {why} (the rest ran eagerly)")
    return lines


def _show_key(key):
    import numpy as np
    what, shape, dtype, raw = key
    vals = np.frombuffer(raw, dtype=dtype).reshape(shape)
    text = np.array2string(vals, threshold=6, precision=4)
    return text if len(text) < 40 else text[:37] + "..."


def explain(fn, **compile_kwargs):
    """``explain(fn)(*args)`` compiles `fn` (unless it is compiled already), calls it with
    the arguments and returns an ExplainOutput describing what happened."""
    from .api import CompiledFunction
    from .frontend import compile as ember_compile

    def run(*args, **kwargs):
        cf = _compiled_of(fn)
        if cf is None:
            compiled = ember_compile(fn, **compile_kwargs)
            cf = _compiled_of(compiled)
            compiled(*args, **kwargs)
        else:
            cf(*args, **kwargs)
        return ExplainOutput(cf)
    return run


def _compiled_of(obj):
    from .api import CompiledFunction
    if isinstance(obj, CompiledFunction):
        return obj
    cf = getattr(obj, "_compiled", None)
    if isinstance(cf, CompiledFunction):
        return cf
    return None


def show_code(fn, *args, **kwargs):
    """Print (and return) the generated code of every graph of `fn` called with `args`: the
    C source of each fused kernel (with the ops it fused named in a comment), or the Python
    of the numpy backend."""
    report = explain(fn)(*args, **kwargs)
    parts = []
    for v in report.variants:
        for name, g in v.graphs.items():
            parts.append(f"# ---- {name} graph ----\n{g.python_source()}")
        sources = getattr(v, "kernel_sources", None)
        if not sources and getattr(v, "kernel_plans", None):
            # a variant loaded from the graph cache generates its sources only when asked
            from .codegen_c import generate_function
            sources = [generate_function(k, f"kernel_{i}") for kp in v.kernel_plans.values()
                       for i, k in enumerate(kp.kernels)]
        for k in sources or ():
            parts.append(k)
    text = "\n\n".join(parts)
    print(text)
    return text
