"""The compiler's IR: a Graph of Nodes that prints as Python (like torch.fx) and runs.

A Graph is a straight-line program. Its nodes, in execution order:
  input    a tensor argument of the compiled function (`index`: position among flat inputs)
  lifted   a tensor the function reached by reference (a parameter, buffer or constant):
           `target` holds the tensor object itself, read at each call
  call     `target(*args, **kwargs)`: an ember op (or an opaque eager call), args may hold
           Nodes; `opname` says how it prints (``ember.mul``, ``x.view``...) and `op` is
           the op's OpDef (None for opaque calls)
  getitem  element `index` of a call that returned several tensors
  output   `args[0]` is the returned structure, with Nodes in it
Each node's `meta` is (shape, dtype, strides) of the value it had when traced, and `source`
the user's file:line that made it. `python_source()` prints the graph as a function;
`compile_python()` turns the same source into the replay function of the numpy backend.
"""
import builtins
import itertools
import keyword
import re

from ..core.tensor import Tensor
from ..ops.registry import op_for


_RESERVED = set(dir(builtins)) | {"ember", "self", "inputs", "lifted", "F"}


class Node:
    __slots__ = ("kind", "name", "target", "args", "kwargs", "index", "meta", "source",
                 "phase", "opname", "method", "inplace", "users", "op")

    def __init__(self, kind, name, target=None, args=(), kwargs=None, index=None, meta=None,
                 source=None, phase="fwd", opname=None, method=False, inplace=False, op=None):
        self.kind, self.name, self.target = kind, name, target
        self.args, self.kwargs, self.index = args, kwargs or {}, index
        self.meta, self.source, self.phase = meta, source, phase
        self.opname, self.method, self.inplace = opname, method, inplace
        self.users = 0
        # the registry's record of the op a call node runs, by the name it was recorded under
        # (None for opaque calls and helpers outside the registry): what the passes ask of
        # an op (purity, cost, aliasing, lowering) they read from it
        self.op = op if op is not None or kind != "call" or opname is None else \
            op_for(opname.split(".")[-1])

    def inputs(self):
        """The Nodes this node reads."""
        out = []
        map_nodes(self.args, out.append)
        map_nodes(self.kwargs, out.append)
        return out

    def __repr__(self):
        return f"%{self.name}"


def map_nodes(x, fn):
    """Apply `fn` to every Node inside a nested structure; returns the structure rebuilt."""
    if type(x) is Node:
        return fn(x)
    if type(x) in (tuple, list):
        return type(x)(map_nodes(v, fn) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):      # named tuples (return types)
        return type(x)(*(map_nodes(v, fn) for v in x))
    if type(x) is dict:
        return {k: map_nodes(v, fn) for k, v in x.items()}
    if type(x) is slice:
        return slice(map_nodes(x.start, fn), map_nodes(x.stop, fn), map_nodes(x.step, fn))
    return x


