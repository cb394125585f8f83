"""scaled_dot_product_attention as one COMPOSITE op (see nn_ops.py for how a composite
picks its path): the decomposition in ember ops, and the eager fast path for float
attention without a mask tensor or dropout, whose node has one joint formula for the query,
key and value gradients.

    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # (..., L, Ev)
"""
import functools
import math

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core.tensor import Tensor
from .. import dispatch
from ..dispatch import wrap
from ..dispatch_args import ARG_ERRORS, raise_as_torch
from ..autograd.grad_mode import state
from ..autograd import graph
from ..core.meta import MetaData
from .registry import LOWER_PRECISION
from . import batch_rules as _br
from .lowp_compute import LOWP, widened, rounded
from .nn_ops import E, FLOATS, FusedKernel, composite, under_mode, softmax
from .native_nn import softmax_scores as _softmax_scores


def _mask_to_bias(mask, dtype, true_means_keep):
    """A boolean mask as an additive float bias (-inf where attention is not allowed); a float
    mask is returned cast to `dtype`."""
    if mask is None:
        return None
    if mask.dtype == D.bool_:
        blocked = mask if not true_means_keep else mask.logical_not()
        return E.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(blocked,
                                                                              float("-inf"))
    return mask.to(dtype)


def _dropout(x, p):
    """nn.functional.dropout(x, p, training=True), written here (ops sit below nn)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or x.numel() == 0:
        return x
    if p == 1:
        return x * 0.0
    return x * E.empty_like(x).bernoulli_(1 - p).div_(1 - p)


def _softmax_of_scores(scores, keep, blocked, scale):
    """softmax(scores * scale) over the positions where `keep` is 1 (0 elsewhere); `keep`
    (1/0) and `blocked` (0/-1e30) are a causal mask as floats, or both None. The masked
    scores never reach exp: exp of a huge negative makes subnormals, which the CPU
    computes ~100x slower (a boolean select instead would keep the loop from vectorising)."""
    s = scores * scale
    if keep is None:
        e = (s - s.amax(-1, keepdim=True)).exp()
    else:
        e = ((s - (s + blocked).amax(-1, keepdim=True)) * keep).exp() * keep
        # a row whose allowed scores are all -inf sums to 0: torch's answer there is 0
        total = e.sum(-1, keepdim=True)
        return e / (total + (total == 0))
    return e / e.sum(-1, keepdim=True)


def _sdpa_decomp(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                 scale=None, enable_gqa=False):
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    L, S = query.shape[-2], key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    if is_causal and query.dtype.is_floating_point:
        # the causal mask as floats (what a compiled graph fuses into one vectorised kernel:
        # no boolean select, and no exp of -inf, whose subnormal path is ~100x slower);
        # masked probabilities come out exactly 0, as with masked_fill(-inf)
        keep = E.ones((L, S), dtype=query.dtype, device=query.device).tril()
        attn = _softmax_of_scores(query.matmul(key.transpose(-2, -1)), keep,
                                  (keep - 1.0) * 1e30, scale)
    else:
        scores = query.matmul(key.transpose(-2, -1)) * scale
        if is_causal:
            keep = E.ones((L, S), dtype=D.bool_, device=query.device).tril()
            scores = scores.masked_fill(keep.logical_not(), float("-inf"))
        elif attn_mask is not None:
            scores = scores + _mask_to_bias(attn_mask, scores.dtype, true_means_keep=True)
        attn = softmax(scores, -1)
        if attn_mask is not None or is_causal:   # fully masked rows: 0, as torch's
            attn = attn.masked_fill((scores == float("-inf")).all(-1, keepdim=True), 0.0)
    if dropout_p > 0.0:
        attn = _dropout(attn, dropout_p)
    return attn.matmul(value)


# ---- the eager fast path ----------------------------------------------------------------
# Float attention without a mask tensor or dropout runs in NumPy (two matmuls and a softmax)
# and records one node. Its backward, in ember ops, is the closed form
#     dV = P^T g,  dS = P * (dP - sum(dP * P)),  dP = g V^T,  dQ = dS K s,  dK = dS^T Q s
# with the saved probabilities P — recomputed in ember ops from Q and K while the backward
# itself is recorded (create_graph), so double backward sees their dependence on Q and K.
# It is one joint formula: dQ and dK share dS, and all three share P.
def _fast_ok(q, k, v):
    # (under autocast the arguments were cast already; 16-bit ones compute in float32)
    if not (isinstance(q, Tensor) and isinstance(k, Tensor) and isinstance(v, Tensor)):
        return False
    dt = q.dtype
    return ((dt in FLOATS or (dt in LOWP and type(q._data) is np.ndarray))
            and k.dtype is dt and v.dtype is dt
            and q._data.ndim >= 2 and k._data.ndim >= 2 and v._data.ndim >= 2
            and q._data.size and k._data.size and v._data.size)


# the causal masks are made once per size (and dtype): every step of a model asks again
@functools.lru_cache(maxsize=64)
def _causal_blocked(L, S):
    """PyTorch's top-left causal mask, True where attention is blocked."""
    blocked = np.triu(np.ones((L, S), dtype=bool), 1)
    blocked.flags.writeable = False
    return blocked


