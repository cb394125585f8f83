"""Tests generated from the op registry: for every registered op with samples (samples.py),
(a) values, shapes, dtypes (and strides where PyTorch's are deterministic) against torch on
the same inputs, called by the op's public name on both sides; (b) gradcheck in float64 and
the gradients equal to torch's, for every sample whose result torch can differentiate (and
where torch cannot, ember's result must not require grad either); (c) the op under
ember.compile gives what eager gives, and so do the gradients through it for ops with
backward templates (OpDef.derivatives).

Known mismatches live in KNOWN_FAILURES, as strict xfails: a fix turns them into failures,
so the table only shrinks. A sample that torch rejects checks that ember raises alike.
"""
import math
import os
import zlib
from dataclasses import replace

import numpy as np
import pytest
import torch

import ember
from ember.ops.registry import OPS, POINTWISE, RANDOM, VIEW

try:
    from ._make import arrays_in, call, make_tensor, realize, to_lib
    from .samples import samples_for
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import arrays_in, call, make_tensor, realize, to_lib
    from samples import samples_for

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")   # the C backend: EMBER_TEST_BACKEND=c

# (check, op name) -> why ember differs from torch today. Keep it short: fix what is local.
# A key (check, name) marks the op's whole test; (check, name, i) only its sample i, which
# then runs alone in test_known_failing_sample.
KNOWN_FAILURES = {
    ("values", "rand_like", 0): "the result is contiguous; torch keeps a dense input's "
                                "strides (preserve_format) -- ops/random.py",
    ("grad", "quantile"): "ember's quantile is not differentiable in a tensor q",
    ("grad", "linalg_lu_factor"): "ember has no derivative of lu_factor for non-square "
                                  "matrices (NotImplementedError); torch has one",
    ("grad", "ldexp", 3): "torch's LdexpBackward computes 2 ** other in integer arithmetic "
                          "(0 for a negative exponent); ember's is the true derivative "
                          "(gradcheck holds)",
    ("grad", "as_strided_scatter"): "torch's gradient for `input` is wrong (torch's own "
                                    "gradcheck fails on it); ember's passes gradcheck",
    ("grad", "linalg_cholesky_ex", 2): "a failed factorization (info > 0) records no node "
                                       "in ember; torch's result requires grad",
    ("grad", "linalg_inv_ex", 2): "a singular input (info > 0) records no node in ember; "
                                  "torch's result requires grad",
    ("grad", "linalg_solve_ex", 2): "a singular input (info > 0) records no node in ember; "
                                    "torch's result requires grad",
}

# ops the compiled-vs-eager test leaves out, and why
COMPILE_SKIPS = {
    "manual_seed": "returns a Generator, not a tensor",
    "seed": "returns a Python int (a fresh seed each call)",
    "initial_seed": "returns a Python int",
    "get_rng_state": "reads the generator's state (a side effect the tracer does not replay)",
    "set_rng_state": "writes the generator's state",
    "histogramdd": "its result holds a list of edge tensors (torch's type), which the tracer "
                   "does not see made",
}

# the creation ops whose result keeps the input's strides (preserve_format)
STRIDED = {"contiguous", "clone", "zeros_like", "ones_like", "full_like", "empty_like",
           "rand_like", "randn_like", "randint_like"}

NAMES = sorted(n for n in OPS if samples_for(n))
# a random op's gradient (the implicit one of _standard_gamma) cannot be gradchecked: each
# call draws anew; tests/distributions checks it against torch's
# torch decides which samples are differentiable: composites (losses, views built on others)
# are gradchecked as well as the ops with their own formulas
GRAD_NAMES = [n for n in NAMES if OPS[n].kind != RANDOM]
# the compiled backward: ops that record backward templates of their own
COMPILE_GRAD_NAMES = [n for n in GRAD_NAMES if OPS[n].derivatives]
COMPILE_NAMES = [n for n in NAMES if n not in COMPILE_SKIPS]
COMPILED_SAMPLES = 2   # per op: tracing dominates the cost of these tests
TOL = {torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7),
       torch.complex64: (1.3e-6, 1e-5), torch.complex128: (1e-7, 1e-7)}


def params(check, names):
    out = []
    for n in names:
        reason = KNOWN_FAILURES.get((check, n))
        out.append(pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=reason))
                   if reason else n)
    return out


@pytest.fixture(autouse=True)
def _keep_rng_state():
    """Random ops and the seeding functions must not leave the generators moved."""
    t, e = torch.get_rng_state(), ember.get_rng_state()
    yield
    torch.set_rng_state(t)
    ember.set_rng_state(e)


def realized(name, i, sample, **kw):
    rng = np.random.default_rng(zlib.crc32(f"{name}/{i}".encode()))
    return realize((sample.args, sample.kwargs), rng, **kw)


