"""ember.onnx.export: capture the model with the compiler's tracer (capture.py) and write
each op's ONNX mapping (read from its OpDef) into an ONNX ModelProto.

Steps: (1) trace the model once on the given inputs (eval mode unless `training` asks
otherwise; no autograd recording; composites with a mapping recorded whole, others as
their decomposition; buffers and the RNG state restored afterwards); (2) with
`dynamic_axes`, trace again with those dims resized and unify the two graphs
(ember/compiler/dynamic.py), so every size that follows a dynamic dim becomes a symbol,
exported as a Shape read of the input, never a baked number; an ExportedProgram
(ember.export) brings its own graph and symbols instead;
(3) walk the graph: inputs become graph inputs, parameters and buffers initializers named
by their state_dict keys, sub-graphs that read no input are folded to constants (with
`do_constant_folding`), and every other call goes through its mapping (`OpDef.onnx`, or
ember/onnx/nn_mappings.py for nn helpers that are not registry ops). An op without one
raises UnsupportedOperatorError naming the op and the user's line.
"""
import numpy as np

from ..core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..compiler.tracer import tensors_in
from ..compiler import dynamic
from ..ops.registry import op_for
from .builder import Builder, V, DynInt, UnsupportedForExport, dtype_name
from .errors import OnnxExporterError, UnsupportedOperatorError
from . import nn_mappings
from .capture import (_Trace, _drop_dead, _live, _normalize, _share_constants,
                      _first_difference, _dims_of, _resized, _signature_names)

DEFAULT_OPSET = 17
OPSETS = range(17, 22)

# set by ember.onnx.export for one export: {id(OpDef): mapping} from custom_translation_table,
# and {domain: version} from custom_opsets (a custom domain's opset_import; default 1)
CUSTOM = {"table": {}, "opsets": {}}


class _Exporter:
    def __init__(self, helper, opset, fold):
        self.g = Builder(helper, opset)
        self.helper, self.fold = helper, fold
        self.env = {}
        self.const = set()            # ids of nodes whose value is folded
        self.const_values = {}        # their values (ember tensors)

    def value(self, x):
        return self.env[id(x)]

    def arg(self, x, node_of, syms):
        from ..compiler.graph import Node
        if type(x) is Node:
            return self.env[id(x)]
        if isinstance(x, dynamic.Sym):
            return syms(x)
        if type(x) in (tuple, list):
            return type(x)(self.arg(v, node_of, syms) for v in x)
        if type(x) is dict:
            return {k: self.arg(v, node_of, syms) for k, v in x.items()}
        if type(x) is slice:
            return slice(self.arg(x.start, node_of, syms), self.arg(x.stop, node_of, syms),
                         self.arg(x.step, node_of, syms))
        if isinstance(x, Tensor):
            return self.g.const(x.detach()._numpy())
        return x


def _resolve(node):
    """The op's mapping: (OpDef or None, mapping) for a call node."""
    op = node.op
    if op is not None and id(op) in CUSTOM["table"]:
        return op, CUSTOM["table"][id(op)]
    name = node.opname.split(".")[-1]
    if op is None and node.inplace:
        base = name[3:-2] if name.startswith("__i") and name.endswith("__") else \
            name[:-1] if name.endswith("_") else name
        op = op_for(base)
    if op is None:
        # helpers outside the registry: a mapping set on the function (the dtype
        # shorthands' `.onnx`, as their `.batch`), or one of nn_mappings'
        target = getattr(node.target, "__wrapped__", node.target)
        mapping = getattr(node.target, "onnx", None) or getattr(target, "onnx", None) or \
            nn_mappings.MAPPINGS.get(target) or nn_mappings.MAPPINGS.get(node.target)
        return None, mapping
    mapping = op.onnx
    if mapping is None:
        mapping = nn_mappings.MAPPINGS.get(op)
    return op, mapping


