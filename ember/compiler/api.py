"""ember.compile: capture on the first call, replay compiled variants behind their guards.

A compiled function keeps a list of variants. Each call checks the variants' guards in
order and replays the first that holds; when none does, it traces the function again
(a recompile, logged with the guard that failed) — until `config.cache_size_limit`
variants exist, after which it warns once and runs eagerly. A trace that hit a graph break
becomes an "eager" variant: calls that pass its guards run the function as written.
"""
import logging
import os
import sys
import warnings

from ..core.tensor import Tensor
from ..autograd.grad_mode import state as _grad_state, no_grad
from ..autograd import engine
from . import config
from .graph import map_nodes
from .tracer import Tracer, tensors_in, BackwardNotCaptured
from .guards import GuardSet, guard_value, guard_globals, guard_module, guard_lifted
from . import passes, aot
from .dynamic import Capture, unify

log = logging.getLogger("ember.compiler")
_LOGS = set(filter(None, os.environ.get("EMBER_LOGS", "").replace(" ", "").split(",")))
if _LOGS and not log.handlers:
    _h = logging.StreamHandler(sys.stderr)
    _h.setFormatter(logging.Formatter("[ember.compiler] %(message)s"))
    log.addHandler(_h)
    log.setLevel(logging.DEBUG)
    log.propagate = False


_ALIASES = {"breaks": "graph_breaks", "graph_breaks": "breaks"}


def logs_on(kind):
    return kind in _LOGS or _ALIASES.get(kind) in _LOGS or "all" in _LOGS


_ALL = []     # every compiled function, for reset()


def _flatten(args, kwargs):
    """[(path, tensor)] for every tensor in args/kwargs, in order."""
    out = []

    def walk(x, path):
        if isinstance(x, Tensor):
            out.append((path, x))
        elif type(x) in (tuple, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif type(x) is dict:
            for k, v in x.items():
                walk(v, f"{path}[{k!r}]")
    walk(args, "args")
    walk(kwargs, "kwargs")
    return out


def _extractor(paths):
    src = "def extract(args, kwargs):\n    return [" + ", ".join(paths) + "]\n"
    ns = {}
    exec(compile(src, "<ember extract>", "exec"), ns)
    return ns["extract"]


def _rebuilder(struct):
    """fn(flat_outputs) -> the user's output structure (struct holds ints for tensors)."""
    def build(x, flat):
        if type(x) is _Slot:
            return flat[x.i]
        if type(x) in (tuple, list):
            return type(x)(build(v, flat) for v in x)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(build(v, flat) for v in x))
        if type(x) is dict:
            return {k: build(v, flat) for k, v in x.items()}
        return x
    if type(struct) is _Slot:
        i = struct.i
        return lambda flat: flat[i]
    return lambda flat: build(struct, flat)


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return type(other) is _Slot and other.i == self.i

    def __hash__(self):
        return hash(("slot", self.i))


