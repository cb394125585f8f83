"""F.linear_cross_entropy: ``cross_entropy(linear(input, linear_weight, linear_bias),
target)`` in one call (torch 2.13), optionally over chunks of the batch.

    loss = F.linear_cross_entropy(hidden, head.weight, target)
    loss = F.linear_cross_entropy(hidden, head.weight, target,
                                  options=nn.LinearCrossEntropyOptions(batch_chunk_size=256))

With ``options``, ember computes the loss chunk by chunk in ``acc_dtype`` (the same values
as torch's chunked op); unlike torch it keeps each chunk's logits for backward, so the
chunked path does not lower peak memory here.
"""
import math
import warnings

from ..core import dtype as D
from ..ops.registry import FUNCTIONS
from ..ops.linalg import linear as _linear
from ..ops.nn_loss_ops import cross_entropy

__all__ = ["linear_cross_entropy"]


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """The cross entropy of ``input @ linear_weight.T (+ linear_bias)`` against `target`.

    >>> F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 1]))
    tensor(1.3863)
    """
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    probabilities = tuple(target.shape) == logits_shape
    if probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    chunked = (options is not None and reduction in {"mean", "sum", "none"}
               and label_smoothing == 0.0 and target.dtype is D.int64 and not out_features)
    if options is not None and not chunked:
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs "
                      "reduction in {'mean','sum','none'}, label_smoothing == 0, target.dtype"
                      " == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, "
                      f"target.dtype={target.dtype}, out_features={out_features}"
                      ", tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                      stacklevel=2)
    if chunked:
        return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                        ignore_index, options, in_features, num_classes)
    if out_features:
        rows = math.prod(out_features) * num_classes
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = _linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _chunked(input, w, target, bias, weight, reduction, ignore_index, options, in_features,
             num_classes):
    batched = input.dim() == 2
    x = input if batched else input.unsqueeze(0)
    t = target if batched else target.unsqueeze(0)
    opts = options._adjust(x.shape[0], in_features, num_classes, x.dtype, x.device)
    acc, step = opts.acc_dtype, opts.batch_chunk_size
    wa = w.to(acc)
    ba = None if bias is None else bias.to(acc)
    cw = None if weight is None else weight.to(acc)
    rows = []
    for s in range(0, x.shape[0], step):
        logits = _linear(x[s:s + step].to(acc), wa, ba)
        rows.append(cross_entropy(logits, t[s:s + step], weight=cw, reduction="none",
                                  ignore_index=ignore_index))
    loss = FUNCTIONS["cat"](rows)
    if reduction == "none":
        out = loss
    elif reduction == "sum":
        out = loss.sum()
    else:
        keep = t != ignore_index
        if cw is None:
            denom = keep.sum().to(acc)
        else:
            denom = (cw[t.clamp_min(0)] * keep.to(acc)).sum()
        out = loss.sum() / denom
    out = out.to(input.dtype)
    return out if batched or reduction != "none" else out.squeeze(0)
