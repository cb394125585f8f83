"""Capture for export: run a module once under the compiler's Tracer and turn what it recorded
into a functional, self-contained graph (the ExportedProgram's).

The Tracer (ember/compiler/tracer.py) records every op call into a Graph as it runs for
real. Export asks three more things of it (`ExportTracer`):
- composite ops (linear, layer_norm, gelu, softmax, sdpa, conv2d...) are recorded as one node
  each, as torch.export keeps aten.linear; `run_decompositions()` expands them later. The
  tracer says so by being an ``observing`` mode (ember/ops/nn_ops.py): a composite then hands
  it the whole call instead of its decomposition;
- reading a traced value from Python (``if x.sum() > 0:``, ``.item()``) is an error naming the
  user's line (`UserError`), never a silent graph break;
- a tensor made outside the ops it sees (``ember.tensor([...])`` in forward) is a constant.

The trace runs on meta stand-ins of the module's state and of the inputs (_fake.py: no
compute, no tensor memory), and the graph's lifted nodes are the caller's own tensors. Where
an op cannot run on meta, it runs again on real tensors, saving and restoring what the run
could change: every parameter's and buffer's values (BatchNorm in training updates its
running statistics), and running on clones of the inputs. Either way the global RNG state
is restored.

`functionalize` then rewrites in-place ops into their out-of-place form (``rm.mul_(0.9)`` ->
``mul(rm, 0.9)``) so that a buffer's new value is a node the program returns (torch's
BUFFER_MUTATION), and `resolve` names each call's op by a registered public name, which is
also what the file format stores.
"""
import importlib
import logging

from ..core.tensor import Tensor
from ..autograd.grad_mode import state, no_grad
from ..ops.registry import FUNCTIONS, METHODS, OPS, VIEW, op_for
from ..ops.random import get_rng_state, set_rng_state
from ..compiler.tracer import Tracer, user_source
from ..compiler.graph import Node
from ..compiler.runtime import flatten, slots
from ..compiler.passes import dce
from . import _fake

_log = logging.getLogger("ember.export")


class UserError(RuntimeError):
    """Export cannot capture this program as written (torch._dynamo.exc.UserError's role):
    data-dependent control flow, an unsupported call, or violated shape constraints. The
    message names the user's file and line."""


class ConstraintViolationError(UserError):
    """A size marked dynamic that the program specialises (torch: UserError "Constraints
    violated")."""


class ExportTracer(Tracer):
    """The Tracer with export's rules (see the module docstring)."""

    observing = True      # composites come as one call (ember/ops/nn_ops.py's protocol)

    def __init__(self, lifted_names, decompose=False):
        super().__init__(lifted_names, fullgraph=True)
        # run_decompositions traces with composites decomposed: not observing
        self.observing = not decompose
        self.made_from_nothing = {}   # name -> value of calls that read no traced tensor
        self.fake = False             # tracing on meta stand-ins (_fake.py)
        self.stand_in = {}            # id(real tensor) -> its meta stand-in

    def __enter__(self):
        # unlike compile's tracer, no census of the tensors that exist: export lifts any
        # tensor it did not see made as a constant
        self.preexisting_ids = ()
        state.modes = state.modes + (self,)
        from ..core.tensor import data_access_hooks
        data_access_hooks.append(self._on_data_access)
        return self

    def node_of(self, t):
        node = self.proxies.get(id(t)) or self.array_proxies.get(id(t._data))
        if node is None:
            name = self.lifted_names.get(id(t), "const")
            node = self.graph.add("lifted", name, target=t, index=self.n_lifted)
            self.n_lifted += 1
            self._bind(t, node)
        return node

    def call(self, op, fn, args, kwargs):
        name = getattr(fn, "__name__", str(op))
        if name == "backward":
            raise UserError(f"ember.export: backward() inside the exported function is not "
                            f"supported ({user_source()})")
        if isinstance(op, str) and (op.startswith("optimizer.") or
                                    op.startswith("ember.compiler.disabled")):
            raise UserError(f"ember.export: {op} cannot be exported ({user_source()})")
        if self.fake and _fake.has_real(args) or self.fake and _fake.has_real(kwargs):
            # a real tensor the forward made (arange, ones): the op gets its meta stand-in,
            # which reads as the same graph node
            args = _fake.stand_ins(args, self._stand_in)
            kwargs = _fake.stand_ins(kwargs, self._stand_in)
        if self.fake:
            fn = _fake.meta_rule_on_refusal(op, fn)
        return super().call(op, fn, args, kwargs)

    def _stand_in(self, t):
        s = self.stand_in.get(id(t))
        if s is None:
            node = self.node_of(t)
            s = self.stand_in[id(t)] = _fake.meta_like(t)
            meta = node.meta
            self._bind(s, node)
            node.meta = meta
            self.keep.append(t)
        return s

    def _record(self, name, fn, margs, mkwargs, result, source, inplace, op=None):
        fn = getattr(fn, "_export_wraps", fn)      # the op itself, not the meta fallback
        node = super()._record(name, fn, margs, mkwargs, result, source, inplace, op)
        if not node.inputs() and isinstance(result, Tensor):
            self.made_from_nothing[node.name] = result     # may become a constant
        return node

    def _break(self, reason):
        where = user_source()
        raise UserError(
            f"ember.export: data-dependent control flow or value read is not supported: "
            f"{reason} (at {where}). Export records ops, not Python decisions on tensor "
            f"values: compute with tensor ops instead (ember.where, masking), or move the "
            f"decision out of the exported forward.")

    def _grad_read(self, t):
        return None