def run(name, sample, arrs, lib, tensors=None):
    """Call the op on `lib` with the realized arguments; `tensors` (in arrays_in order)
    replace the tensors to_lib would make."""
    tensor = None if tensors is None else (lambda a, it=iter(tensors): next(it))
    args, kwargs = to_lib(arrs, lib, tensor)
    return call(name, sample, args, kwargs, lib)   # (_make.REFERENCE for ops torch lacks)


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - any exception type is compared with torch's
        return "raise", exc


def to_torch(e):
    a = np.array(e.detach().resolve_conj().numpy(), order="C")
    return torch.from_numpy(a) if a.size else torch.from_numpy(a).clone()


def as_torch(r):
    """An ember result as torch objects (for comparing two ember results)."""
    if isinstance(r, ember.Tensor):
        return to_torch(r)
    if isinstance(r, (tuple, list)):
        return tuple(as_torch(x) for x in r)
    return r


def same(e, t, sample, strides, where="result"):
    """ember result `e` is torch result `t`: types, dtypes, shapes, values, strides."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"{where}: expected a Tensor, got {type(e)}"
        assert str(e.dtype).replace("ember.", "") == str(t.dtype).replace("torch.", ""), \
            f"{where}: dtype {e.dtype} != {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), \
            f"{where}: shape {tuple(e.shape)} != {tuple(t.shape)}"
        if sample.values:
            rtol, atol = sample.tol or TOL.get(t.dtype, (0, 0))
            torch.testing.assert_close(to_torch(e), t.detach(), rtol=rtol, atol=atol,
                                       equal_nan=True, msg=lambda m: f"{where}: {m}")
        if strides and t.numel() > 0:
            assert e.stride() == t.stride(), f"{where}: strides {e.stride()} != {t.stride()}"
    elif isinstance(t, (tuple, list)) and not isinstance(t, torch.Size):
        assert isinstance(e, (tuple, list)), f"{where}: expected a sequence, got {type(e)}"
        for f in getattr(t, "_fields", ()):
            assert hasattr(e, f), f"{where}: result has no field {f!r}"
        assert len(e) == len(t), f"{where}: {len(e)} results != {len(t)}"
        for k, (x, y) in enumerate(zip(e, t)):
            same(x, y, sample, strides, f"{where}[{k}]")
    elif isinstance(t, torch.Size):
        assert tuple(e) == tuple(t), f"{where}: {tuple(e)} != {tuple(t)}"
    elif isinstance(t, torch.dtype):
        assert str(e).replace("ember.", "") == str(t).replace("torch.", ""), (e, t)
    elif isinstance(t, torch.Generator):
        assert type(e).__name__ == "Generator", f"{where}: {type(e)}"
    elif t is None:
        assert e is None, f"{where}: {e!r} is not None"
    else:
        assert type(e) is type(t), f"{where}: {type(e).__name__} != {type(t).__name__}"
        if sample.values:
            assert e == t or (isinstance(t, float) and math.isnan(t) and math.isnan(e)), \
                f"{where}: {e!r} != {t!r}"


def check_strides(name, arrs):
    """PyTorch's result strides are a contract for views, for the ops that keep their
    input's layout, and for pointwise ops on contiguous inputs."""
    kind = OPS[name].kind
    if kind == VIEW or name in STRIDED:
        return True
    return kind == POINTWISE and all(a.layout == "C" for a in arrays_in(arrs))


def raised_alike(e_exc, t_exc):
    for base in (IndexError, TypeError, ValueError, RuntimeError, NotImplementedError):
        if isinstance(t_exc, base):
            return isinstance(e_exc, base)
    return True


def check_values(name, i, s):
    """Sample i of op `name` gives on ember what it gives on torch; False when torch
    rejected it (and ember raised alike)."""
    arrs = realized(name, i, s)
    tk, tr = outcome(lambda: run(name, s, arrs, torch))
    ek, er = outcome(lambda: run(name, s, arrs, ember))
    where = f"{name} sample {i}: {s}"
    if tk == "raise":
        assert ek == "raise", f"{where}: torch raised {type(tr).__name__}: {tr}; ember returned"
        assert raised_alike(er, tr), (f"{where}: torch raised {type(tr).__name__}: {tr}; "
                                      f"ember raised {type(er).__name__}: {er}")
        return False
    if ek == "raise":
        raise AssertionError(f"{where}: ember raised, torch returned") from er
    if s.post is not None:
        er, tr = s.post(er), s.post(tr)
    same(er, tr, s, check_strides(name, arrs), where)
    return True


