"""Differential tests of ember's reductions, scans and selecting reductions against torch.

Hypothesis draws shapes (0-dim, 0-size), dtypes, layouts (transposed, step-sliced, offset),
`dim` (None, int, negative, tuples) and `keepdim`; ember must give torch's dtype, shape and
values, or raise torch's exception type. Ops returning indices are checked for pointing at
the returned values (and equal to torch's where torch fixes them: max/min/argmax, cummax).
Gradients are compared with torch's `.grad` (ties and zeros included), checked by ember's
gradcheck in float64, and second derivatives are compared with torch's.
"""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

try:
    from ._reduction_common import (DTYPES, FLOATS, LAYOUTS, check, compare, dim_args, pair,
                                    points_to, run, same, same_error, seeds, shapes, values)
except ImportError:
    from _reduction_common import (DTYPES, FLOATS, LAYOUTS, check, compare, dim_args, pair,
                                   points_to, run, same, same_error, seeds, shapes, values)

pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom")

# ---- reductions returning one tensor (or var_mean's pair): fn(lib, x, dim, keepdim) ----
REDUCE = {
    "sum": lambda L, x, d, k: L.sum(x, dim=d, keepdim=k),
    "sum_f64": lambda L, x, d, k: x.sum(d, keepdim=k, dtype=L.float64),
    "mean": lambda L, x, d, k: L.mean(x, dim=d, keepdim=k),
    "mean_f64": lambda L, x, d, k: x.mean(d, k, dtype=L.float64),
    "mean_int": lambda L, x, d, k: L.mean(x, d, k, dtype=L.int64),
    "nansum": lambda L, x, d, k: L.nansum(x, dim=d, keepdim=k),
    "nanmean": lambda L, x, d, k: x.nanmean(d, k),
    "amax": lambda L, x, d, k: L.amax(x, () if d is None else d, k),
    "amin": lambda L, x, d, k: x.amin(() if d is None else d, keepdim=k),
    "all": lambda L, x, d, k: L.all(x, dim=d, keepdim=k),
    "any": lambda L, x, d, k: x.any(d, keepdim=k),
    "var": lambda L, x, d, k: L.var(x, dim=d, keepdim=k),
    "var_c0": lambda L, x, d, k: x.var(d, keepdim=k, correction=0),
    "var_c2": lambda L, x, d, k: L.var(x, d, keepdim=k, correction=2),
    "std": lambda L, x, d, k: x.std(d, keepdim=k),
    "std_biased": lambda L, x, d, k: L.std(x, d, False, k),
    "var_mean": lambda L, x, d, k: L.var_mean(x, d, keepdim=k),
    "std_mean": lambda L, x, d, k: L.std_mean(x, d, keepdim=k, correction=0),
    "norm": lambda L, x, d, k: L.norm(x, dim=d, keepdim=k),
    "norm_1": lambda L, x, d, k: x.norm(1, d, k),
    "norm_3": lambda L, x, d, k: L.norm(x, 3, d, k),
    "norm_0.5": lambda L, x, d, k: L.norm(x, 0.5, d, k),
    "norm_0": lambda L, x, d, k: L.norm(x, 0, d, k),
    "norm_inf": lambda L, x, d, k: L.norm(x, math.inf, d, k),
    "norm_-inf": lambda L, x, d, k: x.norm(-math.inf, d, k),
    "norm_f64": lambda L, x, d, k: L.norm(x, 2, d, k, dtype=L.float64),
    "count_nonzero": lambda L, x, d, k: L.count_nonzero(x, d),
    "logsumexp": lambda L, x, d, k: L.logsumexp(x, d, k),
    "prod": lambda L, x, d, k: L.prod(x) if d is None else x.prod(d, k),
    "prod_f64": lambda L, x, d, k: L.prod(x, d, k, dtype=L.float64) if d is not None
    else x.prod(dtype=L.float64),
    "max": lambda L, x, d, k: L.max(x),
    "min": lambda L, x, d, k: x.min(),
    "median": lambda L, x, d, k: L.median(x),
    "nanmedian": lambda L, x, d, k: x.nanmedian(),
    "argmax": lambda L, x, d, k: L.argmax(x, d, k),
    "argmin": lambda L, x, d, k: x.argmin(d, keepdim=k),
    "aminmax": lambda L, x, d, k: L.aminmax(x, dim=d, keepdim=k),
}
INT_DIM = {"prod", "prod_f64", "logsumexp", "argmax", "argmin", "aminmax"}   # int (or None)
NO_TUPLE_NONE = {"logsumexp"}


