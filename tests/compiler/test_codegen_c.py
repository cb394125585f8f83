"""Generated C kernels (codegen_c + build) against the NumPy evaluation of the same Kernel IR
(kernel_numpy) and against NumPy written by hand: random expression trees from hypothesis over
1-3 inputs with random stride patterns (broadcast, transposed, padded), float32/float64/int/bool,
reductions with NaN rows, R or N in {0, 1}; threads; the AddressSanitizer harness.

Compiles are the slow part (~0.5 s each), so each hypothesis example builds all its kernels
as ONE library and the cache dir is shared by the module."""
import os
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ember.compiler import build, config, threads
from ember.compiler.codegen_c import generate
from ember.compiler.kernel import Input, Kernel, Output, Reduction
from ember.compiler.kernel_numpy import NP_DTYPES, evaluate


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(tmp_path_factory):
    old = config.cache_dir
    config.cache_dir = str(tmp_path_factory.mktemp("ember-cache"))
    yield
    config.cache_dir = old


def call(op, dtype, *args):
    return ("call", op, dtype, *args)


def const(v, dtype):
    return ("const", v, dtype)


TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-14)}
UNARY_SAFE = ["neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "tanh",
              "sigmoid", "erf", "sin", "cos", "relu", "square", "floor", "ceil", "trunc", "round",
              "sign"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]
COMPARE = ["gt", "ge", "lt", "le", "eq", "ne"]


# ---------------------------------------------------------------- random kernels
@st.composite
def float_expr(draw, dt, inputs, depth):
    """A random float expression of dtype `dt` over `inputs` (a list of Input)."""
    leaves = [("load", i) for i, inp in enumerate(inputs) if inp.dtype == dt]
    casts = [call("cast", dt, ("load", i)) for i, inp in enumerate(inputs) if inp.dtype != dt]
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(["leaf"] * 4 + ["cast"] * bool(casts) + ["const"]))
        if kind == "const":
            return const(draw(st.sampled_from([0.5, -1.25, 2.0, 3.0, 1e-3, 0.0])), dt)
        return draw(st.sampled_from(casts if kind == "cast" else (leaves or casts)))
    kind = draw(st.sampled_from(["unary", "binary", "binary", "where", "nan_op"]))
    sub = float_expr(dt, inputs, depth - 1)
    if kind == "unary":
        return call(draw(st.sampled_from(UNARY_SAFE)), dt, draw(sub))
    if kind == "binary":
        op = draw(st.sampled_from(BINARY))
        b = draw(sub)
        if op == "pow" and draw(st.booleans()):
            b = const(draw(st.sampled_from([2.0, 3.0, 0.5, -1.0, -0.5, -2.0, 1.5])), dt)
        return call(op, dt, draw(sub), b)
    if kind == "where":
        cond = call(draw(st.sampled_from(COMPARE)), "bool", draw(sub), draw(sub))
        if draw(st.booleans()):
            cond = call(draw(st.sampled_from(["logical_and", "logical_or"])), "bool", cond,
                        call("logical_not", "bool", call("isnan", "bool", draw(sub))))
        return call("where", dt, cond, draw(sub), draw(sub))
    return call("cast", dt, call("isnan", "bool", draw(sub)))


