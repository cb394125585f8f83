"""The compiler as one named pipeline: what ember.compile does to a call is the list STAGES,
run top to bottom over one Program.

    capture -> backward_capture -> unify -> guards -> partition -> passes -> fusion
            -> codegen -> build -> buffer_plan -> replay

A Program (program.py) holds the call being compiled and everything the stages produce
(graphs, guards, kernel plans, sources, libraries, replay functions). A stage that does not
apply (no backward for inference, no kernels on the numpy backend, nothing after a graph
break) says why and passes. Only compilation runs the list: the Variant the last stage
makes replays by itself (its guards, then its run function), so a call after the first
never comes here.

The guards come after the capture, not before it: they guard what the trace read (every
lifted tensor) and the sizes `unify` made symbolic.

`config.verify_stages` (on in the tests) runs `Program.verify()` after every stage;
EMBER_LOGS=stages logs each stage's name and what it produced (graphs printed as Python).
"""
from ..autograd.grad_mode import state as _grad_state, no_grad
from . import config, passes, aot, effects
from .config import log, logs_on
from .tracer import Tracer
from .guards import guards_for_call
from .dynamic import Capture, unify as unify_captures
from .runtime import flatten, slots, rebuilder, extractor, sym_reader
from .program import Program, Variant, ProgramError  # noqa: F401  (ProgramError: as before)


# ---------------------------------------------------------------- the stages
def capture(p):
    """Run the function under the Tracer: its forward graph and (computed eagerly as it
    goes) the call's result. The tracer stays on for backward_capture."""
    cf = p.compiled
    p.flat = flatten(p.args, p.kwargs)
    tracer = p.tracer = Tracer(cf._lifted_names(), fullgraph=cf.fullgraph,
                               split=not cf.fullgraph and config.split_graph_breaks)
    p.graph = tracer.graph
    tracer.__enter__()
    for path, t in p.flat:
        if tracer.known(t) is None:
            tracer.add_input(t, _input_name(path, cf))
            p.input_order.append(path)
    tracer.watch = effects.watch_for(cf, p.args, p.kwargs)
    p.result = cf.fn(*p.args, **p.kwargs)
    if tracer.segments:
        # graph breaks split the trace (segments.py); else, the whole call runs eagerly
        tracer.close_segment()
        p.breaks = list(tracer.breaks)
        from .segments import not_worth_splitting
        tracer.split_blocked = tracer.split_blocked or (not tracer.broken and
                                                        not_worth_splitting(cf, tracer))
        if not tracer.broken and not tracer.split_blocked:
            p.segment_records = tracer.segments
            return f"graph breaks ({len(p.breaks)}): {len(tracer.segments)} segments; " + \
                "; ".join(str(b) for b in p.breaks)
        p.split_blocked = tracer.split_blocked
    if not tracer.broken:
        effects.find(p)
    if tracer.broken:
        p.breaks = list(tracer.breaks)
        return f"graph break ({len(p.breaks)}): " + "; ".join(str(b) for b in p.breaks)
    p.struct = slots(tracer, p.traced_out(), p.out_nodes)
    g = p.graph
    return f"{len(g.calls())} ops, {len(g.inputs())} inputs, {len(g.lifted())} lifted " \
        f"tensors" + (f", {len(p.effects)} side effects" if p.effects else "")


def capture_backward(p):
    """Training: run autograd's backward from the outputs over the trace, recording the
    gradient computation into the same graph (phase "bwd": the joint graph)."""
    try:
        if p.breaks:
            return p.skip("graph break")
        if not _grad_state.enabled:
            return p.skip("grad mode is off")
        if p.tracer.has_backward:
            return p.skip("the function runs its own backward (captured with the forward)")
        p.joint = aot.trace_backward(p.tracer, p.traced_out(), p.flat)
        if p.joint is None:
            return p.skip("no output requires grad")
    finally:
        p.end_trace()
    if "failed" in p.joint:
        return f"not captured ({p.joint['failed']}): the forward replays with eager autograd"
    n_bwd = sum(1 for n in p.graph.calls() if n.phase == "bwd")
    n_grads = sum(1 for g in p.joint["grad_nodes"] if g is not None)
    return f"{n_bwd} backward ops, {n_grads} gradients"


