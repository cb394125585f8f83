"""Sampling: shapes for combinations of sample/batch/event shapes (against torch), sample
statistics against torch's analytic mean and variance (fixed seeds, tolerance bounds from
the standard error), reparameterised gradients (by finite differences over the same noise,
and the implicit Gamma/Dirichlet gradients against torch's), seeding, enumerate_support."""
import math

import numpy as np
import pytest
import torch

import ember
from _cases import as_np, build, close
from test_values import CASES

ALL = CASES


@pytest.mark.parametrize("case", ALL, ids=str)
@pytest.mark.parametrize("sample_shape", [(), (4,), (2, 3)])
def test_sample_shapes_match_torch(case, sample_shape):
    tdist, _ = build(case, torch, grad=False)
    edist, _ = build(case, ember, grad=False)
    ember.manual_seed(0)
    torch.manual_seed(0)
    ts, es = tdist.sample(sample_shape), edist.sample(sample_shape)
    assert tuple(es.shape) == tuple(ts.shape)
    assert es.dtype.name == str(ts.dtype).split(".")[-1]
    assert bool(edist.support.check(es).all())
    if tdist.has_rsample:
        assert tuple(edist.rsample(sample_shape).shape) == tuple(ts.shape)
    # every drawn value scores like torch scores it
    tk = torch.tensor(as_np(es), dtype=ts.dtype)
    close(edist.log_prob(es), tdist.log_prob(tk), rtol=1e-5 * case.tol, atol=1e-6 * case.tol)


def test_expanded_batch_and_event_shapes():
    """sample(s) = s + batch + event for a distribution expanded and made Independent."""
    for lib in (torch, ember):
        D = lib.distributions
        d = D.Independent(D.Normal(lib.zeros(3, 2), lib.ones(3, 2)), 1).expand((4, 3))
        assert tuple(d.batch_shape) == (4, 3) and tuple(d.event_shape) == (2,)
        assert tuple(d.sample((5,)).shape) == (5, 4, 3, 2)
        assert tuple(d.log_prob(d.sample((5,))).shape) == (5, 4, 3)
        m = D.MultivariateNormal(lib.zeros(2), scale_tril=lib.eye(2)).expand((3,))
        assert tuple(m.sample((2,)).shape) == (2, 3, 2)


STATS = [   # (name, params): draws' mean/variance against the analytic ones
    ("Normal", {"loc": [0.5, -1.0], "scale": [1.0, 2.0]}),
    ("Uniform", {"low": [0.0, -1.0], "high": [1.0, 3.0]}),
    ("Exponential", {"rate": [0.5, 2.0]}),
    ("Laplace", {"loc": [0.0, 1.0], "scale": [1.0, 0.5]}),
    ("Gamma", {"concentration": [0.5, 3.0], "rate": [1.0, 2.0]}),
    ("Beta", {"concentration1": [0.5, 2.0], "concentration0": [0.7, 3.0]}),
    ("Poisson", {"rate": [0.5, 6.0]}),
    ("Binomial", {"total_count": [5.0, 20.0], "probs": [0.3, 0.8]}),
    ("Bernoulli", {"probs": [0.2, 0.7]}),
    ("Geometric", {"probs": [0.3, 0.7]}),
    ("NegativeBinomial", {"total_count": [3.0, 5.0], "probs": [0.3, 0.6]}),
    ("Gumbel", {"loc": [0.0, 1.0], "scale": [1.0, 2.0]}),
    ("LogNormal", {"loc": [0.0, 0.5], "scale": [0.3, 0.5]}),
    ("Weibull", {"scale": [1.0, 2.0], "concentration": [1.5, 3.0]}),
    ("StudentT", {"df": [5.0, 9.0], "loc": [0.0, 1.0], "scale": [1.0, 2.0]}),
    ("Chi2", {"df": [2.0, 5.0]}),
    ("HalfNormal", {"scale": [1.0, 2.0]}),
    ("Kumaraswamy", {"concentration1": [2.0, 3.0], "concentration0": [2.0, 1.5]}),
    ("VonMises", {"loc": [0.0, 1.0], "concentration": [4.0, 10.0]}),
    ("ContinuousBernoulli", {"probs": [0.2, 0.8]}),
    ("FisherSnedecor", {"df1": [5.0, 10.0], "df2": [10.0, 12.0]}),
    ("InverseGamma", {"concentration": [5.0, 7.0], "rate": [1.0, 2.0]}),
    ("Dirichlet", {"concentration": [[0.5, 1.0, 2.0]]}),
    ("Multinomial", {"total_count": 10, "probs": [0.2, 0.3, 0.5]}),
    ("MultivariateNormal", {"loc": [1.0, -1.0], "covariance_matrix": [[2.0, 0.5], [0.5, 1.0]]}),
    ("Wishart", {"df": 5.0, "covariance_matrix": [[1.0, 0.3], [0.3, 0.5]]}),
]


