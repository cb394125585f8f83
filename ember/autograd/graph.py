"""Graph nodes: what an op records as it runs (define-by-run), and what backward walks.

Each op's node class is generated from its OpDef (`MulBackward0` for `mul`) and holds only
what the op's derivative formulas read (`OpDef.saves`), each saved tensor with the version it
had when saved. `next_functions` points at the producers of the inputs: other nodes, or an
`AccumulateGrad` for a leaf. Saving an op's own output keeps a detached alias, never the
output itself, so a graph nobody references is freed by reference counting alone.
"""
import itertools
import os
import re
import traceback
import weakref

import numpy as np

from .grad_mode import state
from ..core.tensor import Tensor
from ..core.dtype import torch_name
from .graph_dot import to_dot  # noqa: F401  (ember.autograd.graph.to_dot draws a graph)


class Node:
    """A backward function in the graph (PyTorch's ``grad_fn``)."""
    __slots__ = ("next_functions", "_input_meta", "_hooks", "_prehooks", "_tensor_prehooks",
                 "_retain_prehooks", "_trace", "_seq", "_base_fn", "__weakref__")

    def _setup(self, edges, meta):
        self.next_functions = edges
        self._input_meta = meta
        self._hooks = self._prehooks = self._tensor_prehooks = self._retain_prehooks = None
        # for a view's node: the base's grad_fn when the view was made (see edge_of)
        self._base_fn = _UNTRACKED
        self._trace = _forward_trace() if state.anomaly else None
        self._seq = _next_seq()   # creation order: the engine runs later nodes first

    def name(self):
        return type(self).__name__

    def apply(self, grads):
        raise NotImplementedError

    def release(self):
        pass

    def __call__(self, *grads):
        return self.apply(grads)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return new grad_outputs."""
        if self._prehooks is None:
            self._prehooks = []
        self._prehooks.append(fn)
        return RemovableHandle(self._prehooks, fn)

    def _add_tensor_prehook(self, output_nr, fn, retain=False):
        attr = "_retain_prehooks" if retain else "_tensor_prehooks"
        d = getattr(self, attr)
        if d is None:
            d = {}
            setattr(self, attr, d)
        d.setdefault(output_nr, []).append(fn)
        return RemovableHandle(d[output_nr], fn)

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def metadata(self):
        return {}


_next_seq = itertools.count(1).__next__


class RemovableHandle:
    """Returned by ``register_hook``; ``handle.remove()`` unregisters the hook."""

    def __init__(self, hooks, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self):
        try:
            self._hooks.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``variable.grad``. Not to
    be subclassed: the engine recognises a leaf's node by ``type(node) is AccumulateGrad``."""
    __slots__ = ("variable",)

    def __init__(self, variable):
        self._setup((), ((variable._data.shape, variable.dtype),))
        self.variable = variable

    def apply(self, grads):
        return ()


_UNTRACKED = object()   # Node._base_fn of nodes that are not views' nodes
_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `ember.no_grad()` instead of "
    "`ember.inference_mode()`.")


class SavedTensor:
    """A tensor kept for backward, with the version it had when it was saved."""
    __slots__ = ("tensor", "version", "is_output", "released")

    def __init__(self, tensor, is_output):
        if tensor._inference:
            raise RuntimeError(_INFERENCE_SAVED)
        if is_output:
            storage = tensor._storage_obj()
            alias = Tensor._make(tensor._data, tensor.dtype)
            alias._storage = storage
            alias._output_nr = tensor._output_nr
            self.tensor = alias
            self.version = storage.version
        else:
            self.tensor = tensor
            self.version = tensor._version
        self.is_output = is_output
        self.released = False

    def unpack(self, node):
        t = self.unpack_values(node)
        if self.is_output:
            alias = Tensor._make(t._data, t.dtype)
            alias._storage = t._storage
            alias.grad_fn = node
            alias._requires_grad = True
            alias._output_nr = t._output_nr
            fw = getattr(t, "_fw", None)     # forward AD's tangents (forward_ad.py)
            if fw:
                alias._fw = fw
            return alias
        return t

    def unpack_values(self, node):
        """The saved tensor after the checks; a saved output comes back as the stored alias,
        without its history (enough for a formula that runs without recording)."""
        if self.released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward.")
        t = self.tensor
        st = t._storage
        if (0 if st is None else st.version) != self.version:
            self._stale(node, t)
        return t

    def _stale(self, node, t):
        # PyTorch names the producer without "Backward0": the saving node for an output,
        # the tensor's current grad_fn for an input; leaves get no clause
        producer = node if self.is_output else t.grad_fn
        which = "" if producer is None else \
            f", which is output {t._output_nr} of {_op_name(producer)},"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [ember.{torch_name(t.dtype)}Tensor {list(t._data.shape)}]"
            f"{which} is at version {t._version}; expected version {self.version} "
            "instead. Hint: enable anomaly detection to find the operation that failed to "
            "compute its gradient, with ember.autograd.set_detect_anomaly(True).")


