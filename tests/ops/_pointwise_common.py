"""Shared helpers of the pointwise differential tests (test_pointwise*.py, test_operators.py).

An operand is described by a `Spec` (shape, dtype, memory layout, value domain, seed) that
hypothesis draws; `build(spec)` turns it into the same data twice: a torch tensor and an ember
tensor, made by the same view ops (transpose, step slice, expand, offset slice), so both have
the same strides. `check(fn)` runs `fn(torch)` and `fn(ember)` and compares: the same
exception type when torch raises, else the same dtype, shape and values (tolerance by dtype).
"""
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from _layouts import apply_layout, base_shape  # tests/_layouts.py (tests/ is on sys.path)

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

# a bigger sweep: EMBER_PW_EXAMPLES=500 pytest tests/ops/test_pointwise.py
EXAMPLES = int(os.environ.get("EMBER_PW_EXAMPLES", "20"))

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64")
INTS = DTYPES[1:6]
FLOATS = DTYPES[6:]
LAYOUTS = ("contig", "T", "step", "expand", "offset")
# tolerances by dtype (low precision looser; integers and bool exact)
TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5),
       "float64": (1e-7, 1e-7)}


@dataclass(frozen=True)
class Domain:
    """Where float values are drawn: uniform in [lo, hi], plus special values if `special`."""
    lo: float = -6.0
    hi: float = 6.0
    special: bool = True
    int_lo: int = -12      # integer values (uint8 uses max(0, int_lo))
    int_hi: int = 12
    int_extremes: bool = True

    def __repr__(self):
        return f"Domain({self.lo}, {self.hi}, ints=[{self.int_lo}, {self.int_hi}])"

    def _repr_pretty_(self, p, cycle):  # hypothesis prints falsifying examples with this
        p.text(repr(self))


ANY = Domain()


@dataclass(frozen=True)
class Spec:
    shape: tuple
    dtype: str
    layout: str = "contig"
    seed: int = 0
    domain: Domain = ANY


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name if name != "bool"
                                                                   else np.bool_)


def values(rng, shape, dtype, dom):
    """A NumPy array of `dtype` with values from `dom` (some specials mixed in)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        info = np.iinfo(dtype)
        lo, hi = max(dom.int_lo, int(info.min)), min(dom.int_hi, int(info.max))
        a = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
        if dom.int_extremes and a.size:
            pick = rng.random(shape) < 0.1
            a = np.where(pick, rng.choice([info.min, info.max, 0, 1]).astype(np.int64), a)
        return a.astype(dtype)
    a = rng.uniform(dom.lo, dom.hi, size=shape)
    # some values on a coarse grid (exact halves, integers): rounding and ties get exercised
    a = np.where(rng.random(shape) < 0.3, np.round(a * 4) / 4, a)
    if dom.special and a.size:
        sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5])
        a = np.where(rng.random(shape) < 0.12, rng.choice(sp, size=shape), a)
    return a.astype(np.float32 if dtype != "float64" else np.float64).astype(np_dtype(dtype))


def torch_from_np(a):
    if a.dtype == np_dtype("bfloat16"):
        return torch.from_numpy(np.array(a, order="C").view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.array(a, order="C"))


def ember_to_np(e):
    return np.array(e.detach()._numpy(), order="C")   # (bfloat16: ml_dtypes, bit-exact)


def build_with_base(spec):
    """(torch base, torch view, ember base, ember view): the view has `spec`'s shape and
    layout; in-place ops on it write through to the base."""
    rng = np.random.default_rng(spec.seed)
    a = np.asarray(values(rng, base_shape(spec.shape, spec.layout), spec.dtype, spec.domain))
    t0 = torch_from_np(a)   # (from_numpy keeps NumPy's odd strides of empty arrays: copy)
    tb = torch.empty_like(t0, memory_format=torch.contiguous_format).copy_(t0)
    eb = ember.from_numpy(a.copy())
    t, e = (apply_layout(x, spec.shape, spec.layout) for x in (tb, eb))
    assert tuple(t.shape) == tuple(spec.shape) == tuple(e.shape)
    assert t.numel() == 0 or e.stride() == t.stride(), (e.stride(), t.stride())
    return tb, t, eb, e


def build(spec):
    """(torch tensor, ember tensor) holding the same values with the same strides."""
    _, t, _, e = build_with_base(spec)
    return t, e


# ---- hypothesis strategies ----
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
layouts = st.sampled_from(LAYOUTS)
seeds = st.integers(0, 2**32 - 1)


@st.composite
def specs(draw, dtypes=DTYPES, shape=None, domain=ANY, layouts=layouts):
    shp = draw(shapes) if shape is None else shape
    return Spec(tuple(shp), draw(st.sampled_from(dtypes)), draw(layouts), draw(seeds), domain)


@st.composite
def broadcast_specs(draw, n=2, dtypes=DTYPES, domain=ANY, same_dtype=None, layouts=layouts):
    """`n` specs with mutually broadcastable shapes (sometimes plainly equal ones) and one
    dtype (`same_dtype`), or each its own; by default either, at random."""
    if same_dtype is None:
        same_dtype = draw(st.booleans())
    if draw(st.booleans()):
        shp = draw(shapes)
        shps = [shp] * n
    else:
        shps = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3,
                                                      min_side=0, max_side=4)).input_shapes
    dts = [draw(st.sampled_from(dtypes))] * n if same_dtype else \
        [draw(st.sampled_from(dtypes)) for _ in range(n)]
    return [Spec(tuple(s), d, draw(layouts), draw(seeds), domain) for s, d in zip(shps, dts)]


# Python scalars for promotion: ints (some beyond int8/uint8 range), floats, bools
scalars = st.one_of(st.sampled_from([0, 1, 2, -1, -3, 7, 0.5, -2.25, 3.0, 0.0, True, False]),
                    st.integers(-300, 300), st.floats(-8, 8, width=32),
                    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1000, -129]))


# ---- comparison ----
def ember_dtype_name(d):
    return d.name


def torch_dtype_name(d):
    return str(d).replace("torch.", "")


def to_torch(e):
    """An ember tensor's values as a torch tensor of the same dtype (bit-exact)."""
    return torch_from_np(ember_to_np(e))


