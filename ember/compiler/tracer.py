"""Capture: run the user's function once, recording every op call into a Graph.

The tracer is a dispatch mode (ember/dispatch.py's seam): each op call reaches `Tracer.call`,
which runs the op for real and records a `call` node whose arguments point at the nodes that
made its tensor inputs. So the trace call's results *are* the eager results, and Python
control flow on shapes, dtypes and scalars simply runs (the guards pin what it read).
Tensors met that no node made (parameters, buffers, closure constants) become `lifted`
nodes, read by reference at each call.

Reading a traced tensor's values from Python (`.item()`, `bool()`, `.numpy()`, printing,
NumPy calls) is a graph break: the trace stops recording and the call finishes eagerly, so its
result is still exact; with ``fullgraph=True`` it raises `GraphBreakError` naming the line.
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

    def __init__(self, lifted_names=None, fullgraph=False):
        self.graph = Graph()
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

    # ---- entering and leaving ----
    def __enter__(self):
        # the tensors that exist before the trace: a tensor the trace meets that is not
        # among them and that no recorded op made came from an op the tracer cannot see
        # type(), not isinstance(): it neither dereferences weak proxies nor wakes other
        # libraries' lazy module objects
        self.preexisting = [o for o in gc.get_objects() if issubclass(type(o), Tensor)]
        self.preexisting_ids = {id(o) for o in self.preexisting}
        state.modes = state.modes + (self,)
        data_access_hooks.append(self._on_data_access)
        return self

    def __exit__(self, *exc):
        self.preexisting = self.preexisting_ids = None
        state.modes = tuple(m for m in state.modes if m is not self)
        if self._on_data_access in data_access_hooks:
            data_access_hooks.remove(self._on_data_access)
        return False

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
        return self.proxies.get(id(t)) or self.array_proxies.get(id(t._data))

    def node_of(self, t):
        node = self.proxies.get(id(t))
        if node is None:
            node = self.array_proxies.get(id(t._data))
            if node is None:
                if id(t) not in self.preexisting_ids:
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
        return node

    def _opaque(self, name, fn, args, kwargs, source):
        margs, mkwargs = self._arg(args), self._arg(kwargs)
        result = fn(*args, **kwargs)
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
        self._break(f"{what} on a traced tensor reads its values in Python")

    def _grad_read(self, t):
        from .runtime import grad_of
        g = t._grad
        if g is None or self.known(t) is None:
            return
        node = self._record("grad_of", grad_of, (self.node_of(t),), {}, None, user_source(),
                            False)
        node.opname, node.method = "ember.compiler.runtime.grad_of", False
        self._bind(g, node)

    def _break(self, reason):
        brk = GraphBreak(reason, user_source())
        self.breaks.append(brk)
        if self.fullgraph:
            raise GraphBreakError(f"graph break (fullgraph=True): {brk}")
        self.broken = True


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