def _string_mapping(g, op, op_type, args, kwargs):
    """A pointwise op mapped to one ONNX node: tensors and scalars in the op's input order."""
    for k, v in kwargs.items():
        default = op.attrs.get(k) if op is not None else None
        if v is not None and v != default:
            raise UnsupportedForExport(f"{op.name if op else op_type} with {k}={v!r}")
    ins = list(args)
    out_dt = dtype_name(g.out[1])
    tensors = [a for a in ins if isinstance(a, V)]
    if out_dt == "bool" and tensors:
        floats = [t.dtype for t in tensors if t.dtype.startswith("float")]
        dt = floats[0] if floats else tensors[0].dtype
        if any(t.dtype == "bool" for t in tensors) and op_type in ("And", "Or", "Xor", "Not"):
            dt = "bool"
    else:
        dt = out_dt
    ins = [g.scalar(a, dt) for a in ins]
    return g.op(op_type, *ins, dtype=out_dt)


def export_graph(model, args, kwargs, *, helper, opset, input_names, output_names,
                 dynamic_axes, export_params, keep_initializers_as_inputs, fold):
    """Trace `model` and build its ONNX GraphProto pieces; returns a ModelProto."""
    import onnx
    from ..export.program import ExportedProgram
    if isinstance(model, ExportedProgram):
        return _from_program(model, helper, opset, input_names, output_names, dynamic_axes,
                             export_params, keep_initializers_as_inputs, fold, onnx)
    named = {}
    if hasattr(model, "named_parameters"):
        for n, p in model.named_parameters(remove_duplicate=False):
            named.setdefault(id(p), n)
        for n, b in model.named_buffers(remove_duplicate=False):
            named.setdefault(id(b), n)
    lifted_names = {k: v.replace(".", "_") for k, v in named.items()}
    n_flat = len(tensors_in([args, kwargs]))
    in_names = list(input_names or [])
    in_names += _signature_names(model, n_flat, args, kwargs)[len(in_names):]
    for i in range(len(in_names), n_flat):
        in_names.append(f"input_{i}")
    known = set(in_names) | set(output_names or ())
    for key in dynamic_axes or {}:
        if key not in known:
            raise ValueError(f"dynamic_axes names {key!r}, which is neither an input nor an "
                             f"output name (inputs: {in_names})")
    dyn_inputs = any(_dims_of(dynamic_axes, n) for n in in_names)
    if dyn_inputs:
        a_args, a_kwargs = _resized(args, kwargs, in_names, dynamic_axes, True)
        b_args, b_kwargs = _resized(args, kwargs, in_names, dynamic_axes, False)
        ta = _Trace(model, a_args, a_kwargs, lifted_names)
        tb = _Trace(model, b_args, b_kwargs, lifted_names)
        for t in (ta, tb):
            _drop_dead(t.graph, t.outputs)
            _normalize(t.graph)
        _share_constants(ta.graph, tb.graph)
        ca = dynamic.Capture(ta.graph, None, ta.outputs, list(range(n_flat)),
                             [tuple(n.meta[0]) for n in ta.inputs], None)
        cb = dynamic.Capture(tb.graph, None, tb.outputs, list(range(n_flat)),
                             [tuple(n.meta[0]) for n in tb.inputs], None)
        cap = dynamic.unify(ca, cb)
        if cap is None:
            where = _first_difference(ta.graph, tb.graph)
            raise OnnxExporterError(
                "dynamic_axes: the traced program is not the same for other sizes of the "
                f"dynamic dims (it specializes on a size at {where or 'an unknown line'}); "
                "export with those dims static, or write the size-dependent code with "
                "tensor ops")
        graph, trace = cap.graph, ta
        # dims that vary, per node (by position): where the two traces' shapes differ
        varying = [tuple(x != y for x, y in zip(na.meta[0], nb.meta[0])) if na.meta and
                   nb.meta else None for na, nb in zip(ta.graph.nodes, tb.graph.nodes)]
        out_nodes = cap.out_nodes
        sym_dims = cap.syms
        in_nodes = [n for n in graph.nodes if n.kind == "input"]
        in_nodes.sort(key=lambda n: n.index)
        # an output dim that moves with a labelled input dim gets its label
        moves = {}
        for k, n in enumerate(in_nodes):
            i = graph.nodes.index(n)
            for d, label in _dims_of(dynamic_axes, in_names[k]).items():
                moves.setdefault((ta.graph.nodes[i].meta[0][d], tb.graph.nodes[i].meta[0][d]),
                                 label)
        pos = {id(n): i for i, n in enumerate(graph.nodes)}

        def auto_label(node, d):
            i = pos.get(id(node))
            a, b = ta.graph.nodes[i].meta, tb.graph.nodes[i].meta
            return moves.get((a[0][d], b[0][d])) if a and b else None
    else:
        trace = _Trace(model, args, kwargs, lifted_names)
        _drop_dead(trace.graph, trace.outputs)
        graph, out_nodes, sym_dims = trace.graph, trace.outputs, []
        varying = [None] * len(graph.nodes)
        in_nodes = sorted([n for n in graph.nodes if n.kind == "input"], key=lambda n: n.index)
        auto_label = None
    return _emit(graph, trace, out_nodes, in_nodes, varying, sym_dims, named, helper, opset,
                 in_names, output_names, dynamic_axes, export_params,
                 keep_initializers_as_inputs, fold, onnx, auto_label)


