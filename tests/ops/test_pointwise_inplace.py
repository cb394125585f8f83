"""Differential tests of ember's in-place pointwise methods (``x.add_(y)``, ``x.clamp_()``,
``x.copy_(src)``, ...) against torch.

`self` is a view (transposed, step-sliced, offset, expanded) of a base tensor, so each test also
checks that the write lands in the base like torch's, that the method returns `self`, that the
version counter moves like torch's, and that torch's errors are ember's: a result dtype that
can't be cast to self's ("result type Float can't be cast to the desired output type Long"),
a broadcast shape bigger than self's, writes into an expanded tensor.
"""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

try:
    from ._pointwise_common import (BINARY, DTYPES, EXAMPLES, LAYOUTS, UNARY, Domain, Spec,
                                    assert_same, broadcast_specs, check, check_inplace, pair,
                                    returns_self, scalars, specs)
except ImportError:
    from _pointwise_common import (BINARY, DTYPES, EXAMPLES, LAYOUTS, UNARY, Domain, Spec,
                                   assert_same, broadcast_specs, check, check_inplace, pair,
                                   returns_self, scalars, specs)

# ops without an in-place form in torch
NO_INPLACE = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "isclose",
              "maximum", "minimum", "fmax", "fmin", "clamp_min", "clamp_max", "absolute",
              "negative", "fix", "arcsin", "arccos", "arctan", "arctan2", "subtract",
              "multiply", "divide", "not_equal", "less", "less_equal", "greater",
              "greater_equal", "relu"}
UNARY_INPLACE = [op for op in UNARY if op.name not in NO_INPLACE]
BINARY_INPLACE = [op for op in BINARY if op.name not in NO_INPLACE]


@pytest.mark.parametrize("op", UNARY_INPLACE, ids=lambda o: o.id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_unary_inplace(op, data):
    spec = data.draw(specs(domain=op.domain), label="self")
    check_inplace(spec, returns_self(
        lambda lib, x: getattr(x, op.name + "_")(**op.kwargs)))


@pytest.mark.parametrize("op", BINARY_INPLACE, ids=lambda o: o.id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_binary_inplace(op, data):
    sa, sb = data.draw(broadcast_specs(domain=op.domain), label="self, other")
    other = pair(sb)
    check_inplace(sa, returns_self(
        lambda lib, x: getattr(x, op.name + "_")(other[lib], **op.kwargs)))
    if op.scalar:
        s = data.draw(scalars, label="scalar")
        check_inplace(sa, returns_self(
            lambda lib, x: getattr(x, op.name + "_")(s, **op.kwargs)))


@pytest.mark.parametrize("name", ["lerp_", "addcmul_", "addcdiv_"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(ss=broadcast_specs(n=3), w=scalars)
def test_ternary_inplace(name, ss, w):
    b, c = pair(ss[1]), pair(ss[2])
    if name == "lerp_":
        check_inplace(ss[0], returns_self(lambda lib, x: x.lerp_(b[lib], c[lib])))
        check_inplace(ss[0], returns_self(lambda lib, x: x.lerp_(b[lib], w)))
    else:
        check_inplace(ss[0], returns_self(
            lambda lib, x: getattr(x, name)(b[lib], c[lib], value=w)))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=3), lo=st.sampled_from(["none", "scalar", "tensor"]),
       hi=st.sampled_from(["none", "scalar", "tensor"]), s=scalars, s2=scalars,
       name=st.sampled_from(["clamp_", "clip_"]))
def test_clamp_inplace(ss, lo, hi, s, s2, name):
    mn = {"none": pair(None), "scalar": pair(s), "tensor": pair(ss[1])}[lo]
    mx = {"none": pair(None), "scalar": pair(s2), "tensor": pair(ss[2])}[hi]
    check_inplace(ss[0], returns_self(lambda lib, x: getattr(x, name)(mn[lib], mx[lib])))
    check_inplace(ss[0], returns_self(lambda lib, x: getattr(x, name)(min=mn[lib],
                                                                      max=mx[lib])))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=2), mode=st.sampled_from([None, "trunc", "floor"]), s=scalars)
