"""ember.onnx's capture: the model traced by the compiler's Tracer (composites whole where
they have an ONNX mapping), dead code dropped, and for dynamic_axes a second trace at other
sizes unified with the first (ember/compiler/dynamic.py), after making the two traces'
arguments comparable (Size -> tuple, equal arrays shared). The model's buffers and the RNG
state are restored after each trace.
"""
import inspect

import numpy as np

from ..core.tensor import Tensor
from ..autograd.grad_mode import no_grad, state
from ..compiler.tracer import Tracer, GraphBreakError, tensors_in
from ..ops.registry import OpDef, COMPOSITE
from .errors import OnnxExporterError
from . import nn_mappings


def _map_tensors(x, fn):
    if isinstance(x, Tensor):
        return fn(x)
    if type(x) in (tuple, list):
        return type(x)(_map_tensors(v, fn) for v in x)
    if type(x) is dict:
        return {k: _map_tensors(v, fn) for k, v in x.items()}
    return x


class _OnnxTracer(Tracer):
    """The compiler's tracer, taking composite ops (linear, conv, layer_norm, gelu, softmax,
    attention...) whole where they have an ONNX mapping, as ember.export records them (the
    ``observing`` protocol of ember/ops/nn_ops.py), and their decomposition otherwise."""

    observing = True

    def call(self, op, fn, args, kwargs):
        if isinstance(op, OpDef) and op.kind == COMPOSITE and op.decomp is not None and \
                op.onnx is None and nn_mappings.MAPPINGS.get(op) is None and not self.broken:
            saved = state.modes
            state.modes = saved + (self,)      # the decomposition's ops are recorded
            try:
                return op.decomp(*args, **kwargs)
            finally:
                state.modes = saved
        return super().call(op, fn, args, kwargs)


class _Trace:
    """One capture: the graph, its input nodes, output nodes and recorded values. The
    model's buffers (BatchNorm's statistics, in training mode) and the RNG state are as
    before when it returns."""

    def __init__(self, model, args, kwargs, lifted_names):
        from ..ops.random import get_rng_state, set_rng_state
        tracer = _OnnxTracer(lifted_names, fullgraph=True)
        tracer.record_values = {}
        flat = tensors_in([args, kwargs])
        buffers = list(model.buffers()) if hasattr(model, "buffers") else []
        saved = [b.detach()._numpy().copy() for b in buffers]
        rng = get_rng_state().clone()
        try:
            self._run(tracer, model, args, kwargs, flat)
        finally:
            set_rng_state(rng)
            with no_grad():
                for b, v in zip(buffers, saved):
                    b.copy_(_as_tensor(v))

    def _run(self, tracer, model, args, kwargs, flat):
        with no_grad():
            try:
                with tracer:
                    for i, t in enumerate(flat):
                        if tracer.known(t) is None:
                            tracer.add_input(t, f"input_{i}")
                    result = model(*args, **kwargs)
            except GraphBreakError as e:
                raise OnnxExporterError(
                    f"ember.onnx.export could not capture the model as one graph: {e}. Values "
                    "read in Python (data-dependent control flow) cannot be exported") from None
        self.graph, self.values, self.result = tracer.graph, tracer.record_values, result
        self.inputs = [tracer.known(t) for t in flat]
        if len({id(n) for n in self.inputs}) != len(self.inputs):
            raise OnnxExporterError("the same tensor is passed as two inputs")
        outs = tensors_in(result)
        self.outputs = []
        for t in outs:
            node = tracer.known(t)
            if node is None:
                node = tracer.node_of(t)    # a tensor from outside the trace: lifted
            self.outputs.append(node)