class Variant:
    """One compiled specialisation: its guards, and how to run it."""

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
        self.planned_peak_bytes = None
        self.op_count = 0
        self.backward_note = None
        self.capture = None         # the trace it came from (for dynamic sizes)
        self.check_fn = None        # check mode: the forward run function and its inputs
        self.check_extract = self.check_lifted = self.check_syms = None
        self.dynamic = []           # its symbolic sizes, in words


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
                return self._trace(args, kwargs, unify_with=base, reason=reason)
            self._recompiled(reason)
        return self._trace(args, kwargs)

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

    def _guards(self, args, kwargs, lifted_nodes, cap=None):
        gs = GuardSet()
        guard_globals(gs)
        dyn = {}
        if cap is not None:
            for k, d in cap.syms:
                dyn.setdefault(cap.input_paths[k], set()).add(d)
            for k, d, _ in cap.sym_equal:
                dyn.setdefault(cap.input_paths[k], set()).add(d)
        for i, a in enumerate(args):
            guard_value(gs, f"args[{i}]", self._arg_name(i), a, dyn)
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
        if self.module is not None:
            guard_module(gs, self.module)
        params = set(id(p) for p in self.module.parameters()) | set(
            id(b) for b in self.module.buffers()) if self.module is not None else set()
        others = [n for n in lifted_nodes if id(n.target) not in params]
        guard_lifted(gs, [n.target for n in others], [n.name for n in others])
        return gs.compile()

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

    def _trace(self, args, kwargs, unify_with=None, reason=None):
        flat = _flatten(args, kwargs)
        tracer = Tracer(self._lifted_names(), fullgraph=self.fullgraph)
        with tracer:
            for path, t in flat:
                if tracer.known(t) is None:
                    tracer.add_input(t, _input_name(path, self))
            result = self.fn(*args, **kwargs)
            out_nodes = []
            struct = _slots(tracer, result, out_nodes) if not tracer.broken else None
            # training: record the backward of the outputs too (phase "bwd")
            joint = None
            if not tracer.broken and _grad_state.enabled and not tracer.has_backward:
                joint = self._trace_backward(tracer, result, flat)
        lifted_nodes = tracer.graph.lifted()
        if tracer.broken:
            if reason is not None:
                self._recompiled(reason)
            v = Variant(self._guards(args, kwargs, lifted_nodes), eager=True)
            v.breaks = list(tracer.breaks)
            self.breaks.extend(tracer.breaks)
            if logs_on("breaks"):
                for b in tracer.breaks:
                    log.warning("graph break in %s: %s (runs eagerly)", self.__name__, b)
            self.variants.append(v)
            return result
        inputs = [n for n in tracer.graph.nodes if n.kind == "input" and n.phase == "fwd"]
        path_of = {id(tracer.proxies.get(id(t))): p for p, t in flat}
        cap = Capture(tracer.graph, struct, out_nodes, [path_of[id(n)] for n in inputs],
                      [tuple(n.meta[0]) for n in inputs], _joint_positions(joint, inputs,
                                                                          tracer))
        general = unify(unify_with.capture, cap) if unify_with is not None else None
        if general is not None:
            v = self._build(general.clone(), self._guards(args, kwargs, lifted_nodes, general))
            v.capture = general
            v.dynamic = [f"{general.input_paths[k]}.shape[{d}]" for k, d in general.syms]
            if logs_on("recompiles"):
                log.warning("%s: sizes %s are symbolic now", self.__name__,
                            ", ".join(v.dynamic))
            if self.dynamic is True:
                self.variants.remove(unify_with)     # the general one replaces it
            else:
                self._recompiled(reason)
            self.variants.append(v)
            return result
        if reason is not None:
            self._recompiled(reason)
        v = self._build(cap.clone(), self._guards(args, kwargs, lifted_nodes))
        v.capture = cap
        self.variants.append(v)
        return result

    def _trace_backward(self, tracer, result, flat):
        outs = tensors_in(result)
        diff_outs = [t for t in outs if t._requires_grad]
        if not diff_outs:
            return None
        for n in tracer.graph.nodes:
            if n.kind == "call" and n.opname.startswith("ember.compiler.disabled") and any(
                    i.meta is not None and i.meta[3] for i in n.inputs()):
                # its backward runs through ops the trace did not see (they ran eagerly)
                return {"failed": f"{n.opname} takes tensors that require grad"}
        input_nodes = tracer.graph.inputs()
        diff_ins = [t for _, t in flat if t._requires_grad and tracer.proxies.get(id(t))
                    in input_nodes]
        lifted_diff = [n.target for n in tracer.graph.lifted() if n.target._requires_grad]
        tracer.phase = "bwd"
        tangents, tangent_nodes = [], []
        for i, t in enumerate(diff_outs):
            g = _ones_like_detached(t)
            node = tracer.graph.add("input", f"tangent_{i}", index=None, phase="bwd")
            tracer._bind(g, node)
            tangents.append(g)
            tangent_nodes.append(node)
        leaves = diff_ins + lifted_diff
        try:
            grads = engine.run_backward(diff_outs, tangents, True, False, inputs=leaves,
                                        accumulate=False, allow_unused=True) if leaves else []
            grad_nodes = [tracer.node_of(g) if g is not None else None for g in grads]
        except Exception as e:
            # drop what the backward recorded; the forward replays with eager autograd (an
            # error the backward raises, a stale saved tensor say, then reaches the user
            # from their own backward call, as in eager mode)
            tracer.graph.nodes = [n for n in tracer.graph.nodes if n.phase == "fwd"]
            tracer.phase = "fwd"
            return {"failed": str(e) if isinstance(e, BackwardNotCaptured) else
                    f"{type(e).__name__}: {e}"}
        tracer.phase = "fwd"
        return dict(diff_outs=diff_outs, diff_ins=diff_ins, lifted_diff=lifted_diff,
                    tangent_nodes=tangent_nodes, grad_nodes=grad_nodes)

    def _build(self, cap, guards):
        """The runnable variant of a capture (its graph is consumed: pass a clone)."""
        graph, out_nodes, joint = cap.graph, cap.out_nodes, cap.joint
        rebuild = _rebuilder(cap.struct)
        extract = _extractor(cap.input_paths)
        syms_of = _sym_reader(cap.syms)
        v = Variant(guards)
        v.op_count = sum(1 for n in graph.nodes if n.kind == "call")
        if joint is None or "failed" in joint:
            graph.add("output", "output", args=(tuple(out_nodes),))
            passes.run_pipeline(graph, v.pass_stats)
            v.graphs["graph"] = graph
            lifted = [n.target for n in graph.lifted()]
            if joint is not None:
                # autograd records the replayed ops, so the graph runs op by op in Python
                v.backward_note = f"backward not captured ({joint['failed']}): the forward " \
                                  "replays with eager autograd"
                fn = graph.compile_python()

                def run(args, kwargs):
                    flat = extract(args, kwargs)
                    return rebuild(fn(flat, lifted, syms_of(flat)))
                v.run = run
                return v
            fn = self._backend(graph, v)
            v.check_fn, v.check_extract, v.check_lifted, v.check_syms = \
                fn, extract, lifted, syms_of

            def run(args, kwargs):
                flat = extract(args, kwargs)
                with no_grad():
                    outs = fn(flat, lifted, syms_of(flat))
                return rebuild(outs)
            v.run = run
            return v
        # joint forward/backward
        user_inputs = [n for n in graph.nodes if n.kind == "input" and n.phase == "fwd"]
        fwd_g, bwd_g, saved, recomputed = aot.partition(
            graph, len(user_inputs), out_nodes, joint["tangent_nodes"], joint["grad_nodes"])
        passes.run_pipeline(bwd_g)
        aot.drop_unused_saved(fwd_g, bwd_g, len(saved))
        passes.run_pipeline(fwd_g, v.pass_stats)
        v.graphs["forward"], v.graphs["backward"] = fwd_g, bwd_g
        v.saved = [f"{n.name}: {n.meta[1].name if n.meta else '?'}"
                   f"{list(n.meta[0]) if n.meta else ''}" for n in fwd_g.output().args[0][1]]
        v.recomputed = recomputed
        fwd_fn, bwd_fn = self._backend(fwd_g, v), self._backend(bwd_g, v)
        fwd_lifted = [n.target for n in fwd_g.lifted()]
        bwd_lifted = [n.target for n in bwd_g.lifted()]
        v.check_fn, v.check_extract, v.check_lifted, v.check_syms = \
            fwd_fn, extract, fwd_lifted, syms_of
        out_meta = [(n.meta[1], bool(n.meta[3])) if n.meta else (None, False)
                    for n in out_nodes]

        def fwd_run(inputs, syms):
            outs, saved_vals = fwd_fn(inputs, fwd_lifted, syms)
            return list(outs), saved_vals

        def bwd_run(saved_and_tangents, syms):
            return bwd_fn(saved_and_tangents, bwd_lifted, syms)
        runner = aot.make_autograd_runner(fwd_run, bwd_run, len(user_inputs),
                                          joint["diff_positions"], joint["lifted_diff"],
                                          out_meta, name=f"Compiled_{self.__name__}")

        def run(args, kwargs):
            flat = extract(args, kwargs)
            return rebuild(runner(flat, syms_of(flat)))
        v.run = run
        return v

    def _backend(self, graph, variant):
        if self.backend == "c":
            from . import fusion
            try:
                return fusion.compile_graph(graph, variant, self.options)
            except fusion.BackendUnavailable as e:
                if not self._warned_backend:
                    warnings.warn(f"ember.compile: the C backend is unavailable ({e}); "
                                  "using the numpy backend", stacklevel=4)
                    self._warned_backend = True
        return graph.compile_python()


