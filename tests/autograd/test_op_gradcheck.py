"""gradcheck (and gradgradcheck) for every differentiable op, plus its gradients against torch.

Each table row is (id, fn(L, *xs), input specs, smooth). `fn` is written once against a
library `L` (torch or ember) so both build the same computation. Every row runs with
contiguous and with non-contiguous (permuted / step-sliced) float64 leaves; values are drawn
away from the points where the op is not differentiable.
"""
import sys

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck


def U(shape, lo=-1.5, hi=1.5):
    """Uniform values in [lo, hi]."""
    return ("u", shape, lo, hi)


def AWAY(shape, lo=0.3, hi=1.5):
    """Values with |v| in [lo, hi] and a random sign (away from 0)."""
    return ("a", shape, lo, hi)


def STEPSAFE(shape):
    """Values n + f with |f| in [0.2, 0.4] (f signed): away from integers and half-integers."""
    return ("s", shape, 0, 0)


def POS(shape, lo=0.3, hi=2.0):
    return U(shape, lo, hi)


def DISTINCT(shape):
    """Values on a spaced grid, shuffled, so no two are equal (max/min, sort-like ops)."""
    return ("d", shape, 0, 0)


def draw(spec, rng):
    kind, shape, lo, hi = spec
    n = int(np.prod(shape))
    if kind == "u":
        v = rng.uniform(lo, hi, n)
    elif kind == "a":
        v = rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)
    elif kind == "s":
        v = rng.integers(-2, 3, n) + rng.uniform(0.2, 0.4, n) * rng.choice([-1.0, 1.0], n)
    else:
        v = (rng.permutation(n) - n / 2) * 0.37 + 0.05 + rng.uniform(-0.01, 0.01, n)
    return v.reshape(shape)


def leaf(L, arr, layout, k):
    """A float64 leaf of arr's values: contiguous, or laid out non-contiguously."""
    if layout == "contig" or arr.ndim == 0:
        t = L.tensor(arr.copy(), dtype=L.float64)
    elif arr.ndim >= 2 and k % 2 == 0:
        perm = tuple(range(arr.ndim))[::-1]
        t = L.tensor(np.ascontiguousarray(arr.transpose(perm)), dtype=L.float64).permute(perm)
    else:
        wide = np.stack([arr, arr + 100.0], axis=-1)   # every other element is padding
        t = L.tensor(wide, dtype=L.float64)[..., 0]
    return t.detach().requires_grad_()


S23, S3, S21, S13, S0 = (2, 3), (3,), (2, 1), (1, 3), ()
MASK = np.array([[True, False, True], [False, False, True]])