def lifted_names(mod):
    """{id(tensor): FQN} of the module's parameters and buffers (first name of a tied
    tensor) and of other tensors held as module attributes (constants)."""
    names = {}
    for n, p in mod.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), n)
    for n, b in mod.named_buffers(remove_duplicate=False):
        if b is not None:
            names.setdefault(id(b), n)
    for prefix, m in mod.named_modules():
        for k, v in vars(m).items():
            if isinstance(v, Tensor) and not k.startswith("__"):
                names.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
    return names


def _state_tensors(mod):
    seen, out = set(), []
    for t in list(mod.parameters()) + [b for b in mod.buffers() if b is not None]:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _clone_inputs(x, memo):
    if isinstance(x, Tensor):
        if id(x) not in memo:
            with no_grad():
                c = x.detach().clone()
            c.requires_grad_(x.requires_grad)
            memo[id(x)] = c
        return memo[id(x)]
    if type(x) in (tuple, list):
        return type(x)(_clone_inputs(v, memo) for v in x)
    if type(x) is dict:
        return {k: _clone_inputs(v, memo) for k, v in x.items()}
    return x


class Trace:
    """One run under the ExportTracer: its graph, output structure and nodes, input nodes
    with their paths in (args, kwargs) and their shapes."""

    def __init__(self, tracer, struct, out_nodes, input_paths, input_shapes):
        self.tracer, self.graph = tracer, tracer.graph
        self.struct, self.out_nodes = struct, out_nodes
        self.input_paths, self.input_shapes = input_paths, input_shapes


def trace(mod, args, kwargs, decompose=False):
    """Run ``mod(*args, **kwargs)`` under an ExportTracer, on meta stand-ins of the module's
    state and of the inputs (_fake.py) unless an op cannot run on meta, then on real
    tensors; the module's state, the RNG state and the caller's inputs are as before
    afterwards, whatever happened. The Trace's `info` says which and why."""
    state_tensors = _fake.state_tensors(mod)
    on_meta = [t for t in state_tensors if _fake.is_meta(t)]
    try:
        t = _trace(mod, args, kwargs, decompose, state_tensors, fake=True)
        t.info = {"device": "meta", "reason": None}
        return t
    except UserError:
        raise
    except Exception as e:        # an op without a meta rule, or a meta rule that failed
        if on_meta:
            raise
        why = _fake.failure(e)
    _log.info("ember.export: tracing on real tensors, since the trace on meta tensors "
              "failed: %s", why)
    t = _trace(mod, args, kwargs, decompose, state_tensors, fake=False)
    t.info = {"device": "cpu", "reason": why}
    return t


def _trace(mod, args, kwargs, decompose, state_tensors, fake):
    names = lifted_names(mod)
    tensors = _state_tensors(mod)
    rng = get_rng_state()
    memo = {}
    if fake:
        swap = _fake.swap_state(state_tensors)
        saved = versions = ()
        args, kwargs = _fake.meta_inputs(args, memo), _fake.meta_inputs(kwargs, memo)
    else:
        swap = None
        saved = [t._data.copy() for t in tensors]
        versions = [t._version for t in tensors]
        args, kwargs = _clone_inputs(args, memo), _clone_inputs(kwargs, memo)
    tracer = ExportTracer(names, decompose)
    tracer.fake = fake
    try:
        if swap is not None:
            swap.__enter__()
        with no_grad():
            tracer.__enter__()
            try:
                flat = flatten(args, kwargs)
                paths, shapes = [], []
                for path, t in flat:
                    if tracer.known(t) is None:
                        tracer.add_input(t, _input_name(mod, path))
                        paths.append(path)
                        shapes.append(tuple(t._data.shape))
                result = mod(*args, **kwargs)
                out_nodes = []
                struct = slots(tracer, result, out_nodes)
            finally:
                tracer.__exit__(None, None, None)
    finally:
        if swap is not None:
            swap.__exit__(None, None, None)
        for t, a, v in zip(tensors, saved, versions):
            t._data[...] = a
            if t._storage is not None:      # as if nothing wrote: autograd's checks agree
                t._storage.version = v
        set_rng_state(rng)
    if fake:
        for n in tracer.graph.nodes:
            if n.kind == "call":
                n.args, n.kwargs = _fake.real_device(n.args), _fake.real_device(n.kwargs)
    return Trace(tracer, struct, out_nodes, paths, shapes)


