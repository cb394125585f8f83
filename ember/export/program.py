"""ExportedProgram: a captured graph, its signature, its state, and the module that runs it.

    ep = ember.export.export(model, (x,))
    print(ep)                          # the graph as Python, the signature, the ranges
    out = ep.module()(x)               # a Module running the graph (parameters as its state)
    ep.run_decompositions()            # composite ops (linear, layer_norm...) expanded

The graph is the compiler's Graph (ember/compiler/graph.py) in this form: `input` nodes are
the user's flattened tensor inputs (`index`: their position), `lifted` nodes the parameters,
buffers and constant tensors (`index`: position in `ep.lifted`, each named in the signature),
`call` nodes run `target` (a public ember op; `opname` is its registered name, e.g.
``ember.add``, ``Tensor.add_``, ``ember.ops.linear``; `op` its OpDef or None), and the
`output` node returns the mutated buffers' new values, then the user's outputs.
"""
from ..core.tensor import Tensor
from ..autograd.grad_mode import no_grad, state as _grad_state
from ..ops.registry import METHODS, POINTWISE, VIEW
from ..compiler.dynamic import clone_graph
from ..nn.modules.module import Module
from ..compiler.graph import Node, _fmt
from ..compiler.runtime import flatten, rebuilder
from .signature import InputKind, OutputKind


# _export.py's retrace (set when it is imported: it imports this file)
RETRACE = [None]


class GraphModule:
    """`ep.graph_module`: the graph, callable on every graph input in order (lifted state,
    then the user's flat inputs), returning the flat outputs; prints as Python."""

    def __init__(self, ep):
        self._ep = ep
        self.graph = ep.graph

    @property
    def code(self):
        return readable(self._ep, cls=False)

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        src = readable(self._ep)
        if print_output:
            print(src)
        return src

    def __str__(self):
        return readable(self._ep)

    def __call__(self, *flat):
        n = len(self._ep.lifted)
        return tuple(self._ep._run(list(flat[n:]), list(flat[:n])))


