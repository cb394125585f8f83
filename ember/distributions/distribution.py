"""`Distribution`, the base of every distribution, and `ExponentialFamily`.

A distribution has a `batch_shape` (independent, differently-parameterised copies) and an
`event_shape` (the shape of one draw); `sample(sample_shape)` returns
``sample_shape + batch_shape + event_shape``. With `validate_args` (on by default, as in
torch under `__debug__`) the constructor checks each parameter against `arg_constraints`
and `log_prob`/`cdf` check their value against `support`, raising torch's ValueError.

    >>> d = Normal(ember.zeros(3), 1.0)
    >>> d.sample((2,)).shape, d.batch_shape
    (ember.Size([2, 3]), ember.Size([3]))
"""
import numbers
import warnings

from ..autograd import grad as _grad
from ..autograd.grad_mode import no_grad
from . import _fn, constraints
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Distribution", "ExponentialFamily"]


def _size(shape):
    return _fn.Size(tuple(shape))


class Distribution:
    """The abstract base class of probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions created from now on."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue    # cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue    # not constructed yet
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded to `batch_shape` (no copy, no checks)."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised draw: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        """exp(entropy), over the batch."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        return _size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, _fn.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        params = [(k, self.__dict__[k]) for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in params)
        return self.__class__.__name__ + "(" + args + ")"


class ExponentialFamily(Distribution):
    """Distributions p(x; θ) = h(x) exp(<t(x), θ> - F(θ)); the entropy comes from the log
    normaliser F by autograd (a Bregman divergence), and KL between two members of one
    family from F too (kl.py)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):

        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = _grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result


def expand_params(self, cls, batch_shape, _instance, names):
    """The common `expand`: a new instance whose parameters `names` (those set on self) are
    expanded to ``batch_shape + <their own event part>``, with no validation."""
    new = self._get_checked_instance(cls, _instance)
    batch_shape = tuple(batch_shape)
    nb = len(self.batch_shape)
    for n in names:
        if n in self.__dict__:
            v = getattr(self, n)
            new.__dict__[n] = v.expand(batch_shape + tuple(v.shape[nb:]))
    Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


def probs_or_logits(self, probs, logits):
    """Set exactly one of `probs` / `logits` on self (broadcast to a tensor) as ``_param``;
    returns the batch shape it gives (() for a Python number)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (self.probs,) = broadcast_all(probs)
    else:
        (self.logits,) = broadcast_all(logits)
    self._param = self.probs if probs is not None else self.logits
    given = probs if probs is not None else logits
    return () if isinstance(given, numbers.Number) else tuple(self._param.shape)


def count_and_probs_or_logits(self, total_count, probs, logits):
    """probs_or_logits for the count distributions: `total_count` broadcast with the given
    parameter and of its dtype; returns the batch shape."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, given = ("probs", probs) if probs is not None else ("logits", logits)
    total_count, param = broadcast_all(total_count, given)
    self.total_count = total_count.type_as(param)
    setattr(self, name, param)
    self._param = param
    return tuple(param.shape)


def expand_probs_logits(self, cls, batch_shape, _instance, extra=()):
    """expand_params for a distribution parameterised by probs or logits (and `extra`)."""
    new = expand_params(self, cls, batch_shape, _instance, ("probs", "logits") + extra)
    new._param = new.__dict__["probs"] if "probs" in self.__dict__ else new.__dict__["logits"]
    return new


class BinaryProbsLogits:
    """The two-outcome parameter pair: `probs` and `logits` (each derived lazily from the
    other, whichever was given) and `param_shape`, shared by Bernoulli-like distributions."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()