@pytest.mark.parametrize("name", params("values", NAMES))
def test_values(name):
    ran = 0
    for i, s in enumerate(samples_for(name)):
        if ("values", name, i) not in KNOWN_FAILURES:
            ran += check_values(name, i, s)
    assert ran, f"{name}: torch rejected every sample (the sampler does not fit the op)"


SAMPLE_FAILURES = sorted(k for k in KNOWN_FAILURES if len(k) == 3)


@pytest.mark.parametrize("check,name,i", [
    pytest.param(*k, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[k]),
                 id=f"{k[0]}-{k[1]}-{k[2]}") for k in SAMPLE_FAILURES])
def test_known_failing_sample(check, name, i):
    """The samples listed one by one in KNOWN_FAILURES still fail (else: remove the row)."""
    s = samples_for(name)[i]
    if check == "grad":
        arrs = realized(name, i, s, float64=True, leaf_layouts=False)
        assert _check_gradients(name, i, s, arrs, arrays_in(arrs))
        return
    assert check == "values"
    check_values(name, i, s)


def _float_outputs(r, lib):
    r = r if isinstance(r, (tuple, list)) else (r,)
    return [o for o in r if isinstance(o, lib.Tensor) and o.dtype.is_floating_point
            and o.requires_grad]


def _as_real(r, lib):
    """Complex results as their (..., 2) real views: gradcheck and the gradient comparison
    then see a real function of real inputs (torch's convention for complex outputs)."""
    if isinstance(r, lib.Tensor) and r.dtype.is_complex:
        return lib.view_as_real(r.resolve_conj())
    if isinstance(r, (tuple, list)):
        parts = [_as_real(x, lib) for x in r]
        return type(r)(*parts) if hasattr(r, "_fields") else type(r)(parts)   # named tuples
    return r


GRADCHECK_SIZE = 30     # differentiable input elements: finite differences cost one call each


@pytest.mark.parametrize("name", params("grad", GRAD_NAMES))
def test_gradcheck(name):
    """gradcheck, and the gradients equal to torch's, on up to 4 of the op's samples that
    torch differentiates (the small ones; the smallest other one when none is small)."""
    checked, big = 0, []
    for i, s in enumerate(samples_for(name)):
        if not s.grad or ("grad", name, i) in KNOWN_FAILURES:
            continue
        arrs = realized(name, i, s, float64=True, leaf_layouts=False)
        leaves = arrays_in(arrs)
        diff = [a for a in leaves if a.grad and a.base.dtype.kind == "f"]
        if not diff:
            continue
        size = sum(a.base.size for a in diff)
        if size > GRADCHECK_SIZE:
            big.append((size, i, s, arrs, leaves))
            continue
        checked += _check_gradients(name, i, s, arrs, leaves)
        if checked == 4:
            return
    if not checked and big:
        checked += _check_gradients(name, *min(big, key=lambda b: b[0])[1:])
    assert checked or not OPS[name].grads, f"{name}: no sample has a differentiable result"


# ops defined on symmetric (Hermitian) matrices read one triangle: finite differences must
# move both triangles, so their input is symmetrised first (as torch's OpInfo does)
HERMITIAN_INPUT = {"cholesky", "linalg_cholesky", "linalg_cholesky_ex", "linalg_eigh",
                   "linalg_eigvalsh"}
# ops whose gradient torch defines by a convention that finite differences do not
# reproduce; their gradients are still compared with torch's
NO_GRADCHECK = {"ctc_loss": "torch's ctc_loss gradient assumes the log-probabilities are "
                            "normalised (log_softmax outputs); gradcheck perturbs them freely"}


def _numel(r):
    r = r if isinstance(r, (tuple, list)) else (r,)
    return sum(o.numel() for o in r if isinstance(o, torch.Tensor))