class ExportedProgram:
    """What `ember.export.export` returns (torch.export.ExportedProgram's role)."""

    def __init__(self, graph, graph_signature, state_dict, constants, range_constraints,
                 lifted, in_spec, out_spec, input_paths, input_names, checks, syms,
                 aliases=None, example_inputs=None, sym_specs=()):
        self.graph = graph
        self.graph_signature = graph_signature
        self.state_dict = state_dict
        self.constants = constants
        self.range_constraints = range_constraints
        self.lifted = lifted                  # per lifted index: (kind, target)
        self._in_spec, self._out_spec = in_spec, out_spec
        self._input_paths, self._input_names = input_paths, input_names
        self._checks, self._syms = checks, syms
        self._aliases = dict(aliases or {})   # tied parameter FQN -> the FQN it repeats
        self.example_inputs = example_inputs
        self._sym_specs = list(sym_specs)     # per symbol: (Dim name, min, max)
        # how export traced it ({"device": "meta" or "cpu", "reason": why not on meta});
        # None for a loaded program
        self.trace_info = None
        self._set_replays()
        self._rebuild = rebuilder(out_spec)
        self.n_mutations = sum(1 for s in graph_signature.output_specs
                               if s.kind is not OutputKind.USER_OUTPUT)

    @property
    def graph_module(self):
        return GraphModule(self)

    @property
    def sym_sources(self):
        """Per symbol ``s{i}``: (user-input position, dim, Dim name) where its size is read."""
        return [(k, d, self._sym_specs[i][0]) for i, (k, d) in enumerate(self._syms)]

    @property
    def call_spec(self):
        return (self._in_spec, self._out_spec)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self):
        rc = "{" + ", ".join(f"{k}: {v!r}" for k, v in self.range_constraints.items()) + "}"
        body = readable(self).replace("\n", "\n    ")
        sig = str(self.graph_signature).replace("\n", "\n    ")
        return f"ExportedProgram:\n    {body}\n\nGraph signature:\n    {sig}\n\n" \
               f"Range constraints: {rc}\n"

    __repr__ = __str__

    # ---- running ----
    def _lifted_values(self):
        out = []
        for kind, target in self.lifted:
            src = self.constants if kind is InputKind.CONSTANT_TENSOR or (
                target not in self.state_dict) else self.state_dict
            out.append(src[target])
        return out

    def _flat_inputs(self, args, kwargs):
        """The graph's user inputs read from a call, after checking its structure and the
        sizes torch checks (static sizes equal, dynamic ones in range)."""
        _match(self._in_spec, (tuple(args), dict(kwargs)))
        by_path = dict(flatten(tuple(args), dict(kwargs)))
        flat = [by_path[p] for p in self._input_paths]
        for k, d, what, v in self._checks:
            t = flat[k]
            if d is None:
                if t.dim() != v:
                    raise AssertionError(f"Guard failed: {self._input_names[k]}.dim() == {v}")
                continue
            size = t._data.shape[d]
            src = f"{self._input_names[k]}.size()[{d}]"
            if what == "==" and size != v:
                raise AssertionError(f"Guard failed: {src} == {v}")
            if what == ">=" and size < v:
                raise AssertionError(f"Guard failed: {src} >= {v}")
            if what == "<=" and size > v:
                raise AssertionError(f"Guard failed: {src} <= {v}")
            if what == "eq" and size != flat[v[0]]._data.shape[v[1]]:
                raise AssertionError(f"Guard failed: {src} == "
                                     f"{self._input_names[v[0]]}.size()[{v[1]}]")
        return flat

    def _set_replays(self):
        self._replay = self.graph.compile_python("replay")
        self._replay_inplace = inplace_replay(self.graph)

    def _run(self, flat, lifted):
        syms = tuple(flat[k]._data.shape[d] for k, d in self._syms)
        # without autograd watching, intermediates may be overwritten once dead; a tracer
        # (ember.compile, export) sees the functional graph, which it fuses better
        if not _grad_state.modes and (not _grad_state.enabled or not any(
                t._requires_grad for t in flat) and not any(t._requires_grad for t in lifted)):
            return self._replay_inplace(flat, lifted, syms)
        return self._replay(flat, lifted, syms)

    def module(self):
        """A Module that runs the graph: the parameters and buffers are its state (under
        their FQNs), mutated buffers are updated after each call.

        >>> m = ep.module(); y = m(x)
        """
        return ExportedModule(self)

    # ---- transforms ----
    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """A new ExportedProgram with every composite op (linear, layer_norm, gelu,
        softmax, conv2d...) replaced by its decomposition (OpDef.decomp) in ember ops."""
        if decomp_table is None or getattr(decomp_table, "every_composite", False):
            return RETRACE[0](self, decompose=True)
        if not len(decomp_table):
            return self
        raise NotImplementedError("ember.export: run_decompositions decomposes every "
                                  "composite op (decomp_table=None or "
                                  "default_decompositions()); a custom table is not supported")

    def validate(self):
        self.graph.verify()
        return True


