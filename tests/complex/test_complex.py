"""Complex dtypes against torch: promotion, creation, the parts as views sharing memory,
view_as_real / view_as_complex (and their errors), conj and its flags, abs / angle / sgn,
pointwise math, matmul, reductions, conversion, printing, and the errors torch gives for ops
it has no complex kernel for."""
import warnings

import numpy as np
import pytest
import torch

import ember

DT = {"complex64": (torch.complex64, ember.complex64),
      "complex128": (torch.complex128, ember.complex128)}


def _c(shape, dtype="complex64", seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dtype)


def both(arr):
    return torch.from_numpy(arr.copy()), ember.from_numpy(arr.copy())


def same(e, t, tol=1e-5):
    assert isinstance(e, ember.Tensor)
    assert str(e.dtype)[6:] == str(t.dtype)[6:], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().resolve_conj().numpy(),
                               t.detach().resolve_conj().numpy(), rtol=tol, atol=tol)


# ---- dtypes and promotion ----
def test_dtype_flags_and_aliases():
    for name in ("complex64", "complex128"):
        t, e = DT[name]
        assert e.is_complex and not e.is_floating_point and e.is_signed == t.is_signed
        assert e.itemsize == t.itemsize
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert repr(ember.finfo(ember.complex64)) == repr(torch.finfo(torch.complex64)).replace(
        "torch.", "ember.")


PAIRS = ["bool", "uint8", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
         "complex128"]


@pytest.mark.parametrize("a", PAIRS)
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_promote_types(a, b):
    t = torch.promote_types(getattr(torch, a), getattr(torch, b))
    e = ember.promote_types(getattr(ember, a), getattr(ember, b))
    assert e.name == str(t)[6:]
    assert ember.can_cast(getattr(ember, b), getattr(ember, a)) == \
        torch.can_cast(getattr(torch, b), getattr(torch, a))


@pytest.mark.parametrize("dt", ["bool", "int32", "float32", "float64", "complex64"])
@pytest.mark.parametrize("scalar", [1j, 2.0, 3])
def test_result_type_with_python_complex_and_0dim(dt, scalar):
    tt = torch.ones(2, dtype=getattr(torch, dt))
    et = ember.ones(2, dtype=getattr(ember, dt))
    assert str(ember.result_type(et, scalar))[6:] == str(torch.result_type(tt, scalar))[6:]
    zt, ze = torch.tensor(1 + 1j, dtype=torch.complex128), ember.tensor(1 + 1j,
                                                                       dtype=ember.complex128)
    assert str(ember.result_type(et, ze))[6:] == str(torch.result_type(tt, zt))[6:]
    same(et + scalar, tt + scalar)
    same(et * ze, tt * zt)


def test_default_dtype_float64_gives_complex128():
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1j]).dtype is ember.complex128
        assert (ember.ones(2, dtype=ember.int64) + 1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(old)


# ---- creation ----
def test_tensor_literals_and_factories():
    same(ember.tensor([1 + 2j, 3 - 1j]), torch.tensor([1 + 2j, 3 - 1j]))
    same(ember.tensor([1, 2.5, 1j]), torch.tensor([1, 2.5, 1j]))
    same(ember.tensor([[1j]], dtype=ember.complex128), torch.tensor([[1j]], dtype=torch.complex128))
    same(ember.zeros(2, dtype=ember.cfloat), torch.zeros(2, dtype=torch.cfloat))
    same(ember.ones(2, 3, dtype=ember.complex128), torch.ones(2, 3, dtype=torch.complex128))
    same(ember.full((2,), 1 + 1j), torch.full((2,), 1 + 1j))
    z = ember.tensor([1 + 2j])
    assert z.is_complex() and not ember.tensor([1.]).is_complex()
    assert ember.is_complex(z) and z.item() == 1 + 2j and z.tolist() == [1 + 2j]
    assert complex(z) == 1 + 2j
    with pytest.raises(RuntimeError):
        float(z)
    with pytest.raises(RuntimeError):
        torch.tensor([1j]).__float__()


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_complex_and_polar(dt):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.1, 2, (3, 1)).astype(dt), rng.uniform(-3, 3, (4,)).astype(dt)
    (ta, ea), (tb, eb) = both(a), both(b)
    same(ember.complex(ea, eb), torch.complex(ta, tb))
    same(ember.polar(ea, eb), torch.polar(ta, tb))