def _check_gradients(name, i, s, arrs, leaves):
    """1 when sample i was checked; 0 when torch's result is not differentiable (then
    ember's must not require grad either)."""
    def f(lib, ts):
        if name in HERMITIAN_INPUT:
            ts = ((ts[0] + ts[0].mT) / 2,) + tuple(ts[1:])
        r = run(name, s, arrs, lib, tensors=ts)
        return _as_real(r if s.post is None else s.post(r), lib)

    t_in = [make_tensor(a, torch, requires_grad=True) for a in leaves]
    tk, tr = outcome(lambda: f(torch, t_in))
    t_outs = _float_outputs(tr, torch) if tk == "ok" else []
    e_in = [make_tensor(a, ember, requires_grad=True) for a in leaves]

    def fn(*ts):
        return f(ember, ts)
    where = f"{name} sample {i}: {s}"
    if not t_outs:
        if tk == "ok" and _numel(tr) and all(a.base.size for a in leaves):
            # torch cannot differentiate it: neither may ember (torch's shortcuts for
            # empty inputs aside)
            ek, er = outcome(lambda: fn(*e_in))
            assert ek != "ok" or not _float_outputs(er, ember), \
                f"{where}: ember's result requires grad, torch's does not"
        return 0
    # the gradients equal torch's, for one random output gradient
    rng = np.random.default_rng(i)
    gos = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    t_req = [t for t in t_in if t.requires_grad]
    tk, tg = outcome(lambda: torch.autograd.grad(
        t_outs, t_req, [torch.from_numpy(g) for g in gos], allow_unused=True))
    e_outs = _float_outputs(fn(*e_in), ember)
    e_req = [t for t in e_in if t.requires_grad]

    def ember_grads():
        return ember.autograd.grad(e_outs, e_req, [ember.from_numpy(g.copy()) for g in gos],
                                   allow_unused=True)
    finite = all(bool(torch.isfinite(o).all()) for o in t_outs)
    if tk == "raise":
        # torch has no derivative here: ember refuses alike (qr's complete mode on a tall
        # matrix), or its gradient is a true one (floor_divide's zeros)
        ek, eg = outcome(ember_grads)
        if ek == "raise":
            assert type(eg) is type(tg), f"{where}: ember raised {eg!r}, torch {tg!r}"
        else:
            assert ember.autograd.gradcheck(fn, tuple(e_in)), where
        return 1
    if finite and name not in NO_GRADCHECK:     # (NaN results: NaN Jacobians never match)
        assert ember.autograd.gradcheck(fn, tuple(e_in)), where
    eg = ember_grads()
    for k, (a, b) in enumerate(zip(eg, tg)):
        if b is None or a is None and not b.any():
            assert a is None or not a.detach().numpy().any(), f"{where}: grad {k}"
        else:
            assert a is not None, f"{where}: grad {k} is None, torch's is not"
            torch.testing.assert_close(to_torch(a), b, rtol=1e-6, atol=1e-9, equal_nan=True,
                                       msg=lambda m: f"{where}: grad {k}: {m}")
    return 1


@pytest.mark.parametrize("name", params("compile", COMPILE_NAMES))
def test_compiled(name):
    ran = 0
    for i, s in enumerate(samples_for(name)):
        if ran == COMPILED_SAMPLES:
            break
        arrs = realized(name, i, s)
        ins = [make_tensor(a, ember) for a in arrays_in(arrs)]

        def fn(*ts):
            return run(name, s, arrs, ember, tensors=ts)
        random = OPS[name].kind == RANDOM
        if random:
            ember.manual_seed(i)
        ek, expected = outcome(lambda: fn(*ins))
        if ek == "raise":
            continue          # errors are test_values' business
        cf = ember.compile(fn, backend=BACKEND, fullgraph=True)
        for call_no in range(2):   # the tracing call, then a replay
            if random:
                ember.manual_seed(i)
            got = cf(*ins)
            if s.post is not None:
                got = s.post(got)
            exp = s.post(expected) if s.post is not None else expected
            # seeded alike, a random op draws the same values eagerly and compiled
            same(got, as_torch(exp), replace(s, values=True) if random else s, False,
                 f"{name} sample {i} call {call_no}: {s}")
        ran += 1
    assert ran, f"{name}: no sample ran eagerly"


@pytest.mark.parametrize("name", params("compile_grad", COMPILE_GRAD_NAMES))
def test_compiled_backward(name):
    """The gradients through the compiled op (the captured backward) equal eager's."""
    for i, s in enumerate(samples_for(name)):
        arrs = realized(name, i, s, float64=True, leaf_layouts=False)
        leaves = arrays_in(arrs)

        def fn(*ts):
            return run(name, s, arrs, ember, tensors=ts)

        def grads(f):
            ins = [make_tensor(a, ember, requires_grad=True) for a in leaves]
            outs = _float_outputs(_as_real(f(*ins), ember), ember)
            req = [t for t in ins if t.requires_grad]
            if not outs or not req:
                return None
            rng = np.random.default_rng(i)
            gos = [ember.from_numpy(rng.standard_normal(tuple(o.shape))) for o in outs]
            return ember.autograd.grad(outs, req, gos, allow_unused=True)
        ek, expected = outcome(lambda: grads(fn))
        if ek == "raise" or expected is None:
            continue
        cf = ember.compile(fn, backend=BACKEND, fullgraph=True)
        for call_no in range(2):   # the tracing call, then a replay
            got = grads(cf)
            same(got, as_torch(expected), s, False, f"{name} sample {i} call {call_no}: {s}")
        return
    # an op that records its backward only through shared templates may have no
    # differentiable sample (imag of real samples); one with its own formulas must
    assert not OPS[name].grads, f"{name}: no sample has a differentiable result"
