"""The samplers that torch.distributions draws from: poisson, binomial, _standard_gamma and
_sample_dirichlet (torch's public functions of those names), as RANDOM ops.

They draw from ember's generators (ops/random.py: NumPy's PCG64 behind `ember.manual_seed`
or a `generator=`), so a seed fixes every distribution's samples. `_standard_gamma` is
differentiable the way torch's is, by implicit reparameterisation: for x ~ Gamma(a, 1) with
CDF F(x; a), dx/da = -(dF/da) / (dF/dx). The gradient helpers `_standard_gamma_grad` and
`_dirichlet_grad` compute that derivative (and the Dirichlet's, from the Beta marginal) in
float64 with SciPy's regularised incomplete gamma/beta functions.

    >>> ember.manual_seed(0); ember.poisson(ember.tensor([1.0, 4.0])).shape
    ember.Size([2])
"""
import numpy as np

from ..core import dtype as D
from ..dispatch import wrap, torch_name
from .matmul import finish
from .random import _rng
from .registry import OpDef, RANDOM, register
from ..core import strides as S
from . import meta_rules as M


def _need_float(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{torch_name(t.dtype)}\'')


# ---- the derivative helpers (float64 NumPy; their results carry no graph) -----------------
def _central(f, a, step):
    """d f / d a by a central difference (f is smooth in a; float64 keeps ~1e-8 accuracy)."""
    return (f(a + step) - f(a - step)) / (2 * step)


def _standard_gamma_grad_np(alpha, x):
    from scipy import special as _sp   # imported on first use: `import ember` stays light
    alpha = np.asarray(alpha, np.float64)
    x = np.asarray(x, np.float64)
    step = 1e-6 * np.maximum(alpha, 1e-3)
    dF_da = _central(lambda a: _sp.gammainc(a, x), alpha, step)
    # the density in log space: no overflow for large alpha, no underflow to 0 / 0
    log_pdf = (alpha - 1) * np.log(x) - x - _sp.gammaln(alpha)
    return -dF_da / np.exp(log_pdf)


def _standard_gamma_grad(self, output):
    """d output / d self for output ~ Gamma(self, 1) (torch._standard_gamma_grad)."""
    arr = _standard_gamma_grad_np(self._data, output._data)
    return wrap(arr.astype(self.dtype.np), self.dtype)


def _dirichlet_grad_np(x, alpha, total):
    from scipy import special as _sp
    x, alpha, total = (np.asarray(v, np.float64) for v in (x, alpha, total))
    b = total - alpha
    step = 1e-6 * np.maximum(alpha, 1e-3)
    # x_i's marginal is Beta(alpha_i, b): the implicit derivative at fixed b, over (1 - x)
    dF_da = _central(lambda a: _sp.betainc(a, b, x), alpha, step)
    log_pdf = ((alpha - 1) * np.log(x) + (b - 1) * np.log1p(-x) - _sp.betaln(alpha, b))
    return -dF_da / np.exp(log_pdf) / (1 - x)


def _dirichlet_grad(x, alpha, total):
    """-(dF/dalpha) / pdf / (1 - x) for x ~ Beta(alpha, total - alpha), F its CDF
    (torch._dirichlet_grad); the Dirichlet's backward projects it onto the simplex."""
    arr = _dirichlet_grad_np(x._data, alpha._data, total._data)
    return wrap(arr.astype(x.dtype.np), x.dtype)


# ---- the samplers -------------------------------------------------------------------------
# (inputs are converted with astype, not np.asarray: asarray of a meta array would read its
# all-zero mapping, while MetaArray.astype gives a meta array, whose first use raises MetaData
# and sends the call to the op's meta rule)
def poisson(input, generator=None):
    """Poisson counts with rates `input` (a float tensor; same dtype)."""
    _need_float(input, "poisson_cpu")
    lam = input._data.astype(np.float64, copy=False)
    if np.any(lam < 0) or np.any(np.isnan(lam)):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    arr = _rng(generator).poisson(lam).astype(input.dtype.np)
    # differentiable with a zero gradient, as torch's PoissonBackward0
    return finish(_poisson_op, (input,), arr, input.dtype)


