"""Random ops over seeded generators: the same seed gives the same numbers every run.

A `Generator` wraps NumPy's PCG64 stream. `manual_seed` reseeds the default generator;
every random op takes `generator=` to draw from another one. (Bit-equality with PyTorch's
Mersenne-Twister stream is not a goal.)
"""
import pickle

import numpy as np

from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..dispatch_args import int_arg
from .creation import _size_args, _sizes, _finish, _dtype_or_default, on_meta, meta_factory
from ..core.meta import MetaArray
from . import meta_rules as M
from .registry import OPS
from .registry import OpDef, RANDOM, register, register_each, METHODS


class Generator:
    """An independent random stream: ``g = ember.Generator().manual_seed(0)``."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed += 1 << 64
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        s = int.from_bytes(np.random.SeedSequence().entropy.to_bytes(16, "little")[:8], "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        data = pickle.dumps((self._seed, self._rng.bit_generator.state))
        return wrap(np.frombuffer(data, dtype=np.uint8).copy(), D.uint8)

    def set_state(self, new_state):
        if not isinstance(new_state, Tensor) or new_state.dtype is not D.uint8:
            raise TypeError("expected a torch.ByteTensor as the RNG state")
        seed, st = pickle.loads(new_state._data.tobytes())
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64())
        self._rng.bit_generator.state = st
        return self


default_generator = Generator()


def _rng(generator):
    return (generator or default_generator)._rng


def manual_seed(seed):
    """Seed every random draw of ember (ops, dropout, data loader shuffling)."""
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def _float_dtype(dtype, name, complex_ok=False):
    dt = _dtype_or_default(dtype)
    if not (dt.is_floating_point or (complex_ok and dt.is_complex)):
        raise NotImplementedError(f'"{name}" not implemented for \'{torch_name(dt)}\'')
    return dt


def rand(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None,
         layout=None, pin_memory=False):
    """Uniform samples on [0, 1)."""
    dt = _float_dtype(dtype, "check_uniform_bounds", complex_ok=True)
    shape = _size_args(_sizes(sizes, size))
    if on_meta(device):     # nothing drawn: the generator does not move (as in torch)
        return meta_factory(shape, dt, requires_grad)
    arr = _rng(generator).random(shape, dtype=np.float64)
    if dt.is_complex:       # both parts uniform on [0, 1), as torch
        arr = arr + 1j * _rng(generator).random(shape, dtype=np.float64)
    return _finish(arr.astype(dt.np), dt, requires_grad, device)


def randn(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None,
          layout=None, pin_memory=False):
    """Standard normal samples."""
    dt = _float_dtype(dtype, "normal_kernel_cpu", complex_ok=True)
    shape = _size_args(_sizes(sizes, size))
    if on_meta(device):
        return meta_factory(shape, dt, requires_grad)
    arr = _rng(generator).standard_normal(shape)
    if dt.is_complex:       # each part N(0, 1/2): variance 1 in all, as torch
        arr = (arr + 1j * _rng(generator).standard_normal(shape)) * np.sqrt(0.5)
    return _finish(arr.astype(dt.np), dt, requires_grad, device)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, out=None, layout=None):
    """Integers uniform on [low, high): ``randint(10, (3,))`` or ``randint(2, 10, (3,))``."""
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low, high = (int_arg(v, "randint", n, k + 1) for k, (n, v) in enumerate(
        (("low", low), ("high", high))))
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    if on_meta(device):
        return meta_factory(_size_args((size,)), dt, requires_grad)
    arr = _rng(generator).integers(low, high, _size_args((size,)))
    return _finish(arr.astype(dt.np), dt, requires_grad, device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None,
             layout=None, pin_memory=False):
    """A random permutation of 0..n-1."""
    n = int_arg(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    return _finish(_rng(generator).permutation(n).astype(dt.np), dt, requires_grad, device)


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, **kw):
    _like_keywords("rand_like", kw)
    return rand(input.shape, dtype=dtype or input.dtype, generator=generator,
                requires_grad=requires_grad, device=kw.get("device") or input.device)


def _like_keywords(name, kw):
    """torch's *_like factories take these keywords besides dtype/generator/requires_grad
    (ember has one device and one layout); any other is a TypeError, as torch's parser."""
    for k in kw:
        if k not in ("layout", "device", "pin_memory", "memory_format"):
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, **kw):
    _like_keywords("randn_like", kw)
    return randn(input.shape, dtype=dtype or input.dtype, generator=generator,
                 requires_grad=requires_grad, device=kw.get("device") or input.device)


