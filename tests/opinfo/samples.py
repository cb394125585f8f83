"""Sample inputs for every registered op, the way PyTorch's OpInfo does it.

`samples_for(name)` lists the `Sample`s for op `name`: an explicit entry of SPECIAL (this file
and samples_ops.py) when the op needs particular arguments, else the generic sampler of its
kind: pointwise ops by arity (len(op.inputs)), reductions by the REDUCTIONS flags. Every
sampler mixes shapes (0-size, 0-dim, broadcasting pairs), layouts (transposed, step-sliced,
expanded, offset) and dtypes (float32, float64, int64, bool); a dtype the op rejects is still a
valid sample: the generated test then checks that ember raises like torch.

To add an op: if it is pointwise with plain tensor inputs, nothing (maybe a DOMAINS row);
if it is a reduction taking (input, dim, keepdim), a REDUCTIONS row; otherwise a SPECIAL row.
"""
from dataclasses import replace

try:
    from ._make import B, S, Sample, T, is_public
    from .samples_ops import EXTRA, SPECIAL as _OPS_SPECIAL
    from .samples_special import SPECIAL as _SPECIAL_FNS, DOMAINS as _SPECIAL_DOMAINS
    from .samples_misc import SPECIAL as _MISC, DOMAINS as _MISC_DOMAINS
    from .samples_linalg_more import SPECIAL as _LINALG_MORE
    from .samples_eig import SPECIAL as _EIG
    from . import samples_complex as _cx
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import B, S, Sample, T, is_public
    from samples_ops import EXTRA, SPECIAL as _OPS_SPECIAL
    from samples_special import SPECIAL as _SPECIAL_FNS, DOMAINS as _SPECIAL_DOMAINS
    from samples_misc import SPECIAL as _MISC, DOMAINS as _MISC_DOMAINS
    from samples_linalg_more import SPECIAL as _LINALG_MORE
    from samples_eig import SPECIAL as _EIG
    import samples_complex as _cx

import ember
from ember.ops.registry import OPS, POINTWISE, REDUCTION

# ---- pointwise ----
# value domains per input (T keyword arguments): inputs where the op is smooth and defined,
# so gradcheck's finite differences are meaningful; NaN/inf have their own sample.
POS = dict(lo=0.2, hi=3.0)
UNIT = dict(lo=-0.9, hi=0.9)
NONZERO = dict(lo=0.5, hi=2.0, signed=True)
DOMAINS = {
    "log": [POS], "log2": [POS], "log10": [POS], "log1p": [POS], "sqrt": [POS],
    "rsqrt": [POS], "reciprocal": [NONZERO], "asin": [UNIT], "acos": [UNIT],
    "atanh": [UNIT], "erfinv": [UNIT], "acosh": [dict(lo=1.2, hi=3.0)],
    "logit": [dict(lo=0.05, hi=0.95)], "tan": [dict(lo=-1.0, hi=1.0)],
    "pow": [POS, {}], "float_power": [POS, {}],
    "floor_divide": [{}, NONZERO], "remainder": [{}, NONZERO], "fmod": [{}, NONZERO],
    "_div_trunc": [{}, NONZERO], "addcdiv": [{}, {}, NONZERO],
    "bitwise_left_shift": [dict(lo=0, hi=5), dict(lo=0, hi=3)],
    "bitwise_right_shift": [dict(lo=0, hi=40), dict(lo=0, hi=3)],
    "abs": [NONZERO], "sgn": [NONZERO], "sign": [NONZERO],   # away from the kink at 0
}
DOMAINS.update(_SPECIAL_DOMAINS)
DOMAINS.update(_cx.DOMAINS)
DOMAINS.update(_MISC_DOMAINS)
# one more sample with the op's attributes set
ATTRS = {
    "add": {"alpha": 2}, "sub": {"alpha": 0.5}, "addcmul": {"value": 0.5},
    "addcdiv": {"value": -2}, "logit": {"eps": 1e-3}, "round": {"decimals": 1},
    "nan_to_num": {"nan": 1.0, "posinf": 9.0, "neginf": -9.0},
    "isclose": {"rtol": 0.1, "atol": 0.5, "equal_nan": True},
}


def _doms(name, n):
    d = DOMAINS.get(name, [])
    return [d[k] if k < len(d) else {} for k in range(n)]


def _scalar(d):
    """A Python scalar inside domain d."""
    lo, hi = d.get("lo", -2.0), d.get("hi", 2.0)
    return float(hi) * 0.75 if d.get("signed") else round((lo + hi) / 2 * 4 + 1) / 4


def unary(name):
    """Samples of a one-input pointwise op."""
    d, = _doms(name, 1)
    return [S(T((3, 4), **d)), S(T((2, 3), "float64", "T", **d)), S(T((0, 3), **d)),
            S(T((), "float64", **d)), S(T((3, 2), "float32", "expand", **d)),
            Sample((T((2, 3), "float32", "step", make="specials", **d),), grad=False),
            S(T((3, 2), "int64", "offset", **d)), S(T((2, 2), "bool"))] + _cx.COMPLEX_UNARY


