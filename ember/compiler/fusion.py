"""Fusion: group a graph's pointwise ops with their row reductions into Kernels, and run the
graph as extern calls (matmul, conv, views, anything else) plus one C kernel per group.

A group is one loop nest over a full shape F split into rows (F[:k]) and a row (F[k:]):
pointwise ops on F, reductions over the row (sum, mean, amax, amin, var), and pointwise ops
on the per-row results (``var + eps``, ``rsqrt``). So ``layer_norm(gelu(x * w + b))`` or a
softmax is one kernel that reads x once. A node joins the open group when its shape fits;
otherwise the group closes (is emitted) and a new one starts. The reason a node did not
fuse is logged under EMBER_LOGS=fusion. In-place ops and opaque calls close the group.
"""
import logging
from collections import namedtuple

import numpy as np

from ..core import dtype as D
from ..ops.registry import POINTWISE, REDUCTION, VIEW, op_for
from .kernel import Kernel, Input, Reduction, Output
from .graph import map_nodes, python_line
from .buffers import POOL, plan_reuse
from .kernel_step import KernelStep, _collapse

log = logging.getLogger("ember.compiler")


_FLOATS = (D.float32, D.float64)
_KDT = {D.float32: "float32", D.float64: "float64", D.bool_: "bool", D.int64: "int64",
        D.int32: "int32"}
def _arg(n, i, name, default=None):
    if len(n.args) > i:
        return n.args[i]
    return n.kwargs.get(name, default)


def _is_node(x):
    return type(x).__name__ == "Node"


def classify(n):
    """("pointwise" | "reduce", reason) or (None, why it cannot fuse)."""
    if n.kind != "call":
        return None, n.kind
    if n.inplace:
        return None, "in-place op or opaque call"
    meta = n.meta
    if meta is None:
        return None, "no single tensor result"
    lower = n.op.lower if n.op is not None else None
    if lower is None:
        return None, "no lowering for fused kernels in its OpDef"
    dt = meta[1]
    if n.op.kind == REDUCTION:
        x = n.args[0] if n.args else None
        xdt = x.meta[1] if _is_node(x) and x.meta is not None else None
        if n.kwargs.get("dtype") is not None:
            return None, "reduction with a dtype change"
        if xdt in _FLOATS and dt is xdt:
            return "reduce", None
        # the count of a bool row (a mask's sum, int64), as amax's gradient takes it
        if xdt is D.bool_ and dt is D.int64 and lower.reduce is not None:
            return "reduce", None
        if xdt in _FLOATS and dt in _FLOATS:
            return None, "reduction with a dtype change"
        return None, "reduction of a non-float tensor"
    if n.op.kind == POINTWISE:
        if dt not in _FLOATS and dt is not D.bool_:
            return None, f"result dtype {dt}"
        if set(n.kwargs) - lower.kwargs:
            return None, f"keyword arguments {sorted(n.kwargs)}"
        for a in n.inputs():
            if a.meta is None or a.meta[1] not in _KDT:
                return None, "an input of an unsupported dtype"
        for a in list(n.args) + list(n.kwargs.values()):
            if not (_is_node(a) or type(a) in (int, float, bool) or a is None):
                return None, f"argument of type {type(a).__name__}"
        return "pointwise", None
    return None, "not a pointwise op or row reduction"


def _reduce_dims(n):
    """(trailing dims reduced as a split index k, keepdim) or None."""
    x = n.args[0]
    nd = len(x.meta[0])
    lower = n.op.lower
    if lower.dims is not None:              # sum_to_size: dims from its own arguments
        r = lower.dims(n.args, n.kwargs, tuple(x.meta[0]))
        if r is None:
            return None
        dims, keepdim = r
        k = nd - len(dims)
        return (k, keepdim) if dims == tuple(range(k, nd)) else None
    if len(n.args) > 1 + len(lower.positional) or set(n.kwargs) - lower.kwargs:
        return None
    dim = _arg(n, 1, "dim")
    keepdim = _arg(n, 2, "keepdim", False) if "keepdim" in lower.positional else \
        n.kwargs.get("keepdim", False)
    if dim is None or dim == ():
        dims = tuple(range(nd))
    else:
        dims = (dim,) if type(dim) is int else tuple(dim)
        dims = tuple(sorted(d % nd for d in dims)) if nd else ()
    k = nd - len(dims)
    if dims != tuple(range(k, nd)) or type(keepdim) is not bool:
        return None
    return k, keepdim


class _Group:
    def __init__(self, F):
        self.F = F              # the full shape
        self.k = None           # rows are F[:k]
        self.members = []       # nodes, in order
        self.ids = set()
        self.row = set()        # ids of per-row members


