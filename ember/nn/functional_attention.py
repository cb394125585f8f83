"""Attention functions of nn.functional: scaled_dot_product_attention and the multi-head
attention forward used by nn.MultiheadAttention. Compositions of ember ops.

    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # (..., L, Ev)
"""
import functools
import math
import weakref

import numpy as np

import ember
from ..autograd.grad_mode import state as _state
from ..autograd import graph as _graph
from ..dispatch import wrap as _wrap
from ..ops.registry import OpDef, EXTERN
from ..compiler.eager import EagerKernel
from ..amp.policy import state as _amp, cast_inputs as _amp_cast, run_fp32 as _amp_fp32  # noqa: F401,E501

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _mask_to_bias(mask, dtype, true_means_keep):
    """A boolean mask as an additive float bias (-inf where attention is not allowed); a float
    mask is returned cast to `dtype`."""
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        blocked = mask if not true_means_keep else mask.logical_not()
        return ember.zeros(mask.shape, dtype=dtype).masked_fill(blocked, float("-inf"))
    return mask.to(dtype)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + bias) @ v`` over (..., L, E) queries and (..., S, E)
    keys. A boolean `attn_mask` marks the positions allowed to attend (True = keep); a float
    mask is added. `is_causal` applies a lower-triangular mask. `enable_gqa` repeats the
    key/value heads (dim -3) to match the query heads."""
    if _amp.autocast_enabled: query, key, value, attn_mask = _amp_cast("scaled_dot_product_attention", query, key, value, attn_mask)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if scale is None:
        scale = 1.0 / math.sqrt(query._data.shape[-1] if isinstance(query, ember.Tensor)
                                else query.shape[-1])
    if attn_mask is None and dropout_p == 0.0 and _fused_ok(query, key, value) and (
            not enable_gqa or query._data.ndim < 3 or
            key._data.shape[-3] == query._data.shape[-3]):
        return _sdpa_fused(query, key, value, is_causal, scale)
    from .functional import softmax, dropout
    L, S = query.shape[-2], key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    if attn_mask is None and dropout_p == 0.0 and _fused_ok(query, key, value):
        return _sdpa_fused(query, key, value, is_causal, scale)
    if is_causal and query.dtype.is_floating_point:
        # the causal mask as floats (what a compiled graph fuses into one vectorised kernel:
        # no boolean select, and no exp of -inf, whose subnormal path is ~100x slower);
        # masked probabilities come out exactly 0, as with masked_fill(-inf)
        keep = ember.ones((L, S), dtype=query.dtype).tril()
        attn = _softmax_of_scores(query.matmul(key.transpose(-2, -1)), keep,
                                  (keep - 1.0) * 1e30, scale)
    else:
        scores = query.matmul(key.transpose(-2, -1)) * scale
        if is_causal:
            keep = ember.ones((L, S), dtype=ember.bool).tril()
            scores = scores.masked_fill(keep.logical_not(), float("-inf"))
        elif attn_mask is not None:
            scores = scores + _mask_to_bias(attn_mask, scores.dtype, true_means_keep=True)
        attn = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, training=True)
    return attn.matmul(value)


# ---- the eager fast path of scaled_dot_product_attention ----------------------------------
# With no dispatch mode active (tracers and profilers see the composition above), float
# attention without a mask tensor or dropout runs in NumPy (two matmuls and a softmax) and
# records one node. Its backward, in ember ops, is the closed form
#     dV = P^T g,  dS = P * (dP - sum(dP * P)),  dP = g V^T,  dQ = dS K s,  dK = dS^T Q s
# with the saved probabilities P — recomputed in ember ops from Q and K while the backward
# itself is recorded (create_graph), so double backward sees their dependence on Q and K.
def _fused_ok(q, k, v):
    if _state.modes or _amp.autocast_enabled:
        return False
    if not (isinstance(q, ember.Tensor) and isinstance(k, ember.Tensor)
            and isinstance(v, ember.Tensor)):
        return False
    dt = q.dtype
    return (dt in (ember.float32, ember.float64) and k.dtype is dt and v.dtype is dt
            and q._data.ndim >= 2 and k._data.ndim >= 2 and v._data.ndim >= 2
            and q._data.size and k._data.size and v._data.size)


# the causal masks are made once per size (and dtype): every step of a model asks again
@functools.lru_cache(maxsize=64)
def _causal_blocked(L, S):
    """PyTorch's top-left causal mask, True where attention is blocked."""
    blocked = np.triu(np.ones((L, S), dtype=bool), 1)
    blocked.flags.writeable = False
    return blocked


def _probs(query, key, scale, is_causal, attn):
    """The attention probabilities: the saved ones, or recomputed in ember ops."""
    if not _state.enabled:
        return attn
    from .functional import softmax
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        L, S = query.shape[-2], key.shape[-2]
        scores = scores.masked_fill(ember.ones((L, S), dtype=ember.bool).triu(1), float("-inf"))
    return softmax(scores, dim=-1)


def _scores_grad(p, dp):
    return p * (dp - (dp * p).sum(-1, keepdim=True))


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
    return e / e.sum(-1, keepdim=True)


# big attention maps: the softmax and the scores' gradient as fused C kernels (eager.py)
_softmax_of_scores_kernel = EagerKernel(_softmax_of_scores, "sdpa_softmax")
_scores_grad_kernel = EagerKernel(_scores_grad, "sdpa_scores_backward")