def assert_same(e, t, *, exact=False):
    """ember result `e` equals torch result `t`: type, dtype, shape, values (NaN == NaN)."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"expected a Tensor, got {type(e).__name__}"
        assert ember_dtype_name(e.dtype) == torch_dtype_name(t.dtype), (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
        name = torch_dtype_name(t.dtype)
        rtol, atol = (0, 0) if exact or name not in TOL else TOL[name]
        torch.testing.assert_close(to_torch(e), t, rtol=rtol, atol=atol, equal_nan=True,
                                   check_stride=False)
    elif isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for x, y in zip(e, t):
            assert_same(x, y, exact=exact)
    elif isinstance(t, float) and math.isnan(t):
        assert math.isnan(e)
    else:
        assert type(e) is type(t) and e == t, (e, t)


def run(fn, lib):
    """fn(lib) -> ("ok", result) or ("raise", exception)."""
    try:
        return "ok", fn(lib)
    except Exception as exc:  # noqa: BLE001 - any exception type is compared with torch's
        return "raise", exc


def check(fn, *, exact=False):
    """Differential check of `fn(lib)` for lib in (torch, ember); returns torch's outcome."""
    tk, tr = run(fn, torch)
    ek, er = run(fn, ember)
    if tk == "raise":
        if ek != "raise":
            pytest.fail(f"torch raised {type(tr).__name__}: {tr}; ember returned {er!r}")
        assert type(er) is type(tr), (f"torch raised {type(tr).__name__}: {tr}\n"
                                      f"ember raised {type(er).__name__}: {er}")
        return tk, tr
    if ek == "raise":
        raise AssertionError(f"ember raised but torch returned {tr!r}") from er
    assert_same(er, tr, exact=exact)
    return tk, tr


def pair(values_):
    """(torch, ember) views of `values_` (Spec or Python scalar) -> dict lib -> operand."""
    if isinstance(values_, Spec):
        t, e = build(values_)
        return {torch: t, ember: e}
    return {torch: values_, ember: values_}


def check_inplace(self_spec, fn):
    """Run ``fn(lib, self)`` (an in-place call on a view of a base) for torch and ember."""
    tb, tv, eb, ev = build_with_base(self_spec)
    selfs = {torch: tv, ember: ev}
    v0 = {torch: tv._version, ember: ev._version}
    kind, res = check(lambda lib: fn(lib, selfs[lib]))
    if kind == "ok":
        assert res is tv
        assert_same(eb, tb)                       # the write went through to the base
        assert ev._version - v0[ember] == tv._version - v0[torch]
    return kind, res


def returns_self(fn):
    """Wrap an in-place call so the ember result's identity with self is checked."""
    def call(lib, x):
        r = fn(lib, x)
        assert r is x, "in-place method must return self"
        return r
    return call


# ---- the op tables: one row per op (and per interesting keyword setting) ----
# value domains: keep most samples where the op is defined, a few outside (NaN on both sides)
LOGD = Domain(-1.0, 20.0)
UNIT = Domain(-1.2, 1.2)
PROB = Domain(-0.1, 1.1)
WIDE = Domain(-12.0, 12.0)
ROUND = Domain(-30.0, 30.0)
SHIFT = Domain(int_lo=-3, int_hi=70)
POSINT = Domain(int_lo=-2, int_hi=6, int_extremes=False)