@st.composite
def kernel_case(draw):
    """(Kernel, R, N, strides layout) with inputs of random promises."""
    dt = draw(st.sampled_from(["float32", "float64"]))
    n_in = draw(st.integers(1, 3))
    inputs = []
    for i in range(n_in):
        idt = dt if i == 0 else draw(st.sampled_from([dt, dt, "int32", "int64", "bool"]))
        outer = draw(st.sampled_from(["any", "any", "zero"]))
        inner = draw(st.sampled_from(["one", "one", "any", "zero"]))
        inputs.append(Input(idt, outer, inner))
    R = draw(st.sampled_from([0, 1, 2, 3, 7, 40]))
    N = draw(st.sampled_from([0, 1, 5, 16, 33, 300]))
    reds = []
    for k in range(draw(st.integers(0, 2))):
        e = draw(float_expr(dt, inputs, 3))
        if k and draw(st.booleans()):      # use the previous reduction's row value
            e = call("sub", dt, e, ("row", k - 1))
        op = draw(st.sampled_from(["sum", "max", "min"]))
        reds.append(Reduction(op, e, dt))
    outs = []
    for _ in range(draw(st.integers(1, 2))):
        e = draw(float_expr(dt, inputs, 3))
        if reds and draw(st.booleans()):
            e = call("add", dt, e, ("row", len(reds) - 1))
        outs.append(Output(e, dt))
    if reds and draw(st.booleans()):
        outs.append(Output(call("mul", dt, ("row", 0), call("div", dt, const(1.0, dt),
                                                              ("n", dt))), dt, per_row=True))
    layout = [draw(st.sampled_from(["contig", "transposed", "padded"])) for _ in inputs]
    return Kernel(tuple(inputs), tuple(reds), tuple(outs), ops=("random",)), R, N, layout


def make_input(inp, R, N, layout, rng):
    """A flat buffer (its element 0 is element (0, 0)) and the (so, sj) strides reaching
    element (r, j) as the promise and layout say."""
    so = {"contig": N, "transposed": 1, "padded": 2 * N + 3}[layout]
    sj = {"contig": 1, "transposed": max(R, 1), "padded": 2}[layout]
    if inp.inner == "one":
        sj = 1
        so = N + 3 if layout == "padded" else N
    if inp.inner == "zero":
        sj = 0
        so = 1 if layout != "padded" else 3
    if inp.outer == "zero":
        so = 0
    size = max(R - 1, 0) * so + max(N - 1, 0) * sj + 1
    dt = NP_DTYPES[inp.dtype]
    if inp.dtype == "bool":
        buf = rng.random(size) < 0.5
    elif inp.dtype.startswith("int"):
        buf = rng.integers(-4, 5, size).astype(dt)
    else:
        buf = (rng.standard_normal(size) * rng.choice([0.5, 3.0], size)).astype(dt)
        special = rng.random(size)
        buf[special < 0.03] = np.nan
        buf[(special > 0.03) & (special < 0.05)] = np.inf
        buf[(special > 0.05) & (special < 0.06)] = -np.inf
        buf[(special > 0.06) & (special < 0.08)] = 0.0
    return buf, so, sj


def run_both(fn, kernel, R, N, layout, seed):
    rng = np.random.default_rng(seed)
    bufs, strides = [], []
    for inp, lay in zip(kernel.inputs, layout):
        buf, so, sj = make_input(inp, R, N, lay, rng)
        bufs.append(buf)
        strides += [so, sj]
    outs = [np.full(R if o.per_row else (R, N), 7, NP_DTYPES[o.dtype]) for o in kernel.outputs]
    fn(R, N, bufs, strides, outs)
    return outs, evaluate(kernel, R, N, bufs, strides)


def assert_close(got, want, dtype, what):
    if dtype in TOL:
        tol = TOL[dtype]
        # sin/cos/pow of huge values and sums of large cancelling terms: compare relative to
        # the magnitude of the values involved
        np.testing.assert_allclose(got, want, equal_nan=True, err_msg=what, **tol)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@settings(max_examples=8)
@given(st.lists(kernel_case(), min_size=6, max_size=6))
def test_random_kernels_match_numpy_evaluation(cases):
    fns = build.load_kernels([c[0] for c in cases])
    for fn, (kernel, R, N, layout) in zip(fns, cases):
        with np.errstate(all="ignore"):
            got, want = run_both(fn, kernel, R, N, layout, seed=R * 1000 + N)
        for o, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape
            dt = kernel.outputs[o].dtype
            if kernel.reductions:
                # a reduction of a NaN-heavy row amplifies rounding: compare the finite part
                # relative to the row's scale
                scale = np.nanmax(np.abs(np.where(np.isfinite(w), w, 0)), initial=1.0)
                np.testing.assert_allclose(g, w, equal_nan=True,
                                           rtol=TOL[dt]["rtol"] * 50,
                                           atol=TOL[dt]["atol"] * 50 * scale,
                                           err_msg=f"{kernel}\nR={R} N={N} {layout}")
            else:
                assert_close(g, w, dt, f"{kernel}\nR={R} N={N} {layout}")


