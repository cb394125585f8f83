"""Capture: run the user's function once, recording every op call into a Graph.

The tracer is a dispatch mode (ember/dispatch.py's seam): each op call reaches `Tracer.call`,
which runs the op for real and records a `call` node whose arguments point at the nodes that
made its tensor inputs. So the trace call's results *are* the eager results, and Python
control flow on shapes, dtypes and scalars simply runs (the guards pin what it read).
Tensors met that no node made (parameters, buffers, closure constants) become `lifted`
nodes, read by reference at each call.

Reading a traced tensor's values from Python (`.item()`, `bool()`, `.numpy()`, printing,
NumPy calls) is a graph break. With ``split=True`` it ends a segment and recording goes on in
a new graph (segments.py replays them); other breaks stop recording and the call finishes
eagerly, so its result is still exact; with ``fullgraph=True`` a break raises
`GraphBreakError` naming the line.
`loss.backward()` inside the function records the backward ops and the accumulation into
``.grad``; `optimizer.step()`/`zero_grad()` and functions wrapped in `ember.compiler.disable`
are recorded as opaque calls that run eagerly at replay.
"""
import gc
import os
import sys

from ..core.tensor import Tensor, data_access_hooks
from ..autograd.grad_mode import state
from ..ops.registry import OpDef, FUNCTIONS, METHODS
from .graph import Graph, map_nodes

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_USER_DIRS = (os.path.join(_EMBER_DIR, "examples"),)

# how many traces have begun in this process (tests check that a warm start from the disk
# cache traces nothing: disk_cache.py)
stats = {"traces": 0}

# ops whose results carry no tensor but whose call changes state: always recorded
_OPAQUE = {"optimizer.step", "optimizer.zero_grad", "optimizer.scheduler_step"}


class GraphBreakError(RuntimeError):
    """Raised under ``fullgraph=True`` where the function cannot be captured as one graph."""


class BackwardNotCaptured(Exception):
    """The backward of a traced function used an op the tracer cannot see: the forward is
    still compiled, and autograd records it at replay as in eager mode."""


class GraphBreak:
    """Where and why capture stopped."""

    def __init__(self, reason, source):
        self.reason, self.source = reason, source

    def __str__(self):
        return f"{self.source}: {self.reason}"


def user_source(skip_compiler=True):
    """'file:line in function' of the innermost frame of user code (outside ember)."""
    f = sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not path.startswith(_EMBER_DIR) or path.startswith(_USER_DIRS):
            return f"{path}:{f.f_lineno} in {f.f_code.co_name}"
        f = f.f_back
    return "<unknown>"


def _op_name(op, fn):
    if isinstance(op, OpDef):
        name = getattr(fn, "__name__", op.name)
        return name
    return str(op)