@settings(max_examples=300)
@given(st.sampled_from(sorted(REDUCE)), shapes(), st.sampled_from(DTYPES),
       st.sampled_from(LAYOUTS), st.booleans(), st.booleans(), st.data(), seeds)
def test_reductions_match_torch(name, shape, dtype, layout, keepdim, nan, data, seed):
    kinds = ("none", "int") if name in INT_DIM else ("none", "int", "tuple")
    if name in NO_TUPLE_NONE:
        kinds = ("int", "tuple") if shape else ("int",)
    dim = data.draw(dim_args(len(shape), kinds), "dim")
    a = values(np.random.default_rng(seed), shape, dtype, ties=name.startswith(("a", "m")),
               nan=nan and name.startswith("nan"))
    check(lambda L, x: REDUCE[name](L, x, dim, keepdim), pair(a, dtype, layout))


# ---- reductions along a dim that return (values, indices) ----
SELECT = {
    "max": lambda L, x, d, k: L.max(x, d, k),
    "min": lambda L, x, d, k: x.min(d, keepdim=k),
    "median": lambda L, x, d, k: L.median(x, d, k),
    "nanmedian": lambda L, x, d, k: x.nanmedian(d, keepdim=k),
    "mode": lambda L, x, d, k: L.mode(x, d, k),
    "kthvalue1": lambda L, x, d, k: L.kthvalue(x, 1, d, k),
    "kthvalue2": lambda L, x, d, k: x.kthvalue(2, d, keepdim=k),
}
FIRST_INDEX = {"max", "min"}     # torch (CPU) promises the first occurrence


@settings(max_examples=150)
@given(st.sampled_from(sorted(SELECT)), shapes(), st.sampled_from(DTYPES),
       st.sampled_from(LAYOUTS), st.booleans(), st.booleans(), st.data(), seeds)
def test_selecting_reductions_match_torch(name, shape, dtype, layout, keepdim, nan, data, seed):
    dim = data.draw(dim_args(len(shape), ("int",)), "dim")
    a = values(np.random.default_rng(seed), shape, dtype, ties=True,
               nan=nan and name != "mode")
    tx, ex = pair(a, dtype, layout)
    t, e = run(lambda L, x: SELECT[name](L, x, dim, keepdim), (tx, ex))
    if isinstance(t, Exception):
        same_error(t, e)
        return
    assert not isinstance(e, Exception), e
    assert type(e).__name__ == type(t).__name__
    same(e.values, t.values, "values")
    assert e.indices.dtype is ember.int64 and tuple(e.indices.shape) == tuple(t.indices.shape)
    if name in FIRST_INDEX or name == "mode":
        same(e.indices, t.indices, "indices")
    else:
        points_to(e.values, e.indices, ex, dim if ex.dim() else 0, keepdim)


# ---- scans ----
SCAN = {
    "cumsum": lambda L, x, d: L.cumsum(x, d),
    "cumsum_f64": lambda L, x, d: x.cumsum(d, dtype=L.float64),
    "cumsum_i8": lambda L, x, d: L.cumsum(x, dim=d, dtype=L.int8),
    "cumprod": lambda L, x, d: x.cumprod(d),
    "cumprod_f32": lambda L, x, d: L.cumprod(x, d, dtype=L.float32),
    "logcumsumexp": lambda L, x, d: L.logcumsumexp(x, d),
    "cummax": lambda L, x, d: L.cummax(x, d),
    "cummin": lambda L, x, d: x.cummin(d),
    "cumsum_": lambda L, x, d: x.clone().cumsum_(d),
    "cumprod_": lambda L, x, d: x.clone().cumprod_(d),
}


