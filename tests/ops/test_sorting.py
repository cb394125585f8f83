"""Differential tests of ember's ordering ops against torch: sort, argsort, msort, topk,
unique, unique_consecutive, searchsorted, bucketize, histc, bincount.

Hypothesis draws shapes (0-dim, 0-size), dtypes, layouts and arguments; ember must give
torch's dtype, shape and values (indices equal to torch's where torch fixes them: stable
sorts; otherwise pointing at the returned values), or raise torch's exception type.
Gradients of sort/msort/topk are compared with torch's and checked by gradcheck.
"""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

try:
    from ._reduction_common import (DTYPES, FLOATS, INTS, LAYOUTS, check, compare, dim_args,
                                    pair, points_to, run, same, same_error, seeds, shapes,
                                    values)
except ImportError:
    from _reduction_common import (DTYPES, FLOATS, INTS, LAYOUTS, check, compare, dim_args,
                                   pair, points_to, run, same, same_error, seeds, shapes,
                                   values)


# ---- sort / argsort / msort ----
@settings(max_examples=100)
@given(shapes(), st.sampled_from(DTYPES), st.sampled_from(LAYOUTS), st.booleans(),
       st.booleans(), st.data(), seeds)
def test_stable_sort_matches_torch(shape, dtype, layout, descending, nan, data, seed):
    dim = data.draw(dim_args(len(shape), ("int",)), "dim")
    a = values(np.random.default_rng(seed), shape, dtype, ties=True, nan=nan)
    t, e = check(lambda L, x: L.sort(x, dim=dim, descending=descending, stable=True),
                 pair(a, dtype, layout))
    if t is not None:
        assert type(e).__name__ == "sort" and e.values is e[0] and e.indices is e[1]
        check(lambda L, x: L.argsort(x, dim=dim, descending=descending, stable=True),
              pair(a, dtype, layout))
        check(lambda L, x: x.msort(), pair(a, dtype, layout))


@settings(max_examples=60)
@given(shapes(min_dims=1), st.sampled_from(DTYPES), st.booleans(), st.data(), seeds)
def test_default_sort_values_and_indices(shape, dtype, descending, data, seed):
    """Without stable=True torch fixes the values only; ember's indices must point at them."""
    dim = data.draw(dim_args(len(shape), ("int",)), "dim")
    a = values(np.random.default_rng(seed), shape, dtype, ties=True)
    tx, ex = pair(a, dtype)
    t, e = run(lambda L, x: x.sort(dim, descending), (tx, ex))
    same(e.values, t.values, "values")
    points_to(e.values, e.indices, ex, dim)


# ---- topk ----
@settings(max_examples=100)
@given(shapes(), st.sampled_from(DTYPES), st.sampled_from(LAYOUTS), st.booleans(),
       st.booleans(), st.booleans(), st.data(), seeds)
def test_topk_matches_torch(shape, dtype, layout, largest, sorted_, nan, data, seed):
    dim = data.draw(dim_args(len(shape), ("int",)), "dim")
    n = shape[dim] if shape else 1
    k = data.draw(st.integers(-1, n + 1), "k")
    a = values(np.random.default_rng(seed), shape, dtype, ties=True, nan=nan)
    tx, ex = pair(a, dtype, layout)
    t, e = run(lambda L, x: L.topk(x, k, dim, largest, sorted_), (tx, ex))
    if isinstance(t, Exception):
        same_error(t, e)
        return
    assert type(e).__name__ == "topk"
    if sorted_:
        same(e.values, t.values, "values")
    else:      # torch's order is unspecified: compare as sorted sets
        same(e.values.sort(dim)[0], t.values.sort(dim)[0], "values")
    assert tuple(e.indices.shape) == tuple(t.indices.shape) and e.indices.dtype is ember.int64
    points_to(e.values, e.indices, ex, dim if shape else 0)


# ---- gradients ----
GRAD = {
    "sort": lambda L, x: L.sort(x, 1)[0],
    "sort_desc": lambda L, x: x.sort(dim=0, descending=True, stable=True).values,
    "msort": lambda L, x: L.msort(x),
    "topk": lambda L, x: L.topk(x, 2, 1)[0],
    "topk_small": lambda L, x: x.topk(1, 0, largest=False).values,
}


@settings(max_examples=40)
@given(st.sampled_from(sorted(GRAD)), st.tuples(st.integers(2, 4), st.integers(2, 4)),
       st.sampled_from(LAYOUTS), seeds)
def test_gradients_match_torch(name, shape, layout, seed):
    rng = np.random.default_rng(seed)
    a = values(rng, shape, "float64")
    tx, ex = pair(a, "float64", layout)
    tx.requires_grad_(True)
    ex.requires_grad_(True)
    to, eo = GRAD[name](torch, tx), GRAD[name](ember, ex)
    assert eo.grad_fn.name() == to.grad_fn.name()
    g = rng.standard_normal(tuple(to.shape))
    to.backward(torch.tensor(g))
    eo.backward(ember.tensor(g))
    same(ex.grad, tx.grad, f"{name} grad")