def _joint_positions(joint, inputs, tracer):
    """The joint record with each differentiable input given as its input position."""
    if joint is None or "failed" in joint:
        return joint
    ids = [id(n) for n in inputs]
    return dict(joint, diff_positions=[ids.index(id(tracer.proxies[id(t)]))
                                       for t in joint["diff_ins"]], diff_ins=None)


def _sym_reader(syms):
    """fn(flat inputs) -> the symbolic sizes' values at this call."""
    if not syms:
        return lambda flat: ()
    src = "def read(flat):\n    return (" + "".join(
        f"flat[{k}]._data.shape[{d}], " for k, d in syms) + ")\n"
    ns = {}
    exec(src, ns)
    return ns["read"]


def _slots(tracer, x, out_nodes):
    """The output structure with each tensor replaced by a slot into the flat outputs."""
    if isinstance(x, Tensor):
        out_nodes.append(tracer.node_of(x))
        return _Slot(len(out_nodes) - 1)
    if type(x) in (tuple, list):
        return type(x)(_slots(tracer, v, out_nodes) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_slots(tracer, v, out_nodes) for v in x))
    if type(x) is dict:
        return {k: _slots(tracer, v, out_nodes) for k, v in x.items()}
    return x


def _ones_like_detached(t):
    from ..ops.creation import ones_like
    with no_grad():
        return ones_like(t)


def _input_name(path, cf):
    if path.startswith("args["):
        inner = path[5:].split("]")[0]
        if inner.isdigit():
            name = cf._arg_name(int(inner))
            return name + path[5 + len(inner) + 1:].replace("[", "_").replace("]", "")
    return path.replace("kwargs[", "").replace("[", "_").replace("]", "").replace("'", "")


def reset():
    """Forget every compiled variant (the next call of each compiled function traces)."""
    for cf in _ALL:
        cf.reset()