class _Filtered:
    """A view of an ExportedProgram's graph without its dead nodes (the program itself is
    not changed)."""

    def __init__(self, graph, nodes):
        self.nodes = nodes
        self._graph = graph

    def inputs(self):
        return [n for n in self.nodes if n.kind == "input"]


class _NoValues:
    values = {}


def _from_program(ep, helper, opset, input_names, output_names, dynamic_axes, export_params,
                  keep_inits, fold, onnx):
    """An ExportedProgram's graph (ember.export): composites arrive whole (linear, conv,
    layer_norm, gelu, softmax, attention), each with its own mapping."""
    graph = ep.graph
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    named = {}
    for n in graph.lifted():
        spec = specs.get(n.name)
        if spec is not None and spec.kind.name in ("PARAMETER", "BUFFER"):
            named.setdefault(id(n.target), spec.target)
    in_nodes = sorted(graph.inputs(), key=lambda n: n.index)
    in_names = list(input_names or [])
    in_names += [n.name for n in in_nodes][len(in_names):]
    out_nodes = list(graph.output().args[0])[ep.n_mutations:]
    live = _live(graph, out_nodes)
    graph = _Filtered(graph, [n for n in graph.nodes if n.kind == "input" or id(n) in live])
    varying = [tuple(isinstance(d, dynamic.Sym) for d in n.meta[0]) if n.meta else None
               for n in graph.nodes]
    # per symbol s_i: the (flat user-input position, dim, Dim name) it is read from
    sources = getattr(ep, "sym_sources", None)
    if any(v and any(v) for v in varying) and sources is None:
        raise OnnxExporterError(
            "ember.onnx.export: this ExportedProgram has dynamic dims but does not say which "
            "input dims they are; export the module itself with dynamic_axes=")
    sym_dims = [(k, d) for k, d, *_ in sources or ()]
    if dynamic_axes is None:
        dynamic_axes = {}
    for k, d, *name in sources or ():
        dynamic_axes.setdefault(in_names[k], {}).setdefault(d, name[0] if name else f"s{k}")
    names = {f"syms[{i}]": src[2] for i, src in enumerate(sources or ()) if len(src) > 2}

    def auto_label(node, d):
        dim = node.meta[0][d] if node.meta else None
        return names.get(dim.code) if isinstance(dim, dynamic.Sym) else None
    return _emit(graph, _NoValues, out_nodes, in_nodes, varying, sym_dims, named, helper,
                 opset, in_names, output_names, dynamic_axes, export_params, keep_inits, fold,
                 onnx, auto_label)


def _fold_call(ex, n, values):
    """The value of call `n` when every input is a constant: recorded by the trace, or
    computed now by running the op on the constants. None when it cannot be folded."""
    if n.name in values:
        return values[n.name]
    from ..compiler.graph import map_nodes
    try:
        args = map_nodes(n.args, lambda x: ex.const_values[id(x)])
        kwargs = map_nodes(n.kwargs, lambda x: ex.const_values[id(x)])
        with no_grad():
            return n.target(*args, **kwargs)
    except Exception:
        return None


