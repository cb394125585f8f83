"""ember._foreach_* against torch._foreach_*: every op, out-of-place and in place, each form
of the second argument (number, list of numbers, list of tensors, one tensor), values,
dtypes, gradients, and torch's errors for empty or mismatched lists."""
import math

import numpy as np
import pytest
import torch

import ember

UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
         "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
         "trunc").split()
SHAPES = [(3,), (2, 4), ()]


def _lists(seed=0, lo=0.1, hi=0.9, dtype=np.float64):
    rng = np.random.default_rng(seed)
    arrs = [rng.uniform(lo, hi, s).astype(dtype) for s in SHAPES]
    return [torch.tensor(a) for a in arrs], [ember.tensor(a) for a in arrs]


def _same(es, ts, tol=1e-12):
    assert len(es) == len(ts)
    for e, t in zip(es, ts):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    if not hasattr(ember.Tensor, name):
        pytest.skip(f"Tensor.{name} is another helper's op, not in this tree")
    ts, es = _lists()
    _same(getattr(ember, f"_foreach_{name}")(es), getattr(torch, f"_foreach_{name}")(ts))
    r = getattr(ember, f"_foreach_{name}_")(es)
    getattr(torch, f"_foreach_{name}_")(ts)
    assert r is es
    _same(es, ts)


def _other_forms(seed):
    ts, es = _lists(seed, 0.5, 2.0)
    return [("scalar", 1.5, 1.5), ("scalar list", [0.5, 2.0, 3.0], [0.5, 2.0, 3.0]),
            ("tensor list", ts, es), ("tensor", torch.tensor(2.5, dtype=torch.float64),
                                      ember.tensor(2.5, dtype=ember.float64))]


# torch has a single-Tensor overload only for add, sub, mul, div
BINARY = [(n, f) for n in ("add", "sub", "mul", "div", "clamp_min", "clamp_max", "maximum",
                           "minimum", "pow")
          for f in range(4) if f < 3 or n in ("add", "sub", "mul", "div")]


@pytest.mark.parametrize("name,form", BINARY)
def test_binary(name, form):
    label, to, eo = _other_forms(1)[form]
    ts, es = _lists(2)
    _same(getattr(ember, f"_foreach_{name}")(es, eo), getattr(torch, f"_foreach_{name}")(ts, to))
    getattr(ember, f"_foreach_{name}_")(es, eo)
    getattr(torch, f"_foreach_{name}_")(ts, to)
    _same(es, ts)


def test_alpha_and_scalar_pow():
    ts, es = _lists(3)
    t2, e2 = _lists(4)
    _same(ember._foreach_add(es, e2, alpha=-0.3), torch._foreach_add(ts, t2, alpha=-0.3))
    ember._foreach_sub_(es, e2, alpha=2)
    torch._foreach_sub_(ts, t2, alpha=2)
    _same(es, ts)
    _same(ember._foreach_pow(2.0, es), torch._foreach_pow(2.0, ts))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", ["default", 0.5, [0.5, -1.0, 2.0], "tensor"])
def test_addcmul_addcdiv(name, value):
    ts, es = _lists(5)
    t1, e1 = _lists(6, 0.5, 1.5)
    t2, e2 = _lists(7, 0.5, 1.5)
    kw_t = kw_e = {}
    if value == "tensor":
        args_t, args_e = (torch.tensor([0.5, -1.0, 2.0]),), (ember.tensor([0.5, -1.0, 2.0]),)
    elif value == "default":
        args_t = args_e = ()
    else:
        args_t = args_e = (value,)
    _same(getattr(ember, f"_foreach_{name}")(es, e1, e2, *args_e, **kw_e),
          getattr(torch, f"_foreach_{name}")(ts, t1, t2, *args_t, **kw_t))
    getattr(ember, f"_foreach_{name}_")(es, e1, e2, *args_e)
    getattr(torch, f"_foreach_{name}_")(ts, t1, t2, *args_t)
    _same(es, ts)


@pytest.mark.parametrize("weight", [0.25, "scalar list", "tensor list"])
def test_lerp(weight):
    ts, es = _lists(8)
    t1, e1 = _lists(9)
    if weight == "scalar list":
        wt = we = [0.1, 0.5, 0.9]
    elif weight == "tensor list":
        wt, we = _lists(10)
    else:
        wt = we = weight
    _same(ember._foreach_lerp(es, e1, we), torch._foreach_lerp(ts, t1, wt))
    ember._foreach_lerp_(es, e1, we)
    torch._foreach_lerp_(ts, t1, wt)
    _same(es, ts)


@pytest.mark.parametrize("ord", [1, 2, math.inf, 3.0])
def test_norm_max_powsum(ord):
    ts, es = _lists(11, -2.0, 2.0, np.float32)
    _same(ember._foreach_norm(es, ord), torch._foreach_norm(ts, ord), 1e-5)
    _same(ember._foreach_norm(es, ord, dtype=ember.float64),
          torch._foreach_norm(ts, ord, dtype=torch.float64), 1e-5)
    _same(ember._foreach_max(es), torch._foreach_max(ts))
    _same(ember._foreach_powsum(es, 3), torch._foreach_powsum(ts, 3), 1e-5)


def test_copy_zero_clone_mm():
    ts, es = _lists(12)
    t2, e2 = _lists(13)
    c = ember._foreach_clone(es)
    assert all(a is not b for a, b in zip(c, es))
    _same(c, torch._foreach_clone(ts))
    ember._foreach_copy_(es, e2)
    torch._foreach_copy_(ts, t2)
    _same(es, ts)
    assert ember._foreach_zero_(es) is es
    torch._foreach_zero_(ts)
    _same(es, ts)
    rng = np.random.default_rng(0)
    a = [rng.standard_normal((2, 3)), rng.standard_normal((4, 2))]
    b = [rng.standard_normal((3, 2)), rng.standard_normal((2, 5))]
    _same(ember._foreach_mm([ember.tensor(x) for x in a], [ember.tensor(x) for x in b]),
          torch._foreach_mm([torch.tensor(x) for x in a], [torch.tensor(x) for x in b]))


def test_gradients_flow_through_out_of_place_ops():
    rng = np.random.default_rng(14)
    xs = [rng.standard_normal(s) for s in ((3,), (2, 2))]
    tx = [torch.tensor(x, requires_grad=True) for x in xs]
    ex = [ember.tensor(x, requires_grad=True) for x in xs]
    for lib, v in ((torch, tx), (ember, ex)):
        out = lib._foreach_addcmul(lib._foreach_mul(v, 3.0), v, v, 0.5)
        out = lib._foreach_exp(out)
        sum(o.sum() for o in lib._foreach_norm(out)).backward()
    _same([x.grad for x in ex], [x.grad for x in tx], 1e-10)


def test_errors_match_torch():
    ts, es = _lists(15)
    cases = [(lambda L, a: L._foreach_add(a, [1.0]), "same number of elements as scalar list"),
             (lambda L, a: L._foreach_add(a, a[:1]),
              "Tensor lists must have the same number of tensors, got 3 and 1"),
             (lambda L, a: L._foreach_add([], 1.0), "at least one tensor"),
             (lambda L, a: L._foreach_norm([]), "at least one tensor")]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn(torch, ts)
        with pytest.raises(RuntimeError, match=msg):
            fn(ember, es)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch._foreach_add_([torch.ones(2, dtype=torch.int64)], 1.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ember._foreach_add_([ember.ones(2, dtype=ember.int64)], 1.5)
    _same(ember._foreach_add([ember.ones(2, dtype=ember.int64)], 1.5),
          torch._foreach_add([torch.ones(2, dtype=torch.int64)], 1.5))
