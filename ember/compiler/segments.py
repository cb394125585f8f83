"""Graph breaks split a compiled function into compiled segments with Python between them.

ember captures by running the function, not by reading its bytecode, so it cannot jump into
the middle of the function after a break. Instead the function's Python runs at every call,
and its tensor ops are answered from compiled segments:

    def f(x):
        y = (x * 2).exp()          # segment 1: mul, exp, sum, gt (one compiled graph)
        if y.sum() > 0:            # the break: bool() reads a value; Python takes the branch
            return y.tanh()        # segment 2, keyed by the value read (True)
        return -y                  # another segment 2, for False (traced when first seen)

Capture (tracer.py with split=True): a read of a traced tensor's values (`.item()`, `bool()`,
printing, `.numpy()`...) ends a segment; recording goes on in a new graph whose inputs are
the tensors it takes from earlier segments. Each segment remembers the op calls it saw, in
order, with what each returned (tracer.SegmentRecord), and the break that ended it with a key:
the bytes the read returned (so ``if x.sum() > 0`` has two successors, one per branch).

Replay (`run_segmented`): the first segment's compiled graph runs on the call's inputs and
produces every tensor the Python code will receive (all of them, not only those used after
the break: the Python code holds them). The function then runs under `ServeMode`, a
dispatch mode that checks each op call against the recorded one (same function, same
non-tensor arguments, tensor arguments that are the recorded nodes' values) and hands back
the precomputed result instead of computing it (a segment with nothing fused, or under
autograd, runs each checked op eagerly instead: the compiled graph would run the same ops
one by one). At a read, the segment must be complete;
the read's key picks the next segment, which runs at once (its non-tensor arguments are the
recorded ones, valid because they derive from the same read values), and so on. A key not
seen before traces the rest of that call as new segments (up to `config.break_values`
successors per break; beyond, the rest runs eagerly). An op that does not match the record
(Python took a path no guard pinned) ends serving: that op and the rest of the call run
eagerly on the real tensors already handed out, which is exact because segments with
in-place, random or opaque ops are never split (such a trace replays eagerly, as before).

Results are eager's: every served tensor is the value the eager op would have made, and
Python side effects run once, in order, because the Python code itself runs. Costs: each op
call still goes through the dispatch mode (a check instead of a kernel), intermediates are
written out, and with autograd on the ops run eagerly, checked (the speed-up of fused
kernels is for inference). Not split: a backward() inside the function.
"""
from ..core.tensor import Tensor, data_access_hooks
from ..autograd.grad_mode import state, no_grad
from .graph import Node, map_nodes
from .dynamic import _same_closure, _same_target
from .tracer import Tracer, break_key
from . import config


class Segment:
    """A compiled segment: its graph, its ops in call order, the break that ends it (None
    for the last) and its successors by the key of that break's read."""

    def __init__(self, rec, cf, grad, compile_graph):
        self.graph, self.order, self.brk = rec.graph, rec.order, rec.brk
        self.input_from = rec.input_from
        self.children = {}              # key -> Segment (None: runs eagerly)
        in_graph = {id(n) for n in self.graph.nodes}
        outs, seen = [], set()
        for _, tmpl in self.order:
            def add(n):
                if id(n) in in_graph and id(n) not in seen and n.kind in ("call", "getitem"):
                    seen.add(id(n))
                    outs.append(n)
                return n
            map_nodes(tmpl, add)
        self.out_nodes = outs
        self.grad = grad
        self.n_ops = len(self.graph.calls())
        self.kernels = []
        self.run = _compile(self, cf, compile_graph) if self.n_ops else None
        # no fused kernel to gain (autograd on, or nothing fused on the C backend): the
        # compiled graph would run the same ops one by one, so the ops run eagerly as the
        # Python code calls them (checked against the record all the same)
        self.passthrough = self.run is not None and (grad or cf.backend == "c" and
                                                     not self.kernels)

    def canon(self, n):
        """The node whose value `n` holds (an input of this segment: the earlier node)."""
        return self.input_from.get(id(n), n) if n.kind == "input" else n

    def all(self):
        """This segment and every segment after it (depth first)."""
        out = [self]
        for c in self.children.values():
            if c is not None:
                out.extend(c.all())
        return out


def build(records, cf, grad, compile_graph):
    """The chain of Segments of one trace (each the only successor of the one before);
    `compile_graph(cf, graph, out_nodes, grad) -> (run, graph, kernels)` compiles each
    (pipeline.compile_segment)."""
    segs = [Segment(r, cf, grad, compile_graph) for r in records]
    for a, b, r in zip(segs, segs[1:], records):
        a.children[r.key] = b
    return segs[0]