def _dist(lib, name, params):
    kw = {k: (lib.tensor(v, dtype=lib.float64) if isinstance(v, list) or
              (isinstance(v, float) and name == "Wishart") else v) for k, v in params.items()}
    return getattr(lib.distributions, name)(**kw)


@pytest.mark.parametrize("name,params", STATS, ids=[s[0] for s in STATS])
def test_sample_mean_and_variance(name, params):
    n = 20000
    ember.manual_seed(1)
    x = as_np(_dist(ember, name, params).sample((n,)))
    td = _dist(torch, name, params)
    mean, var = as_np(td.mean), as_np(td.variance)
    if name == "VonMises":   # circular: its variance is 1 - E[cos(x - loc)]
        loc = np.array(params["loc"])
        x = np.stack([np.angle(np.exp(1j * (x - loc)).mean(0)) + loc,
                      1 - np.cos(x - loc).mean(0)])
        np.testing.assert_allclose(x[0], mean, atol=0.02)
        np.testing.assert_allclose(x[1], var, rtol=0.05)
        return
    se = np.sqrt(var / n)
    # 6 standard errors for the mean; the variance's estimate is looser (heavy tails)
    assert np.all(np.abs(x.mean(0) - mean) <= 6 * se + 1e-9), (x.mean(0), mean)
    np.testing.assert_allclose(x.var(0), var, rtol=0.12, atol=1e-9)


def test_seed_reproduces_draws():
    d = ember.distributions.Gamma(ember.tensor([0.5, 2.0]), ember.tensor([1.0, 1.0]))
    ember.manual_seed(7)
    a = d.sample((5,))
    ember.manual_seed(7)
    b = d.sample((5,))
    assert bool((a == b).all())
    g = ember.Generator().manual_seed(3)
    p1 = ember.poisson(ember.tensor([2.0, 3.0]), generator=g)
    g.manual_seed(3)
    assert bool((ember.poisson(ember.tensor([2.0, 3.0]), generator=g) == p1).all())


# (not the cases whose finite difference would cross a branch: GeneralizedPareto at
# concentration 0, ContinuousBernoulli at probs 0.499; nor symmetric-matrix parameters,
# whose single-entry perturbations leave the constraint)
RSAMPLE = [c for c in ALL if str(c) in (
    "Normal", "Uniform", "Laplace", "Cauchy", "Exponential", "LogNormal", "HalfNormal",
    "HalfCauchy", "Gumbel", "Weibull", "Pareto", "Kumaraswamy", "MultivariateNormal",
    "LowRankMultivariateNormal", "ContinuousBernoulli-logits", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "LogisticNormal")]


@pytest.mark.parametrize("case", RSAMPLE, ids=str)
def test_rsample_gradient_by_finite_differences(case):
    """d/dθ sum(w * rsample(θ)) with the noise held fixed (same seed) equals the central
    difference of the same draws."""
    dt = getattr(ember, case.dtype)
    params = {k: v for k, v in case.params.items() if isinstance(v, np.ndarray)
              and k not in case.nondiff}

    def draw(vals):
        args = {k: (ember.tensor(vals[k], dtype=dt, requires_grad=True) if k in vals else
                    (ember.tensor(v, dtype=dt) if isinstance(v, np.ndarray) else v))
                for k, v in case.params.items()}
        ember.manual_seed(5)
        return getattr(ember.distributions, case.name)(**args).rsample((3,)), args

    y, args = draw(params)
    w = np.random.default_rng(0).standard_normal(tuple(y.shape))
    loss = (y * ember.tensor(w, dtype=dt)).sum()
    leaves = [args[k] for k in params]
    grads = ember.autograd.grad(loss, leaves, allow_unused=True)
    h = 1e-6 if case.dtype == "float64" else 1e-2
    for k, g in zip(params, grads):
        fd = np.zeros_like(params[k])
        got = np.zeros_like(fd) if g is None else as_np(g).copy()
        for idx in np.ndindex(params[k].shape):
            if k == "scale_tril" and idx[-1] > idx[-2]:
                fd[idx] = got[idx]   # off the lower triangle, a perturbation is invalid
                continue
            up, dn = dict(params), dict(params)
            up[k] = params[k].copy()
            dn[k] = params[k].copy()
            up[k][idx] += h
            dn[k][idx] -= h
            fu = float((as_np(draw(up)[0]) * w).sum())
            fdn = float((as_np(draw(dn)[0]) * w).sum())
            fd[idx] = (fu - fdn) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=1e-4 * case.tol, atol=1e-5 * case.tol,
                                   err_msg=f"{case} d/d{k}")