def randint_like(input, low=0, high=None, *, dtype=None, generator=None, **kw):
    _like_keywords("randint_like", kw)
    if high is None:
        low, high = 0, low
    for v in (low, high):
        if isinstance(v, (bool, float)):
            raise TypeError(f"randint_like() received an invalid combination of arguments - "
                            f"got (Tensor, {type(v).__name__}), but expected one of: "
                            "* (Tensor input, int high) * (Tensor input, int low, int high)")
    return randint(low, high, input.shape, dtype=dtype or input.dtype, generator=generator,
                   device=kw.get("device") or input.device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, out=None, **kw):
    """Normal samples; `mean` and `std` may be tensors (broadcast) or numbers with `size`."""
    if kw:
        for k in kw:
            if k not in ("layout", "device", "pin_memory", "requires_grad"):
                raise TypeError(f"normal() received an invalid combination of arguments - got "
                                f"an unexpected keyword argument '{k}'")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        if np.any(np.asarray(s) < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        dt = (mean if isinstance(mean, Tensor) else std).dtype
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        arr = m + s * _rng(generator).standard_normal(shape)
        return wrap(np.asarray(arr).astype(dt.np), dt)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    dt = _dtype_or_default(dtype)
    arr = mean + std * _rng(generator).standard_normal(_size_args((size,)))
    return _finish(np.asarray(arr).astype(dt.np), dt, False, None)


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities `input` (or the scalar `p`)."""
    _float_dtype(input.dtype, "bernoulli_tensor_cpu_p_")
    if p is not None and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    # (full_like: a meta input refuses here, before anything is drawn)
    probs = input._data if p is None else np.full_like(input._data, p, np.float64, "C")
    if np.any((probs < 0) | (probs > 1)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    arr = (_rng(generator).random(input._data.shape) < probs)
    return wrap(arr.astype(input.dtype.np), input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Draw `num_samples` category indices per row, weighted by the (unnormalised) `input`."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           + torch_name(input.dtype))
    if type(input._data) is MetaArray:    # (np.asarray would read the meta mapping)
        if input._data.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if not replacement and num_samples > input._data.shape[-1]:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        return M.multinomial(input, num_samples, replacement, generator=generator, out=out)
    p = np.asarray(input._data, np.float64)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if np.any(p < 0) or not np.all(np.isfinite(p)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = p.reshape(-1, p.shape[-1])
    n = rows.shape[1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = _rng(generator)
    out = np.empty((rows.shape[0], num_samples), np.int64)
    for i, row in enumerate(rows):   # one vectorised draw per distribution row
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if replacement:
            out[i] = rng.choice(n, size=num_samples, replace=True, p=row / total)
        else:
            # Gumbel-top-k: exact sampling without replacement in one pass
            keys = np.where(row > 0, np.log(np.where(row > 0, row, 1)) - np.log(
                -np.log(rng.random(n))), -np.inf)
            out[i] = np.argsort(-keys, kind="stable")[:num_samples]
    return wrap(out.reshape(p.shape[:-1] + (num_samples,)), D.int64)


# ---- in-place samplers (Tensor methods) ----
def _meta_noop(sampler):
    """An in-place sampler on a meta tensor draws nothing (torch's are no-ops there too): it
    keeps self's metadata and moves its version counter."""
    def on_meta(self, *args, **kwargs):
        if type(self._data) is not MetaArray:
            return sampler(self, *args, **kwargs)
        from ..autograd.graph import check_inplace
        check_inplace(self)
        self._bump_version()
        return self
    on_meta.__name__ = on_meta.__qualname__ = sampler.__name__
    on_meta.__doc__ = sampler.__doc__
    on_meta.__wrapped__ = sampler
    return on_meta


def _fill(self, arr):
    from ..autograd.graph import check_inplace
    check_inplace(self)
    np.copyto(self._data, arr, casting="unsafe")
    self._bump_version()
    return self


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    if "from" in kw:
        from_ = kw.pop("from")
    _float_dtype(self.dtype, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    return _fill(self, from_ + (to - from_) * _rng(generator).random(self._data.shape))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _float_dtype(self.dtype, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(self, mean + std * _rng(generator).standard_normal(self._data.shape))


def bernoulli_(self, p=0.5, *, generator=None):
    probs = p._data if isinstance(p, Tensor) else p
    if np.any((np.asarray(probs) < 0) | (np.asarray(probs) > 1)):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, _rng(generator).random(self._data.shape) < probs)


_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def random_(self, from_=None, to=None, *, generator=None, **kw):
    """``random_(from, to)``: integers in [from, to); ``random_(to)``: [0, to); ``random_()``:
    [0, the largest integer the dtype holds exactly (ints: its max)]."""
    if "from" in kw:
        from_ = kw.pop("from")
    elif to is None and from_ is not None:
        from_, to = 0, from_
    from_ = 0 if from_ is None else from_
    if to is None:
        d = self.dtype
        to = 2 ** _MANTISSA[d.name] + 1 if d.is_floating_point else 2 if d is D.bool_ else \
            int(np.iinfo(d.np).max) + 1
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                           f">= to={to}")
    return _fill(self, _rng(generator).integers(from_, to, self._data.shape))


def exponential_(self, lambd=1.0, *, generator=None):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, _rng(generator).exponential(1.0 / lambd, self._data.shape))


# the parameter checks are torch's (RuntimeError, its wording); `not x > 0` also refuses NaN
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _fill(self, median + sigma * _rng(generator).standard_cauchy(self._data.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill(self, _rng(generator).lognormal(mean, std, self._data.shape))


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, _rng(generator).geometric(p, self._data.shape))


register_each(globals(), RANDOM, (
    rand, randn, randint, randperm, rand_like, randn_like, randint_like, normal, multinomial,
    manual_seed, seed, initial_seed, get_rng_state, set_rng_state), method=False)
bernoulli = register(OpDef("bernoulli", RANDOM), bernoulli)
# the method's OpDef: Tensor.multinomial is the same function, published once more
register(OpDef("multinomial_m", RANDOM, function=False), multinomial.__wrapped__,
         method_names=("multinomial",))
def _no_tangent(tan, result, self, *args, **kwargs):
    return None      # forward mode: values drawn in place have a zero tangent


for _f in (uniform_, normal_, bernoulli_, random_, exponential_, cauchy_, log_normal_,
           geometric_):
    _f = _meta_noop(_f)
    _f.jvp = _no_tangent
    _f._impure = True        # random: vmap's randomness modes apply (methods with no OpDef)
    METHODS[_f.__name__] = _f
# meta rules (ember/ops/meta_rules.py): nothing is drawn on meta
OPS["bernoulli"].meta = M.bernoulli
OPS["normal"].meta = M.normal
OPS["multinomial"].meta = OPS["multinomial_m"].meta = M.multinomial