@functools.lru_cache(maxsize=64)
def _causal_neg_inf(L, S, np_dtype):
    """0 where attention is allowed, -inf where blocked."""
    m = np.where(_causal_blocked(L, S), -np.inf, 0).astype(np_dtype)
    m.flags.writeable = False
    return m


@functools.lru_cache(maxsize=64)
def _causal_floats(L, S, dt):
    """The causal mask as floats: (keep: 1/0, blocked: 0/-1e30)."""
    blocked = _causal_blocked(L, S)
    return (wrap((~blocked).astype(dt.np), dt),
            wrap(np.where(blocked, -1e30, 0).astype(dt.np), dt))


def _probs(query, key, scale, is_causal, attn):
    """The attention probabilities: the saved ones, or recomputed in ember ops."""
    if not state.enabled:
        return attn
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        L, S = query.shape[-2], key.shape[-2]
        upper = E.ones((L, S), dtype=D.bool_, device=query.device).triu(1)
        scores = scores.masked_fill(upper, float("-inf"))
    return softmax(scores, -1)


def _scores_grad(p, dp):
    return p * (dp - (dp * p).sum(-1, keepdim=True))


# big attention maps: the softmax and the scores' gradient as fused C kernels
_softmax_of_scores_kernel = FusedKernel(_softmax_of_scores, "sdpa_softmax")
_scores_grad_kernel = FusedKernel(_scores_grad, "sdpa_scores_backward")


def _sdpa_grads(g, query, key, value, scale, is_causal, attn, grad_input_mask):
    """The joint formula: (dQ, dK, dV), each only where `grad_input_mask` asks for it."""
    need_q, need_k, need_v = grad_input_mask
    if query.dtype in LOWP and not state.enabled:   # in float32 from the float32 probabilities
        dt = query.dtype
        return tuple(rounded(r, dt) for r in _sdpa_grads(
            widened(g), widened(query), widened(key), widened(value), scale, is_causal, attn,
            grad_input_mask))
    p = _probs(query, key, scale, is_causal, attn)
    dq = dk = dv = None
    if need_v:
        dv = p.transpose(-2, -1).matmul(g)
    if need_q or need_k:
        dp = g.matmul(value.transpose(-2, -1))
        ds = _scores_grad_kernel.run(p, dp) if not state.enabled else None
        if ds is None:
            ds = _scores_grad(p, dp)
        if need_q:
            dq = ds.matmul(key) * scale
        if need_k:
            dk = ds.transpose(-2, -1).matmul(query) * scale
    return dq, dk, dv


def _sdpa_fast(query, key, value, is_causal, scale):
    dt = query.dtype
    if dt in LOWP:    # as PyTorch's CPU kernel: in float32, the output rounded once
        q, k, v = widened(query)._data, widened(key)._data, widened(value)._data
        out, p = _sdpa_arrays(q, k, v, D.float32, is_causal, scale)
        res = wrap(out, dt)
        probs = wrap(p, D.float32)     # the backward runs in float32 too (_sdpa_grads)
    else:
        out, p = _sdpa_arrays(query._data, key._data, value._data, dt, is_causal, scale)
        res = wrap(out, dt)
        probs = wrap(p, dt)
    if state.enabled and (query._requires_grad or key._requires_grad or value._requires_grad):
        graph.record(SDPA, (query, key, value), res, {"scale": scale, "is_causal": is_causal,
                                                      "attn": probs})
    return res


