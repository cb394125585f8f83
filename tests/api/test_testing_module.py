"""ember.testing against torch.testing: assert_close / assert_allclose must pass and fail on
the same inputs, with the same exception type and (dtype names aside) the same message, and
make_tensor must give tensors of the same properties (values are random) and the same errors.

Inputs are described once with NumPy / Python values and built for each library by `build`,
so both see the very same numbers.
"""
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
import ember.testing
from ember.testing import assert_close, make_tensor

class T:
    """A tensor description: values (NumPy), dtype name, and how to lay it out."""

    def __init__(self, values, dtype, *, transpose=False, requires_grad=False, device=None,
                 param=False):
        self.values, self.dtype = np.asarray(values), dtype
        self.transpose, self.requires_grad = transpose, requires_grad
        self.device, self.param = device, param


def build(obj, lib):
    """The description `obj` as `lib`'s objects (containers keep their Python types)."""
    if isinstance(obj, T):
        dt = getattr(lib, obj.dtype)
        v = obj.values
        if obj.dtype == "bfloat16":
            t = lib.tensor(v.astype(np.float32)).to(dt)
        else:
            t = lib.tensor(v, dtype=dt)
        if obj.transpose:
            t = t.t().contiguous().t()     # same values, column-major strides
        if obj.device == "meta":
            t = t.to("meta")
        if obj.requires_grad:
            t.requires_grad_(True)
        if obj.param:
            t = lib.nn.Parameter(t)
        return t
    if isinstance(obj, (list, tuple)):
        return type(obj)(build(x, lib) for x in obj)
    if isinstance(obj, dict):
        return {k: build(v, lib) for k, v in obj.items()}
    return obj


def normalize(text):
    # ember's names for torch's: dtypes print as ember.float32, the class is ember's Tensor
    return text.replace("ember.core.tensor.Tensor", "torch.Tensor").replace("ember.", "torch.")


def outcome(fn, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except Exception as e:      # noqa: BLE001  (the exception is what is compared)
        return type(e).__name__, normalize(str(e))
    return None, ""


def check_agree(actual, expected, full_message=True, **kwargs):
    ref = outcome(torch.testing.assert_close, build(actual, torch), build(expected, torch),
                  **kwargs)
    got = outcome(assert_close, build(actual, ember), build(expected, ember), **kwargs)
    assert got[0] == ref[0], (got, ref)
    if ref[0] == "RuntimeError":
        # torch's text here is an internal-error report with its own object reprs
        return ref
    if full_message:
        assert got[1] == ref[1], (got[1], ref[1])
    else:
        assert got[1].splitlines()[:1] == ref[1].splitlines()[:1], (got[1], ref[1])
    return ref


# ---- tensors: values, dtypes, tolerances, NaN/inf, complex ----

FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
COMPLEX_DTYPES = ["complex64", "complex128"]

special = st.sampled_from([0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 1e-6, 1e30])


@st.composite
def float_case(draw):
    dtype = draw(st.sampled_from(FLOAT_DTYPES + COMPLEX_DTYPES))
    shape = draw(st.sampled_from([(), (1,), (4,), (2, 3), (2, 1, 3)]))
    n = int(np.prod(shape))
    base = draw(st.lists(st.one_of(st.floats(-1e3, 1e3, width=32), special),
                         min_size=n, max_size=n))
    # perturbations from none to large, scaled to each value: near and far from tolerance
    scale = draw(st.sampled_from([0.0, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1.0]))
    noise = draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))
    a = np.array(base, dtype=np.float64).reshape(shape)
    e = a + np.array(noise).reshape(shape) * scale * (np.abs(np.nan_to_num(a)) + 1)
    if dtype.startswith("complex"):
        a = a + 1j * a[::-1].reshape(shape) if shape else a + 1j * a
        e = e + 1j * e[::-1].reshape(shape) if shape else e + 1j * e
    if draw(st.booleans()):
        e = np.where(np.isnan(a), np.nan, e)        # NaNs in the same places
    tol = draw(st.sampled_from([None, (0.0, 0.0), (1e-3, 1e-3), (0.0, 1e-2), (1e-1, 0.0)]))
    kw = {} if tol is None else dict(rtol=tol[0], atol=tol[1])
    kw["equal_nan"] = draw(st.booleans())
    return T(a, dtype), T(e, dtype), kw


@settings(max_examples=400)
@given(float_case())
def test_float_and_complex_tensors_agree(case):
    actual, expected, kw = case
    check_agree(actual, expected, **kw)


