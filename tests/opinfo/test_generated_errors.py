"""Error inputs, generated from the registry (issue 19; PyTorch's OpInfo error_inputs).

For every registered op with error inputs (error_inputs.py: the generic ones its kind and
signature give, and its own), each invalid call runs on torch first: torch must raise the
entry's exception class with a message matching the entry's regex, otherwise the entry is
wrong (so the table cannot drift from torch). Then on ember, which must raise the same
builtin exception class (IndexError, TypeError, ValueError, NotImplementedError,
RuntimeError...) with a message matching the same regex.

Where ember differs today, the case is listed in KNOWN as a strict xfail: it runs alone in
test_known_error_mismatch and must still fail, so a fix fails until its row is removed and
the table only shrinks.
"""
import builtins
import re
import zlib

import numpy as np
import pytest
import torch

import ember
from ember.ops.registry import OPS

try:
    from ._make import call, realize, to_lib
    from .error_inputs import check_tables, error_inputs_for, error_names
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import call, realize, to_lib
    from error_inputs import check_tables, error_inputs_for, error_names

# (op name, error input `what`) -> why ember differs from torch today (keep it short; fix
# what is local). Each row is a strict xfail: it must keep failing until it is removed.
KNOWN = {
}

# the coverage floor (ops with error inputs, cases): raise it as entries are added, so the
# tables cannot shrink unnoticed
MIN_OPS, MIN_CASES = 492, 856

NAMES = error_names()


def builtin_class(exc):
    """The most derived builtin class of `exc` (torch's LinAlgError -> RuntimeError)."""
    return next(c for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c)


def _raised(fn):
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - any exception is compared with the entry's
        return exc
    return f"returned {type(r).__name__}"


def run_error_input(name, i, e):
    """Error input `e` (index i) of op `name`: torch raises as the entry says (else the entry
    is wrong), and ember raises alike."""
    rng = np.random.default_rng(zlib.crc32(f"error/{name}/{i}".encode()))
    arrs = realize((e.sample.args, e.sample.kwargs), rng)
    where = f"{name} error input {e!r}"

    def on(lib):
        args, kwargs = to_lib(arrs, lib)
        return call(name, e.sample, args, kwargs, lib)
    t = _raised(lambda: on(torch))
    assert isinstance(t, Exception), f"{where}: torch {t} (the error input is wrong)"
    assert builtin_class(t) is e.exc and re.search(e.regex, str(t)), \
        f"{where}: torch raised {type(t).__name__}: {t} (the error input is wrong)"
    got = _raised(lambda: on(ember))
    assert isinstance(got, Exception), f"{where}: torch raised {type(t).__name__}: {t}; " \
                                       f"ember {got}"
    assert builtin_class(got) is e.exc, (f"{where}: ember raised {type(got).__name__}: {got}; "
                                         f"torch {type(t).__name__}: {t}")
    assert re.search(e.regex, str(got)), (f"{where}: ember's message does not match: "
                                          f"{type(got).__name__}: {got}; torch's: {t}")


@pytest.mark.parametrize("name", NAMES)
def test_error_inputs(name):
    for i, e in enumerate(error_inputs_for(name)):
        if (name, e.what) not in KNOWN:
            run_error_input(name, i, e)


def _known_params():
    out = []
    for name, what in sorted(KNOWN):
        out.append(pytest.param(name, what, id=f"{name}-{what}",
                                marks=pytest.mark.xfail(strict=True,
                                                        reason=KNOWN[(name, what)])))
    return out


@pytest.mark.parametrize("name,what", _known_params())
def test_known_error_mismatch(name, what):
    """Each KNOWN case still differs from torch (else: remove its row)."""
    for i, e in enumerate(error_inputs_for(name)):
        if e.what == what:
            run_error_input(name, i, e)
            return
    raise AssertionError(f"{name}: no error input {what!r}")   # a strict xfail hides this


def test_known_table_is_not_stale():
    for name, what in KNOWN:
        assert name in OPS, f"KNOWN names an unregistered op: {name}"
        assert what in [e.what for e in error_inputs_for(name)], f"{name}: no {what!r}"


def test_tables_and_coverage():
    """Unique case names per op, regexes that compile, and the coverage floor."""
    assert check_tables()
    cases = sum(len(error_inputs_for(n)) for n in NAMES)
    assert len(NAMES) >= MIN_OPS and cases >= MIN_CASES, (len(NAMES), cases)
