"""Guards of ember.compile: each kind of change to a call triggers exactly one recompile,
whose recorded reason names the guard that failed; calling again as before reuses the first
variant; the cache size limit falls back to eager with exactly one warning; reset() forgets
every variant; dynamic sizes. Results are always compared with eager execution.
"""
import os
import logging
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import config

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")   # the C backend: tests/compiler/test_c_backend.py


def cfun(obj):
    return getattr(obj, "_compiled", obj)


def rn(*shape, seed=0, dtype=np.float32):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def n_compiled(compiled):
    return len(cfun(compiled).variants)


def check_one_recompile(fn, call_a, call_b, words, compiled=None):
    """call_a traces; call_b recompiles exactly once with a reason containing every word of
    `words`; then call_a and call_b again replay their variants (no new recompile). Each
    call's result equals the eager one. call_x(f) calls f in the situation and returns
    (result, eager result)."""
    compiled = compiled or ember.compile(fn, backend=BACKEND)
    cf = cfun(compiled)
    for call in (call_a, call_b, call_a, call_b, call_a):
        got, want = call(compiled)
        close(got, want)
    assert len(cf.recompiles) == 1, cf.recompiles
    reason = cf.recompiles[0]
    for w in words:
        assert w in reason, (w, reason)
    assert len(cf.variants) == 2
    assert not any(v.eager for v in cf.variants)
    assert cf.fell_back is None
    return cf, reason, None


# ---------------------------------------------------------------- tensor metadata
def f_basic(x):
    return (x * 2).sin() + 1


def test_shape_change_recompiles_once_naming_the_shape():
    xa, xb = rn(3, 4), rn(5, 4, seed=1)
    check_one_recompile(
        f_basic, lambda f: (f(xa), f_basic(xa)), lambda f: (f(xb), f_basic(xb)),
        ["x.shape", "(3, 4)", "(5, 4)"], ember.compile(f_basic, backend=BACKEND, dynamic=False))


def test_dtype_change_recompiles_once():
    xa, xb = rn(3, 4), rn(3, 4, dtype=np.float64)
    cf, reason, _ = check_one_recompile(
        f_basic, lambda f: (f(xa), f_basic(xa)), lambda f: (f(xb), f_basic(xb)),
        ["x.dtype", "float32", "float64"])
    assert cf.variants[1].guards.check((xb,), {}) and not cf.variants[0].guards.check((xb,), {})


def test_requires_grad_change_recompiles_once():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)

    def call_b(f):
        x1, x2 = ember.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
        out = f(x1)
        out.sum().backward()
        ref = f_basic(x2)
        ref.sum().backward()
        close(x1.grad, x2.grad)
        return out, ref
    check_one_recompile(f_basic, lambda f: (f(ember.tensor(a)), f_basic(ember.tensor(a))),
                        call_b, ["x.requires_grad", "False", "True"])


def test_contiguity_change_recompiles_once():
    xa = rn(4, 4)
    xb = rn(4, 4, seed=1).t()          # same shape, transposed strides
    check_one_recompile(f_basic, lambda f: (f(xa), f_basic(xa)),
                        lambda f: (f(xb), f_basic(xb)), ["x.is_contiguous()", "True", "False"])


def test_stride_change_of_a_non_contiguous_input_recompiles_once():
    base = rn(4, 6)
    xa, xb = base[:, ::2], base.t()[:3, :4].t()    # both non-contiguous, different strides
    assert xa.shape == xb.shape
    check_one_recompile(f_basic, lambda f: (f(xa), f_basic(xa)),
                        lambda f: (f(xb), f_basic(xb)), ["x.stride()"])


# ---------------------------------------------------------------- global state
def test_grad_mode_change_recompiles_once():
    x = rn(3, 4)
    w = ember.tensor(np.ones((4, 2), np.float32), requires_grad=True)

    def fn(x):
        return x @ w

    def call_b(f):
        with ember.no_grad():
            out, ref = f(x), fn(x)
        assert not out.requires_grad
        return out, ref

    def call_a(f):
        out = f(x)
        assert out.requires_grad
        return out, fn(x)
    check_one_recompile(fn, call_a, call_b, ["ember.is_grad_enabled()", "True", "False"])


