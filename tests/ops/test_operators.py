"""Differential tests of the Python operators on ember tensors against torch.

Each binary operator (+ - * / // % ** & | ^ << >> < <= > >= == !=) is one row of OPERATORS
and is checked tensor-with-tensor (broadcasting), tensor-with-scalar, reflected
(scalar on the left: ``2 - t``, ``2 ** t``) and in place (``t += u`` on a view, which must
write through to the base). Unary operators (-, +, ~, abs), @ and comparisons with
non-tensors get their own tests.
"""
import operator

import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

try:
    from ._pointwise_common import (ANY, EXAMPLES, FLOATS, POSINT, SHIFT, Spec, broadcast_specs,
                                    check, check_inplace, pair, scalars, specs)
except ImportError:
    from _pointwise_common import (ANY, EXAMPLES, FLOATS, POSINT, SHIFT, Spec, broadcast_specs,
                                   check, check_inplace, pair, scalars, specs)

# (symbol, operator function, in-place operator function or None, value domain)
OPERATORS = [
    ("+", operator.add, operator.iadd, ANY), ("-", operator.sub, operator.isub, ANY),
    ("*", operator.mul, operator.imul, ANY), ("/", operator.truediv, operator.itruediv, ANY),
    ("//", operator.floordiv, operator.ifloordiv, ANY), ("%", operator.mod, operator.imod, ANY),
    ("**", operator.pow, operator.ipow, POSINT),
    ("&", operator.and_, operator.iand, ANY), ("|", operator.or_, operator.ior, ANY),
    ("^", operator.xor, operator.ixor, ANY),
    ("<<", operator.lshift, operator.ilshift, SHIFT),
    (">>", operator.rshift, operator.irshift, SHIFT),
    ("<", operator.lt, None, ANY), ("<=", operator.le, None, ANY),
    (">", operator.gt, None, ANY), (">=", operator.ge, None, ANY),
    ("==", operator.eq, None, ANY), ("!=", operator.ne, None, ANY),
]
IDS = [row[0] for row in OPERATORS]
INPLACE = [row for row in OPERATORS if row[2] is not None]


@pytest.mark.parametrize("sym, fn, ifn, domain", OPERATORS, ids=IDS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_binary_operator(sym, fn, ifn, domain, data):
    sa, sb = data.draw(broadcast_specs(domain=domain), label="a, b")
    a, b = pair(sa), pair(sb)
    check(lambda lib: fn(a[lib], b[lib]))
    s = data.draw(scalars, label="scalar")
    check(lambda lib: fn(a[lib], s))
    check(lambda lib: fn(s, a[lib]))          # reflected: s.__op__ fails, t.__rop__ runs


@pytest.mark.parametrize("sym, fn, ifn, domain", INPLACE, ids=[r[0] + "=" for r in INPLACE])
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_inplace_operator(sym, fn, ifn, domain, data):
    sa, sb = data.draw(broadcast_specs(domain=domain), label="self, other")
    other = pair(sb)
    check_inplace(sa, lambda lib, x: ifn(x, other[lib]))
    s = data.draw(scalars, label="scalar")
    check_inplace(sa, lambda lib, x: ifn(x, s))


@pytest.mark.parametrize("fn", [operator.neg, operator.pos, operator.invert, abs],
                         ids=["neg", "pos", "invert", "abs"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(spec=specs())
def test_unary_operator(fn, spec):
    x = pair(spec)
    check(lambda lib: fn(x[lib]))


@settings(max_examples=EXAMPLES, deadline=None)
@given(n=st.integers(0, 4), m=st.integers(0, 4), k=st.integers(0, 4),
       form=st.sampled_from(["vv", "mv", "vm", "mm", "bmm"]),
       dtype=st.sampled_from(("float32", "float64")), seed=st.integers(0, 2**16))
def test_matmul_operator(n, m, k, form, dtype, seed):
    shapes = {"vv": ((m,), (m,)), "mv": ((n, m), (m,)), "vm": ((m,), (m, k)),
              "mm": ((n, m), (m, k)), "bmm": ((2, n, m), (m, k))}[form]
    a = pair(Spec(shapes[0], dtype, seed=seed))
    b = pair(Spec(shapes[1], dtype, seed=seed + 1))
    check(lambda lib: a[lib] @ b[lib])
    check(lambda lib: operator.matmul(a[lib], b[lib]))


@pytest.mark.parametrize("dtype", FLOATS + ("int64", "bool"))
def test_comparison_with_non_tensors(dtype):
    x = pair(Spec((2, 3), dtype, seed=4))
    for other in (None, "text", object()):
        check(lambda lib: x[lib] == other)
        check(lambda lib: x[lib] != other)
    for fn in (operator.lt, operator.ge):
        kind, _ = check(lambda lib: fn(x[lib], None))
        assert kind == "raise"


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool"])
def test_integer_operator_division_by_zero(dtype):
    x = pair(Spec((2, 3), dtype, seed=4))
    for fn in (lambda t: t // 0, lambda t: t % 0, lambda t: 5 // (t * 0),
               lambda t: 5 % (t * 0)):
        check(lambda lib: fn(x[lib]))


def test_inplace_operator_keeps_identity_and_dtype():
    for lib in (torch, ember):
        x = lib.ones(2, 3, dtype=lib.int32)
        y = x
        y += 2
        y *= 3
        assert y is x and x.dtype == lib.int32
        with pytest.raises(RuntimeError, match="can't be cast"):
            x /= 2
        with pytest.raises(RuntimeError, match="can't be cast"):
            x += 1.5
