"""`export()`: trace (twice when some sizes are dynamic), check the shape constraints, and
assemble the ExportedProgram (functional graph, lifted state in torch's order, signature).

Dynamic sizes (_dynamic.py) come from a second trace unified with the first by the
compiler's unification: the sizes that changed become symbols (``view(s0, 4, 8)``), and the
nodes' metadata gets symbolic shapes here.
"""
import keyword
import math
import re

from ..nn.modules.module import Module
from ..ops.registry import op_for
from ..compiler.graph import Node
from . import _capture
from ._capture import UserError, trace, resolve, functionalize, clean
from ._capture import ConstraintViolationError  # noqa: F401  (ember.export re-exports it)
from ._dynamic import dynamic_capture, symbolic_meta
from .dims import parse, ValueRange
from . import program as _program
from .program import ExportedProgram, spec_of
from .signature import (InputKind, OutputKind, InputSpec, OutputSpec, TensorArgument,
                        ExportGraphSignature)

# names the replay code itself uses (ember/compiler/graph.py's compile_python)
_KEEP_OUT = {"float", "slice", "inputs", "lifted", "syms", "ember", "self", "F"}


class _FunctionModule(Module):
    """A plain function exported as a module's forward (ember.jit.trace accepts functions)."""

    def __init__(self, fn):
        super().__init__()
        self.__dict__["fn"] = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=False):
    """Capture `mod`'s forward on example inputs as an ExportedProgram: a graph of ember ops
    with the parameters and buffers lifted as inputs. `mod`'s parameters, buffers and the
    global RNG state are left as they were.

    >>> ep = ember.export.export(model, (x,))
    >>> ep.module()(x)
    >>> batch = ember.export.Dim("batch", max=64)
    >>> ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    """
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args)}")
    kwargs = {} if kwargs is None else dict(kwargs)
    return _export(mod, args, kwargs, parse(mod, args, kwargs, dynamic_shapes))


def _export(mod, args, kwargs, dyn, decompose=False):
    first = trace(mod, args, kwargs, decompose=decompose)
    general = None
    sym_specs = []
    if dyn:
        general, sym_specs = dynamic_capture(mod, args, kwargs, dyn, first, decompose)
    ep = _assemble(mod, args, kwargs, first, general, sym_specs)
    # how the program was traced: {"device": "meta" | "cpu", "reason": why not on meta}
    ep.trace_info = dict(first.info)
    second = getattr(general, "second", None)
    if second is not None and second.info["reason"] and not first.info["reason"]:
        ep.trace_info = dict(second.info)
    return ep


# ---- assembling the program -------------------------------------------------------------
def _kind_maps(mod):
    params, buffers, persistent = {}, {}, {}
    for n, p in mod.named_parameters():
        params.setdefault(id(p), n)
    for prefix, m in mod.named_modules():
        for name, b in m._buffers.items():
            if b is None:
                continue
            fqn = f"{prefix}.{name}" if prefix else name
            if id(b) not in buffers:
                buffers[id(b)] = fqn
                persistent[fqn] = name not in m._non_persistent_buffers_set
    return params, buffers, persistent


def _aliases(mod):
    seen, out = {}, {}
    for n, p in mod.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            out[n] = seen[id(p)]
        else:
            seen[id(p)] = n
    return out


def _ident(s):
    return re.sub(r"\W", "_", s)