def _row_shapes(F, k):
    return (tuple(F[:k]) + (1,) * (len(F) - k), tuple(F[:k]))


def _fits(g, n, kind):
    """Can `n` join group `g`? (True, None) or (False, why)."""
    shape = tuple(n.meta[0])
    reads_row = any(id(a) in g.row for a in n.inputs())
    if kind == "reduce":
        r = _reduce_dims(n)
        if r is None:
            return False, "reduction over dims that are not the trailing ones"
        x = n.args[0]
        if tuple(x.meta[0]) != g.F:
            return False, "reduction input shape differs from the group's"
        if id(x) in g.row:
            return False, "reduction of a per-row value"
        if g.k is not None and g.k != r[0]:
            return False, "reduction over other dims than the group's"
        return True, None
    if shape == g.F:
        if reads_row and g.k is not None:
            keep, _ = _row_shapes(g.F, g.k)
            for a in n.inputs():
                if id(a) in g.row and tuple(a.meta[0]) != keep and g.k != len(g.F):
                    return False, "reads a per-row value without its kept dims"
        return True, None
    k = g.k if g.k is not None else _keep_k(g.F, shape)
    if k is not None and shape == _row_shapes(g.F, k)[0]:
        for a in n.inputs():
            if id(a) in g.ids and id(a) not in g.row:
                return False, "a per-row op reading per-element values"
        return True, None
    if g.k is None and not g.row and _keep_k(shape, g.F) is not None:
        return True, None        # the group so far is per-row of this larger shape (rebase)
    return False, f"shape {list(shape)} differs from the group's {list(g.F)}"


def _keep_k(F, shape):
    """k where `shape` is F's rows with their dims kept (F[:k] + (1,) * ...), k < len(F),
    and F's row is not all ones; None if it is not such a shape."""
    if len(shape) != len(F) or tuple(shape) == tuple(F):
        return None
    k = len(shape)
    while k > 0 and shape[k - 1] == 1:
        k -= 1
    if tuple(shape[:k]) != tuple(F[:k]) or all(d == 1 for d in F[k:]):
        return None
    return k


def plan(graph):
    """Split the graph's nodes into steps: ("node", n) run as is, ("group", _Group).

    A node that cannot fuse but reads the open group's values (a column sum, a matmul of a
    gradient, a view) does not close the group: it is deferred, and runs after the group,
    so later pointwise ops and row reductions of the same shape still join it. The group
    closes when a candidate reads a deferred node, or at an in-place op, an opaque call or
    the output. Deferred nodes keep their order among themselves."""
    _bypass_broadcast_views(graph)
    _merge_view_scatters(graph)
    steps, g = [], None
    deferred, deferred_ids = [], set()

    def close():
        nonlocal g
        if g is not None:
            steps.append(("group", g))
            g = None
        steps.extend(("node", d) for d in deferred)
        deferred.clear()
        deferred_ids.clear()

    def defer(n):
        deferred.append(n)
        deferred_ids.add(id(n))

    for n in graph.nodes:
        if n.kind != "call":
            if n.kind == "output" or n.kind not in ("getitem",):
                close()
                steps.append(("node", n))
            elif g is not None and (deferred or id(n.args[0]) in g.ids):
                defer(n)
            else:
                steps.append(("node", n))
            continue
        kind, why = classify(n)
        if kind == "reduce" and _reduce_dims(n) is None:
            # a column sum (a bias gradient): NumPy's, after the group that makes its input
            kind, why = None, "reduction over dims that are not the trailing ones"
        if kind is None:
            if why not in ("no single tensor result",) and log.isEnabledFor(logging.DEBUG):
                log.debug("fusion: %s not fused: %s", n.name, why)
            if n.inplace or n.op is None or n.op.impure:
                close()
                steps.append(("node", n))
            elif g is not None and (deferred or any(id(a) in g.ids for a in n.inputs())):
                defer(n)
            else:
                steps.append(("node", n))
            continue
        if deferred_ids and any(id(a) in deferred_ids for a in n.inputs()):
            close()
        if g is not None:
            ok, why = _fits(g, n, kind)
            if not ok:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("fusion: %s starts a new kernel: %s", n.name, why)
                close()
        if g is None:
            if kind == "reduce":
                if _reduce_dims(n) is None:
                    steps.append(("node", n))
                    continue
                g = _Group(tuple(n.args[0].meta[0]))
            else:
                g = _Group(tuple(n.meta[0]))
        shape = tuple(n.meta[0])
        if kind == "reduce":
            g.k = _reduce_dims(n)[0]
            g.row.add(id(n))
        elif shape != g.F and g.k is None and _keep_k(shape, g.F) is not None:
            g.k = _keep_k(shape, g.F)         # rebase: the members so far are per-row
            g.F = shape
            g.row = set(g.ids)
        elif shape != g.F:
            if g.k is None:
                g.k = _keep_k(g.F, shape)
            g.row.add(id(n))
        g.members.append(n)
        g.ids.add(id(n))
    close()
    return steps


