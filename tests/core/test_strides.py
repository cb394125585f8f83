"""The pure shape/stride functions of ember/core/strides.py, differential against torch:
each function's answer is compared with what torch does to a real tensor of the same
shape and strides (made with as_strided, transposes and stepped slices)."""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from ember.core import strides as S

small_shape = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
pos_shape = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


def torch_strided(shape, stride):
    """A torch tensor with exactly this shape and stride, over a big enough storage."""
    span = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 1
    return torch.arange(max(span, 1), dtype=torch.float32).as_strided(shape, stride)


@st.composite
def layouts(draw):
    """(shape, stride) of contiguous, transposed, stepped-slice and size-1-padded tensors."""
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=4))
    t = torch.empty(shape)
    if t.dim() >= 2 and draw(st.booleans()):
        perm = draw(st.permutations(range(t.dim())))
        t = t.permute(*perm)
    if t.dim() >= 1 and draw(st.booleans()):
        d = draw(st.integers(0, t.dim() - 1))
        step = draw(st.integers(1, 3))
        t = t[(slice(None),) * d + (slice(None, None, step),)]
    if draw(st.booleans()):
        t = t.unsqueeze(draw(st.integers(0, t.dim())))
    return tuple(t.shape), tuple(t.stride())


@st.composite
def reshape_of(draw, numel):
    """A random shape with `numel` elements (factor split plus optional 1s and a 0 case)."""
    if numel == 0:
        return tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)
                          .filter(lambda s: 0 in s)))
    factors = []
    n, p = numel, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    dims = []
    for f in factors:
        if dims and draw(st.booleans()):
            dims[draw(st.integers(0, len(dims) - 1))] *= f
        else:
            dims.append(f)
    dims = draw(st.permutations(dims)) if dims else dims
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return tuple(dims)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_view_strides_matches_torch(data):
    shape, stride = data.draw(layouts())
    new_shape = data.draw(reshape_of(math.prod(shape)))
    t = torch_strided(shape, stride)
    got = S.view_strides(shape, stride, new_shape)
    try:
        v = t.view(new_shape)
    except RuntimeError:
        assert got is None
        return
    assert got == tuple(v.stride())


@settings(max_examples=100, deadline=None)
@given(small_shape, st.data())
def test_contiguous_strides_and_is_contiguous(shape, data):
    assert S.contiguous_strides(shape) == tuple(torch.empty(shape).stride())
    stride = tuple(data.draw(st.lists(st.integers(0, 12), min_size=len(shape),
                                      max_size=len(shape))))
    t = torch_strided(shape, stride)
    assert S.is_contiguous(shape, stride) == t.is_contiguous()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_is_contiguous_of_layouts(data):
    shape, stride = data.draw(layouts())
    assert S.is_contiguous(shape, stride) == torch_strided(shape, stride).is_contiguous()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=4).map(tuple), min_size=1, max_size=3))
def test_broadcast_shapes(shapes):
    try:
        want = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="must match the size"):
            S.broadcast_shapes(*shapes)
        return
    assert S.broadcast_shapes(*shapes) == want


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 24), st.lists(st.integers(-2, 6), min_size=0, max_size=4).map(tuple))
def test_infer_size(numel, shape):
    """infer_size is the shape rule of view/reshape: compare with torch's reshape."""
    try:
        want = tuple(torch.empty(numel).reshape(shape).shape)
    except RuntimeError as err:
        with pytest.raises(RuntimeError) as got:
            S.infer_size(shape, numel)
        # the same kind of complaint (several -1, a bad dim, or a size mismatch)
        for key in ("only one dimension", "invalid shape dimension", "is invalid for input",
                    "ambiguous"):
            if key in str(err):
                assert key in str(got.value)
        return
    assert S.infer_size(shape, numel) == want


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 4), st.integers(-6, 6))
def test_wrap_dim(ndim, dim):
    t = torch.empty((2,) * ndim)
    try:
        want = t.transpose(dim, dim) is not None and (dim % max(ndim, 1))
    except IndexError:
        with pytest.raises(IndexError, match="Dimension out of range"):
            S.wrap_dim(dim, ndim)
        return
    assert S.wrap_dim(dim, ndim) == want


def test_wrap_dims_repeated():
    with pytest.raises(RuntimeError):
        torch.empty(2, 3).sum((0, -2))
    with pytest.raises(RuntimeError, match="multiple times"):
        S.wrap_dims((0, -2), 2)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_expand_strides(data):
    shape, stride = data.draw(layouts())
    t = torch_strided(shape, stride)
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    new = lead + [data.draw(st.sampled_from([s, -1, 3] if s == 1 else [s, -1, s + 1]))
                  for s in shape]
    try:
        e = t.expand(new)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            S.expand_strides(shape, stride, tuple(new))
        return
    assert S.expand_strides(shape, stride, tuple(new)) == (tuple(e.shape), tuple(e.stride()))


def test_expand_errors():
    t = torch.empty(2, 3)
    for new in [(3,), (-1, 2, 3), (4, 3)]:
        with pytest.raises(RuntimeError):
            t.expand(new)
        with pytest.raises(RuntimeError):
            S.expand_strides((2, 3), (3, 1), new)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_copy_layouts(data):
    """dense_strides_like = the strides of torch's clone/empty_like (preserve_format);
    channels_last strides and contiguity match torch's for 4-D/5-D shapes."""
    nd = data.draw(st.integers(0, 5))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=nd, max_size=nd)))
    stride = tuple(data.draw(st.lists(st.integers(0, 6), min_size=nd, max_size=nd)))
    t = torch_strided(shape, stride)
    assert S.dense_strides_like(shape, stride) == tuple(t.clone().stride())
    assert S.dense_strides_like(shape, stride) == tuple(torch.empty_like(t).stride())
    if nd in (4, 5):
        fmt = torch.channels_last if nd == 4 else torch.channels_last_3d
        want = torch.empty(shape, memory_format=fmt).stride()
        assert S.channels_last_strides(shape) == tuple(want)
        assert S.is_channels_last_contiguous(shape, stride) == t.is_contiguous(memory_format=fmt)
        assert S.is_channels_last_contiguous(shape, want)
