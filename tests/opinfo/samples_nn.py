"""Sample inputs for the ops of nn.functional registered as compositions (losses, pooling,
convolutions, pad, grid_sample, prelu): each is one OpDef (ember/ops/nn_ops.py
`composition`), so the generated tests call it as ``lib.nn.functional.<name>`` on both
libraries and compare the results."""
import numpy as np

try:
    from ._make import I, S, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import I, S, T

def _log_softmax(shape, seed):
    """Normalised log-probabilities (CTC's input: torch's ctc_loss gradient assumes them)."""
    a = np.random.default_rng(seed).standard_normal(shape)
    return (a - np.log(np.exp(a).sum(-1, keepdims=True))).tolist()


x34 = T((3, 4))
d34 = T((3, 4), "float64", "T")
PROB = dict(lo=0.05, hi=0.95)      # probabilities, away from 0 and 1
SIGNS = [[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, 1.0]]  # ±1 targets

LOSSES = {
    "mse_loss": [S(x34, x34), S(d34, T((3, 4), "float64"), reduction="sum"),
                 S(T((2, 3)), T((3,)), reduction="none")],
    "l1_loss": [S(x34, x34), S(d34, T((3, 4), "float64"), reduction="none")],
    "smooth_l1_loss": [S(x34, x34), S(d34, T((3, 4), "float64"), beta=0.5, reduction="sum")],
    "huber_loss": [S(x34, x34), S(d34, T((3, 4), "float64"), delta=0.5, reduction="none")],
    "soft_margin_loss": [S(x34, T((3, 4), values=SIGNS)),
                         S(d34, T((3, 4), "float64", values=SIGNS), reduction="sum")],
    "hinge_embedding_loss": [S(x34, T((3, 4), values=SIGNS)),
                             S(d34, T((3, 4), "float64", values=SIGNS), margin=0.5,
                               reduction="none")],
    "binary_cross_entropy": [S(T((3, 4), **PROB), T((3, 4), lo=0.0, hi=1.0)),
                             S(T((3, 4), "float64", **PROB), T((3, 4), "float64", lo=0, hi=1),
                               T((4,), "float64", lo=0.5, hi=2.0), reduction="sum")],
    "binary_cross_entropy_with_logits": [
        S(x34, T((3, 4), lo=0.0, hi=1.0)),
        S(d34, T((3, 4), "float64", lo=0, hi=1), pos_weight=T((4,), "float64", lo=0.5, hi=2),
          reduction="none")],
    "kl_div": [S(x34, T((3, 4), **PROB)),
               S(d34, T((3, 4), "float64"), reduction="batchmean", log_target=True)],
    "poisson_nll_loss": [S(x34, T((3, 4), lo=0.0, hi=3.0)),
                         S(T((3, 4), "float64", lo=0.1, hi=2.0), T((3, 4), "float64", lo=0, hi=3),
                           log_input=False, full=True)],
    "cosine_embedding_loss": [S(T((3, 5)), T((3, 5)), T((3,), values=[1.0, -1.0, 1.0])),
                              S(T((3, 5), "float64"), T((3, 5), "float64"),
                                T((3,), "float64", values=[-1.0, -1.0, 1.0]), margin=0.2,
                                reduction="sum")],
    "margin_ranking_loss": [S(T((4,)), T((4,)), T((4,), values=[1.0, -1.0, 1.0, -1.0])),
                            S(T((4,), "float64"), T((4,), "float64"),
                              T((4,), "float64", values=[1.0, 1.0, -1.0, -1.0]), margin=0.1)],
    "triplet_margin_loss": [S(T((3, 5)), T((3, 5)), T((3, 5))),
                            S(T((3, 5), "float64"), T((3, 5), "float64"), T((3, 5), "float64"),
                              margin=0.5, p=1, swap=True, reduction="none")],
    "multi_margin_loss": [S(x34, I([0, 3, 1])),
                          S(d34, I([2, 2, 0]), p=2, margin=0.5, weight=T((4,), "float64", lo=0.5,
                                                                         hi=2.0))],
    "multilabel_margin_loss": [S(T((2, 4)), I([[3, 0, -1, 1], [1, 2, 3, -1]])),
                               S(T((2, 4), "float64"), I([[0, -1, 2, 1], [3, 1, -1, 0]]),
                                 reduction="none")],
    "ctc_loss": [S(T((5, 2, 4), "float64", values=_log_softmax((5, 2, 4), 0)),
                   I([[1, 2], [1, 1]]), (5, 5), (2, 2)),
                 S(T((6, 2, 3), values=_log_softmax((6, 2, 3), 1)), I([[1, 2, 1], [2, 0, 0]]),
                   (6, 4), (3, 1), reduction="sum")],
}

