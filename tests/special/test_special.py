"""ember.special against torch.special: every public name of torch.special exists in ember's
and gives torch's values and dtypes on a grid that crosses poles, zeros and infinities, for
float32, float64 and integer inputs; the aliases are the top-level ops they name; the gamma
family, xlogy and the normal-distribution functions match torch's gradients off the sampled
domains of the generated tests; torch's errors for bad arguments. (The generated registry
tests, tests/opinfo, cover each special_* op's samples, gradcheck, forward AD and vmap.)"""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember

INF, NAN = math.inf, math.nan
GRID = np.concatenate([[NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1e-8,
                        30.0, -30.0], np.linspace(-4.0, 4.0, 41)])
UNIT = np.concatenate([[NAN, 0.0, 1.0, -1.0, 0.5, 1e-9, 1 - 1e-9], np.linspace(-1.5, 1.5, 31)])

UNARY = ["erf", "erfc", "erfinv", "erfcx", "expit", "logit", "exp2", "expm1", "log1p",
         "gammaln", "digamma", "psi", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr",
         "sinc", "entr", "round", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
         "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0", "airy_ai"]
ON_UNIT = {"erfinv", "logit", "ndtri"}
BINARY = ["xlogy", "xlog1py", "zeta", "gammainc", "gammaincc"]
POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]
# torch's float32 kernels round differently from SciPy's; torch's airy_ai is itself off by
# ~1e-7 (absolute) for x < -2
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-7, atol=1e-9)}
LOOSE = {"airy_ai": dict(rtol=1e-5, atol=1e-6)}


def close(e, t, **tol):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), equal_nan=True, **tol)


def test_every_torch_special_name_exists():
    # common_args / multi_dim_common are torch's docstring templates, not functions
    names = {n for n in dir(torch.special) if not n.startswith("_") and not isinstance(
        getattr(torch.special, n), type(torch))} - {"common_args", "multi_dim_common"}
    missing = sorted(n for n in names if not hasattr(ember.special, n))
    assert not missing, missing


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_unary_on_grid(name, dtype):
    a = (UNIT if name in ON_UNIT else GRID).astype(dtype)
    t = getattr(torch.special, name)(torch.from_numpy(a))
    e = getattr(ember.special, name)(ember.from_numpy(a))
    close(e, t, **LOOSE.get(name, TOL[dtype]))


@pytest.mark.parametrize("name", ["gammaln", "digamma", "i0", "i1e", "ndtr", "sinc", "entr",
                                  "bessel_j0", "erfcx", "expit"])
def test_unary_integer_and_bool_inputs_promote(name):
    for a in (np.arange(-3, 4), np.array([True, False])):
        t = getattr(torch.special, name)(torch.from_numpy(a))
        e = getattr(ember.special, name)(ember.from_numpy(a))
        close(e, t, **TOL[np.float32])


@pytest.mark.parametrize("name", BINARY)
def test_binary_on_grid(name):
    x = np.array([0.0, 0.0, 1.0, 2.5, -1.0, 3.0, NAN, 0.5, 1.5, INF, 2.0, 4.0])
    y = np.array([0.0, NAN, -1.0, 0.5, 2.0, INF, 1.0, -0.5, 3.0, 1.0, -INF, 0.1])
    if name in ("zeta", "gammainc", "gammaincc"):
        x, y = np.abs(x) + 1.0, np.abs(y)
    for dt in (np.float32, np.float64):
        t = getattr(torch.special, name)(torch.from_numpy(x.astype(dt)),
                                         torch.from_numpy(y.astype(dt)))
        e = getattr(ember.special, name)(ember.from_numpy(x.astype(dt)),
                                         ember.from_numpy(y.astype(dt)))
        close(e, t, **TOL[dt])


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta"])
def test_binary_with_python_scalars(name):
    y = torch.tensor([0.5, 2.0, 3.0])
    for args in ((2.0, y), (y, 2.0), (torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3]))):
        t = getattr(torch.special, name)(*args)
        e = getattr(ember.special, name)(*[ember.from_numpy(a.numpy()) if isinstance(
            a, torch.Tensor) else a for a in args])
        close(e, t, **TOL[np.float32])


@pytest.mark.parametrize("name", POLYS)
def test_polynomials(name):
    lo = 0.0 if name.startswith("shifted") else -1.0
    x = np.array([lo, 1.0, (lo + 1) / 2, 0.3, -0.7, 1.5, -2.0, 0.999, INF, -INF])
    for n in (-1, 0, 1, 2, 5, 7, 9, 15):
        t = getattr(torch.special, name)(torch.from_numpy(x), n)
        e = getattr(ember.special, name)(ember.from_numpy(x), n)
        close(e, t, rtol=1e-9, atol=1e-9)
    n = np.array([0, 3, 8, 12, 2.7, -3.5, 20, 1, 4, 6])
    t = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n))
    e = getattr(ember.special, name)(ember.from_numpy(x), ember.from_numpy(n))
    close(e, t, rtol=1e-9, atol=1e-9)


@settings(max_examples=25)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=3),
       st.sampled_from(["gammaln", "digamma", "i0e", "ndtr", "log_ndtr", "sinc", "entr"]))
def test_shapes_and_layouts(shape, name):
    a = np.random.default_rng(len(shape)).uniform(-3, 3, size=shape).astype(np.float32)
    t = torch.from_numpy(a)
    e = ember.from_numpy(a.copy())
    if a.ndim >= 2:
        t, e = t.mT, e.mT
    close(getattr(ember.special, name)(e), getattr(torch.special, name)(t), **TOL[np.float32])


