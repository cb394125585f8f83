"""ember.utils.cpp_extension: C (and C++) built through the kernel cache and called with ember
tensors; argument checks; compiler errors with the source line; and the seeds' fused Swish
(seed 2 §3.2) as a C kernel with its backward, wrapped as a custom op, gradchecked in float64
and trained in a small model against the two-op version and torch."""
import shutil

import numpy as np
import pytest
import torch

import ember
from ember.compiler import build
from ember.library import custom_op
from ember.utils.cpp_extension import STRIDED_EXAMPLE, load, load_inline

pytestmark = pytest.mark.skipif(shutil.which(ember.compiler.config.cc) is None,
                                reason="no C compiler")

SWISH_C = r"""
/* swish(x) = x * sigmoid(x); d/dx = s + x s (1 - s) with s = sigmoid(x) */
void swish_fwd_f32(const float* x, float* y, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) y[i] = x[i] * em_sigmoidf(x[i]);
}
void swish_bwd_f32(const float* x, const float* g, float* gx, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) {
        float s = em_sigmoidf(x[i]);
        gx[i] = g[i] * (s + x[i] * s * (1.0f - s));
    }
}
void swish_fwd_f64(const double* x, double* y, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) y[i] = x[i] * em_sigmoid(x[i]);
}
void swish_bwd_f64(const double* x, const double* g, double* gx, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) {
        double s = em_sigmoid(x[i]);
        gx[i] = g[i] * (s + x[i] * s * (1.0 - s));
    }
}
"""


@pytest.fixture(scope="module")
def swish():
    lib = load_inline("ember_test_swish", c_sources=SWISH_C)

    def kernel(name, x):
        return getattr(lib, name + ("_f64" if x.dtype is ember.float64 else "_f32"))

    @custom_op("ember_test_ext::swish", mutates_args=())
    def swish(x: ember.Tensor) -> ember.Tensor:
        x = x.contiguous()
        y = ember.empty_like(x)
        kernel("swish_fwd", x)(x, y, x.numel())
        return y

    @custom_op("ember_test_ext::swish_backward", mutates_args=())
    def swish_backward(x: ember.Tensor, grad: ember.Tensor) -> ember.Tensor:
        x, grad = x.contiguous(), grad.contiguous()
        gx = ember.empty_like(x)
        kernel("swish_bwd", x)(x, grad, gx, x.numel())
        return gx

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return swish_backward(x, grad)

    swish.register_autograd(backward, setup_context=setup_context)
    swish.register_fake(lambda x: ember.empty_like(x))
    yield swish
    swish._destroy()
    swish_backward._destroy()


# ---- calling C with tensors ----
ADD = r"""
void axpy(float a, const float* x, float* y, long n) {
    for (long i = 0; i < n; i++) y[i] += a * x[i];
}
int64_t count_pos(const int64_t* v, int n) {
    int64_t c = 0;
    for (int i = 0; i < n; i++) c += v[i] > 0;
    return c;
}
double mean(const double* x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return n ? s / n : 0;
}
static int helper(int a) { return a; }
int uses_helper(int a) { return helper(a) + 1; }
"""


@pytest.fixture(scope="module")
def mod():
    return load_inline("ember_test_basic", c_sources=ADD)


def test_pointer_and_number_arguments(mod):
    x, y = ember.randn(7), ember.randn(7)
    want = y.numpy() + 2.5 * x.numpy()
    v = y._version
    assert mod.axpy(2.5, x, y, 7) is None
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    assert y._version > v          # written through a non-const pointer
    assert mod.count_pos(ember.tensor([3, -1, 0, 5]), 4) == 2
    d = ember.randn(9, dtype=ember.float64)
    assert mod.mean(d, 9) == pytest.approx(d.numpy().mean())
    assert mod.uses_helper(4) == 5
    assert not hasattr(mod, "helper")          # static: not exported
    assert "void axpy(float a, const float* x, float* y, long n)" in mod.axpy.__doc__


def test_bad_arguments_are_clear_errors_never_crashes(mod):
    x, y = ember.randn(4), ember.randn(4)
    with pytest.raises(TypeError, match="dtype ember.float32"):
        mod.axpy(1.0, x.double(), y, 4)
    with pytest.raises(RuntimeError, match="contiguous"):
        mod.axpy(1.0, ember.randn(4, 2).t()[0], y, 4)
    with pytest.raises(TypeError, match="must be a Tensor"):
        mod.axpy(1.0, [1.0, 2.0], y, 2)
    with pytest.raises(TypeError, match="must be an int"):
        mod.axpy(1.0, x, y, 4.0)
    with pytest.raises(TypeError, match="must be a number"):
        mod.axpy("a", x, y, 4)
    with pytest.raises(OverflowError):
        mod.count_pos(ember.tensor([1]), 2 ** 40)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        mod.axpy(1.0, x, y)


def test_void_pointer_bool_and_string_parameters():
    m = load_inline("ember_test_misc", c_sources=r"""
#include <string.h>
long nbytes_if(const void* data, long itemsize, long n, bool count) {
    return count ? itemsize * n : 0;
}
long length(const char* s) { return (long) strlen(s); }
void zero_bytes(void* data, long nbytes) { memset(data, 0, nbytes); }
""")
    x = ember.arange(6, dtype=ember.int16)
    assert m.nbytes_if(x, 2, 6, True) == 12 and m.nbytes_if(x, 2, 6, False) == 0
    with pytest.raises(TypeError, match="must be a bool"):
        m.nbytes_if(x, 2, 6, 1)
    assert m.length("héllo") == 6              # utf-8 bytes
    m.zero_bytes(x, 12)                        # void*: any dtype
    assert x.tolist() == [0] * 6