def _op_name(node):
    """``MulBackward0`` -> ``Mul`` (how PyTorch names a node in error messages)."""
    return re.sub(r"Backward\d*$", "", node.name())


class OpNode(Node):
    """Base of the generated per-op node classes (``MulBackward0``...)."""
    __slots__ = ("_saved", "_needs")
    op = None

    def apply(self, grads, conjugated=False):
        g = grads[0]
        if not conjugated and type(g) is not tuple and g is not None and \
                g.dtype._kind == 3 and self.op.holomorphic:
            return _conjugated(self, grads)
        out = []
        saved = self._saved
        needs = self._needs
        # without create_graph (and no mode watching) a formula only reads a saved output's
        # values: the stored alias serves; with it, the formula needs the output's history
        st = state.__dict__
        plain = not st["enabled"] and not st["modes"]
        for need, inp, formula, reads in self.op._apply_plan or _apply_plan(self.op):
            if not needs[need]:
                out.append(None)
                continue
            if formula is None:
                raise RuntimeError(f"the derivative for '{self.op.name}' with respect to "
                                   f"'{inp}' is not implemented")
            if not reads:
                out.append(formula(g))
                continue
            args = [g]
            for p in reads:   # a formula's parameters are what it reads, in order
                v = saved[p]
                if type(v) is SavedTensor:
                    if plain:
                        # unpack_values' checks, inline: not released, version unchanged
                        t = v.tensor
                        if v.released or (0 if t._storage is None else
                                          t._storage.version) != v.version:
                            t = v.unpack_values(self)      # (raises the error)
                        v = t
                    else:
                        v = v.unpack(self)
                args.append(v)
            out.append(formula(*args))
        return tuple(out)

    def release(self):
        # drop references so memory is returned now. PyTorch saves the number operand of
        # `x * 2` and `x / 2` as a (wrapped) tensor, so a second backward fails there too
        saved = self._saved
        if not saved:
            return
        if not self.op.scalars_as_tensors:
            for v in saved.values():
                if type(v) is SavedTensor:
                    v.released = True
                    v.tensor = None
            return
        wrapped = self.op.inputs
        for k, v in saved.items():
            if type(v) is SavedTensor:
                v.released = True
                v.tensor = None
            elif k in wrapped:
                saved[k] = _RELEASED_SCALAR

    def __getattr__(self, name):
        # PyTorch exposes saved values as `_saved_<name>` attributes
        if name.startswith("_saved_"):
            v = self._saved.get(name[7:], _missing)
            if v is not _missing:
                return v.unpack(self) if type(v) is SavedTensor else v
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


_missing = object()


def _conjugated(node, grads):
    """A holomorphic op's real-case formulas under torch's complex convention: the gradient
    of each input is conj(formula(conj(g))), i.e. g times the conjugate local derivative."""
    outs = node.apply(tuple(g.conj_physical() if isinstance(g, Tensor) else g for g in grads),
                      True)
    return tuple(o.conj_physical() if isinstance(o, Tensor) and o.dtype._kind == 3 else
                 (o.conjugate() if isinstance(o, complex) else o) for o in outs)



_RELEASED_SCALAR = SavedTensor.__new__(SavedTensor)
_RELEASED_SCALAR.tensor, _RELEASED_SCALAR.version = None, 0
_RELEASED_SCALAR.is_output, _RELEASED_SCALAR.released = False, True


def _apply_plan(op):
    """(input index, input name, formula, names it reads) per input of `op`, made once:
    what OpNode.apply walks on every backward."""
    op._apply_plan = tuple((i, inp, op.grads.get(inp), op.saves.get(inp, ()))
                           for i, inp in enumerate(op.inputs))
    return op._apply_plan


class JointOpNode(OpNode):
    """The node of an op with a joint formula: one formula, keyed by a tuple of input names,
    gives the gradients of several inputs at once (derivatives.yaml's ``self, other:``). A
    formula parameter named ``grad_input_mask`` receives which of them are needed."""
    __slots__ = ()

    def apply(self, grads, conjugated=False):
        g = grads[0]
        if not conjugated and type(g) is not tuple and g is not None and \
                g.dtype._kind == 3 and self.op.holomorphic:
            return _conjugated(self, grads)
        saved = self._saved
        needs = self._needs
        plain = not state.enabled and not state.modes
        out = [None] * len(needs)
        for idx, names, formula, reads in self.op._apply_plan or _joint_plan(self.op):
            mask = tuple(needs[i] for i in idx)
            if not any(mask):
                continue
            if formula is None:
                raise RuntimeError(f"the derivative for '{self.op.name}' with respect to "
                                   f"'{names[0]}' is not implemented")
            args = [g]
            for p in reads:
                if p == "grad_input_mask":
                    args.append(mask)
                    continue
                v = saved[p]
                if type(v) is SavedTensor:
                    v = v.unpack_values(self) if plain else v.unpack(self)
                args.append(v)
            res = formula(*args)
            if len(idx) == 1:
                res = (res,)
            for i, r, m in zip(idx, res, mask):
                if m:
                    out[i] = r
        return tuple(out)


