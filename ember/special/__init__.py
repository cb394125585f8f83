"""ember.special: torch.special's namespace.

Most names are ops of their own (ember/ops/special_ops.py, ember/ops/special_poly.py:
registered as ``special_<name>``, with derivatives where torch has them); the rest are
torch.special's aliases of top-level ops (``special.expit`` is ``sigmoid``, ``gammaln`` is
``lgamma``, ``psi`` is ``digamma``, ...), exactly as in torch.

    >>> import ember
    >>> ember.special.gammaln(ember.tensor([4.0]))     # log(3!)
    tensor([1.7918])
"""
from ..core.tensor import Tensor  # noqa: F401  (torch.special exports it too)
from ..ops import special_ops as _s, special_poly as _p
from ..ops.registry import FUNCTIONS as _F
from ..ops.doc_args import common_args, multi_dim_common  # noqa: F401  (torch's doc fragments)

# ---- ops of torch.special's own ----
xlog1py, entr, zeta = _s.xlog1py, _s.entr, _s.zeta
i0e, i1, i1e = _s.i0e, _s.i1, _s.i1e
ndtr, ndtri, log_ndtr, erfcx = _s.ndtr, _s.ndtri, _s.log_ndtr, _s.erfcx
bessel_j0, bessel_j1, bessel_y0, bessel_y1 = _p.bessel_j0, _p.bessel_j1, _p.bessel_y0, _p.bessel_y1
modified_bessel_i0, modified_bessel_i1 = _p.modified_bessel_i0, _p.modified_bessel_i1
modified_bessel_k0, modified_bessel_k1 = _p.modified_bessel_k0, _p.modified_bessel_k1
scaled_modified_bessel_k0 = _p.scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _p.scaled_modified_bessel_k1
spherical_bessel_j0, airy_ai = _p.spherical_bessel_j0, _p.airy_ai
chebyshev_polynomial_t = _p.chebyshev_polynomial_t
chebyshev_polynomial_u = _p.chebyshev_polynomial_u
chebyshev_polynomial_v = _p.chebyshev_polynomial_v
chebyshev_polynomial_w = _p.chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _p.shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _p.shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _p.shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _p.shifted_chebyshev_polynomial_w
hermite_polynomial_h, hermite_polynomial_he = _p.hermite_polynomial_h, _p.hermite_polynomial_he
laguerre_polynomial_l, legendre_polynomial_p = _p.laguerre_polynomial_l, _p.legendre_polynomial_p

# ---- torch.special's aliases of top-level ops ----
erf, erfc, erfinv = _F["erf"], _F["erfc"], _F["erfinv"]
exp2, expm1, log1p = _F["exp2"], _F["expm1"], _F["log1p"]
expit, logit = _F["sigmoid"], _F["logit"]
gammaln, digamma, psi, polygamma = _F["lgamma"], _F["digamma"], _F["digamma"], _F["polygamma"]
gammainc, gammaincc = _F["igamma"], _F["igammac"]
i0, sinc, xlogy, round = _F["i0"], _F["sinc"], _F["xlogy"], _F["round"]
logsumexp = _F["logsumexp"]


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function of dimension `p` (``torch.mvlgamma``).

    >>> ember.special.multigammaln(ember.tensor([2.5]), 2).shape
    ember.Size([1])
    """
    return _F["mvlgamma"](input, p, out=out)


def softmax(input, dim, *, dtype=None):
    """softmax along `dim` (``torch.special.softmax``), optionally computed in `dtype`.

    >>> ember.special.softmax(ember.zeros(2), 0)
    tensor([0.5000, 0.5000])
    """
    return _F["softmax"](input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax along `dim` (``torch.special.log_softmax``).

    >>> ember.special.log_softmax(ember.zeros(2), 0)
    tensor([-0.6931, -0.6931])
    """
    return _F["log_softmax"](input, dim, dtype=dtype)
