"""Argument and sample validation against torch: the exception types and the gist of the
messages for bad parameters, values outside the support or of the wrong shape, and bad
constructor combinations; set_default_validate_args; the base classes' contracts
(Distribution's NotImplementedErrors, ExponentialFamily's Bregman entropy)."""
import re

import pytest
import torch

import ember
from _cases import build, close
from test_values import CASES


@pytest.fixture(autouse=True)
def _torch_validates():
    """torch's default is to validate; but compiling anything with torch (``torch.cond`` in
    tests/ops/test_toplevel_misc.py) turns its validation off for the rest of the process,
    so the oracle is put back in its default state here."""
    old = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(old)


def _gist(msg):
    """The message without the printed tensor and with the library's name neutral."""
    return re.sub(r"\b(ember|torch)\.", "", str(msg)).split("invalid values")[0]


def _both(fn):
    """Run fn(lib) in torch and ember: both raise the same type with the same gist, or
    both succeed."""
    out = []
    for lib in (torch, ember):
        try:
            fn(lib)
            out.append(None)
        except Exception as e:  # compared below
            out.append(e)
    t, e = out
    assert type(e) is type(t), f"torch {t!r}, ember {e!r}"
    if t is not None:
        assert _gist(e) == _gist(t), f"\ntorch: {_gist(t)}\nember: {_gist(e)}"
    return t


def T(lib, v):
    return lib.tensor(v, dtype=lib.float64)


BAD_PARAMS = {
    "Normal-scale": lambda lib: lib.distributions.Normal(T(lib, [0.0, 1.0]), T(lib, [1.0, -1.0])),
    "Normal-scalar": lambda lib: lib.distributions.Normal(0.0, -1.0),
    "Uniform-order": lambda lib: lib.distributions.Uniform(T(lib, [0.0]), T(lib, [-1.0])),
    "Exponential": lambda lib: lib.distributions.Exponential(T(lib, [0.0])),
    "Bernoulli-probs": lambda lib: lib.distributions.Bernoulli(probs=T(lib, [1.5])),
    "Bernoulli-both": lambda lib: lib.distributions.Bernoulli(probs=T(lib, [0.5]),
                                                               logits=T(lib, [0.0])),
    "Bernoulli-none": lambda lib: lib.distributions.Bernoulli(),
    "Categorical-0d": lambda lib: lib.distributions.Categorical(probs=T(lib, 0.5)),
    "Categorical-simplex": lambda lib: lib.distributions.Categorical(probs=T(lib, [-0.5, 1.5])),
    "Binomial-count": lambda lib: lib.distributions.Binomial(T(lib, [2.5]), T(lib, [0.5])),
    "Gamma": lambda lib: lib.distributions.Gamma(T(lib, [-1.0]), T(lib, [1.0])),
    "Beta": lambda lib: lib.distributions.Beta(T(lib, [0.0]), T(lib, [1.0])),
    "Dirichlet-0d": lambda lib: lib.distributions.Dirichlet(T(lib, 1.0)),
    "Dirichlet": lambda lib: lib.distributions.Dirichlet(T(lib, [1.0, -1.0])),
    "Geometric-zero": lambda lib: lib.distributions.Geometric(probs=T(lib, [0.0, 0.5])),
    "Poisson": lambda lib: lib.distributions.Poisson(T(lib, [-1.0])),
    "StudentT": lambda lib: lib.distributions.StudentT(T(lib, [-1.0])),
    "MVN-none": lambda lib: lib.distributions.MultivariateNormal(T(lib, [0.0, 0.0])),
    "MVN-two": lambda lib: lib.distributions.MultivariateNormal(
        T(lib, [0.0, 0.0]), covariance_matrix=lib.eye(2, dtype=lib.float64),
        scale_tril=lib.eye(2, dtype=lib.float64)),
    "MVN-loc-0d": lambda lib: lib.distributions.MultivariateNormal(
        T(lib, 0.0), scale_tril=lib.eye(2, dtype=lib.float64)),
    "MVN-not-tril": lambda lib: lib.distributions.MultivariateNormal(
        T(lib, [0.0, 0.0]), scale_tril=T(lib, [[1.0, 1.0], [0.0, 1.0]])),
    "MVN-not-pd": lambda lib: lib.distributions.MultivariateNormal(
        T(lib, [0.0, 0.0]), covariance_matrix=T(lib, [[1.0, 2.0], [2.0, 1.0]])),
    "LowRank-shape": lambda lib: lib.distributions.LowRankMultivariateNormal(
        T(lib, [0.0, 0.0]), T(lib, [[1.0, 2.0, 3.0]]), T(lib, [1.0, 1.0])),
    "Independent-ndims": lambda lib: lib.distributions.Independent(
        lib.distributions.Normal(T(lib, [0.0]), T(lib, [1.0])), 2),
    "Wishart-df": lambda lib: lib.distributions.Wishart(
        T(lib, 0.5), covariance_matrix=lib.eye(2, dtype=lib.float64)),
    "LKJ-dim": lambda lib: lib.distributions.LKJCholesky(1, T(lib, 1.0)),
    "Multinomial-count": lambda lib: lib.distributions.Multinomial(
        T(lib, 3.0), probs=T(lib, [0.5, 0.5])),
    "Transformed-bad": lambda lib: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(0.0, 1.0), "exp"),
    "Mixture-not-categorical": lambda lib: lib.distributions.MixtureSameFamily(
        lib.distributions.Normal(T(lib, [0.0]), T(lib, [1.0])),
        lib.distributions.Normal(T(lib, [0.0]), T(lib, [1.0]))),
    "Mixture-k": lambda lib: lib.distributions.MixtureSameFamily(
        lib.distributions.Categorical(probs=T(lib, [0.5, 0.5])),
        lib.distributions.Normal(T(lib, [0.0, 1.0, 2.0]), T(lib, [1.0, 1.0, 1.0]))),
    "VonMises": lambda lib: lib.distributions.VonMises(T(lib, [0.0]), T(lib, [-1.0])),
}