# ---------------------------------------------------------------- hand-written kernels
F = "float32"


def layer_norm_gelu_kernel(dt=F):
    x, w, b = ("load", 0), ("load", 1), ("load", 2)
    y = call("add", dt, call("mul", dt, x, w), b)
    g = call("mul", dt, call("mul", dt, y, const(0.5, dt)),
             call("add", dt, const(1.0, dt), call("erf", dt, call("mul", dt, y, const(
                 0.7071067811865476, dt)))))
    mean = call("div", dt, ("row", 0), ("n", dt))
    d = call("sub", dt, g, mean)
    var = call("div", dt, ("row", 1), ("n", dt))
    out = call("mul", dt, d, call("rsqrt", dt, call("add", dt, var, const(1e-5, dt))))
    return Kernel((Input(dt, "any", "one"), Input(dt, "zero", "one"), Input(dt, "zero", "one")),
                  (Reduction("sum", g, dt), Reduction("sum", call("square", dt, d), dt)),
                  (Output(out, dt), Output(mean, dt, per_row=True)),
                  ops=("mul", "add", "gelu", "layer_norm"))


def softmax_kernel(dt):
    x = ("load", 0)
    e = call("exp", dt, call("sub", dt, x, ("row", 0)))
    return Kernel((Input(dt, "any", "any"),),
                  (Reduction("max", x, dt), Reduction("sum", e, dt)),
                  (Output(call("div", dt, e, ("row", 1)), dt),), ops=("softmax",))


def test_layer_norm_gelu_against_numpy():
    from scipy.special import erf
    k = layer_norm_gelu_kernel()
    fn = build.load_kernel(k)
    rng = np.random.default_rng(0)
    R, N = 64, 1024
    x = rng.standard_normal((R, N)).astype(np.float32)
    w, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    out, mean = np.empty((R, N), np.float32), np.empty(R, np.float32)
    fn(R, N, [x, w, b], [N, 1, 0, 1, 0, 1], [out, mean])
    y = x.astype(np.float64) * w + b
    g = 0.5 * y * (1 + erf(y / np.sqrt(2)))
    ref = (g - g.mean(1, keepdims=True)) / np.sqrt(g.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean, g.mean(1), rtol=1e-5, atol=1e-5)
    # the gelu is computed once per element: later loops read the row buffer
    src = generate(k, "f")
    assert src.count("em_erff(") - src.count("em_erff(float") == 1
    assert "fused ops: mul, add, gelu, layer_norm" in src


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_softmax_transposed_input_with_nan_and_inf_rows(dt):
    fn = build.load_kernel(softmax_kernel(dt))
    rng = np.random.default_rng(1)
    R, N = 9, 37
    base = rng.standard_normal((N, R)).astype(dt)      # the kernel reads its transpose
    base[5, 2] = np.nan                 # row 2 has a NaN -> all NaN
    base[:, 4] = -np.inf                # row 4 all -inf -> NaN (like torch)
    base[0, 6] = np.inf                 # row 6 has +inf -> NaN at inf, 0 elsewhere... torch: nan
    xt = base.T
    out = np.empty((R, N), dt)
    fn(R, N, [base], [1, R], [out])
    with np.errstate(all="ignore"):
        m = xt.max(1, keepdims=True)
        e = np.exp(xt - m)
        ref = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, equal_nan=True, **TOL[dt])
    assert np.isnan(out[2]).all() and np.isnan(out[4]).all()


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_reductions_propagate_nan_at_any_position(op):
    dt = "float32"
    k = Kernel((Input(dt, "any", "one"),), (Reduction(op, ("load", 0), dt),),
               (Output(("row", 0), dt, per_row=True),))
    fn = build.load_kernel(k)
    N = 67
    x = np.random.default_rng(2).standard_normal((N + 3, N)).astype(np.float32)
    for r in range(N):
        x[r, r] = np.nan                  # NaN at every position, one row each
    x[N] = -np.inf
    x[N + 1] = np.inf
    out = np.empty(N + 3, np.float32)
    fn(N + 3, N, [x], [N, 1], [out])
    ref = getattr(np, op)(x, axis=1)     # NaN-propagating, like torch.amax
    np.testing.assert_array_equal(out, ref)
    assert np.isnan(out[:N]).all()
    empty = np.empty(3, np.float32)
    fn(3, 0, [x], [0, 1], [empty])       # empty rows: -inf / +inf
    assert (empty == (-np.inf if op == "max" else np.inf)).all()


