"""kl_divergence against torch's for every registered pair of families ember has (same
family and cross-family, infinite where torch's is), with gradients; register_kl's
dispatch (a user registration, the most specific pair winning) and the errors."""
import numpy as np
import pytest
import torch

import ember
from _cases import as_np, close, pos, real, simplex, spd, tril, unit

P = {   # one parameterisation per family: (class name, kwargs)
    "Normal": {"loc": real(3), "scale": pos(3)},
    "Laplace": {"loc": real(3), "scale": pos(3)},
    "Cauchy": {"loc": real(3), "scale": pos(3)},
    "Uniform": {"low": np.array([0.1, 0.2, -1.0]), "high": np.array([0.9, 0.6, 2.0])},
    "Exponential": {"rate": pos(3)},
    "Gamma": {"concentration": pos(3, lo=0.5), "rate": pos(3)},
    "Beta": {"concentration1": pos(3, lo=0.5), "concentration0": pos(3, lo=0.5)},
    "Gumbel": {"loc": real(3), "scale": pos(3)},
    "Pareto": {"scale": pos(3), "alpha": np.array([0.8, 1.5, 3.0])},
    "HalfNormal": {"scale": pos(3)},
    "ContinuousBernoulli": {"probs": np.array([0.2, 0.7, 0.4])},
    "Bernoulli": {"probs": unit(3)},
    "Binomial": {"total_count": 4.0, "probs": unit(3)},
    "Poisson": {"rate": pos(3)},
    "Geometric": {"probs": unit(3)},
    "Categorical": {"probs": simplex(3, 4)},
    "OneHotCategorical": {"logits": real(3, 4)},
    "Dirichlet": {"concentration": pos(3, 4, lo=0.5)},
    "MultivariateNormal": {"loc": real(3, 2), "scale_tril": tril(2, 3)},
    "LowRankMultivariateNormal": {"loc": real(3, 2), "cov_factor": real(3, 2, 1),
                                  "cov_diag": pos(3, 2)},
    "LogNormal": {"loc": real(3), "scale": pos(3)},
    "Chi2": {"df": pos(3, lo=1.0)},
}
NONDIFF = {"total_count"}


def _variant(k, v):
    """q's parameters: p's moved, staying valid (probabilities and simplices in range,
    triangular factors triangular)."""
    if k in ("probs",):
        return v / v.sum(-1, keepdims=True) if v.ndim == 2 else v * 0.8 + 0.05
    if k == "scale_tril":
        return v * 1.3
    if k == "high":
        return v + 0.3
    if k == "low":
        return v - 0.05
    return v * 1.3 + 0.05


Q = {name: {k: (_variant(k, v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
     for name, kw in P.items()}
Q["Categorical"] = {"probs": simplex(3, 4)}


def _make(lib, name, variant):
    kw = {}
    for k, v in (Q if variant else P)[name].items():
        if isinstance(v, np.ndarray):
            t = lib.tensor(v, dtype=lib.float64)
            kw[k] = t.requires_grad_() if k not in NONDIFF else t
        else:
            kw[k] = v
    return getattr(lib.distributions, name)(**kw), [v for v in kw.values()
                                                    if isinstance(v, lib.Tensor) and
                                                    v.requires_grad]


def _pairs():
    reg = torch.distributions.kl._KL_REGISTRY
    out = []
    for (tp, tq) in reg:
        if tp.__name__ in P and tq.__name__ in P:
            out.append((tp.__name__, tq.__name__))
    # subclasses reach their parent's formula (Chi2 -> Gamma, LogNormal -> Transformed)
    out += [("Chi2", "Gamma"), ("Chi2", "Chi2"), ("LogNormal", "LogNormal"),
            ("Gamma", "Chi2")]
    return sorted(set(out))


PAIRS = _pairs()


def test_pairs_cover_torch_registry_for_our_families():
    assert len(PAIRS) > 80


@pytest.mark.parametrize("pq", PAIRS, ids=lambda pq: f"{pq[0]}-{pq[1]}")
def test_kl_matches_torch(pq):
    pn, qn = pq
    tp, tpp = _make(torch, pn, 0)
    tq, tqp = _make(torch, qn, 1)
    ep, epp = _make(ember, pn, 0)
    eq, eqp = _make(ember, qn, 1)
    try:
        tk = torch.distributions.kl_divergence(tp, tq)
    except (NotImplementedError, ValueError) as e:
        with pytest.raises(type(e)):
            ember.distributions.kl_divergence(ep, eq)
        return
    ek = ember.distributions.kl_divergence(ep, eq)
    close(ek, tk, rtol=1e-6, atol=1e-8)
    finite = np.isfinite(as_np(tk))
    if not finite.any() or not tk.requires_grad:
        return
    tl = torch.where(torch.tensor(finite), tk, 0.0).sum()
    el = ember.where(ember.tensor(finite), ek, 0.0).sum()
    tg = torch.autograd.grad(tl, tpp + tqp, allow_unused=True)
    eg = ember.autograd.grad(el, epp + eqp, allow_unused=True)
    for a, b in zip(eg, tg):
        if b is None:
            assert a is None or np.allclose(as_np(a), 0)
        else:
            close(a, b, rtol=1e-5, atol=1e-7)


def test_unregistered_pair_raises_not_implemented():
    D = ember.distributions
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.VonMises(ember.tensor(0.0), ember.tensor(1.0)), D.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError):   # torch's too
        torch.distributions.kl_divergence(
            torch.distributions.VonMises(torch.tensor(0.0), torch.tensor(1.0)),
            torch.distributions.Normal(0.0, 1.0))


def test_expfamily_bregman_fallback_matches_torch():
    """Wishart-Wishart has no closed form registered: the ExponentialFamily pair's Bregman
    divergence of the log normaliser answers, in both libraries."""
    out = []
    for lib in (torch, ember):
        cov = lib.tensor(spd(2), dtype=lib.float64)
        p = lib.distributions.Wishart(lib.tensor(4.0, dtype=lib.float64),
                                      covariance_matrix=cov)
        q = lib.distributions.Wishart(lib.tensor(5.0, dtype=lib.float64),
                                      covariance_matrix=cov * 2)
        out.append(lib.distributions.kl_divergence(p, q))
    close(out[1], out[0], rtol=1e-6)


def test_register_kl_user_pair_and_specificity():
    D = ember.distributions

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0))) == 42.0
    # the parent pair still answers for parents
    assert float(D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)