# The query and key gradients both start from dS. Outside create_graph, the one computed
# first is kept here for the other (by the saved probabilities' id, dropped when they are
# freed), saving a batched matmul and a kernel per attention backward.
_DS = {}      # id(attn) -> (weakref to attn, g, dS)


def _d_scores(g, query, key, value, scale, is_causal, attn):
    if not _state.enabled and attn is not None:
        hit = _DS.pop(id(attn), None)
        if hit is not None and hit[0]() is attn and hit[1] is g:
            return hit[2]
    p = _probs(query, key, scale, is_causal, attn)
    dp = g.matmul(value.transpose(-2, -1))
    ds = _scores_grad_kernel(p, dp) if not _state.enabled else None
    if ds is None:
        ds = _scores_grad(p, dp)
    if not _state.enabled and attn is not None:
        k = id(attn)
        _DS[k] = (weakref.ref(attn, lambda _, k=k: _DS.pop(k, None)), g, ds)
    return ds


def _sdpa_query_grad(g, query, key, value, scale, is_causal, attn):
    return _d_scores(g, query, key, value, scale, is_causal, attn).matmul(key) * scale


def _sdpa_key_grad(g, query, key, value, scale, is_causal, attn):
    ds = _d_scores(g, query, key, value, scale, is_causal, attn)
    return ds.transpose(-2, -1).matmul(query) * scale


def _sdpa_value_grad(g, query, key, scale, is_causal, attn):
    return _probs(query, key, scale, is_causal, attn).transpose(-2, -1).matmul(g)


_SDPA = OpDef("scaled_dot_product_attention", EXTERN, inputs=("query", "key", "value"),
              attrs={"scale": 1.0, "is_causal": False, "attn": None},
              grads={"query": _sdpa_query_grad, "key": _sdpa_key_grad,
                     "value": _sdpa_value_grad},
              node_name="ScaledDotProductAttentionBackward0")


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
    return (_wrap((~blocked).astype(dt.np), dt),
            _wrap(np.where(blocked, -1e30, 0).astype(dt.np), dt))


def _sdpa_fused(query, key, value, is_causal, scale):
    q, k, v = query._data, key._data, value._data
    dt = query.dtype
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    p = None
    if scores.size >= 4096:
        keep, blocked = _causal_floats(q.shape[-2], k.shape[-2], dt) if is_causal else \
            (None, None)
        p = _softmax_of_scores_kernel(_wrap(scores, dt), keep, blocked, scale)
    if p is not None:
        p = p._data
    else:
        scores *= scores.dtype.type(scale)
        if is_causal:        # + 0 or -inf, broadcast over the batch dims
            scores += _causal_neg_inf(q.shape[-2], k.shape[-2], scores.dtype)
        scores -= np.maximum.reduce(scores, axis=-1, keepdims=True)
        p = np.exp(scores, out=scores)
        p /= np.add.reduce(p, axis=-1, keepdims=True)
    res = _wrap(np.matmul(p, v), dt)
    args = (query, key, value)
    if _state.enabled and (query._requires_grad or key._requires_grad or value._requires_grad):
        _graph.record(_SDPA, args, res, {"scale": scale, "is_causal": is_causal,
                                         "attn": _wrap(p, dt)})
    return res


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention on (L, N, E) query and (S, N, E) key/value (or unbatched (L, E)).
    Masks use PyTorch's MultiheadAttention convention: True = not allowed; float = added.
    Returns (output (L, N, E), weights (N, L, S) averaged over heads or (N, H, L, S), or
    None)."""
    from .functional import linear, softmax, dropout
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
    # input projections
    if not use_separate_proj_weight:
        wq, wk, wv = in_proj_weight.chunk(3)
    else:
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias.chunk(3)
    q = linear(query, wq, bq)
    k = linear(key, wk, bk)
    v = linear(value, wv, bv)
    attn_mask = _mask_to_bias(attn_mask, q.dtype, true_means_keep=False)
    if attn_mask is not None and attn_mask.dim() == 2:
        attn_mask = attn_mask.unsqueeze(0)
    key_padding_mask = _mask_to_bias(key_padding_mask, q.dtype, true_means_keep=False)
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = ember.cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        if attn_mask is not None:
            attn_mask = ember.cat([attn_mask, ember.zeros(attn_mask.shape[:-1] + (1,),
                                                          dtype=attn_mask.dtype)], -1)
        if key_padding_mask is not None:
            key_padding_mask = ember.cat([key_padding_mask, ember.zeros(
                (key_padding_mask.shape[0], 1), dtype=key_padding_mask.dtype)], -1)
    # (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None
         else static_k)
    v = (v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None
         else static_v)
    if add_zero_attn:
        k = ember.cat([k, ember.zeros((k.shape[0], 1, head_dim), dtype=k.dtype)], 1)
        v = ember.cat([v, ember.zeros((v.shape[0], 1, head_dim), dtype=v.dtype)], 1)
        if attn_mask is not None:
            attn_mask = ember.cat([attn_mask, ember.zeros(attn_mask.shape[:-1] + (1,),
                                                          dtype=attn_mask.dtype)], -1)
        if key_padding_mask is not None:
            key_padding_mask = ember.cat([key_padding_mask, ember.zeros(
                (key_padding_mask.shape[0], 1), dtype=key_padding_mask.dtype)], -1)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    scores = q.matmul(k.transpose(1, 2)) * (1.0 / math.sqrt(head_dim))
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, training=True)
    out = weights.matmul(v)                                   # (N * H, L, head_dim)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights
