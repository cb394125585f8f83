"""Differential tests of ember's pointwise ops (functions and methods) against torch.

Each unary and binary op is one row of a table (UNARY, BINARY in _pointwise_common.py; the
ternary ops and where/clamp/masked_fill have a test each): hypothesis draws shapes (0-size
dims, 0-dim tensors, broadcasting pairs), layouts (transposed, step-sliced, expanded,
offset), every dtype and Python-scalar operands; ember must give torch's dtype, shape and
values, or raise torch's exception type (see _pointwise_common.check).
"""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

try:
    from ._pointwise_common import (BINARY, DTYPES, EXAMPLES, FLOATS, INTS, POSINT, UNARY, Spec,
                                    broadcast_specs, check, pair, scalars, specs)
except ImportError:
    from _pointwise_common import (BINARY, DTYPES, EXAMPLES, FLOATS, INTS, POSINT, UNARY, Spec,
                                   broadcast_specs, check, pair, scalars, specs)

@pytest.mark.parametrize("op", UNARY, ids=lambda o: o.id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_unary(op, data):
    x = pair(data.draw(specs(domain=op.domain), label="x"))
    check(lambda lib: op.call(lib, x[lib]))
    check(lambda lib: op.method_call(lib, x[lib]))


@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_binary_tensors(op, data):
    sa, sb = data.draw(broadcast_specs(domain=op.domain), label="a, b")
    a, b = pair(sa), pair(sb)
    check(lambda lib: op.call(lib, a[lib], b[lib]))
    check(lambda lib: op.method_call(lib, a[lib], b[lib]))


SCALAR_ROWS = [op for op in BINARY if op.scalar]


@pytest.mark.parametrize("op", SCALAR_ROWS, ids=lambda o: o.id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_binary_scalar(op, data):
    a = pair(data.draw(specs(domain=op.domain), label="a"))
    s = data.draw(scalars, label="scalar")
    check(lambda lib: op.call(lib, a[lib], s))
    check(lambda lib: op.method_call(lib, a[lib], s))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("fn", [
    lambda lib, a, b: lib.floor_divide(a, b), lambda lib, a, b: lib.remainder(a, b),
    lambda lib, a, b: lib.fmod(a, b), lambda lib, a, b: lib.div(a, b, rounding_mode="trunc"),
    lambda lib, a, b: lib.div(a, b, rounding_mode="floor"), lambda lib, a, b: a // b,
    lambda lib, a, b: a % b], ids=["floor_divide", "remainder", "fmod", "div_trunc",
                                   "div_floor", "floordiv_op", "mod_op"])
@pytest.mark.parametrize("divisor", ["tensor", "scalar", "zero_dim"])
def test_integer_division_by_zero(fn, dtype, divisor):
    a = pair(Spec((2, 3), dtype, seed=1))
    b = {"tensor": pair(Spec((3,), dtype, seed=2)), "scalar": pair(0),
         "zero_dim": pair(Spec((), dtype, seed=3))}[divisor]
    if divisor != "scalar":
        b[torch].zero_()
        b[ember].zero_()
    kind, exc = check(lambda lib: fn(lib, a[lib], b[lib]))
    assert kind == "raise" and "ZeroDivisionError" in str(exc)


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32", "float64", "float16"])
def test_div_rounding_negative_operands(mode, dtype):
    # every sign combination, exact and inexact quotients
    vals = [-7, -6, -1, 0, 1, 6, 7]
    a = {torch: torch.tensor(vals).to(getattr(torch, dtype)).reshape(-1, 1),
         ember: ember.tensor(vals).to(getattr(ember, dtype)).reshape(-1, 1)}
    b = {torch: torch.tensor([-4, -3, -2, 2, 3, 4]).to(getattr(torch, dtype)),
         ember: ember.tensor([-4, -3, -2, 2, 3, 4]).to(getattr(ember, dtype))}
    check(lambda lib: lib.div(a[lib], b[lib], rounding_mode=mode))
    check(lambda lib: lib.div(a[lib], -2.5, rounding_mode=mode))
    check(lambda lib: lib.remainder(a[lib], b[lib]))
    check(lambda lib: lib.fmod(a[lib], b[lib]))


def test_broadcast_error_message():
    for sa, sb, dim in (((2, 3), (2, 4), 1), ((3,), (4,), 0), ((5, 1, 3), (2, 4), 2)):
        a = {torch: torch.ones(sa), ember: ember.ones(sa)}
        b = {torch: torch.ones(sb), ember: ember.ones(sb)}
        for fn in (lambda lib: a[lib] + b[lib], lambda lib: lib.mul(a[lib], b[lib]),
                   lambda lib: lib.maximum(a[lib], b[lib]), lambda lib: a[lib] < b[lib]):
            kind, exc = check(fn)
            assert kind == "raise"
            with pytest.raises(RuntimeError) as info:
                fn(ember)
            assert str(info.value) == str(exc)


# ---- pow: every form of base and exponent ----
@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(spec=specs(domain=POSINT),
       s=st.one_of(st.integers(-3, 4), st.sampled_from([0.5, -1.5, 2.0, True, False])))
def test_pow_scalar_forms(spec, s):
    x = pair(spec)
    check(lambda lib: lib.pow(x[lib], s))
    check(lambda lib: lib.pow(s, x[lib]))
    check(lambda lib: x[lib] ** s)
    check(lambda lib: s ** x[lib])


# ---- ternary ops ----
@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=3), w=st.one_of(scalars, st.none()))
def test_lerp(ss, w):
    a, b, wt = (pair(s) for s in ss)
    if w is not None:
        check(lambda lib: lib.lerp(a[lib], b[lib], w))
        check(lambda lib: a[lib].lerp(b[lib], w))
    else:
        check(lambda lib: lib.lerp(a[lib], b[lib], wt[lib]))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=3), value=st.sampled_from([None, 1, 2, -0.5, True]))
