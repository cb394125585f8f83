"""Which dtype each op runs in under ``ember.autocast`` (PyTorch's CPU autocast op lists).

An op's policy is its OpDef's `amp` field: LOWER_PRECISION (matmul, bmm, addmm, einsum when
it contracts, sdpa, ...): floating inputs other than float64 are cast to the autocast dtype;
FP32 (prod, quantile, trace, cdist, nll_loss, cross_entropy, ...): they are cast to float32
and the op runs with autocast off (so its inner ops stay float32, as PyTorch runs the op's
kernel with autocast excluded); None: the op runs in the promoted dtype of its inputs. The
registry publishes such ops behind `dispatch.with_autocast`, which calls `apply_policy`
here only inside an autocast region (one attribute check otherwise); hand-written fronts
that check the mode stack themselves (matmul, the composites) call it, or `cast_args`, from
their own first lines.

The casts are ordinary differentiable ``.to(dtype)`` calls, so gradients flow back to the
inputs in their own dtype. An argument already in the target dtype is not cast (nor is a
float64 or non-floating one). The float32 -> autocast-dtype casts of leaf tensors that require
grad and are not views (parameters) are cached for the life of the outermost autocast region,
as PyTorch does (`ember.is_autocast_cache_enabled`, `ember.set_autocast_cache_enabled`,
``autocast(cache_enabled=...)``), so a weight used by several ops (or a tied one) is cast
once per step. Unlike PyTorch's cache, an entry also records the weight's version counter: a
weight changed in place inside the region is cast again (PyTorch would reuse the stale cast).
Casts made with grad mode off are not cached, so that a later use with grad mode on still
reaches the weight.
"""
import threading

from ..core import dtype as D
from ..core.tensor import Tensor
from ..autograd.grad_mode import state
from .. import dispatch
from ..ops.registry import LOWER_PRECISION as LOWER_PRECISION_POLICY, FP32 as FP32_POLICY


class _Cache(threading.local):
    depth = 0          # how many autocast regions are open (the cache dies with the outermost)
    enabled = True     # cache_enabled of the innermost region
    casts = None       # {(id(tensor), dtype): (tensor, its version, cast)}


cache = _Cache()


def _cast(t, dtype):
    if not isinstance(t, Tensor) or t.dtype is dtype or t.dtype is D.float64 \
            or not t.dtype.is_floating_point:
        return t
    if cache.enabled and t._requires_grad and t.grad_fn is None and state.enabled and \
            t.dtype is D.float32 and dtype is not D.float32 and t._base is None and \
            cache.casts is not None:
        key = (id(t), dtype)
        hit = cache.casts.get(key)
        version = t._version
        if hit is not None and hit[0] is t and hit[1] == version:
            return hit[2]
        c = t.to(dtype)
        cache.casts[key] = (t, version, c)   # keeps t alive, so its id is not reused meanwhile
        return c
    return t.to(dtype)


def _cast_tree(v, dtype=D.float32):
    if isinstance(v, Tensor):
        return _cast(v, dtype)
    if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
        return type(v)(_cast_tree(x, dtype) for x in v)
    return v


def run_fp32(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with floating tensor arguments cast to float32 and autocast
    off while it runs (the float32 list)."""
    args = [_cast_tree(a) for a in args]
    kwargs = {k: _cast_tree(v) for k, v in kwargs.items()}
    state.autocast_enabled = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.autocast_enabled = True


def _policy(op, args, kwargs):
    return op.amp(args, kwargs) if callable(op.amp) else op.amp


def apply_policy(op, fn, args, kwargs):
    """Run `fn` (the function of OpDef `op`) inside an autocast region by `op.amp`: a policy
    name, or a function of (args, kwargs) giving one (None: leave the call as it is).
    LOWER_PRECISION casts floating tensor arguments (not `out`) to the autocast dtype; FP32
    runs `run_fp32`."""
    policy = _policy(op, args, kwargs)
    if policy == FP32_POLICY:
        return run_fp32(fn, *args, **kwargs)
    if policy == LOWER_PRECISION_POLICY:
        dtype = state.autocast_dtype
        args = [_cast_tree(a, dtype) for a in args]
        kwargs = {k: v if k == "out" else _cast_tree(v, dtype) for k, v in kwargs.items()}
    return fn(*args, **kwargs)


def cast_args(op, *tensors):
    """`tensors` cast by `op.amp` (LOWER_PRECISION: the autocast dtype; FP32: float32);
    returns a tuple, or the single value when one was given."""
    policy = _policy(op, tensors, {})
    dtype = state.autocast_dtype if policy == LOWER_PRECISION_POLICY else \
        D.float32 if policy == FP32_POLICY else None
    out = tensors if dtype is None else tuple(_cast_tree(t, dtype) for t in tensors)
    return out[0] if len(out) == 1 else out


# the registry wraps every op with an `amp` policy in dispatch.with_autocast, which calls
# autocast_hook; matmul and the composites call autocast_args from their own fronts
dispatch.autocast_hook = apply_policy
dispatch.autocast_args = cast_args