def _emit(graph, trace, out_nodes, in_nodes, varying, sym_dims, named, helper, opset,
          in_names, output_names, dynamic_axes, export_params, keep_inits, fold, onnx,
          auto_label=None):
    ex = _Exporter(helper, opset, fold)
    g = ex.g
    graph_inputs, init_inputs = [], []
    for name in in_names:
        g._names.add(name)
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    values = trace.values

    def shape_of(n):
        shape = n.meta[0] if n.meta else None
        vary = varying[index[id(n)]] if id(n) in index else None
        if shape is None:
            return None
        return tuple(None if vary and vary[d] else s for d, s in enumerate(shape))

    for k, n in enumerate(in_nodes):
        dt = dtype_name(n.meta[1])
        labels = _dims_of(dynamic_axes, in_names[k])
        dims = [labels.get(d, s) if s is None or d in labels else s
                for d, s in enumerate(shape_of(n))]
        for d, s in enumerate(shape_of(n)):
            if s is None and d not in labels:
                dims[d] = f"{in_names[k]}_dim_{d}"
        graph_inputs.append(helper.make_tensor_value_info(
            in_names[k], helper.np_dtype_to_tensor_dtype(np.dtype(dt)), dims))
        ex.env[id(n)] = V(in_names[k], dt, shape_of(n))

    sym_cache = {}

    def syms(sym):
        if sym.code not in sym_cache:
            dims = []
            for k, d in sym_dims:
                x = ex.env[id(in_nodes[k])]
                ex_size = in_nodes[k].meta[0][d]
                dims.append(DynInt(g, g.op("Shape", x, start=d, end=d + 1, dtype="int64"),
                                   ex_size if type(ex_size) is int else None))
            r = eval(sym.code, {"syms": dims})
            r.example = sym.example
            sym_cache[sym.code] = r
        return sym_cache[sym.code]

    for n in graph.nodes:
        if n.kind == "lifted":
            t = n.target
            arr = t.detach()._numpy() if isinstance(t, Tensor) else np.asarray(t)
            pname = named.get(id(t))
            if pname is None:
                ex.env[id(n)] = g.initializer(arr, "const")
                ex.const.add(id(n))
                ex.const_values[id(n)] = t
                continue
            g._names.add(pname)
            v = V(pname, dtype_name(arr.dtype), tuple(arr.shape))
            if export_params:
                from onnx import numpy_helper
                g.initializers.append(numpy_helper.from_array(np.asarray(arr, order="C"), pname))
            if not export_params or keep_inits:
                init_inputs.append(helper.make_tensor_value_info(
                    pname, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
            ex.env[id(n)] = v
        elif n.kind == "call":
            inputs = n.inputs()
            has_sym = []
            _find_syms(n.args, has_sym)
            _find_syms(n.kwargs, has_sym)
            op = n.op
            r = None
            if fold and not (op is not None and op.impure) and not has_sym and \
                    all(id(i) in ex.const for i in inputs) and not n.inplace and \
                    (op is not None or n.name in values):
                r = _fold_call(ex, n, values)
            if isinstance(r, Tensor):
                ex.env[id(n)] = g.const(r.detach()._numpy(), name="folded")
                ex.const.add(id(n))
                ex.const_values[id(n)] = r
                continue
            if isinstance(r, (tuple, list)) and r and all(isinstance(x, Tensor) for x in r):
                ex.env[id(n)] = tuple(g.const(x.detach()._numpy(), name="folded") for x in r)
                ex.const.add(id(n))
                ex.const_values[id(n)] = r
                continue
            _emit_call(ex, n, shape_of, syms)
        elif n.kind == "getitem":
            parent = ex.env[id(n.args[0])]
            v = parent[n.index]
            if id(n.args[0]) in ex.const:
                ex.const.add(id(n))
                ex.const_values[id(n)] = ex.const_values[id(n.args[0])][n.index]
            if isinstance(v, V) and n.meta is not None:
                v = _fix_dtype(g, v, n.meta[1])
                v = V(v.name, v.dtype, shape_of(n))
            ex.env[id(n)] = v
    # outputs: an Identity per output, named as asked
    outs = []
    n_out = len(out_nodes)
    names = list(output_names or [])
    for i in range(len(names), n_out):
        names.append("output" if n_out == 1 and not names else f"output_{i}")
    for i, (node, name) in enumerate(zip(out_nodes, names)):
        v = ex.env[id(node)]
        if v is None:
            raise OnnxExporterError(f"output {i} is not a value the graph computes")
        if name in g._names:
            name = g.fresh(name)
        g._names.add(name)
        g.nodes.append(helper.make_node("Identity", [v.name], [name], name=g.fresh("n_out")))
        labels = _dims_of(dynamic_axes, name)
        shape = shape_of(node) or ()
        dims = [labels.get(d) or (auto_label and auto_label(node, d)) or f"{name}_dim_{d}"
                if s is None or d in labels else s for d, s in enumerate(shape)]
        dt = dtype_name(node.meta[1])
        outs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), dims))
    # constants folded into others (and their inputs) are read by no node: not written
    used = {i for node in g.nodes for i in node.input} | {v.name for v in init_inputs}
    inits = [t for t in g.initializers if t.name in used]
    gp = helper.make_graph(g.nodes, "ember_graph", graph_inputs + init_inputs, outs,
                           initializer=inits)
    opsets = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(d, int(CUSTOM["opsets"].get(d, 1))) for d in sorted(g.domains)]
    model = helper.make_model(gp, opset_imports=opsets, producer_name="ember",
                              ir_version=helper.find_min_ir_version_for(opsets[:1]))
    return model


