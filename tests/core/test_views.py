"""Every view op, differential against torch: values, shape, stride() and storage_offset()
of the result on hypothesis-made inputs (contiguous, transposed, sliced with steps,
expanded), error types on bad arguments, and writes seen through views in both directions."""
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

SETTINGS = settings(max_examples=40, deadline=None)


def build(m, shape, layout):
    """The same tensor in torch (m=torch) or ember (m=ember): arange data in a given layout."""
    x = m.arange(max(math.prod(shape), 0), dtype=m.float32).reshape(shape)
    for kind, arg in layout:
        if kind == "permute":
            x = x.permute(*arg)
        elif kind == "step":
            d, step = arg
            x = x[(slice(None),) * d + (slice(1 if x.shape[d] > 1 else 0, None, step),)]
        elif kind == "expand":
            d, size = arg
            x = x.unsqueeze(d)
            x = x.expand(*[size if i == d else -1 for i in range(x.dim())])
    return x


@st.composite
def inputs(draw, min_dim=0, max_dim=4):
    """(ember tensor, torch tensor) pairs that share a layout."""
    shape = draw(st.lists(st.integers(0, 4), min_size=min_dim, max_size=max_dim))
    layout, ndim = [], len(shape)
    if ndim >= 2 and draw(st.booleans()):
        layout.append(("permute", tuple(draw(st.permutations(range(ndim))))))
    if ndim >= 1 and draw(st.booleans()):
        layout.append(("step", (draw(st.integers(0, ndim - 1)), draw(st.integers(1, 3)))))
    if ndim < 4 and draw(st.integers(0, 3)) == 0:
        layout.append(("expand", (draw(st.integers(0, ndim)), draw(st.integers(1, 3)))))
    return Pair((build(ember, shape, layout), build(torch, shape, layout)), shape, layout)


class Pair(tuple):
    """(ember tensor, torch tensor) that prints how it was built, for hypothesis reports."""
    def __new__(cls, pair, shape, layout):
        self = super().__new__(cls, pair)
        self.desc = f"build(m, {shape}, {layout})"
        return self

    def __repr__(self):
        return self.desc


def check(e, t):
    """ember result `e` equals torch result `t`: type, shape, strides, offset and values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            check(a, b)
        return
    assert isinstance(e, ember.Tensor)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride()
    assert e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def compare(fn, e, t):
    """Run fn on both; the same error type if torch raises, else the same result."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = fn(t)
        except (RuntimeError, IndexError, ValueError, TypeError) as err:
            with pytest.raises(type(err)):
                fn(e)
            return None
        got = fn(e)
    check(got, want)
    return got, want


def dim_of(draw, x, extra=0):
    """A dim argument, sometimes out of range."""
    n = max(x.dim() + extra, 1)
    return draw(st.integers(-n - 1, n))


def a_shape(draw, numel):
    """A random shape with `numel` elements, sometimes with -1."""
    if numel == 0:
        return draw(st.sampled_from([(0,), (0, 3), (2, 0), (-1, 0), (0, -1), (5,)]))
    dims, n, p = [], numel, 2
    while n > 1:
        while n % p == 0:
            if dims and draw(st.booleans()):
                dims[-1] *= p
            else:
                dims.append(p)
            n //= p
        p += 1
    dims = list(draw(st.permutations(dims)))
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    if dims and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


# ---- view / reshape family ----
@SETTINGS
@given(inputs(), st.data())
def test_view(x, data):
    shape = a_shape(data.draw, x[1].numel())
    compare(lambda a: a.view(shape), *x)
    compare(lambda a: a.view(*shape), *x)


def test_view_incompatible_strides():
    for m in (torch, ember):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            m.arange(6).view(2, 3).t().view(6)