def _input_name(mod, path):
    """A readable name for the input at `path` (``args[0]`` -> the forward's parameter)."""
    import inspect
    try:
        params = [p for p in inspect.signature(mod.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError, AttributeError):
        params = []
    if path.startswith("args["):
        i = path[5:].split("]")[0]
        rest = path[5 + len(i) + 1:]
        base = params[int(i)].name if int(i) < len(params) else f"args_{i}"
    else:
        base, rest = "", path[len("kwargs"):]
    tail = rest.replace("[", "_").replace("]", "").replace("'", "")
    return (base + tail).strip("_") or "arg"


# ---- naming each call's op by a public name ---------------------------------------------
def resolve(node):
    """(name, callable) of the public, mode-seam-wrapped callable that node `node` runs: a
    registered function (``ember.add``), Tensor method (``Tensor.add_``), op without public
    function (``ember.ops.linear``) or an nn helper (``ember.nn.functional_im2col._conv``).
    The name is what save() writes and `lookup` reads back."""
    opname = node.opname or ""
    short = opname.split(".")[-1]
    if node.method and short in METHODS:
        return "Tensor." + short, METHODS[short]
    if opname.startswith("ember.ops.") and short in OPS:
        return opname, OPS[short].fn
    if opname.startswith("ember.") and opname.count(".") == 1 and short in FUNCTIONS:
        return opname, FUNCTIONS[short]
    fn = node.target
    mod_name, attr = getattr(fn, "__module__", None), getattr(fn, "__name__", None)
    if mod_name and attr and mod_name.startswith("ember."):
        try:
            obj = getattr(importlib.import_module(mod_name), attr)
        except (ImportError, AttributeError):
            obj = None
        if obj is not None and getattr(obj, "_dispatches", False) and (
                obj is fn or getattr(obj, "__wrapped__", None) is fn):
            return f"{mod_name}.{attr}", obj
    raise UserError(f"ember.export: the call {opname or fn!r} at {node.source} is not an "
                    f"ember op that export can name")


def lookup(name):
    """The callable a saved op name stands for. Only registered ops and ember's own
    mode-seam-wrapped helpers resolve: nothing else a file names can be called."""
    if not isinstance(name, str):
        raise ValueError(f"bad op name {name!r}")
    if name.startswith("Tensor.") and name[7:] in METHODS:
        return METHODS[name[7:]]
    if name.startswith("ember.ops.") and name[10:] in OPS:
        return OPS[name[10:]].fn
    if name.startswith("ember.") and name.count(".") == 1 and name[6:] in FUNCTIONS:
        return FUNCTIONS[name[6:]]
    mod_name, _, attr = name.rpartition(".")
    if mod_name.startswith("ember.") and attr.isidentifier():
        try:
            obj = getattr(importlib.import_module(mod_name), attr, None)
        except ImportError:
            obj = None
        if obj is not None and getattr(obj, "_dispatches", False):
            return obj
    raise ValueError(f"unknown op {name!r}: not an ember op (a file from another ember "
                     f"version, or not an ember export file)")


# ---- functionalization ------------------------------------------------------------------
def _functional_name(opname):
    short = opname.split(".")[-1]
    # `x += y` reaches the tracer as add_, so the trailing underscore is the whole rule
    if short.endswith("_") and not short.startswith("_") and short[:-1] in FUNCTIONS:
        return short[:-1]
    return None


def _needs_cast(self_node, args):
    """Whether the out-of-place op may give another dtype than the in-place one kept."""
    dt = self_node.meta[1] if self_node.meta else None
    if dt is None:
        return True
    for a in args:
        if type(a) is Node:
            if a.meta is None or a.meta[1] is not dt:
                return True
        elif type(a) is float and not dt.is_floating_point:
            return True
        elif type(a) is int and dt.name == "bool":
            return True
    return False


def functionalize(graph):
    """Rewrite in-place ops into out-of-place ones where that is safe (the mutated value is
    not a view, and no view of it was taken): later readers of the mutated tensor read the
    new node. Returns ({id(node): node with its next value}, {id(input or lifted node):
    node with its final value}); in-place calls on views or viewed values stay as they are
    (they replay in place)."""
    current = {}          # id(node) -> the node holding its latest value
    viewed = set()        # ids of nodes a view was taken of
    root = {}             # id(new value node) -> the input/lifted node it is a version of
    mutated = {}
    out_nodes = []

    def latest(x):
        while id(x) in current:
            x = current[id(x)]
        return x
    for n in graph.nodes:
        if n.kind not in ("call", "getitem", "output"):
            out_nodes.append(n)
            continue
        n.args = _map(n.args, latest)
        n.kwargs = _map(n.kwargs, latest)
        if n.kind == "call" and n.op is not None and n.op.kind == VIEW and n.args and \
                type(n.args[0]) is Node and not n.inplace:
            viewed.add(id(n.args[0]))
        base = _functional_name(n.opname or "") if n.kind == "call" and n.inplace else None
        target = n.args[0] if n.args else None
        if n.kind == "call" and n.inplace and (n.opname or "").endswith(".copy_") and \
                len(n.args) >= 2 and type(n.args[1]) is Node and n.args[1].meta and \
                target.meta and tuple(n.args[1].meta[0]) == tuple(target.meta[0]):
            src = n.args[1]           # a.copy_(b), same shape: a's new value is b
            if not _needs_cast(target, (src,)) and target.kind in ("input", "lifted"):
                current[id(target)] = src
                mutated[id(root.get(id(target), target))] = src
                continue
            base = "clone"
            n.args = (src,)
        if base is None or type(target) is not Node or id(target) in viewed or (
                target.kind == "call" and target.op is not None and target.op.kind == VIEW):
            out_nodes.append(n)
            continue
        n.opname, n.method, n.inplace = "ember." + base, False, False
        n.op, n.target = op_for(base), FUNCTIONS[base]
        new = n
        out_nodes.append(n)
        if _needs_cast(target, n.args[1:] if base != "clone" else n.args) and \
                target.meta is not None:
            cast = Node("call", n.name + "_cast", target=METHODS["to"],
                        args=(n, target.meta[1]), meta=target.meta, source=n.source,
                        opname="Tensor.to", op=op_for("to"))
            graph._names.add(cast.name)
            out_nodes.append(cast)
            new = cast
        n.meta = target.meta
        current[id(target)] = new
        r = root.get(id(target), target if target.kind in ("input", "lifted") else None)
        if r is not None:
            root[id(new)] = r
            mutated[id(r)] = new
    graph.nodes = out_nodes
    return current, mutated


def latest(current, x):
    """The node holding the latest value of `x` after functionalize's rewrites."""
    while id(x) in current:
        x = current[id(x)]
    return x


def _map(x, fn):
    from ..compiler.graph import map_nodes
    return map_nodes(x, fn)


def clean(graph):
    """Dead-code elimination (pure calls nobody reads)."""
    return dce(graph)


def fold_array_constants(graph, values):
    """Calls that read no traced tensor but take a NumPy array (``ember.tensor(array)``
    inside a layer) become lifted constants holding their value: an array is no argument a
    file can hold, and the value cannot change between calls."""
    import numpy as np
    found = []

    def has_array(x):
        return isinstance(x, np.ndarray) or (type(x) in (tuple, list) and any(
            has_array(v) for v in x)) or (type(x) is dict and any(
                has_array(v) for v in x.values()))
    for n in graph.nodes:
        if n.kind == "call" and n.name in values and (has_array(n.args) or
                                                      has_array(n.kwargs)):
            n.kind, n.target, n.args, n.kwargs = "lifted", values[n.name], (), {}
            n.opname, n.op = None, None
            found.append(n)
    return found


def _plain(x):
    """Argument structures with tuple subclasses (ember.Size) as plain tuples."""
    if type(x) is Node:
        return x
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_plain(v) for v in x)
    if type(x) is list:
        return [_plain(v) for v in x]
    if type(x) is dict:
        return {k: _plain(v) for k, v in x.items()}
    return x


def prepare(t):
    """Make a trace comparable with another (dynamic sizes): array constants folded, Size
    arguments as tuples, dead calls dropped. Idempotent."""
    fold_array_constants(t.graph, t.tracer.made_from_nothing)
    for n in t.graph.nodes:
        if n.kind == "call":
            n.args, n.kwargs = _plain(n.args), _plain(n.kwargs)
    out = t.graph.add("output", "_prepare_output", args=(tuple(t.out_nodes),))
    dce(t.graph)
    t.graph.nodes.remove(out)
    t.graph._names.discard(out.name)
    return t