def _sdpa_arrays(q, k, v, dt, is_causal, scale):
    """(output, probabilities) of attention over float arrays of dtype `dt`."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    # small maps (token-by-token generation): one C sweep per row; the compiler's fused
    # kernel or NumPy's ~10 passes cost several times more in calls there
    p = _softmax_scores(scores, scale, is_causal)
    if p is None and scores.size >= 4096:
        keep, blocked = _causal_floats(q.shape[-2], k.shape[-2], dt) if is_causal else \
            (None, None)
        p = _softmax_of_scores_kernel.run(wrap(scores, dt), keep, blocked, scale)
        if p is not None:
            p = p._data
    if p is None:
        scores *= scores.dtype.type(scale)
        if is_causal:        # + 0 or -inf, broadcast over the batch dims
            scores += _causal_neg_inf(q.shape[-2], k.shape[-2], scores.dtype)
        top = np.maximum.reduce(scores, axis=-1, keepdims=True)
        dead = np.isneginf(top)      # rows with every score -inf: torch's answer is 0
        if dead.any():
            top[dead] = 0
        scores -= top
        p = np.exp(scores, out=scores)
        total = np.add.reduce(p, axis=-1, keepdims=True)
        if dead.any():
            total[dead] = 1
        p /= total
    return np.matmul(p, v), p


def _check_head_dims(query, key):
    """torch's error for queries and keys of different widths E: that of its math path's
    q @ k^T (a bmm over the flattened batch dims, or an mm for 2-d inputs)."""
    q, k = query.shape, key.shape
    if len(q) < 2 or len(k) < 2 or q[-1] == k[-1]:
        return
    if len(q) == 2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({q[0]}x{q[1]} and "
                           f"{k[1]}x{k[0]})")
    b = math.prod(q[:-2])
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                       f"[{b}, {q[-1]}] but got: [{b}, {k[-1]}].")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + bias) @ v`` over (..., L, E) queries and (..., S, E)
    keys. A boolean `attn_mask` marks the positions allowed to attend (True = keep); a float
    mask is added. `is_causal` applies a lower-triangular mask. `enable_gqa` repeats the
    key/value heads (dim -3) to match the query heads."""
    if state.autocast_enabled:    # SDPA.amp: the lower precision
        query, key, value, attn_mask = dispatch.autocast_args(SDPA, query, key, value, attn_mask)
    if state.modes:
        return under_mode(SDPA, scaled_dot_product_attention,
                          (query, key, value, attn_mask, dropout_p, is_causal, scale,
                           enable_gqa))
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    try:
        _check_head_dims(query, key)
    except ARG_ERRORS as exc:    # (free until it raises) a str or list for a tensor
        raise_as_torch(SDPA, scaled_dot_product_attention, (query, key, value), {}, exc)
    if getattr(query, "dtype", None) is D.bool_:    # (torch's math kernel, on bool q)
        raise RuntimeError("expected scalar type Float but found Bool")
    if attn_mask is None and dropout_p == 0.0 and _fast_ok(query, key, value):
        if scale is None:
            scale = 1.0 / math.sqrt(query._data.shape[-1])
        if enable_gqa and query._data.ndim >= 3 and \
                key._data.shape[-3] != query._data.shape[-3]:
            rep = query._data.shape[-3] // key._data.shape[-3]
            key = key.repeat_interleave(rep, dim=-3)
            value = value.repeat_interleave(rep, dim=-3)
        try:
            return SDPA.fused(query, key, value, is_causal, scale)
        except MetaData:    # a meta input: the decomposition is its meta rule
            pass
    return SDPA.decomp(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


SDPA = composite("scaled_dot_product_attention", scaled_dot_product_attention, _sdpa_decomp,
                 fused=_sdpa_fast, inputs=("query", "key", "value"),
                 attrs={"scale": 1.0, "is_causal": False, "attn": None},
                 grads={("query", "key", "value"): _sdpa_grads},
                 node_name="ScaledDotProductAttentionBackward0", function=False,
                 amp=LOWER_PRECISION,
                 method=False,
                 onnx=_ox.scaled_dot_product_attention)

# vmap batching rule (ember/ops/batch_rules.py)
SDPA.batch = _br.sdpa_batch