def unify(p):
    """Make the trace a Capture; after a size change, unify it with the earlier one so that
    one graph with symbolic sizes serves both. The later stages work on a copy."""
    if p.breaks:
        return p.skip("graph break")
    tracer = p.tracer
    inputs = [n for n in tracer.graph.nodes if n.kind == "input" and n.phase == "fwd"]
    path_of = {id(tracer.proxies.get(id(t))): path for path, t in p.flat}
    cap = Capture(tracer.graph, p.struct, p.out_nodes, [path_of[id(n)] for n in inputs],
                  [tuple(n.meta[0]) for n in inputs], _joint_positions(p.joint, inputs,
                                                                      tracer))
    general = None
    if p.unify_with is not None:
        general = unify_captures(p.unify_with.capture, cap)
    p.capture = general if general is not None else cap
    p.unified = general is not None
    work = p.capture.clone()
    p.graph, p.out_nodes, p.joint = work.graph, work.out_nodes, work.joint
    if general is not None:
        return "symbolic sizes: " + ", ".join(_symbolic(general))
    if p.unify_with is not None:
        return "static sizes (the two traces do not unify)"
    return "static sizes"


def guards(p):
    """What a later call must match to replay this variant."""
    cf = p.compiled
    lifted = p.tracer.graph.lifted() if p.segment_records is None else \
        [n for r in p.segment_records for n in r.graph.lifted()]
    p.guards = guards_for_call(p.args, p.kwargs, cf._arg_name, cf.module, lifted, p.capture)
    plain = [e for e in p.effects if e.plain]
    for e in plain:
        # a Python value the call set is replayed as that value: only while the place
        # holds what it held when traced (a counter recompiles instead of freezing)
        effects.guard_old_value(p.guards, e)
    if plain:
        p.guards.compile()
    kinds = {}
    for g in p.guards.guards:
        kinds[g.kind] = kinds.get(g.kind, 0) + 1
    return f"{len(p.guards.guards)} guards (" + ", ".join(
        f"{k} {n}" for k, n in kinds.items()) + ")"


def partition(p):
    """Split the joint graph into a forward graph (which also returns what the backward
    saves) and a backward graph; an inference graph just gets its output node."""
    if p.breaks:
        return p.skip("graph break")
    graph, joint = p.graph, p.joint
    p.op_count = len(graph.calls())
    if joint is None or "failed" in joint:
        graph.add("output", "output", args=(tuple(p.out_nodes),))
        p.graphs["graph"] = graph
        if joint is not None:
            p.backward_note = f"backward not captured ({joint['failed']}): the forward " \
                              "replays with eager autograd"
        return "one graph (no backward to split off)"
    n_inputs = sum(1 for n in graph.nodes if n.kind == "input" and n.phase == "fwd")
    fwd_g, bwd_g, saved, p.recomputed = aot.partition(
        graph, n_inputs, p.out_nodes, joint["tangent_nodes"], joint["grad_nodes"])
    p.graphs["forward"], p.graphs["backward"] = fwd_g, bwd_g
    p.n_saved = len(saved)
    return (f"forward {len(fwd_g.calls())} ops, backward {len(bwd_g.calls())} ops; "
            f"{len(saved)} saved, {len(p.recomputed)} recomputed in backward")