POINTWISE = [
    ("add", lambda L, a, b: L.add(a, b), [U(S23), U(S3)], True),
    ("add_alpha", lambda L, a, b: L.add(a, b, alpha=2.5), [U(S21), U(S13)], True),
    ("add_scalar", lambda L, a: a + 2, [U(S23)], True),
    ("sub", lambda L, a, b: L.sub(a, b, alpha=-1.5), [U(S23), U(S21)], True),
    ("rsub", lambda L, a: 3 - a, [U(S23)], True),
    ("mul", lambda L, a, b: a * b, [U(S23), U(S13)], True),
    ("div", lambda L, a, b: a / b, [U(S23), AWAY(S3)], True),
    ("rdiv", lambda L, a: 2 / a, [AWAY(S23)], True),
    ("pow", lambda L, a, b: a ** b, [POS(S23), U(S3)], True),
    ("pow_scalar", lambda L, a: a ** 3, [U(S23)], True),
    ("pow_scalar_base", lambda L, a: 2.0 ** a, [U(S23)], True),
    ("atan2", lambda L, a, b: L.atan2(a, b), [AWAY(S23), AWAY(S21)], True),
    ("hypot", lambda L, a, b: L.hypot(a, b), [AWAY(S23), AWAY(S3)], True),
    ("copysign", lambda L, a, b: L.copysign(a, b), [AWAY(S23), AWAY(S13)], True),
    ("maximum", lambda L, a, b: L.maximum(a, b), [DISTINCT(S23), DISTINCT(S23)], False),
    ("minimum", lambda L, a, b: L.minimum(a, b), [DISTINCT(S23), DISTINCT(S23)], False),
    ("fmax", lambda L, a, b: L.fmax(a, b), [DISTINCT(S23), DISTINCT(S23)], False),
    ("fmin", lambda L, a, b: L.fmin(a, b), [DISTINCT(S23), DISTINCT(S23)], False),
    ("lerp", lambda L, a, b, w: L.lerp(a, b, w), [U(S23), U(S3), U(S21, 0, 1)], True),
    ("lerp_scalar", lambda L, a, b: L.lerp(a, b, 0.3), [U(S23), U(S23)], True),
    ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), [U(S23), U(S3), U(S21)], True),
    ("addcdiv", lambda L, a, b, c: L.addcdiv(a, b, c, value=2), [U(S3), U(S23), AWAY(S23)],
     True),
    ("where", lambda L, a, b: L.where(L.tensor(MASK), a, b), [U(S23), U(S3)], True),
    ("masked_fill", lambda L, a: a.masked_fill(L.tensor(MASK), 2.0), [U(S23)], True),
    ("clamp", lambda L, a: a.clamp(-0.5, 0.5), [AWAY(S23, 0.1, 1.0)], False),
    ("clamp_min", lambda L, a: a.clamp(min=0.2), [U(S23, 0.3, 1.0)], False),
    ("clamp_tensor", lambda L, a, lo, hi: L.clamp(a, lo, hi),
     [U(S23, -1, 1), U(S3, -2, -1.2), U(S21, 1.2, 2)], False),
    ("nan_to_num", lambda L, a: L.nan_to_num(a), [U(S23)], False),
    # piecewise: values are kept away from the jumps (zero-gradient ops are still checked)
    ("fmod", lambda L, a, b: L.fmod(a, b), [STEPSAFE(S23), U(S3, 0.9, 1.1)], False),
    ("remainder", lambda L, a, b: L.remainder(a, b), [STEPSAFE(S23), U(S21, 0.9, 1.1)],
     False),
    ("remainder_scalar", lambda L, a: a % 1.0, [STEPSAFE(S23)], False),
    ("div_trunc", lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
     [STEPSAFE(S23), U(S3, 0.9, 1.1)], False),
    ("float_power", lambda L, a, b: L.float_power(a, b), [POS(S23), U(S3)], True),
    ("round_decimals", lambda L, a: a.round(decimals=1), [U(S23)], False),
]
POINTWISE += [(n, (lambda L, a, _n=n: getattr(L, _n)(a)), [STEPSAFE(S23)], False)
              for n in ("floor", "ceil", "trunc", "round", "sign", "sgn")]
UNARY = [  # name, domain spec maker
    ("exp", U), ("exp2", U), ("expm1", U), ("log", POS), ("log2", POS), ("log10", POS),
    ("log1p", POS), ("sqrt", POS), ("rsqrt", POS), ("sin", U), ("cos", U),
    ("tan", lambda s: U(s, -1, 1)), ("asin", lambda s: U(s, -0.8, 0.8)),
    ("acos", lambda s: U(s, -0.8, 0.8)), ("atan", U), ("sinh", U), ("cosh", U), ("tanh", U),
    ("asinh", U), ("acosh", lambda s: U(s, 1.2, 2.5)), ("atanh", lambda s: U(s, -0.8, 0.8)),
    ("sigmoid", U), ("logit", lambda s: U(s, 0.1, 0.9)), ("erf", U), ("erfc", U),
    ("erfinv", lambda s: U(s, -0.8, 0.8)), ("neg", U), ("abs", AWAY), ("square", U),
    ("reciprocal", AWAY), ("frac", lambda s: U(s, 0.1, 0.9)), ("relu", AWAY),
]
NONSMOOTH = {"abs", "frac", "relu", "neg"}
POINTWISE += [(n, (lambda L, a, _n=n: getattr(L, _n)(a)), [dom(S23)], n not in NONSMOOTH)
              for n, dom in UNARY]
POINTWISE += [("logit_eps", lambda L, a: L.logit(a, eps=0.05), [U(S23, 0.1, 0.9)], True)]

