"""embedding_bag and gumbel_softmax, as compositions of ember ops (autograd comes for free).

A bag is a run of indices whose embeddings are reduced (sum, mean or max) to one vector:
either each row of a 2-D `input`, or the slices of a 1-D `input` that `offsets` start.
"""
import numpy as np

from ..core.dtype import int64
from ..ops import nn_ops as _nn_ops
from ..ops.creation import empty_like, tensor, zeros, zeros_like
from ..dispatch import with_mode_seam as _seam

__all__ = ["embedding_bag", "gumbel_softmax"]


def _bags(input, offsets, include_last_offset):
    """(flat indices, bag id of each, number of bags) for either input layout."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        b, n = input.shape
        return input.reshape(-1), np.repeat(np.arange(b), n), b
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    off = offsets.detach().numpy().astype(np.int64)
    n = input.shape[0]
    if off.size and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {off[0]}")
    if include_last_offset:
        off, nbags = off, len(off) - 1
    else:
        nbags = len(off)
    starts = off[:nbags]
    ends = np.append(off[1:nbags + 1] if include_last_offset else off[1:], n)[:nbags]
    bag_of = np.repeat(np.arange(nbags), np.maximum(ends - starts, 0))
    return input, bag_of, nbags


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxes of bags of embeddings, without building the per-index tensor the
    user would otherwise reduce.

    >>> F.embedding_bag(ember.tensor([[0, 1], [2, 2]]), ember.eye(3), mode="sum")
    tensor([[1., 1., 0.],
            [0., 0., 2.]])
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    flat, bag_of, nbags = _bags(input, offsets, include_last_offset)
    n_emb = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n_emb
    rows = _nn_ops.embedding(flat, weight, None, max_norm, norm_type,
                             scale_grad_by_freq=scale_grad_by_freq)
    keep = np.ones(flat.shape[0], bool)
    if padding_idx is not None:
        keep = flat.detach().numpy() != padding_idx
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    dim = weight.shape[1]
    bag_ids = tensor(bag_of[keep], dtype=int64)
    rows = rows[tensor(np.nonzero(keep)[0], dtype=int64)]
    out = zeros(nbags, dim, dtype=weight.dtype)
    if mode == "max":
        # each bag's max per column comes from its first row holding it (torch's kernel),
        # which alone gets that element's gradient; an empty bag is zeros
        kept_bags = bag_of[keep]
        if not kept_bags.size:
            return out + rows.sum() * 0     # (attached to the graph, as torch's is)
        vals = rows.detach()._numpy()
        first = np.zeros((nbags, dim), np.int64)
        present = np.zeros(nbags, bool)
        for b in np.unique(kept_bags):
            where = np.nonzero(kept_bags == b)[0]
            first[b] = where[np.argmax(vals[where], axis=0)]
            present[b] = True
        picked = rows.gather(0, tensor(first, dtype=int64))
        return picked * tensor(present.reshape(-1, 1), dtype=weight.dtype)
    out = out.index_add(0, bag_ids, rows)
    if mode == "mean":
        counts = np.bincount(bag_of[keep], minlength=nbags).astype(np.float64)
        out = out / tensor(np.maximum(counts, 1).reshape(-1, 1), dtype=weight.dtype)
    return out


# it reads index values in Python: a tracer records each call whole
embedding_bag = _seam("F.embedding_bag", embedding_bag)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution; ``hard=True`` returns one-hot samples
    whose gradient is the soft sample's (straight-through)."""
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = _nn_ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