def test_integer_and_bool_kernel():
    """int32/int64/bool loads, casts, comparisons, where, integer products, a bool 'any'
    (max) and an int64 count (sum)."""
    i32, i64, b = "int32", "int64", "bool"
    a, c, m = ("load", 0), ("load", 1), ("load", 2)
    a64 = call("cast", i64, a)
    q = call("mul", i64, a64, c)
    cond = call("logical_and", b, call("gt", b, a64, c), m)
    sel = call("where", i64, cond, q, call("neg", i64, c))
    k = Kernel((Input(i32, "any", "one"), Input(i64, "any", "any"), Input(b, "zero", "one")),
               (Reduction("sum", call("cast", i64, cond), i64), Reduction("max", m, b)),
               (Output(sel, i64), Output(call("cast", "float32", sel), "float32"),
                Output(("row", 0), i64, per_row=True), Output(("row", 1), b, per_row=True)))
    fn = build.load_kernel(k)
    rng = np.random.default_rng(3)
    R, N = 6, 11
    av = rng.integers(-20, 20, (R, N)).astype(np.int32)
    cv = rng.integers(-3, 4, (N, R)).astype(np.int64)        # read transposed
    mv = rng.random(N) < 0.6
    outs = [np.empty((R, N), np.int64), np.empty((R, N), np.float32), np.empty(R, np.int64),
            np.empty(R, np.bool_)]
    fn(R, N, [av, cv, mv], [N, 1, 1, R, 0, 1], outs)
    c_ = cv.T
    q_ = av.astype(np.int64) * c_
    cond_ = (av > c_) & mv
    want = np.where(cond_, q_, -c_)
    np.testing.assert_array_equal(outs[0], want)
    np.testing.assert_array_equal(outs[1], want.astype(np.float32))
    np.testing.assert_array_equal(outs[2], cond_.sum(1))
    np.testing.assert_array_equal(outs[3], np.broadcast_to(mv.any(), (R,)))
    for g, w in zip(outs, evaluate(k, R, N, [av, cv, mv], [N, 1, 1, R, 0, 1])):
        np.testing.assert_array_equal(g, w)


def test_pointwise_one_long_row_splits_across_threads_and_edges():
    """R == 1 with N large runs the split-row path; R/N of 0 and 1 write nothing out of
    bounds and produce the right values."""
    dt = "float32"
    x = ("load", 0)
    k = Kernel((Input(dt, "any", "one"), Input(dt, "zero", "zero")),
               (), (Output(call("tanh", dt, call("mul", dt, x, ("load", 1))), dt),))
    fn = build.load_kernel(k)
    rng = np.random.default_rng(4)
    s = np.array([1.5], np.float32)
    for R, N in [(1, 200_000), (3, 50_000), (0, 10), (5, 0), (1, 1), (1000, 1)]:
        xv = rng.standard_normal((R, N)).astype(np.float32)
        out = np.full((R + 1) * N + 8, 9.0, np.float32)   # sentinel tail
        fn(R, N, [xv if xv.size else s, s], [N, 1, 0, 0], [out])
        np.testing.assert_allclose(out[:R * N].reshape(R, N), np.tanh(xv * 1.5), rtol=3e-7,
                                   atol=1e-7)
        assert (out[R * N:] == 9.0).all()


