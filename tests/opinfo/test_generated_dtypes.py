"""dtype coverage, generated from the registry (issue 19, part 2).

For every registered op with samples, its first float32 sample is recast to each dtype
(float16, bfloat16, float64, complex64, the integers, bool) and called on torch and on
ember. Both must succeed with the same result dtypes and shapes, or both raise the same
class of exception (torch's NotImplementedError "<kernel>" not implemented for '<Dtype>'
included). The differences ember has today are listed in dtype_known.py, as strict
expectations: a listed case that starts to agree fails until its entry is removed, so the
list only shrinks.

For every op that declares `dtypes=` on its OpDef (ember/ops/dtype_support.py), the
declaration itself is checked against torch: on each dtype where torch either runs the op
or raises NotImplementedError, the dtype is declared exactly when torch runs it, and ember
raises NotImplementedError naming the dtype as torch does for the others.
"""
import re
import zlib
from dataclasses import replace

import numpy as np
import pytest
import torch

import ember
from ember.ops.registry import OPS, RANDOM
from ember.core import dtype as D

try:
    from ._make import T, call, realize, to_lib
    from .samples import samples_for
    from .dtype_known import KNOWN
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import T, call, realize, to_lib
    from samples import samples_for
    from dtype_known import KNOWN

DTYPES = ["float16", "bfloat16", "float64", "complex64", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def _has_float32(obj):
    if isinstance(obj, T):
        return obj.dtype == "float32"
    if isinstance(obj, (list, tuple)):
        return any(_has_float32(x) for x in obj)
    if isinstance(obj, dict):
        return any(_has_float32(v) for v in obj.values())
    return False


def _recast(obj, dt):
    """Every float32 tensor description of `obj` as `dt` (bfloat16 is drawn as float32 and
    converted after, NumPy having no bfloat16)."""
    if isinstance(obj, T):
        if obj.dtype != "float32" or dt == "bfloat16":
            return obj
        integral = dt == "bool" or dt.startswith(("int", "uint"))
        lo, hi = (max(0.0, obj.lo), max(1.0, obj.hi)) if dt == "uint8" else (obj.lo, obj.hi)
        return replace(obj, dtype=dt, lo=lo, hi=hi, make=None if integral else obj.make)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_recast(x, dt) for x in obj)
    if isinstance(obj, dict):
        return {k: _recast(v, dt) for k, v in obj.items()}
    return obj


def _to_bf16(obj, lib):
    if isinstance(obj, lib.Tensor):
        return obj.to(lib.bfloat16) if obj.dtype == lib.float32 else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_bf16(x, lib) for x in obj)
    if isinstance(obj, dict):
        return {k: _to_bf16(v, lib) for k, v in obj.items()}
    return obj


def _sample(name):
    for s in samples_for(name):
        if _has_float32(s.args) or _has_float32(s.kwargs):
            return s
    return None


def _outcome(name, sample, dt, lib):
    rng = np.random.default_rng(zlib.crc32(f"{name}/{dt}".encode()))
    try:
        arrs = realize((_recast(sample.args, dt), _recast(sample.kwargs, dt)), rng)
    except (OverflowError, ValueError):     # explicit values this dtype cannot hold
        return "skip", None
    args, kwargs = to_lib(arrs, lib)
    if dt == "bfloat16":
        args, kwargs = _to_bf16(args, lib), _to_bf16(kwargs, lib)
    try:
        return "ok", call(name, sample, args, kwargs, lib)
    except Exception as exc:  # noqa: BLE001 - the class is compared with torch's
        return "raise", exc


def _signature(result):
    """(dtype, shape) of every tensor in a result, as comparable strings."""
    if isinstance(result, (torch.Tensor, ember.Tensor)):
        return [(str(result.dtype).split(".")[-1], tuple(result.shape))]
    if isinstance(result, (tuple, list)) and not isinstance(result, torch.Size):
        return [x for r in result for x in _signature(r)]
    return []


