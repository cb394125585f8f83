"""Tensor creation, differential against torch: dtype inference of tensor(), memory sharing
of as_tensor/from_numpy/DLPack, the shape-based constructors and their _like/new_ forms,
arange/linspace/logspace/eye values, and the legacy constructors (ember.Tensor(2, 3),
FloatTensor...)."""
import collections

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember


def same_dtype(e, t):
    return repr(e.dtype).replace("ember.", "") == repr(t.dtype).replace("torch.", "")


def check(e, t, exact=True):
    assert isinstance(e, ember.Tensor)
    assert same_dtype(e, t), (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride()
    assert e.requires_grad == t.requires_grad
    want = t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
    got = e.detach().float().numpy() if e.dtype == ember.bfloat16 else e.detach().numpy()
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float64 else 2e-3,
                                   atol=1e-12)


def both(fn, exact=True):
    """fn(module) on torch and ember: same error type, or the same tensor."""
    try:
        t = fn(torch)
    except (RuntimeError, ValueError, TypeError, IndexError) as err:
        with pytest.raises(type(err)):
            fn(ember)
        return None
    e = fn(ember)
    check(e, t, exact)
    return e, t


DATA = [
    1, 2.5, True, [1, 2], [1.0, 2], [True, False], [True, 1], [True, 1.5], [[1, 2], [3, 4.0]],
    [], [[]], [[], []], (1, 2, 3), [[True], [False]], np.float32(1.5), [np.float32(1.5)],
    [np.int32(1), 2], [1, np.float16(2)], [True, np.int8(3)], [np.float64(1), 2],
    np.array([1, 2], dtype=np.int16), np.array([[1.5]], dtype=np.float64),
    np.array(True), np.zeros((2, 0), np.uint8), [np.array([1, 2]), np.array([3, 4])],
    [[1, 2], [3]], [None], ["a"], [[1], 2], -(2 ** 40), [2 ** 62], [[[0.1, -0.2]]],
]


@pytest.mark.parametrize("data", DATA, ids=[repr(d)[:30] for d in DATA])
def test_tensor_dtype_inference(data):
    both(lambda m: m.tensor(data))
    both(lambda m: m.as_tensor(data))


def test_tensor_from_tensors():
    both(lambda m: m.tensor([m.tensor(1), m.tensor(2.0)]))
    both(lambda m: m.tensor([m.tensor(1), m.tensor(2)]))
    with pytest.warns(UserWarning):  # torch: copy-construct warning; ember warns the same way
        both(lambda m: m.tensor(m.arange(3)))


class _Seq:
    """A user sequence: only __len__ and __getitem__ (torch's reader takes it)."""
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


@pytest.mark.parametrize("data", [
    lambda: collections.deque([1, 2, 3]), lambda: collections.deque([collections.deque([1.5])]),
    lambda: range(4), lambda: [range(2), (5, 6)], lambda: _Seq([0.5, 2]),
    lambda: [_Seq([1, 2]), _Seq([3, 4])]], ids=["deque", "nested-deque", "range",
                                                "range-in-list", "user-seq", "user-seqs"])
def test_tensor_of_any_sequence(data):
    both(lambda m: m.tensor(data()))


def test_tensor_of_a_mapping_is_refused_like_torch():
    with pytest.raises(RuntimeError, match="Could not infer dtype of dict"):
        torch.tensor({1: 2})
    with pytest.raises(RuntimeError, match="Could not infer dtype of dict"):
        ember.tensor({1: 2})


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "uint8", "bool"])
def test_tensor_explicit_dtype(dtype):
    for data in ([1.7, -2.2, 0.0], [[1, 0], [2, 3]], True, np.array([0.5, 3.0])):
        both(lambda m: m.tensor(data, dtype=getattr(m, dtype)))
    both(lambda m: m.tensor([1.5], dtype=getattr(m, dtype), requires_grad=True))


def test_tensor_copies_and_as_tensor_shares():
    for m in (torch, ember):
        a = np.arange(4.0)
        t = m.tensor(a)
        s = m.as_tensor(a)
        a[0] = 9
        assert t[0].item() == 0 and s[0].item() == 9
        x = m.arange(3.0)
        assert m.as_tensor(x) is x
        assert m.as_tensor(x, dtype=m.float64) is not x
        c = m.as_tensor(a, dtype=m.float32)  # a dtype change means a copy
        a[1] = 7
        assert c[1].item() == 1