class Graph:
    """A captured program: nodes in order, with the names they print under."""

    def __init__(self):
        self.nodes = []
        self._names = set()

    def _unique(self, base):
        base = re.sub(r"\W", "_", base).strip("_") or "v"
        if base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
            base = "_" + base
        name = base
        for i in itertools.count(1):
            if name not in self._names:
                break
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    def add(self, kind, name, **kw):
        node = Node(kind, self._unique(name), **kw)
        self.nodes.append(node)
        return node

    # ---- views of the graph ----
    def inputs(self):
        return [n for n in self.nodes if n.kind == "input"]

    def lifted(self):
        return [n for n in self.nodes if n.kind == "lifted"]

    def calls(self):
        return [n for n in self.nodes if n.kind == "call"]

    def output(self):
        return self.nodes[-1] if self.nodes and self.nodes[-1].kind == "output" else None

    def count_users(self):
        for n in self.nodes:
            n.users = 0
        for n in self.nodes:
            for i in n.inputs():
                i.users += 1

    def verify(self):
        """Check the graph is well formed: every node read is defined earlier, names are
        unique, and the output node is last. Raises AssertionError naming the bad node."""
        seen, names = set(), set()
        for i, n in enumerate(self.nodes):
            assert n.name not in names, f"duplicate name {n.name}"
            names.add(n.name)
            for x in n.inputs():
                assert id(x) in seen, f"{n.name} reads {x.name} before it is defined"
            if n.kind == "output":
                assert i == len(self.nodes) - 1, "output is not the last node"
            seen.add(id(n))
        return True

    # ---- printing ----
    def python_source(self, fn_name="forward", comments=True):
        """The graph as a Python function. `ember.*` names are ember's public functions;
        lifted tensors are parameters of the function after the inputs."""
        params = [n.name for n in self.nodes if n.kind in ("input", "lifted")]
        lines = [f"def {fn_name}({', '.join(params)}):"]
        last_source = None
        for n in self.nodes:
            if n.kind in ("input", "lifted"):
                continue
            if n.kind == "output":
                lines.append(f"    return {_fmt(n.args[0])}")
                continue
            if comments and n.source and n.source != last_source:
                lines.append(f"    # {n.source}")
                last_source = n.source
            if n.kind == "getitem":
                rhs = f"{n.args[0].name}[{n.index}]"
            else:
                rhs = _call_text(n)
            note = f"  # {_fmt_meta(n.meta)}" if comments and n.meta else ""
            lines.append(f"    {n.name} = {rhs}{note}")
        if len(lines) == 1 or not lines[-1].lstrip().startswith("return"):
            lines.append("    return None")
        return "\n".join(lines)

    def print_readable(self, print_output=True):
        src = self.python_source()
        if print_output:
            print(src)
        return src

    def __str__(self):
        return self.python_source()

    # ---- running ----
    def compile_python(self, fn_name="replay"):
        """Python function ``replay(inputs, lifted)`` running the graph's calls in order;
        `inputs` and `lifted` are lists of tensors in the order of inputs() and lifted()."""
        env = {}
        body = [line for n in self.nodes for line in [python_line(n, env)] if line]
        src = f"def {fn_name}(inputs, lifted, syms=()):\n" + ("\n".join(body) or "    pass")
        exec(compile(src, f"<ember graph {fn_name}>", "exec"), env)
        fn = env[fn_name]
        fn.source, fn.env = src, env
        return fn


def python_line(n, env):
    """The line of generated replay code that computes node `n` (objects without a literal
    form, the op's callable included, go into `env`)."""
    if n.kind == "input":
        return f"    {n.name} = inputs[{n.index}]"
    if n.kind == "lifted":
        return f"    {n.name} = lifted[{n.index}]"
    if n.kind == "getitem":
        return f"    {n.name} = {n.args[0].name}[{n.index}]"
    if n.kind == "call":
        key = f"_f_{n.name}"
        env[key] = n.target
        args = [_fmt(a, env) for a in n.args]
        args += [f"{k}={_fmt(v, env)}" for k, v in n.kwargs.items()]
        return f"    {n.name} = {key}({', '.join(args)})"
    if n.kind == "output":
        return f"    return {_fmt(n.args[0], env)}"
    return None


def _call_text(n):
    args = [_fmt(a) for a in n.args]
    args += [f"{k}={_fmt(v)}" for k, v in n.kwargs.items()]
    if n.method and args:
        return f"{args[0]}.{n.opname}({', '.join(args[1:])})"
    return f"{n.opname}({', '.join(args)})"


def _fmt(x, env=None):
    """Python text of an argument; objects without a literal form go into `env`."""
    if type(x) is Node:
        return x.name
    if type(x) is tuple:
        inner = ", ".join(_fmt(v, env) for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if type(x) is list:
        return "[" + ", ".join(_fmt(v, env) for v in x) + "]"
    if type(x) is dict:
        return "{" + ", ".join(f"{k!r}: {_fmt(v, env)}" for k, v in x.items()) + "}"
    if type(x) is slice:
        return f"slice({_fmt(x.start, env)}, {_fmt(x.stop, env)}, {_fmt(x.step, env)})"
    if type(x).__name__ == "Sym":           # a symbolic size (dynamic.py)
        return x.text if env is None else x.code
    if x is None or type(x) in (bool, int, str) or x is Ellipsis:
        return repr(x)
    if type(x) is float:
        return repr(x) if x == x and abs(x) != float("inf") else f"float('{x}')"
    if isinstance(x, tuple) and hasattr(x, "_fields") and env is not None:
        key = f"_c{len(env)}"
        env[key] = type(x)
        return f"{key}(" + ", ".join(_fmt(v, env) for v in x) + ")"
    if env is None:
        return _short(x)
    key = f"_c{len(env)}"
    env[key] = x
    return key


def _short(x):
    if isinstance(x, Tensor):
        return f"<tensor {list(x.shape)}>"
    r = repr(x)
    return r if len(r) < 60 else type(x).__name__


def _fmt_meta(meta):
    shape, dtype = meta[0], meta[1]
    return f"{dtype.name}{list(shape)}" if dtype is not None else ""