@SETTINGS
@given(inputs(), st.data())
def test_reshape_copies_only_when_needed(x, data):
    shape = a_shape(data.draw, x[1].numel())
    r = compare(lambda a: a.reshape(shape), *x)
    if r is not None and x[1].numel():
        shared = [o.untyped_storage().data_ptr() == i.untyped_storage().data_ptr()
                  for o, i in zip(r, x)]
        assert shared[0] == shared[1]


@SETTINGS
@given(inputs(), st.data())
def test_flatten_unflatten(x, data):
    e, t = x
    s, en = dim_of(data.draw, t), dim_of(data.draw, t)
    compare(lambda a: a.flatten(), *x)
    compare(lambda a: a.flatten(s, en), *x)
    compare(lambda a: ember.flatten(a, s) if isinstance(a, ember.Tensor) else
            torch.flatten(a, s), *x)
    if t.dim():
        d = data.draw(st.integers(-t.dim(), t.dim() - 1))
        sizes = data.draw(st.sampled_from([(t.shape[d],), (1, t.shape[d]), (t.shape[d], -1),
                                           (2, -1), (3, 5)]))
        compare(lambda a: a.unflatten(d, sizes), *x)


@SETTINGS
@given(inputs(), st.data())
def test_squeeze_unsqueeze(x, data):
    e, t = x
    d = dim_of(data.draw, t)
    compare(lambda a: a.squeeze(), *x)
    compare(lambda a: a.squeeze(d), *x)
    dims = tuple(data.draw(st.lists(st.integers(-t.dim(), max(t.dim() - 1, 0)), max_size=3)))
    compare(lambda a: a.squeeze(dims), *x)
    u = dim_of(data.draw, t, extra=1)
    compare(lambda a: a.unsqueeze(u), *x)


@SETTINGS
@given(inputs(), st.data())
def test_transpose_permute_movedim(x, data):
    e, t = x
    d0, d1 = dim_of(data.draw, t), dim_of(data.draw, t)
    compare(lambda a: a.transpose(d0, d1), *x)
    compare(lambda a: a.swapaxes(d0, d1), *x)
    perm = list(data.draw(st.permutations(range(t.dim()))))
    if perm and data.draw(st.booleans()):
        perm[0] = data.draw(st.sampled_from([perm[-1], -1, t.dim()]))
    compare(lambda a: a.permute(*perm), *x)
    compare(lambda a: a.permute(perm), *x)
    compare(lambda a: a.movedim(d0, d1), *x)
    if t.dim() >= 2:
        compare(lambda a: a.movedim((0, 1), (-1, 0)), *x)
    compare(lambda a: a.t(), *x)
    compare(lambda a: a.T, *x)
    compare(lambda a: a.mT, *x)


@SETTINGS
@given(inputs(max_dim=3), st.data())
def test_expand(x, data):
    e, t = x
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    sizes = lead + [data.draw(st.sampled_from([s, -1, 2] if s == 1 else [s, -1, s + 1]))
                    for s in t.shape]
    compare(lambda a: a.expand(*sizes), *x)
    compare(lambda a: a.expand(sizes), *x)
    compare(lambda a: a.expand(sizes).expand_as(a.expand(sizes)), *x)
    compare(lambda a: (ember if isinstance(a, ember.Tensor) else torch).broadcast_to(a, sizes),
            *x)


@SETTINGS
@given(inputs(min_dim=1), st.data())
def test_narrow_select_unbind(x, data):
    e, t = x
    d = dim_of(data.draw, t)
    n = t.shape[d] if -t.dim() <= d < t.dim() else 2
    start = data.draw(st.integers(-n - 1, n + 1))
    length = data.draw(st.integers(0, n + 1))
    compare(lambda a: a.narrow(d, start, length), *x)
    compare(lambda a: a.select(d, start), *x)
    compare(lambda a: a.unbind(d), *x)


