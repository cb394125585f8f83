"""Loss functions and modules against PyTorch: values and gradients for every reduction,
non-default options (weights, ignore_index, label smoothing, pos_weight, ...), N-d inputs,
half precision (loose tolerance), gradcheck in float64, CTC."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.autograd import gradcheck

try:
    from ._nn_common import E as _E, close as _close
except ImportError:
    from _nn_common import E as _E, close as _close

_HALF = {torch.bfloat16: ember.bfloat16}


def E(t, requires_grad=None):
    """ember copy of `t`; bfloat16 goes through float32 (numpy has no bfloat16)."""
    if t.dtype not in _HALF:
        return _E(t, requires_grad)
    e = _E(t.detach().float(), False).to(_HALF[t.dtype])
    rg = t.requires_grad if requires_grad is None else requires_grad
    return e.requires_grad_(True) if rg else e


def close(e, t, tol=None, what="value"):
    if t is not None and t.dtype in _HALF:
        assert e is not None and e.dtype == _HALF[t.dtype], what
        e, t = e.float(), t.float()
    _close(e, t, tol, what)

REDS = ["none", "mean", "sum"]
TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-9, 1e-11),
       torch.float16: (1e-2, 1e-2), torch.bfloat16: (4e-2, 4e-2)}


def rnd(shape, dtype=torch.float64, seed=0, rg=True, lo=None, hi=None, scale=1.0):
    r = np.random.default_rng(seed)
    a = r.standard_normal(shape) * scale if lo is None else r.uniform(lo, hi, shape)
    return torch.from_numpy(np.asarray(a)).to(dtype).requires_grad_(rg)


def cls(shape, c, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, c, shape))


def pm1(shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).choice([-1.0, 1.0], shape))


def compare(tfn, efn, args, grad_idx=None, tol=None):
    """Call both, compare value and the gradient of every float arg that requires grad."""
    eargs = [E(a) if isinstance(a, torch.Tensor) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tout = tfn(*args)
        eout = efn(*eargs)
    tol = tol or TOL[tout.dtype]
    close(eout, tout, tol, "loss")
    if not tout.requires_grad:
        return
    g = torch.from_numpy(np.random.default_rng(7).standard_normal(tuple(tout.shape))).to(
        tout.dtype)
    tout.backward(g)
    eout.backward(E(g))
    for i, (a, e) in enumerate(zip(args, eargs)):
        if isinstance(a, torch.Tensor) and a.requires_grad:
            close(e.grad, a.grad, tol, f"grad {i}")


def fresh(args):
    return [a.detach().clone().requires_grad_(a.requires_grad)
            if isinstance(a, torch.Tensor) else a for a in args]


CASES = {
    "cross_entropy": lambda: (rnd((4, 5)), cls((4,), 5)),
    "cross_entropy_nd": lambda: (rnd((2, 3, 2, 2)), cls((2, 2, 2), 3)),
    "cross_entropy_1d": lambda: (rnd((5,)), cls((), 5)),
    "cross_entropy_prob": lambda: (rnd((3, 4)), TF.softmax(rnd((3, 4), seed=1, rg=False), 1)),
    "nll_loss": lambda: (TF.log_softmax(rnd((4, 5)), 1).detach().requires_grad_(),
                         cls((4,), 5)),
    "binary_cross_entropy": lambda: (rnd((3, 4), lo=0.05, hi=0.95), rnd((3, 4), seed=1,
                                                                        lo=0, hi=1)),
    "binary_cross_entropy_with_logits": lambda: (rnd((3, 4), scale=10), rnd((3, 4), seed=1,
                                                                       lo=0, hi=1)),
    "mse_loss": lambda: (rnd((3, 4)), rnd((3, 4), seed=1)),
    "l1_loss": lambda: (rnd((3, 4)), rnd((3, 4), seed=1)),
    "smooth_l1_loss": lambda: (rnd((3, 4)), rnd((3, 4), seed=1)),
    "huber_loss": lambda: (rnd((3, 4), scale=2), rnd((3, 4), seed=1)),
    "kl_div": lambda: (TF.log_softmax(rnd((3, 4)), 1).detach().requires_grad_(),
                       TF.softmax(rnd((3, 4), seed=1), 1).detach().requires_grad_()),
    "poisson_nll_loss": lambda: (rnd((3, 4)), rnd((3, 4), seed=1, lo=0, hi=4)),
    "gaussian_nll_loss": lambda: (rnd((3, 4)), rnd((3, 4), seed=1), rnd((3, 4), seed=2,
                                                                        lo=0.1, hi=2)),
    "cosine_embedding_loss": lambda: (rnd((4, 3)), rnd((4, 3), seed=1), pm1((4,))),
    "margin_ranking_loss": lambda: (rnd((5,)), rnd((5,), seed=1), pm1((5,))),
    "hinge_embedding_loss": lambda: (rnd((3, 4)), pm1((3, 4))),
    "triplet_margin_loss": lambda: (rnd((4, 3)), rnd((4, 3), seed=1), rnd((4, 3), seed=2)),
    "multi_margin_loss": lambda: (rnd((4, 5)), cls((4,), 5)),
    "multilabel_margin_loss": lambda: (rnd((3, 4)), torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3],
                                                                 [-1, 2, 0, 0]])),
    "multilabel_soft_margin_loss": lambda: (rnd((3, 4)), rnd((3, 4), seed=1, lo=0, hi=1)),
    "soft_margin_loss": lambda: (rnd((3, 4)), pm1((3, 4))),
}
_FN = {k: k.replace("_nd", "").replace("_1d", "").replace("_prob", "") for k in CASES}


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("name", list(CASES))
def test_losses_f64(name, reduction):
    args = CASES[name]()
    fn = _FN[name]
    compare(lambda *a: getattr(TF, fn)(*a, reduction=reduction),
            lambda *a: getattr(EF, fn)(*a, reduction=reduction), args)


@pytest.mark.parametrize("name", list(CASES))
def test_losses_f32_and_half(name):
    fn = _FN[name]
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        if dt in (torch.float16, torch.bfloat16) and name.startswith(("multilabel_margin",
                                                                      "multi_margin")):
            continue        # torch has no CPU half kernel for these two
        args = [a.detach().to(dt).requires_grad_(a.requires_grad)
                if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in CASES[name]()]
        compare(getattr(TF, fn), getattr(EF, fn), args)


@pytest.mark.parametrize("kw", [
    {"weight": "w"}, {"ignore_index": 1}, {"label_smoothing": 0.2},
    {"weight": "w", "ignore_index": 2, "label_smoothing": 0.3},
    {"weight": "w", "label_smoothing": 0.1, "reduction": "sum"},
    {"ignore_index": 0, "label_smoothing": 0.15, "reduction": "none"},
])
@pytest.mark.parametrize("shape", [(6, 4), (2, 4, 3), (4,)])
def test_cross_entropy_options(kw, shape):
    kw = dict(kw)
    if kw.get("weight") == "w":
        kw["weight"] = rnd((4,), seed=5, rg=False, lo=0.2, hi=2)
    x = rnd(shape)
    t = cls(shape[:1] + shape[2:] if len(shape) > 1 else (), 4, seed=3)
    ekw = {k: E(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    compare(lambda a, b: TF.cross_entropy(a, b, **kw), lambda a, b: EF.cross_entropy(a, b, **ekw),
            [x, t])
    # the module form and NLLLoss
    tm, em = torch.nn.CrossEntropyLoss(**kw), enn.CrossEntropyLoss(**ekw)
    compare(tm, em, fresh([x, t]))
    nkw = {k: v for k, v in kw.items() if k != "label_smoothing"}
    enkw = {k: v for k, v in ekw.items() if k != "label_smoothing"}
    compare(torch.nn.NLLLoss(**nkw), enn.NLLLoss(**enkw),
            [TF.log_softmax(x, 1 if x.dim() > 1 else 0).detach().requires_grad_(), t])


@pytest.mark.parametrize("ls", [0.0, 0.25])
def test_cross_entropy_probabilities_weighted(ls):
    x, p = rnd((3, 4, 2)), TF.softmax(rnd((3, 4, 2), seed=1, rg=False), 1)
    w = rnd((4,), seed=2, rg=False, lo=0.5, hi=2)
    for red in REDS:
        compare(lambda a, b: TF.cross_entropy(a, b, w, reduction=red, label_smoothing=ls),
                lambda a, b: EF.cross_entropy(a, b, E(w), reduction=red, label_smoothing=ls),
                fresh([x, p]))


def test_loss_options():
    x, y = rnd((3, 4)) * 3, rnd((3, 4), seed=1, lo=0, hi=1)
    w, pw = rnd((4,), seed=2, rg=False, lo=0.5, hi=2), rnd((4,), seed=3, rg=False, lo=0.5, hi=3)
    compare(lambda a, b: TF.binary_cross_entropy_with_logits(a, b, w, pos_weight=pw),
            lambda a, b: EF.binary_cross_entropy_with_logits(a, b, E(w), pos_weight=E(pw)),
            fresh([x, y]))
    compare(torch.nn.BCEWithLogitsLoss(pos_weight=pw, reduction="sum"),
            enn.BCEWithLogitsLoss(pos_weight=E(pw), reduction="sum"), fresh([x, y]))
    p = torch.sigmoid(x).detach().requires_grad_()
    compare(torch.nn.BCELoss(weight=w), enn.BCELoss(weight=E(w)), [p, y])
    for beta in (0.0, 0.5, 2.0):
        compare(torch.nn.SmoothL1Loss(beta=beta), enn.SmoothL1Loss(beta=beta), fresh([x, y]))
    compare(torch.nn.HuberLoss(delta=0.3), enn.HuberLoss(delta=0.3), fresh([x, y]))
    lp, lt = TF.log_softmax(x, 1).detach(), TF.log_softmax(y, 1).detach()
    for red in ("batchmean", "sum", "mean"):
        compare(torch.nn.KLDivLoss(reduction=red, log_target=True),
                enn.KLDivLoss(reduction=red, log_target=True),
                [lp.clone().requires_grad_(), lt.clone().requires_grad_()])
    t = torch.tensor([[0.0, 1.0, 3.0, 7.0]] * 3, dtype=torch.float64)
    compare(torch.nn.PoissonNLLLoss(log_input=False, full=True),
            enn.PoissonNLLLoss(log_input=False, full=True), [y.detach() + 0.5, t])
    compare(torch.nn.PoissonNLLLoss(full=True), enn.PoissonNLLLoss(full=True), fresh([x, t]))
    v = rnd((3,), seed=4, lo=0.0, hi=1.0)
    v2 = rnd((3, 1), seed=5, lo=0.0, hi=1.0)
    for var in (v, v2):
        compare(torch.nn.GaussianNLLLoss(full=True, eps=0.3),
                enn.GaussianNLLLoss(full=True, eps=0.3), fresh([x, y, var]))
    compare(torch.nn.CosineEmbeddingLoss(margin=0.2), enn.CosineEmbeddingLoss(margin=0.2),
            fresh([x, y, pm1((3,))]))
    compare(torch.nn.MarginRankingLoss(margin=0.5), enn.MarginRankingLoss(margin=0.5),
            fresh([x, y, pm1((3, 4))]))
    compare(torch.nn.HingeEmbeddingLoss(margin=2.0), enn.HingeEmbeddingLoss(margin=2.0),
            fresh([x, pm1((3, 4))]))
    for kw in ({"margin": 0.5, "p": 1.0, "swap": True}, {"p": 3.0, "eps": 1e-3}):
        compare(torch.nn.TripletMarginLoss(**kw), enn.TripletMarginLoss(**kw),
                fresh([x, y, rnd((3, 4), seed=9)]))
    c = cls((3,), 4)
    compare(torch.nn.MultiMarginLoss(p=2, margin=0.7, weight=w),
            enn.MultiMarginLoss(p=2, margin=0.7, weight=E(w)), fresh([x, c]))
    compare(torch.nn.MultiMarginLoss(), enn.MultiMarginLoss(), [rnd((4,)), torch.tensor(2)])
    compare(torch.nn.MultiLabelMarginLoss(), enn.MultiLabelMarginLoss(),
            [rnd((4,)), torch.tensor([2, 1, -1, 0])])
    compare(torch.nn.MultiLabelSoftMarginLoss(weight=w), enn.MultiLabelSoftMarginLoss(
        weight=E(w)), fresh([x, y]))
    compare(torch.nn.SoftMarginLoss(reduction="sum"), enn.SoftMarginLoss(reduction="sum"),
            fresh([x * 20, pm1((3, 4))]))
    compare(torch.nn.MSELoss(), enn.MSELoss(), fresh([x, y]))
    compare(torch.nn.L1Loss(reduction="none"), enn.L1Loss(reduction="none"), fresh([x, y]))


def test_extreme_logits_are_finite():
    x = torch.tensor([[1000.0, -1000.0, 0.0]], dtype=torch.float32, requires_grad=True)
    compare(TF.cross_entropy, EF.cross_entropy, [x, torch.tensor([1])])
    compare(TF.binary_cross_entropy_with_logits, EF.binary_cross_entropy_with_logits,
            [x.detach().clone().requires_grad_(), torch.tensor([[1.0, 0.0, 0.5]])])
    compare(TF.cross_entropy, EF.cross_entropy,
            [x.detach().half().requires_grad_(), torch.tensor([0])])


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 4), c=st.integers(1, 5), d=st.lists(st.integers(0, 3), max_size=2),
       red=st.sampled_from(REDS), ls=st.sampled_from([0.0, 0.3]), seed=st.integers(0, 99))
def test_cross_entropy_hypothesis(n, c, d, red, ls, seed):
    x = rnd((n, c, *d), seed=seed)
    t = cls((n, *d), c, seed=seed)
    compare(lambda a, b: TF.cross_entropy(a, b, reduction=red, label_smoothing=ls),
            lambda a, b: EF.cross_entropy(a, b, reduction=red, label_smoothing=ls), [x, t])


def test_loss_errors():
    with pytest.raises(IndexError):
        TF.nll_loss(torch.randn(2, 3), torch.tensor([0, 3]))
    with pytest.raises(IndexError, match="out of bounds"):
        EF.nll_loss(ember.randn(2, 3), ember.tensor([0, 3]))
    with pytest.raises(ValueError):
        TF.nll_loss(torch.randn(2, 3), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="batch_size"):
        EF.nll_loss(ember.randn(2, 3), ember.tensor([0, 1, 2]))
    with pytest.raises(ValueError):
        TF.binary_cross_entropy(torch.rand(2, 3), torch.rand(3))
    with pytest.raises(ValueError, match="target size"):
        EF.binary_cross_entropy(ember.rand(2, 3), ember.rand(3))
    with pytest.raises(ValueError):
        TF.gaussian_nll_loss(torch.randn(2, 3), torch.randn(2, 3), -torch.ones(2, 3))
    with pytest.raises(ValueError, match="negative"):
        EF.gaussian_nll_loss(ember.randn(2, 3), ember.randn(2, 3), -ember.ones(2, 3))
    with pytest.raises(ValueError):
        TF.mse_loss(torch.randn(2), torch.randn(2), reduction="bad")
    with pytest.raises(ValueError, match="not a valid"):
        EF.mse_loss(ember.randn(2), ember.randn(2), reduction="bad")
    with pytest.warns(UserWarning, match="target size"):
        EF.mse_loss(ember.randn(2, 3), ember.randn(3))


def _gc(fn, *args):
    ins = tuple(E(a, requires_grad=True) if isinstance(a, torch.Tensor) and
                a.is_floating_point() else (E(a) if isinstance(a, torch.Tensor) else a)
                for a in args)
    assert gradcheck(fn, ins, eps=1e-6, atol=1e-5)


def test_gradcheck_losses():
    x, y = rnd((2, 3), rg=False), rnd((2, 3), seed=1, rg=False, lo=0.1, hi=0.9)
    c = cls((2,), 3)
    w = rnd((3,), seed=2, rg=False, lo=0.5, hi=2)
    _gc(lambda a: EF.cross_entropy(a, E(c), E(w), label_smoothing=0.2), x)
    _gc(lambda a, b: EF.cross_entropy(a, b), x, TF.softmax(y, 1))
    _gc(lambda a, b: EF.binary_cross_entropy(a, b), y, torch.rand(2, 3, dtype=torch.float64))
    _gc(lambda a, b: EF.binary_cross_entropy_with_logits(a, b, pos_weight=E(w)), x, y)
    _gc(lambda a, b: EF.smooth_l1_loss(a, b, beta=0.5), x, y)
    _gc(lambda a, b: EF.huber_loss(a, b, delta=0.5), x, y)
    _gc(lambda a, b: EF.kl_div(a, b, reduction="batchmean"), x, y)
    _gc(lambda a, b: EF.poisson_nll_loss(a, b, full=True), x, y * 3)
    _gc(lambda a, b, v: EF.gaussian_nll_loss(a, b, v), x, y, y + 0.5)
    _gc(lambda a, b: EF.cosine_embedding_loss(a, b, E(pm1((2,)))), x, y)
    _gc(lambda a, b: EF.triplet_margin_loss(a, b, E(rnd((2, 3), seed=8))), x, y)
    _gc(lambda a: EF.multi_margin_loss(a, E(c), p=2, weight=E(w)), x)
    _gc(lambda a: EF.multilabel_margin_loss(a, ember.tensor([[1, -1, 0], [0, 2, 1]])), x)
    _gc(lambda a, b: EF.multilabel_soft_margin_loss(a, b), x, y)
    _gc(lambda a: EF.soft_margin_loss(a, E(pm1((2, 3)))), x)


# ---- CTC ----
def _ctc_case(seed, n=3, t=8, c=5, concat=False):
    r = np.random.default_rng(seed)
    lp = TF.log_softmax(torch.from_numpy(r.standard_normal((t, n, c))), 2).detach()
    in_len = torch.from_numpy(r.integers(t // 2 + 2, t + 1, n))
    tl = torch.from_numpy(r.integers(0, t // 2, n))
    tl[0] = max(int(tl[0]), 2)
    tg = torch.from_numpy(r.integers(1, c, (n, int(tl.max()))))
    tg[0, 1] = tg[0, 0]                       # a repeated label needs a blank between
    if concat:
        tg = torch.cat([tg[i, :tl[i]] for i in range(n)])
    return lp.requires_grad_(), tg, in_len, tl


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("concat", [False, True])
def test_ctc_loss(reduction, concat, dtype):
    lp, tg, il, tl = _ctc_case(1, concat=concat)
    lp = lp.detach().to(dtype).requires_grad_()
    compare(lambda a, b, c, d: TF.ctc_loss(a, b, c, d, reduction=reduction),
            lambda a, b, c, d: EF.ctc_loss(a, b, c, d, reduction=reduction),
            [lp, tg, il, tl], tol=(1e-4, 1e-5) if dtype == torch.float32 else None)


def test_ctc_options():
    lp, tg, il, tl = _ctc_case(2, n=2, c=4)
    compare(torch.nn.CTCLoss(blank=3), enn.CTCLoss(blank=3),
            [lp, tg.clamp_max(2), il.tolist(), tl.tolist()])
    # infeasible alignment: target longer than the input
    lp2 = lp.detach()[:2].clone().requires_grad_()
    tg2, il2, tl2 = torch.tensor([[1, 2, 1, 2]] * 2), torch.tensor([2, 2]), torch.tensor([4, 1])
    compare(torch.nn.CTCLoss(zero_infinity=True, reduction="sum"),
            enn.CTCLoss(zero_infinity=True, reduction="sum"), [lp2, tg2, il2, tl2])
    compare(lambda *a: TF.ctc_loss(*a, reduction="none"),
            lambda *a: EF.ctc_loss(*a, reduction="none"),
            [lp2.detach(), tg2, il2, tl2])
    # unbatched
    compare(TF.ctc_loss, EF.ctc_loss, [lp.detach()[:, 0].clone().requires_grad_(),
                                        tg[0, :2], torch.tensor(8), torch.tensor(2)])


def test_ctc_all_targets_empty():
    lp = TF.log_softmax(rnd((4, 2, 3)), 2).detach().requires_grad_()
    compare(TF.ctc_loss, EF.ctc_loss, [lp, torch.zeros(2, 0, dtype=torch.long),
                                        torch.tensor([4, 3]), torch.tensor([0, 0])])


def test_gradcheck_ctc():
    lp, tg, il, tl = _ctc_case(3, n=2, t=5, c=3)
    _gc(lambda a: EF.ctc_loss(EF.log_softmax(a, 2), E(tg), E(il), E(tl)), lp.detach())
