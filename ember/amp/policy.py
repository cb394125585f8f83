"""Which dtype each op runs in under ``ember.autocast`` (PyTorch's CPU autocast op lists).

Listed ops call one of these at the top of their public function, behind one attribute check
so the disabled path costs nothing more::

    if state.autocast_enabled: input, weight = cast_inputs("linear", input, weight)
    if state.autocast_enabled: return run_fp32(mse_loss, input, target, ...)

* lower-precision ops (matmul, mm, bmm, addmm, linear, conv*, prelu, sdpa, ...): floating
  inputs other than float64 are cast to the autocast dtype;
* float32 ops (losses, linalg decompositions, cdist, prod, ...): floating inputs other than
  float64 are cast to float32 and the op runs with autocast off (so its inner ops stay
  float32, as PyTorch runs the op's kernel with autocast excluded);
* every other op is untouched: it runs in the promoted dtype of its inputs.

The casts are ordinary differentiable ``.to(dtype)`` calls, so gradients flow back to the
inputs in their own dtype. Casts of leaf tensors that require grad (parameters) are cached
for the life of the outermost autocast region, as PyTorch does, so a weight used by several
ops is cast once.
"""
import threading

from ..core import dtype as D
from ..core.tensor import Tensor
from ..autograd.grad_mode import state

LOWER_PRECISION = frozenset((
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm",
    "linear", "matmul", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
    "scaled_dot_product_attention", "einsum",
))

FP32 = frozenset((
    "avg_pool3d", "binary_cross_entropy", "grid_sample", "prod", "quantile", "nanquantile",
    "cdist", "trace", "cholesky", "inverse", "pinverse", "max_pool3d", "max_unpool1d",
    "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
    "reflection_pad", "replication_pad", "mse_loss", "cosine_embedding_loss", "nll_loss",
    "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss", "cross_entropy", "l1_loss",
    "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits", "linalg_cholesky", "linalg_inv", "linalg_solve",
    "linalg_svd", "linalg_svdvals", "linalg_eigh", "linalg_eigvalsh", "linalg_qr",
    "linalg_lstsq", "linalg_matrix_rank", "svd", "qr",
))


class _Cache(threading.local):
    depth = 0          # how many autocast regions are open (the cache dies with the outermost)
    enabled = True     # cache_enabled of the innermost region
    casts = None       # {(id(tensor), dtype): (tensor, cast)}


cache = _Cache()


def _cast(t, dtype):
    if not isinstance(t, Tensor) or t.dtype is dtype or t.dtype is D.float64 \
            or not t.dtype.is_floating_point:
        return t
    if cache.enabled and t._requires_grad and t.grad_fn is None and state.enabled:
        key = (id(t), dtype)
        hit = cache.casts.get(key)
        if hit is not None and hit[0] is t:
            return hit[1]
        c = t.to(dtype)
        cache.casts[key] = (t, c)   # keeps t alive, so its id is not reused meanwhile
        return c
    return t.to(dtype)


def cast_inputs(op_name, *tensors):
    """`tensors` cast per `op_name`'s list (non-tensors, None and float64 pass through);
    returns a tuple, or the single value when one was given."""
    if op_name in LOWER_PRECISION:
        dtype = state.autocast_dtype
    elif op_name in FP32:
        dtype = D.float32
    else:
        raise KeyError(f"autocast: no policy for op {op_name!r}")
    out = tuple(_cast(t, dtype) for t in tensors)
    return out[0] if len(out) == 1 else out


def _cast_tree(v):
    if isinstance(v, Tensor):
        return _cast(v, D.float32)
    if isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
        return type(v)(_cast_tree(x) for x in v)
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


def einsum_contracts(equation):
    """True when einsum sums a letter shared by two operands (PyTorch computes it with bmm,
    a lower-precision op); elementwise products and one-operand reductions are not cast."""
    lhs, arrow, rhs = equation.replace(" ", "").replace(".", "").partition("->")
    terms = lhs.split(",")
    if not arrow:
        seen = "".join(terms)
        rhs = "".join(c for c in seen if seen.count(c) == 1)
    return any(sum(c in t for t in terms) > 1 and c not in rhs for c in set("".join(terms)))