@pytest.mark.parametrize("fn", ["complex", "polar"])
def test_complex_and_polar_errors(fn):
    for x, y in [(np.ones(2, "float32"), np.ones(2, "float64")),
                 (np.ones(2, "int64"), np.ones(2, "int64"))]:
        with pytest.raises(RuntimeError) as te:
            getattr(torch, fn)(torch.from_numpy(x), torch.from_numpy(y))
        with pytest.raises(RuntimeError) as ee:
            getattr(ember, fn)(ember.from_numpy(x), ember.from_numpy(y))
        assert str(ee.value) == str(te.value)


# ---- parts as views ----
def test_real_imag_are_views_sharing_memory():
    arr = _c((3, 4))
    t, e = both(arr)
    for part in ("real", "imag"):
        pe, pt = getattr(e, part), getattr(t, part)
        same(pe, pt)
        assert pe.stride() == pt.stride() and pe.storage_offset() == pt.storage_offset()
        assert pe._base is e
    e.real[0, 0] = 7.0
    e.imag[1] = ember.tensor(5.0)
    t.real[0, 0] = 7.0
    t.imag[1] = torch.tensor(5.0)
    same(e, t)
    e.real = ember.zeros(4)
    t.real = torch.zeros(4)
    same(e, t)
    x = ember.ones(3)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        x.imag


def test_parts_of_a_transposed_view():
    t, e = both(_c((3, 4)))
    pt, pe = t.t()[1:].imag, e.t()[1:].imag
    same(pe, pt)
    assert pe.stride() == pt.stride() and pe.storage_offset() == pt.storage_offset()


def test_view_as_real_and_complex_share_memory():
    t, e = both(_c((2, 3), "complex128"))
    rt, re_ = torch.view_as_real(t), ember.view_as_real(e)
    same(re_, rt)
    assert re_.stride() == rt.stride()
    re_[0, 0, 1] = 9.0
    assert e[0, 0].item() == e[0, 0].item().real + 9j
    back = ember.view_as_complex(re_)
    same(back, torch.view_as_complex(rt.clone().index_put_((torch.tensor(0), torch.tensor(0),
                                                            torch.tensor(1)),
                                                           torch.tensor(9.0, dtype=torch.float64))))
    back[1, 2] = 1 + 1j
    assert e[1, 2].item() == 1 + 1j
    # a transposed pair of dims keeps strides divisible by 2
    x = np.random.default_rng(2).standard_normal((2, 3, 2)).astype("float32")
    (xt, xe) = both(x)
    ct, ce = torch.view_as_complex(xt.transpose(0, 1)), ember.view_as_complex(xe.transpose(0, 1))
    same(ce, ct)
    assert ce.stride() == ct.stride()


def _errors(fn_t, fn_e):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(Exception) as ee:
        fn_e()
    assert type(ee.value) is type(te.value), (ee.value, te.value)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("case", [
    lambda lib: lib.view_as_complex(lib.ones(3, 4)),
    lambda lib: lib.view_as_complex(lib.ones(3, 2).t()),
    lambda lib: lib.view_as_complex(lib.ones(2, 3).t()),
    lambda lib: lib.view_as_complex(lib.ones(5, 2).reshape(-1)[1:9].view(4, 2)),
    lambda lib: lib.view_as_complex(lib.ones(3, 2, dtype=lib.int32)),
    lambda lib: lib.view_as_complex(lib.ones(())),
    lambda lib: lib.view_as_real(lib.ones(3)),
    lambda lib: lib.view_as_real(lib.ones(3, dtype=lib.cfloat).conj()),
])
def test_view_errors(case):
    _errors(lambda: case(torch), lambda: case(ember))