def test_autocast_change_recompiles_once():
    a, b = rn(3, 4), rn(4, 5, seed=1)

    def fn(a, b):
        return a @ b

    def call_b(f):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out, ref = f(a, b), fn(a, b)
        assert out.dtype == ref.dtype == ember.bfloat16
        return out.float(), ref.float()

    def call_a(f):
        out = f(a, b)
        assert out.dtype == ember.float32
        return out, fn(a, b)
    check_one_recompile(fn, call_a, call_b, ["autocast", "False", "True"])


def test_default_dtype_change_recompiles_once():
    def fn(x):
        return x + ember.ones(3)          # ones() takes the default dtype

    x = rn(3)

    def call_b(f):
        old = ember.get_default_dtype()
        ember.set_default_dtype(ember.float64)
        try:
            out, ref = f(x), fn(x)
        finally:
            ember.set_default_dtype(old)
        assert out.dtype == ref.dtype == ember.float64
        return out, ref
    check_one_recompile(fn, lambda f: (f(x), fn(x)), call_b,
                        ["ember.get_default_dtype()", "float32", "float64"])


# ---------------------------------------------------------------- modules
def make_net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.5), nn.Linear(6, 2))


def test_train_eval_change_recompiles_once():
    net = make_net()
    cm = ember.compile(net, backend=BACKEND)
    x = rn(5, 4)

    def call_in(mode):
        def call(f):
            net.train(mode)
            ember.manual_seed(3)
            out = f(x)
            ember.manual_seed(3)
            return out, net(x)
        return call
    cf, reason, _ = check_one_recompile(None, call_in(True), call_in(False),
                                        ["training", "True", "False"], compiled=cm)
    assert reason.startswith("self.training") or "self.0.training" in reason or \
        "self.1.training" in reason


def test_submodule_training_flag_is_guarded():
    net = make_net()
    cm = ember.compile(net, backend=BACKEND)
    x = rn(5, 4)

    def call_in(mode):
        def call(f):
            net[1].train(mode)          # only the Dropout changes
            ember.manual_seed(4)
            out = f(x)
            ember.manual_seed(4)
            return out, net(x)
        return call
    cf, reason, _ = check_one_recompile(None, call_in(True), call_in(False),
                                        ["self.1.training"], compiled=cm)


def test_replacing_a_parameter_object_recompiles_once():
    net = nn.Linear(4, 3)
    cm = ember.compile(net, backend=BACKEND)
    x = rn(2, 4)
    old_w = net.weight
    new_w = nn.Parameter(rn(3, 4, seed=9))

    def call_with(w):
        def call(f):
            net.weight = w
            return f(x), net(x)
        return call
    cf, reason, _ = check_one_recompile(None, call_with(old_w), call_with(new_w),
                                        ["self.weight"], compiled=cm)
    # the result really uses the new weight
    net.weight = new_w
    close(cm(x), x @ new_w.t() + net.bias)


def test_in_place_parameter_update_does_not_recompile():
    """Parameters are read by reference: an optimizer's in-place update needs no recompile."""
    net = nn.Linear(4, 3)
    cm = ember.compile(net, backend=BACKEND)
    x = rn(2, 4)
    cm(x)
    with ember.no_grad():
        net.weight.mul_(2)
    close(cm(x), net(x))
    assert cfun(cm).recompiles == [] and n_compiled(cm) == 1


# ---------------------------------------------------------------- Python arguments
def f_scalar(x, s):
    return x * s + s


@pytest.mark.parametrize("a,b,words", [
    (2.0, 3.5, ["s", "2.0", "3.5"]),
    (2, 3, ["s", "expected 2", "got 3"]),
    (2, 2.0, ["s"]),                    # same value, another type (int vs float)
])
def test_python_scalar_argument_change_recompiles_once(a, b, words):
    x = rn(3, 2)
    check_one_recompile(f_scalar, lambda f: (f(x, a), f_scalar(x, a)),
                        lambda f: (f(x, b), f_scalar(x, b)), words)