@pytest.mark.parametrize("name", sorted(BAD_PARAMS))
def test_bad_parameters_raise_like_torch(name):
    assert _both(BAD_PARAMS[name]) is not None


def test_validate_args_false_skips_the_checks():
    for lib in (torch, ember):
        d = lib.distributions.Normal(T(lib, [0.0]), T(lib, [-1.0]), validate_args=False)
        assert tuple(d.batch_shape) == (1,)


def test_set_default_validate_args():
    D = ember.distributions
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(0.0, -1.0)                     # no check
        assert not D.Normal(0.0, 1.0)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


BAD_VALUES = {
    "outside-support": lambda lib: lib.distributions.Exponential(T(lib, [1.0])).log_prob(
        T(lib, [-1.0])),
    "not-a-tensor": lambda lib: lib.distributions.Normal(T(lib, [0.0]), T(lib, [1.0])).log_prob(
        0.5),
    "broadcast": lambda lib: lib.distributions.Normal(T(lib, [0.0, 1.0]),
                                                      T(lib, [1.0, 1.0])).log_prob(
        T(lib, [0.0, 1.0, 2.0])),
    "event-shape": lambda lib: lib.distributions.MultivariateNormal(
        T(lib, [0.0, 0.0]), scale_tril=lib.eye(2, dtype=lib.float64)).log_prob(
        T(lib, [0.0, 1.0, 2.0])),
    "categorical-range": lambda lib: lib.distributions.Categorical(
        probs=T(lib, [0.5, 0.5])).log_prob(lib.tensor(2)),
    "bernoulli-value": lambda lib: lib.distributions.Bernoulli(
        probs=T(lib, [0.5])).log_prob(T(lib, [0.5])),
    "cdf-outside": lambda lib: lib.distributions.Gamma(T(lib, [1.0]), T(lib, [1.0])).cdf(
        T(lib, [-1.0])),
    "binomial-inhomogeneous-entropy": lambda lib: lib.distributions.Binomial(
        T(lib, [2.0, 3.0]), T(lib, [0.5, 0.5])).entropy(),
    "independent-enumerate": lambda lib: lib.distributions.Independent(
        lib.distributions.Bernoulli(T(lib, [[0.5]])), 1).enumerate_support(),
    "normal-enumerate": lambda lib: lib.distributions.Normal(0.0, 1.0).enumerate_support(),
    "uniform-mode": lambda lib: lib.distributions.Uniform(0.0, 1.0).mode,
    "vonmises-rsample": lambda lib: lib.distributions.VonMises(T(lib, [0.0]),
                                                               T(lib, [1.0])).rsample(),
    "categorical-rsample": lambda lib: lib.distributions.Categorical(
        probs=T(lib, [0.5, 0.5])).rsample(),
}


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_bad_values_raise_like_torch(name):
    _both(BAD_VALUES[name])


def test_distribution_base_contract():
    for lib in (torch, ember):
        D = lib.distributions
        d = D.Distribution(validate_args=False)
        for attr in ("mean", "variance", "support", "arg_constraints", "mode"):
            with pytest.raises(NotImplementedError):
                getattr(d, attr)
        for meth in ("rsample", "entropy"):
            with pytest.raises(NotImplementedError):
                getattr(d, meth)()
        for meth in ("log_prob", "cdf", "icdf"):
            with pytest.raises(NotImplementedError):
                getattr(d, meth)(lib.zeros(1))
        assert tuple(d.batch_shape) == () and tuple(d.event_shape) == ()
        assert issubclass(D.Normal, D.ExponentialFamily)
        assert not issubclass(D.Cauchy, D.ExponentialFamily)


EXPFAM = [c for c in CASES if c.name in (
    "Normal", "Exponential", "Bernoulli", "Poisson", "Gamma", "Beta", "Dirichlet",
    "ContinuousBernoulli", "Chi2", "Wishart")]


@pytest.mark.parametrize("case", EXPFAM, ids=str)
def test_exponential_family_bregman_entropy(case):
    """ExponentialFamily.entropy (from the log normaliser by autograd) equals torch's, and
    equals the distribution's closed form."""
    tdist, _ = build(case, torch)
    edist, _ = build(case, ember)
    try:
        te = torch.distributions.ExponentialFamily.entropy(tdist)
    except NotImplementedError:   # no carrier measure (Poisson, Beta, Dirichlet)
        with pytest.raises(NotImplementedError):
            ember.distributions.ExponentialFamily.entropy(edist)
        return
    ee = ember.distributions.ExponentialFamily.entropy(edist)
    close(ee, te, rtol=1e-6, atol=1e-8)
    close(ee, tdist.entropy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_constraints_and_flags_match_torch(case):
    tdist, _ = build(case, torch, grad=False)
    edist, _ = build(case, ember, grad=False)
    assert sorted(edist.arg_constraints) == sorted(tdist.arg_constraints)
    for k in tdist.arg_constraints:
        assert type(edist.arg_constraints[k]).__name__ == type(tdist.arg_constraints[k]).__name__
    assert type(edist.support).__name__ == type(tdist.support).__name__
    assert edist.support.event_dim == tdist.support.event_dim
    assert edist.has_enumerate_support == tdist.has_enumerate_support
    assert edist.has_rsample == tdist.has_rsample
