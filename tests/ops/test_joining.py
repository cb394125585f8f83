"""Joining, splitting and rearranging ops differential against torch: cat, stack and the
*stack family, tensor_split and h/v/dsplit, flip/fliplr/flipud, roll, rot90, repeat, tile,
repeat_interleave, broadcast_tensors, meshgrid, tril/triu (+ in-place, indices), one_hot,
atleast_Nd, ravel. Values, view geometry where the result is a view, gradients (compared with
torch's), gradcheck in float64, and torch's exception types for bad input."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from _oracle import same_error, both  # noqa: E402
import ember.nn.functional as EF
import torch.nn.functional as TF
from ember.autograd import gradcheck, gradgradcheck

SETTINGS = settings(max_examples=25, deadline=None)


# ---- helpers (local to this file) -----------------------------------------------------------
def assert_close(e, t, views=False):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, tuple) == isinstance(t, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            assert_close(a, b, views)
        return
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert str(e.dtype).replace("ember.", "") == str(t.dtype).replace("torch.", "")
    np.testing.assert_allclose(np.asarray(e.detach()._data, np.float64),
                               t.detach().double().numpy(), rtol=1e-6, atol=1e-6)
    if views and e.numel():   # (the strides of an empty tensor carry no meaning)
        assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()


def check(fe, ft, arrays, layouts=None, grad=True, views=False):
    """Same inputs to both; compare outputs (tensor or tuple), then leaf gradients of a fixed
    random weighting of all floating outputs."""
    layouts = layouts or ["C"] * len(arrays)
    pairs = [both(a, lay, grad) for a, lay in zip(arrays, layouts)]
    eo = fe(*[p[1][0] for p in pairs])
    to = ft(*[p[1][1] for p in pairs])
    assert_close(eo, to, views)
    eos = eo if isinstance(eo, (tuple, list)) else (eo,)
    tos = to if isinstance(to, (tuple, list)) else (to,)
    rng = np.random.default_rng(3)
    le = lt = None
    for a, b in zip(eos, tos):
        if b.requires_grad:
            w = rng.standard_normal(tuple(b.shape))
            x = (a * ember.tensor(w, dtype=a.dtype)).sum()
            y = (b * torch.tensor(w, dtype=b.dtype)).sum()
            le, lt = (x, y) if le is None else (le + x, lt + y)
    if lt is None:
        return
    le.backward()
    lt.backward()
    for (e, t), _ in pairs:
        if t.requires_grad:
            assert (e.grad is None) == (t.grad is None)
            if t.grad is not None:
                assert_close(e.grad, t.grad)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def leaf(*shape, seed=0):
    return ember.tensor(rnd(*shape, seed=seed), requires_grad=True)


layouts = st.sampled_from(["C", "T", "step"])
shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


# ---- cat / stack / *stack --------------------------------------------------------------------
@SETTINGS
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple), n=st.integers(1, 3),
       data=st.data(), lay=layouts, dtypes=st.sampled_from([("float32", "float32"),
                                                             ("float32", "float64"),
                                                             ("int64", "float32")]))
def test_cat_stack(shape, n, data, lay, dtypes):
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    arrays = [rnd(*shape, seed=k).astype(dtypes[k % 2]) for k in range(n)]
    check(lambda *x: ember.stack(x, d), lambda *x: torch.stack(x, d), arrays, [lay] * n)
    check(lambda *x: ember.stack(list(x), d - 1 if d < 0 else d + 1),
          lambda *x: torch.stack(list(x), d - 1 if d < 0 else d + 1), arrays, [lay] * n)
    grown = [rnd(*[s + k if i == d % len(shape) else s for i, s in enumerate(shape)],
                 seed=k).astype(dtypes[k % 2]) for k in range(n)]
    check(lambda *x: ember.cat(x, d), lambda *x: torch.cat(x, d), grown, [lay] * n)


def test_stack_node_name():
    x = ember.ones(2, requires_grad=True)
    assert ember.stack([x, x]).grad_fn.name() == "StackBackward0"
    assert gradgradcheck(lambda a, b: ember.stack([a * a, b], 1), (leaf(2, 3), leaf(2, 3, seed=1)))


@pytest.mark.parametrize("shapes", [[(3,), (2,)], [(), ()], [(2, 3), (2, 1)],
                                    [(2, 2, 1), (2, 1, 1)], [(3,), (3,)], [(1, 3), (3,)]])
def test_stack_family(shapes):
    arrays = [rnd(*s, seed=k) for k, s in enumerate(shapes)]
    for name in ("hstack", "vstack", "row_stack", "dstack", "column_stack"):
        try:
            expected = getattr(torch, name)([torch.tensor(a) for a in arrays])
        except RuntimeError:
            same_error(lambda: getattr(ember, name)([ember.tensor(a) for a in arrays]),
                       lambda: getattr(torch, name)([torch.tensor(a) for a in arrays]))
            continue
        del expected
        check(lambda *x: getattr(ember, name)(x), lambda *x: getattr(torch, name)(x), arrays)


# ---- splitting -------------------------------------------------------------------------------
@SETTINGS
@given(size=st.integers(0, 8), other=st.integers(1, 3), data=st.data(), lay=layouts)
def test_tensor_split(size, other, data, lay):
    sections = data.draw(st.integers(1, 5))
    cuts = data.draw(st.lists(st.integers(-10, 10), max_size=4))
    x = rnd(other, size)
    for dim in (1, -1):
        check(lambda a: ember.tensor_split(a, sections, dim), lambda a: torch.tensor_split(
            a, sections, dim), [x], [lay], views=lay == "C")
        check(lambda a: ember.tensor_split(a, cuts, dim), lambda a: torch.tensor_split(
            a, cuts, dim), [x], [lay], views=lay == "C")
    check(lambda a: a.tensor_split(ember.tensor(cuts, dtype=ember.int64), 1),
          lambda a: a.tensor_split(torch.tensor(cuts, dtype=torch.int64), 1), [x])
    check(lambda a: a.tensor_split(ember.tensor(sections), 1),
          lambda a: a.tensor_split(torch.tensor(sections), 1), [x])


def test_hvd_split():
    x = rnd(4, 6, 2)
    for name, arg in [("hsplit", 3), ("hsplit", [1, 4]), ("vsplit", 2), ("vsplit", [3]),
                      ("dsplit", 2), ("dsplit", [1])]:
        check(lambda a: getattr(ember, name)(a, arg), lambda a: getattr(torch, name)(a, arg),
              [x], views=True)
    check(lambda a: ember.hsplit(a, 2), lambda a: torch.hsplit(a, 2), [rnd(4)])


# ---- flip / roll / rot90 -----------------------------------------------------------------------
@SETTINGS
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple), data=st.data(),
       lay=layouts, dtype=st.sampled_from(["float32", "float64", "int64"]))
def test_flip_roll_rot90(shape, data, lay, dtype):
    nd = len(shape)
    x = (rnd(*shape) * 5).astype(dtype)
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), max_size=nd, unique_by=lambda d: d % nd))
    check(lambda a: ember.flip(a, dims), lambda a: torch.flip(a, dims), [x], [lay])
    check(lambda a: a.flipud(), lambda a: a.flipud(), [x], [lay])
    if nd >= 2:
        check(lambda a: ember.fliplr(a), lambda a: torch.fliplr(a), [x], [lay])
    shifts = [data.draw(st.integers(-7, 7)) for _ in dims]
    if dims:
        check(lambda a: ember.roll(a, shifts, dims), lambda a: torch.roll(a, shifts, dims), [x],
              [lay])
    s0 = shifts[0] if shifts else 3
    check(lambda a: a.roll(s0), lambda a: a.roll(s0), [x], [lay])
    if nd >= 2:
        k = data.draw(st.integers(-5, 5))
        rdims = data.draw(st.sampled_from([[0, 1], [1, 0], [-1, 0], [0, nd - 1]]))
        if rdims[0] % nd != rdims[1] % nd:
            check(lambda a: ember.rot90(a, k, rdims), lambda a: torch.rot90(a, k, rdims), [x],
                  [lay])


def test_flip_roll_rot90_gradcheck():
    assert gradcheck(lambda a: ember.flip(a, (0, 1)), (leaf(2, 3),))
    assert gradcheck(lambda a: ember.roll(a, (1, -2), (1, 0)), (leaf(2, 3),))
    assert gradcheck(lambda a: ember.roll(a, 4), (leaf(2, 3),))
    assert gradcheck(lambda a: ember.rot90(a, 3, (1, 0)), (leaf(2, 3),))
    assert gradgradcheck(lambda a: ember.rot90(a * a), (leaf(2, 3),))


# ---- repeat / tile / repeat_interleave --------------------------------------------------------
@SETTINGS
@given(shape=shapes, data=st.data(), lay=layouts)
def test_repeat_tile(shape, data, lay):
    x = rnd(*shape)
    reps = data.draw(st.lists(st.integers(0, 3), min_size=max(1, len(shape)),
                              max_size=len(shape) + 2))
    check(lambda a: a.repeat(*reps), lambda a: a.repeat(*reps), [x], [lay])
    check(lambda a: a.repeat(reps), lambda a: a.repeat(reps), [x], [lay])
    treps = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    check(lambda a: ember.tile(a, treps), lambda a: torch.tile(a, treps), [x], [lay])
    check(lambda a: a.tile(treps), lambda a: a.tile(treps), [x], [lay])


@SETTINGS
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), data=st.data(),
       lay=layouts)
def test_repeat_interleave(shape, data, lay):
    x = rnd(*shape)
    dim = data.draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    r = data.draw(st.integers(0, 3))
    check(lambda a: a.repeat_interleave(r, dim), lambda a: a.repeat_interleave(r, dim), [x],
          [lay])
    n = x.size if dim is None else shape[dim]
    counts = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    check(lambda a: ember.repeat_interleave(a, ember.tensor(counts), dim),
          lambda a: torch.repeat_interleave(a, torch.tensor(counts), dim), [x], [lay])
    check(lambda a: ember.repeat_interleave(a, ember.tensor([r]), dim),
          lambda a: torch.repeat_interleave(a, torch.tensor([r]), dim), [x], [lay])
    assert_close(ember.repeat_interleave(ember.tensor(counts)),
                 torch.repeat_interleave(torch.tensor(counts)))


def test_repeat_gradcheck():
    assert gradcheck(lambda a: a.repeat(2, 1, 3), (leaf(2, 3),))
    assert gradcheck(lambda a: a.repeat_interleave(ember.tensor([2, 0, 1]), 1), (leaf(2, 3),))
    assert gradgradcheck(lambda a: (a * a).repeat(2, 2), (leaf(2, 3),))


# ---- broadcast_tensors, meshgrid ---------------------------------------------------------------
@pytest.mark.parametrize("shapes", [[(2, 1), (3,)], [(), (2, 2)], [(1, 3), (2, 1), (1,)],
                                    [(0, 1), (3,)]])
def test_broadcast_tensors(shapes):
    arrays = [rnd(*s, seed=k) for k, s in enumerate(shapes)]
    check(lambda *x: ember.broadcast_tensors(*x), lambda *x: torch.broadcast_tensors(*x), arrays,
          views=True)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("shapes", [[(2,), (3,)], [(2,), (3,), (4,)], [(), (3,)], [(4,)],
                                    [(0,), (2,)]])
def test_meshgrid(indexing, shapes):
    arrays = [rnd(*s, seed=k) for k, s in enumerate(shapes)]
    check(lambda *x: ember.meshgrid(*x, indexing=indexing),
          lambda *x: torch.meshgrid(*x, indexing=indexing), arrays, views=True)
    check(lambda *x: ember.meshgrid(list(x), indexing=indexing),
          lambda *x: torch.meshgrid(list(x), indexing=indexing), arrays)


# ---- tril / triu -------------------------------------------------------------------------------
@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=2, max_size=4).map(tuple),
       k=st.integers(-4, 4), lay=layouts, dtype=st.sampled_from(["float64", "int64", "bool"]))
def test_tril_triu(shape, k, lay, dtype):
    x = (rnd(*shape) > 0).astype(dtype) if dtype == "bool" else (rnd(*shape) * 3).astype(dtype)
    check(lambda a: ember.tril(a, k), lambda a: torch.tril(a, k), [x], [lay])
    check(lambda a: a.triu(k), lambda a: a.triu(k), [x], [lay])
    e, t = ember.tensor(x), torch.tensor(x)
    assert e.tril_(k) is e and t.tril_(k) is t
    assert_close(e, t)
    e, t = ember.tensor(x), torch.tensor(x)
    e.triu_(diagonal=k)
    t.triu_(diagonal=k)
    assert_close(e, t)


def test_tril_triu_gradcheck_and_inplace_grad():
    assert gradcheck(lambda a: ember.tril(a, -1), (leaf(3, 4),))
    assert gradcheck(lambda a: ember.triu(a, 1), (leaf(2, 3, 3),))
    a, b = leaf(3, 3), torch.tensor(rnd(3, 3), requires_grad=True)
    (a * 2).tril_().sum().backward()
    (b * 2).tril_().sum().backward()
    assert_close(a.grad, b.grad)


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 3, 1), (3, 5, -2), (0, 3, 0),
                                            (3, 0, 1), (2, 2, 5), (2, 2, -5)])
def test_tri_indices(row, col, offset):
    assert_close(ember.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
    assert_close(ember.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))
    assert_close(ember.tril_indices(row, col, offset, dtype=ember.int32),
                 torch.tril_indices(row, col, offset, dtype=torch.int32))


# ---- one_hot, atleast_Nd, ravel ------------------------------------------------------------
@SETTINGS
@given(shape=shapes, nc=st.sampled_from([-1, 5, 7]), seed=st.integers(0, 99))
def test_one_hot(shape, nc, seed):
    x = np.random.default_rng(seed).integers(0, 5, shape)
    if nc == -1 and x.size == 0:
        same_error(lambda: EF.one_hot(ember.tensor(x), nc), lambda: TF.one_hot(torch.tensor(x), nc))
        return
    assert_close(EF.one_hot(ember.tensor(x), nc), TF.one_hot(torch.tensor(x), nc))


@pytest.mark.parametrize("shape", [(), (2,), (2, 3), (2, 3, 4), (1, 0)])
def test_atleast_ravel(shape):
    x = rnd(*shape)
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        check(lambda a: getattr(ember, name)(a), lambda a: getattr(torch, name)(a), [x])
        check(lambda a, b: getattr(ember, name)(a, b), lambda a, b: getattr(torch, name)(a, b),
              [x, rnd(2)])
        check(lambda a, b: getattr(ember, name)([a, b]), lambda a, b: getattr(torch, name)([a, b]),
              [x, rnd()])
    check(ember.ravel, torch.ravel, [x], ["T"])
    check(lambda a: a.ravel(), lambda a: a.ravel(), [x], views=True)


# ---- bad inputs -------------------------------------------------------------------------------
def test_joining_errors():
    cases = [
        lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 4)]),
        lambda m: m.cat([m.zeros(2, 3), m.zeros(2)]),
        lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 3)], 2),
        lambda m: m.cat([]),
        lambda m: m.cat([m.tensor(1.0)]),
        lambda m: m.stack([m.zeros(2), m.zeros(3)]),
        lambda m: m.stack([]),
        lambda m: m.stack([m.zeros(2)], 2),
        lambda m: m.hstack([]),
        lambda m: m.column_stack([m.zeros(2), m.zeros(3)]),
        lambda m: m.tensor_split(m.arange(10), 0),
        lambda m: m.tensor_split(m.tensor(1), 2),
        lambda m: m.tensor_split(m.arange(10), m.tensor([3.0])),
        lambda m: m.tensor_split(m.arange(10), m.tensor([[3]])),
        lambda m: m.hsplit(m.zeros(2, 4), 3),
        lambda m: m.hsplit(m.tensor(1.0), 1),
        lambda m: m.vsplit(m.zeros(4), 2),
        lambda m: m.dsplit(m.zeros(4, 4), 2),
        lambda m: m.flip(m.zeros(2, 3), [0, -2]),
        lambda m: m.flip(m.zeros(2, 3), [2]),
        lambda m: m.fliplr(m.zeros(2)),
        lambda m: m.flipud(m.tensor(1.0)),
        lambda m: m.roll(m.zeros(2, 3), (1, 2), 0),
        lambda m: m.rot90(m.zeros(2, 3), 1, [0, 1, 2]),
        lambda m: m.rot90(m.zeros(2, 3), 1, [0, 0]),
        lambda m: m.rot90(m.zeros(2), 1, [0, 1]),
        lambda m: m.rot90(m.zeros(2, 3), 1, [0, 2]),
        lambda m: m.zeros(2, 3).repeat(2),
        lambda m: m.zeros(2, 3).repeat(2, -1),
        lambda m: m.repeat_interleave(m.zeros(3), m.tensor([1, -1, 2])),
        lambda m: m.repeat_interleave(m.zeros(3), m.tensor([1, 2])),
        lambda m: m.repeat_interleave(m.zeros(3), m.tensor([[1, 2, 1]])),
        lambda m: m.repeat_interleave(m.tensor([[1, 2, 3]])),
        lambda m: m.repeat_interleave(m.zeros(3), -1),
        lambda m: m.repeat_interleave(m.zeros(3), m.tensor([1.0, 2.0, 1.0])),
        lambda m: m.broadcast_tensors(m.zeros(2, 3), m.zeros(4)),
        lambda m: m.meshgrid(m.zeros(2), m.zeros(3).double(), indexing="ij"),
        lambda m: m.meshgrid(m.zeros(2), m.zeros(3), indexing="foo"),
        lambda m: m.meshgrid([], indexing="xy"),
        lambda m: m.tril(m.zeros(3)),
        lambda m: m.triu(m.zeros(3)),
        lambda m: m.tril_indices(-1, 3),
        lambda m: m.tril_indices(3, 3, dtype=m.float32),
        lambda m: m.nn.functional.one_hot(m.tensor([1], dtype=m.int32)),
        lambda m: m.nn.functional.one_hot(m.tensor([-1])),
        lambda m: m.nn.functional.one_hot(m.tensor([3]), 3),
    ]
    for fn in cases:
        same_error(lambda: fn(ember), lambda: fn(torch))