@st.composite
def int_case(draw):
    dtype = draw(st.sampled_from(INT_DTYPES + ["bool"]))
    shape = draw(st.sampled_from([(), (3,), (2, 2)]))
    n = int(np.prod(shape))
    lo, hi = (0, 1) if dtype == "bool" else ((0, 200) if dtype == "uint8" else (-100, 100))
    a = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    e = [x if draw(st.booleans()) else draw(st.integers(lo, hi)) for x in a]
    tol = draw(st.sampled_from([None, (0.0, 0.0), (0.1, 0.0), (0.0, 2.0), (0.0, 150.0),
                                (0.5, 1.0)]))
    kw = {} if tol is None else dict(rtol=tol[0], atol=tol[1])
    return (T(np.array(a).reshape(shape), dtype), T(np.array(e).reshape(shape), dtype), kw)


@settings(max_examples=400)
@given(int_case())
def test_integer_and_bool_tensors_agree(case):
    actual, expected, kw = case
    check_agree(actual, expected, **kw)


def test_integer_tolerance_edges():
    # torch compares integers in the default float dtype: no wrap-around (uint8 3 - 250),
    # and int64/int32 values beyond float32's 24-bit mantissa round before differencing
    cases = [
        ([3, 0, 100], [250, 1, 200], "uint8", dict(rtol=0.1, atol=1.0)),
        ([3, 0, 100], [250, 1, 200], "uint8", dict(rtol=0.0, atol=200.0)),
        ([100], [-100], "int8", dict(rtol=0.0, atol=199.0)),
        ([2 ** 62, 2 ** 40 + 1], [-2 ** 62, 2 ** 40], "int64", dict(rtol=0.0, atol=0.5)),
        ([16777217], [16777216], "int32", dict(rtol=0.0, atol=0.5)),
        ([2 ** 62, -2 ** 62], [-2 ** 62, 2 ** 62], "int64", {}),
        ([True, False], [False, False], "bool", dict(rtol=0.1, atol=0.5)),
    ]
    for a, e, dtype, kw in cases:
        check_agree(T(a, dtype), T(e, dtype), **kw)
        check_agree(T(e, dtype), T(a, dtype), **kw)
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        check_agree(T([2 ** 40 + 1], "int64"), T([2 ** 40], "int64"), rtol=0.0, atol=0.5)
        check_agree(T([7], "int64"), T([4], "int64"), rtol=0.0, atol=0.0)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("da,db", [("float32", "float64"), ("float16", "bfloat16"),
                                   ("int64", "float32"), ("int8", "uint8"),
                                   ("complex64", "float64"), ("bool", "int32")])
@pytest.mark.parametrize("check_dtype", [True, False])
def test_mismatched_dtypes(da, db, check_dtype):
    v = np.array([1.0, 0.0, 3.0])
    check_agree(T(v, da), T(v, db), check_dtype=check_dtype)
    check_agree(T(v, da), T(v + 0.5, db), check_dtype=check_dtype)


def test_default_tolerances_per_dtype_and_promoted_pairs():
    # just inside / just outside each dtype's default tolerance, alone and mixed
    for dtype, (rtol, atol) in [("float16", (1e-3, 1e-5)), ("bfloat16", (0.016, 1e-5)),
                                ("float32", (1.3e-6, 1e-5)), ("float64", (1e-7, 1e-7))]:
        for factor in (0.5, 2.0):
            e = np.array([1.0, 100.0, 1e-4])
            a = e + factor * (atol + rtol * e)
            check_agree(T(a, dtype), T(e, dtype))
            check_agree(T(a, "float64"), T(e, dtype), check_dtype=False)


def test_shape_stride_device_layout_mismatches():
    v = np.arange(6.0).reshape(2, 3)
    check_agree(T(v, "float32"), T(v.reshape(3, 2), "float32"))
    check_agree(T(v, "float32"), T(v.reshape(6), "float32"))
    check_agree(T(v, "float32"), T(v, "float32", transpose=True))             # stride unchecked
    check_agree(T(v, "float32"), T(v, "float32", transpose=True), check_stride=True)
    check_agree(T(v, "float32"), T(v, "float32", device="meta"))
    check_agree(T(v, "float32"), T(v, "float32", device="meta"), check_device=False)
    check_agree(T(v, "float32", device="meta"), T(v + 1, "float32", device="meta"))
    # sparse vs dense: the layout is checked, or (check_layout=False) densified and compared
    s = ember.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    d = ember.tensor([[0.0, 1.0], [2.0, 0.0]])
    ref = outcome(torch.testing.assert_close, torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(),
                  torch.tensor([[0.0, 1.0], [2.0, 0.0]]))
    assert outcome(assert_close, s, d) == ref
    for layout_check in (True, False):
        ref = outcome(torch.testing.assert_close,
                      torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(),
                      torch.tensor([[0.0, 1.0], [2.5, 0.0]]), check_layout=layout_check)
        got = outcome(assert_close, s, ember.tensor([[0.0, 1.0], [2.5, 0.0]]),
                      check_layout=layout_check)
        assert got == ref