def binary(name):
    """Samples of a two-input pointwise op: equal shapes, broadcasting, 0-size, 0-dim with an
    expanded tensor, integer and bool pairs, mixed dtypes, a Python scalar."""
    a, b = _doms(name, 2)
    return [S(T((3, 4), **a), T((3, 4), **b)),
            S(T((2, 3, 1), "float64", "T", **a), T((4,), "float64", **b)),
            S(T((0, 3), **a), T((3,), **b)),
            S(T((), "float64", **a), T((2, 2), "float64", "expand", **b)),
            S(T((3, 2), "int64", "offset", **a), T((3, 2), "int64", "step", **b)),
            S(T((2, 3), "float32", "step", **a), _scalar(b)),
            S(T((2, 2), "int64", **a), T((2, 2), "float32", **b)),
            S(T((2, 2), "bool"), T((2, 2), "bool"))] + _cx.COMPLEX_BINARY


def ternary(name):
    """Samples of a three-input pointwise op (lerp, addcmul, addcdiv)."""
    a, b, c = _doms(name, 3)
    return [S(T((3, 4), **a), T((3, 4), **b), T((3, 4), **c)),
            S(T((2, 1, 3), "float64", "T", **a), T((4, 1), "float64", **b),
              T((3,), "float64", **c)),
            S(T((0, 3), **a), T((3,), **b), T((1, 3), **c)),
            S(T((), "float64", **a), T((2,), "float64", "step", **b), T((), "float64", **c)),
            S(T((2, 2), "int64", **a), T((2, 2), "int64", **b), T((2, 2), "int64", **c))]


# ops defined on integers and bools only: their float samples become int64 ones (the first
# stays float, so the float error is checked too)
INTEGRAL = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
            "bitwise_right_shift"}


def _as_int(sample):
    def conv(a):
        return replace(a, dtype="int64") if isinstance(a, T) and a.dtype != "bool" else a
    return replace(sample, args=tuple(conv(a) for a in sample.args))


def pointwise(name):
    op = OPS[name]
    make = {1: unary, 2: binary, 3: ternary}.get(len(op.inputs))
    samples = make(name) if make else []
    if name in INTEGRAL:
        samples = samples[:1] + [_as_int(s) for s in samples[1:]]
    if samples and name in ATTRS:
        first = samples[0].args
        if name == "nan_to_num":
            first = (T((3, 4), make="specials"),)
        samples.append(Sample(first, dict(ATTRS[name])))
    return samples


# pointwise ops whose signature is not "tensor inputs, then attributes"
x34, x23 = T((3, 4)), T((2, 3))
POINTWISE_SPECIAL = {
    "div": [S(x34, T((3, 4), **NONZERO)), S(T((2, 3), "float64", "T"), T((3,), "float64")),
            S(T((3, 2), "int64", **NONZERO), T((3, 2), "int64", **NONZERO)),
            S(x23, T((2, 3), **NONZERO), rounding_mode="trunc"),
            S(T((2, 3), "float64"), T((3,), "float64", **NONZERO), rounding_mode="floor"),
            S(T((3, 2), "int64", lo=-9, hi=9), T((3, 2), "int64", **NONZERO),
              rounding_mode="trunc"),
            S(T((0, 2)), 2.0), S(T((), "float64"), T((2,), "float64", **NONZERO))],
    "divide": [S(x34, T((3, 4), **NONZERO)),
               S(T((2, 3), "float64", "step"), 2, rounding_mode="floor")],
    "clamp": [S(x34, -1.0, 1.0), S(T((2, 3), "float64", "T"), min=-0.5),
              S(x23, max=T((3,), lo=-1, hi=1)), S(T((3, 2), "int64"), -1, 1),
              S(T((0, 3)), 0.0, 1.0), S(T((), "float64"), T((), "float64"), T((), "float64"))],
    "clip": [S(x34, -1.0, 1.0), S(T((2, 3), "float64", "step"), None, 0.5)],
    "clamp_min": [S(x34, 0.5), S(T((2, 3), "float64", "T"), T((3,), "float64"))],
    "clamp_max": [S(x34, 0.5), S(T((2, 3), "int64"), 1)],
    "where": [S(B([[True, False, True], [False, False, True]]), x23, T((2, 3))),
              S(T((2, 1), "bool"), T((2, 3), "float64", "T"), T((3,), "float64")),
              S(T((4,), "bool"), x34, 0.5), S(T((0, 2), "bool"), T((0, 2)), T((0, 2))),
              S(T((2, 2), "bool"))],
    "masked_fill": [S(x34, T((3, 4), "bool"), -1.0), S(T((2, 3), "float64", "T"),
                                                      T((3,), "bool"), 2.0),
                    S(x23, T((2, 3), "bool"), T((), values=5.0)),
                    S(T((3, 2), "int64"), T((3, 2), "bool"), 7)],
    "isclose": None,   # generic binary + ATTRS (listed so the stale check knows it)
    "allclose": [S(x34, x34), S(T((2, 3), "float64"), T((2, 3), "float64"), rtol=0.5, atol=1.0),
                 S(T((3,), make="specials"), T((3,)), equal_nan=True)],
    "equal": [S(x34, x34), S(x34, T((3, 4), "float32", "T")),
              S(T((2,), "int64"), T((3,), "int64"))],
    "_invert": [Sample((T((3, 4), "int64"),), method="__invert__"),
                Sample((T((2, 3), "bool", "T"),), method="__invert__"),
                Sample((x23,), method="__invert__")],
}
POINTWISE_SPECIAL["isclose"] = None