def _is_broadcast_view(x, v):
    """Whether view node `v` of node `x` holds broadcast_to(x, v's shape): the same dtype,
    x's strides where the sizes agree, stride 0 where x's size is 1 (an expand)."""
    if x.meta is None or v.meta is None or x.meta[1] is not v.meta[1]:
        return False
    xs, vs = tuple(x.meta[0]), tuple(v.meta[0])
    if len(xs) > len(vs) or len(x.meta) < 3 or len(v.meta) < 3:
        return False
    pad = len(vs) - len(xs)
    xs = (1,) * pad + xs
    xst = (0,) * pad + tuple(x.meta[2])
    for n, m, st, vst in zip(xs, vs, xst, v.meta[2]):
        if m == 1:
            continue
        if n == m and st != vst or n != m and (n != 1 or vst != 0):
            return False
    return True


def _bypass_broadcast_views(graph):
    """A pointwise op reading an expand of x (or any view that is x broadcast) reads x
    instead, when the op's result has the view's shape: broadcasting gives the same values,
    and the op can then join the group computing x (the gradient of a mean or a sum over a
    row, expanded back, is one kernel with its row). Views left unread are dropped."""
    views = {}
    for n in graph.nodes:
        if n.kind == "call" and n.op is not None and n.op.kind == VIEW and n.args and \
                _is_node(n.args[0]) and not n.inplace and _is_broadcast_view(n.args[0], n):
            views[id(n)] = n
    if not views:
        return
    for n in graph.nodes:
        if n.kind != "call" or n.meta is None or classify(n)[0] != "pointwise":
            continue
        shape = tuple(n.meta[0])

        def swap(a):
            v = views.get(id(a))
            return v.args[0] if v is not None and tuple(v.meta[0]) == shape else a
        n.args = map_nodes(n.args, swap)
        n.kwargs = map_nodes(n.kwargs, swap)
    graph.count_users()
    graph.nodes = [n for n in graph.nodes if not (id(n) in views and n.users == 0)]


def _merge_view_scatters(graph):
    """``add(view_scatter(a, S, f), view_scatter(b, S, g))`` (and chains of such adds: the
    backward of split/chunk/unbind) becomes one ``scatter_sum(S, (f, g), a, b)``: one zero
    tensor written through each view, not one per view plus full-size adds. Only views the
    autograd engine marked disjoint, each read by that add alone."""
    from ..ops.view_common import _view_scatter_impl
    from .runtime import scatter_sum
    add = op_for("add")
    graph.count_users()
    parts, drop = {}, set()        # id(node) -> (shape, [(grad node, view_fn)])
    for n in graph.nodes:
        if n.kind != "call" or n.meta is None:
            continue
        if n.target is _view_scatter_impl and len(n.args) == 4 and n.args[3] is True \
                and not n.kwargs and _is_node(n.args[0]):
            parts[id(n)] = (tuple(n.args[1]), [(n.args[0], n.args[2])])
        elif n.op is add and len(n.args) == 2 and not n.kwargs and all(
                _is_node(a) and id(a) in parts and a.users == 1 and a.meta is not None and
                a.meta[1] is n.meta[1] for a in n.args):
            (s1, p1), (s2, p2) = parts[id(n.args[0])], parts[id(n.args[1])]
            if s1 != s2 or tuple(n.meta[0]) != s1:
                continue
            drop.update(id(a) for a in n.args)
            both = p1 + p2
            parts[id(n)] = (s1, both)
            n.target, n.opname, n.op, n.method = scatter_sum, "scatter_sum", None, False
            n.args = (s1, tuple(f for _, f in both)) + tuple(g for g, _ in both)
    if drop:
        graph.nodes = [n for n in graph.nodes if id(n) not in drop]


def _tiny(g, min_elements=None):
    from . import config
    if min_elements is None:
        min_elements = config.min_kernel_elements
    return int(np.prod(g.F)) < min_elements