def test_strided_descriptor():
    m = load_inline("ember_test_strided", c_sources=STRIDED_EXAMPLE)
    x = ember.randn(3, 4).t()[1:]              # a strided view with an offset: (3, 3)
    base = ember.zeros(3, 3)
    out = base.t()                             # written through its strides
    m.twice_2d(x, out)
    np.testing.assert_allclose(out.numpy(), 2 * x.numpy())
    np.testing.assert_allclose(base.numpy(), 2 * x.numpy().T)
    with pytest.raises(TypeError, match="float32"):
        m.twice_2d(x.double(), out)


def test_compiler_errors_show_the_source_line():
    src = "int ok(int a) { return a; }\nint broken(int a) {\n    return a +* ;\n}\n"
    with pytest.raises(RuntimeError) as e:
        load_inline("ember_test_broken", c_sources=src)
    text = str(e.value)
    assert "Error building extension 'ember_test_broken'" in text
    assert "<ember_test_broken>/c_sources:3:" in text and "return a +* ;" in text


def test_unsupported_prototypes_and_missing_functions():
    with pytest.raises(TypeError, match="not supported"):
        load_inline("ember_test_unsup", c_sources="struct p { int a; };\n"
                    "void f(struct p q) {}\n", functions=["f"])
    with pytest.raises(RuntimeError, match="no declaration of nothere"):
        load_inline("ember_test_missing", c_sources="void f(void) {}", functions=["nothere"])


def test_load_from_files_and_the_build_cache(tmp_path, monkeypatch):
    path = tmp_path / "scale.c"
    path.write_text("void scale(double* x, double a, long n) {\n"
                    "    for (long i = 0; i < n; i++) x[i] *= a;\n}\n")
    mod1 = load("ember_test_file", sources=[str(path)])
    before = build.stats["compiled"]
    mod2 = load("ember_test_file", sources=[str(path)])    # same source and flags: cached
    assert build.stats["compiled"] == before
    x = ember.ones(3, dtype=ember.float64)
    mod1.scale(x, 3.0, 3)
    mod2.scale(x, 2.0, 3)
    assert x.tolist() == [6.0, 6.0, 6.0]
    bad = tmp_path / "bad.c"
    bad.write_text("void f(void) {\n  undefined_thing;\n}\n")
    with pytest.raises(RuntimeError, match="bad.c:2"):
        load("ember_test_badfile", sources=[str(bad)])


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_load_c_and_cpp_files_together(tmp_path):
    (tmp_path / "a.c").write_text("long twice(long a) { return 2 * a; }\n")
    (tmp_path / "b.cpp").write_text("#include <algorithm>\n"
                                    "long biggest(const int64_t* v, long n) {\n"
                                    "    return *std::max_element(v, v + n);\n}\n")
    m = load("ember_test_mixed", sources=[str(tmp_path / "a.c"), str(tmp_path / "b.cpp")])
    assert m.twice(21) == 42
    assert m.biggest(ember.tensor([3, 9, 2]), 3) == 9


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_cpp_sources():
    src = ("#include <numeric>\n#include <vector>\n"
           "double total(const double* x, long n) {\n"
           "    std::vector<double> v(x, x + n);\n"
           "    return std::accumulate(v.begin(), v.end(), 0.0);\n}\n")
    m = load_inline("ember_test_cpp", cpp_sources=src, functions={"total": "Sum of x."})
    x = ember.randn(10, dtype=ember.float64)
    assert m.total(x, 10) == pytest.approx(x.numpy().sum())
    assert m.total.__doc__.startswith("Sum of x.")


# ---- the fused Swish custom op ----
def test_swish_matches_the_two_op_version_and_torch(swish):
    a = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    x = ember.tensor(a, requires_grad=True)
    ref = ember.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    y, y2, ty = swish(x), ref * ember.sigmoid(ref), tx * torch.sigmoid(tx)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.detach().numpy(), y2.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    # a strided input goes through .contiguous() in the op
    xt = ember.tensor(a).t()
    np.testing.assert_allclose(swish(xt).numpy(), (xt * ember.sigmoid(xt)).numpy(), rtol=1e-5)


def test_swish_gradcheck_float64(swish):
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(swish, (x,))
    assert ember.library.opcheck(swish, (x.detach(),))


class _Swish(ember.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _train(act, steps=5):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(6, 16), _Swish(act), ember.nn.Linear(16, 1))
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    x, y = ember.randn(32, 6), ember.randn(32, 1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_swish_in_a_model_trains_like_the_two_op_version(swish):
    fused, p_fused = _train(swish)
    plain, p_plain = _train(lambda x: x * ember.sigmoid(x))
    np.testing.assert_allclose(fused, plain, rtol=1e-5)
    assert fused[-1] < fused[0]
    for a, b in zip(p_fused, p_plain):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_swish_compiles_equal_to_eager(swish):
    def f(x):
        return (swish(x * 2) + 1).sum(dim=1)
    x = ember.randn(8, 16)
    compiled = ember.compile(f, fullgraph=True)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-5)