def run_passes(p):
    """Constant folding, CSE and DCE (passes.PIPELINE) on each graph."""
    if p.breaks:
        return p.skip("graph break")
    if "backward" in p.graphs:
        fwd_g, bwd_g = p.graphs["forward"], p.graphs["backward"]
        passes.run_pipeline(bwd_g)
        aot.drop_unused_saved(fwd_g, bwd_g, p.n_saved)   # DCE in backward freed some
        passes.run_pipeline(fwd_g, p.pass_stats)
        p.saved = [f"{n.name}: {n.meta[1].name if n.meta else '?'}"
                   f"{list(n.meta[0]) if n.meta else ''}" for n in fwd_g.output().args[0][1]]
    else:
        passes.run_pipeline(p.graphs["graph"], p.pass_stats)
    return ", ".join(f"{k} {n}" for k, n in p.pass_stats.items())


def plan_fusion(p):
    """C backend: group each graph's pointwise ops and row reductions into kernels."""
    why = p.python_replay()
    if why:
        return p.skip(why)
    from . import fusion
    lines = []
    for name, g in p.graphs.items():
        kp = p.kernel_plans[name] = fusion.plan_kernels(
            g, 0 if p.compiled.mode == "reduce-overhead" else None)
        groups = [(b[0], grp) for b, grp in zip(kp.built, kp.groups) if b[0].outputs]
        lines.append(f"{name}: {len(kp.kernels)} kernels" + "".join(
            f"\n  kernel_{i}: " + ", ".join(m.opname.split(".")[-1] for m in grp.members)
            for i, (_, grp) in enumerate(groups)))
    return "\n".join(lines)


def codegen(p):
    """The C source of each kernel; on the numpy backend, each graph's Python replay."""
    if p.breaks:
        return p.skip("graph break")
    why = p.python_replay()
    parts = []
    for name, g in p.graphs.items():
        if why:
            run = p.runs[name] = g.compile_python()
            parts.append(f"{name}: Python, {run.source.count(chr(10)) + 1} lines")
            if why == "numpy backend" and p.compiled.mode == "reduce-overhead":
                from . import replay
                p.runs[name] = replay.wrap_run(run, g, name=name, owner=p.compiled)
            continue
        from .codegen_c import generate_function
        src = p.sources[name] = [generate_function(k, f"kernel_{i}")
                                 for i, k in enumerate(p.kernel_plans[name].kernels)]
        parts.append(f"{name}: C, {len(src)} kernels, "
                     f"{sum(s.count(chr(10)) + 1 for s in src)} lines")
    return "; ".join(parts)


def build_libraries(p):
    """Build each graph's kernels into one shared library (or find it in the memory or disk
    cache). Without a working C compiler the graph falls back to the numpy backend."""
    why = p.python_replay()
    if why:
        return p.skip(why)
    from . import build
    parts = []
    for name, kp in p.kernel_plans.items():
        if not kp.kernels:
            p.libraries[name] = []
            parts.append(f"{name}: nothing to build")
            continue
        before = dict(build.stats)
        try:
            p.libraries[name] = build.load_kernels(kp.kernels)
        except (build.CompilerUnavailable, build.CompileError) as e:
            p.fallback[name] = str(e).splitlines()[0]
            p.compiled._backend_unavailable(p.fallback[name])
            p.runs[name] = p.graphs[name].compile_python()
            p.sources.pop(name, None)
            parts.append(f"{name}: C backend unavailable, numpy backend instead")
            continue
        cache = "miss, compiled" if build.stats["compiled"] > before["compiled"] else \
            "disk cache hit" if build.stats["disk_hits"] > before["disk_hits"] else \
            "memory cache hit"
        parts.append(f"{name}: {len(kp.kernels)} kernels, {cache}")
    return "; ".join(parts)


def buffer_plan(p):
    """Plan which kernel outputs go back to the buffer pool after their last reader, and
    write each graph's replay function around its kernel calls."""
    why = p.python_replay()
    if why:
        return p.skip(why)
    from . import fusion
    parts = []
    for name, kp in p.kernel_plans.items():
        if name in p.fallback:
            parts.append(f"{name}: numpy backend")
            continue
        run = p.runs[name] = fusion.assemble(p.graphs[name], kp, p.libraries[name])
        if p.compiled.mode == "reduce-overhead":      # one prebuilt plan (replay.py)
            from . import replay
            p.runs[name] = replay.wrap_run(run, p.graphs[name], kp, p.libraries[name], name,
                                            owner=p.compiled)
        p.kernels.extend(run.kernels)
        p.planned_peak_bytes = run.planned_peak_bytes
        parts.append(f"{name}: {run.pooled} buffers pooled, planned peak "
                     f"{run.planned_peak_bytes} bytes")
    return "; ".join(parts)