def _joint_plan(op):
    """(input indices, names, formula, names it reads) per formula of `op`, joint or not;
    inputs with no formula get one entry with formula None."""
    plan, covered = [], set()
    for key, formula in op.grads.items():
        names = key if type(key) is tuple else (key,)
        idx = tuple(op.inputs.index(n) for n in names)
        covered.update(idx)
        plan.append((idx, names, formula, op.saves.get(key, ())))
    for i, inp in enumerate(op.inputs):
        if i not in covered:
            plan.append(((i,), (inp,), None, ()))
    op._apply_plan = tuple(plan)
    return op._apply_plan


def node_class(op):
    if op.node_class is None:
        joint = any(type(k) is tuple for k in op.grads)
        op.node_class = type(op.node_name, (JointOpNode if joint else OpNode,),
                             {"__slots__": (), "op": op})
    return op.node_class


def edge_of(t):
    """The (node, output_nr) a gradient for tensor `t` must flow into, or (None, 0)."""
    fn = t.grad_fn
    if fn is not None:
        base_fn = fn._base_fn
        if base_fn is not _UNTRACKED and t._base is not None and base_fn is not t._base.grad_fn:
            fn = refresh_view(t)
        return (fn, t._output_nr)
    if t._requires_grad:
        ref = t._grad_acc
        acc = ref() if ref is not None else None
        if acc is None:
            acc = AccumulateGrad(t)
            t._grad_acc = weakref.ref(acc)   # the graph holds it; the leaf only points at it
        return (acc, 0)
    return (None, 0)



def _save_plan(op):
    """What recording saves, computed once per op so it does no name lookups: one
    (name, kind, index, readers) per value some formula reads. kind is _INPUT (the input at
    `index`), _OUTPUT or _ATTR; `readers` is a bit mask of the inputs whose formulas read
    the value: it is saved only when one of them needs a gradient."""
    plan = op.__dict__.get("_plan")
    if plan is None:
        names = op.inputs
        readers = {}
        for key, params in op.saves.items():   # a joint formula's key: a tuple of names
            bits = 0
            for n in (key if type(key) is tuple else (key,)):
                if n in names:
                    bits |= 1 << names.index(n)
            for p in params:
                if p != "grad_input_mask":      # given by the node, not saved
                    readers[p] = readers.get(p, 0) | bits
        plan = tuple((p, _INPUT, names.index(p), mask) if p in names else
                     (p, _OUTPUT if p == "result" else _ATTR, -1, mask)
                     for p, mask in readers.items())
        op._plan = plan
    return plan


_INPUT, _OUTPUT, _ATTR = 0, 1, 2


def make_node(op, args, attrs, result, inputs_for_save=None, save_result=False):
    """Build the node for one call of `op`; `args` are its inputs in OpDef.inputs order.
    An output the formulas read is saved (`result`) with `save_result`, else marked
    (_RESULT) for the caller to save once it has set the output up."""
    cls = op.node_class or node_class(op)
    node = _new(cls)
    edges, meta, needs = [], [], []
    mask, bit = 0, 1     # `needs` as bits, to test a saved value's readers at once
    for x in args:
        if isinstance(x, Tensor):
            fn = x.grad_fn
            if fn is not None and fn._base_fn is _UNTRACKED:   # edge_of's common case
                e = (fn, x._output_nr)
            else:
                e = edge_of(x)
            edges.append(e)
            meta.append((x._data.shape, x.dtype))
            if e[0] is not None:
                needs.append(True)
                mask |= bit
            else:
                needs.append(False)
        else:
            edges.append(_NO_EDGE)
            meta.append(None)
            needs.append(False)
        bit <<= 1
    # Node._setup, inline (one call less on every recorded op)
    node.next_functions = tuple(edges)
    node._input_meta = tuple(meta)
    node._hooks = node._prehooks = node._tensor_prehooks = node._retain_prehooks = None
    node._base_fn = _UNTRACKED
    node._trace = _forward_trace() if state.anomaly else None
    node._seq = _next_seq()
    node._needs = needs
    saved = _NOTHING_SAVED
    plan = op.__dict__.get("_plan")
    if plan is None:
        plan = _save_plan(op)
    if plan:
        src = inputs_for_save or args
        saved = {}
        for p, kind, where, readers in plan:
            if not mask & readers:
                continue
            if kind == _INPUT:
                v = src[where]
                saved[p] = _save_input(v) if isinstance(v, Tensor) else v
            elif kind == _OUTPUT:
                saved[p] = SavedTensor(result, True) if save_result else _RESULT
            else:
                saved[p] = attrs.get(p, op.attrs.get(p))
    node._saved = saved
    return node


