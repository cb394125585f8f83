"""AdaptiveLogSoftmaxWithLoss (Grave et al., 2016): a softmax over many classes split by
frequency; the frequent ones (the shortlist) and one entry per rare cluster share the head,
each cluster has its own smaller projection.

    asm = nn.AdaptiveLogSoftmaxWithLoss(64, 1000, cutoffs=[100, 500])
    out, loss = asm(hidden, target)        # log-probability of each target, mean NLL
    asm.log_prob(hidden)                   # (N, 1000)
"""
from collections import namedtuple

import numpy as np

from ...ops.registry import FUNCTIONS
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``forward(input, target)`` gives ``(output, loss)``: the log-probability of each
    target and their mean negated."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                        Linear(hsz, osz, bias=False, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        tdim = target_.dim()
        if tdim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        elif tdim == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        t = target.detach().numpy().astype(np.int64)
        bounds = [0] + self.cutoffs
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{t.min()}, {t.max()}] were found. ")
        # the head entry each row reads: its class (shortlist) or its cluster's entry
        gather = t.copy()
        output = input.new_zeros(t.shape[0])
        for i in range(1, len(bounds) - 1):
            rows = np.flatnonzero((t >= bounds[i]) & (t < bounds[i + 1]))
            if rows.size == 0:
                continue
            gather[rows] = self.shortlist_size + i - 1
            ridx = FUNCTIONS["tensor"](rows)
            rel = FUNCTIONS["tensor"](t[rows] - bounds[i]).unsqueeze(1)
            logp = F.log_softmax(self.tail[i - 1](input.index_select(0, ridx)), dim=1)
            output = output.index_add(0, ridx, logp.gather(1, rel).squeeze(1))
        head_logp = F.log_softmax(self.head(input), dim=1)
        output = output + head_logp.gather(1, FUNCTIONS["tensor"](gather).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logp = F.log_softmax(head_output, dim=1)
        parts = [head_logp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logp[:, self.shortlist_size + i].unsqueeze(1))
        return FUNCTIONS["cat"](parts, dim=1)

    def log_prob(self, input):
        """Log-probabilities of every class, (N, n_classes) (or (n_classes,))."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self.log_prob(x).argmax(dim=1)
        return out if batched else out.squeeze(0)