def test_from_numpy_shares_both_ways():
    for m in (torch, ember):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = m.from_numpy(a)
        assert t.dtype == m.float32 and tuple(t.shape) == (2, 3)
        a[0, 0] = 42
        assert t[0, 0].item() == 42
        t[1, 2] = -1
        assert a[1, 2] == -1
        v = m.from_numpy(a[:, ::2])
        assert v.stride() == (3, 2)
        with pytest.raises(ValueError, match="negative"):
            m.from_numpy(a[:, ::-1])
        with pytest.raises(TypeError):
            m.from_numpy([1, 2])
        ro = np.arange(3.0)
        ro.flags.writeable = False
        with pytest.warns(UserWarning, match="not writ"):
            m.from_numpy(ro)


def test_dlpack_exchange_with_numpy():
    e = ember.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(e)
    a[0, 1] = 50
    assert e[0, 1].item() == 50
    b = np.arange(4, dtype=np.int32)
    t = ember.from_dlpack(b)
    assert t.dtype is ember.int32
    t[2] = 9
    assert b[2] == 9
    tt = torch.from_dlpack(b)  # torch as the oracle of what the exchange gives
    assert tuple(t.shape) == tuple(tt.shape) and t.stride() == tt.stride()
    ember_to_torch = torch.from_dlpack(e)
    assert ember_to_torch.tolist() == e.tolist()


SIZES = st.lists(st.integers(0, 4), max_size=3)
DTYPES = st.sampled_from([None, "float32", "float64", "int64", "int32", "bool", "float16"])


@settings(max_examples=40, deadline=None)
@given(SIZES, DTYPES, st.booleans(), st.sampled_from(["zeros", "ones", "empty"]))
def test_shape_constructors(size, dtype, rg, name):
    kw = lambda m: {} if dtype is None else {"dtype": getattr(m, dtype)}  # noqa: E731
    fix = (lambda x: x.zero_()) if name == "empty" else (lambda x: x)
    rg = rg and dtype in (None, "float32", "float64", "float16")
    both(lambda m: fix(getattr(m, name)(*size, **kw(m)).detach()).requires_grad_(rg))
    both(lambda m: fix(getattr(m, name)(tuple(size), requires_grad=rg, **kw(m)).detach())
         .requires_grad_(rg))
    assert getattr(ember, name)(size, requires_grad=rg, **kw(ember)).requires_grad == rg
    base = lambda m: m.arange(24.0).reshape(2, 3, 4)[:, ::2].transpose(0, 2)  # noqa: E731
    both(lambda m: fix(getattr(m, name + "_like")(base(m), **kw(m))))


def test_shape_constructor_errors():
    both(lambda m: m.zeros(2, -1))
    both(lambda m: m.ones((2, 3.0)))
    both(lambda m: m.zeros(2, 3, requires_grad=True, dtype=m.int64))
    both(lambda m: m.full((2,), 1.5, dtype=m.int64, requires_grad=True))


@pytest.mark.parametrize("fill", [1, 2.5, True, -3, 0])
def test_full(fill):
    both(lambda m: m.full((2, 3), fill))
    both(lambda m: m.full([2], fill, dtype=m.float64))
    both(lambda m: m.full((), fill))
    both(lambda m: m.full_like(m.zeros(2, 2, dtype=m.int32), fill))
    both(lambda m: m.full_like(m.zeros(2, 2), fill, dtype=m.float64))


number = st.one_of(st.integers(-20, 20), st.floats(-20, 20, allow_nan=False).map(
    lambda x: round(x, 2)))


@settings(max_examples=80, deadline=None)
@given(number, st.none() | number, st.none() | number.filter(lambda s: s != 0),
       st.sampled_from([None, "float32", "float64", "int64", "int32"]))
