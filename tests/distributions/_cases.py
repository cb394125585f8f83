"""The parameter grids the distribution tests run over, and the helpers that build the same
distribution in ember and in torch and compare what they compute.

A Case names a distribution, its parameters (NumPy float64 arrays, or ints/floats) and how
to pick values to score; `build(case, lib)` makes the distribution from one library. Values
scored by log_prob/cdf come from torch's own sampler, so they lie in the support.
"""
from dataclasses import dataclass, field

import numpy as np
import torch

import ember

RNG = np.random.default_rng(1234)


def real(*shape):
    return RNG.standard_normal(shape)


def pos(*shape, lo=0.3, hi=3.0):
    return RNG.uniform(lo, hi, shape)


def unit(*shape):
    return RNG.uniform(0.1, 0.9, shape)


def simplex(*shape):
    p = RNG.uniform(0.2, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def spd(n, *batch):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def tril(n, *batch):
    return np.linalg.cholesky(spd(n, *batch))


@dataclass
class Case:
    name: str                      # the class name in torch.distributions
    params: dict                   # name -> ndarray (a differentiable parameter) or number
    nondiff: tuple = ()            # parameter names that take no gradient
    value: object = None           # value(torch_dist) -> ndarray to score (default: sample)
    id: str = ""
    dtype: str = "float64"
    tol: float = 1.0               # a factor on the comparison tolerances
    methods: tuple = field(default=("log_prob", "entropy", "cdf", "icdf", "mean", "variance",
                                    "mode", "stddev"))

    def __str__(self):
        return self.id or self.name


def to_lib(v, lib, grad, dtype="float64"):
    if isinstance(v, np.ndarray):
        t = lib.tensor(v, dtype=getattr(lib, dtype))
        return t.requires_grad_() if grad else t
    return v


def build(case, lib, grad=True):
    """(distribution, {name: leaf tensor}) of `case` in `lib` (ember or torch)."""
    args = {k: to_lib(v, lib, grad and k not in case.nondiff, case.dtype)
            for k, v in case.params.items()}
    if case.name in ("MixtureSameFamily",):
        mix = lib.distributions.Categorical(logits=args.pop("mix_logits"))
        comp = lib.distributions.Normal(args.pop("loc"), args.pop("scale"))
        return lib.distributions.MixtureSameFamily(mix, comp), {}
    d = getattr(lib.distributions, case.name)(**args)
    return d, {k: v for k, v in args.items() if isinstance(v, lib.Tensor) and v.requires_grad}


def as_np(x):
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return x.detach().numpy()
    return np.asarray(x)


def outcome(fn):
    try:
        return "ok", fn()
    except NotImplementedError:
        return "raise", NotImplementedError
    except Exception as e:   # compared by type with torch's
        return "raise", type(e)


def values_for(case, tdist):
    if case.value is not None:
        return case.value(tdist)
    torch.manual_seed(0)
    return tdist.sample((2,)).numpy()


def probe(d, method, value):
    """Evaluate one method (or property) of distribution `d`."""
    if method in ("log_prob", "cdf"):
        return getattr(d, method)(value)
    if method == "icdf":
        return d.icdf(value)
    if method in ("entropy",):
        return d.entropy()
    return getattr(d, method)


def close(a, b, rtol=1e-6, atol=1e-8):
    a, b = as_np(a).astype(np.float64), as_np(b).astype(np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