IDX = [[0, 1, 0], [2, 2, 1]]
VIEWS = [
    ("view", lambda L, x: x.contiguous().view(3, 2) * 1, [U(S23)]),
    ("reshape", lambda L, x: x.reshape(6), [U(S23)]),
    ("flatten", lambda L, x: x.flatten(), [U((2, 3, 2))]),
    ("unflatten", lambda L, x: x.unflatten(1, (3, 1)), [U(S23)]),
    ("squeeze", lambda L, x: x.squeeze(1), [U((2, 1, 3))]),
    ("unsqueeze", lambda L, x: x.unsqueeze(-1), [U(S23)]),
    ("transpose", lambda L, x: x.transpose(0, 2), [U((2, 3, 2))]),
    ("permute", lambda L, x: x.permute(1, 2, 0), [U((2, 3, 2))]),
    ("movedim", lambda L, x: L.movedim(x, 0, -1), [U((2, 3, 2))]),
    ("t", lambda L, x: x.t(), [U(S23)]),
    ("expand", lambda L, x: x.expand(2, 2, 3), [U(S13)]),
    ("narrow", lambda L, x: x.narrow(1, 1, 2), [U(S23)]),
    ("select", lambda L, x: x.select(1, -1), [U(S23)]),
    ("unbind", lambda L, x: x.unbind(1), [U(S23)]),
    ("split", lambda L, x: x.split([1, 2], 1), [U(S23)]),
    ("chunk", lambda L, x: x.chunk(2, 1), [U(S23)]),
    ("diagonal", lambda L, x: x.diagonal(1), [U((3, 3))]),
    ("diagonal3d", lambda L, x: L.diagonal(x, 0, 0, 2), [U((2, 3, 2))]),
    ("unfold", lambda L, x: x.unfold(1, 2, 1), [U((2, 4))]),
    ("as_strided", lambda L, x: x.contiguous().as_strided((2, 2), (1, 2), 1), [U(S23)]),
    ("as_strided_overlap", lambda L, x: x.contiguous().as_strided((3, 2), (1, 1)), [U(S23)]),
    ("getitem_basic", lambda L, x: x[1:, None, ::2], [U((3, 3))]),
    ("getitem_int", lambda L, x: x[0, ..., 1], [U((2, 3, 2))]),
    ("getitem_list_repeat", lambda L, x: x[[0, 1, 0, 0]], [U(S23)]),
    ("getitem_tensor_2d", lambda L, x: x[L.tensor(IDX)], [U((3, 2))]),
    ("getitem_mixed", lambda L, x: x[[1, 0, 1], 1:], [U(S23)]),
    ("getitem_two_adv", lambda L, x: x[L.tensor(IDX[0]), L.tensor(IDX[1])], [U(S23)]),
    ("getitem_mask", lambda L, x: x[L.tensor(MASK)], [U(S23)]),
]
OTHERS = [
    ("sum", lambda L, x: x.sum(), [U(S23)], True),
    ("sum_dim", lambda L, x: x.sum(0), [U(S23)], True),
    ("sum_dims_keep", lambda L, x: x.sum((0, 2), keepdim=True), [U((2, 3, 2))], True),
    ("sum_neg_keep", lambda L, x: x.sum(-1, keepdim=True), [U(S23)], True),
    ("mean", lambda L, x: x.mean(), [U(S23)], True),
    ("mean_dim", lambda L, x: x.mean(1), [U(S23)], True),
    ("mean_dims_keep", lambda L, x: x.mean((0, -1), keepdim=True), [U((2, 3, 2))], True),
    ("mm_1d_1d", lambda L, a, b: a @ b, [U(S3), U(S3)], True),
    ("mm_2d_1d", lambda L, a, b: a @ b, [U(S23), U(S3)], True),
    ("mm_1d_2d", lambda L, a, b: a @ b, [U(S3), U((3, 2))], True),
    ("mm_2d_2d", lambda L, a, b: L.matmul(a, b), [U(S23), U((3, 2))], True),
    ("mm_3d_2d", lambda L, a, b: a @ b, [U((2, 2, 3)), U((3, 2))], True),
    ("mm_2d_3d", lambda L, a, b: a @ b, [U(S23), U((2, 3, 2))], True),
    ("mm_1d_3d", lambda L, a, b: a @ b, [U(S3), U((2, 3, 2))], True),
    ("mm_3d_1d", lambda L, a, b: a @ b, [U((2, 2, 3)), U(S3)], True),
    ("mm_bcast", lambda L, a, b: a @ b, [U((2, 1, 2, 3)), U((3, 3, 2))], True),
    ("mm_method", lambda L, a, b: a.mm(b), [U(S23), U((3, 2))], True),
    ("cat", lambda L, a, b: L.cat([a, b * 2, a], 1), [U(S23), U((2, 2))], True),
    ("cat_dim0", lambda L, a, b: L.cat((a, b)), [U(S23), U((1, 3))], True),
    ("stack", lambda L, a, b: L.stack([a, b]), [U(S23), U(S23)], True),
    ("stack_last", lambda L, a, b: L.stack([a, b, a], -1), [U(S23), U(S23)], True),
    ("to_float32", lambda L, x: x.to(L.float32).to(L.float64), [U(S23)], False),
    ("to_same", lambda L, x: x.to(L.float64) * 2, [U(S23)], True),
    ("double", lambda L, x: x.float().double(), [U(S23)], False),
    ("clone", lambda L, x: x.clone() * x, [U(S23)], True),
    ("contiguous", lambda L, x: x.contiguous(), [U(S23)], True),
]