@settings(max_examples=120)
@given(st.sampled_from(sorted(SCAN)), shapes(), st.sampled_from(DTYPES),
       st.sampled_from(LAYOUTS), st.booleans(), st.data(), seeds)
def test_scans_match_torch(name, shape, dtype, layout, nan, data, seed):
    dim = data.draw(dim_args(len(shape), ("int",)), "dim")
    a = values(np.random.default_rng(seed), shape, dtype, ties=name.startswith("cum"),
               nan=nan)
    t, e = check(lambda L, x: SCAN[name](L, x, dim), pair(a, dtype, layout))
    if t is not None and name in ("cummax", "cummin"):
        assert type(e).__name__ == name and e._fields == ("values", "indices")
        assert e.values is e[0] and e.indices is e[1]


# ---- quantile ----
@settings(max_examples=80)
@given(st.sampled_from(["quantile", "nanquantile"]), shapes(), st.sampled_from(FLOATS[2:]),
       st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]),
       st.sampled_from(["float", "tensor0", "tensor1"]), st.booleans(), st.booleans(),
       st.data(), seeds)
def test_quantile_matches_torch(name, shape, dtype, interp, qkind, keepdim, nan, data, seed):
    rng = np.random.default_rng(seed)
    dim = data.draw(dim_args(len(shape), ("none", "int")), "dim")
    a = values(rng, shape, dtype, ties=True, nan=nan)
    qs = np.round(rng.random(3), 2)
    qs[0] = data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, qs[0]]))

    def q(L):
        if qkind == "float":
            return float(qs[0])
        return L.tensor(qs[0] if qkind == "tensor0" else qs, dtype=getattr(L, dtype))
    check(lambda L, x: getattr(L, name)(x, q(L), dim, keepdim, interpolation=interp),
          pair(a, dtype, "T" if len(shape) >= 2 else "contig"))


# ---- gradients against torch's .grad (float64; ties and zeros included) ----
GRAD = {
    "sum": lambda L, x: x.sum((0, -1)), "mean": lambda L, x: L.mean(x, 1, True),
    "nansum": lambda L, x: L.nansum(x, 0), "nanmean": lambda L, x: x.nanmean(-1),
    "prod": lambda L, x: x.prod(), "prod_dim": lambda L, x: L.prod(x, 1, True),
    "max": lambda L, x: x.max(), "min": lambda L, x: L.min(x),
    "max_dim": lambda L, x: x.max(1)[0], "min_dim": lambda L, x: L.min(x, 0, True).values,
    "amax": lambda L, x: x.amax((0, 1)), "amin": lambda L, x: L.amin(x, 1),
    "aminmax": lambda L, x: L.aminmax(x, dim=0), "aminmax_all": lambda L, x: L.aminmax(x),
    "var": lambda L, x: x.var(1), "var_c0": lambda L, x: L.var(x, correction=0),
    "std": lambda L, x: x.std((0, 1), keepdim=True), "std_dim": lambda L, x: L.std(x, 0),
    "var_mean": lambda L, x: L.var_mean(x, 1), "std_mean": lambda L, x: L.std_mean(x, 0),
    "logsumexp": lambda L, x: L.logsumexp(x, (0, 1)), "norm": lambda L, x: x.norm(),
    "norm_dim": lambda L, x: L.norm(x, dim=1), "norm_1": lambda L, x: x.norm(1, 0),
    "norm_inf": lambda L, x: L.norm(x, math.inf), "norm_-inf": lambda L, x: L.norm(x, -math.inf, 1),
    "norm_3": lambda L, x: L.norm(x, 3, 1), "norm_1.5": lambda L, x: L.norm(x, 1.5),
    "norm_0.5": lambda L, x: L.norm(x, 0.5, 0), "norm_-1": lambda L, x: L.norm(x, -1.0, 1),
    "norm_nuc": lambda L, x: L.norm(x, "nuc"),
    "cumsum": lambda L, x: x.cumsum(1), "cumprod": lambda L, x: L.cumprod(x, 1),
    "cumprod0": lambda L, x: x.cumprod(0), "logcumsumexp": lambda L, x: L.logcumsumexp(x, 1),
    "cummax": lambda L, x: L.cummax(x, 1)[0], "cummin": lambda L, x: x.cummin(0).values,
    "median": lambda L, x: x.median(), "median_dim": lambda L, x: L.median(x, 1)[0],
    "nanmedian": lambda L, x: L.nanmedian(x), "nanmedian_dim": lambda L, x: x.nanmedian(0)[0],
    "kthvalue": lambda L, x: L.kthvalue(x, x.shape[1], 1)[0], "mode": lambda L, x: x.mode(1)[0],
    "quantile": lambda L, x: L.quantile(x, 0.3), "quantile_dim": lambda L, x: x.quantile(
        L.tensor([0.2, 0.75], dtype=L.float64), 1, True),
    "nanquantile": lambda L, x: L.nanquantile(x, 0.6, 0, interpolation="midpoint"),
}
# where torch does not promise which of several equal elements is picked
SKIP_TIES = {"median_dim", "nanmedian_dim", "kthvalue", "mode", "quantile", "quantile_dim",
             "nanquantile", "norm_nuc"}