def _save_input(t):
    """SavedTensor(t, False), without the call overhead (recording saves on every op)."""
    if t._inference:
        raise RuntimeError(_INFERENCE_SAVED)
    s = _new(SavedTensor)
    s.tensor = t
    st = t._storage
    s.version = 0 if st is None else st.version
    s.is_output = False
    s.released = False
    return s


_new = object.__new__
_NO_EDGE = (None, 0)
# the `_saved` of nodes that save nothing: shared, read only (a node that saves something
# gets its own dict)
_NOTHING_SAVED = {}
_RESULT = ("result",)


# In-place ops on views are handled in autograd/views.py, which builds on this module and
# fills these two slots at its import:
# - rebase_view(op, args, t, attrs, old): rewire the graph after in-place `op` on view `t`;
# - refresh_view(t): a fresh node for view `t` whose base was modified in place after `t` was
#   made (returns it).
rebase_view = None
refresh_view = None


def record(op, args, result, attrs):
    """Attach a node for `op` to `result` (called by dispatch when an input requires grad)."""
    node = make_node(op, args, attrs, result, None, True)
    if result._base is not None:
        node._base_fn = result._base.grad_fn
    result.grad_fn = node
    result._requires_grad = True


def record_multi(op, args, results, attrs):
    """Like `record` for ops with several differentiable outputs (the node gets a tuple)."""
    node = make_node(op, args, attrs, results)
    for i, r in enumerate(results):
        r.grad_fn = node
        r._requires_grad = True
        r._output_nr = i
    for k, v in node._saved.items():
        if v is _RESULT:
            node._saved[k] = SavedTensor(results[0], True)
    return node


def check_inplace(t):
    """PyTorch's refusals before an in-place op touches `t`."""
    if state.enabled and t._requires_grad and not state.inference:
        base = t._base
        if t.grad_fn is None:
            if base is None or base.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
        elif base is not None and base.grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    if t._inference and not state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
                           "details.")


def snapshot_for_inplace(op, t):
    """A copy of `t` as it was, if the op's derivative reads its original value."""
    if any("self" in op.saves.get(i, ()) for i in op.inputs):
        c = Tensor._make(t._data.copy(), t.dtype)
        if t._requires_grad:
            c._requires_grad = True
            c.grad_fn, c._output_nr = edge_of(t)
        return c
    return None


def record_inplace(op, args, t, attrs, old):
    """Rebase `t` onto a new node for an in-place op (``y.add_(1)``)."""
    if t._base is not None and t._base._requires_grad or (t._base is not None and
                                                          _needs_view_rebase(args)):
        rebase_view(op, args, t, attrs, old)
        return
    src = (old if old is not None else args[0],) + tuple(args[1:])
    # edges must point at t's history *before* this op
    node = make_node(op, src, attrs, t, inputs_for_save=src)
    saved_before_bump(node, t)
    t.grad_fn = node
    t._requires_grad = True
    t._output_nr = 0
    for k, v in node._saved.items():
        if v is _RESULT:
            node._saved[k] = SavedTensor(t, True)


def saved_before_bump(node, t):
    """Inputs saved by an in-place op on `t` were saved *before* it wrote (as in PyTorch):
    one that shares t's storage (``y.mul_(y.detach())``) must remember the older version, so
    backward sees that the op overwrote it."""
    st = t._storage
    for v in node._saved.values():
        if type(v) is SavedTensor and not v.is_output and v.tensor._storage is st:
            v.version -= 1


def _needs_view_rebase(args):
    return any(isinstance(x, Tensor) and x._requires_grad for x in args[1:])


def anomaly_check(node, grads):
    """In anomaly mode: a backward function that returned NaN fails, naming itself."""
    if not state.anomaly or not state.anomaly_check_nan:
        return
    for i, g in enumerate(grads):
        if isinstance(g, Tensor) and g.dtype.is_floating_point and np.isnan(g._data).any():
            report_trace(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")


def report_trace(node):
    """Warn with the forward traceback kept by a node made in anomaly mode (as PyTorch does)."""
    if node._trace:
        import warnings
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      "the error:\n" + "".join(node._trace), UserWarning, stacklevel=2)


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _forward_trace():
    """The caller's stack where a node is made, without ember's own frames."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_EMBER_DIR)]
    return traceback.format_list(frames)