@SETTINGS
@given(inputs(min_dim=1), st.data())
def test_split_chunk(x, data):
    e, t = x
    d = data.draw(st.integers(-t.dim(), t.dim() - 1))
    n = t.shape[d]
    size = data.draw(st.integers(0 if n == 0 else 1, 4))
    compare(lambda a: a.split(size, d), *x)
    parts = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=3))
    if data.draw(st.booleans()):
        parts.append(max(n - sum(parts), 0))
    compare(lambda a: a.split(parts, d), *x)
    chunks = data.draw(st.integers(1, 5))
    compare(lambda a: a.chunk(chunks, d), *x)


@SETTINGS
@given(inputs(min_dim=2), st.data())
def test_diagonal(x, data):
    e, t = x
    off = data.draw(st.integers(-4, 4))
    d1, d2 = dim_of(data.draw, t), dim_of(data.draw, t)
    compare(lambda a: a.diagonal(), *x)
    compare(lambda a: a.diagonal(off), *x)
    compare(lambda a: a.diagonal(off, d1, d2), *x)
    compare(lambda a: a.diagonal(offset=off, dim1=d1, dim2=d2), *x)


@SETTINGS
@given(inputs(), st.data())
def test_unfold(x, data):
    e, t = x
    d = dim_of(data.draw, t)
    size, step = data.draw(st.integers(0, 4)), data.draw(st.integers(1, 3))
    compare(lambda a: a.unfold(d, size, step), *x)


@SETTINGS
@given(inputs(max_dim=3), st.data())
def test_as_strided_view_as_detach(x, data):
    e, t = x
    nd = data.draw(st.integers(0, 3))
    size = data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd))
    stride = data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd))
    off = data.draw(st.integers(0, 4))
    if x[1].untyped_storage().nbytes() // 4 > off + sum((s - 1) * st for s, st in
                                                         zip(size, stride) if s):
        compare(lambda a: a.as_strided(size, stride), *x)
        compare(lambda a: a.as_strided(size, stride, off), *x)
    compare(lambda a: a.view_as(a), *x)
    compare(lambda a: a.detach(), *x)
    compare(lambda a: ember.alias(a) if isinstance(a, ember.Tensor) else torch.ops.aten.alias(a),
            *x)


# ---- basic indexing ----
@st.composite
def basic_index(draw, ndim):
    """A tuple of ints (some out of range), slices with steps, None and one Ellipsis."""
    items, left, ell = [], ndim, False
    for _ in range(draw(st.integers(0, ndim + 1))):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        if kind == "int" and left:
            items.append(draw(st.integers(-5, 4)))
            left -= 1
        elif kind == "slice" and left:
            items.append(slice(draw(st.none() | st.integers(-5, 5)),
                               draw(st.none() | st.integers(-5, 5)),
                               draw(st.none() | st.integers(1, 3))))
            left -= 1
        elif kind == "ellipsis" and not ell:
            items.append(Ellipsis)
            ell = True
        else:
            items.append(None)
    return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


@settings(max_examples=80, deadline=None)
@given(inputs(), st.data())
def test_basic_indexing(x, data):
    idx = data.draw(basic_index(x[1].dim()))
    compare(lambda a: a[idx], *x)


def test_indexing_errors():
    for idx in [(0, 0, 0), 5, (slice(None), -4), (slice(None, None, -1),)]:
        compare(lambda a: a[idx], ember.zeros(2, 3), torch.zeros(2, 3))


# ---- writes through views ----
VIEWS = [
    lambda a: a.view(4, 6), lambda a: a.reshape(24), lambda a: a.flatten(1),
    lambda a: a.unflatten(2, (2, 2)), lambda a: a.unsqueeze(0).squeeze(0),
    lambda a: a.transpose(0, 2), lambda a: a.permute(2, 0, 1), lambda a: a.movedim(0, 2),
    lambda a: a[0].t(), lambda a: a.mT, lambda a: a.narrow(1, 1, 2), lambda a: a.select(2, 1),
    lambda a: a.unbind(1)[2], lambda a: a.split(2, 2)[1], lambda a: a.chunk(2, 0)[1],
    lambda a: a.diagonal(0, 1, 2), lambda a: a.unfold(2, 2, 1),
    lambda a: a.as_strided((3,), (5,), 2),
    lambda a: a.view_as(a), lambda a: a.detach(), lambda a: a[1, ::2, None, ...],
    lambda a: a[..., -1], lambda a: a.swapaxes(1, 2), lambda a: a[0].T,
]