def f_options(x, mode, flag, dims):
    y = x.sum(dims) if mode == "sum" else x.amax(dims)
    return -y if flag else y


@pytest.mark.parametrize("change,words", [
    ({"mode": "amax"}, ["mode", "'sum'", "'amax'"]),
    ({"flag": True}, ["flag", "False", "True"]),
    ({"dims": (1,)}, ["dims"]),
    ({"dims": (0, 1)}, ["dims"]),
])
def test_str_bool_tuple_argument_change_recompiles_once(change, words):
    x = rn(3, 4)
    kw_a = {"mode": "sum", "flag": False, "dims": (0,)}
    kw_b = dict(kw_a, **change)
    check_one_recompile(f_options, lambda f: (f(x, **kw_a), f_options(x, **kw_a)),
                        lambda f: (f(x, **kw_b), f_options(x, **kw_b)), words)


def test_positional_and_keyword_python_arguments():
    x = rn(3, 4)
    cf = ember.compile(f_options, backend=BACKEND)
    for _ in range(2):
        close(cf(x, "sum", False, (1,)), f_options(x, "sum", False, (1,)))
    assert n_compiled(cf) == 1
    close(cf(x, "sum", False, dims=(1,)), f_options(x, "sum", False, (1,)))
    assert n_compiled(cf) == 2       # a keyword instead of a positional is another call


# ---------------------------------------------------------------- dynamic sizes
def test_dynamic_none_makes_a_changed_size_symbolic():
    """dynamic=None: the first size change recompiles with that dim symbolic; further batch
    sizes replay the same variant (no recompile)."""
    cf = ember.compile(f_basic, backend=BACKEND)
    for n in (3, 5, 7, 2, 9, 5):
        x = rn(n, 4, seed=n)
        close(cf(x), f_basic(x))
    assert len(cf.recompiles) == 1, cf.recompiles
    assert n_compiled(cf) == 2


def test_dynamic_true_never_recompiles_for_sizes():
    cf = ember.compile(lambda x: (x * 2).sum(0) + x.mean(), backend=BACKEND, dynamic=True)
    for n in (3, 5, 7, 2):
        x = rn(n, 4, seed=n)
        close(cf(x), (x * 2).sum(0) + x.mean())
    assert cf.recompiles == [] and n_compiled(cf) == 1


def test_dynamic_false_recompiles_for_every_size():
    cf = ember.compile(f_basic, backend=BACKEND, dynamic=False)
    for n in (3, 5, 7, 3):
        x = rn(n, 4, seed=n)
        close(cf(x), f_basic(x))
    assert len(cf.recompiles) == 2 and n_compiled(cf) == 3


def test_dynamic_batch_size_module_with_grads():
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    cm = ember.compile(net, backend=BACKEND)
    for n in (2, 3, 6, 4):
        x = rn(n, 4, seed=n)
        net.zero_grad()
        cm(x).sum().backward()
        g = [p.grad.numpy().copy() for p in net.parameters()]
        net.zero_grad()
        net(x).sum().backward()
        for a, p in zip(g, net.parameters()):
            np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert len(cfun(cm).recompiles) == 1, cfun(cm).recompiles


# ---------------------------------------------------------------- cache size limit, reset
@pytest.fixture
def small_cache(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 2)


def test_cache_size_limit_warns_once_then_runs_eagerly(small_cache):
    cf = ember.compile(f_scalar, backend=BACKEND)
    x = rn(3, 2)
    close(cf(x, 1.0), f_scalar(x, 1.0))
    close(cf(x, 2.0), f_scalar(x, 2.0))
    assert n_compiled(cf) == 2
    with pytest.warns(UserWarning, match="cache size limit") as rec:
        close(cf(x, 3.0), f_scalar(x, 3.0))
    msgs = [str(w.message) for w in rec if "cache size limit" in str(w.message)]
    assert len(msgs) == 1
    assert "s: expected 2.0, got 3.0" in msgs[0], msgs[0]     # names the failing guard
    # no more warnings; results still correct (eager), variants still used where they match
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        for s in (4.0, 5.0, 1.0, 2.0, 6.0):
            close(cf(x, s), f_scalar(x, s))
    assert not [w for w in later if "cache size limit" in str(w.message)]
    assert n_compiled(cf) == 2
    assert cf.fell_back is not None
    assert "Cache size limit" in str(ember.compiler.explain(cf)(x, 7.0))