def _live(graph, out_nodes):
    """Ids of the nodes the outputs depend on. ONNX returns only the outputs, so a buffer
    update (BatchNorm's running statistics in training) or any unused value is dropped; an
    in-place op is live when a later live node reads the tensor it wrote."""
    from ..compiler.graph import Node
    needed = {id(n) for n in out_nodes}
    for n in reversed(graph.nodes):
        if n.kind in ("input", "lifted", "output"):
            continue
        target = n.args[0] if n.args else None
        if n.inplace and type(target) is Node and id(target) in needed:
            needed.add(id(n))
        if id(n) in needed:
            for i in n.inputs():
                needed.add(id(i))
    return needed


def _drop_dead(graph, out_nodes):
    live = _live(graph, out_nodes)
    graph.nodes = [n for n in graph.nodes if n.kind in ("input", "output") or id(n) in live]


def _as_tensor(arr):
    from ..ops.creation import from_numpy
    return from_numpy(arr)


def _normalize(graph):
    """Make argument values comparable between two traces: Size -> tuple."""
    from ..compiler.graph import map_nodes

    def fix(x):
        if isinstance(x, tuple) and type(x) not in (tuple,) and not hasattr(x, "_fields"):
            return tuple(fix(v) for v in x)
        if type(x) in (tuple, list):
            return type(x)(fix(v) for v in x)
        if type(x) is dict:
            return {k: fix(v) for k, v in x.items()}
        return x
    for n in graph.nodes:
        n.args = fix(map_nodes(n.args, lambda v: v))
        n.kwargs = fix(n.kwargs)


def _share_constants(ga, gb):
    """Array arguments equal in both traces become the same object, so unify accepts them."""
    def share(x, y):
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            return x if x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y) \
                else y
        if type(x) in (tuple, list) and type(y) is type(x) and len(x) == len(y):
            return type(y)(share(p, q) for p, q in zip(x, y))
        if type(x) is dict and type(y) is dict and list(x) == list(y):
            return {k: share(x[k], y[k]) for k in y}
        return y
    for na, nb in zip(ga.nodes, gb.nodes):
        nb.args = share(na.args, nb.args)
        nb.kwargs = share(na.kwargs, nb.kwargs)


def _first_difference(ga, gb):
    for na, nb in zip(ga.nodes, gb.nodes):
        if na.opname != nb.opname or na.kind != nb.kind:
            return na.source
    for na, nb in zip(ga.nodes, gb.nodes):
        if na.kind == "call" and repr(na.args) != repr(nb.args):
            return na.source
    return None


def _dims_of(dynamic_axes, name):
    spec = (dynamic_axes or {}).get(name)
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(d): str(label) for d, label in spec.items()}
    return {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(spec)}


def _resized(args, kwargs, in_names, dynamic_axes, first):
    """The inputs with each dynamic dim resized: labels get distinct new sizes >= 2."""
    from ..ops.creation import arange
    flat = tensors_in([args, kwargs])
    labels = []
    for name in in_names:
        for label in _dims_of(dynamic_axes, name).values():
            if label not in labels:
                labels.append(label)
    pos = {id(t): i for i, t in enumerate(flat)}

    def resize(t):
        i = pos[id(t)]
        for d, label in _dims_of(dynamic_axes, in_names[i]).items():
            n = t.shape[d]
            # small changes (a model may cap a size, as GPT's block_size does); distinct
            # per label, so that two dynamic dims never share one symbol by chance
            new = max(n, 2) + (0 if first else 1 + labels.index(label))
            if new != n:
                idx = arange(new) % max(n, 1)
                t = t.index_select(d, idx)
        return t
    return _map_tensors([args, kwargs], resize)


def _signature_names(model, n_flat, args, kwargs):
    fn = getattr(model, "forward", model)
    try:
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"input_{i}"
        k = len(tensors_in(a))
        names += [base] if isinstance(a, Tensor) else [f"{base}_{j}" for j in range(k)]
    for key, a in kwargs.items():
        k = len(tensors_in(a))
        names += [key] if isinstance(a, Tensor) else [f"{key}_{j}" for j in range(k)]
    return names[:n_flat]