@pytest.mark.parametrize("name", sorted(GRAD))
def test_gradcheck_and_double_backward(name):
    rng = np.random.default_rng(0)
    a = rng.permutation(12).reshape(3, 4) * 0.5 + rng.random((3, 4)) * 0.1
    x = ember.tensor(a, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: GRAD[name](ember, x), (x,))
    second = {}
    for L in (torch, ember):
        x = L.tensor(a, requires_grad=True)
        out = GRAD[name](L, x)
        v = L.tensor(np.ones(tuple(out.shape)) * 0.5, requires_grad=True)
        (g,) = L.autograd.grad((out * v).sum(), (x,), create_graph=True)
        second[L] = L.autograd.grad((g * L.tensor(a)).sum(), (v,))[0]
    same(second[ember], second[torch], "d(grad)/d(grad_output)")


def test_index_outputs_do_not_require_grad():
    x = ember.tensor([[3.0, 1.0], [2.0, 5.0]], requires_grad=True)
    for r in (x.sort(), x.topk(1), x.max(0), x.cummax(1), x.median(1), x.mode(0)):
        assert r[0].requires_grad and not r[1].requires_grad
    assert not x.argsort().requires_grad and not x.argmax().requires_grad


# ---- unique / unique_consecutive ----
@settings(max_examples=80)
@given(shapes(max_side=5), st.sampled_from(DTYPES), st.sampled_from(LAYOUTS),
       st.booleans(), st.booleans(), st.booleans(), st.data(), seeds)
def test_unique_matches_torch(shape, dtype, layout, inverse, counts, use_dim, data, seed):
    dim = data.draw(dim_args(len(shape), ("int",)), "dim") if use_dim else None
    a = values(np.random.default_rng(seed), shape, dtype, ties=True)
    if use_dim and len(shape) and dtype in FLOATS:
        a = np.round(a.astype(np.float32) / 3).astype(a.dtype)   # equal slices happen
    check(lambda L, x: L.unique(x, sorted=True, return_inverse=inverse,
                                return_counts=counts, dim=dim), pair(a, dtype, layout))
    check(lambda L, x: x.unique_consecutive(return_inverse=inverse, return_counts=counts,
                                            dim=dim), pair(a, dtype, layout))


def test_unique_nan_and_unsorted():
    a = np.array([np.nan, 1.0, np.nan, 3.0, 1.0])
    check(lambda L, x: L.unique(x, return_counts=True), pair(a, "float64"))
    check(lambda L, x: L.unique(x, sorted=False), pair(a[1:4:2], "float64"))


def test_unique_has_no_derivative():
    for L in (torch, ember):
        x = L.tensor([2.0, 1.0, 2.0], requires_grad=True)
        u = L.unique(x)
        assert u.requires_grad and u.grad_fn.name() == "Unique2Backward0"
        with pytest.raises(NotImplementedError, match="derivative for '_unique2'"):
            u.sum().backward()


# ---- searchsorted / bucketize ----
@settings(max_examples=100)
@given(st.integers(1, 3), st.integers(0, 5), st.integers(0, 4),
       st.sampled_from(INTS + FLOATS[1:]), st.sampled_from(["int64", "float32", "float64"]),
       st.sampled_from(["none", "right", "side_left", "side_right"]), st.booleans(),
       st.booleans(), st.booleans(), seeds)
def test_searchsorted_matches_torch(nd, n, m, seq_dtype, val_dtype, side, batched_values,
                                    use_sorter, out_int32, seed):
    rng = np.random.default_rng(seed)
    lead = tuple(rng.integers(1, 3, size=nd - 1))
    seq = np.sort(values(rng, lead + (n,), seq_dtype, ties=True), axis=-1)
    vshape = lead + (m,) if (nd > 1 or batched_values) else (m,)
    if nd == 1 and batched_values:
        vshape = (2, m)
    vals = values(rng, vshape, val_dtype, ties=True)
    kw = {"right": True} if side == "right" else {"side": side[5:]} if side != "none" else {}
    kw["out_int32"] = out_int32
    order = np.argsort(rng.random(seq.shape), axis=-1) if use_sorter else None
    if use_sorter:     # give a shuffled sequence and the permutation that sorts it
        shuffled = np.empty_like(seq)
        np.put_along_axis(shuffled, order, seq, -1)
        seq = shuffled

    def fn(L, s, v):
        sorter = None if order is None else L.tensor(order)
        return L.searchsorted(s, v, sorter=sorter, **kw)
    check(fn, pair(seq, seq_dtype), pair(vals, val_dtype))


def test_searchsorted_scalar_and_bucketize():
    b = np.array([1, 3, 5, 7])
    x = np.array([[0, 1, 3], [6, 7, 9]])
    for right in (False, True):
        check(lambda L, s: L.searchsorted(s, 3, right=right), pair(b, "int64"))
        check(lambda L, v, s: L.bucketize(v, s, right=right), pair(x, "int64"),
              pair(b, "int64"))
        check(lambda L, s: L.bucketize(5, s, right=right, out_int32=True), pair(b, "int64"))
    check(lambda L, v, s: L.bucketize(v, s), pair(x * 0.5, "float32"), pair(b, "int64"))