def test_cache_size_limit_on_a_module_with_grads(small_cache):
    net = nn.Linear(3, 2)
    cm = ember.compile(net, backend=BACKEND, dynamic=False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for n in (1, 2, 3, 4):
            x = rn(n, 3, seed=n)
            net.zero_grad()
            out = cm(x)
            out.sum().backward()
            g = net.weight.grad.numpy().copy()
            net.zero_grad()
            net(x).sum().backward()
            np.testing.assert_allclose(g, net.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    hits = [w for w in rec if "cache size limit" in str(w.message)]
    assert len(hits) == 1 and "input.shape" in str(hits[0].message)


def test_reset_forgets_variants():
    cf = ember.compile(f_basic, backend=BACKEND)
    x = rn(3, 4)
    cf(x)
    cf(rn(2, 2))
    assert n_compiled(cf) == 2 and len(cf.recompiles) == 1
    ember.compiler.reset()
    assert n_compiled(cf) == 0 and cf.recompiles == []
    close(cf(x), f_basic(x))
    assert n_compiled(cf) == 1 and cf.recompiles == []
    close(cf(rn(3, 4, seed=5)), f_basic(rn(3, 4, seed=5)))
    assert n_compiled(cf) == 1


def test_reset_clears_the_cache_size_fallback(small_cache):
    cf = ember.compile(f_scalar, backend=BACKEND)
    x = rn(2)
    with pytest.warns(UserWarning, match="cache size limit"):
        for s in (1.0, 2.0, 3.0):
            cf(x, s)
    ember.compiler.reset()
    close(cf(x, 3.0), f_scalar(x, 3.0))
    assert cf.fell_back is None and n_compiled(cf) == 1 and not cf.variants[0].eager


# ---------------------------------------------------------------- reporting recompiles
def test_explain_reports_each_recompile_with_the_guard():
    cf = ember.compile(f_basic, backend=BACKEND, dynamic=False)
    cf(rn(3, 4))
    report = ember.compiler.explain(cf)(rn(6, 4))
    text = str(report)
    assert "Recompiles:" in text
    assert "x.shape: expected (3, 4), got (6, 4)" in text
    assert report.recompile_reasons == cf.recompiles and len(cf.recompiles) == 1


def test_verbose_recompiles_logs_the_reason(monkeypatch, caplog):
    monkeypatch.setattr(config, "verbose_recompiles", True)
    cf = ember.compile(f_scalar, backend=BACKEND)
    x = rn(2)
    with caplog.at_level(logging.WARNING, logger="ember.compiler"):
        cf(x, 1.0)
        cf(x, 1.0)
        assert not [r for r in caplog.records if "recompil" in r.getMessage()]
        cf(x, 2.0)
    msgs = [r.getMessage() for r in caplog.records if "recompil" in r.getMessage()]
    assert len(msgs) == 1 and "s: expected 1.0, got 2.0" in msgs[0], msgs


def test_guards_hold_for_the_same_call_and_fail_for_changes():
    """The compiled check function agrees with first_failure() on every guard."""
    cf = ember.compile(f_scalar, backend=BACKEND)
    x = rn(3, 2)
    cf(x, 1.5)
    gs = cf.variants[0].guards
    assert gs.check((rn(3, 2, seed=4), 1.5), {}) and gs.first_failure((x, 1.5), {}) is None
    for args in ((x, 2.5), (rn(2, 2), 1.5), (x.double(), 1.5), (x, 1.5, 0)):
        assert not gs.check(args, {})
        assert gs.first_failure(args, {}) is not None