def test_aliases_are_the_top_level_ops():
    assert ember.special.expit is ember.sigmoid and ember.special.gammaln is ember.lgamma
    assert ember.special.psi is ember.digamma is ember.special.digamma
    assert ember.special.gammainc is ember.igamma and ember.special.gammaincc is ember.igammac


def test_reductions_and_softmax():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    t, e = torch.from_numpy(a), ember.from_numpy(a)
    close(ember.special.logsumexp(e, 1), torch.special.logsumexp(t, 1), **TOL[np.float32])
    close(ember.special.logsumexp(e, (0, 1), keepdim=True),
          torch.special.logsumexp(t, (0, 1), keepdim=True), **TOL[np.float32])
    close(ember.special.softmax(e, 0), torch.special.softmax(t, 0), **TOL[np.float32])
    close(ember.special.log_softmax(e, -1, dtype=ember.float64),
          torch.special.log_softmax(t, -1, dtype=torch.float64), **TOL[np.float32])
    close(ember.special.multigammaln(e.abs() + 2, 3), torch.special.multigammaln(t.abs() + 2, 3),
          **TOL[np.float32])
    close(ember.special.polygamma(2, e.abs() + 0.5), torch.special.polygamma(2, t.abs() + 0.5),
          **TOL[np.float32])
    close(ember.special.round(e, decimals=1), torch.special.round(t, decimals=1))


# ---- gradients on inputs the generated tests' domains leave out (negative arguments) ----
def _grad_pair(fn_e, fn_t, *arrays):
    te = [torch.from_numpy(a).requires_grad_() for a in arrays]
    ee = [ember.from_numpy(a.copy()).requires_grad_() for a in arrays]
    fn_t(*te).sum().backward()
    fn_e(*ee).sum().backward()
    for a, b in zip(ee, te):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-10)
    assert ember.autograd.gradcheck(fn_e, tuple(ee))


NEG = np.array([-2.5, -1.7, -0.3, 0.4, 1.6, 3.2])


@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "sinc"])
def test_gradients_on_negative_arguments(name):
    _grad_pair(getattr(ember, name), getattr(torch, name), NEG.copy())


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_gradients(n):
    _grad_pair(lambda x: ember.polygamma(n, x), lambda x: torch.polygamma(n, x), NEG.copy())


@pytest.mark.parametrize("name", ["i0e", "i1", "i1e", "ndtr", "log_ndtr", "erfcx"])
def test_special_gradients(name):
    x = np.array([-2.5, -0.3, 0.0, 0.4, 3.2])
    _grad_pair(getattr(ember.special, name), getattr(torch.special, name), x)


def test_xlogy_gradients_at_zero():
    x = np.array([0.0, 0.0, 1.5, -2.0])
    y = np.array([0.0, 2.0, 0.5, 3.0])
    te = [torch.from_numpy(a).requires_grad_() for a in (x, y)]
    ee = [ember.from_numpy(a.copy()).requires_grad_() for a in (x, y)]
    for fe, ft in ((ember.xlogy, torch.xlogy), (ember.special.xlog1py, torch.special.xlog1py)):
        ft(*te).sum().backward()
        fe(*ee).sum().backward()
        for a, b in zip(ee, te):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), equal_nan=True)
            a.grad, b.grad = None, None


def test_no_derivative_is_torchs_error():
    a = ember.tensor([1.5, 2.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.5, 1.0], dtype=ember.float64, requires_grad=True)
    for f in (ember.igamma, ember.igammac, ember.special.zeta):
        with pytest.raises(NotImplementedError, match="is not implemented"):
            f(a, x).sum().backward()
    # gradients still flow to the second argument
    ember.special.zeta(a.detach() + 1, x).sum().backward()
    t = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    torch.special.zeta(torch.tensor([2.5, 3.0], dtype=torch.float64), t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    # torch's Bessel and polynomial results do not require grad at all
    assert not ember.special.bessel_j0(a).requires_grad
    assert not ember.special.legendre_polynomial_p(a, 3).requires_grad


def test_errors_match_torch():
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not support negative n"):
        ember.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        ember.mvlgamma(x, 0)
    with pytest.raises(RuntimeError, match="may not be a boolean tensor"):
        ember.mvlgamma(ember.tensor([True]), 2)
    with pytest.raises(TypeError):
        ember.special.gammainc(x, 2.0)          # torch: Tensor, Tensor only
    with pytest.raises(TypeError):
        torch.special.gammainc(torch.tensor([1.0]), 2.0)
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        ember.igamma(ember.tensor([1, 2]), ember.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        torch.igamma(torch.tensor([1, 2]), torch.tensor([1, 2]))


def test_methods_and_inplace():
    a = np.array([0.5, 1.5, 2.5])
    t, e = torch.from_numpy(a.copy()), ember.from_numpy(a.copy())
    close(e.lgamma(), t.lgamma())
    close(e.polygamma(2), t.polygamma(2))
    close(e.mvlgamma(2), t.mvlgamma(2))
    close(e.xlogy(2.0), t.xlogy(2.0))
    close(e.igamma(e), t.igamma(t))
    e.digamma_(), t.digamma_()
    close(e, t)
    e.polygamma_(1), t.polygamma_(1)
    close(e, t)
    e.sinc_(), t.sinc_()
    close(e, t)
