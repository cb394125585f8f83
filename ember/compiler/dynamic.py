"""Dynamic sizes: two traces of one function that differ only in some input sizes are unified
into one graph whose size arguments are symbolic (``view(s0 * 64, 128)``).

When a call misses only on a size guard, the function is traced again with the new sizes.
If the two graphs have the same ops in the same order, and every integer argument that
differs between them is one expression of the changed sizes in both (s0, c*s0, s0 + c,
s0 // c, c*s0*s1), the first graph with those arguments made symbolic replaces both: one
variant then serves every size (each changed dim guarded only to be >= 2, as PyTorch does,
so broadcasting decisions stay the same). Anything else keeps the two static variants.
Known gap: a Python branch on a size that is not an op argument (``if x.shape[0] > 16:``)
is not seen; the unified graph assumes it goes the same way for every size.

`mark_dynamic(x, dim)` (torch._dynamo.mark_dynamic's role) says ahead that a dim changes:
a later call that differs from the trace only in marked dims unifies as with dynamic=True
(the general variant replaces the first one and no recompile is counted), whatever the
`dynamic=` setting. ember still needs the second size to find the size expressions, so the
first call traces with static sizes.
"""
import types
import weakref

from .graph import Node, Graph

_MARKS = {}     # id(tensor) -> (weakref to it, set of marked dims)


def mark_dynamic(t, index):
    """Mark dim(s) `index` of tensor `t` as changing between calls of compiled functions.

    >>> x = ember.randn(32, 8)
    >>> ember.compiler.mark_dynamic(x, 0)     # the batch size will change
    >>> f(x); f(ember.randn(17, 8))            # no recompile counted: one symbolic variant
    """
    dims = [index] if isinstance(index, int) else list(index)
    n = t.dim()
    norm = set()
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {d})")
        norm.add(d % n)
    key = id(t)
    entry = _MARKS.get(key)
    if entry is None or entry[0]() is not t:
        def forget(ref, key=key):
            if _MARKS.get(key, (None,))[0] is ref:
                del _MARKS[key]
        entry = _MARKS[key] = (weakref.ref(t, forget), set())
    entry[1].update(norm)


def marked_dims(t):
    """The dims of `t` marked with mark_dynamic."""
    entry = _MARKS.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else ()


def marks_of(args, kwargs):
    """{(input path, dim)} marked among the tensors of a call."""
    from .runtime import flatten
    if not _MARKS:
        return set()
    return {(path, d) for path, t in flatten(args, kwargs) for d in marked_dims(t)}


def only_marked_changed(capture, args, kwargs, marked=()):
    """Whether this call differs from `capture`'s sizes only in marked dims (marked on the
    call's tensors, or in `marked`, the (path, dim) marks of earlier calls)."""
    from .runtime import flatten
    if not _MARKS and not marked:
        return False
    cur = dict(flatten(args, kwargs))
    changed = False
    for path, shape in zip(capture.input_paths, capture.input_shapes):
        t = cur.get(path)
        if t is None or len(t._data.shape) != len(shape):
            return False
        dims = marked_dims(t)
        for d, (a, b) in enumerate(zip(shape, t._data.shape)):
            if a != b:
                if d not in dims and (path, d) not in marked:
                    return False
                changed = True
    return changed


class Sym:
    """A symbolic integer: `code` evaluates it at replay (``syms[0] * 64``), `text` prints
    it (``s0 * 64``)."""
    __slots__ = ("code", "text", "example")

    def __init__(self, code, text, example):
        self.code, self.text, self.example = code, text, example

    def __repr__(self):
        return self.text

    def __eq__(self, other):
        return type(other) is Sym and other.code == self.code

    def __hash__(self):
        return hash(("Sym", self.code))