def run_autotune(p):
    """mode="max-autotune": time each candidate configuration (autotune.py) on this call's
    inputs and keep the fastest for each graph."""
    from . import autotune
    if not autotune.enabled(p.compiled):
        return p.skip("mode is not max-autotune")
    why = p.python_replay()
    if why:
        return p.skip(why)
    return autotune.tune(p)


def replay(p):
    """The Variant: guards, and one function from the call's arguments to its outputs (the
    forward/backward pair behind an autograd Function when training), which then redoes the
    call's Python side effects with the new values."""
    if p.segment_records is not None:
        return _replay_segments(p)
    summary = _replay(p)
    v = p.variant
    if p.effects and not v.eager:
        run, found = v.run, p.effects
        v.effects = [e.where for e in found]

        def run_with_effects(args, kwargs):
            result, values = run(args, kwargs)
            effects.apply(found, values)
            return result
        v.run = run_with_effects
        summary += f"; then {len(found)} side effects: " + ", ".join(v.effects)
    return summary


def _replay_segments(p):
    """A variant whose call runs the function under segments.ServeMode."""
    from . import segments
    v = p.variant = Variant(p.guards)
    v.breaks = p.breaks
    return segments.attach(v, p, extractor(p.input_order), compile_segment)


def compile_segment(cf, graph, out_nodes, grad):
    """Compile one segment of a split trace (stages partition to buffer_plan; the passes
    are left out: every value is an output, and CSE would merge values the Python code
    holds apart). With autograd on, the graph replays op by op under eager autograd.
    Returns (run(inputs, lifted, syms), its graph, its fused kernels)."""
    p = Program(cf, (), {})
    p.graph, p.out_nodes = graph, out_nodes
    if grad:
        p.backward_note = "a segment of a function with graph breaks, under autograd"
    for name, stage in STAGES:
        if name in ("partition", "fusion", "codegen", "build", "buffer_plan"):
            p._running = name
            stage(p)
    return p.runs["graph"], p.graphs["graph"], list(p.kernels)


def _replay(p):
    v = p.variant = Variant(p.guards, eager=bool(p.breaks))
    if p.breaks:
        v.breaks, v.split_blocked = p.breaks, p.split_blocked
        return "runs eagerly under its guards (graph break)"
    cap = p.capture
    rebuild, extract, syms_of = (rebuilder(cap.struct), extractor(cap.input_paths),
                                 sym_reader(cap.syms))
    v.graphs, v.saved, v.recomputed = dict(p.graphs), p.saved, p.recomputed
    v.pass_stats, v.op_count, v.backward_note = p.pass_stats, p.op_count, p.backward_note
    v.kernels, v.planned_peak_bytes = p.kernels, p.planned_peak_bytes
    v.kernel_sources = [s for name in p.graphs for s in p.sources.get(name, ())]
    v.capture, v.dynamic = cap, _symbolic(cap)
    if "graph" in p.graphs:
        fn = p.runs["graph"]
        lifted = [n.target for n in p.graphs["graph"].lifted()]
        if p.backward_note:
            # autograd records the replayed ops, so the graph runs op by op in Python
            def run(args, kwargs):
                flat = extract(args, kwargs)
                return rebuild(fn(flat, lifted, syms_of(flat)))
            v.run = run
            return "replays the graph under eager autograd"
        v.check_fn, v.check_extract, v.check_lifted, v.check_syms = \
            fn, extract, lifted, syms_of

        def run(args, kwargs):
            flat = extract(args, kwargs)
            with no_grad():
                outs = fn(flat, lifted, syms_of(flat))
            return rebuild(outs)
        v.run = run
        return "inference: replays the graph under no_grad"
    joint, fwd_g, bwd_g = p.joint, p.graphs["forward"], p.graphs["backward"]
    fwd_fn, bwd_fn = p.runs["forward"], p.runs["backward"]
    fwd_lifted = [n.target for n in fwd_g.lifted()]
    bwd_lifted = [n.target for n in bwd_g.lifted()]
    v.check_fn, v.check_extract, v.check_lifted, v.check_syms = \
        fwd_fn, extract, fwd_lifted, syms_of
    out_meta = [(n.meta[1], bool(n.meta[3])) if n.meta else (None, False)
                for n in p.out_nodes]

    def fwd_run(inputs, syms):
        outs, saved_vals = fwd_fn(inputs, fwd_lifted, syms)
        return list(outs), saved_vals

    def bwd_run(saved_and_tangents, syms):
        return bwd_fn(saved_and_tangents, bwd_lifted, syms)
    n_inputs = len(cap.input_paths)
    runner = aot.make_autograd_runner(fwd_run, bwd_run, n_inputs, joint["diff_positions"],
                                      joint["lifted_diff"], out_meta,
                                      name=f"Compiled_{p.compiled.__name__}",
                                      private_saved=p.compiled.mode == "reduce-overhead")

    def run(args, kwargs):
        flat = extract(args, kwargs)
        return rebuild(runner(flat, syms_of(flat)))
    v.run = run
    return "training: forward and backward behind one autograd Function"