def binomial(count, prob, generator=None):
    """Binomial counts: `count` trials each succeeding with probability `prob` (broadcast)."""
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{torch_name(t.dtype)}")
    n = np.maximum(count._data.astype(np.float64, copy=False), 0)
    p = np.clip(np.nan_to_num(prob._data.astype(np.float64, copy=False)), 0, 1)
    n, p = np.broadcast_arrays(n, p)
    dt = D.promote_types(count.dtype, prob.dtype)
    arr = _rng(generator).binomial(n.astype(np.int64), p)
    return wrap(arr.astype(dt.np), dt)


def _standard_gamma(self, generator=None):
    """Gamma(self, 1) samples; differentiable in `self` (implicit reparameterisation)."""
    _need_float(self, "gamma_cpu")
    alpha = self._data.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore"):
        arr = _rng(generator).standard_gamma(np.where(alpha > 0, alpha, 1.0))
    arr = np.where(alpha > 0, arr, 0.0).astype(self.dtype.np)
    # torch clamps to the smallest normal number, so log() of a sample stays finite
    arr = np.maximum(arr, np.finfo(self.dtype.np).tiny)
    return finish(_standard_gamma_op, (self,), arr, self.dtype)


def _sample_dirichlet(self, generator=None):
    """Dirichlet(self) samples over the last dimension (normalised Gamma draws)."""
    _need_float(self, "dirichlet")
    alpha = self._data.astype(np.float64, copy=False)
    g = _rng(generator).standard_gamma(np.where(alpha > 0, alpha, 1.0))
    g = np.maximum(np.where(alpha > 0, g, 0.0), np.finfo(np.float64).tiny)
    with np.errstate(invalid="ignore"):
        x = g / g.sum(-1, keepdims=True)
    fi = np.finfo(self.dtype.np)    # torch keeps each coordinate in [tiny, 1 - eps]
    return wrap(np.clip(x, fi.tiny, 1 - fi.eps).astype(self.dtype.np), self.dtype)


# ---- meta rules: the cpu checks, then the result's metadata; nothing is drawn (the generator
# does not move, as on torch's meta device). Layouts are those of the kernels' NumPy calls:
# the generator's draws are C-contiguous; gamma/dirichlet's np.where(alpha > 0, ...) follows
# the input's dim order
def _poisson_meta(input, generator=None):
    _need_float(input, "poisson_cpu")
    arr = M.out_array(input.shape, input.dtype.np, input)
    return finish(_poisson_op, (input,), arr, input.dtype)


def _binomial_meta(count, prob, generator=None):
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{torch_name(t.dtype)}")
    shape = S.broadcast_shapes(tuple(count.shape), tuple(prob.shape))
    dt = D.promote_types(count.dtype, prob.dtype)
    return wrap(M.out_array(shape, dt.np, count, prob), dt)


def _standard_gamma_meta(self, generator=None):
    _need_float(self, "gamma_cpu")
    arr = M.out_array(self.shape, self.dtype.np, self, like=self)
    return finish(_standard_gamma_op, (self,), arr, self.dtype)


def _sample_dirichlet_meta(self, generator=None):
    _need_float(self, "dirichlet")
    return wrap(M.out_array(self.shape, self.dtype.np, self, like=self), self.dtype)


_poisson_op = OpDef("poisson", RANDOM, method=False,
                    grads={"self": lambda g: g * 0},
                    meta=_poisson_meta)
poisson = register(_poisson_op, poisson)
binomial = register(OpDef("binomial", RANDOM, method=False, inputs=("count", "prob"),
                          meta=_binomial_meta),
                    binomial)
_standard_gamma_op = OpDef(
    "_standard_gamma", RANDOM, method=False,
    grads={"self": lambda g, self, result: g * _standard_gamma_grad(self, result)},
    meta=_standard_gamma_meta)
_standard_gamma = register(_standard_gamma_op, _standard_gamma)
_sample_dirichlet = register(OpDef("_sample_dirichlet", RANDOM, method=False,
                                   meta=_sample_dirichlet_meta),
                             _sample_dirichlet)
