"""Activation checkpointing (``torch.utils.checkpoint``): trade compute for memory.

    from ember.utils.checkpoint import checkpoint, checkpoint_sequential
    y = checkpoint(block, x, use_reentrant=False)      # block's activations are not kept
    y = checkpoint_sequential(model, 2, x, use_reentrant=False)

``checkpoint(fn, *args)`` runs ``fn`` and keeps only its inputs; backward runs ``fn`` again
(with the RNG state it had the first time, so dropout draws the same masks) and
differentiates that recomputation. The gradients equal those without checkpointing.

Two variants, as in torch:
- ``use_reentrant=True`` (torch's default when the argument is omitted, with its warning):
  a custom Function whose forward runs ``fn`` under ``no_grad``; its backward recomputes and
  calls ``ember.autograd.backward`` inside the running backward (re-entering the engine), so
  parameters get their ``.grad`` there. Only positional arguments; gradients reach the
  graph only through inputs that require grad; refused under ``autograd.grad``.
- ``use_reentrant=False``: torch implements it with saved-tensor hooks; ember does this: it
  runs ``fn`` with grad on (detached inputs), walks the fresh graph for the leaf tensors
  ``fn`` read (parameters), then drops that graph: the one node left in the caller's graph
  takes the inputs and those leaves, so ``autograd.grad`` works, keyword arguments work, and
  parameters get gradients even when no input requires grad. If ``fn`` reads a non-leaf
  tensor from outside (a closure over an intermediate result), it cannot be recomputed from
  the node's inputs: ember then keeps ``fn``'s graph as is (correct, no memory saved).
"""
import contextlib
import enum
import warnings

from ..core.tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad, is_grad_enabled
from ..autograd.graph import AccumulateGrad, _next_seq
from ..autograd import engine as _engine
from ..ops.random import get_rng_state, set_rng_state
from ..nn.modules.container import Sequential
from .. import amp

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled", "DefaultDeviceType", "CheckpointPolicy",
           "SelectiveCheckpointContext"]


class CheckpointError(RuntimeError):
    """Raised when the recomputation does not match the original forward."""


class CheckpointPolicy(enum.Enum):
    """torch's selective-checkpoint policies (named here for code that imports them)."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


class SelectiveCheckpointContext:
    """The context a selective-checkpoint policy function receives."""

    def __init__(self, *, is_recompute):
        self.is_recompute = is_recompute


class DefaultDeviceType:
    """The device type whose RNG state checkpoint saves besides the cpu's ("cuda")."""
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type


def noop_context_fn():
    """The default ``context_fn``: two null contexts (forward, recomputation)."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_debug = False


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Context manager that sets the default ``debug`` of non-reentrant checkpoint."""
    global _debug
    prev, _debug = _debug, enabled
    try:
        yield
    finally:
        _debug = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Accepted for torch compatibility: ember's recomputation always runs the whole ``fn``
    (there is no saved-tensor unpacking to stop early at)."""
    yield


def check_backward_validity(inputs):
    """torch's warning when no tensor input requires grad (the reentrant variant then
    gives no gradients)."""
    if not any(isinstance(i, Tensor) and i.requires_grad for i in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def detach_variable(inputs):
    """Each tensor of the tuple `inputs` detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def get_device_states(*args):
    """(devices, RNG states) of the cuda devices of the tensor arguments; ember keeps one
    random stream for every device (the default generator), so there are none to save."""
    return [], []


def set_device_states(devices, states, *, device_type=None):
    """Counterpart of `get_device_states` (nothing to restore: see there)."""


@contextlib.contextmanager
def _rng_as(state):
    """Run the block with the default generator at `state`, then put the current one back."""
    if state is None:
        yield
        return
    now = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(now)


def _autocast_state():
    return amp.is_autocast_enabled("cpu"), amp.get_autocast_dtype("cpu")


def _autocast_as(st):
    enabled, dtype = st
    if not enabled:
        return contextlib.nullcontext()
    return amp.autocast("cpu", dtype=dtype)


# ---------------------------------------------------------------- use_reentrant=True
class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under no_grad, recompute and backward in backward."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng = get_rng_state() if preserve_rng_state else None
        ctx.autocast = _autocast_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensors = []
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                tensors.append(a)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(a)
        ctx.save_for_backward(*tensors)
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _engine._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _rng_as(ctx.rng), enable_grad(), _autocast_as(ctx.autocast):
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outs, gs = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o.requires_grad:
                outs.append(o)
                gs.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _engine.backward(outs, gs)
        return (None, None) + tuple(d.grad if isinstance(d, Tensor) else None for d in detached)


