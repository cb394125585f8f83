"""Meta tracing for export: run the trace on meta stand-ins of the module's state and of the
example inputs, so that exporting computes nothing and allocates no tensor memory.

Export needs only what each op gives (shape, dtype, strides), and every op's meta rule
(OpDef.meta, ember/ops/meta_rules.py) gives exactly that. So while the trace runs:
- each parameter, buffer and tensor attribute of the module keeps its identity (the graph's
  lifted nodes are the caller's tensors) but holds, for the trace, a meta array of the same
  shape, dtype and strides instead of its data (`swap_state`; put back afterwards, whatever
  happens). The module's values are never read or written;
- the example inputs are replaced by meta tensors of the same shape, dtype and strides
  (`meta_inputs`);
- a real tensor that the forward makes itself (``ember.arange(T)``, ``ember.ones(T, T)``) is
  handed to each op as a meta stand-in (`stand_ins`, asked by the ExportTracer), as an op
  over meta and cpu tensors is a device mismatch; inside a composite op, its own cpu
  helpers may meet its meta input (`dispatch.mixed_meta_ok`);
- a ``device="meta"`` the forward read from a traced tensor (``arange(T, device=x.device)``)
  is recorded as the device of the real state (`real_device`).

A model built on the meta device (``with ember.device("meta"): m = GPT()``) traces the same
way; its program runs on real weights once they are loaded into ``ep.module()``.
Where an op has no meta rule (or a meta rule fails), export traces again on real tensors
(ember/export/_capture.py's `trace`) and records why in ``ep.trace_info``.
"""
from ..core.tensor import Tensor
from ..core.meta import MetaArray, MetaData, meta_array
from ..core.device import device as _device
from .. import dispatch

CPU = _device("cpu")


def is_meta(t):
    return type(t._data) is MetaArray


def meta_like_array(a):
    """A MetaArray with `a`'s shape, dtype and strides (contiguous when they are negative or
    not whole elements)."""
    item = a.dtype.itemsize
    strides = None
    if all(s >= 0 and s % item == 0 for s in a.strides):
        strides = tuple(s // item for s in a.strides)
    return meta_array(a.shape, a.dtype, strides)


def meta_like(t):
    """A new meta tensor with `t`'s shape, dtype, strides and requires_grad."""
    r = Tensor._make(meta_like_array(t._data), t.dtype)
    if t._requires_grad:
        r.requires_grad_(True)
    return r


def state_tensors(mod):
    """The module's parameters, buffers and tensor attributes, each once."""
    seen, out = set(), []
    for t in list(mod.parameters()) + [b for b in mod.buffers() if b is not None]:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    for _, m in mod.named_modules():
        for k, v in vars(m).items():
            if isinstance(v, Tensor) and not k.startswith("__") and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


class swap_state:
    """``with swap_state(tensors):`` each real tensor of `tensors` holds a meta array of its
    layout; its own array (and storage, version) come back on exit. Meanwhile an op may mix
    meta and cpu tensors (`dispatch.mixed_meta_ok`): a composite's own cpu helpers meet its
    meta input."""

    def __init__(self, tensors):
        self.tensors = [t for t in tensors if not is_meta(t)]

    def __enter__(self):
        self.saved = [(t._data, t._storage, t._version) for t in self.tensors]
        for t in self.tensors:
            t._data = meta_like_array(t._data)
            t._storage = None
        self.mixed, dispatch.mixed_meta_ok = dispatch.mixed_meta_ok, True
        return self

    def __exit__(self, *exc):
        dispatch.mixed_meta_ok = self.mixed
        for t, (data, storage, version) in zip(self.tensors, self.saved):
            t._data, t._storage = data, storage
            if storage is not None:
                storage.version = version
        return False


def meta_inputs(x, memo):
    """(args, kwargs) with every tensor replaced by a meta tensor of its layout (one per
    distinct tensor, so an input passed twice stays one input)."""
    if isinstance(x, Tensor):
        if id(x) not in memo:
            memo[id(x)] = meta_like(x)
        return memo[id(x)]
    if type(x) in (tuple, list):
        return type(x)(meta_inputs(v, memo) for v in x)
    if type(x) is dict:
        return {k: meta_inputs(v, memo) for k, v in x.items()}
    return x


def real_device(x):
    """Recorded arguments with the meta device as the real state's device (cpu)."""
    if isinstance(x, _device) and x.type == "meta":
        return CPU
    if type(x) in (tuple, list):
        return type(x)(real_device(v) for v in x)
    if type(x) is dict:
        return {k: real_device(v) for k, v in x.items()}
    return x


def has_real(x):
    """Whether a call's arguments hold a real (non-0-dim) tensor, which the trace hands to
    the op as a meta stand-in."""
    if isinstance(x, Tensor):
        return not is_meta(x) and x._data.ndim > 0
    if type(x) in (tuple, list):
        return any(has_real(v) for v in x)
    if type(x) is dict:
        return any(has_real(v) for v in x.values())
    return False


def stand_ins(x, make):
    """`x` with each real tensor replaced by ``make(t)`` (its meta stand-in)."""
    if isinstance(x, Tensor):
        return make(x) if not is_meta(x) and x._data.ndim > 0 else x
    if type(x) in (tuple, list):
        return type(x)(stand_ins(v, make) for v in x)
    if type(x) is dict:
        return {k: stand_ins(v, make) for k, v in x.items()}
    return x


def failure(exc):
    """Why the meta trace failed, naming the op: ``"batch_norm (ember/ops/nn_ops.py:412):
    MetaData: np.mean needs the data..."``."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where, tb = None, exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith(root) and os.sep + "export" + os.sep not in \
                code.co_filename and os.sep + "compiler" + os.sep not in code.co_filename \
                and not code.co_filename.endswith(("dispatch.py", "meta.py", "grad_mode.py")):
            rel = os.path.relpath(code.co_filename, os.path.dirname(root))
            where = f"{code.co_name} ({rel}:{tb.tb_lineno})"
        tb = tb.tb_next
    return (f"{where}: " if where else "") + f"{type(exc).__name__}: {exc}"


def meta_rule_on_refusal(op, fn):
    """`fn` that runs `op`'s meta rule when its kernel refuses a meta array: a mode gets the
    op's own function, below the op's entry where the public function would catch that."""
    from ..dispatch import run_meta

    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MetaData:
            return run_meta(op, args, kwargs)
    run.__name__ = getattr(fn, "__name__", str(op))
    run._export_wraps = fn
    return run
