"""The vectorisable math of generated kernels (ember/compiler/cmath.py): accuracy in ulps over a
wide sweep against NumPy/SciPy (float64 or long double references), NumPy's results on the
specials (NaN, +-inf, -0.0, overflow, underflow), and that GCC really vectorises the loops."""
import ctypes
import re
import subprocess

import numpy as np
import pytest
from scipy import special

from ember.compiler import build, config
from ember.compiler.cmath import SOURCE
from ember.compiler.codegen_c import generate, op_to_c
from ember.compiler.kernel import Input, Kernel, Output, Reduction

OPS = ["exp", "log", "log1p", "expm1", "tanh", "sigmoid", "erf"]
# measured maxima (see cmath's docstring) + 1 ulp of headroom
BOUNDS = {"float32": {"exp": 2, "log": 2, "log1p": 2.5, "expm1": 2.5, "tanh": 5.5, "sigmoid": 3.5,
                      "erf": 5.5},
          "float64": {"exp": 2, "log": 2, "log1p": 2, "expm1": 3, "tanh": 4, "sigmoid": 5,
                      "erf": 4}}


def _test_source():
    src = SOURCE
    for op in OPS:
        for ct, dt in (("float", "float32"), ("double", "float64")):
            code = op_to_c(op, dt, dt, ["x[i]"])     # the op's lowering (OpDef.lower)
            src += (f"void t_{op}_{ct}(long n, const {ct} *x, {ct} *y) {{\n"
                    f"#pragma omp simd\n    for (long i = 0; i < n; i++) y[i] = {code};\n}}\n")
    return src


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    old = config.cache_dir
    config.cache_dir = str(tmp_path_factory.mktemp("ember-cache"))
    try:
        path, _ = build.build_library(_test_source())
        yield ctypes.CDLL(path)
    finally:
        config.cache_dir = old


def run(lib, op, x):
    ct = "float" if x.dtype == np.float32 else "double"
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    getattr(lib, f"t_{op}_{ct}")(ctypes.c_long(x.size), ctypes.c_void_p(x.ctypes.data),
                                 ctypes.c_void_p(y.ctypes.data))
    return y


def reference(op, x):
    """Float64 reference for float32 inputs; long double (or SciPy float64) for float64."""
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    xw = x.astype(wide)
    with np.errstate(all="ignore"):
        if op == "sigmoid":
            e = np.exp(-np.abs(xw))
            return np.where(xw >= 0, 1 / (1 + e), e / (1 + e))
        if op == "erf":
            return special.erf(x.astype(np.float64))
        return getattr(np, op)(xw)


def sweep(dt):
    tiny = np.finfo(dt).smallest_subnormal
    hi = 38 if dt == np.float32 else 308
    lo = -45 if dt == np.float32 else -323
    pos = np.concatenate([np.logspace(lo, hi, 60001), np.linspace(0, 10, 40001),
                          np.linspace(10, 800, 4001), [tiny, np.finfo(dt).tiny, 0.5, 1, 2]])
    return np.concatenate([pos, -pos]).astype(dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_accuracy_in_ulps(lib, op, dt):
    x = sweep(np.dtype(dt).type)
    y = run(lib, op, x)
    ref = reference(op, x)
    with np.errstate(all="ignore"):
        rounded = ref.astype(dt)
    finite = np.isfinite(rounded) & (rounded != 0)
    ulp = np.spacing(np.abs(rounded[finite])).astype(np.float64)
    err = np.abs(y[finite].astype(np.longdouble) - ref[finite]) / ulp
    worst = int(np.argmax(err))
    assert err.max() <= BOUNDS[dt][op], (f"{op}({x[finite][worst]!r}) = {y[finite][worst]!r}, "
                                         f"want {ref[finite][worst]!r}: {err.max():.2f} ulp")
    # where the rounded reference is 0 or +-inf the result must be exactly that (or the
    # neighbouring subnormal: float rounding of the reference itself)
    rest = ~finite & ~np.isnan(rounded)
    close = (y[rest] == rounded[rest]) | (np.abs(y[rest]) <= 2 * np.finfo(dt).smallest_subnormal)
    assert close.all(), x[rest][~close][:5]


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e30, -1e30, 100.0, -100.0,
            800.0, -800.0, 89.0, -104.0, -1.0, -2.0, 1.0]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_specials_match_numpy(lib, op, dt):
    x = np.array(SPECIALS, dt)
    y = run(lib, op, x)
    ref = reference(op, x)
    with np.errstate(all="ignore"):
        want = ref.astype(dt)
    for xi, yi, wi in zip(x, y, want):
        if np.isnan(wi):
            assert np.isnan(yi), (op, xi, yi)
        elif wi == 0 or np.isinf(wi):
            assert yi == wi and np.signbit(yi) == np.signbit(wi), (op, xi, yi, wi)
        else:
            assert abs(float(yi) - float(wi)) <= 5 * np.spacing(abs(wi)), (op, xi, yi, wi)


def _vectorised_lines(source, tmp_path):
    """For each `#pragma omp simd` loop of `source`: did GCC vectorise it?"""
    c = tmp_path / "v.c"
    c.write_text(source)
    res = subprocess.run([config.cc, *build.FLAGS, "-fopt-info-vec-optimized", "-o",
                          str(tmp_path / "v.so"), str(c)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    done = {int(m) for m in re.findall(r"v\.c:(\d+):\d+: optimized: loop vectorized",
                                       res.stderr)}
    lines = source.splitlines()
    pragmas = [i + 1 for i, s in enumerate(lines) if "#pragma omp simd" in s]
    # GCC names a loop by its pragma, its `for` or its first statement: count a loop as
    # vectorised when a report falls between its pragma and the next one
    ends = pragmas[1:] + [len(lines) + 1]
    return [any(p <= d < e for d in done) for p, e in zip(pragmas, ends)]


def test_gcc_vectorises_math_and_fused_kernels(tmp_path):
    info = subprocess.run([config.cc, "-v"], capture_output=True, text=True).stderr
    if "gcc version" not in info:
        pytest.skip("the vectorisation report is GCC's -fopt-info")
    loops = _vectorised_lines(_test_source(), tmp_path)
    assert len(loops) == 2 * len(OPS) and all(loops), loops
    f = "float32"
    x = ("load", 0)

    def c(op, *a):
        return ("call", op, f, *a)
    k = Kernel((Input(f, "any", "one"),),
               (Reduction("max", x, f), Reduction("sum", c("exp", c("sub", x, ("row", 0))), f),
                Reduction("min", c("tanh", x), f)),
               (Output(c("add", c("mul", c("sigmoid", x), c("log1p", c("abs", x))),
                         c("div", ("row", 1), ("row", 2))), f),))   # every row value used
    loops = _vectorised_lines(generate(k, "k"), tmp_path)
    assert len(loops) == 4 and all(loops), loops