def test_sparse_pairs():
    def coo(lib, idx, val):
        return lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(val), (3, 3))
    cases = [
        ([[0, 1], [1, 2]], [1.0, 2.0], [[0, 1], [1, 2]], [1.0, 2.0]),
        ([[0, 1], [1, 2]], [1.0, 2.0], [[0, 1], [1, 2]], [1.0, 2.5]),
        ([[0, 1], [1, 2]], [1.0, 2.0], [[0, 2], [1, 2]], [1.0, 2.0]),
        ([[0, 1], [1, 2]], [1.0, 2.0], [[0], [1]], [1.0]),
    ]
    for ia, va, ie, ve in cases:
        ref = outcome(torch.testing.assert_close, coo(torch, ia, va), coo(torch, ie, ve))
        assert outcome(assert_close, coo(ember, ia, va), coo(ember, ie, ve)) == ref
    dense = [[1.0, 0.0], [0.0, 2.0]]
    for other in ([[1.0, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 2.5]], [[1.0, 3.0], [0.0, 2.0]]):
        ref = outcome(torch.testing.assert_close, torch.tensor(dense).to_sparse_csr(),
                      torch.tensor(other).to_sparse_csr())
        got = outcome(assert_close, ember.tensor(dense).to_sparse_csr(),
                      ember.tensor(other).to_sparse_csr())
        assert got == ref


def test_requires_grad_and_subclasses():
    v = np.array([1.0, 2.0])
    check_agree(T(v, "float32", requires_grad=True), T(v, "float32"))
    check_agree(T(v, "float32", param=True), T(v, "float32"))
    check_agree(T(v, "float32", param=True), T(v, "float32"), allow_subclasses=False)
    check_agree(T(v, "float32", param=True), T(v + 1, "float32"))


# ---- scalars, None, numpy, containers ----

SCALARS = [0, 1, -3, 2 ** 70, 0.0, 1.0, 1.0 + 1e-8, 1.0 + 1e-6, float("nan"), float("inf"),
           -float("inf"), 1e-300, 1j, 1 + 1e-9j, complex(float("nan"), 0), True, False, None,
           np.float32(1.0), np.float64(1.0), np.int64(1), np.bool_(True), np.complex64(1j)]


@pytest.mark.parametrize("kw", [{}, dict(check_dtype=False), dict(equal_nan=True),
                                dict(rtol=0.0, atol=0.0), dict(rtol=1e-3, atol=0.5)])
def test_scalar_pairs_agree(kw):
    for a in SCALARS:
        for e in SCALARS:
            check_agree(a, e, **kw)


def test_numpy_inputs():
    a = np.array([1.0, 2.0, 3.0])
    for e in (a.copy(), a + 1e-9, a + 1, a.astype(np.float32), np.array(3.0),
              np.array([1, 2, 3])):
        check_agree(a, e)
    check_agree(a, T(a, "float64"))         # an array and a tensor are not related
    check_agree(T(a, "float64"), a)
    check_agree(T(np.array(1.0), "float64"), 1.0)
    check_agree(T(a, "float64"), [1.0, 2.0, 3.0])
    check_agree(np.array(["a"]), np.array(["a"]))
    check_agree("abc", "abc")
    check_agree({1, 2}, {1, 2})