class Tracer:
    """The dispatch mode that records a Graph (see the module docstring)."""

    def __init__(self, lifted_names=None, fullgraph=False, split=False, outer=None):
        self.graph = Graph()
        # split=True: a read of a traced tensor's values ends a segment (segments.py) and
        # recording goes on in a new graph, whose inputs are the tensors it takes from
        # earlier segments (`outer`: id(tensor) -> the node that made it, and the tensor)
        self.split = split
        self.outer = dict(outer or {})
        self.segments = []       # closed segments (SegmentRecord), in order
        self.order = []          # this segment's (node, result template) per op, in order
        self.input_from = {}     # id(input node) -> the outer node it takes its value from
        self.split_blocked = None   # why the segments cannot replay (then: eager)
        self.proxies = {}        # id(tensor) -> Node
        self.array_proxies = {}  # id(tensor._data) -> Node (aliases made by autograd)
        self.keep = []           # keeps traced objects alive so ids stay unique
        self.lifted_names = lifted_names or {}
        self.fullgraph = fullgraph
        self.breaks = []
        self.broken = False
        self.phase = "fwd"
        self.n_inputs = 0
        self.n_lifted = 0
        self.has_backward = False
        self.record_values = None   # name -> value of every recorded call (check mode)
        self.watch = None           # effects.Watch: the Python state the function may change
        self.effect_error = None    # why a side effect cannot be replayed (effects.py)
        self.pre_ids = set()
        self.preexisting = self.preexisting_ids = self.pre_objects = None
        self._frozen = False

    # ---- entering and leaving ----
    def __enter__(self):
        # What existed before the trace: a tensor the trace meets that existed neither then
        # nor was made by a recorded op came from an op the tracer cannot see, and the side
        # effect checks (effects.py) tell old containers from new ones. gc.freeze() moves
        # every object into the collector's permanent generation in O(1), so the objects
        # made since are the ones in generations 0-2 (listing those is cheap; listing every
        # object, as without it, costs ~0.1 s with a large library imported). Not when the
        # program froze objects itself (a nested trace, a pre-fork server): then the list.
        stats["traces"] += 1
        self._frozen = gc.get_freeze_count() == 0
        self._early_new = set()
        self._new_cache = set()
        if self._frozen:
            gc.freeze()
        else:
            # type(), not isinstance(): it neither dereferences weak proxies nor wakes
            # other libraries' lazy module objects
            objs = gc.get_objects()
            self.preexisting = [o for o in objs if issubclass(type(o), Tensor)]
            self.preexisting_ids = {id(o) for o in self.preexisting}
            # kept alive, so that no new object reuses an id
            self.pre_objects, self.pre_ids = objs, set(map(id, objs))
        state.modes = state.modes + (self,)
        data_access_hooks.append(self._on_data_access)
        return self

    def __exit__(self, *exc):
        self.preexisting = self.preexisting_ids = self.pre_objects = None
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
        state.modes = tuple(m for m in state.modes if m is not self)
        if self._on_data_access in data_access_hooks:
            data_access_hooks.remove(self._on_data_access)
        return False

    def new_ids(self):
        """ids of the (gc-tracked) objects made since the trace began."""
        if not self._frozen:
            return None
        out = set(self._early_new)
        for g in range(3):
            out.update(map(id, gc.get_objects(g)))
        self._new_cache = out
        return out

    def existed(self, obj):
        """Whether `obj` (a tensor, a container) existed before the trace began."""
        if not self._frozen:
            return id(obj) in self.pre_ids
        if id(obj) in self.lifted_names or id(obj) in self._early_new:
            return id(obj) in self.lifted_names
        if id(obj) in self._new_cache:
            return False
        return id(obj) not in self.new_ids()

    def referrers(self, objs):
        """gc.get_referrers over every object (the permanent generation too)."""
        if not self._frozen:
            return gc.get_referrers(*objs)
        self._early_new = self.new_ids()
        gc.unfreeze()
        try:
            return gc.get_referrers(*objs)
        finally:
            gc.freeze()

    # ---- nodes for tensors ----
    def _bind(self, t, node):
        self.proxies[id(t)] = node
        self.array_proxies[id(t._data)] = node
        self.keep.append(t)
        self.keep.append(t._data)
        node.meta = (tuple(t._data.shape), t.dtype, t._data.strides, t._requires_grad)

    def add_input(self, t, name):
        node = self.graph.add("input", name, index=self.n_inputs)
        self.n_inputs += 1
        self._bind(t, node)
        return node

    def known(self, t):
        return self.proxies.get(id(t)) or self.array_proxies.get(id(t._data)) or \
            (self.outer.get(id(t), (None,))[0] if self.outer else None)

    def _from_outer(self, t):
        """An input node of this segment for tensor `t` made by an earlier segment."""
        src = self.outer[id(t)][0]
        node = self.graph.add("input", src.name, index=self.n_inputs)
        self.n_inputs += 1
        self.input_from[id(node)] = src
        self._bind(t, node)
        self.graph.nodes.insert(self._first_call_index(), self.graph.nodes.pop())
        return node

    def close_segment(self, brk=None, key=None):
        """End the segment being recorded (at graph break `brk`, whose read gave `key`);
        the next one takes this one's tensors as inputs."""
        self.segments.append(SegmentRecord(self.graph, self.order, self.input_from, brk,
                                           key))
        for t in self.keep:
            if isinstance(t, Tensor) and id(t) in self.proxies:
                node = self.proxies[id(t)]
                self.outer[id(t)] = (self.input_from.get(id(node), node), t)
        self.graph, self.order, self.input_from = Graph(), [], {}
        self.proxies, self.array_proxies = {}, {}
        self.n_inputs = self.n_lifted = 0

    def node_of(self, t):
        node = self.proxies.get(id(t))
        if node is None:
            node = self.array_proxies.get(id(t._data))
            if node is None and self.outer and id(t) in self.outer:
                return self._from_outer(t)
            if node is None:
                if not self.existed(t):
                    why = f"a tensor of shape {list(t.shape)} was made by an op the tracer " \
                          "does not see"
                    if self.phase == "bwd":
                        raise BackwardNotCaptured(why)
                    self._break(why)
                name = self.lifted_names.get(id(t), "const")
                node = self.graph.add("lifted", name, target=t, index=self.n_lifted)
                self.n_lifted += 1
                self._bind(t, node)
                # the lifted node goes before everything that may read it
                self.graph.nodes.insert(self._first_call_index(), self.graph.nodes.pop())
        return node

    def _first_call_index(self):
        for i, n in enumerate(self.graph.nodes):
            if n.kind not in ("input", "lifted"):
                return i
        return len(self.graph.nodes)

    def _arg(self, x):
        if isinstance(x, Tensor):
            return self.node_of(x)
        if type(x) in (tuple, list):
            return type(x)(self._arg(v) for v in x)
        if type(x) is dict:
            return {k: self._arg(v) for k, v in x.items()}
        if type(x) is slice:
            return slice(self._arg(x.start), self._arg(x.stop), self._arg(x.step))
        return x

    # ---- the mode ----
    def call(self, op, fn, args, kwargs):
        if self.broken:
            return fn(*args, **kwargs)
        name = _op_name(op, fn)
        if name == "backward":
            return self._backward(*args)
        source = user_source()
        if name in _OPAQUE:
            return self._opaque(name, fn, args, kwargs, source)
        if name in ("view_scatter", "view_gather") and _reads_data(args):
            # the adjoint of an advanced-indexing view: its index values are baked into a
            # closure, so a replay would scatter into this trace's positions
            why = "the adjoint of an indexing view depends on the index values"
            if self.phase == "bwd":
                raise BackwardNotCaptured(why)
            self._break(why)
            return fn(*args, **kwargs)
        margs, mkwargs = self._arg(args), self._arg(kwargs)
        result = fn(*args, **kwargs)
        inplace = _is_inplace(name)
        if not inplace and not _has_tensor(result):
            return result          # a metadata query (size, dim...): the guards cover it
        self._record(name, fn, margs, mkwargs, result, source, inplace, op)
        return result

    def _record(self, name, fn, margs, mkwargs, result, source, inplace, op=None):
        method = not (isinstance(op, OpDef) and FUNCTIONS.get(name) is not None
                      and not inplace) and name not in _OPAQUE and not name.startswith(
                          ("ember.", "F."))
        if isinstance(op, OpDef) and FUNCTIONS.get(name) is None and not inplace and \
                METHODS.get(name) is None:
            method, name = False, "ember.ops." + name      # an op with no public function
        opname = name if method or name.startswith(("ember.", "optimizer.", "F.")) \
            else "ember." + name
        node = self.graph.add("call", name.split(".")[-1].strip("_") or "op", target=fn,
                              args=margs, kwargs=mkwargs, source=source, phase=self.phase,
                              opname=opname, method=method, inplace=inplace)
        if "out" in node.kwargs and node.kwargs["out"] is None:
            del node.kwargs["out"]
        if self.record_values is not None:
            self.record_values[node.name] = result
        if self.split and self.phase == "fwd" and not name.startswith(("grad_of",
                                                                        "accumulate_grad")):
            if inplace or (isinstance(op, OpDef) and op.impure) or name in _OPAQUE or \
                    name.startswith("ember.compiler.disabled"):
                self.split_blocked = self.split_blocked or f"{name} changes state in place"
        if isinstance(result, Tensor):
            prior = self.proxies.get(id(result))
            if prior is not None:
                # the op returned a tensor the trace knows (x.float() on float32, x.add_()):
                # later uses keep reading the node that made it, which replays to the same
                node.meta = prior.meta
            else:
                self._bind(result, node)
        elif isinstance(result, (tuple, list)):
            for i, r in enumerate(result):
                if isinstance(r, Tensor) and self.proxies.get(id(r)) is None:
                    item = self.graph.add("getitem", f"{node.name}_{i}", args=(node,), index=i,
                                          source=source, phase=self.phase)
                    self._bind(r, item)
        if self.split and self.phase == "fwd":
            # what the op returned, its tensors as nodes: a replay hands back the same
            self.order.append((node, _template(result, self.proxies)))
        return node

    def _opaque(self, name, fn, args, kwargs, source):
        margs, mkwargs = self._arg(args), self._arg(kwargs)
        before = self.watch.state() if self.watch is not None else None
        result = fn(*args, **kwargs)
        if before is not None and self.effect_error is None:
            # what the call changed, its replay changes again: not a side effect to redo
            from .effects import Unsupported
            try:
                self.watch.absorb(before)
            except Unsupported as e:
                self.effect_error = str(e)
        self._record(name, fn, margs, mkwargs, result, source, True)
        return result

    def opaque_call(self, fn, args, kwargs):
        """A `disable`d function: run it eagerly now and record it as one call."""
        return self._opaque("ember.compiler.disabled." + getattr(fn, "__name__", "fn"), fn,
                            args, kwargs, user_source())

    def _backward(self, t, gradient, retain_graph, create_graph, inputs):
        """`t.backward()` while tracing: record the backward ops (the engine runs with this
        mode active, so its formulas' ops are recorded) and one accumulate node per leaf."""
        from ..autograd import engine
        from .runtime import accumulate_grad
        if self.split:
            self.split_blocked = self.split_blocked or "the function runs backward()"
        if create_graph:
            self._break("backward(create_graph=True) is not captured")
            return engine.backward((t,), None if gradient is None else (gradient,),
                                   retain_graph, create_graph, inputs=inputs)
        leaves = list(inputs) if inputs is not None else _graph_leaves(t)
        phase, self.phase = self.phase, "bwd"
        n_before = len(self.graph.nodes)
        # call_mode took this mode off the stack for the call: put it back, so the engine's
        # ops are recorded
        saved_modes = state.modes
        state.modes = saved_modes + (self,)
        try:
            return self._run_backward(t, gradient, retain_graph, create_graph, inputs, leaves,
                                      phase, n_before)
        finally:
            state.modes = saved_modes

    def _run_backward(self, t, gradient, retain_graph, create_graph, inputs, leaves, phase,
                      n_before):
        from ..autograd import engine
        from .runtime import accumulate_grad
        try:
            # the graph is kept until the capture succeeded: on failure, the real backward
            # runs eagerly over it (a graph break)
            grads = engine.run_backward((t,), engine._make_grads(
                (t,), (gradient,), False), True, False, inputs=leaves,
                accumulate=False, allow_unused=True) if leaves else []
            for leaf, g in zip(leaves, grads):
                if g is not None:
                    self.node_of(leaf), self.node_of(g)
        except BackwardNotCaptured as e:
            del self.graph.nodes[n_before:]
            self.phase = phase
            self._break(f"backward() not captured: {e}")
            return engine.backward((t,), None if gradient is None else (gradient,),
                                   retain_graph, create_graph, inputs=inputs)
        try:
            self.has_backward = True
            if not retain_graph and t.grad_fn is not None:
                engine._release_graph(t.grad_fn)
            source = user_source()
            for leaf, g in zip(leaves, grads):
                if g is None:
                    continue
                margs = (self.node_of(leaf), self.node_of(g))
                r = accumulate_grad(leaf, g)
                node = self._record("accumulate_grad", accumulate_grad, margs, {}, None,
                                    source, True)
                node.opname, node.method = "ember.compiler.runtime.accumulate_grad", False
                self._bind(r, node)
        finally:
            self.phase = phase
        return None

    # ---- graph breaks ----
    def _on_data_access(self, t, what):
        if self.broken or not any(m is self for m in state.modes):
            return
        if what == "grad":
            self._grad_read(t)
            return
        if self.known(t) is None:
            return       # a tensor the traced computation does not depend on
        reason = f"{what} on a traced tensor reads its values in Python"
        if self.split and self.phase == "fwd":
            brk = GraphBreak(reason, user_source())
            self.breaks.append(brk)
            self.close_segment(brk, break_key(t, what))
            return
        self._break(reason)

    def _grad_read(self, t):
        from .runtime import grad_of
        g = t._grad
        if g is None or self.known(t) is None:
            return
        node = self._record("grad_of", grad_of, (self.node_of(t),), {}, None, user_source(),
                            False)
        node.opname, node.method = "ember.compiler.runtime.grad_of", False
        self._bind(g, node)

    def side_effect_break(self, reason, source):
        """A side effect the replay cannot redo: a graph break at the function's line."""
        brk = GraphBreak(reason, source)
        self.breaks.append(brk)
        if self.fullgraph:
            raise GraphBreakError(f"graph break (fullgraph=True): {brk}")
        self.broken = True

    def _break(self, reason):
        brk = GraphBreak(reason, user_source())
        self.breaks.append(brk)
        if self.fullgraph:
            raise GraphBreakError(f"graph break (fullgraph=True): {brk}")
        self.broken = True