@dataclass
class Op:
    """A row: call ``lib.<name>(*operands, **kwargs)`` and ``operand0.<name>(...)``."""
    name: str
    kwargs: dict = field(default_factory=dict)
    domain: Domain = ANY
    method: bool = True           # also check the Tensor method form
    scalar: bool = True           # binary: also a Python scalar as second operand
    id: str = ""

    def __post_init__(self):
        if not self.id:
            self.id = self.name + "".join(f"-{k}={v}" for k, v in self.kwargs.items())

    def __repr__(self):
        return self.id

    def _repr_pretty_(self, p, cycle):
        p.text(self.id)

    def call(self, lib, *args):
        return getattr(lib, self.name)(*args, **self.kwargs)

    def method_call(self, lib, x, *args):
        return getattr(x, self.name)(*args, **self.kwargs)


def U(name, domain=ANY, **kwargs):
    return Op(name, kwargs, domain)


UNARY = [
    U("neg"), U("negative"), U("abs"), U("absolute"), U("sign"), U("sgn"),
    U("exp", WIDE), U("exp2", WIDE), U("expm1", WIDE),
    U("log", LOGD), U("log2", LOGD), U("log10", LOGD), U("log1p", LOGD),
    U("sqrt", LOGD), U("rsqrt", LOGD), U("square"), U("reciprocal"),
    U("sin"), U("cos"), U("tan"), U("asin", UNIT), U("acos", UNIT), U("atan"),
    U("arcsin", UNIT), U("arccos", UNIT), U("arctan"),
    U("sinh", WIDE), U("cosh", WIDE), U("tanh"), U("asinh"), U("acosh", LOGD),
    U("atanh", UNIT), U("sigmoid", WIDE),
    U("logit", PROB), U("logit", PROB, eps=0.05), U("logit", PROB, eps=0.0),
    U("erf"), U("erfc"), U("erfinv", UNIT),
    U("floor", ROUND), U("ceil", ROUND), U("trunc", ROUND), U("fix", ROUND),
    U("frac", ROUND), U("round", ROUND), U("round", ROUND, decimals=0),
    U("round", ROUND, decimals=1), U("round", ROUND, decimals=2),
    U("round", ROUND, decimals=-1),
    U("nan_to_num"), U("nan_to_num", nan=1.5, posinf=100.0, neginf=-100.0),
    U("nan_to_num", posinf=3.0),
    U("isnan"), U("isinf"), U("isfinite"), U("isposinf"), U("isneginf"), U("signbit"),
    U("logical_not"), U("bitwise_not"), U("relu"),
    U("clamp", min=-1.0), U("clamp", max=0.5), U("clamp", min=-1, max=2),
    U("clamp", min=2, max=-1), U("clip", min=-0.5, max=0.5), U("clamp", min=0.5),
    U("clamp_min", min=1), U("clamp_max", max=-1.5), U("clamp", min=True),
]


def B(name, domain=ANY, scalar=True, **kwargs):
    return Op(name, kwargs, domain, scalar=scalar)


BINARY = [
    B("add"), B("add", alpha=2), B("add", alpha=-1.5), B("add", alpha=True),
    B("sub"), B("sub", alpha=3), B("sub", alpha=0.5), B("subtract"), B("mul"), B("multiply"),
    B("div"), B("div", rounding_mode=None), B("div", rounding_mode="trunc"),
    B("div", rounding_mode="floor"), B("divide"), B("true_divide"), B("floor_divide"),
    B("remainder"), B("fmod"), B("pow", WIDE), B("pow", POSINT),
    B("atan2", scalar=False), B("arctan2", scalar=False),
    B("minimum", scalar=False), B("maximum", scalar=False),
    B("fmin", scalar=False), B("fmax", scalar=False),
    B("hypot", scalar=False), B("copysign"),
    B("eq"), B("ne"), B("lt"), B("le"), B("gt"), B("ge"),
    B("not_equal"), B("less"), B("less_equal"), B("greater"), B("greater_equal"),
    B("isclose", scalar=False), B("isclose", scalar=False, rtol=0.1, atol=0.5),
    B("isclose", scalar=False, equal_nan=True),
    B("logical_and", scalar=False), B("logical_or", scalar=False),
    B("logical_xor", scalar=False),
    B("bitwise_and"), B("bitwise_or"), B("bitwise_xor"),
    B("bitwise_left_shift", SHIFT), B("bitwise_right_shift", SHIFT),
]