def _copy(L, x, y):
    z = x.clone()
    z.copy_(y)
    return z * x


def _setitem_basic(L, x, y):
    z = x * 1
    z[0] = y * 3
    return z


def _setitem_slices(L, x, y):
    z = x.clone()
    z[:, 1:] = y
    z[0, 0] = 5.0
    return z * x


def _setitem_adv(L, x, y):
    z = x.sin()
    z[[0, 1], [2, 0]] = y
    return z


def _inplace_view(L, x, y):
    z = x.clone()
    z[0].mul_(y)
    z[1:] = y.sin()
    return z


def _inplace_chain(L, x, y):
    z = x * 2
    z.add_(y).mul_(x).sub_(1).div_(y)
    return z.exp_()


INPLACE = [
    ("copy_", _copy, [U(S23), U(S3)], True),
    ("copy_self", lambda L, x, y: x.clone().copy_(x * 2), [U(S23), U(S3)], True),
    ("setitem_basic", _setitem_basic, [U(S23), U(S3)], True),
    ("setitem_slices", _setitem_slices, [U(S23), U((2, 2))], True),
    ("setitem_adv", _setitem_adv, [U(S23), U((2,))], True),
    ("inplace_view", _inplace_view, [U(S23), AWAY(S3)], True),
    ("inplace_chain", _inplace_chain, [U(S23), AWAY(S3)], True),
]

# in-place variants of the pointwise ops, on a non-leaf (the graph is rebased)
INPLACE += [(n + "_", (lambda L, a, _n=n: getattr(a * 1, _n + "_")()), [dom(S23)],
             n not in NONSMOOTH) for n, dom in UNARY
            if n not in ("asinh", "acosh", "atanh")]   # torch has no derivative for these
INPLACE += [
    ("add_", lambda L, a, b: (a * 1).add_(b, alpha=2), [U(S23), U(S3)], True),
    ("sub_", lambda L, a, b: (a * 1).sub_(b), [U(S23), U(S21)], True),
    ("mul_", lambda L, a, b: (a * 1).mul_(b), [U(S23), U(S13)], True),
    ("div_", lambda L, a, b: (a * 1).div_(b), [U(S23), AWAY(S3)], True),
    ("pow_", lambda L, a, b: (a * 1).pow_(b), [POS(S23), U(S3)], True),
    ("atan2_", lambda L, a, b: (a * 1).atan2_(b), [AWAY(S23), AWAY(S3)], True),
    ("lerp_", lambda L, a, b, w: (a * 1).lerp_(b, w), [U(S23), U(S3), U(S21, 0, 1)], True),
    ("addcmul_", lambda L, a, b, c: (a * 1).addcmul_(b, c), [U(S23), U(S3), U(S21)], True),
    ("addcdiv_", lambda L, a, b, c: (a * 1).addcdiv_(b, c), [U(S23), U(S3), AWAY(S21)], True),
    ("clamp_", lambda L, a: (a * 1).clamp_(-0.5, 0.5), [AWAY(S23, 0.1, 1.0)], False),
    ("masked_fill_", lambda L, a: (a * 1).masked_fill_(L.tensor(MASK), 0.5), [U(S23)], True),
]