def test_containers():
    x = np.array([1.0, 2.0])
    check_agree([T(x, "float32"), 2.0, (3, None)], (T(x, "float32"), 2.0, [3, None]))
    check_agree([T(x, "float32"), 2.0], [T(x, "float32"), 2.5])
    check_agree([T(x, "float32"), 2.0], [T(x, "float32")])
    check_agree({"a": T(x, "float32"), "b": [1, {"c": 2.0}]},
                {"b": [1, {"c": 2.5}], "a": T(x, "float32")})
    check_agree({"a": 1, "b": 2}, {"a": 1, "c": 2})
    check_agree({"a": 1, 0: 2}, {"a": 1, 0: 3})         # unsortable keys
    check_agree([[T(x, "float32")]], [[T(x + 1, "float32")]])
    # a structural error wins over an earlier value mismatch, and ignores msg
    check_agree([1.0, "a"], [2.0, "a"], msg="custom")
    check_agree([1.0, [1]], [2.0, [1, 2]], msg="custom")
    check_agree([T(x, "float32")], [T(x, "float32")], rtol=1e-3)
    check_agree([1.0, 2.0], [1.5, 2.5])                 # only the first failure is reported


def test_msg_str_and_callable():
    x = np.array([1.0, 2.0, 3.0])
    for msg in ("Argh", lambda m: f"Header\n\n{m}\n\nFooter"):
        check_agree(T(x, "float32"), T(x + [0, 2, 2], "float32"), msg=msg)
        check_agree({"k": [T(x, "float32")]}, {"k": [T(x * 2, "float32")]}, msg=msg)
        check_agree(1, 2, msg=msg)
        check_agree(T(x, "float32"), T(x, "float64"), msg=msg)


def test_tolerance_argument_errors():
    x = np.array([1.0])
    check_agree(T(x, "float32"), T(x, "float32"), rtol=1e-3)
    check_agree(T(x, "float32"), T(x, "float32"), atol=1e-3)
    check_agree(1.0, 1.0, rtol=1e-3)
    check_agree(T(x, "float32"), T(x + 1, "float32"), rtol=-1.0, atol=0.0, full_message=False)


def test_message_index_and_percent_format():
    a = np.zeros((3, 4, 5))
    e = a.copy()
    e[1, 2, 3] = 5.0
    e[2, 0, 1] = -7.0
    e[0, 0, 0] = 1e-3
    for dtype in ("float32", "float64", "int32", "complex64", "float16"):
        check_agree(T(a, dtype), T(e, dtype))
        check_agree(T(e, dtype), T(a, dtype))


# ---- assert_allclose (deprecated) ----

def test_assert_allclose_warns_and_agrees():
    with pytest.warns(FutureWarning):
        ember.testing.assert_allclose(ember.tensor([1.0]), ember.tensor([1.0]))
    x = np.array([1.0, float("nan"), 3.0])
    cases = [(T(x, "float32"), T(x, "float32"), {}),
             (T(x, "float32"), T(x + 1e-5, "float32"), {}),
             (T(x, "float32"), T(x + 1e-3, "float32"), {}),
             (T(x, "float32"), T(x, "float64"), {}),
             (T(x, "float32"), T(x, "float32"), dict(equal_nan=False)),
             (T(x, "float16"), T(x + 5e-4, "float16"), {}),
             (T(x, "float64"), [1.0, float("nan"), 3.0], {}),
             ([1, 2], [1, 2], {}), (1.0, 1.5, {}), (1.0, 1.5, dict(rtol=0.5, atol=0.0)),
             (T(x, "float32"), T(x + 1, "float32"), dict(msg="nope")),
             (T(x, "float32"), T(x, "float32"), dict(rtol=0.1))]
    for a, e, kw in cases:
        ref = outcome(torch.testing.assert_allclose, build(a, torch), build(e, torch), **kw)
        got = outcome(ember.testing.assert_allclose, build(a, ember), build(e, ember), **kw)
        assert got == ref


# ---- make_tensor ----

MAKE_DTYPES = ["bool", *INT_DTYPES, *FLOAT_DTYPES, *COMPLEX_DTYPES]


def properties(t):
    return dict(dtype=str(t.dtype).split(".")[1], shape=tuple(t.shape), stride=t.stride(),
                contiguous=t.is_contiguous(), requires_grad=t.requires_grad,
                offset=t.storage_offset(), is_leaf=t.is_leaf)


def values(t):
    t = t.detach()
    if t.dtype in (torch.bfloat16, ember.bfloat16):
        t = t.float()
    return t.numpy()


@pytest.mark.parametrize("dtype", MAKE_DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (0, 3), (1,)])
@pytest.mark.parametrize("flags", [{}, dict(noncontiguous=True), dict(exclude_zero=True),
                                   dict(requires_grad=True)])
