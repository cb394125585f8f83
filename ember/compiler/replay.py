"""``mode="reduce-overhead"``: replay a compiled graph from one prebuilt plan (the CPU analogue
of CUDA graphs).

    f = ember.compile(step, mode="reduce-overhead")

The first call of a graph builds its plan by running the graph once over static buffers:
every intermediate value gets a buffer of its own, allocated once; views are taken once of
those buffers; each fused kernel gets its pointer and stride arrays built once. A replay is
then a flat list of prebound calls: copy the inputs into their buffers, call each kernel
(one ctypes call with ready arguments), each extern op (matmul, index ops: its result is
copied into its buffer) and each pointwise op that NumPy computes in place (its ufunc with
``out=``), and copy the outputs out. No dispatch, no layout work, no allocation between
the input copy and the output copy; every fused group is a C kernel, however small.

The outputs are fresh copies (a later replay must not change a tensor the caller holds, nor
a value saved for the backward), and an output that is an input or a parameter is that
tensor itself. Where a graph cannot replay this way (in-place ops or opaque calls, symbolic
sizes, results that are not tensors) it runs as the ordinary compiled graph, and one log
line (a warning of the "ember.compiler" logger) says why. A parameter whose
array was replaced (``p.data = ...``) rebuilds the plan. The static buffers make a plan
single-threaded: a call while another thread replays the same plan runs the ordinary path.
"""
import threading
import weakref

import numpy as np

from ..core.tensor import Tensor
from ..dispatch import wrap
from ..ops.registry import VIEW, POINTWISE, op_for
from . import threads
from .config import log
from .graph import map_nodes
from .kernel_step import KernelStep
from .runtime import _Slot, rebuilder


_MATMUL = op_for("matmul")      # computed into its buffer by np.matmul(out=)


class Lease(list):
    """The saved values a training forward hands its autograd node; entries listed in
    `lent` are the plan's static tensors until the plan reclaims them (copies them here)."""
    __slots__ = ("lent", "__weakref__")


class CannotReplay(Exception):
    """The graph has something a static plan cannot hold (the message says what)."""


def wrap_run(run, graph, kplan=None, fns=(), name="graph", owner=None):
    """A run(inputs, lifted, syms) that replays `graph` from a plan, with `run` (the
    ordinary compiled replay) as the fallback. `kplan`/`fns`: fusion's plan and the loaded
    kernels (None and () on the numpy backend: every node is a step). `owner` (the
    CompiledFunction) lists it in ``owner.replays`` (for explain and tests)."""
    lend_saved = name == "forward"        # a training forward: (outputs, saved)
    state = {"plan": None, "failed": None}
    lock = threading.Lock()

    def replay(inputs, lifted, syms=()):
        if state["failed"] is not None or not lock.acquire(blocking=False):
            return run(inputs, lifted, syms)
        try:
            plan = state["plan"]
            if plan is not None and plan.fits(inputs, lifted):
                return plan(inputs)
            try:
                if plan is not None:
                    plan.reclaim()
                plan = state["plan"] = Plan(graph, kplan, fns, inputs, lifted, syms,
                                            lend_saved)
            except CannotReplay as e:
                state["failed"] = str(e)
                log.warning("ember.compile(mode='reduce-overhead'): the %s graph replays "
                            "op by op: %s", name, e)
                return run(inputs, lifted, syms)
            return plan.outputs(inputs)
        finally:
            lock.release()
    for attr in ("kernels", "pooled", "planned_peak_bytes", "source", "env"):
        if hasattr(run, attr):
            setattr(replay, attr, getattr(run, attr))
    replay.state = state
    replay.fallback = run
    replay.graph_name = name
    if owner is not None:
        owner.__dict__.setdefault("replays", []).append(replay)
    return replay


