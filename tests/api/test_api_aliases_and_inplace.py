"""Every alias and in-place form of a registered op, called by its own name on torch and on
ember with the op's samples (tests/opinfo/samples*.py): `torch.arccosh`, `x.greater_(y)`,
`x.bitwise_and_(y)`, `x.squeeze_()`... The generated op tests call each op by its registry
name only, so these names are checked here: the same result (dtype, shape, values), the
same in-place effect on the tensor (and `self` returned), or the same exception class.
"""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember.ops.registry import FUNCTIONS, METHODS, RANDOM, op_for

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "opinfo"))
from _make import realize, to_lib  # noqa: E402
from samples import samples_for  # noqa: E402

SAMPLES_PER_NAME = 3


def _alias_names(table, owner):
    """Names of `table` (ember's functions or methods) that are another name of a registered
    op with samples, and that torch has on `owner` too."""
    out = []
    for n in sorted(table):
        op = op_for(n[:-1] if n.endswith("_") and n not in FUNCTIONS else n)
        if op is None or op.kind == RANDOM or n == op.name or not samples_for(op.name):
            continue
        if n.startswith("_") or not hasattr(owner, n):
            continue
        out.append((n, op.name))
    return out


FUNCTION_ALIASES = _alias_names(FUNCTIONS, torch)
METHOD_FORMS = _alias_names(METHODS, torch.Tensor)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - the class is compared with torch's
        return "raise", exc


def _np(t):
    if isinstance(t, ember.Tensor):
        t = t.detach().resolve_conj()
        a = t._numpy()
        return str(t.dtype).replace("ember.", ""), np.asarray(a, dtype=np.float64 if
                                                              a.dtype.kind in "fV" else None)
    t = t.detach().resolve_conj()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return str(t.dtype).replace("torch.", ""), t.numpy()


def _same(e, t, where):
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"{where}: {type(e).__name__}, torch a Tensor"
        (ed, ea), (td, ta) = _np(e), _np(t)
        assert ed == td.replace("torch.", ""), f"{where}: dtype {ed} != {td}"
        assert ea.shape == ta.shape, f"{where}: shape {ea.shape} != {ta.shape}"
        if ea.dtype.kind == "c" or ta.dtype.kind == "c":
            np.testing.assert_allclose(ea, ta, rtol=1e-5, atol=1e-6, err_msg=where)
        else:
            np.testing.assert_allclose(ea.astype(np.float64), ta.astype(np.float64),
                                       rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=where)
    elif isinstance(t, (tuple, list)):
        assert len(e) == len(t), where
        for k, (x, y) in enumerate(zip(e, t)):
            _same(x, y, f"{where}[{k}]")
    elif isinstance(t, float) and math.isnan(t):
        assert isinstance(e, float) and math.isnan(e), where
    else:
        assert e == t, f"{where}: {e!r} != {t!r}"


def _calls(op_name):
    """(index, sample, realized arguments) of each of the op's samples."""
    for i, s in enumerate(samples_for(op_name)):
        rng = np.random.default_rng(i)
        try:
            yield i, s, realize((s.args, s.kwargs), rng)
        except (OverflowError, ValueError):
            continue


def _check(name, op_name, call):
    """Compare up to SAMPLES_PER_NAME samples that run on both (and every refused one met
    on the way); the number that ran."""
    ran = 0
    for i, s, arrs in _calls(op_name):
        if ran == SAMPLES_PER_NAME:
            break
        where = f"{name} ({op_name} sample {i})"
        results = {}
        for lib in (torch, ember):
            args, kwargs = to_lib(arrs, lib)
            results[lib] = _outcome(lambda: call(lib, args, kwargs))
        (tk, tv), (ek, ev) = results[torch], results[ember]
        if tk == "raise":
            assert ek == "raise", f"{where}: torch raised {tv!r}, ember returned"
            assert type(ev).__mro__[0] is type(tv) or isinstance(ev, type(tv)), \
                f"{where}: ember raised {type(ev).__name__}, torch {type(tv).__name__}: {tv}"
            continue
        assert ek == "ok", f"{where}: ember raised {ev!r}, torch returned"
        _same(ev, tv, where)
        ran += 1
    return ran


@pytest.mark.parametrize("name,op_name", FUNCTION_ALIASES,
                         ids=[n for n, _ in FUNCTION_ALIASES])
def test_function_alias_matches_torch(name, op_name):
    _check(name, op_name, lambda lib, a, kw: getattr(lib, name)(*a, **kw))


def _method(name):
    def call(lib, args, kwargs):
        if not args or not isinstance(args[0], lib.Tensor):
            raise TypeError("no tensor to call the method on")
        if name.endswith("_"):       # in place: on a copy; the tensor after, and the result
            x = args[0].detach().clone()
            r = getattr(x, name)(*args[1:], **kwargs)
            assert r is x, f"{name} returned a new tensor, not self"
            return x
        return getattr(args[0], name)(*args[1:], **kwargs)
    return call


@pytest.mark.parametrize("name,op_name", METHOD_FORMS, ids=[n for n, _ in METHOD_FORMS])
def test_method_form_matches_torch(name, op_name):
    _check(name, op_name, _method(name))


def test_the_lists_hold_the_names_they_are_for():
    """The names the generated op tests never call by name are all here."""
    methods = {n for n, _ in METHOD_FORMS}
    functions = {n for n, _ in FUNCTION_ALIASES}
    assert {"acosh_", "greater_", "bitwise_and_", "squeeze_", "true_divide_",
            "multiply_"} <= methods
    assert {"arccosh", "arcsinh", "arctanh", "absolute"} <= functions | methods
    assert len(methods) > 100 and len(functions) >= 20