def _outputs(r):
    r = r if isinstance(r, tuple) else (r,)
    return [o for o in r if o.dtype in (torch.float64, ember.float64)]


@settings(max_examples=200)
@given(st.sampled_from(sorted(GRAD)), st.tuples(st.integers(1, 4), st.integers(1, 4)),
       st.sampled_from(["normal", "ties", "zeros"]), st.sampled_from(LAYOUTS), seeds)
def test_gradients_match_torch(name, shape, kind, layout, seed):
    if kind != "normal" and name in SKIP_TIES:
        kind = "normal"
    rng = np.random.default_rng(seed)
    a = values(rng, shape, "float64", ties=kind != "normal")
    if kind == "zeros":
        a[rng.random(shape) < 0.4] = 0.0
    tx, ex = pair(a, "float64", layout)
    tx.requires_grad_(True)
    ex.requires_grad_(True)
    touts = _outputs(GRAD[name](torch, tx))
    eouts = _outputs(GRAD[name](ember, ex))
    gs = [rng.standard_normal(tuple(o.shape)) for o in touts]
    for L, outs in ((torch, touts), (ember, eouts)):   # one root: sum of <output, grad>
        sum((o * L.tensor(g)).sum() for o, g in zip(outs, gs)).backward()
    for e, t in zip(eouts, touts):
        assert e.grad_fn.name() == t.grad_fn.name() or name.startswith(("quantile", "nanq",
                                                                         "nanmean", "norm_nuc"))
    if tx.grad is None:
        assert ex.grad is None or not ex.grad.abs().sum().item()
    else:
        same(ex.grad, tx.grad, f"{name} grad")


# ---- gradcheck (ember) and second derivatives against torch ----
def _smooth(shape, seed):
    """Distinct values away from zero: every op here is differentiable at them."""
    rng = np.random.default_rng(seed)
    a = rng.permutation(np.arange(1, int(np.prod(shape)) + 1)).reshape(shape).astype(float)
    return a * 0.37 * np.where(rng.random(shape) < 0.5, -1, 1) + rng.random(shape) * 0.1


@pytest.mark.parametrize("name", sorted(GRAD))
def test_gradcheck(name):
    a = _smooth((3, 4), 0)
    if name in ("cumprod", "cumprod0", "prod", "prod_dim"):
        a[1, 2] = 0.0                     # the zero-safe branch too
    x = ember.tensor(a, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: tuple(_outputs(GRAD[name](ember, x))), (x,))