def _compile(seg, cf, compile_graph):
    """A run(served) -> outputs function for the segment's graph."""
    fn, g, kernels = compile_graph(cf, seg.graph, seg.out_nodes, seg.grad)
    lifted = [n.target for n in g.lifted()]
    sources = [seg.canon(n) for n in g.inputs()]
    seg.compiled_graph, seg.kernels = g, kernels
    grad = seg.grad

    def run(served):
        inputs = [served[id(n)] for n in sources]
        if grad:
            return fn(inputs, lifted, ())
        with no_grad():
            return fn(inputs, lifted, ())
    return run


class Stats:
    """What the replays of a segmented variant did (for explain() and tests)."""

    def __init__(self):
        self.calls = self.segments_run = self.served_ops = self.eager_ops = 0
        self.passthrough_ops = 0     # served ops of segments that run their ops eagerly
        self.traces = 1          # the capture
        self.diverged = []       # why serving stopped, per call where it did


def _equal(x, m):
    if x is m:
        return True
    if type(x) is not type(m):
        return False
    if type(x).__name__ == "function":
        return _same_closure(x, m)
    if callable(x):
        return _same_target(x, m)
    try:
        r = x == m
    except Exception:
        return False
    return r if type(r) is bool else False


class ServeMode:
    """The dispatch mode of a segmented replay (see the module docstring)."""

    def __init__(self, cf, variant, flat):
        self.cf, self.variant, self.stats = cf, variant, variant.stats
        self.served = {}        # id(node) -> its value this call
        self.node_for = {}      # id(tensor) -> the node it is the value of
        self.keep = []
        self.seg, self.i = None, 0
        self.eager = None       # why serving stopped (None: serving)
        self.tracer = None      # recording the rest of the call (a new break value)
        self.parent_key = None
        root = variant.root
        for n, t in zip([n for n in root.graph.nodes if n.kind == "input"], flat):
            self._bind(n, t)

    def _bind(self, node, value):
        self.served[id(node)] = value
        if isinstance(value, Tensor):
            self.node_for[id(value)] = node
        self.keep.append(value)

    def enter(self, seg):
        self.seg, self.i = seg, 0
        for n in seg.graph.lifted():
            self._bind(n, n.target)
        if seg.run is None or seg.passthrough:
            return
        saved = state.modes
        state.modes = tuple(m for m in saved if m is not self)
        try:
            outs = seg.run(self.served)
        finally:
            state.modes = saved
        for n, v in zip(seg.out_nodes, outs):
            self._bind(n, v)
        self.stats.segments_run += 1

    def _stop(self, why):
        self.eager = why
        self.stats.diverged.append(why)

    # ---- the mode ----
    def call(self, op, fn, args, kwargs):
        if self.eager is None:
            order = self.seg.order
            if self.i < len(order):
                node, tmpl = order[self.i]
                if _same_target(node.target, fn) and self._match(args, node.args) and \
                        self._match(kwargs, node.kwargs):
                    self.i += 1
                    self.stats.served_ops += 1
                    if self.seg.passthrough:
                        result = fn(*args, **kwargs)
                        self.stats.passthrough_ops += 1
                        self._bind_result(tmpl, result)
                        return result
                    return map_nodes(tmpl, lambda n: self.served[id(self.seg.canon(n))])
        result = fn(*args, **kwargs)
        if isinstance(result, Tensor) or isinstance(result, (tuple, list)) and any(
                isinstance(r, Tensor) for r in result):
            if self.eager is None:
                self._stop(f"{getattr(fn, '__name__', fn)} is not the op recorded there")
            self.stats.eager_ops += 1
        return result

    def _bind_result(self, tmpl, result):
        if type(tmpl) is Node:
            self._bind(self.seg.canon(tmpl), result)
        elif isinstance(tmpl, (tuple, list)) and isinstance(result, (tuple, list)):
            for a, b in zip(tmpl, result):
                self._bind_result(a, b)

    def _match(self, x, m):
        if type(m) is Node:
            if not isinstance(x, Tensor):
                return False
            if m.kind == "lifted":
                return x is m.target
            return self.node_for.get(id(x)) is self.seg.canon(m)
        if type(m) in (tuple, list):
            return type(x) is type(m) and len(x) == len(m) and all(
                self._match(a, b) for a, b in zip(x, m))
        if type(m) is dict:
            return type(x) is dict and x.keys() == m.keys() and all(
                self._match(x[k], m[k]) for k in m)
        if type(m) is slice:
            return type(x) is slice and self._match(x.start, m.start) and \
                self._match(x.stop, m.stop) and self._match(x.step, m.step)
        if isinstance(x, Tensor):
            return False
        return _equal(x, m)

    def on_read(self, t, what):
        if self.eager is not None or what == "grad" or id(t) not in self.node_for or \
                not any(m is self for m in state.modes):
            return
        seg = self.seg
        if self.i < len(seg.order) or seg.brk is None:
            self._stop(f"{what} read where the trace read nothing")
            return
        key = break_key(t, what)
        if key in seg.children:
            nxt = seg.children[key]
            if nxt is None:
                self._stop("a value read here runs the rest eagerly")
            else:
                self.enter(nxt)
            return
        if len(seg.children) >= config.break_values:
            self._stop(f"more than {config.break_values} values read at {seg.brk.source}: "
                       "the rest runs eagerly for new ones")
            return
        self._record_rest(key)

    def _record_rest(self, key):
        """Trace the rest of this call as new segments after the current one."""
        outer = {id(v): (self.node_for[id(v)], v) for v in self.keep
                 if isinstance(v, Tensor) and id(v) in self.node_for}
        self.tracer = Tracer(self.cf._lifted_names(), split=True, outer=outer)
        self.parent_key = key
        self.eager = "recording"
        self._leave()
        self.tracer.__enter__()
        # the hooks of this read are being called: the tracer's goes first in the list, so
        # it does not see the read that started it
        data_access_hooks.remove(self.tracer._on_data_access)
        data_access_hooks.insert(0, self.tracer._on_data_access)

    def __enter__(self):
        state.modes = state.modes + (self,)
        data_access_hooks.append(self.on_read)
        return self

    def _leave(self):
        state.modes = tuple(m for m in state.modes if m is not self)
        if self.on_read in data_access_hooks:
            data_access_hooks.remove(self.on_read)

    def __exit__(self, *exc):
        self._leave()
        tr = self.tracer
        if tr is None:
            return False
        try:
            tr.close_segment()
        finally:
            tr.__exit__(None, None, None)
        if exc[0] is None:
            self.stats.traces += 1
            parent = self.seg
            if tr.broken or tr.split_blocked:
                parent.children[self.parent_key] = None
            else:
                nxt = build(tr.segments, self.cf, self.variant.grad,
                            self.variant.compile_segment)
                parent.children[self.parent_key] = nxt
            known = {(b.source, b.reason) for b in self.cf.breaks}
            self.cf.breaks.extend(b for b in tr.breaks if (b.source, b.reason) not in known)
        return False