def test_addcmul_addcdiv(name, ss, value):
    a, b, c = (pair(s) for s in ss)
    kw = {} if value is None else {"value": value}
    check(lambda lib: getattr(lib, name)(a[lib], b[lib], c[lib], **kw))
    check(lambda lib: getattr(a[lib], name)(b[lib], c[lib], **kw))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=3), cond_dtype=st.sampled_from(["bool", "bool", "uint8", "int64",
                                                             "float32"]),
       scalar_x=st.one_of(st.none(), scalars), scalar_y=st.one_of(st.none(), scalars))
def test_where(ss, cond_dtype, scalar_x, scalar_y):
    c = pair(Spec(ss[0].shape, cond_dtype, ss[0].layout, ss[0].seed))
    x = pair(ss[1]) if scalar_x is None else pair(scalar_x)
    y = pair(ss[2]) if scalar_y is None else pair(scalar_y)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about uint8 conditions
        check(lambda lib: lib.where(c[lib], x[lib], y[lib]))
        if scalar_x is None:
            check(lambda lib: x[lib].where(c[lib], y[lib]))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=3), lo=st.sampled_from(["none", "scalar", "tensor"]),
       hi=st.sampled_from(["none", "scalar", "tensor"]), s=scalars, s2=scalars)
def test_clamp_bounds(ss, lo, hi, s, s2):
    x = pair(ss[0])
    bounds = {"none": {torch: None, ember: None}, "scalar": pair(s), "tensor": pair(ss[1])}
    mn = bounds[lo]
    mx = bounds[hi] if hi != "tensor" else pair(ss[2])
    if hi == "scalar":
        mx = pair(s2)
    for name in ("clamp", "clip"):
        check(lambda lib: getattr(lib, name)(x[lib], mn[lib], mx[lib]))
        check(lambda lib: getattr(x[lib], name)(min=mn[lib], max=mx[lib]))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=2), value=scalars, tensor_value=st.booleans(),
       vdtype=st.sampled_from(DTYPES))
def test_masked_fill(ss, value, tensor_value, vdtype):
    x = pair(ss[0])
    m = pair(Spec(ss[1].shape, "bool", ss[1].layout, ss[1].seed))
    v = pair(Spec((), vdtype, seed=ss[1].seed)) if tensor_value else pair(value)
    check(lambda lib: lib.masked_fill(x[lib], m[lib], v[lib]))
    check(lambda lib: x[lib].masked_fill(m[lib], v[lib]))


@pytest.mark.parametrize("dtype", ["int64", "float32", "uint8"])
def test_masked_fill_non_bool_mask(dtype):
    x = pair(Spec((2, 3), "float32"))
    m = pair(Spec((2, 3), dtype))
    check(lambda lib: lib.masked_fill(x[lib], m[lib], 1.0))


# ---- whole-tensor predicates (Python bool results) ----
@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=2, dtypes=FLOATS + ("int64", "bool")),
       rtol=st.sampled_from([1e-5, 0.1]), atol=st.sampled_from([1e-8, 1.0]),
       equal_nan=st.booleans(), same=st.booleans())
def test_allclose_equal(ss, rtol, atol, equal_nan, same):
    a = pair(ss[0])
    b = pair(ss[0] if same else ss[1])
    check(lambda lib: lib.allclose(a[lib], b[lib], rtol=rtol, atol=atol, equal_nan=equal_nan))
    check(lambda lib: a[lib].allclose(b[lib], rtol, atol, equal_nan))
    check(lambda lib: lib.equal(a[lib], b[lib]))
    check(lambda lib: a[lib].equal(b[lib]))


def test_clamp_without_bounds_raises():
    x = pair(Spec((3,), "float32"))
    for fn in (lambda lib: lib.clamp(x[lib]), lambda lib: x[lib].clamp(),
               lambda lib: lib.clip(x[lib], None, None), lambda lib: x[lib].clamp_()):
        kind, _ = check(fn)
        assert kind == "raise"