def _used_outside(graph, steps):
    """ids of group members read by anything outside their group (or returned)."""
    owner = {}
    for i, (kind, x) in enumerate(steps):
        if kind == "group":
            for m in x.members:
                owner[id(m)] = i
    used = set()
    for i, (kind, x) in enumerate(steps):
        nodes = x.members if kind == "group" else [x]
        for n in nodes:
            for a in n.inputs():
                if id(a) in owner and owner[id(a)] != i:
                    used.add(id(a))
    return used


def build_kernel(g, outside):
    """The Kernel of group `g`, with its input nodes and output member nodes."""
    F, k = g.F, g.k if g.k is not None else max(len(g.F) - 1, 0)
    g.k = k
    inputs, in_nodes, in_index = [], [], {}
    reductions, red_index, exprs = [], {}, {}

    def load(a, per_row):
        key = id(a)
        if key not in in_index:
            shape = tuple(a.meta[0])
            st = _traced_strides(a, F, k)
            outer = "zero" if st is not None and st[0] == 0 else "any"
            inner = "zero" if st is not None and st[1] == 0 else \
                "one" if st is not None and st[1] == 1 else "any"
            if st is None:                    # will be made contiguous at run time
                outer, inner = "any", ("one" if _varies_in_row(shape, F, k) else "zero")
            in_index[key] = len(inputs)
            inputs.append(Input(_KDT[a.meta[1]], outer, inner))
            in_nodes.append(a)
        return ("load", in_index[key])

    def val(a, dt, per_row=False):
        if _is_node(a):
            e = exprs.get(id(a))
            if e is None:
                e = load(a, per_row)
            adt = _KDT[a.meta[1]]
            return e if adt == dt else ("call", "cast", dt, e)
        return ("const", a, dt)

    def reduce(op, expr, dt):
        """The row value of reduction (op, expr): an identical one is computed once (the
        mean of a layer norm and the first pass of its variance)."""
        r = Reduction(op, expr, dt)
        if r not in reductions:
            reductions.append(r)
        return ("row", reductions.index(r))

    b = _IRBuilder(val, reduce)
    for n in g.members:
        dt = _KDT[n.meta[1]]
        lower = n.op.lower
        if n.op.kind == REDUCTION:
            exprs[id(n)] = lower.reduce(b, val(n.args[0], dt), dt, n.args, n.kwargs)
        else:
            exprs[id(n)] = _pointwise_expr(n, lower, dt, b)
    outputs, out_nodes = [], []
    for n in g.members:
        if id(n) in outside:
            per_row = id(n) in g.row
            outputs.append(Output(exprs[id(n)], _KDT[n.meta[1]], per_row))
            out_nodes.append(n)
    kernel = Kernel(tuple(inputs), tuple(reductions), tuple(outputs),
                    ops=tuple(f"{n.name} = {n.opname}" for n in g.members))
    return kernel, in_nodes, out_nodes


class _IRBuilder:
    """What an op's IR builder (OpDef.lower.build / .reduce) may ask while a group is turned
    into Kernel IR (see ember/ops/lowering_pointwise.py)."""

    def __init__(self, val, reduce):
        self.val, self.reduce = val, reduce

    @staticmethod
    def dtype_of(x):
        return _KDT[x.meta[1]]

    @staticmethod
    def n(dt):
        return ("n", dt)


def _pointwise_expr(n, lower, dt, b):
    """The IR of pointwise node `n`: its op's builder, or the op applied to its arguments
    (comparisons compute both sides in their common dtype)."""
    if lower.build is not None:
        return lower.build(b, n.args, n.kwargs, dt)
    cdt = _common(*n.args) if lower.compare else dt
    return ("call", lower.prim, dt) + tuple(b.val(a, cdt) for a in n.args)


def _common(a, b):
    dts = [x.meta[1] for x in (a, b) if _is_node(x)]
    if any(d is D.float64 for d in dts):
        return "float64"
    if any(d is D.float32 for d in dts):
        return "float32"
    if all(d is D.bool_ for d in dts) and all(_is_node(x) or type(x) is bool for x in (a, b)):
        return "bool"
    if any(type(x) is float for x in (a, b)):
        return "float32"
    return _KDT[dts[0]] if dts else "float32"


def _varies_in_row(shape, F, k):
    """Whether an input of `shape`, broadcast to F, takes different values within a row."""
    s = (1,) * (len(F) - len(shape)) + tuple(shape)
    return any(x != 1 for x in s[k:])