def _assemble(mod, args, kwargs, first, general, sym_specs):
    if general is not None:
        g, out_nodes, struct = general.graph, general.out_nodes, general.struct
        syms, sym_equal = general.syms, general.sym_equal
    else:
        g, out_nodes, struct, syms, sym_equal = first.graph, first.out_nodes, first.struct, \
            [], []
    meta_of = {}
    if general is not None:
        second = general.second
        pairs = [(k, d, first.input_shapes[k][d], second.input_shapes[k][d])
                 for k, d in syms]
        meta_of = symbolic_meta(first.graph, second.graph, pairs)
        for n in g.nodes:       # the unified graph is a clone of the first: same names
            if n.name in meta_of and n.meta is not None:
                n.meta = (meta_of[n.name],) + tuple(n.meta[1:])
    _capture.fold_array_constants(g, first.tracer.made_from_nothing)
    for n in g.nodes:
        if n.kind == "call":
            name, fn = resolve(n)
            n.opname, n.target, n.method = name, fn, False
            if n.op is None:
                n.op = op_for(name.split(".")[-1])
    current, mutated = functionalize(g)
    out_nodes = [_capture.latest(current, n) for n in out_nodes]
    params, buffers, persistent = _kind_maps(mod)
    names = _capture.lifted_names(mod)
    seen = {id(n.target) for n in g.lifted()}
    for t in _capture._state_tensors(mod):
        if id(t) not in seen:       # unused state is still the program's (torch lists it)
            n = g.add("lifted", "unused", target=t, meta=(tuple(t._data.shape), t.dtype,
                                                           t._data.strides, t._requires_grad))
            g.nodes.insert(0, g.nodes.pop())
    lifted = g.lifted()
    kinds = []
    n_const = 0
    for n in lifted:
        t = n.target
        if id(t) in params:
            kinds.append((0, InputKind.PARAMETER, params[id(t)], "p_"))
        elif id(t) in buffers:
            kinds.append((1, InputKind.BUFFER, buffers[id(t)], "b_"))
        else:
            fqn = names.get(id(t))
            if fqn is None:
                fqn = f"lifted_tensor_{n_const}"
                n_const += 1
            kinds.append((2, InputKind.CONSTANT_TENSOR, fqn, "c_"))
    rank = {fqn: i for i, fqn in enumerate(list(params.values()) + list(buffers.values()))}
    order = sorted(range(len(lifted)), key=lambda i: (kinds[i][0], rank.get(kinds[i][2], i)))
    inputs = g.inputs()
    # mutated inputs/buffers: new values returned first (torch's order)
    mut_specs, mut_nodes = [], []
    for i in order:
        n = lifted[i]
        if id(n) in mutated:
            kind = kinds[i][1]
            if kind is InputKind.PARAMETER:
                raise UserError(f"ember.export: the forward mutates parameter "
                                f"{kinds[i][2]!r} in place; export supports buffer mutation")
            mut_nodes.append(mutated[id(n)])
            mut_specs.append((OutputKind.BUFFER_MUTATION, kinds[i][2]))
    for n in inputs:
        if id(n) in mutated:
            mut_nodes.append(mutated[id(n)])
            mut_specs.append((OutputKind.USER_INPUT_MUTATION, n))    # named below
    out = g.add("output", "output", args=(tuple(mut_nodes + out_nodes),))
    clean(g)
    # rename and renumber the lifted tensors; put them first, then the inputs
    state_dict, constants, lifted_list, in_specs = {}, {}, [], []
    for j, i in enumerate(order):
        n = lifted[i]
        _, kind, fqn, prefix = kinds[i]
        g._names.discard(n.name)
        n.name = g._unique(prefix + _ident(fqn))
        n.index = j
        lifted_list.append((kind, fqn))
        pers = persistent.get(fqn) if kind is InputKind.BUFFER else None
        if kind is InputKind.PARAMETER or (kind is InputKind.BUFFER and pers):
            state_dict[fqn] = n.target
        else:
            constants[fqn] = n.target
        in_specs.append(InputSpec(kind, TensorArgument(n.name), fqn, pers))
    for k, n in enumerate(inputs):
        n.index = k
        if n.name.startswith("_"):
            _rename(g, n, n.name[1:])
        in_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(n.name), None))
    rest = [n for n in g.nodes if n.kind not in ("input", "lifted")]
    g.nodes = [lifted[i] for i in order] + inputs + rest
    out_specs = [OutputSpec(k, TensorArgument(x.name), t.name if type(t) is Node else t)
                 for (k, t), x in zip(mut_specs, mut_nodes)]
    out_specs += [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(x.name), None)
                  for x in out.args[0][len(mut_nodes):]]
    sig = ExportGraphSignature(in_specs, out_specs)
    input_names = [_source_name(mod, p) for p in first.input_paths]
    checks, rc = _checks(first, syms, sym_equal, sym_specs)
    g.verify()
    return ExportedProgram(g, sig, state_dict, constants, rc, lifted_list,
                           spec_of((tuple(args), dict(kwargs))), struct, first.input_paths,
                           input_names, checks, list(syms), _aliases(mod),
                           example_inputs=(args, kwargs), sym_specs=sym_specs)


def _rename(g, n, name):
    """Name node `n` `name` when free (builtins such as `input` are fine names of inputs:
    the replay code calls none of them), else a unique variant of it."""
    g._names.discard(n.name)
    if name.isidentifier() and name not in g._names and name not in _KEEP_OUT and \
            not keyword.iskeyword(name):
        n.name = name
        g._names.add(name)
    else:
        n.name = g._unique(name)