def test_make_tensor_properties(dtype, shape, flags):
    ref = outcome(torch.testing.make_tensor, *shape, dtype=getattr(torch, dtype), device="cpu",
                  **flags)
    got = outcome(make_tensor, *shape, dtype=getattr(ember, dtype), device="cpu", **flags)
    assert got == ref
    if ref[0] is not None:
        return
    r = torch.testing.make_tensor(shape, dtype=getattr(torch, dtype), device="cpu", **flags)
    t = make_tensor(shape, dtype=getattr(ember, dtype), device="cpu", **flags)
    assert properties(t) == properties(r)
    v = values(t)
    if dtype.startswith("complex"):
        v = np.concatenate([v.real.ravel(), v.imag.ravel()])
    lo, hi = {"bool": (0, 1), "uint8": (0, 9)}.get(dtype, (-9, 9))
    assert ((v >= lo) & (v <= hi)).all()
    if flags.get("exclude_zero"):
        assert (values(t) != 0).all()


@pytest.mark.parametrize("dtype", MAKE_DTYPES)
@pytest.mark.parametrize("bounds", [(-2, 3), (0.5, 0.75), (5, 5), (3, 1), (float("nan"), 1),
                                    (-1e40, 1e40), (300, 400), (-400, -300), (None, -5),
                                    (4, None), (-2 ** 70, 2 ** 70), (0, 1)])
def test_make_tensor_bounds(dtype, bounds):
    low, high = bounds
    ref = outcome(torch.testing.make_tensor, 50, dtype=getattr(torch, dtype), device="cpu",
                  low=low, high=high)
    got = outcome(make_tensor, 50, dtype=getattr(ember, dtype), device="cpu", low=low, high=high)
    assert got == ref
    if ref[0] is not None:
        return
    with warnings.catch_warnings(record=True) as wr:
        warnings.simplefilter("always")
        torch.testing.make_tensor(3, dtype=getattr(torch, dtype), device="cpu", low=low,
                                  high=high)
    with warnings.catch_warnings(record=True) as we:
        warnings.simplefilter("always")
        t = make_tensor(50, dtype=getattr(ember, dtype), device="cpu", low=low, high=high)
    assert [w.category for w in we] == [w.category for w in wr]
    v = values(t).astype(np.float64)
    if dtype == "bool" or dtype in INT_DTYPES:
        info = np.iinfo(np.int64 if dtype == "bool" else getattr(np, dtype))
        lo = max(np.ceil(low if low is not None else -9), 0 if dtype == "bool" else info.min)
        hi = min(np.ceil(high if high is not None else 10), 2 if dtype == "bool" else info.max + 1)
        assert ((v >= lo) & (v < hi)).all()
    elif not dtype.startswith("complex") and low is not None and high is not None:
        assert ((v >= max(low, -3.4e38 if dtype != "float64" else -1.8e308))
                & (v <= min(high, 1.8e308))).all()


def test_make_tensor_argument_errors_agree():
    calls = [
        dict(args=(2, 2), dtype="float32", requires_grad=True, noncontiguous=True),
        dict(args=(2, 2), dtype="int64", requires_grad=True),
        dict(args=(2, 2), dtype="bool", requires_grad=True),
        dict(args=(2, 3, 4, 5), dtype="float32", noncontiguous=True,
             memory_format="channels_last"),
        dict(args=([2, 3],), dtype="float32"),
        dict(args=((2, 3),), dtype="int16", noncontiguous=True),
    ]
    for c in calls:
        kw = {k: v for k, v in c.items() if k != "args"}
        kw_t = dict(kw, dtype=getattr(torch, kw["dtype"]))
        kw_e = dict(kw, dtype=getattr(ember, kw["dtype"]))
        if "memory_format" in kw:
            kw_t["memory_format"] = getattr(torch, kw["memory_format"])
            kw_e["memory_format"] = getattr(ember, kw["memory_format"])
        ref = outcome(torch.testing.make_tensor, *c["args"], device="cpu", **kw_t)
        got = outcome(make_tensor, *c["args"], device="cpu", **kw_e)
        assert got[0] == ref[0], (c, got, ref)
    # unsupported dtypes: TypeError in both
    for bad_t, bad_e in ((None, None), (float, float), ("float32", "float32")):
        assert outcome(torch.testing.make_tensor, 2, dtype=bad_t, device="cpu")[0] == \
            outcome(make_tensor, 2, dtype=bad_e, device="cpu")[0] == "TypeError"
    with pytest.raises(TypeError):
        make_tensor(2, dtype=ember.float32)         # device is required, as in torch


