"""dtypes and type promotion, differential against torch: the dtype objects and their
attributes, finfo/iinfo, promote_types / result_type / can_cast tables, the default dtype,
and that real op results follow the promotion rules."""
import itertools

import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
         "float32", "float64"]
PAIRS = list(itertools.product(NAMES, NAMES))


def E(name):
    return getattr(ember, name)


def T(name):
    return getattr(torch, name)


def same(e_dtype, t_dtype):
    return repr(e_dtype).replace("ember.", "") == repr(t_dtype).replace("torch.", "")


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes(name):
    e, t = E(name), T(name)
    assert isinstance(e, ember.dtype)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert e.is_floating_point == t.is_floating_point
    assert e.itemsize == t.itemsize
    assert e.is_signed == t.is_signed
    assert e.is_complex == t.is_complex


@pytest.mark.parametrize("alias", ["half", "float", "double", "long", "int", "short"])
def test_dtype_aliases(alias):
    assert same(E(alias), T(alias))


def test_default_dtype_roundtrip():
    assert same(ember.get_default_dtype(), torch.get_default_dtype())
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        assert same(ember.get_default_dtype(), torch.get_default_dtype())
        assert same(ember.tensor([1.5]).dtype, torch.tensor([1.5]).dtype)
        assert same(ember.ones(2).dtype, torch.ones(2).dtype)
        assert same((ember.ones(2, dtype=ember.int32) * 1.5).dtype,
                    (torch.ones(2, dtype=torch.int32) * 1.5).dtype)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
    for bad in ("int64", "bool"):
        with pytest.raises(TypeError):
            torch.set_default_dtype(T(bad))
        with pytest.raises(TypeError):
            ember.set_default_dtype(E(bad))
    assert ember.get_default_dtype() is ember.float32


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo(name):
    e, t = ember.finfo(E(name)), torch.finfo(T(name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert e.dtype == t.dtype
    assert repr(e) == repr(t)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    e, t = ember.iinfo(E(name)), torch.iinfo(T(name))
    assert (e.bits, e.min, e.max, e.dtype) == (t.bits, t.min, t.max, t.dtype)
    assert repr(e) == repr(t)


def test_info_wrong_kind():
    with pytest.raises(TypeError):
        torch.iinfo(torch.bool)
    with pytest.raises(TypeError):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError):
        torch.finfo(torch.int32)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        torch.iinfo(torch.float32)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_and_can_cast(a, b):
    assert same(ember.promote_types(E(a), E(b)), torch.promote_types(T(a), T(b)))
    assert ember.can_cast(E(a), E(b)) == torch.can_cast(T(a), T(b))


# an operand: (dtype name, category) with category "tensor", "0dim" or "scalar"
def _torch_operand(name, cat):
    if cat == "tensor":
        return torch.ones(2, dtype=T(name))
    if cat == "0dim":
        return torch.tensor(1, dtype=T(name))
    return {"bool": True, "int64": 3, "float64": 2.5}[name]


def _ember_operand(name, cat):
    if cat == "tensor":
        return ember.ones(2, dtype=E(name))
    if cat == "0dim":
        return ember.tensor(1, dtype=E(name))
    return {"bool": True, "int64": 3, "float64": 2.5}[name]


operand = st.one_of(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(["tensor", "0dim"])),
    st.tuples(st.sampled_from(["bool", "int64", "float64"]), st.just("scalar")))


@settings(max_examples=60, deadline=None)
@given(operand, operand)
def test_result_type(x, y):
    if x[1] == "scalar" and y[1] == "scalar":
        # torch.result_type needs at least one tensor
        x = (x[0], "0dim")
    tx, ty = _torch_operand(*x), _torch_operand(*y)
    ex, ey = _ember_operand(*x), _ember_operand(*y)
    assert same(ember.result_type(ex, ey), torch.result_type(tx, ty))


@settings(max_examples=60, deadline=None)
@given(operand, operand)
def test_add_follows_promotion(x, y):
    if x[1] == "scalar" and y[1] == "scalar":
        x = (x[0], "tensor")
    tx, ty = _torch_operand(*x), _torch_operand(*y)
    ex, ey = _ember_operand(*x), _ember_operand(*y)
    try:
        tr = tx + ty
    except RuntimeError as err:  # e.g. bool tensor - ... ; compare the error instead
        with pytest.raises(type(err)):
            ex + ey
        return
    er = ex + ey
    assert same(er.dtype, tr.dtype)
    assert er.shape == tuple(tr.shape)
    assert er.tolist() == tr.tolist()


def test_promotion_examples():
    cases = [
        (lambda m: m.arange(3) + 2.5),
        (lambda m: m.ones(2, dtype=m.float32) + m.tensor(1.0, dtype=m.float64)),
        (lambda m: m.ones(2, dtype=m.bool) + m.ones(2, dtype=m.bool)),
        (lambda m: m.ones(2, dtype=m.uint8) + m.ones(2, dtype=m.int8)),
        (lambda m: m.ones(2, dtype=m.float16) + m.ones(2, dtype=m.bfloat16)),
        (lambda m: m.ones(2, dtype=m.int32) + m.tensor(7)),
        (lambda m: m.ones(2, dtype=m.int32) + m.tensor(7.0)),
        (lambda m: m.ones(2, dtype=m.uint8) + True),
        (lambda m: m.tensor(1, dtype=m.int8) + m.tensor(1.0, dtype=m.float16)),
        (lambda m: m.ones(2, dtype=m.int64) / 2),
    ]
    for f in cases:
        e, t = f(ember), f(torch)
        assert same(e.dtype, t.dtype)
        assert e.tolist() == t.tolist()