CASES = POINTWISE + [(n, f, s, False) for n, f, s in VIEWS] + OTHERS + INPLACE


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def close(e, t, tol=1e-7):
    assert e is not None and t is not None, (e, t)
    assert tuple(e.shape) == tuple(t.shape)
    t = t.detach()
    if t._is_zerotensor():   # torch's symbolic zeros (sgn's gradient) have no storage
        t = torch.zeros(t.shape, dtype=t.dtype)
    np.testing.assert_allclose(e.detach().numpy(), t.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", ["contig", "noncontig"])
@pytest.mark.parametrize("name,fn,specs,smooth", CASES, ids=[c[0] for c in CASES])
def test_op_grads(name, fn, specs, smooth, layout):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrays = [draw(s, rng) for s in specs]
    ex = [leaf(ember, a, layout, k) for k, a in enumerate(arrays)]
    tx = [leaf(torch, a, layout, k) for k, a in enumerate(arrays)]
    for e, t in zip(ex, tx):   # strides of size-1 dims are arbitrary
        assert [s for s, n in zip(e.stride(), e.shape) if n > 1] == \
            [s for s, n in zip(t.stride(), t.shape) if n > 1]
    eo, to = as_tuple(fn(ember, *ex)), as_tuple(fn(torch, *tx))
    assert [type(o.grad_fn).__name__ for o in eo] and len(eo) == len(to)
    for e, t in zip(eo, to):
        close(e, t)
    # first derivatives against torch's, for a random grad_output
    gos = [rng.standard_normal(t.shape) for t in to]
    eg = ember.autograd.grad(eo, ex, [ember.tensor(g) for g in gos], create_graph=smooth,
                             allow_unused=True, materialize_grads=True)
    tg = torch.autograd.grad(to, tx, [torch.tensor(g) for g in gos], create_graph=smooth,
                             allow_unused=True, materialize_grads=True)
    for e, t in zip(eg, tg):
        close(e, t)
    if smooth:   # second derivatives against torch's
        vs = [rng.standard_normal(t.shape) for t in tg]
        pairs = [(e, t, v) for e, t, v in zip(eg, tg, vs) if t.requires_grad]
        if pairs:
            e2 = ember.autograd.grad([p[0] for p in pairs], ex, [ember.tensor(p[2]) for p in pairs],
                                     allow_unused=True, materialize_grads=True)
            t2 = torch.autograd.grad([p[1] for p in pairs], tx, [torch.tensor(p[2]) for p in pairs],
                                     allow_unused=True, materialize_grads=True)
            for e, t in zip(e2, t2):
                close(e, t, 1e-6)
    # finite differences (ember's own gradcheck, like torch.autograd.gradcheck)
    eps = 1e-2 if name in ("to_float32", "double") else 1e-6
    assert gradcheck(lambda *xs: fn(ember, *xs), tuple(ex), eps=eps)
    if smooth and layout == "contig":
        assert gradgradcheck(lambda *xs: fn(ember, *xs), tuple(ex))


def _wrong_square(L):
    class WrongSquare(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x * 2.1   # wrong on purpose
    return WrongSquare.apply


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_gradcheck_catches_a_wrong_derivative(L):
    x = L.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=L.float64, requires_grad=True)
    error = sys.modules[L.__name__ + ".autograd.gradcheck"].GradcheckError
    with pytest.raises(error, match="Jacobian mismatch for output 0 with respect to input 0"):
        L.autograd.gradcheck(_wrong_square(L), (x,))
    assert L.autograd.gradcheck(_wrong_square(L), (x,), raise_exception=False) is False
    assert L.autograd.gradcheck(lambda t: t * t, (x,)) is True
    assert L.autograd.gradgradcheck(lambda t: t.sin() * t, (x,)) is True
