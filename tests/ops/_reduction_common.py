"""Shared helpers of the reduction and sorting differential tests (test_reductions.py,
test_sorting.py).

`pair(data, layout)` makes the same tensor twice, in torch and in ember, through the same
view ops (transpose, step slice, offset slice), so both have the same strides. `run(fn)` calls
`fn(torch, ...)` and `fn(ember, ...)`; `check` compares what came back (exception type, or
dtype, shape and values per element of a result tuple; NaN equals NaN).
"""
import re

import numpy as np
import torch
from hypothesis import strategies as st

import ember

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

INTS = ("uint8", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
DTYPES = ("bool",) + INTS + FLOATS
LAYOUTS = ("contig", "T", "step", "offset")
TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-5, 1e-5),
       "float64": (1e-9, 1e-9)}


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def values(rng, shape, dtype, ties=False, nan=False):
    """Random data of `dtype`; `ties` draws from a few integers so equal values are common."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS or ties:
        lo = 0 if dtype == "uint8" else -4
        a = rng.integers(lo, 5, size=shape)
    else:
        a = rng.standard_normal(shape) * 2
    a = np.asarray(a).astype(np.float64 if dtype in FLOATS else dtype)
    if nan and dtype in FLOATS and a.size:
        a[rng.random(shape) < 0.2] = np.nan
    return a.astype(np_dtype(dtype))


def _from_np(lib, a, dtype):
    if lib is torch:
        if dtype == "bfloat16":
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(np.array(a))
    return ember.tensor(a, dtype=getattr(ember, "bool" if dtype == "bool" else dtype))


def pair(a, dtype, layout="contig"):
    """(torch tensor, ember tensor) with the data `a` and the memory layout `layout`."""
    shape = a.shape
    if layout == "T" and len(shape) >= 2:
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        view = lambda t: t.transpose(-1, -2)      # noqa: E731
    elif layout == "step" and len(shape) >= 1:
        base = np.repeat(a, 2, axis=0)
        view = lambda t: t[::2]                   # noqa: E731
    elif layout == "offset" and len(shape) >= 1:
        base = np.concatenate([a[:1], a], axis=0) if shape[0] else a
        view = (lambda t: t[1:]) if shape[0] else (lambda t: t)
    else:
        base, view = a, (lambda t: t)
    return view(_from_np(torch, base, dtype)), view(_from_np(ember, base, dtype))


def dtype_name(d):
    return str(d).split(".")[-1]


def to_np(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t._is_zerotensor():            # torch's symbolic zeros (some second derivatives)
            return np.zeros(tuple(t.shape), np.float64)
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.numpy()
    return np.asarray(t._data.astype(np.float32) if t.dtype.name == "bfloat16" else t._data)


def same(e, t, what="", rtol=None, atol=None):
    """ember tensor `e` equals torch tensor `t`: dtype, shape, values (NaN == NaN)."""
    assert isinstance(e, ember.Tensor), f"{what}: ember gave {type(e)}"
    assert e.dtype.name == dtype_name(t.dtype), f"{what}: dtype {e.dtype} vs {t.dtype}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} vs {t.shape}"
    a, b = to_np(e), to_np(t)
    if a.dtype.kind in "fc":
        r, at = TOL.get(e.dtype.name, (1e-9, 1e-9))
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64),
                                   rtol=rtol or r, atol=atol or at, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def run(fn, *pairs):
    """(torch outcome, ember outcome) of `fn(lib, *tensors)`, each argument a (torch, ember)
    pair; an outcome is the result or the exception raised."""
    out = []
    for k, lib in enumerate((torch, ember)):
        try:
            out.append(fn(lib, *(p[k] for p in pairs)))
        except Exception as e:  # noqa: BLE001 - compared by the caller
            out.append(e)
    return out


def gist(msg):
    return set(re.findall(r"[a-z_]{4,}", str(msg).lower()))


def same_error(te, ee):
    assert isinstance(ee, Exception), f"torch raised {type(te).__name__}: {te}; ember gave {ee}"
    assert type(ee) is type(te) or isinstance(ee, type(te)), \
        f"exception {type(ee).__name__}({ee}) vs torch {type(te).__name__}({te})"
    words = gist(str(te).splitlines()[0] if str(te) else "")
    if words:   # the gist: most of torch's words appear in ember's message
        got = gist(ee)
        assert len(words & got) >= len(words) / 2, f"message {ee!r} vs torch {te!r}"


def check(fn, *args, rtol=None, atol=None):
    """Run `fn(lib, *tensors)` on both libraries; compare results or exception types.
    Returns the (torch, ember) results for further checks (None, None if both raised)."""
    t, e = run(fn, *args)
    if isinstance(t, Exception):
        same_error(t, e)
        return None, None
    if isinstance(e, Exception):
        raise AssertionError(f"torch gave a result, ember raised {type(e).__name__}: {e}") \
            from e
    compare(e, t, rtol=rtol, atol=atol)
    return t, e


def compare(e, t, what="result", rtol=None, atol=None):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t), f"{what}: {e} vs {t}"
        for i, (x, y) in enumerate(zip(e, t)):
            compare(x, y, f"{what}[{i}]", rtol, atol)
    elif isinstance(t, torch.Tensor):
        same(e, t, what, rtol, atol)
    else:
        assert e == t, f"{what}: {e} vs {t}"


def points_to(values, indices, x, dim, keepdim=True):
    """x gathered at `indices` along `dim` equals `values` (ember tensors, NaN == NaN)."""
    xa, ia, va = to_np(x), to_np(indices), to_np(values)
    if xa.ndim == 0:
        assert ia.item() == 0
        return
    if not keepdim:
        ia, va = np.expand_dims(ia, dim), np.expand_dims(va, dim)
    got = np.take_along_axis(xa, ia, dim)
    np.testing.assert_array_equal(got, va)


# ---- strategies ----
@st.composite
def shapes(draw, min_dims=0, max_dims=3, min_side=0, max_side=4):
    nd = draw(st.integers(min_dims, max_dims))
    return tuple(draw(st.integers(min_side, max_side)) for _ in range(nd))


@st.composite
def dim_args(draw, ndim, kinds=("none", "int", "tuple")):
    """A `dim` argument valid for `ndim` dims (negative ones too), of an allowed kind."""
    kinds = [k for k in kinds if k == "none" or ndim > 0 or k == "int"]
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    n = max(ndim, 1)
    if kind == "int":
        d = draw(st.integers(0, n - 1))
        return d - n if draw(st.booleans()) else d
    ds = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    return tuple(d - n if draw(st.booleans()) else d for d in ds)


seeds = st.integers(0, 2**31 - 1)