def _traced_strides(a, F, k):
    shape, strides = a.meta[0], a.meta[2]
    item = np.dtype(a.meta[1].np).itemsize if a.meta[1].np is not None else 1
    return _collapse(shape, [s // item for s in strides], F, k)


KernelPlan = namedtuple("KernelPlan", "steps groups built kernels")


def plan_kernels(graph, min_elements=None):
    """Fusion planning of `graph` (nothing built): its steps, their groups, each group's
    (Kernel, input nodes, output nodes), and the Kernels to build (those with outputs).
    Groups on fewer than `min_elements` (default config.min_kernel_elements) elements stay
    plain calls; mode="reduce-overhead" passes 0 (a kernel call from its plan is cheap)."""
    steps = plan(graph)
    outside = _used_outside(graph, steps)
    out = graph.output()
    if out is not None:
        map_nodes(out.args, lambda x: outside.add(id(x)))
    # a group on a few elements costs more in kernel-call overhead (~10 us) than its ops
    # cost one by one: its nodes stay plain calls
    steps = [s for kind, x in steps for s in (
        [("node", m) for m in x.members] if kind == "group" and _tiny(x, min_elements)
        else [(kind, x)])]
    groups = [x for kind, x in steps if kind == "group"]
    built = [build_kernel(g, outside) for g in groups]
    # a group whose values nobody reads outside has no outputs: drop it
    kernels = [b[0] for b in built if b[0].outputs]
    return KernelPlan(steps, groups, built, kernels)


def assemble(graph, kplan, fns):
    """The function ``run(inputs, lifted, syms)`` executing `graph` as planned by
    plan_kernels, with `fns` the loaded functions of kplan.kernels: dead kernel outputs go
    back to the buffer pool. `run.kernels` describes each kernel call, `run.pooled` counts
    the pooled outputs, `run.planned_peak_bytes` is the peak of intermediate buffers."""
    steps, groups, built, kernels = kplan
    fn_of = dict(zip(kernels, fns))
    kernel_outputs = {id(m) for b in built for m in b[2]}
    pooled, release = plan_reuse(steps, graph, kernel_outputs)
    env, body, described = {"_give": POOL.give}, [], []
    kidx = 0
    for i, (kind, x) in enumerate(steps):
        for m in release.get(i - 1, ()):
            body.append(f"    _give({m.name})")
        if kind == "node":
            line = python_line(x, env)
            if line:
                body.append(line)
            continue
        kernel, in_nodes, out_nodes = built[groups.index(x)]
        if not kernel.outputs:
            continue
        specs = []
        for m in out_nodes:
            if id(m) not in x.row:
                specs.append("full")
            else:
                keep, flat = _row_shapes(x.F, x.k)
                specs.append("row_keep" if tuple(m.meta[0]) == keep else "row")
        step = KernelStep(fn_of[kernel], kernel, x.k, specs, [m.meta[1] for m in out_nodes],
                          [id(m) in pooled for m in out_nodes], x.F)
        key = f"_k{kidx}"
        kidx += 1
        env[key] = step
        lhs = ", ".join(m.name for m in out_nodes) + ","
        body.append(f"    {lhs} = {key}({', '.join(a.name for a in in_nodes)})")
        described.append(f"{key}: {kernel.describe()} fusing "
                         + ", ".join(m.opname.split('.')[-1] for m in x.members))
    src = "def run(inputs, lifted, syms=()):\n" + ("\n".join(body) or "    pass")
    exec(compile(src, "<ember fused graph>", "exec"), env)
    run = env["run"]
    run.source, run.env = src, env
    run.kernels, run.pooled = described, len(pooled)
    run.planned_peak_bytes = _planned_peak(graph, steps)
    return run


def _planned_peak(graph, steps):
    """Peak bytes of intermediate values alive at once, freed after their last use."""
    order, last_use, size = [], {}, {}
    for i, (kind, x) in enumerate(steps):
        nodes = x.members if kind == "group" else [x]
        for n in nodes:
            for a in n.inputs():
                last_use[id(a)] = i
            if n.kind == "call" and n.meta is not None and n.meta[1].np is not None:
                size[id(n)] = int(np.prod(n.meta[0])) * np.dtype(n.meta[1].np).itemsize
                order.append((i, id(n)))
    out = graph.output()
    if out is not None:
        map_nodes(out.args, lambda x: last_use.__setitem__(id(x), len(steps)))
    live, peak, cur = {}, 0, 0
    by_step = {}
    for i, nid in order:
        by_step.setdefault(i, []).append(nid)
    for i in range(len(steps)):
        for nid in by_step.get(i, ()):
            live[nid] = size[nid]
            cur += size[nid]
        peak = max(peak, cur)
        for nid in [n for n in live if last_use.get(n, -1) <= i]:
            cur -= live.pop(nid)
    return peak