DOUBLE = sorted(set(GRAD) - {"norm_nuc"})


@pytest.mark.parametrize("name", DOUBLE)
def test_double_backward_matches_torch(name):
    rng = np.random.default_rng(1)
    a = _smooth((3, 4), 1)
    if name.startswith(("prod", "cumprod")):
        a[0, 1] = a[2, 2] = 0.0
    second = {}
    for L in (torch, ember):
        x = L.tensor(a, requires_grad=True)
        outs = _outputs(GRAD[name](L, x))
        vs = [L.tensor(np.random.default_rng(2).standard_normal(tuple(o.shape)),
                       requires_grad=True) for o in outs]
        inner = sum((o * v).sum() for o, v in zip(outs, vs))     # one root
        (g,) = L.autograd.grad(inner, (x,), create_graph=True)
        w = L.tensor(rng.standard_normal(a.shape)) if L is torch else w_e
        if L is torch:
            w_e = ember.tensor(w.numpy())
        gx = L.autograd.grad(((g * w).sum(),), (x, *vs), allow_unused=True)
        second[L] = gx
    for e, t in zip(second[ember], second[torch]):
        if t is None:
            assert e is None or not e.abs().sum().item()
        else:
            same(e, t, f"{name} second derivative")


def test_nuclear_norm_double_backward_is_reported():
    x = ember.tensor(_smooth((3, 3), 2), requires_grad=True)
    (g,) = ember.autograd.grad(ember.norm(x, "nuc"), (x,), create_graph=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        g.sum().backward()


# ---- exceptions ----
f23 = np.arange(6.0).reshape(2, 3)
i23 = np.arange(6).reshape(2, 3)
BAD = [
    ("sum dim out of range", lambda L, x: L.sum(x, 2), f23),
    ("sum repeated dim", lambda L, x: x.sum((0, -2)), f23),
    ("mean of int", lambda L, x: x.mean(), i23),
    ("mean int dtype", lambda L, x: L.mean(x, dtype=L.int32), f23),
    ("nanmean of int", lambda L, x: L.nanmean(x), i23),
    ("var of int", lambda L, x: x.var(0), i23),
    ("std of int", lambda L, x: L.std(x), i23),
    ("var_mean of int", lambda L, x: L.var_mean(x), i23),
    ("max of empty", lambda L, x: x[:0].max(), f23),
    ("min dim empty", lambda L, x: L.min(x[:0], 0), f23),
    ("amax empty dim", lambda L, x: L.amax(x[:0], 0), f23),
    ("amax empty all", lambda L, x: x[:0].amax(), f23),
    ("argmax empty", lambda L, x: L.argmax(x[:0]), f23),
    ("argmax bool", lambda L, x: L.argmax(x > 2), f23),
    ("argmin dim out of range", lambda L, x: x.argmin(-3), f23),
    ("aminmax empty", lambda L, x: L.aminmax(x[:0]), f23),
    ("aminmax tuple dim", lambda L, x: L.aminmax(x, dim=(0, 1)), f23),
    ("prod tuple dim", lambda L, x: L.prod(x, (0, 1)), f23),
    ("logsumexp no dim", lambda L, x: L.logsumexp(x, None), f23),
    ("norm of int", lambda L, x: L.norm(x), i23),
    ("norm nuc 1-d", lambda L, x: L.norm(x[0], "nuc"), f23),
    ("norm nuc 3 dims", lambda L, x: L.norm(x.reshape(1, 2, 3), "nuc"), f23),
    ("norm bad order", lambda L, x: L.norm(x, "abc"), f23),
    ("norm inf empty", lambda L, x: L.norm(x[:0], math.inf), f23),
    ("median bool", lambda L, x: (x > 1).median(), f23),
    ("median dim empty", lambda L, x: L.median(x[:0], 0), f23),
    ("mode dim empty", lambda L, x: L.mode(x[:0], 0), f23),
    ("kthvalue k too big", lambda L, x: L.kthvalue(x, 4), f23),
    ("kthvalue k zero", lambda L, x: x.kthvalue(0, 0), f23),
    ("kthvalue bool", lambda L, x: L.kthvalue(x > 1, 1), f23),
    ("quantile of int", lambda L, x: L.quantile(x, 0.5), i23),
    ("quantile q > 1", lambda L, x: L.quantile(x, 1.5), f23),
    ("quantile q tensor < 0", lambda L, x: x.quantile(L.tensor([-0.1], dtype=L.float64)), f23),
    ("quantile q 2-d", lambda L, x: L.quantile(x, L.tensor([[0.5]], dtype=L.float64)), f23),
    ("quantile q dtype", lambda L, x: L.quantile(x, L.tensor([0.5])), f23),
    ("quantile empty", lambda L, x: L.nanquantile(x[:0], 0.5), f23),
    ("quantile interpolation", lambda L, x: L.quantile(x, 0.5, interpolation="foo"), f23),
    ("quantile tuple dim", lambda L, x: L.quantile(x, 0.5, dim=(0, 1)), f23),
    ("logcumsumexp of int", lambda L, x: L.logcumsumexp(x, 0), i23),
    ("cumsum dim out of range", lambda L, x: x.cumsum(2), f23),
    ("cumsum_ bool", lambda L, x: (x > 1).cumsum_(0), f23),
    ("cumsum_ dtype", lambda L, x: x.clone().cumsum_(0, dtype=L.float32), f23),
    ("cummax dim out of range", lambda L, x: L.cummax(x, -3), f23),
]


@pytest.mark.parametrize("what,fn,a", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs_raise_like_torch(what, fn, a):
    t, e = run(fn, (torch.tensor(a), ember.tensor(a)))
    assert isinstance(t, Exception), f"torch accepted {what}"
    same_error(t, e)


def test_degrees_of_freedom_warning():
    for L in (torch, ember):
        with pytest.warns(UserWarning, match="degrees of freedom"):
            L.var(L.tensor([1.0]))


# ---- named result tuples and integer outputs ----
@pytest.mark.parametrize("call", [
    lambda L, x: L.max(x, 1), lambda L, x: x.min(0), lambda L, x: L.median(x, 1),
    lambda L, x: x.nanmedian(1), lambda L, x: L.mode(x), lambda L, x: L.kthvalue(x, 2),
    lambda L, x: L.cummax(x, 0), lambda L, x: x.cummin(1), lambda L, x: L.aminmax(x),
])
def test_named_tuples(call):
    a = _smooth((3, 4), 3)
    t = call(torch, torch.tensor(a, requires_grad=True))
    e = call(ember, ember.tensor(a, requires_grad=True))
    assert isinstance(e, tuple) and type(e).__name__ == type(t).__name__
    for f in e._fields:
        compare(getattr(e, f), getattr(t, f), f)
    first, second = e
    assert first is e[0] and second is getattr(e, e._fields[1])
    compare(e, t)
    assert repr(e).startswith(f"ember.return_types.{type(t).__name__}(")
    for o in e:
        assert o.requires_grad == (o.dtype is ember.float64)


def test_max_with_a_tensor_is_maximum():
    a, b = _smooth((2, 3), 4), _smooth((3,), 5)
    for fn in (lambda L, x, y: L.max(x, y), lambda L, x, y: x.min(y),
               lambda L, x, y: L.max(x, other=y)):
        check(fn, pair(a, "float64"), pair(b, "float64"))


def test_out_arguments():
    a = _smooth((3, 4), 6)
    for L in (torch, ember):
        x = L.tensor(a)
        s, v, i = L.empty(0, dtype=L.float64), L.empty(0, dtype=L.float64), L.empty(
            0, dtype=L.int64)
        r = L.sum(x, 1, out=s)
        m = L.max(x, 0, out=(v, i))
        assert r is s and m[0] is v and m[1] is i
        if L is torch:
            ts, tv, ti = s, v, i
    same(s, ts)
    same(v, tv)
    same(i, ti)