def _source_name(mod, path):
    """``args[0]['y']`` -> ``x['y']`` (the forward's parameter name), as torch's messages."""
    import inspect
    if path.startswith("args["):
        i = path[5:].split("]")[0]
        rest = path[5 + len(i) + 1:]
        try:
            names = list(inspect.signature(mod.forward).parameters)
            base = names[int(i)] if int(i) < len(names) and not names[int(i)].startswith(
                "*") else f"args[{i}]"
        except (TypeError, ValueError):
            base = f"args[{i}]"
        return base + rest
    return path[len("kwargs["):].split("]")[0].strip("'") + path[len("kwargs["):].split(
        "]", 1)[1] if path.startswith("kwargs[") else path


def _checks(first, syms, sym_equal, sym_specs):
    """The size checks a call must pass, and the range constraints."""
    sym_at = {(k, d): i for i, (k, d) in enumerate(syms)}
    eq_at = {(k, d): s for k, d, s in sym_equal}
    checks, rc = [], {}
    for i, (label, lo, hi) in enumerate(sym_specs):
        rc[f"s{i}"] = ValueRange(lo, hi)
    for k, shape in enumerate(first.input_shapes):
        checks.append((k, None, "ndim", len(shape)))
        for d, size in enumerate(shape):
            s = sym_at.get((k, d), eq_at.get((k, d)))
            if s is None:
                checks.append((k, d, "==", size))
                continue
            _, lo, hi = sym_specs[s]
            checks.append((k, d, ">=", lo))
            if hi != math.inf:
                checks.append((k, d, "<=", hi))
            if (k, d) in eq_at:
                checks.append((k, d, "eq", syms[s]))
    return checks, rc


def retrace(ep, decompose=False):
    """Export `ep.module()` again (run_decompositions: with composite ops decomposed)."""
    m = ep.module()
    args, kwargs = example_inputs_of(ep)
    dyn = {}
    for i, (k, d) in enumerate(ep._syms):
        from .dims import DimSpec
        label, lo, hi = ep._sym_specs[i]
        dyn.setdefault(ep._input_paths[k], {})[d] = DimSpec(label, lo, hi)
    for k, d, what, v in ep._checks:
        if what == "eq":
            label, lo, hi = ep._sym_specs[ep._syms.index(tuple(v))] if tuple(v) in \
                ep._syms else (None, 2, math.inf)
            from .dims import DimSpec
            dyn.setdefault(ep._input_paths[k], {})[d] = DimSpec(label, lo, hi)
    new = _export(m, args, kwargs, dyn, decompose=decompose)
    # the replay's lines stand for the original nodes: give the new nodes their sources
    lines, k = {}, 2
    for n in ep.graph.nodes:
        if n.kind in ("input", "lifted", "call", "getitem", "output"):
            for fn in ("replay", "replay_inplace"):
                lines[f"<ember graph {fn}>:{k} in {fn}"] = n.source
            k += 1
    for n in new.graph.nodes:
        if n.source in lines:
            n.source = lines[n.source]
    for n, old in zip(new.graph.inputs(), ep.graph.inputs()):
        _rename(new.graph, n, old.name)
    for s, old in zip([s for s in new.graph_signature.input_specs
                       if s.kind is InputKind.USER_INPUT], ep.graph.inputs()):
        s.arg.name = old.name
    new._input_names = list(ep._input_names)
    new._set_replays()
    new.example_inputs = ep.example_inputs
    return new


def example_inputs_of(ep):
    """Example inputs for a program: its own when it has them, else zeros of the traced
    shapes and dtypes."""
    if ep.example_inputs is not None:
        return ep.example_inputs
    from ..ops.creation import zeros
    metas = [n.meta for n in ep.graph.inputs()]
    it = iter(metas)

    def build(spec):
        if spec[0] == "T":
            m = next(it)
            return zeros(tuple(d if type(d) is int else d.example for d in m[0]),
                         dtype=m[1])
        if spec[0] in ("tuple", "list"):
            r = [build(s) for s in spec[1]]
            return tuple(r) if spec[0] == "tuple" else r
        if spec[0] == "dict":
            return {k: build(s) for k, s in spec[1]}
        return spec[1]
    args, kwargs = build(ep._in_spec)
    return tuple(args), dict(kwargs)


_program.RETRACE[0] = retrace
