"""Attention functions of nn.functional: scaled_dot_product_attention and the multi-head
attention forward used by nn.MultiheadAttention. Compositions of ember ops.

    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)   # (..., L, Ev)
"""
import math

from ..ops.creation import zeros
from ..ops.joining import cat
from ..ops import nn_ops as _nn_ops
from ..ops.linalg import linear as _linear
from .functional_dropout import dropout
# scaled_dot_product_attention is a composite op, defined once in ember/ops (its OpDef holds
# the decomposition, the fast path and its joint backward formula)
from ..ops.nn_attention_ops import scaled_dot_product_attention, _mask_to_bias  # noqa: F401
from ..ops.nn_attention_ops import _softmax_of_scores_kernel, _scores_grad_kernel  # noqa: F401

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


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
    q = _linear(query, wq, bq)
    k = _linear(key, wk, bk)
    v = _linear(value, wv, bv)
    attn_mask = _mask_to_bias(attn_mask, q.dtype, true_means_keep=False)
    if attn_mask is not None and attn_mask.dim() == 2:
        attn_mask = attn_mask.unsqueeze(0)
    key_padding_mask = _mask_to_bias(key_padding_mask, q.dtype, true_means_keep=False)
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        if attn_mask is not None:
            attn_mask = cat([attn_mask, zeros(attn_mask.shape[:-1] + (1,),
                                              dtype=attn_mask.dtype)], -1)
        if key_padding_mask is not None:
            key_padding_mask = cat([key_padding_mask, zeros(
                (key_padding_mask.shape[0], 1), dtype=key_padding_mask.dtype)], -1)
    # (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None
         else static_k)
    v = (v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None
         else static_v)
    if add_zero_attn:
        k = cat([k, zeros((k.shape[0], 1, head_dim), dtype=k.dtype)], 1)
        v = cat([v, zeros((v.shape[0], 1, head_dim), dtype=v.dtype)], 1)
        if attn_mask is not None:
            attn_mask = cat([attn_mask, zeros(attn_mask.shape[:-1] + (1,),
                                              dtype=attn_mask.dtype)], -1)
        if key_padding_mask is not None:
            key_padding_mask = cat([key_padding_mask, zeros(
                (key_padding_mask.shape[0], 1), dtype=key_padding_mask.dtype)], -1)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    scores = q.matmul(k.transpose(1, 2)) * (1.0 / math.sqrt(head_dim))
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = _nn_ops.softmax(scores, -1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, training=True)
    out = weights.matmul(v)                                   # (N * H, L, head_dim)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
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