def test_arange(start, end, step, dtype):
    kw = (lambda m: {}) if dtype is None else (lambda m: {"dtype": getattr(m, dtype)})
    if end is None:
        both(lambda m: m.arange(start, **kw(m)), exact=False)
    elif step is None:
        both(lambda m: m.arange(start, end, **kw(m)), exact=False)
    else:
        both(lambda m: m.arange(start, end, step, **kw(m)), exact=False)


def test_arange_errors():
    both(lambda m: m.arange(0, 5, 0))
    both(lambda m: m.arange(5, 0, 1))
    both(lambda m: m.arange(0, 5, -1))
    both(lambda m: m.arange(0, 1, 0.1), exact=False)  # torch's length rule: ceil((end-start)/step)
    both(lambda m: m.arange(-1, 1, 0.2), exact=False)
    both(lambda m: m.arange(m.tensor(3)))


@settings(max_examples=60, deadline=None)
@given(number, number, st.integers(0, 12), st.sampled_from([None, "float64", "int64"]))
def test_linspace_logspace(start, end, steps, dtype):
    kw = (lambda m: {}) if dtype is None else (lambda m: {"dtype": getattr(m, dtype)})
    both(lambda m: m.linspace(start, end, steps, **kw(m)), exact=False)
    if dtype != "int64":
        s, e = start / 10, end / 10
        both(lambda m: m.logspace(s, e, steps, **kw(m)), exact=False)
        both(lambda m: m.logspace(s, e, steps, base=2.0, **kw(m)), exact=False)


def test_linspace_errors():
    both(lambda m: m.linspace(0, 1, -1))


@pytest.mark.parametrize("args", [(3,), (2, 4), (0,), (3, 0), (-1,)])
def test_eye(args):
    both(lambda m: m.eye(*args))
    both(lambda m: m.eye(*args, dtype=m.int64))
    both(lambda m: m.eye(*args, dtype=m.bool))


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_new_methods(dtype):
    base = lambda m: m.ones(2, dtype=getattr(m, dtype))  # noqa: E731
    both(lambda m: base(m).new_tensor([1, 2, 3]))
    both(lambda m: base(m).new_tensor([1.5], dtype=m.float16))
    both(lambda m: base(m).new_zeros(2, 3))
    both(lambda m: base(m).new_zeros((2, 3)))
    both(lambda m: base(m).new_ones((3,), dtype=m.int8))
    both(lambda m: base(m).new_full((2, 2), 7))
    both(lambda m: base(m).new_empty((0, 2)))
    both(lambda m: base(m).new_empty(2, 2).fill_(0))
    if dtype == "float64":
        both(lambda m: base(m).new_zeros(2, requires_grad=True))


def test_legacy_constructors():
    both(lambda m: m.Tensor([1.0, 2.0]))
    both(lambda m: m.Tensor([[1, 2]]))
    both(lambda m: m.Tensor(2, 3).zero_())
    both(lambda m: m.Tensor((2, 3)))
    both(lambda m: m.Tensor(0))
    both(lambda m: m.Tensor())
    both(lambda m: m.Tensor(m.arange(3)))
    both(lambda m: m.FloatTensor(m.arange(3.0)))
    both(lambda m: m.FloatTensor(m.arange(3)))  # another dtype: TypeError
    for m in (torch, ember):
        src = m.arange(3)
        alias = m.Tensor(src)
        alias[0] = 5  # Tensor(tensor) and LongTensor(long tensor) share memory
        assert src[0].item() == 5
        m.LongTensor(src)[1] = 6
        assert src[1].item() == 6
    for name in ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor",
                 "HalfTensor", "ByteTensor", "ShortTensor", "CharTensor"]:
        both(lambda m: getattr(m, name)([1, 0, 2]))
        both(lambda m: getattr(m, name)(2, 3).zero_())
        assert isinstance(getattr(ember, name)([1]), ember.Tensor)
        for dt in ["float32", "float64", "int64", "int32", "bool", "float16"]:
            x = ember.zeros(1, dtype=getattr(ember, dt))
            y = torch.zeros(1, dtype=getattr(torch, dt))
            assert isinstance(x, getattr(ember, name)) == isinstance(y, getattr(torch, name))
    assert isinstance(ember.tensor([1.0]), ember.Tensor)