# ---- conj ----
def test_conj_flags():
    t, e = both(_c((3,)))
    ct, ce = t.conj(), e.conj()
    same(ce, ct)
    assert ce.is_conj() == ct.is_conj() is True
    assert ember.is_conj(ce) and not e.is_conj()
    assert not ce.resolve_conj().is_conj() and not ember.conj_physical(e).is_conj()
    same(ce.resolve_conj(), ct.resolve_conj())
    same(ember.conj_physical(e), torch.conj_physical(t))
    assert not ce.conj().is_conj() and not ct.conj().is_conj()
    assert e.resolve_conj() is e and e.resolve_neg() is e and not e.is_neg()
    x = ember.ones(2)
    assert x.conj() is x and not x.conj().is_conj() and ember.conj_physical(x) is x
    e2 = ember.from_numpy(_c((3,)))
    e2.conj_physical_()
    same(e2, torch.from_numpy(_c((3,))).conj_physical_())
    with pytest.raises(RuntimeError, match="conjugate bit"):
        ce.numpy()


def test_H_mH_adjoint():
    t, e = both(_c((2, 3)))
    same(e.H, t.H)
    same(e.mH, t.mH)
    same(ember.adjoint(e), torch.adjoint(t))
    tb, eb = both(_c((4, 2, 3)))
    same(eb.mH, tb.mH)
    x = ember.ones(2, 3)
    assert x.H.stride() == torch.ones(2, 3).H.stride()