def test_gamma_implicit_gradient_matches_torch():
    """The implicit reparameterisation gradient of a Gamma draw equals torch's formula at
    the same (alpha, x), and flows through Gamma.rsample (and so Beta, Chi2, StudentT)."""
    from ember.ops.random_sampling import _dirichlet_grad_np, _standard_gamma_grad_np
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 8.0, 40.0, 150.0])
    x = np.array([0.001, 0.2, 1.3, 2.0, 9.0, 38.0, 160.0])
    close(_standard_gamma_grad_np(alpha, x),
          torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)), rtol=2e-3)
    xs = np.array([0.05, 0.3, 0.5, 0.8, 0.95])
    a = np.array([0.5, 2.0, 3.0, 8.0, 0.7])
    tot = np.array([1.5, 4.0, 9.0, 20.0, 1.0])
    close(_dirichlet_grad_np(xs, a, tot),
          torch._dirichlet_grad(torch.tensor(xs), torch.tensor(a), torch.tensor(tot)),
          rtol=2e-3)
    conc = ember.tensor([1.5, 3.0], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(0)
    s = ember.distributions.Gamma(conc, 2.0).rsample((4,))
    (g,) = ember.autograd.grad(s.sum(), [conc])
    expect = (_standard_gamma_grad_np(np.array([1.5, 3.0]), as_np(s) * 2.0) / 2.0).sum(0)
    close(g, expect, rtol=1e-6)


def test_dirichlet_rsample_gradient_is_unbiased():
    """E[x] = a / sum(a): the mean of many reparameterised gradients of x_0 approaches the
    analytic derivative of a_0 / sum(a)."""
    a = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(0)
    x = ember.distributions.Dirichlet(a).rsample((20000,))
    (g,) = ember.autograd.grad(x[:, 0].mean(), [a])
    an = np.array([1.0, 2.0, 3.0])
    s = an.sum()
    expect = np.array([(s - an[0]) / s ** 2, -an[0] / s ** 2, -an[0] / s ** 2])
    np.testing.assert_allclose(as_np(g), expect, atol=4e-3)


@pytest.mark.parametrize("name,kw", [
    ("Bernoulli", {"probs": [0.3, 0.6]}), ("Binomial", {"total_count": 3.0, "probs": [0.2, 0.5]}),
    ("Categorical", {"probs": [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]}),
    ("OneHotCategorical", {"probs": [[0.2, 0.3, 0.5]]})])
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(name, kw, expand):
    out = []
    for lib in (torch, ember):
        args = {k: lib.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
        d = getattr(lib.distributions, name)(**args)
        out.append(d.enumerate_support(expand=expand))
        assert d.has_enumerate_support
    assert str(out[1].dtype).split(".")[-1] == str(out[0].dtype).split(".")[-1]
    close(out[1], out[0])


def test_perplexity_and_stddev():
    for lib in (torch, ember):
        d = lib.distributions.Categorical(probs=lib.tensor([0.25, 0.25, 0.5]))
        assert abs(float(d.perplexity()) - math.exp(float(d.entropy()))) < 1e-6
    e = ember.distributions.Gamma(ember.tensor(3.0), ember.tensor(2.0))
    t = torch.distributions.Gamma(torch.tensor(3.0), torch.tensor(2.0))
    close(e.stddev, t.stddev)


def test_straight_through_gradient_matches_torch():
    """OneHotCategoricalStraightThrough.rsample passes d/dprobs straight through: the
    gradient of sum(w * sample) does not depend on the draw, so it equals torch's."""
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    w = np.random.default_rng(3).standard_normal((4, 2, 3))
    grads = []
    for lib in (torch, ember):
        probs = lib.tensor(p, dtype=lib.float64, requires_grad=True)
        s = lib.distributions.OneHotCategoricalStraightThrough(probs=probs).rsample((4,))
        (g,) = lib.autograd.grad((s * lib.tensor(w, dtype=lib.float64)).sum(), [probs])
        grads.append(g)
    close(grads[1], grads[0], rtol=1e-10)