class Capture:
    """What one trace produced, independent of the tracer, so two can be unified."""

    def __init__(self, graph, struct, out_nodes, input_paths, input_shapes, joint):
        self.graph = graph
        self.struct = struct
        self.out_nodes = out_nodes
        self.input_paths = input_paths        # per forward input node, in order
        self.input_shapes = input_shapes
        self.joint = joint
        self.syms = []                        # per symbol: (input position, dim)
        self.sym_equal = []                   # (position, dim) pairs equal to a symbol

    def clone(self):
        g, m = clone_graph(self.graph)

        def node(x):
            return m[id(x)] if x is not None else None
        joint = self.joint
        if joint is not None and "failed" not in joint:
            joint = dict(joint, tangent_nodes=[node(n) for n in joint["tangent_nodes"]],
                         grad_nodes=[node(n) for n in joint["grad_nodes"]])
        c = Capture(g, self.struct, [node(n) for n in self.out_nodes], self.input_paths,
                    self.input_shapes, joint)
        c.syms, c.sym_equal = list(self.syms), list(self.sym_equal)
        return c


def clone_graph(graph):
    """A copy of `graph` with new Node objects (targets shared); returns (graph, id map)."""
    from .graph import map_nodes
    g = Graph()
    g._names = set(graph._names)
    m = {}
    for n in graph.nodes:
        c = Node(n.kind, n.name, target=n.target, index=n.index, meta=n.meta, source=n.source,
                 phase=n.phase, opname=n.opname, method=n.method, inplace=n.inplace)
        c.args = map_nodes(n.args, lambda x: m[id(x)])
        c.kwargs = map_nodes(n.kwargs, lambda x: m[id(x)])
        m[id(n)] = c
        g.nodes.append(c)
    return g, m


class _Mismatch(Exception):
    pass


def unify(a, b):
    """A Capture generalising captures `a` and `b` (sizes made symbolic), or None."""
    if len(a.graph.nodes) != len(b.graph.nodes) or a.input_paths != b.input_paths:
        return None
    # the changed sizes: one symbol per distinct (size in a, size in b) pair
    pairs, syms, equal = {}, [], []
    for k, (sa, sb) in enumerate(zip(a.input_shapes, b.input_shapes)):
        if len(sa) != len(sb):
            return None
        for d, (x, y) in enumerate(zip(sa, sb)):
            if x == y:
                continue
            if x < 2 or y < 2:
                return None          # 0 and 1 sizes are specialised (broadcasting)
            if (x, y) in pairs:
                equal.append((k, d, pairs[(x, y)]))
            else:
                pairs[(x, y)] = len(syms)
                syms.append((k, d, x, y))
    if not syms:
        return None
    try:
        out = a.clone()
        index_a = {id(n): i for i, n in enumerate(a.graph.nodes)}
        index_b = {id(n): i for i, n in enumerate(b.graph.nodes)}
        for na, nb, nc in zip(a.graph.nodes, b.graph.nodes, out.graph.nodes):
            if (na.kind, na.opname, na.index, na.inplace) != (nb.kind, nb.opname, nb.index,
                                                               nb.inplace):
                raise _Mismatch(na.name)
            if na.kind == "lifted" and na.target is not nb.target:
                raise _Mismatch(na.name)
            # only sizes may differ: kernels are typed, so a dtype change is a new variant
            if (na.meta is None) != (nb.meta is None) or na.meta is not None and (
                    na.meta[1] is not nb.meta[1] or len(na.meta[0]) != len(nb.meta[0])
                    or na.meta[3] != nb.meta[3]):
                raise _Mismatch(na.name)
            if na.kind == "call" and not _same_target(na.target, nb.target):
                raise _Mismatch(na.name)
            nc.args = _unify(na.args, nb.args, nc.args, syms, index_a, index_b)
            nc.kwargs = _unify(na.kwargs, nb.kwargs, nc.kwargs, syms, index_a, index_b)
        out.struct = _unify(a.struct, b.struct, a.struct, syms, index_a, index_b)
        if [index_a.get(id(n)) for n in a.out_nodes] != [index_b.get(id(n))
                                                        for n in b.out_nodes]:
            raise _Mismatch("outputs")
        if (a.joint is None) != (b.joint is None):
            raise _Mismatch("joint")
        if a.joint is not None and (("failed" in a.joint) != ("failed" in b.joint)):
            raise _Mismatch("joint")
        if a.joint is not None and "failed" not in a.joint:
            for key in ("tangent_nodes", "grad_nodes"):
                if [index_a.get(id(n)) if n is not None else None for n in a.joint[key]] != \
                        [index_b.get(id(n)) if n is not None else None for n in b.joint[key]]:
                    raise _Mismatch(key)
    except _Mismatch:
        return None
    out.syms = [(k, d) for k, d, _, _ in syms]
    out.sym_equal = [(k, d, s) for k, d, s in equal]
    return out