def test_threads_setting_is_read_at_call_time_and_changes_nothing():
    k = softmax_kernel("float64")
    fn = build.load_kernel(k)
    x = np.random.default_rng(5).standard_normal((300, 257))
    old = threads.get_num_threads()
    results = []
    try:
        for n in (1, 2, 3):
            threads.set_num_threads(n)
            out = np.empty_like(x)
            fn(300, 257, [x], [257, 1], [out])
            results.append(out)
        seen = []
        real = fn._fn
        fn._fn = lambda *args: seen.append(args[-1])       # record the nthreads argument
        try:
            threads.set_num_threads(3)
            fn(1, 1, [x], [1, 1], [np.empty(1)])
            threads.set_num_threads(1)
            fn(1, 1, [x], [1, 1], [np.empty(1)])
        finally:
            fn._fn = real
        assert seen == [3, 1]
    finally:
        threads.set_num_threads(old)
    # row-parallel: each row is computed by one thread in the same order, so bitwise equal
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_ember_exports_thread_api():
    import ember
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == threads.get_num_threads() == 1
    finally:
        ember.set_num_threads(old)
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError):
        ember.set_num_threads(0)


def test_generated_code_is_vectorisable_and_exact_for_plain_arithmetic():
    """+ - * / round exactly like NumPy (no FMA contraction in user arithmetic)."""
    dt = "float64"
    x, y = ("load", 0), ("load", 1)
    e = call("sub", dt, call("mul", dt, x, y), call("mul", dt, x, y))   # FMA would give != 0
    e2 = call("add", dt, call("mul", dt, x, y), const(0.1, dt))
    k = Kernel((Input(dt, "any", "one"), Input(dt, "any", "one")), (),
               (Output(e, dt), Output(e2, dt)))
    fn = build.load_kernel(k)
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((4, 100)), rng.standard_normal((4, 100))
    o1, o2 = np.empty((4, 100)), np.empty((4, 100))
    fn(4, 100, [a, b], [100, 1, 100, 1], [o1, o2])
    assert (o1 == 0).all()
    np.testing.assert_array_equal(o2, a * b + 0.1)


def test_sanitizer_harness_runs_clean(tmp_path):
    """Every stride promise and edge sizes, built with -fsanitize=address,undefined on
    exact-size buffers: no out-of-bounds access, no UB."""
    k = layer_norm_gelu_kernel()
    dt = "float64"
    k2 = Kernel((Input(dt, "any", "any"), Input("int32", "zero", "zero"), Input("bool", "any",
                                                                             "zero")),
                (Reduction("max", call("cast", dt, ("load", 1)), dt),),
                (Output(call("where", dt, ("load", 2), ("load", 0), ("row", 0)), dt),
                 Output(("row", 0), dt, per_row=True)))
    k3 = Kernel((Input(dt, "any", "one"),), (),
                (Output(call("exp", dt, ("load", 0)), dt),))
    for i, (kern, cases) in enumerate([
            (k, [(5, 7, (7, 1, 0, 1, 0, 1), 2), (1, 1, (1, 1, 0, 1, 0, 1), 1),
                 (0, 3, (3, 1, 0, 1, 0, 1), 2), (4, 0, (0, 1, 0, 1, 0, 1), 2),
                 (300, 300, (300, 1, 0, 1, 0, 1), 2)]),
            (k2, [(6, 5, (1, 6, 0, 0, 1, 0), 2), (3, 1, (1, 3, 0, 0, 1, 0), 1),
                  (2, 0, (1, 2, 0, 0, 1, 0), 2)]),
            (k3, [(1, 100_000, (100_000, 1), 2), (2, 70_000, (70_000, 1), 2),
                  (0, 0, (0, 1), 2), (7, 1, (1, 1), 2)])]):
        exe = str(tmp_path / f"harness{i}")
        build.build_executable(build.harness_source(kern, cases), exe)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
                   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
        res = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]
        assert "runtime error" not in res.stderr and "ERROR" not in res.stderr