def _grad(recs):
    return bool(state.enabled) and any(
        n.meta is not None and n.meta[3] for r in recs for n in r.graph.nodes)


def not_worth_splitting(cf, tracer):
    """Why the C backend would not gain from splitting this trace (None: split it). Each
    op of a split call is checked against the record (a few microseconds, as much as an
    eager op's dispatch) and every value it returns is written out, so only ops over many
    elements gain from their fused kernels; under autograd the ops run eagerly, checked,
    and gain nothing. The numpy backend always splits (it is for seeing what the compiler
    does, not for speed)."""
    if cf.backend != "c" or config.split_min_elements <= 0:
        return None
    if _grad(tracer.segments):
        return "under autograd a split call runs its ops eagerly, checked: no gain over " \
               "running the call eagerly"
    sizes = []
    for r in tracer.segments:
        for n in r.graph.calls():
            if n.meta is not None:
                k = 1
                for d in n.meta[0]:
                    k *= d
                sizes.append(k)
    avg = sum(sizes) / max(len(sizes), 1)
    if avg < config.split_min_elements:
        return (f"its ops average {avg:.0f} elements, under config.split_min_elements "
                f"({config.split_min_elements}): checking each op would cost more than the "
                "fused kernels save")
    return None


def attach(v, p, extract, compile_segment):
    """Make Variant `v` replay the segments recorded by Program `p`'s trace."""
    cf, recs = p.compiled, p.segment_records
    v.grad = _grad(recs)
    v.compile_segment = compile_segment
    v.root = build(recs, cf, v.grad, compile_segment)
    v.stats = Stats()

    def run(args, kwargs):
        return run_segmented(cf, v, extract(args, kwargs), args, kwargs)
    v.run = run
    return f"{len(recs)} segments, compiled; the function's Python runs between them"


def run_segmented(cf, variant, flat, args, kwargs):
    """One call of a segmented variant: the function's Python under ServeMode."""
    variant.stats.calls += 1
    mode = ServeMode(cf, variant, flat)
    mode.enter(variant.root)
    with mode:
        return cf.fn(*args, **kwargs)