POOLING = {
    "max_pool3d": [S(T((1, 2, 4, 4, 4)), 2),
                   S(T((1, 1, 5, 5, 5), "float64"), 3, stride=2, padding=1),
                   S(T((1, 1, 4, 4, 4)), 2, return_indices=True)],
    "avg_pool3d": [S(T((1, 2, 4, 4, 4)), 2),
                   S(T((1, 1, 5, 5, 5), "float64"), 3, stride=2, padding=1,
                     count_include_pad=False),
                   S(T((1, 1, 5, 5, 5)), 2, ceil_mode=True)],
    "adaptive_avg_pool3d": [S(T((1, 2, 4, 4, 4)), (2, 2, 2)),
                            S(T((2, 3, 3, 3), "float64"), 2)],
    "adaptive_max_pool3d": [S(T((1, 2, 4, 4, 4)), 2),
                            S(T((1, 2, 4, 4, 4), "float64"), (1, 2, 2), return_indices=True)],
    "max_unpool1d": [S(T((1, 1, 2)), I([[[1, 3]]]), 2),
                     S(T((1, 2, 3), "float64"), I([[[0, 3, 4], [1, 2, 5]]]), 2)],
    "max_unpool2d": [S(T((1, 1, 2, 2)), I([[[[0, 3], [9, 14]]]]), 2),
                     S(T((1, 1, 2, 2), "float64"), I([[[[5, 2], [12, 15]]]]), 2, stride=2)],
}

CONVOLUTION = {
    "conv1d": [S(T((2, 3, 8)), T((4, 3, 3))),
               S(T((1, 4, 7), "float64"), T((2, 2, 3), "float64"), T((2,), "float64"),
                 stride=2, padding=1, groups=2),
               S(T((1, 2, 9)), T((3, 2, 3)), dilation=2, padding="same")],
    "conv2d": [S(T((1, 3, 6, 6)), T((2, 3, 3, 3))),
               S(T((2, 2, 5, 5), "float64"), T((4, 1, 3, 3), "float64"), None, 1, 1, 1, 2),
               S(T((1, 2, 5, 5)), T((2, 2, 3, 3)), T((2,)), stride=2, padding="valid")],
    "conv3d": [S(T((1, 2, 4, 4, 4)), T((2, 2, 2, 2, 2))),
               S(T((1, 1, 5, 5, 5), "float64"), T((2, 1, 3, 3, 3), "float64"), stride=2,
                 padding=1)],
    "conv_transpose1d": [S(T((1, 3, 5)), T((3, 2, 3))),
                         S(T((1, 2, 4), "float64"), T((2, 3, 3), "float64"), T((3,), "float64"),
                           stride=2, output_padding=1)],
    "conv_transpose2d": [S(T((1, 2, 4, 4)), T((2, 3, 3, 3))),
                         S(T((1, 2, 3, 3), "float64"), T((2, 1, 3, 3), "float64"), stride=2,
                           padding=1, groups=2)],
    "conv_transpose3d": [S(T((1, 2, 3, 3, 3)), T((2, 1, 2, 2, 2))),
                         S(T((1, 1, 2, 2, 2), "float64"), T((1, 2, 2, 2, 2), "float64"),
                           stride=2)],
}

OTHER = {
    "pad": [S(x34, (1, 2)), S(T((1, 2, 3), "float64"), (1, 1), mode="reflect"),
            S(T((1, 2, 3, 3)), (1, 0, 2, 1), mode="replicate"),
            S(T((1, 2, 4)), (2, 1), mode="circular"), S(x34, (1, 1, 0, 2), value=1.5),
            S(T((2, 5), "float64", "T"), (-1, 1))],
    "grid_sample": [S(T((1, 2, 4, 4)), T((1, 3, 3, 2), lo=-1.0, hi=1.0), align_corners=False),
                    S(T((1, 1, 4, 4), "float64"), T((1, 2, 3, 2), "float64", lo=-1.2, hi=1.2),
                      mode="nearest", padding_mode="border", align_corners=True)],
    "prelu": [S(T((2, 3, 4)), T((3,))), S(T((2, 3), "float64", "T"), T((1,), "float64"))],
    "linear": [S(T((2, 3)), T((4, 3))),
               S(T((2, 3), "float64", "T"), T((4, 3), "float64"), T((4,), "float64")),
               S(T((2, 5, 3), "float64"), T((2, 3), "float64", "step")), S(T((3,)), T((4, 3)))],
}

NN_FUNCTIONAL = {**LOSSES, **POOLING, **CONVOLUTION, **OTHER}