def _find_syms(x, out):
    if isinstance(x, dynamic.Sym):
        out.append(x)
    elif type(x) in (tuple, list):
        for v in x:
            _find_syms(v, out)
    elif type(x) is dict:
        for v in x.values():
            _find_syms(v, out)
    elif type(x) is slice:
        for v in (x.start, x.stop, x.step):
            _find_syms(v, out)


def _fix_dtype(g, v, meta_dtype):
    dt = dtype_name(meta_dtype)
    if dt is not None and v.dtype is not None and v.dtype != dt:
        return g.cast(v, dt)
    if v.dtype is None:
        v.dtype = dt
    return v


def _emit_call(ex, n, shape_of, syms):
    g = ex.g
    op, mapping = _resolve(n)
    opname = op.name if op is not None else n.opname
    if mapping is None and getattr(op, "custom", None) is not None:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: the custom op '{opname}' has no ONNX mapping (called at "
            f"{n.source}). Give it one: ember.onnx.register_custom_op_symbolic("
            f"'{opname}', fn, opset_version), @op.register_onnx, or "
            f"custom_translation_table={{op: fn}}")
    if mapping is None:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: the op '{opname}' has no ONNX mapping (called at "
            f"{n.source}). Add one to its OpDef (onnx=) or avoid the op in the exported "
            "model")
    args = ex.arg(n.args, None, syms)
    kwargs = ex.arg(n.kwargs, None, syms)
    kwargs.pop("out", None)
    g.out = (shape_of(n), n.meta[1]) if n.meta else (None, None)
    try:
        if isinstance(mapping, str):
            r = _string_mapping(g, op, mapping, args, kwargs)
        else:
            r = mapping(g, *args, **kwargs)
    except UnsupportedForExport as e:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: the op '{opname}' cannot be exported here ({e}; called at "
            f"{n.source})") from None
    except TypeError as e:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: the op '{opname}' was called in a form its ONNX mapping "
            f"does not handle ({e}; called at {n.source})") from None
    if isinstance(r, V) and n.meta is not None:
        r = _fix_dtype(g, r, n.meta[1])
        r = V(r.name, r.dtype, shape_of(n))
    ex.env[id(n)] = r
    if n.inplace and n.args and type(n.args[0]).__name__ == "Node":
        ex.env[id(n.args[0])] = r         # later reads of the mutated tensor see the result
