"""Who holds this: for each live tensor, what keeps it alive, in words.

One pass over the garbage collector's objects finds the tensors and the things that hold
tensors on purpose: modules (parameters and buffers, by qualified name), optimizers (their
per-parameter state), autograd nodes (their saved tensors, by the node's name) and tensors
(their ``.grad``, a view's base). What is left is held by plain Python references, found
with ``gc.get_referrers`` and named where a name can be found: a local variable of a running
function, a module global, an attribute, an item of a list or dict (and that list's name).

Modules and optimizers are recognised by their base classes' names (ember.nn sits above
this layer, so it is not imported here).
"""
import gc
import os
import sys
import types

from ..core.tensor import Tensor
from ..autograd.graph import Node, SavedTensor, AccumulateGrad

_KIND_CACHE = {}


def _kind(tp):
    """'module', 'optimizer' or None for an object's type (cached per type)."""
    k = _KIND_CACHE.get(tp, 0)
    if k == 0:
        k = None
        for base in tp.__mro__:
            mod = base.__dict__.get("__module__", "")
            if base.__name__ == "Module" and mod.startswith("ember.nn"):
                k = "module"
                break
            if base.__name__ == "Optimizer" and mod.startswith("ember.optim"):
                k = "optimizer"
                break
        _KIND_CACHE[tp] = k
    return k


