"""The Tensor's data-layer API, differential against torch: metadata (Size, stride, offsets,
storage, version counter), conversions (to, float(), item, tolist, numpy, Python number
protocols) and printing (repr/str identical to torch's after "torch." -> "ember.")."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

DT = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
      "float64"]


def pair(data, dtype=None):
    e = ember.tensor(data, dtype=None if dtype is None else getattr(ember, dtype))
    t = torch.tensor(data, dtype=None if dtype is None else getattr(torch, dtype))
    return e, t


def same_dtype(e, t):
    return repr(e).replace("ember.", "") == repr(t).replace("torch.", "")


# ---- metadata ----
def test_size_is_a_tuple():
    e, t = ember.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert isinstance(e.shape, ember.Size) and isinstance(e.shape, tuple)
    assert repr(e.shape) == repr(t.shape).replace("torch", "ember")
    assert str(e.size()) == str(t.size()).replace("torch", "ember")
    assert e.shape == t.shape == (2, 3, 4)
    assert isinstance(e.shape[1:], ember.Size) and e.shape[1:] == t.shape[1:]
    assert e.shape[-1] == 4 and e.shape.numel() == t.shape.numel() == 24
    assert ember.Size([2, 3]) == torch.Size([2, 3])
    for f in (lambda s: s + (3,), lambda s: (1,) + s, lambda s: s * 2, lambda s: 2 * s,
              lambda s: s[::-1]):
        assert repr(f(ember.Size([2, 5]))) == repr(f(torch.Size([2, 5]))).replace("torch",
                                                                                 "ember")
    for s in (torch.Size([2]), ember.Size([2])):
        with pytest.raises(TypeError):
            s + [3]
    assert repr(ember.Size([])) == repr(torch.Size([])).replace("torch", "ember")
    for d in (0, 1, -1, -3):
        assert e.size(d) == t.size(d) and e.stride(d) == t.stride(d)
    for d in (3, -4):
        with pytest.raises(IndexError):
            t.size(d)
        with pytest.raises(IndexError):
            e.size(d)
        with pytest.raises(IndexError):
            e.stride(d)


@pytest.mark.parametrize("dtype", DT)
def test_metadata(dtype):
    make = lambda m: m.zeros(3, 4, dtype=getattr(m, dtype))[:, 1::2]  # noqa: E731
    e, t = make(ember), make(torch)
    for name in ("dim", "ndimension", "numel", "nelement", "stride", "storage_offset",
                 "is_contiguous", "element_size", "is_floating_point", "is_signed"):
        assert getattr(e, name)() == getattr(t, name)(), name
    for name in ("ndim", "nbytes", "itemsize", "is_leaf", "requires_grad"):
        assert getattr(e, name) == getattr(t, name), name
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    assert e.data_ptr() - e.untyped_storage().data_ptr() == \
        t.data_ptr() - t.untyped_storage().data_ptr()
    assert str(e.device) == str(t.device) and e.is_cuda == t.is_cuda


def test_version_counter():
    for m in (torch, ember):
        x = m.zeros(4)
        v = x[1:3]
        v0 = x._version
        x.add_(1)
        assert x._version == v0 + 1 and v._version == x._version
        v.mul_(2)
        assert x._version == v0 + 2
        x[0] = 3.0
        assert v._version == v0 + 3
        x.fill_(0)
        x.zero_()
        x.copy_(m.ones(4))
        assert x._version == v0 + 6
        x + 1  # out-of-place ops don't bump
        assert x._version == v0 + 6


# ---- conversions ----
@pytest.mark.parametrize("src", DT)
@pytest.mark.parametrize("dst", DT)
def test_to_dtype(src, dst):
    e, t = pair([0, 1, 3, 100], src)
    for m, x in ((ember, e), (torch, t)):
        y = x.to(getattr(m, dst))
        assert (y is x) == (src == dst)
        assert x.to(getattr(m, dst), copy=True) is not x
    assert same_dtype(e.to(getattr(ember, dst)).dtype, t.to(getattr(torch, dst)).dtype)
    assert e.to(getattr(ember, dst)).tolist() == t.to(getattr(torch, dst)).tolist()


def test_to_other_forms():
    e, t = pair([1.5, -2.25, 3.0])
    o_e, o_t = ember.zeros(1, dtype=ember.float64), torch.zeros(1, dtype=torch.float64)
    assert e.to(o_e).dtype is ember.float64 and t.to(o_t).dtype is torch.float64
    assert e.to("cpu") is e and t.to("cpu") is t
    assert e.to("cpu", ember.float16).dtype is ember.float16
    assert e.to(device="cpu", dtype=ember.int32).tolist() == \
        t.to(device="cpu", dtype=torch.int32).tolist()
    for name in ("float", "double", "half", "bfloat16", "int", "long", "bool", "short", "char",
                 "byte"):
        assert same_dtype(getattr(e, name)().dtype, getattr(t, name)().dtype)
        assert getattr(e, name)().tolist() == getattr(t, name)().tolist()
    i_e, i_t = pair([1, 2], "int32")
    assert e.type_as(i_e).tolist() == t.type_as(i_t).tolist()
    assert e.type() == t.type()  # ember keeps torch's type names ('torch.FloatTensor')


@pytest.mark.parametrize("dtype", DT)
def test_item_tolist(dtype):
    for data in ([[1, 0], [2, 5]], 3, [7], []):
        e, t = pair(data, dtype)
        assert e.tolist() == t.tolist()
        assert type(e.tolist()) is type(t.tolist())
        if t.numel() == 1:
            assert e.item() == t.item() and type(e.item()) is type(t.item())
        else:
            with pytest.raises(RuntimeError):
                t.item()
            with pytest.raises(RuntimeError):
                e.item()


def test_numpy_and_array_protocol():
    for m in (torch, ember):
        x = m.arange(6.0).reshape(2, 3)
        a = x.numpy()
        a[0, 0] = 10
        assert x[0, 0].item() == 10
        x[1, 1] = -1
        assert a[1, 1] == -1
        assert np.asarray(x).shape == (2, 3)
        assert np.asarray(x, dtype=np.int32).dtype == np.int32
        t = x.t().numpy()
        assert t.strides == (4, 12)
        r = m.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="requires grad"):
            r.numpy()
        assert r.detach().numpy().tolist() == [1.0, 1.0]
        assert r.numpy(force=True).tolist() == [1.0, 1.0]


def test_python_protocols():
    e, t = pair([[1, 2], [3, 4]])
    assert len(e) == len(t) == 2
    rows_e, rows_t = list(e), list(t)
    assert [r.tolist() for r in rows_e] == [r.tolist() for r in rows_t]
    rows_e[0][0] = 9  # iteration yields views, like torch
    assert e[0, 0].item() == 9
    for m in (torch, ember):
        s = m.tensor(5)
        with pytest.raises(TypeError):
            len(s)
        with pytest.raises(TypeError):
            iter(s)
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(m.tensor([1, 2]))
        assert bool(m.tensor([0.0])) is False and bool(m.tensor(2)) is True
        assert int(m.tensor(3.7)) == 3 and float(m.tensor([2])) == 2.0
        assert [10, 20, 30][m.tensor(1)] == 20
        with pytest.raises(TypeError):
            [10, 20][m.tensor(1.0)]
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            int(m.tensor([1, 2]))
        assert f"{m.tensor(2.5):.2f}" == "2.50"
    with pytest.raises(TypeError):
        [1][torch.tensor([0, 1])]
    with pytest.raises(TypeError):
        [1][ember.tensor([0, 1])]


# ---- printing ----
def rep(x):
    return repr(x).replace("torch.", "ember.")


SCALES = [1, 1e-5, 1e-3, 0.5, 1e3, 1e5, 1e9, 1e12]


@st.composite
def printable(draw):
    dtype = draw(st.sampled_from(DT))
    shape = draw(st.sampled_from([(), (0,), (3,), (2, 3), (2, 0, 3), (4, 5, 2), (40,), (3, 400),
                                  (1001,), (12, 90), (2, 2, 2, 2), (7, 1)]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    kind = draw(st.sampled_from(["normal", "ints", "mixed", "special"]))
    scale = draw(st.sampled_from(SCALES))
    v = rng.standard_normal(shape) * scale
    if kind == "ints":
        v = np.round(v)
    elif kind == "mixed":
        v = np.where(rng.random(shape) < 0.5, np.round(v), v * 1e-4)
    elif kind == "special" and v.size:
        v.reshape(-1)[:3] = [np.inf, -np.inf, np.nan][:min(3, v.size)]
    if dtype == "bool":
        v = v > 0
    elif dtype in ("uint8",):
        v = np.abs(np.nan_to_num(v, posinf=3, neginf=2)) % 256
    elif "int" in dtype:
        v = np.clip(np.nan_to_num(v, posinf=7, neginf=-7), -100, 100)
    return v, dtype, draw(st.booleans()) and dtype.startswith(("float", "bfloat"))


OPTIONS = st.fixed_dictionaries({}, optional={
    "precision": st.sampled_from([1, 2, 6]), "linewidth": st.sampled_from([30, 120]),
    "sci_mode": st.booleans(), "edgeitems": st.sampled_from([1, 2]),
    "threshold": st.sampled_from([4, 50])})


@settings(max_examples=150, deadline=None)
@given(printable(), st.none() | OPTIONS)
def test_repr_matches_torch(case, opts):
    v, dtype, rg = case
    t = torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=rg)
    e = ember.tensor(v, dtype=getattr(ember, dtype), requires_grad=rg)
    try:
        if opts:
            torch.set_printoptions(**opts)
            ember.set_printoptions(**opts)
        assert repr(e) == rep(t)
        assert str(e) == str(t).replace("torch.", "ember.")
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
        ember.set_printoptions(profile="default", sci_mode=None)


def test_repr_extras():
    cases = [lambda m: m.tensor([1.0, 2.0], dtype=m.float64),
             lambda m: (m.ones(2, requires_grad=True) * 2),
             lambda m: m.zeros(0, 3, dtype=m.int32),
             lambda m: m.tensor(3.0),
             lambda m: m.tensor(-0.0),
             lambda m: m.tensor([1e-10, 1.0]),
             lambda m: m.arange(2000).reshape(2, 1000),
             lambda m: m.tensor([123456789.0, 1.0]),
             lambda m: m.tensor([[True, False]]),
             lambda m: m.tensor([1.5], dtype=m.float16)]
    for f in cases:
        assert repr(f(ember)) == rep(f(torch))


@pytest.mark.parametrize("opts", [dict(precision=2), dict(threshold=5), dict(edgeitems=1,
                         threshold=5), dict(linewidth=30), dict(sci_mode=True),
                         dict(sci_mode=False), dict(profile="short"), dict(profile="full")])
def test_set_printoptions(opts):
    data = [[1.123456, -20.5, 3e-3, 4.0, 5.5, 6.25, 1000.0]] * 4
    try:
        torch.set_printoptions(**opts)
        ember.set_printoptions(**opts)
        for d in (data, [1, 2, 3, 4, 5, 6, 7, 8], [1e-8, 1.0]):
            assert repr(ember.tensor(d)) == rep(torch.tensor(d))
    finally:
        torch.set_printoptions(profile="default")
        ember.set_printoptions(profile="default")
    assert repr(ember.tensor(data)) == rep(torch.tensor(data))