def inplace_replay(graph):
    """The graph's replay with buffer reuse: a pointwise call whose first operand is a dead
    intermediate of its shape and dtype (fresh memory, never viewed, read last by this call)
    runs as its in-place method (``mul(a, b)`` -> ``a.mul_(b)``), as eager code with
    ``inplace=True`` layers does. The graph itself stays functional; only this replay, used
    when autograd is not recording, overwrites."""
    g, _ = clone_graph(graph)
    for n, c in zip(graph.nodes, g.nodes):
        c.op = n.op
    last, viewed = {}, set()
    for i, n in enumerate(g.nodes):
        for x in n.inputs():
            last[id(x)] = i
        if n.kind == "call" and n.op is not None and n.op.kind == VIEW and n.args and \
                type(n.args[0]) is Node:
            viewed.add(id(n.args[0]))
    out = g.output()
    outputs = {id(x) for x in out.inputs()} if out is not None else set()
    for i, n in enumerate(g.nodes):
        if n.kind != "call" or n.op is None or n.op.kind != POINTWISE or n.kwargs or \
                not n.args or not n.opname.startswith("ember.") or n.opname.count(".") != 1:
            continue
        method = METHODS.get(n.opname[6:] + "_")
        a = n.args[0]
        if method is None or type(a) is not Node or a.kind != "call" or a.op is None or \
                not a.op.fresh_result or a.op.kind == VIEW or last.get(id(a)) != i or \
                id(a) in viewed or id(a) in outputs or a.meta is None or n.meta is None:
            continue
        if sum(1 for x in n.inputs() if x is a) != 1 or tuple(a.meta[0]) != tuple(
                n.meta[0]) or a.meta[1] is not n.meta[1]:
            continue
        n.target = method
    return g.compile_python("replay_inplace")


def _match(spec, value, path="inputs"):
    """Raise torch's ValueError when `value`'s structure is not the exported one."""
    kind = spec[0]
    ok = True
    if kind == "T":
        ok = isinstance(value, Tensor)
    elif kind in ("tuple", "list"):
        ok = type(value) is (tuple if kind == "tuple" else list) and len(value) == len(spec[1])
        if ok:
            for i, (s, v) in enumerate(zip(spec[1], value)):
                _match(s, v, f"{path}[{i}]")
    elif kind == "dict":
        ok = type(value) is dict and list(value) == [k for k, _ in spec[1]]
        if ok:
            for k, s in spec[1]:
                _match(s, value[k], f"{path}[{k!r}]")
    else:
        ok = not isinstance(value, Tensor) and type(value) in (int, float, bool, str, type(
            None)) and value == spec[1] or value is spec[1]
        if not ok:
            raise ValueError(f"Trying to flatten user inputs with exported input tree spec: "
                             f"{path} was exported as the constant {spec[1]!r}, but got "
                             f"{value!r}")
    if not ok:
        raise ValueError(f"Trying to flatten user inputs with exported input tree spec: "
                         f"{_spec_text(spec)} but actually got inputs with tree spec of: "
                         f"{_spec_text(spec_of(value))} (at {path})")


def spec_of(x):
    """The input structure: ("T",) per tensor, containers kept, other leaves as constants."""
    if isinstance(x, Tensor):
        return ("T",)
    if type(x) in (tuple, list):
        return (type(x).__name__, [spec_of(v) for v in x])
    if type(x) is dict:
        return ("dict", [(k, spec_of(v)) for k, v in x.items()])
    return ("const", x)


def _spec_text(spec):
    k = spec[0]
    if k == "T":
        return "*"
    if k in ("tuple", "list"):
        inner = ", ".join(_spec_text(s) for s in spec[1])
        return f"({inner})" if k == "tuple" else f"[{inner}]"
    if k == "dict":
        return "{" + ", ".join(f"{key!r}: {_spec_text(s)}" for key, s in spec[1]) + "}"
    return repr(spec[1])


