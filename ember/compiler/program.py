"""What the compiler's stages work on and what they make: a Program (one call being
compiled, and every stage's product so far) and the Variant its last stage builds (one
compiled specialisation: its guards, its run function, what explain() reports).

`Program.verify()` checks the program between stages (`config.verify_stages`, on in the
tests): each graph well formed and the last stage's product present. The stages themselves
are pipeline.py's list STAGES.
"""
from ..autograd.grad_mode import state as _grad_state


class ProgramError(RuntimeError):
    """A stage left the program malformed (a bug in ember's compiler)."""


class Variant:
    """One compiled specialisation: its guards, how to run it, and what explain() reports."""

    def __init__(self, guards, run=None, eager=False):
        self.guards = guards
        self.run = run
        self.eager = eager
        self.graphs = {}            # name -> Graph ("forward", "backward" or "graph")
        self.breaks = []
        self.saved = []
        self.recomputed = []
        self.pass_stats = {}
        self.kernels = []           # fused kernels (C backend)
        self.kernel_sources = []    # their C source (show_code)
        self.planned_peak_bytes = None
        self.op_count = 0
        self.backward_note = None
        self.capture = None         # the trace it came from (for dynamic sizes)
        self.check_fn = None        # check mode: the forward run function and its inputs
        self.check_extract = self.check_lifted = self.check_syms = None
        self.dynamic = []           # its symbolic sizes, in words
        self.effects = []           # the Python side effects it redoes, in words
        self.root = None            # graph breaks: the first Segment (segments.py)
        self.stats = None           # and what its replays did (segments.Stats)
        self.grad = False


class Program:
    """One call being compiled, and everything the stages have produced for it so far."""

    def __init__(self, compiled, args, kwargs, unify_with=None):
        self.compiled = compiled    # the CompiledFunction: fn, backend, module, fullgraph
        self.args, self.kwargs = args, kwargs
        self.unify_with = unify_with   # a variant whose capture a size change may generalise
        self.done = []              # (stage name, summary) of each stage run, in order
        self._running = None        # the stage running now
        self.skipped = {}           # stage name -> why it did not apply
        # capture
        self.flat = None            # [(path, tensor)] of every tensor in args and kwargs
        self.tracer = None
        self.graph = None           # the traced graph (the joint one once the backward ran)
        self.result = None          # the call's result, computed eagerly while tracing
        self.struct = None          # the output structure, tensors replaced by slots
        self.out_nodes = []         # the output tensors' nodes
        self.breaks = []            # graph breaks: the call then runs eagerly
        self.effects = []           # Python side effects (effects.Effect) redone at replay
        self.segment_records = None  # graph breaks split the trace: its segments' records
        self.split_blocked = None   # why a trace with graph breaks was not split
        self.input_order = []       # the paths of the traced inputs, in order
        self.effect_values = []     # their new values (tensors in them are graph outputs)
        # backward_capture
        self.joint = None           # the gradients' nodes, or {"failed": why}
        # unify
        self.capture = None         # the trace as a Capture, kept for later unification
        self.unified = False        # whether it generalises unify_with's (symbolic sizes)
        # guards
        self.guards = None
        # partition
        self.graphs = {}            # "graph", or "forward" and "backward" -> Graph
        self.n_saved = 0
        self.saved, self.recomputed = [], []
        self.op_count = 0
        self.backward_note = None   # why the backward replays eagerly, if it does
        # passes
        self.pass_stats = {}
        # fusion, codegen, build, buffer_plan (per graph name)
        self.kernel_plans = {}      # fusion.KernelPlan
        self.sources = {}           # the C source of each kernel
        self.libraries = {}         # the loaded KernelFn of each kernel
        self.fallback = {}          # why a graph runs on the numpy backend after all
        self.runs = {}              # run(inputs, lifted, syms)
        self.kernels, self.planned_peak_bytes = [], None
        # replay
        self.variant = None

    def traced_out(self):
        """What the graph returns: the call's result, and the side effects' new values."""
        return (self.result, tuple(self.effect_values)) if self.effects else self.result

    def skip(self, why):
        """What a stage that does not apply returns."""
        self.skipped[self._running] = why
        return f"skipped: {why}"

    def end_trace(self):
        """Leave the tracer capture entered (backward_capture, or an error, ends it)."""
        if self.tracer is not None and any(m is self.tracer for m in _grad_state.modes):
            self.tracer.__exit__(None, None, None)

    def graph_text(self):
        """The program's graphs printed as Python (the traced one before partition)."""
        if self.graphs:
            return "\n".join(g.python_source(name) for name, g in self.graphs.items())
        if self.graph is None:
            return ""
        src = self.graph.python_source()
        if src.endswith("\n    return None"):       # partition adds the output node
            names = [n.name for n in self.out_nodes]
            src = src[:-len("None")] + "(" + ", ".join(names) + \
                ("," if len(names) == 1 else "") + ")  # the outputs"
        return src

    def python_replay(self):
        """Why the graphs replay as Python over NumPy instead of C kernels (None: C)."""
        if self.breaks:
            return "graph break"
        if self.backward_note:
            return "backward not captured: the graph replays op by op under eager autograd"
        if self.compiled.backend == "numpy":
            return "numpy backend"
        return None

    # ---- checking ----
    def verify(self):
        """Check the program after the stages run so far: every graph well formed (each node
        reads only values defined before it, unique names, the output last, inputs and
        lifted tensors numbered in order) and the last stage's product present. Raises
        ProgramError naming the stage, the graph and the node."""
        stage = self.done[-1][0] if self.done else "(no stage)"
        try:
            if self.done and stage not in self.skipped:
                _check_product(self, stage)
            graphs = self.graphs or ({"traced": self.graph} if self.graph is not None
                                     else {})
            for gname, g in graphs.items():
                _check_graph(g, gname, final=bool(self.graphs), stage=stage)
        except _Bad as e:
            raise ProgramError(f"ember.compile: the program is malformed after stage "
                               f"{stage!r}: {e}") from None
        return True