# ---- histc / bincount ----
@settings(max_examples=60)
@given(shapes(max_side=6), st.sampled_from(DTYPES), st.integers(1, 7),
       st.sampled_from([(0, 0), (-2, 2), (0.5, 3.0), (1, 1), (3, 2)]), st.booleans(), seeds)
def test_histc_matches_torch(shape, dtype, bins, rng_, integral, seed):
    a = values(np.random.default_rng(seed), shape, dtype, ties=integral)
    check(lambda L, x: L.histc(x, bins, *rng_), pair(a, dtype, "T" if len(shape) > 1 else
                                                     "contig"))
    check(lambda L, x: x.histc(bins=bins, min=rng_[0], max=rng_[1]), pair(a, dtype))


@settings(max_examples=60)
@given(st.integers(0, 8), st.sampled_from(DTYPES), st.integers(0, 10),
       st.sampled_from(["none", "float32", "float64", "int64", "float16"]), seeds)
def test_bincount_matches_torch(n, dtype, minlength, weights, seed):
    rng = np.random.default_rng(seed)
    a = values(rng, (n,), dtype)
    if dtype in INTS:
        a = np.abs(a.astype(np.int64)).astype(dtype)
    if weights == "none":
        check(lambda L, x: L.bincount(x, minlength=minlength), pair(a, dtype))
    else:
        w = values(rng, (n,), weights)
        check(lambda L, x, y: x.bincount(y, minlength), pair(a, dtype), pair(w, weights))


# ---- exceptions ----
f23 = np.arange(6.0).reshape(2, 3)
i5 = np.array([1, 3, 5, 7, 9])
BAD = [
    ("sort dim out of range", lambda L, x: L.sort(x, 2), f23),
    ("argsort dim out of range", lambda L, x: x.argsort(-3), f23),
    ("topk k too big", lambda L, x: L.topk(x, 4), f23),
    ("topk k negative", lambda L, x: x.topk(-1), f23),
    ("topk bool", lambda L, x: L.topk(x > 1, 1), f23),
    ("unique 0-dim with dim", lambda L, x: L.unique(x[0, 0], dim=0), f23),
    ("unique dim out of range", lambda L, x: L.unique(x, dim=2), f23),
    ("unique empty other dim", lambda L, x: L.unique(x[:0], dim=1), f23),
    ("searchsorted 0-dim sequence", lambda L, x: L.searchsorted(x[0], x), i5),
    ("searchsorted bad side", lambda L, x: L.searchsorted(x, x, side="up"), i5),
    ("searchsorted right vs side", lambda L, x: L.searchsorted(x, x, right=True,
                                                               side="left"), i5),
    ("searchsorted shapes", lambda L, x: L.searchsorted(x.reshape(1, 5), x.reshape(5, 1)), i5),
    ("searchsorted scalar n-d", lambda L, x: L.searchsorted(x.reshape(1, 5), 3), i5),
    ("searchsorted sorter size", lambda L, x: L.searchsorted(x, x, sorter=x[:2]), i5),
    ("searchsorted sorter range", lambda L, x: L.searchsorted(x, x, sorter=x), i5),
    ("searchsorted bool", lambda L, x: L.searchsorted(x > 2, x > 2), i5),
    ("bucketize 2-d boundaries", lambda L, x: L.bucketize(x, x.reshape(1, 5)), i5),
    ("histc int", lambda L, x: L.histc(x), i5),
    ("histc bins 0", lambda L, x: L.histc(x.double(), 0), i5),
    ("histc min > max", lambda L, x: L.histc(x.double(), 3, 5, 2), i5),
    ("histc inf range", lambda L, x: L.histc(x.double() / 0), i5),
    ("bincount negative", lambda L, x: L.bincount(x - 4), i5),
    ("bincount 2-d", lambda L, x: L.bincount(x.reshape(1, 5)), i5),
    ("bincount float", lambda L, x: L.bincount(x.double()), i5),
    ("bincount minlength", lambda L, x: L.bincount(x, minlength=-1), i5),
    ("bincount weights", lambda L, x: L.bincount(x, x[:2].double()), i5),
]


@pytest.mark.parametrize("what,fn,a", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs_raise_like_torch(what, fn, a):
    t, e = run(fn, (torch.tensor(a), ember.tensor(a)))
    assert isinstance(t, Exception), f"torch accepted {what}"
    same_error(t, e)


def test_out_arguments():
    a = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    res = {}
    for L in (torch, ember):
        v, i = L.empty(0, dtype=L.float64), L.empty(0, dtype=L.int64)
        r = L.sort(L.tensor(a), 1, out=(v, i))
        assert r[0] is v and r[1] is i
        res[L] = (v, i)
    compare(res[ember], res[torch])