# ---------------------------------------------------------------- use_reentrant=False
def _flatten(obj, out):
    """The tensors inside nested tuples/lists/dicts, in order."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _flatten(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _flatten(o, out)
    return out


def _rebuild(obj, it):
    """`obj` with each tensor replaced by the next item of `it` (the inverse of _flatten)."""
    if isinstance(obj, Tensor) or obj is _SLOT:
        return next(it)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):          # a namedtuple
        return type(obj)(*[_rebuild(o, it) for o in obj])
    if isinstance(obj, (tuple, list)):
        return type(obj)(_rebuild(o, it) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _rebuild(v, it)) for k, v in obj.items())
    return obj


def _leaves_read(outputs, start_seq, inputs):
    """The leaf tensors requiring grad that the graph of `outputs` reaches (``fn``'s
    parameters), without `inputs`; None when the graph reaches a node made before
    `start_seq` (a non-leaf tensor from outside ``fn``)."""
    own = {id(t) for t in inputs}
    seen, leaves, stack = set(), [], [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            v = node.variable
            if id(v) not in own:
                own.add(id(v))
                leaves.append(v)
            continue
        if node._seq < start_seq:
            return None
        stack.extend(n for n, _ in node.next_functions)
    return leaves


def _detached(tensors):
    out = []
    for t in tensors:
        d = t.detach()
        if t.requires_grad:
            d.requires_grad_(True)
        out.append(d)
    return out


class _NonReentrant(Function):
    """The node left in the caller's graph: inputs and leaves in, fn's outputs out."""

    @staticmethod
    def forward(ctx, plan, *tensors):
        ctx.plan = plan
        ctx.save_for_backward(*tensors[:plan["n_inputs"]])
        ctx.leaves = tensors[plan["n_inputs"]:]
        outs = plan.pop("outputs")
        ctx.mark_non_differentiable(*[o for o, d in zip(outs, plan["diff"]) if not d])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        plan = ctx.plan
        # under backward(create_graph=True) the engine records: then the recomputation keeps
        # the inputs' history (through a view, so the gradient stops at the view), and the
        # gradients it returns can be differentiated again (gradient penalties)
        higher = is_grad_enabled()
        if higher:
            inputs = [t.view_as(t) if t.requires_grad else t.detach() for t in ctx.saved_tensors]
        else:
            inputs = _detached(ctx.saved_tensors)
        leaves = list(ctx.leaves)
        with _rng_as(plan["rng"]), enable_grad(), _autocast_as(plan["autocast"]), plan["ctx"]:
            args, kwargs = _rebuild(plan["structure"], iter(inputs))
            out = plan["fn"](*args, **kwargs)
        outs = _flatten(out, [])
        if plan["check"]:
            if len(outs) != len(plan["meta"]) or any(
                    (tuple(o.shape), o.dtype) != m for o, m in zip(outs, plan["meta"])):
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values have different metadata than "
                    "during the original forward: the outputs were "
                    f"{plan['meta']} and are now {[(tuple(o.shape), o.dtype) for o in outs]}.")
        roots, gs = [], []
        for o, g in zip(outs, grads):
            if g is not None and o.requires_grad:
                roots.append(o)
                gs.append(g)
        wanted = [t for t in inputs if t.requires_grad] + leaves
        got = iter(_engine.grad(roots, wanted, gs, allow_unused=True, create_graph=higher)
                   if roots and wanted else [None] * len(wanted))
        res = [next(got) if t.requires_grad else None for t in inputs]
        res += [next(got) for _ in leaves]
        return (None,) + tuple(res)


def _checkpoint_without_reentrant(fn, preserve, context_fn, determinism_check, args, kwargs):
    fwd_ctx, recompute_ctx = context_fn()
    if not is_grad_enabled():
        with fwd_ctx:
            return fn(*args, **kwargs)
    structure = (args, kwargs)
    inputs = _flatten(structure, [])
    rng = get_rng_state() if preserve else None
    autocast = _autocast_state()
    detached = _detached(inputs)
    start = _next_seq()
    with fwd_ctx:
        a, k = _rebuild(structure, iter(detached))
        out = fn(*a, **k)
    outs = _flatten(out, [])
    leaves = _leaves_read(outs, start, detached)
    if leaves is None:      # fn read an intermediate tensor from outside: keep its graph
        return out
    diff = [o.requires_grad for o in outs]
    plan = {"fn": fn, "structure": structure, "n_inputs": len(inputs), "rng": rng,
            "autocast": autocast, "ctx": recompute_ctx, "diff": diff,
            "check": determinism_check != "none",
            "meta": [(tuple(o.shape), o.dtype) for o in outs],
            "outputs": [o.detach() for o in outs]}
    del outs, detached      # fn's graph dies here: only the inputs stay for backward
    plan["structure"] = _strip(structure)
    new = _NonReentrant.apply(plan, *inputs, *leaves)
    return _rebuild(out, iter(new))


_SLOT = object()   # where a tensor was, in the structure the node keeps


def _strip(obj):
    """`obj` with its tensors replaced by _SLOT (the node keeps the tensors as saved ones)."""
    return _rebuild(obj, iter(lambda: _SLOT, None))


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, recomputed in backward instead of keeping its
    activations.

    >>> lin = ember.nn.Linear(4, 4)
    >>> x = ember.randn(2, 4, requires_grad=True)
    >>> checkpoint(lin, x, use_reentrant=False).sum().backward()
    >>> lin.weight.grad.shape
    ember.Size([4, 4])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in `segments` chunks, checkpointing all but the
    last.

    >>> net = ember.nn.Sequential(*[ember.nn.Linear(4, 4) for _ in range(4)])
    >>> checkpoint_sequential(net, 2, ember.randn(2, 4), use_reentrant=False).shape
    ember.Size([2, 4])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