@pytest.mark.parametrize("fmt", ["channels_last", "contiguous_format", "preserve_format"])
def test_make_tensor_memory_format(fmt):
    r = torch.testing.make_tensor(2, 3, 4, 5, dtype=torch.float32, device="cpu",
                                  memory_format=getattr(torch, fmt))
    t = make_tensor(2, 3, 4, 5, dtype=ember.float32, device="cpu",
                    memory_format=getattr(ember, fmt))
    assert properties(t) == properties(r)


def test_make_tensor_reproducible_under_manual_seed():
    ember.manual_seed(7)
    a = make_tensor(4, 4, dtype=ember.float32, device="cpu")
    ember.manual_seed(7)
    b = make_tensor(4, 4, dtype=ember.float32, device="cpu")
    assert np.array_equal(a.numpy(), b.numpy())


# ---- FileCheck ----

WORDS = ["a", "b", "ab", "c", "x = a", "mul", "add"]


@st.composite
def filecheck_case(draw):
    lines = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=3),
                          min_size=0, max_size=5))
    text = "\n".join(" ".join(line) for line in lines)
    kinds = ["check", "check_not", "check_same", "check_next", "check_count", "check_dag",
             "check_regex"]
    checks = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(kinds))
        word = draw(st.sampled_from(WORDS))
        if kind == "check_count":
            exactly = draw(st.booleans())
            count = draw(st.integers(0 if exactly else 1, 3))
            checks.append((kind, (word, count, exactly)))
        elif kind == "check_regex":
            checks.append((kind, (draw(st.sampled_from(["a+b", "^x", "m.l", "[bc] ", "d?d"])),)))
        else:
            checks.append((kind, (word,)))
    return text, checks


def run_filecheck(cls, text, checks):
    fc = cls()
    for kind, args in checks:
        fc = getattr(fc, kind)(*args)
    try:
        fc.run(text)
    except RuntimeError as e:
        return "RuntimeError", str(e).splitlines()[0]
    return None, ""


@settings(max_examples=600)
@given(filecheck_case())
def test_filecheck_agrees_with_torch(case):
    text, checks = case
    ref = run_filecheck(torch.testing.FileCheck, text, checks)
    got = run_filecheck(ember.testing.FileCheck, text, checks)
    assert got[0] == ref[0], (text, checks, got, ref)
    # the failing check's first line ("Expected to (not) find ...") is torch's
    assert got[1] == ref[1], (text, checks, got, ref)


def test_filecheck_on_a_scripted_graph():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU())
    scripted = ember.jit.script(model)
    scripted(ember.randn(2, 3))
    graph = str(scripted.graph)
    words = [w for w in graph.split() if w.isidentifier()][:3]
    fc = ember.testing.FileCheck()
    for w in words:
        fc = fc.check(w)
    fc.run(scripted.graph)
    with pytest.raises(RuntimeError, match="Expected to find"):
        ember.testing.FileCheck().check("no_such_op_in_the_graph").run(graph)


@pytest.mark.parametrize("text,checks", [
    ("xxxx b a", [("check", ("xxxx",)), ("check_regex", ("b",)), ("check", ("x",))]),
    ("a ab a", [("check", ("a",)), ("check_not", ("a",)), ("check_regex", ("[bc] ",))]),
    ("b a", [("check_regex", ("[bc] ",)), ("check", ("a",))]),
    ("a\nb\nc", [("check", ("a",)), ("check_next", ("b",)), ("check_next", ("c",))]),
    ("a\nb\nc", [("check", ("a",)), ("check_next", ("c",))]),
    ("a b a b", [("check_count", ("a", 2, True))]),
    ("a b a b a", [("check_count", ("a", 2, True))]),
    ("a b a b a", [("check_count", ("a", 2, True)), ("check", ("b",))]),
    ("c b a", [("check_dag", ("a",)), ("check_dag", ("b",)), ("check", ("c",))]),
    ("c b a c", [("check_dag", ("a",)), ("check_dag", ("b",)), ("check_same", ("c",))]),
    ("x = a\nmul", [("check", ("x",)), ("check_not", ("mul",)), ("check", ("a",))]),
    ("", [("check_count", ("a", 0, True))]),
])
def test_filecheck_fixed_programs(text, checks):
    assert run_filecheck(ember.testing.FileCheck, text, checks) == \
        run_filecheck(torch.testing.FileCheck, text, checks)