@pytest.mark.parametrize("fn", VIEWS, ids=range(len(VIEWS)))
def test_writes_are_shared(fn):
    e, t = ember.arange(24.).reshape(2, 3, 4), torch.arange(24.).reshape(2, 3, 4)
    ev, tv = fn(e), fn(t)
    ev.fill_(-1)
    tv.fill_(-1)
    check(e, t)
    e[1] = 7.0
    t[1] = 7.0
    check(ev, tv)
    ev[...] = ember.arange(float(ev.numel())).reshape(ev.shape)
    tv[...] = torch.arange(float(tv.numel())).reshape(tv.shape)
    check(e, t)


def test_expanded_and_broadcast_views_see_base():
    e, t = ember.zeros(3, 1), torch.zeros(3, 1)
    ev, tv = e.expand(3, 4), t.expand(3, 4)
    e[1, 0] = 5.0
    t[1, 0] = 5.0
    check(ev, tv)


# ---- contiguous / clone ----
@SETTINGS
@given(inputs())
def test_contiguous_and_clone(x):
    e, t = x
    ec, tc = e.contiguous(), t.contiguous()
    check(ec, tc)
    assert (ec is e) == (tc is t)
    ek, tk = e.clone(), t.clone()
    check(ek, tk)
    if t.numel():
        assert ek.data_ptr() != e.data_ptr()
    ek.fill_(3)
    check(e, t)  # the clone owns its memory


LAYOUTS = [lambda m: m.arange(24.).reshape(4, 6).t(),
           lambda m: m.arange(24.).reshape(2, 3, 4).permute(2, 0, 1),
           lambda m: m.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)[::2],
           lambda m: m.arange(3.).reshape(3, 1).expand(3, 4),
           lambda m: m.arange(120.).reshape(2, 3, 4, 5),
           lambda m: m.arange(120.).reshape(2, 5, 3, 4).permute(0, 2, 3, 1)]


@pytest.mark.parametrize("make", LAYOUTS, ids=range(len(LAYOUTS)))
def test_copies_follow_memory_formats(make):
    """clone / *_like / contiguous lay out copies by torch's memory-format rules."""
    e, t = make(ember), make(torch)
    fmts = ["contiguous_format", "preserve_format"]
    if t.dim() == 4:
        fmts.append("channels_last")
        assert e.is_contiguous(memory_format=ember.channels_last) == \
            t.is_contiguous(memory_format=torch.channels_last)
    check(e.clone(), t.clone())
    check(ember.zeros_like(e), torch.zeros_like(t))
    check(ember.empty_like(e).fill_(0), torch.empty_like(t).fill_(0))
    for f in fmts:
        check(e.clone(memory_format=getattr(ember, f)), t.clone(memory_format=getattr(torch, f)))
        check(ember.ones_like(e, memory_format=getattr(ember, f)),
              torch.ones_like(t, memory_format=getattr(torch, f)))
        if f != "preserve_format":
            ec = e.contiguous(memory_format=getattr(ember, f))
            tc = t.contiguous(memory_format=getattr(torch, f))
            check(ec, tc)
            assert (ec is e) == (tc is t)
    assert repr(ember.channels_last) == repr(torch.channels_last).replace("torch", "ember")


def test_empty_strided():
    for size, stride in [((2, 3), (1, 2)), ((2, 3), (4, 1)), ((0, 3), (1, 5)), ((), ())]:
        e, t = ember.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert (tuple(e.shape), e.stride()) == (tuple(t.shape), t.stride())