def test_div_inplace_rounding_modes(ss, mode, s):
    other = pair(ss[1])
    check_inplace(ss[0], returns_self(lambda lib, x: x.div_(other[lib], rounding_mode=mode)))
    check_inplace(ss[0], returns_self(lambda lib, x: x.div_(s, rounding_mode=mode)))


# (no expanded self: masked_fill_ on one is deprecated in torch and its result order-dependent)
@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(ss=broadcast_specs(n=2, layouts=st.sampled_from(LAYOUTS[:3] + LAYOUTS[4:])),
       value=scalars, tensor_value=st.booleans())
def test_masked_fill_inplace(ss, value, tensor_value):
    m = pair(Spec(ss[1].shape, "bool", ss[1].layout, ss[1].seed))
    v = pair(Spec((), "float32", seed=ss[1].seed)) if tensor_value else pair(value)
    check_inplace(ss[0], returns_self(lambda lib, x: x.masked_fill_(m[lib], v[lib])))


# copy_: floats that convert to integers the same way in C and NumPy (no NaN/inf/overflow)
COPY_DOMAIN = Domain(0.0, 6.0, special=False)


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(ss=broadcast_specs(n=2, domain=COPY_DOMAIN))
def test_copy_(ss):
    src = pair(ss[1])
    check_inplace(ss[0], returns_self(lambda lib, x: x.copy_(src[lib])))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(spec=specs(), value=scalars, tensor_value=st.booleans(),
       vdtype=st.sampled_from(DTYPES))
def test_fill_zero(spec, value, tensor_value, vdtype):
    v = pair(Spec((), vdtype, seed=spec.seed, domain=COPY_DOMAIN)) if tensor_value \
        else pair(value)
    check_inplace(spec, returns_self(lambda lib, x: x.fill_(v[lib])))
    check_inplace(spec, returns_self(lambda lib, x: x.zero_()))


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool"])
def test_result_type_cannot_be_cast(dtype):
    # float results into integral self, non-bool results into bool self
    for fn in (lambda lib, x: x.add_(1.5), lambda lib, x: x.mul_(torch.ones(3) if lib is torch
                                                                 else ember.ones(3)),
               lambda lib, x: x.div_(2), lambda lib, x: x.exp_(), lambda lib, x: x.sqrt_(),
               lambda lib, x: x.add_(2)):
        kind, exc = check_inplace(Spec((2, 3), dtype), fn)
        if kind == "raise" and "can't be cast" in str(exc):
            with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
                fn(ember, ember.ones(2, 3, dtype=getattr(ember, dtype)))


def test_broadcast_bigger_than_self_raises():
    for fn in (lambda lib, x, y: x.add_(y), lambda lib, x, y: x.mul_(y),
               lambda lib, x, y: x.copy_(y), lambda lib, x, y: x.clamp_(y, None)):
        xs = {torch: torch.ones(3), ember: ember.ones(3)}
        ys = {torch: torch.ones(2, 3), ember: ember.ones(2, 3)}
        kind, exc = check(lambda lib: fn(lib, xs[lib], ys[lib]))
        assert kind == "raise"


def test_version_counter_bumps_once_per_op():
    xs = {torch: torch.ones(2, 3), ember: ember.ones(2, 3)}
    for step in (lambda x: x.add_(1), lambda x: x.mul_(2), lambda x: x.clamp_(0, 5),
                 lambda x: x.zero_(), lambda x: x.fill_(3), lambda x: x[0].add_(1),
                 lambda x: x.t().sub_(1)):
        before = [x._version for x in xs.values()]
        for x in xs.values():
            step(x)
        after = [x._version for x in xs.values()]
        assert after[0] - before[0] == after[1] - before[1]
        assert_same(xs[ember], xs[torch])