class Plan:
    """The steps of one graph over static buffers (see the module docstring)."""

    def __init__(self, graph, kplan, fns, inputs, lifted, syms, lend_saved=False):
        if syms:
            raise CannotReplay("symbolic sizes")
        self.graph = graph
        self.env = {}             # id(node) -> Tensor over a static array
        self.steps = []           # prebound callables, in order
        self.n_kernels = self.n_ufuncs = self.n_calls = 0
        self.lifted_arrays = [t._data for t in lifted]
        self.in_bufs = []         # (static array, its shape)
        self._rebuild = None
        self.lend_saved, self.lend, self._lease = lend_saved, None, None
        steps = kplan.steps if kplan is not None else [("node", n) for n in graph.nodes]
        built = {}
        if kplan is not None:
            fn_of = dict(zip(kplan.kernels, fns))
            for g, b in zip(kplan.groups, kplan.built):
                built[id(g)] = (b, fn_of.get(b[0]))
        for kind, x in steps:
            if kind == "group":
                self._group(x, *built[id(x)])
            else:
                self._node(x, inputs, lifted)

    # ---- building
    def _node(self, n, inputs, lifted):
        env = self.env
        if n.kind == "input":
            a = inputs[n.index]._data
            buf = np.array(a, order="C", copy=True)
            self.in_bufs.append((buf, a.shape))
            env[id(n)] = wrap(buf, inputs[n.index].dtype)
        elif n.kind == "lifted":
            env[id(n)] = lifted[n.index]
        elif n.kind == "getitem":
            src = env[id(n.args[0])]
            if not isinstance(src, (tuple, list)):
                raise CannotReplay(f"{n.name} indexes a value that is not a tuple")
            env[id(n)] = src[n.index]
        elif n.kind == "output":
            self.out_struct = n.args[0]
        elif n.kind == "call":
            self._call(n)
        else:
            raise CannotReplay(f"node kind {n.kind!r}")

    def _arg(self, x):
        return map_nodes(x, lambda m: self.env[id(m)])

    def _call(self, n):
        if n.inplace:
            raise CannotReplay(f"{n.name} ({n.opname}) is an in-place op or an opaque call")
        if _has_sym(n.args) or _has_sym(n.kwargs):
            raise CannotReplay("symbolic sizes")
        args, kwargs = self._arg(n.args), self._arg(n.kwargs)
        res = n.target(*args, **kwargs)
        ins = [a._data for a in _tensors((args, kwargs))]
        if (n.op is not None and n.op.kind == VIEW) or _is_alias(res, ins):
            if not _is_alias(res, ins):
                # a view op that copied (a reshape of a permuted value): a copy step
                if not isinstance(res, Tensor):
                    raise CannotReplay(f"{n.name} ({n.opname}) copies several values")
                res = self._copy_step(n, args, kwargs, res)
            self.env[id(n)] = res              # a view of static buffers is static
            return
        if isinstance(res, Tensor):
            self.env[id(n)] = self._compute_step(n, args, kwargs, res)
            return
        if type(res) in (tuple, list) and all(isinstance(r, Tensor) for r in res):
            bufs = type(res)(wrap(np.array(r._data, order="C"), r.dtype) for r in res)
            target = n.target

            def step(target=target, args=args, kwargs=kwargs, bufs=bufs):
                for b, r in zip(bufs, target(*args, **kwargs)):
                    np.copyto(b._data, r._data)
            self.steps.append(step)
            self.n_calls += 1
            self.env[id(n)] = bufs
            return
        raise CannotReplay(f"{n.name} ({n.opname}) returns {type(res).__name__}")

    def _copy_step(self, n, args, kwargs, res):
        buf = wrap(np.array(res._data, order="C"), res.dtype)
        target = n.target
        self.steps.append(lambda: np.copyto(buf._data, target(*args, **kwargs)._data))
        self.n_calls += 1
        return buf

    def _compute_step(self, n, args, kwargs, res):
        """A step computing n into its own buffer: the op's ufunc in place when it gives
        exactly the op's result, else the op called and its result copied in."""
        buf = wrap(np.array(res._data, order="C"), res.dtype)
        uf = n.op.ufunc if n.op is not None else None
        if isinstance(uf, np.ufunc) and n.op.kind == POINTWISE and not kwargs and \
                not n.op.attrs:
            vals = [a._data if isinstance(a, Tensor) else a for a in args]
            if all(isinstance(v, np.ndarray) or type(v) in (int, float, bool) for v in vals):
                try:
                    with np.errstate(all="ignore"):
                        r = uf(*vals)
                except (TypeError, ValueError):
                    r = None
                if isinstance(r, np.ndarray) and r.dtype == buf._data.dtype and \
                        r.shape == buf._data.shape and \
                        np.array_equal(r, res._data, equal_nan=True):
                    out = buf._data
                    vals = tuple(vals)

                    def step(uf=uf, vals=vals, out=out):
                        uf(*vals, out=out)
                    self.steps.append(step)
                    self.n_ufuncs += 1
                    return buf
        if n.op is _MATMUL and not kwargs and len(args) == 2 and all(
                isinstance(a, Tensor) and a._data.ndim >= 2 and a.dtype is res.dtype
                for a in args):
            a, b = args[0]._data, args[1]._data
            if np.matmul(a, b).shape == buf._data.shape:
                out = buf._data

                def step(a=a, b=b, out=out, mm=np.matmul):
                    mm(a, b, out=out)
                self.steps.append(step)
                self.n_ufuncs += 1
                return buf
        target, dst = n.target, buf._data
        self.steps.append(lambda: np.copyto(dst, target(*args, **kwargs)._data))
        self.n_calls += 1
        return buf

    def _group(self, g, b, fn):
        kernel, in_nodes, out_nodes = b
        if not kernel.outputs:
            return
        specs = []
        for m in out_nodes:
            if id(m) not in g.row:
                specs.append("full")
            else:
                keep = tuple(g.F[:g.k]) + (1,) * (len(g.F) - g.k)
                specs.append("row_keep" if tuple(m.meta[0]) == keep else "row")
        ks = KernelStep(fn, kernel, g.k, specs, [m.meta[1] for m in out_nodes],
                        [False] * len(out_nodes), g.F)
        arrays = [self.env[id(a)]._data for a in in_nodes]
        R, N, strides, shapes, copies = ks._plan(arrays)
        if copies is not None:
            srcs = arrays
            arrays = []
            for a, c in zip(srcs, copies):
                if c is None:
                    arrays.append(a)
                    continue
                cb = c(a)                      # a static contiguous copy, refreshed per call
                view = np.broadcast_to(a, cb.shape) if cb.shape != a.shape else a
                self.steps.append(lambda cb=cb, view=view: np.copyto(cb, view))
                arrays.append(cb)
        outs = [np.empty(s, dt.np) for s, dt in zip(shapes, ks.out_dtypes)]
        ptrs = fn._Ptrs(*[a.__array_interface__["data"][0] for a in arrays + outs])
        st = fn._Strides(*strides)
        cfn = fn._fn
        keep = (arrays, outs)                  # the arrays the pointers point into

        def step(cfn=cfn, R=R, N=N, ptrs=ptrs, st=st, keep=keep):
            cfn(R, N, ptrs, st, threads._num_threads)
        step()                                 # this call's values
        self.steps.append(step)
        self.n_kernels += 1
        for m, o, dt in zip(out_nodes, outs, ks.out_dtypes):
            self.env[id(m)] = wrap(o, dt)

    # ---- replaying
    def fits(self, inputs, lifted):
        """Whether this call's parameters are the arrays planned and its inputs the shapes."""
        for t, a in zip(lifted, self.lifted_arrays):
            if t._data is not a:
                return False
        for t, (buf, shape) in zip(inputs, self.in_bufs):
            if t._data.shape != shape:
                return False
        return len(inputs) == len(self.in_bufs)

    def __call__(self, inputs):
        if self._lease is not None:
            self.reclaim()
        for t, (buf, _) in zip(inputs, self.in_bufs):
            np.copyto(buf, t._data)
        for step in self.steps:
            step()
        return self.outputs(inputs)

    def outputs(self, inputs):
        """The output structure with fresh copies of the computed values (a training
        forward lends its saved-only values instead: see Lease)."""
        if self._rebuild is None:
            self._prepare_outputs()
        vals = [inputs[i] if kind == 0 else x if kind == 1 else wrap(x.copy(), dt)
                for kind, i, x, dt in self._outs]
        if self.lend is None:
            return self._rebuild(vals)
        user, saved_slots, lent = self.lend
        lease = Lease(vals[k] if t is None else t for k, t in saved_slots)
        lease.lent = lent
        self._lease = weakref.ref(lease)
        return tuple(vals[k] for k in user), lease

    def reclaim(self):
        """Before the static buffers are overwritten: the values lent to a forward whose
        backward has not run yet become copies (the Lease still held by its node)."""
        lease = self._lease() if self._lease is not None else None
        if lease is not None:
            for i in lease.lent:
                t = lease[i]
                if t is not None:
                    lease[i] = wrap(t._data.copy(), t.dtype)
            lease.lent = ()
        self._lease = None

    def _prepare_outputs(self):
        """The output nodes, each once: (0, input index) the caller's input, (1, tensor) a
        parameter, (2, static array, dtype) a copy; and the structure's rebuilder."""
        outs, slot, nodes = [], {}, []

        def one(m):
            k = slot.get(id(m))
            if k is None:
                k = slot[id(m)] = len(outs)
                nodes.append(m)
                if m.kind == "input":
                    outs.append((0, m.index, None, None))
                elif m.kind == "lifted":
                    outs.append((1, None, self.env[id(m)], None))
                else:
                    t = self.env[id(m)]
                    outs.append((2, None, t._data, t.dtype))
            return _Slot(k)
        struct = map_nodes(self.out_struct, one)
        self._outs = outs
        self._rebuild = rebuilder(struct)
        if self.lend_saved and type(struct) is tuple and len(struct) == 2:
            # (user outputs, saved): a saved value that is not a user output is lent as the
            # static tensor itself, no copy (reclaim() copies it if a replay comes first)
            user_slots, saved = struct
            user = [sl.i for sl in user_slots]
            mine = set(user)
            saved_slots, lent = [], []
            for j, sl in enumerate(saved):
                kind, _, x, _ = outs[sl.i]
                if kind == 2 and sl.i not in mine:
                    saved_slots.append((sl.i, self.env[id(nodes[sl.i])]))
                    lent.append(j)
                else:
                    saved_slots.append((sl.i, None))
            self.lend = (user, saved_slots, tuple(lent))

    def describe(self):
        return (f"{len(self.steps)} steps: {self.n_kernels} kernels, {self.n_ufuncs} "
                f"in-place ufuncs, {self.n_calls} op calls; {len(self.in_bufs)} inputs "
                "copied in")


def _tensors(x):
    out = []
    if isinstance(x, Tensor):
        out.append(x)
    elif type(x) in (tuple, list):
        for v in x:
            out.extend(_tensors(v))
    elif type(x) is dict:
        for v in x.values():
            out.extend(_tensors(v))
    return out


def _is_alias(res, ins):
    """Whether every tensor of `res` shares memory with one of the arrays `ins`."""
    ts = _tensors(res)
    return bool(ts) and all(any(np.may_share_memory(t._data, a) for a in ins) for t in ts)


def _has_sym(x):
    from .passes import _has_sym as has
    return has(x)


def plan_of(run):
    """The Plan a wrapped run built (None before its first call or where it fell back)."""
    return getattr(run, "state", {}).get("plan")


def enabled(compiled):
    return getattr(compiled, "mode", None) == "reduce-overhead"