# ---- reductions over (input, dim, keepdim) ----
# flags: multi (dim may be a tuple), dim (dim is required), ints (an int64 sample makes
# sense: results have no ties to break), bools (a bool sample).
REDUCTIONS = {
    "sum": dict(multi=True), "nansum": dict(multi=True), "mean": dict(multi=True),
    "nanmean": dict(multi=True), "prod": {}, "amax": dict(multi=True),
    "amin": dict(multi=True), "logsumexp": dict(multi=True, dim=True),
    "var": dict(multi=True), "std": dict(multi=True), "var_mean": dict(multi=True),
    "std_mean": dict(multi=True), "all": dict(multi=True, bools=True),
    "any": dict(multi=True, bools=True), "norm": dict(multi=True),
    "count_nonzero": dict(multi=True, keepdim=False),
    "argmax": dict(ints=False), "argmin": dict(ints=False), "max": dict(ints=False),
    "min": dict(ints=False), "median": dict(ints=False), "nanmedian": dict(ints=False),
    "aminmax": dict(kw=True),
}


def reduction(name):
    """Samples of a reduction: all elements, one dim, keepdim, several dims, 0-dim and 0-size
    inputs, a transposed and a step-sliced input, int64 and bool inputs."""
    f = REDUCTIONS[name]
    kd = {"keepdim": True} if f.get("keepdim", True) else {}

    def dims(d):
        return {"dim": d} if f.get("kw") else d

    def s(x, d=None, **kw):
        if d is None:
            return S(x, **kw)
        return S(x, **dims(d), **kw) if f.get("kw") else S(x, d, **kw)
    out = [] if f.get("dim") else [s(T((3, 4)))]
    out += [s(T((3, 4), "float64", "T"), 1), s(T((2, 5)), -1, **kd), s(T((), "float64"), 0),
            s(T((0, 3)), 1), s(T((2, 3), "float32", "step"), 0)]
    if f.get("multi"):
        out.append(s(T((2, 3, 4), "float64", "step"), (0, 2)))
    if f.get("ints", True):
        out.append(s(T((3, 4), "int64", lo=-3, hi=3), 1))
    if f.get("bools"):
        out += [s(T((3, 4), "bool")), s(T((2, 3), "bool", "T"), 1)]
    return out


SPECIAL = dict(POINTWISE_SPECIAL)
SPECIAL.update(_OPS_SPECIAL)
SPECIAL.update(_SPECIAL_FNS)
SPECIAL.update(_MISC)
SPECIAL.update(_LINALG_MORE)
SPECIAL.update(_EIG)
SPECIAL.update(_cx.SPECIAL)

# Private registry entries reached only through a public op; the coverage test runs the
# public op's samples under a recording dispatch mode and checks the private op is called.
COVERED_VIA = {
    "_div_trunc": "div", "_where": "where", "_clamp": "clamp",
    "threshold_backward": "relu", "multinomial_m": "multinomial",
}
COVERED_VIA.update(_cx.COVERED_VIA)

# Ops about to be registered: samples may be written for them first; the stale-entry check
# accepts these names (none today).
PENDING = set()


def _samples(name):
    if name in SPECIAL and SPECIAL[name] is not None:
        return list(SPECIAL[name])
    op = OPS.get(name)
    if op is None:
        return []
    if op.kind == POINTWISE and (name in SPECIAL or is_public(name)):
        return pointwise(name)
    if op.kind == REDUCTION and name in REDUCTIONS:
        return reduction(name) + list(EXTRA.get(name, ()))
    return []


def samples_for(name):
    """The samples of op `name` ([] when it has none). An op that is both ember.<name> and
    Tensor.<name> also gets its samples with a tensor first argument called as methods
    (the two are generated separately), after the others so sample indices stay put."""
    samples = _samples(name)
    if hasattr(ember, name) and hasattr(ember.Tensor, name):
        samples += [replace(s, method=True) for s in samples[:3]
                    if not s.method and s.args and isinstance(s.args[0], T)]
    return samples


def sampler_names():
    """Every op name some table of this file names (for the stale-entry check)."""
    return set(SPECIAL) | set(REDUCTIONS) | set(DOMAINS) | set(ATTRS) | set(COVERED_VIA)