class ExportedModule(Module):
    """`ep.module()`: runs the exported graph with this module's parameters and buffers
    (registered under the original FQNs), so load_state_dict, .to() and autograd work."""

    def __init__(self, ep):
        super().__init__()
        self.__dict__["_ep"] = ep
        self.__dict__["graph"] = ep.graph
        sig = {s.target: s for s in ep.graph_signature.input_specs if s.target is not None}
        for kind, target in ep.lifted:
            t = ep.state_dict.get(target) if target in ep.state_dict else \
                ep.constants[target]
            owner, name = self._owner(target)
            if kind is InputKind.PARAMETER:
                owner.register_parameter(name, t)
            elif kind is InputKind.BUFFER:
                owner.register_buffer(name, t, persistent=sig[target].persistent is not False)
            else:
                owner.__dict__[name] = t
        for alias, target in ep._aliases.items():
            owner, name = self._owner(alias)
            owner.register_parameter(name, self._get(target))
        self.__dict__["_getters"] = [self._getter(target) for _, target in ep.lifted]
        self.__dict__["_mutations"] = [
            (i, self._getter(s.target)) for i, s in enumerate(ep.graph_signature.output_specs)
            if s.kind is OutputKind.BUFFER_MUTATION]
        self.__dict__["_input_mutations"] = [
            (i, s.target) for i, s in enumerate(ep.graph_signature.output_specs)
            if s.kind is OutputKind.USER_INPUT_MUTATION]

    def _owner(self, fqn):
        m = self
        *path, name = fqn.split(".")
        for p in path:
            if p not in m._modules:
                m.add_module(p, Module())
            m = m._modules[p]
        return m, name

    def _get(self, fqn):
        m, name = self._owner(fqn)
        for d in (m._parameters, m._buffers):
            if name in d:
                return d[name]
        return m.__dict__[name]

    def _getter(self, fqn):
        m, name = self._owner(fqn)
        if name in m._parameters:
            return lambda d=m._parameters: d[name]
        if name in m._buffers:
            return lambda d=m._buffers: d[name]
        return lambda d=m.__dict__: d[name]

    @property
    def code(self):
        return readable(self._ep, cls=False)

    def print_readable(self, print_output=True):
        return self._ep.graph_module.print_readable(print_output)

    def forward(self, *args, **kwargs):
        ep = self._ep
        flat = ep._flat_inputs(args, kwargs)
        outs = ep._run(flat, [g() for g in self._getters])
        if self._mutations or self._input_mutations:
            with no_grad():
                for i, get in self._mutations:
                    get().copy_(outs[i])
                for i, name in self._input_mutations:
                    k = next(j for j, n in enumerate(ep.graph.inputs()) if n.name == name)
                    flat[k].copy_(outs[i])
        return ep._rebuild(outs[ep.n_mutations:])


# ---- printing ---------------------------------------------------------------------------
def _short_dtype(dt):
    """torch's annotation of a dtype: f32, i64, bf16, b8."""
    name = dt.name
    if name == "bool":
        return "b8"
    for prefix, short in (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i"),
                          ("complex", "c")):
        if name.startswith(prefix):
            return short + name[len(prefix):]
    return name


def _ann(meta):
    if not meta or meta[1] is None:
        return ""
    dims = ", ".join(str(d) for d in meta[0])
    return f': "{_short_dtype(meta[1])}[{dims}]"'


def readable(ep, cls=True):
    """The graph as Python in torch's print_readable form."""
    g = ep.graph
    params = [n for n in g.lifted()] + [n for n in g.inputs()]
    ind = "        " if cls else "    "
    lines = ["class GraphModule(ember.nn.Module):"] if cls else []
    lines.append(ind[:-4] + "def forward(self, " + ", ".join(
        f"{n.name}{_ann(n.meta)}" for n in params) + "):")
    last = None
    for n in g.nodes:
        if n.kind in ("input", "lifted"):
            continue
        if n.kind == "output":
            lines.append(f"{ind}return {_fmt(tuple(n.args[0]))}")
            continue
        if n.source and n.source != last:
            lines.append(f"{ind}# File: {n.source}")
            last = n.source
        if n.kind == "getitem":
            rhs = f"{n.args[0].name}[{n.index}]"
        else:
            args = [_fmt(a) for a in n.args] + [f"{k}={_fmt(v)}" for k, v in n.kwargs.items()]
            name = n.opname
            if "::" in name:          # a custom op, as torch prints torch.ops.mylib.myop.default
                name = name.replace("::", ".") + ".default"
            rhs = f"{name}({', '.join(args)})"
        lines.append(f"{ind}{n.name}{_ann(n.meta)} = {rhs}")
    return "\n".join(lines) + "\n"