# ---- math ----
UNARY = ["abs", "angle", "sgn", "neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh",
         "sinh", "cosh", "reciprocal", "rsqrt", "sigmoid", "log2", "log10", "log1p", "expm1",
         "square", "asin", "acos", "atan", "asinh", "acosh", "atanh", "isnan", "isfinite",
         "isinf", "isreal", "conj", "real", "positive"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_unary(name, dt):
    t, e = both(_c((2, 3), dt))
    tol = 2e-5 if dt == "complex64" else 1e-10
    same(getattr(ember, name)(e), getattr(torch, name)(t), tol)


BINARY = ["add", "sub", "mul", "div", "pow", "eq", "ne"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("other", ["complex", "float64", "scalar", "cscalar"])
def test_binary(name, other):
    t, e = both(_c((2, 3)))
    if other == "complex":
        ot, oe = both(_c((3,), seed=5))
    elif other == "float64":
        ot, oe = both(np.random.default_rng(3).uniform(0.5, 2, (2, 1)))
    else:
        ot = oe = 1.5 if other == "scalar" else 0.5 - 2j
    same(getattr(ember, name)(e, oe), getattr(torch, name)(t, ot), 5e-5)


def test_operators_and_inplace():
    t, e = both(_c((3,)))
    same(1j * e - 2 / e + e ** 2, 1j * t - 2 / t + t ** 2, 5e-5)
    e.mul_(1 + 1j)
    t.mul_(1 + 1j)
    same(e, t)
    et = ember.ones(2)
    with pytest.raises(RuntimeError) as ee:
        et.add_(1j)
    with pytest.raises(RuntimeError) as te:
        torch.ones(2).add_(1j)
    assert str(ee.value) == str(te.value)


def test_matmul_and_reductions():
    (ta, ea), (tb, eb) = both(_c((3, 4))), both(_c((4, 2), seed=1))
    same(ea @ eb, ta @ tb)
    same(ember.matmul(ea, eb[:, 0]), torch.matmul(ta, tb[:, 0]))
    same(ember.einsum("ij,jk->ik", ea, eb), torch.einsum("ij,jk->ik", ta, tb))
    for name in ("sum", "mean", "prod"):
        same(getattr(ea, name)(), getattr(ta, name)(), 1e-4)
        same(getattr(ea, name)(dim=1), getattr(ta, name)(dim=1), 1e-4)
    same(ea.cumsum(0), ta.cumsum(0))
    same(ember.cat([ea, ea]), torch.cat([ta, ta]))


def test_conversion():
    x = np.random.default_rng(0).standard_normal(3).astype("float32")
    t, e = both(x)
    same(e.to(ember.complex64), t.to(torch.complex64))
    same(e.to(ember.cdouble), t.to(torch.cdouble))
    same(e.type_as(ember.tensor([1j])), t.type_as(torch.tensor([1j])))
    zt, ze = both(_c((3,)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        same(ze.to(ember.float32), zt.to(torch.float32))
    assert any("discards the imaginary part" in str(m.message) for m in w)


@pytest.mark.parametrize("name,args", [
    ("relu", ()), ("floor", ()), ("ceil", ()), ("sign", ()), ("clamp", (0, 1)),
    ("lt", (0,)), ("gt", "t"), ("maximum", "t"), ("minimum", "t"), ("erf", ()),
    ("atan2", "t"), ("isposinf", ()), ("signbit", ()), ("fmax", "t"), ("round", ()),
    ("trunc", ()), ("frac", ()),
])
def test_ops_torch_refuses_on_complex(name, args):
    t, e = both(_c((3,)))
    at, ae = ((t,), (e,)) if args == "t" else (args, args)
    with pytest.raises(Exception) as te:
        getattr(torch, name)(t, *at)
    with pytest.raises(Exception) as ee:
        getattr(ember, name)(e, *ae)
    assert isinstance(ee.value, type(te.value)), (ee.value, te.value)


def test_max_min_sort_refuse_complex():
    t, e = both(_c((3,)))
    for name in ("max", "min", "argmax", "sort", "amax"):
        with pytest.raises(RuntimeError):
            getattr(torch, name)(t)
        with pytest.raises(RuntimeError):
            getattr(ember, name)(e)


# ---- printing ----
@pytest.mark.parametrize("values,dtype", [
    ([1 + 2j, 3 - 1j], None), ([[1e-5 + 2j, 3e5 - 1j], [0.5, 1j]], None),
    ([1.5 + 2j], "complex128"), ([0j, -0.0 - 1.25j], None), ([], None), ([], "complex128"),
    (1.5 + 2j, None), ([complex(float("nan"), 1), complex(float("inf"), -2)], None),
])
def test_printing(values, dtype):
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    ekw = {} if dtype is None else {"dtype": getattr(ember, dtype)}
    assert repr(ember.tensor(values, **ekw)) == repr(torch.tensor(values, **kw)).replace(
        "torch.", "ember.")


def test_dtype_shorthand_methods_and_inplace_conj_function():
    x = np.random.default_rng(0).standard_normal(3).astype("float32")
    t, e = both(x)
    same(e.cfloat(), t.cfloat())
    same(e.cdouble(), t.cdouble())
    zt, ze = both(_c((3,)))
    same(ember.conj_physical_(ze), torch.conj_physical_(zt))


def test_random_complex_factories():
    ember.manual_seed(0)
    r = ember.randn(4000, dtype=ember.cfloat)
    assert r.dtype is ember.complex64
    # torch: each part N(0, 1/2), so E|z|^2 = 1 (a 4000-sample mean is within 0.1 of it)
    assert abs((r.abs() ** 2).mean().item() - 1) < 0.1
    assert abs(r.real.var().item() - 0.5) < 0.05
    u = ember.rand(1000, dtype=ember.complex128)
    assert u.dtype is ember.complex128
    assert 0 <= u.real.min().item() and u.imag.max().item() < 1
    assert abs(u.imag.mean().item() - 0.5) < 0.05
    assert ember.randn_like(r).dtype is ember.complex64