def _same_class(e, t):
    """Same exception class; torch's RuntimeError family (except NotImplementedError,
    which callers catch by name) counts as one class."""
    if type(e).__name__ == type(t).__name__:
        return True
    loose = (RuntimeError,)
    return (isinstance(t, loose) and isinstance(e, loose) and
            not isinstance(t, NotImplementedError) and not isinstance(e, NotImplementedError))


def difference(name, dt):
    """None when ember and torch agree on op `name` at dtype `dt`, else what differs."""
    sample = _sample(name)
    kt, rt = _outcome(name, sample, dt, torch)
    if kt == "skip":
        return None
    ke, re_ = _outcome(name, sample, dt, ember)
    if kt == "ok" and ke == "ok":
        st, se = _signature(rt), _signature(re_)
        return None if st == se else f"result {se} != torch's {st}"
    if kt == "raise" and ke == "raise":
        return None if _same_class(re_, rt) else \
            f"ember raised {type(re_).__name__}, torch {type(rt).__name__}: {rt}"
    if kt == "raise":
        return f"accepted: torch raised {type(rt).__name__}: {str(rt)[:100]}"
    return f"spurious: ember raised {type(re_).__name__}: {str(re_)[:100]}"


NAMES = sorted(n for n in OPS if OPS[n].kind != RANDOM and _sample(n) is not None)
CASES = [(n, dt) for n in NAMES for dt in DTYPES]


@pytest.mark.parametrize("name", NAMES)
def test_every_dtype_agrees_with_torch(name):
    unexpected, fixed = [], []
    for dt in DTYPES:
        diff = difference(name, dt)
        known = KNOWN.get((name, dt))
        if diff is not None and known is None:
            unexpected.append(f"{dt}: {diff}")
        elif diff is None and known is not None:
            fixed.append(f"{dt} (listed: {known})")
    assert not unexpected, f"{name} differs from torch: " + "; ".join(unexpected)
    assert not fixed, f"{name} now agrees with torch; remove from dtype_known.py: " + \
        "; ".join(fixed)


def test_known_entries_name_registered_ops_and_dtypes():
    stale = [k for k in KNOWN if k[0] not in NAMES or k[1] not in DTYPES]
    assert not stale, f"dtype_known.py lists ops or dtypes the test does not run: {stale}"


DECLARED = sorted(n for n in NAMES if OPS[n].dtypes is not None)


@pytest.mark.parametrize("name", DECLARED)
def test_declared_dtypes_match_torchs_kernels(name):
    op, sample = OPS[name], _sample(name)
    judged = 0
    for dt in DTYPES + ["float32"]:
        kt, rt = _outcome(name, sample, dt, torch)
        if kt == "skip" or (kt == "raise" and not isinstance(rt, NotImplementedError)):
            continue       # torch refuses for another reason: not a kernel question
        judged += 1
        declared = getattr(D, "bool_" if dt == "bool" else dt) in op.dtypes
        assert declared == (kt == "ok"), \
            f"{name}: {dt} {'declared' if declared else 'not declared'}, torch: {kt} {rt!r}"
        if not declared:
            ke, re_ = _outcome(name, sample, dt, ember)
            assert ke == "raise" and isinstance(re_, NotImplementedError), (name, dt, re_)
            assert re.search(r"not implemented for '\w+'", str(re_)), str(re_)
            assert str(re_).split(" for ")[-1] == str(rt).split(" for ")[-1], (re_, rt)
    assert judged, f"{name}: no dtype judged"


def test_dtype_check_is_the_op_definitions_error():
    x = ember.ones(2, 3, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="\"GeluKernelImpl\" not implemented for 'Long'"):
        ember.nn.functional.gelu(x)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        ember.nn.functional.linear(x.bool(), x.bool())
    # a dtype= argument casts first, as torch's softmax does
    assert ember.softmax(x, 1, dtype=ember.float32).dtype == ember.float32