STAGES = [
    ("capture", capture),
    ("backward_capture", capture_backward),
    ("unify", unify),
    ("guards", guards),
    ("partition", partition),
    ("passes", run_passes),
    ("fusion", plan_fusion),
    ("codegen", codegen),
    ("build", build_libraries),
    ("buffer_plan", buffer_plan),
    ("autotune", run_autotune),
    ("replay", replay),
]

# EMBER_LOGS=stages prints the graphs after these stages (only then: printing costs time)
PRINTS_GRAPHS = ("capture", "passes")


def compile_program(compiled, args, kwargs, unify_with=None, stages=None):
    """Run `stages` (default STAGES) over a new Program for this call of CompiledFunction
    `compiled`; returns the Program (its `variant` is what replays, its `result` the call's
    result). `config.verify_stages`: Program.verify() after each stage."""
    stages = STAGES if stages is None else stages
    p = Program(compiled, args, kwargs, unify_with)
    show = logs_on("stages")
    try:
        for i, (name, stage) in enumerate(stages):
            p._running = name
            summary = stage(p)
            p.done.append((name, summary))
            if config.verify_stages:
                p.verify()
            if show:
                if name in PRINTS_GRAPHS and name not in p.skipped:
                    summary += "\n" + p.graph_text()
                log.warning("%s: stage %d/%d %s: %s", compiled.__name__, i + 1, len(stages),
                            name, summary.replace("\n", "\n    "))
    finally:
        p.end_trace()
    return p


# ---------------------------------------------------------------- helpers of the stages
def _symbolic(cap):
    """The capture's symbolic sizes, in words (``args[0].shape[0]``)."""
    return [f"{cap.input_paths[k]}.shape[{d}]" for k, d in cap.syms]


def _input_name(path, cf):
    if path.startswith("args["):
        inner = path[5:].split("]")[0]
        if inner.isdigit():
            name = cf._arg_name(int(inner))
            return name + path[5 + len(inner) + 1:].replace("[", "_").replace("]", "")
    return path.replace("kwargs[", "").replace("[", "_").replace("]", "").replace("'", "")


def _joint_positions(joint, inputs, tracer):
    """The joint record with each differentiable input given as its input position."""
    if joint is None or "failed" in joint:
        return joint
    ids = [id(n) for n in inputs]
    return dict(joint, diff_positions=[ids.index(id(tracer.proxies[id(t)]))
                                       for t in joint["diff_ins"]], diff_ins=None)
