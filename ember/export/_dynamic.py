"""Dynamic sizes for export: trace again with the dynamic dims changed and unify the two
graphs with the compiler's unification (ember/compiler/dynamic.py), so the sizes become symbols;
then trace at the low end of each range and near its top (the top, or about twice the
example when that is cheaper) and check those unify too.

When the graphs do not unify (the program specialised a size: ``x.view(4, -1)``, a broadcast
against a fixed size, a Python branch on the size), export raises ConstraintViolationError
naming the dim and the user's line, in torch's words ("Constraints violated (batch)!").
Dim.AUTO dims that do not unify just become static. A branch that flips only between the
traced sizes is not seen.
"""
import os

from ..autograd.grad_mode import no_grad
from ..core.tensor import Tensor
from ..compiler import dynamic
from ..compiler.runtime import flatten
from ._capture import UserError, ConstraintViolationError, trace, prepare

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _groups(dyn, args, kwargs):
    """Dynamic dims grouped by Dim name (unnamed ones each alone): {key: [(path, dim,
    DimSpec)]}, and each input path's example tensor."""
    tensors = dict(flatten(args, kwargs))
    groups = {}
    for path, ds in dyn.items():
        for d, spec in ds.items():
            key = spec.name if spec.name is not None else f"{path}.size()[{d}]"
            groups.setdefault(key, []).append((path, d, spec))
    return groups, tensors


def _resized(args, kwargs, tensors, changes):
    """Copies of the inputs with dims changed: changes {(path, dim): new size}. The values
    repeat the example's along the dim (so indices stay valid indices)."""
    from ..ops.creation import arange
    new = {}
    with no_grad():
        for path, t in tensors.items():
            r = t
            for (p, d), size in changes.items():
                if p == path:
                    idx = arange(size) % t.shape[d]
                    r = r.index_select(d, idx)
            new[path] = r

    def rebuild(x, path):
        if isinstance(x, Tensor):
            return new[path]
        if type(x) in (tuple, list):
            return type(x)(rebuild(v, f"{path}[{i}]") for i, v in enumerate(x))
        if type(x) is dict:
            return {k: rebuild(v, f"{path}[{k!r}]") for k, v in x.items()}
        return x
    return rebuild(args, "args"), rebuild(kwargs, "kwargs")