class _Bad(Exception):
    pass


def _check_graph(g, gname, final, stage):
    seen, names = set(), set()
    for i, n in enumerate(g.nodes):
        if n.name in names:
            raise _Bad(f"{gname} graph: two nodes are named {n.name!r}")
        names.add(n.name)
        for x in n.inputs():
            if id(x) not in seen:
                where = "defined after it" if any(x is m for m in g.nodes) else \
                    "not a node of the graph"
                raise _Bad(f"{gname} graph: node {n.name!r} reads {x.name!r}, which is "
                           f"{where}")
        if n.kind == "output" and i != len(g.nodes) - 1:
            raise _Bad(f"{gname} graph: the output node is not the last node")
        seen.add(id(n))
    if final and g.output() is None:
        raise _Bad(f"{gname} graph: no output node")
    if stage in ("capture", "backward_capture", "unify", "guards"):
        return            # inputs and lifted tensors are numbered by partition and passes
    for kind, nodes in (("input", g.inputs()), ("lifted", g.lifted())):
        for k, n in enumerate(nodes):
            if n.index != k:
                raise _Bad(f"{gname} graph: {kind} {n.name!r} has index {n.index}, "
                           f"expected {k}")


def _check_product(p, stage):
    """Raise _Bad when `stage` (run, not skipped) left its product missing."""
    def need(ok, what):
        if not ok:
            raise _Bad(f"stage {stage!r} did not produce {what}")
    in_graph = set(id(n) for n in p.graph.nodes) if p.graph is not None else set()
    if stage == "capture":
        need(p.graph is not None, "a graph")
        if not p.breaks:
            for n in p.out_nodes:
                need(id(n) in in_graph, f"output {n.name!r} in its graph")
    elif stage == "backward_capture":
        need(p.joint is not None, "the backward's nodes")
        for n in list(p.joint.get("tangent_nodes", ())) + [
                g for g in p.joint.get("grad_nodes", ()) if g is not None]:
            need(id(n) in in_graph, f"backward node {n.name!r} in the graph")
    elif stage == "unify":
        need(p.capture is not None, "a capture")
    elif stage == "guards":
        need(p.guards is not None, "guards")
    elif stage in ("partition", "passes"):
        need(p.graphs, "graphs")
    elif stage == "fusion":
        need(set(p.kernel_plans) == set(p.graphs), "a kernel plan for every graph")
    elif stage == "codegen":
        for name in p.graphs:
            need(name in p.sources or name in p.runs, f"code for the {name} graph")
    elif stage == "build":
        for name in p.graphs:
            need(name in p.libraries or name in p.fallback, f"libraries for {name}")
    elif stage == "buffer_plan":
        for name in p.graphs:
            need(callable(p.runs.get(name)), f"a run function for the {name} graph")
    elif stage == "replay":
        need(p.variant is not None and (p.variant.eager or callable(p.variant.run)),
             "a variant that runs")
