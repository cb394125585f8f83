"""``ember.distributions``: torch.distributions on ember — parameterised probability
distributions with sampling (reparameterised where torch's is), log densities, moments,
entropies, constraints, transforms and KL divergences.

    import ember as torch
    from ember.distributions import Normal, kl_divergence
    p = Normal(torch.zeros(3), torch.ones(3))
    x = p.rsample((2,))              # differentiable in loc and scale
    lp = p.log_prob(x)               # shape (2, 3)
"""
from . import constraints, transforms  # noqa: F401
from .constraint_registry import biject_to, transform_to  # noqa: F401
from .continuous import (Cauchy, Exponential, GeneralizedPareto, Laplace,  # noqa: F401
                         Normal, Uniform)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric,  # noqa: F401
                       Multinomial, OneHotCategorical, OneHotCategoricalStraightThrough,
                       Poisson)
from .distribution import Distribution, ExponentialFamily  # noqa: F401
from .gamma import (Beta, Chi2, Dirichlet, FisherSnedecor, Gamma,  # noqa: F401
                    InverseGamma, NegativeBinomial, StudentT)
from .transformed import (Gumbel, HalfCauchy, HalfNormal, Kumaraswamy,  # noqa: F401
                          LogNormal, Pareto, Weibull)
from .transforms import *  # noqa: F401,F403
from .wrappers import Independent, TransformedDistribution  # noqa: F401
from .matrix import LKJCholesky, MixtureSameFamily, Wishart  # noqa: F401,E402
from .multivariate import LowRankMultivariateNormal, MultivariateNormal  # noqa: F401,E402
from .relaxed import (ContinuousBernoulli, ExpRelaxedCategorical,  # noqa: F401,E402
                      LogisticNormal, LogitRelaxedBernoulli, RelaxedBernoulli,
                      RelaxedOneHotCategorical, VonMises)
from .kl import kl_divergence, register_kl  # noqa: F401,E402
from . import kl_cross as _kl_cross  # noqa: F401,E402  (registers the cross-family pairs)