class SegmentRecord:
    """What the tracer recorded for one segment (see the module docstring)."""

    def __init__(self, graph, order, input_from, brk, key):
        self.graph, self.order, self.input_from = graph, order, input_from
        self.brk, self.key = brk, key


def break_key(t, what):
    """What a read of tensor `t` gave Python: the key of the segment that follows it."""
    a = t._data
    return (what, tuple(a.shape), str(a.dtype), a.tobytes())


def _template(x, proxies):
    """Result `x` with each tensor replaced by the node bound to it."""
    if isinstance(x, Tensor):
        return proxies.get(id(x))
    if type(x) in (tuple, list):
        return type(x)(_template(v, proxies) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_template(v, proxies) for v in x))
    return x


def _is_inplace(name):
    if name.startswith("__") and name.endswith("__"):
        return name in ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                        "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__",
                        "__ixor__", "__ilshift__", "__irshift__", "__imatmul__")
    return name.endswith("_") or name in _OPAQUE or name.startswith("ember.compiler.disabled")


def _reads_data(args):
    """Whether a view function among `args` closes over arrays (index values)."""
    import numpy as np
    for a in args:
        for cell in getattr(a, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            vals = v if isinstance(v, (tuple, list)) else (v,)
            if any(isinstance(x, (np.ndarray, Tensor)) and getattr(x, "ndim", 0) > 0
                   for x in vals):
                return True
    return False


def _has_tensor(x):
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (tuple, list)):
        return any(isinstance(v, Tensor) for v in x)
    return False


def _graph_leaves(t):
    """The leaf tensors (requiring grad) that `t`'s autograd graph reaches."""
    from ..autograd.graph import AccumulateGrad
    leaves, seen, stack = [], set(), [t.grad_fn] if t.grad_fn is not None else []
    if t.grad_fn is None and t._requires_grad:
        return [t]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            leaves.append(node.variable)
            continue
        stack.extend(n for n, _ in node.next_functions)
    return leaves


def tensors_in(x, out=None):
    """Flat list of the tensors in a nested structure (tuples, lists, dicts), in order."""
    out = [] if out is None else out
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            tensors_in(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            tensors_in(v, out)
    return out


__all__ = ["Tracer", "GraphBreak", "GraphBreakError", "map_nodes", "tensors_in"]