def dynamic_capture(mod, args, kwargs, dyn, first, decompose):
    """(the unified Capture, [(Dim name, min, max)] per symbol), or (None, []) when no dim
    can move; raises ConstraintViolationError where the program specialises a dim."""
    groups, tensors = _groups(dyn, args, kwargs)
    prepare(first)
    sizes = {}
    for g, (key, members) in enumerate(groups.items()):
        ex = {tensors[p].shape[d] for p, d, _ in members}
        lo = max(max(s.lo for _, _, s in members), 2)
        hi = min(s.hi for _, _, s in members)
        label = members[0][2].name or key
        if len(ex) > 1:
            raise ConstraintViolationError(
                f"Constraints violated ({label})! The example inputs give {label} different "
                f"sizes {sorted(ex)}, but dims that share a Dim must be equal.")
        (s,) = ex
        auto = all(m[2].hint == "AUTO" for m in members)
        if s < 2 and auto:
            continue                   # Dim.AUTO: a 0/1 size just stays static
        if s < 2:
            raise ConstraintViolationError(
                f"Constraints violated ({label})! You marked {label} as dynamic but the "
                f"example size is {s}: sizes 0 and 1 are specialized; use an example of "
                f"size >= 2.")
        if not lo <= s <= hi:
            raise ConstraintViolationError(
                f"Constraints violated ({label})! The example size {s} of {label} is "
                f"outside its range [{lo}, {hi}].")
        chosen = [(v[0], v[1]) for v in sizes.values() if v[1] is not None]
        cands = [c for i in range(1, 40) for c in (s + i, s - i)]
        new = next((c for c in cands if lo <= c <= hi and c >= 2 and
                    not any(_related(s, c, a, b) for a, b in chosen)), None)
        sizes[key] = (s, new, lo, hi, label)
    movable = [k for k, v in sizes.items() if v[1] is not None]
    if not movable:
        return None, []
    general = _try_unify(mod, args, kwargs, groups, tensors, sizes, movable, first,
                         decompose)
    if not isinstance(general, dynamic.Capture):
        bad, where = [], None
        if len(movable) > 1:
            for k in movable:
                r = _try_unify(mod, args, kwargs, groups, tensors, sizes, [k], first,
                               decompose)
                if not isinstance(r, dynamic.Capture):
                    bad.append(k)
                    where = where or _where_of(r)
        if not bad:
            bad, where = movable, _where_of(general)
        if _auto(bad, groups):
            return _without(bad, groups, dyn, mod, args, kwargs, first, decompose)
        label = ", ".join(sizes[k][4] for k in bad)
        lines = [f"  - You marked {sizes[k][4]} as dynamic but your code specialized it to "
                 f"be a constant ({sizes[k][0]})." for k in bad]
        fixes = [f"  {sizes[k][4]} = {sizes[k][0]}" for k in bad]
        raise ConstraintViolationError(
            f"Constraints violated ({label})!\n" + "\n".join(lines) +
            (f"\n  The specialization happens at {where}." if where else "") +
            "\nIf you're using Dim.DYNAMIC, replace it with either Dim.STATIC or Dim.AUTO."
            "\nSuggested fixes:\n" + "\n".join(fixes))
    # the sizes at the ends of the ranges must take the same path (a branch on the size)
    for probe in ("low", "high"):
        psizes, keys = dict(sizes), []
        for k in movable:
            s, new, lo, hi, label = sizes[k]
            # the top of the range, or about twice the example when that is cheaper
            size = lo if probe == "low" else min(hi, 2 * s + 3)
            if size not in (s, new) and size >= 2:
                psizes[k] = (s, size, lo, hi, label)
                keys.append(k)
        if not keys:
            continue
        r = _try_unify(mod, args, kwargs, groups, tensors, psizes, keys, first, decompose)
        if isinstance(r, dynamic.Capture):
            continue
        bad, where = [], None
        for k in keys if len(keys) > 1 else ():
            r1 = _try_unify(mod, args, kwargs, groups, tensors, psizes, [k], first, decompose)
            if not isinstance(r1, dynamic.Capture):
                bad.append(k)
                where = where or _where_of(r1)
        if not bad:
            bad, where = keys, _where_of(r)
        if _auto(bad, groups):
            return _without(bad, groups, dyn, mod, args, kwargs, first, decompose)
        lines = [f"  - Not all values of {psizes[k][4]} in the specified range "
                 f"{psizes[k][2]} <= {psizes[k][4]} <= {psizes[k][3]} are valid: at "
                 f"{psizes[k][4]} = {psizes[k][1]} the program is not the one traced at the "
                 f"example size {psizes[k][0]} (a Python branch or check on the size)."
                 for k in bad]
        raise ConstraintViolationError(
            f"Constraints violated ({', '.join(sizes[k][4] for k in bad)})!\n" +
            "\n".join(lines) + (f"\n  The size is tested at {where}." if where else "") +
            "\nSuggested fixes: narrow the range to the sizes that take the example's path, "
            "or make the code not depend on the size.")
    # one symbol per group that moved; ranges from its Dim
    sym_specs = []
    for k, d in general.syms:
        path = first.input_paths[k]
        key = next(key for key, ms in groups.items() if any(p == path and dd == d
                                                             for p, dd, _ in ms))
        s, new, lo, hi, label = sizes[key]
        sym_specs.append((label, lo, hi))
    return general, sym_specs


def _auto(bad, groups):
    return any(all(m[2].hint == "AUTO" for m in groups[k]) for k in bad)


def _without(bad, groups, dyn, mod, args, kwargs, first, decompose):
    """Dim.AUTO: dynamic where the program allows it, static elsewhere (torch's rule): export
    again without the AUTO dims among `bad`."""
    drop = [k for k in bad if all(m[2].hint == "AUTO" for m in groups[k])]
    rest = {p: {d: sp for d, sp in ds.items() if not any(
        p == q and d == e for k in drop for q, e, _ in groups[k])} for p, ds in dyn.items()}
    rest = {p: ds for p, ds in rest.items() if ds}
    return dynamic_capture(mod, args, kwargs, rest, first, decompose) if rest else (None, [])