class Holders:
    """The census of one moment: ``of(tensor)`` lists what holds it (strings)."""

    def __init__(self, collect=True):
        if collect:
            gc.collect()
        objs = gc.get_objects()
        self._ignore = {id(objs)}
        self.tensors, modules, optims, nodes = [], [], [], []
        for o in objs:      # type(), not isinstance(): that reads __class__, a property
            tp = type(o)    # on some objects (with warnings or side effects)
            if issubclass(tp, Tensor):
                self.tensors.append(o)
            elif issubclass(tp, Node):
                nodes.append(o)
            else:
                k = _kind(tp)
                if k == "module":
                    modules.append(o)
                elif k == "optimizer":
                    optims.append(o)
        self._ignore.update((id(self.tensors), id(modules), id(optims), id(nodes)))
        self.held = {}          # id(tensor) -> [reason, ...]
        self._structural = set()    # ids of the modules' and optimizers' own containers
        self.names = {}         # id(tensor) -> the name of its strongest owner, for grads
        self._modules(modules)
        self._optimizers(optims)
        self._nodes(nodes)
        self._index_references(objs)
        del objs
        self._graph_owners()
        for t in self.tensors:
            g = t._grad
            if g is not None:
                self._add(g, f"the .grad of {self.name_of(t)}")
            if t._base is not None:
                self._add(t._base, f"the base of a view of shape {tuple(t.shape)}")

    def close(self):
        """Drop the census's references (its index of referrers holds lists and dicts that
        hold tensors, in cycles a later census would otherwise find as holders)."""
        for name in ("tensors", "rev", "locals", "held", "names", "_structural", "_ignore",
                     "_locals_dicts"):
            setattr(self, name, None)

    def _add(self, t, why, name=None):
        self.held.setdefault(id(t), []).append(why)
        if name is not None:
            self.names.setdefault(id(t), name)

    def _modules(self, modules):
        children = set()
        for m in modules:
            for c in m.__dict__.get("_modules", {}).values():
                if c is not None:
                    children.add(id(c))
        roots = [m for m in modules if id(m) not in children]
        for root in roots:
            rname = type(root).__name__
            stack, seen = [("", root)], set()
            while stack:
                prefix, m = stack.pop()
                if id(m) in seen:
                    continue
                seen.add(id(m))
                d = m.__dict__
                self._structural.update(id(d.get(k)) for k in ("_parameters", "_buffers"))
                for kind, table in (("parameter", "_parameters"), ("buffer", "_buffers")):
                    for n, t in d.get(table, {}).items():
                        if t is not None:
                            q = prefix + n
                            self._add(t, f"{kind} '{q}' of {rname}", f"{kind} '{q}'")
                for n, c in d.get("_modules", {}).items():
                    if c is not None:
                        stack.append((prefix + n + ".", c))

    def _optimizers(self, optims):
        for opt in optims:
            oname = type(opt).__name__
            self._structural.add(id(getattr(opt, "state", None)))
            for p, st in getattr(opt, "state", {}).items():
                if not isinstance(st, dict):
                    continue
                self._structural.add(id(st))
                for k, v in st.items():
                    if isinstance(v, Tensor):
                        self._add(v, f"{oname} state '{k}' of {self.name_of(p)}")
            for g in getattr(opt, "param_groups", ()):
                self._structural.update((id(g), id(g.get("params"))))
                for p in g.get("params", ()):
                    if isinstance(p, Tensor) and id(p) not in self.names:
                        self._add(p, f"a param_group of {oname} (in no module)")

    def _nodes(self, nodes):
        self._saved = []
        for node in nodes:
            if isinstance(node, AccumulateGrad):
                continue
            saved = getattr(node, "_saved", None)
            if not saved:
                continue
            self._structural.add(id(saved))
            items = saved.items() if isinstance(saved, dict) else enumerate(saved)
            for k, v in items:
                t = v.tensor if isinstance(v, SavedTensor) else v
                if isinstance(t, Tensor):
                    self._saved.append((t, k, node))

    def _graph_owners(self):
        """Name each saved tensor's node by a tensor whose graph reaches it (a loss kept
        in a list keeps its whole graph, and so every activation the graph saved)."""
        owner = {}
        for t in self.tensors:
            fn = t.grad_fn
            if fn is None or id(fn) in owner:
                continue
            refs = self.plain(t)
            if not refs:
                continue
            who = f"{self.name_of(t)} held by {refs[0]}"
            stack = [fn]
            while stack:
                n = stack.pop()
                if n is None or id(n) in owner:
                    continue
                owner[id(n)] = who
                stack.extend(e[0] for e in getattr(n, "next_functions", ()) or () if e)
        for t, k, node in self._saved:
            why = f"saved tensor '_saved_{k}' of {node.name()}"
            if id(node) in owner:
                why += f" (in the autograd graph of {owner[id(node)]})"
            self._add(t, why)
        del self._saved

    def name_of(self, t):
        """A short name for a tensor: its module name if it has one, else its shape."""
        n = self.names.get(id(t))
        if n is not None:
            return n
        kind = "Parameter" if type(t).__name__ == "Parameter" else "tensor"
        return f"a {kind} of shape {tuple(t.shape)}"

    def of(self, t):
        """Every reason `t` is alive: structural holders, then plain references."""
        return self.held.get(id(t), []) + self.plain(t)

    # ---- plain references ----
    def _index_references(self, objs):
        """Who refers to each tensor, and to each container holding one. The tensors' own
        referrers take one pass of gc.get_referents over all objects (gc.get_referrers
        would be one pass per tensor); the few containers found are looked up with one
        gc.get_referrers call per level. Frames are left out: their locals are read."""
        self.locals = {}
        self._locals_dicts = set()
        for f, where in _frames():
            loc = f.f_locals
            self._locals_dicts.add(id(loc))
            kind = "global" if f.f_code.co_name == "<module>" else "local variable"
            for n, v in loc.items():
                self.locals.setdefault(id(v), []).append(f"{kind} '{n}' in {where}")
            _drop_snapshot(f, loc)
        skip = (types.FrameType, Tensor, SavedTensor, Node)
        containers = (list, tuple, dict, set)
        skip_ids = self._ignore | self._locals_dicts | self._structural
        self.rev = {}
        found = self._index(objs, {id(t) for t in self.tensors}, skip, skip_ids, containers)
        for _ in range(2):          # the containers' holders, and theirs
            targets = [c for k, c in found.items() if k not in self.rev]
            if not targets:
                break
            want = {id(c) for c in targets}
            found = {}                  # (dropped first: it refers to the targets too)
            refs = gc.get_referrers(*targets)
            # this census's own lists refer to the targets too: the index's value lists
            skip_ids.update((id(refs), id(targets)))
            skip_ids.update(id(v) for v in self.rev.values())
            found = self._index(refs, want, skip, skip_ids, containers)
            del refs, targets
        self._modules_by_globals = {id(getattr(m, "__dict__", None)): name
                                    for name, m in list(sys.modules.items())}

    def _index(self, objs, want, skip, skip_ids, containers):
        """Note in self.rev which of `objs` refer to an object whose id is in `want`; returns
        the containers among them (their own holders are looked up next)."""
        found = {}
        for o in objs:
            tp = type(o)
            if issubclass(tp, skip) or id(o) in skip_ids:
                continue
            for r in gc.get_referents(o):
                if id(r) in want:
                    self.rev.setdefault(id(r), []).append(o)
                    if issubclass(tp, containers):
                        found[id(o)] = o
        return found

    def plain(self, obj, depth=1):
        """Names of the plain Python references to `obj`: frame locals, globals,
        attributes, container items (a container named by its own holders, `depth` up)."""
        out = list(self.locals.get(id(obj), ()))
        for r in self.rev.get(id(obj), ()):
            d = self._describe(r, obj, depth)
            if d:
                out.append(d)
        return out

    def _describe(self, r, obj, depth):
        if isinstance(r, dict):
            keys = [k for k, v in r.items() if v is obj]
            if not keys:
                return None
            mod = self._modules_by_globals.get(id(r))
            if mod is not None:
                return f"global '{keys[0]}' of module {mod}"
            owner = next((o for o in self.rev.get(id(r), ())
                          if getattr(o, "__dict__", None) is r), None)
            if owner is not None:
                return f"attribute '{keys[0]}' of a {type(owner).__name__}"
            if "__builtins__" in r:      # the globals of a script run by exec
                return f"global '{keys[0]}'"
            return f"value of key {keys[0]!r} in {self._name(r, depth)}"
        if isinstance(r, (list, tuple)):
            idx = next((i for i, v in enumerate(r) if v is obj), None)
            if idx is None:
                return None
            return f"item {idx} of {self._name(r, depth)}"
        if isinstance(r, (set, frozenset)):
            return f"a member of {self._name(r, depth)}"
        if type(r).__name__ == "cell":
            return "a closure variable"
        if getattr(r, "__dict__", None) is not None and any(
                v is obj for v in vars(r).values()):
            return f"an attribute of a {type(r).__name__}"
        return f"a {type(r).__name__} object"

    def _name(self, c, depth):
        kind = f"a {type(c).__name__} (len {len(c)})"
        if depth <= 0:
            return kind
        names = self.plain(c, depth - 1)
        return f"{kind} held by {names[0]}" if names else kind


_CO_OPTIMIZED = 1


def _drop_snapshot(f, loc):
    """Before Python 3.13, reading a function frame's f_locals leaves a dict snapshot on the
    frame holding every local until the function returns, so a tensor the caller `del`s
    afterwards would stay alive because ember looked at it. Empty that snapshot again; it
    is written back into the frame's variables only under a trace function (a debugger,
    coverage), so not then. From 3.13 f_locals is a live view: nothing to undo, and
    clearing it would delete the variables."""
    if (sys.version_info < (3, 13) and f.f_code.co_flags & _CO_OPTIMIZED
            and sys.gettrace() is None and f.f_trace is None):
        loc.clear()


def _frames():
    """(frame, 'function (file:line)') for the running frames outside ember.memory."""
    here = os.path.dirname(os.path.abspath(__file__))
    seen = set()
    for top in [sys._getframe()] + list(sys._current_frames().values()):
        f = top
        while f is not None:
            if id(f) not in seen:
                seen.add(id(f))
                fn = f.f_code.co_filename
                if not fn.startswith(here):
                    yield f, f"{f.f_code.co_name} ({os.path.basename(fn)}:{f.f_lineno})"
            f = f.f_back


