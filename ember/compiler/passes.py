"""Graph passes: dead-code elimination, common-subexpression elimination, constant folding,
and the pass pipeline (one list of named passes, run in order, `verify()` after each).

Calls with side effects stay where they are: in-place ops, opaque calls (optimizer steps,
`disable`d functions) and impure ops (OpDef.impure: removing a random op would shift the random stream eager
execution draws from). A call whose op the registry does not know counts as impure.
"""
from .graph import Node, map_nodes


def _pure(n):
    """A call that may be dropped or merged: a registered op that is not in place and not
    impure (random ops draw from the generator: dropping one shifts eager's stream)."""
    return n.kind == "call" and not n.inplace and n.target is not None and \
        n.op is not None and not n.op.impure


def dce(graph):
    """Drop pure calls (and getitems) whose values nobody reads."""
    graph.count_users()
    removed = 0
    for n in reversed(graph.nodes):
        if n.users == 0 and (_pure(n) or n.kind == "getitem"):
            for i in n.inputs():
                i.users -= 1
            n.kind = "dead"
            removed += 1
    graph.nodes = [n for n in graph.nodes if n.kind != "dead"]
    return removed


def _key(x):
    """A hashable key of an argument structure (nodes by identity)."""
    if type(x) is Node:
        return ("node", id(x))
    if type(x) in (tuple, list):
        return (type(x).__name__,) + tuple(_key(v) for v in x)
    if type(x) is dict:
        return ("dict",) + tuple((k, _key(v)) for k, v in x.items())
    if type(x) is slice:
        return ("slice", _key(x.start), _key(x.stop), _key(x.step))
    try:
        hash(x)
        return (type(x).__name__, x)
    except TypeError:
        return ("id", id(x))


def cse(graph):
    """Replace a pure call identical to an earlier one (same op, same arguments) by the
    earlier one's value. An in-place op or opaque call in between forgets earlier calls,
    since it may have changed what they read."""
    seen, replace, removed = {}, {}, 0
    keep = []
    for n in graph.nodes:
        if replace:
            n.args = map_nodes(n.args, lambda x: replace.get(id(x), x))
            n.kwargs = map_nodes(n.kwargs, lambda x: replace.get(id(x), x))
        if n.kind == "call" and not _pure(n):
            seen.clear()
        elif n.kind == "call":
            k = (id(n.target), _key(n.args), _key(n.kwargs))
            prev = seen.get(k)
            if prev is not None:
                replace[id(n)] = prev
                removed += 1
                continue
            seen[k] = n
        elif n.kind == "getitem":
            src = replace.get(id(n.args[0]))
            if src is not None:
                twin = seen.get(("getitem", id(src), n.index))
                if twin is not None:
                    replace[id(n)] = twin
                    continue
            seen[("getitem", id(n.args[0]), n.index)] = n
        keep.append(n)
    graph.nodes = keep
    return removed


def fold_constants(graph):
    """Evaluate once, at compile time, pure calls that read no input or lifted tensor (a
    causal mask built with ``ones``/``tril``, an ``arange``), unless something writes into
    them later; their values become lifted constants."""
    mutated = set()
    for n in graph.nodes:
        if n.kind == "call" and n.inplace:
            for a in n.inputs():          # an opaque call may write into any tensor it gets
                _mark_ancestors(a, mutated)
    values, folded = {}, 0
    depends = set()
    for n in graph.nodes:
        if n.kind in ("input", "lifted"):
            depends.add(id(n))
            continue
        if any(id(i) in depends for i in n.inputs()) or not _pure(n) or id(n) in mutated \
                or n.kind != "call" or _has_sym(n.args) or _has_sym(n.kwargs):
            depends.add(id(n))
            continue
        try:
            args = map_nodes(n.args, lambda x: values[id(x)])
            kwargs = map_nodes(n.kwargs, lambda x: values[id(x)])
            v = n.target(*args, **kwargs)
        except Exception:
            depends.add(id(n))
            continue
        from ..core.tensor import Tensor
        if not isinstance(v, Tensor):
            depends.add(id(n))
            continue
        values[id(n)] = v
        n.kind, n.target, n.args, n.kwargs = "lifted", v, (), {}
        n.opname = "constant"
        folded += 1
    if folded:
        lifted = [n for n in graph.nodes if n.kind in ("input", "lifted")]
        rest = [n for n in graph.nodes if n.kind not in ("input", "lifted")]
        graph.nodes = lifted + rest
        for i, n in enumerate(graph.lifted()):
            n.index = i
    return folded


def _has_sym(x):
    if type(x).__name__ == "Sym":
        return True
    if type(x) in (tuple, list):
        return any(_has_sym(v) for v in x)
    if type(x) is dict:
        return any(_has_sym(v) for v in x.values())
    if type(x) is slice:
        return _has_sym(x.start) or _has_sym(x.stop) or _has_sym(x.step)
    return False


def _mark_ancestors(node, out):
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in out:
            continue
        out.add(id(n))
        stack.extend(n.inputs())


def renumber(graph):
    for i, n in enumerate(graph.lifted()):
        n.index = i


PIPELINE = (("fold_constants", fold_constants), ("cse", cse), ("dce", dce))


def run_pipeline(graph, log=None):
    """Run each pass in PIPELINE; returns {pass name: nodes changed}."""
    stats = {}
    for name, fn in PIPELINE:
        stats[name] = fn(graph)
        renumber(graph)
        graph.verify()
    if log is not None:
        log.update(stats)
    return stats