def _related(x, y, a, b):
    """Whether size pair x->y looks like an expression of a->b to dynamic.unify (a multiple,
    an offset or a quotient of it): the second trace's sizes must not suggest relations that
    hold by chance."""
    return x * b == y * a or x - a == y - b or (a % x == 0 and b % y == 0 and
                                                a // x == b // y) or (
        x % a == 0 and y % b == 0 and x // a == y // b)


def _where_of(r):
    if type(r) is tuple:
        return r[1]
    if isinstance(r, BaseException):
        return _where(r)
    return None


def _try_unify(mod, args, kwargs, groups, tensors, sizes, keys, first, decompose):
    """The unified capture (symbolic sizes) with the groups `keys` resized, or
    (None, where) when the traces differ, or the exception the second trace raised."""
    changes = {(p, d): sizes[k][1] for k in keys for p, d, _ in groups[k]}
    a2, k2 = _resized(args, kwargs, tensors, changes)
    try:
        second = prepare(trace(mod, a2, k2, decompose=decompose))
    except UserError:
        raise
    except Exception as e:
        return e
    ca, cb = _as_capture(first), _as_capture(second)
    _share_constants(first.graph, second.graph)
    general = dynamic.unify(ca, cb)
    if general is None:
        return (None, _first_difference(first, second))
    general.second = second
    return general


def _as_capture(t):
    return dynamic.Capture(t.graph, t.struct, t.out_nodes, t.input_paths, t.input_shapes, None)


def _share_constants(ga, gb):
    """Constants made during the trace are new objects in each: equal ones are the same."""
    la, lb = ga.lifted(), gb.lifted()
    for na, nb in zip(la, lb):
        ta, tb = na.target, nb.target
        if ta is tb or ta.shape != tb.shape or ta.dtype is not tb.dtype or ta.is_meta or \
                tb.is_meta:
            continue
        if bool((ta._data == tb._data).all()):
            nb.target = ta


def _first_difference(a, b):
    """The user's line of the first node where two traces disagree beyond sizes."""
    ga, gb = a.graph, b.graph
    syms = []
    for k, (sa, sb) in enumerate(zip(a.input_shapes, b.input_shapes)):
        for d, (x, y) in enumerate(zip(sa, sb)):
            if x != y:
                syms.append((k, d, x, y))
    ia = {id(n): i for i, n in enumerate(ga.nodes)}
    ib = {id(n): i for i, n in enumerate(gb.nodes)}
    for na, nb in zip(ga.nodes, gb.nodes):
        if (na.kind, na.opname) != (nb.kind, nb.opname):
            return na.source or nb.source
        try:
            dynamic._unify(na.args, nb.args, na.args, syms, ia, ib)
            dynamic._unify(na.kwargs, nb.kwargs, na.kwargs, syms, ia, ib)
        except dynamic._Mismatch:
            return na.source
    k = min(len(ga.nodes), len(gb.nodes))
    longer = ga.nodes if len(ga.nodes) > k else gb.nodes
    return longer[k].source if k < len(longer) else None


def _where(exc):
    """The user's file:line where an exception was raised (innermost frame outside ember)."""
    tb, where = getattr(exc, "__traceback__", None), None
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if not path.startswith(_EMBER_DIR) or path.startswith(os.path.join(_EMBER_DIR,
                                                                            "examples")):
            where = f"{path}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return where


def symbolic_meta(ga, gb, syms_ab):
    """Per node of `ga` (the unified graph's source), its shape with Sym dims where the
    second trace's `gb` differs."""
    out = {}
    for na, nb in zip(ga.nodes, gb.nodes):
        if na.meta is None or nb.meta is None or len(na.meta[0]) != len(nb.meta[0]):
            continue
        shape = []
        for x, y in zip(na.meta[0], nb.meta[0]):
            if x == y:
                shape.append(x)
                continue
            try:
                shape.append(dynamic._expression(x, y, syms_ab))
            except Exception:
                shape.append(x)
        out[na.name] = tuple(shape)
    return out