def _same_target(x, y):
    if x is y:
        return True
    fx, fy = getattr(x, "__func__", None), getattr(y, "__func__", None)
    return fx is not None and fx is fy and getattr(x, "__self__", None) is getattr(
        y, "__self__", None)


def _unify(x, y, c, syms, ia, ib):
    """The argument of the unified graph for argument x (trace a) and y (trace b); `c` is
    x's counterpart in the cloned graph."""
    if type(x) is Node:
        if type(y) is not Node or ia.get(id(x)) != ib.get(id(y)):
            raise _Mismatch("node")
        return c
    if type(x) in (tuple, list):
        if type(y) is not type(x) or len(x) != len(y):
            raise _Mismatch("length")
        return type(x)(_unify(p, q, r, syms, ia, ib) for p, q, r in zip(x, y, c))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_unify(p, q, r, syms, ia, ib) for p, q, r in zip(x, y, c)))
    if type(x) is dict:
        if type(y) is not dict or list(x) != list(y):
            raise _Mismatch("keys")
        return {k: _unify(x[k], y[k], c[k], syms, ia, ib) for k in x}
    if type(x) is slice:
        if type(y) is not slice:
            raise _Mismatch("slice")
        return slice(_unify(x.start, y.start, c.start, syms, ia, ib),
                     _unify(x.stop, y.stop, c.stop, syms, ia, ib),
                     _unify(x.step, y.step, c.step, syms, ia, ib))
    if type(x) is int and type(y) is int:
        if x == y:
            return x
        return _expression(x, y, syms)
    if type(x) is not type(y):
        raise _Mismatch("type")
    if type(x) is types.FunctionType and _same_closure(x, y):
        return x        # a view's function (narrow's lambda) made again with equal values
    try:
        same = x is y or bool(x == y)
    except Exception:
        same = False
    if not same:
        raise _Mismatch(f"value {x!r} vs {y!r}")
    return x


def _same_closure(f, g):
    """Two functions of the same code whose closures hold equal plain values (ints,
    slices, tuples of them), so either one computes what the other does."""
    if f.__code__ is not g.__code__ or f.__defaults__ != g.__defaults__:
        return False
    cf, cg = f.__closure__ or (), g.__closure__ or ()
    try:
        return len(cf) == len(cg) and all(_plain_equal(a.cell_contents, b.cell_contents)
                                          for a, b in zip(cf, cg))
    except ValueError:          # an empty cell
        return False


def _plain_equal(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) in (int, float, bool, str, type(None)):
        return a == b
    if type(a) is slice:
        return all(_plain_equal(p, q) for p, q in ((a.start, b.start), (a.stop, b.stop),
                                                   (a.step, b.step)))
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(_plain_equal(p, q) for p, q in zip(a, b))
    return False


def _expression(x, y, syms):
    """A Sym equal to x with trace a's sizes and to y with trace b's."""
    for s, (_, _, a, b) in enumerate(syms):
        name, code = f"s{s}", f"syms[{s}]"
        if x * b == y * a and x % a == 0:
            c = x // a
            return Sym(code if c == 1 else f"({code} * {c})",
                       name if c == 1 else f"{name} * {c}", x)
        if x - a == y - b:
            c = x - a
            return Sym(f"({code} + {c})", f"{name} + {c}", x)
        if x and y and a % x == 0 and b % y == 0 and a // x == b // y:
            c = a // x
            return Sym(f"({code} // {c})", f"{name} // {c}", x)
    for s, (_, _, a1, b1) in enumerate(syms):
        for t, (_, _, a2, b2) in enumerate(syms):
            if t <= s:
                continue
            if x * b1 * b2 == y * a1 * a2 and x % (a1 * a2) == 0:
                c = x // (a1 * a2)
                return Sym(f"(syms[{s}] * syms[{t}] * {c})", f"s{s} * s{t} * {c}", x)
    raise _Mismatch(f"size {x} vs {y}")
