"""The vocabulary of the registry-driven tests: how a sample input is described, made, and
called on both libraries.

A `Sample` holds the arguments of one op call. Tensor arguments are `T` descriptions (shape,
dtype, layout, value domain); `realize` draws their values once with a seeded NumPy generator,
and `to_lib` turns the same arrays into torch or ember tensors built by the same view ops
(transpose, step slice, expand, offset slice), so both sides see the same values with the
same strides. `L(fn)` is an argument computed per library (`L(lambda lib: lib.float64)`).
"""
from dataclasses import dataclass, field

import numpy as np
import torch

import ember
from ember.ops.registry import FUNCTIONS
from _layouts import apply_layout, base_shape  # tests/_layouts.py (tests/ is on sys.path)

LAYOUTS = ("C", "T", "step", "expand", "offset")


@dataclass(frozen=True)
class T:
    """A tensor argument: `shape`, `dtype` ("float32", "float64", "int64", "bool",
    "complex64", "complex128"), `layout`
    (one of LAYOUTS), values uniform in [lo, hi] (integers: lo..hi inclusive; `signed`: the
    magnitude is drawn from [lo, hi] and the sign at random, which keeps values away from
    zero). `values` gives the data explicitly; `make` shapes it further: "wellcond" (a square
    matrix plus 4 * identity), "spd" (symmetric positive definite), "specials" (NaN, infs,
    signed zeros mixed in)."""
    shape: tuple = ()
    dtype: str = "float32"
    layout: str = "C"
    lo: float = -2.0
    hi: float = 2.0
    signed: bool = False
    values: object = None
    make: str = None
    grad: bool = True      # may require grad in gradcheck (floating point only)


def I(values, layout="C"):  # noqa: E743 - an index tensor, named like the argument it plays
    """An int64 tensor with the given values (indices, repeats, sorted boundaries)."""
    return T(np.shape(values), "int64", layout, values=values)


def B(values):
    """A bool tensor with the given values (masks)."""
    return T(np.shape(values), "bool", values=values)


@dataclass(frozen=True)
class L:
    """An argument computed per library: fn(torch) or fn(ember)."""
    fn: object


@dataclass
class Sample:
    """One call: `args`/`kwargs` may hold T, L, lists and tuples of them, and plain values.

    method: call as a Tensor method even where a function exists (a string: call that method
    name, e.g. "__invert__"); values: compare values (False for empty and random results);
    tol: (rtol, atol) for floating results; post: applied to both results before comparing
    (for results only defined up to sign, like svd's U and V); grad: use in gradcheck."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    method: object = False
    values: bool = True
    tol: tuple = None
    post: object = None
    grad: bool = True

    def __repr__(self):
        kw = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"Sample({', '.join(map(_short, self.args))}{kw})"


def _short(a):
    if isinstance(a, T):
        return f"T({a.shape}, {a.dtype}{'' if a.layout == 'C' else ', ' + a.layout})"
    if isinstance(a, (list, tuple)) and any(isinstance(x, T) for x in a):
        return "[" + ", ".join(map(_short, a)) + "]"
    return repr(a)


def S(*args, **kwargs):
    """Sample(args, kwargs): the shorthand the sample tables are written in."""
    return Sample(args, kwargs)


def Sm(*args, **kwargs):
    """A sample called as a Tensor method."""
    return Sample(args, kwargs, method=True)


# ---- values ----
def _draw(rng, t, shape, dtype):
    return np.asarray(_values(rng, t, shape, dtype))


def _values(rng, t, shape, dtype):
    if t.values is not None:
        return np.asarray(t.values, dtype=dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int64":
        lo = int(np.ceil(t.lo))
        hi = max(lo, int(np.floor(t.hi)))
        a = rng.integers(lo, hi + 1, size=shape)
        return a * rng.choice([-1, 1], size=shape) if t.signed else a
    a = rng.uniform(t.lo, t.hi, size=shape)
    if t.signed:
        a = a * rng.choice([-1.0, 1.0], size=shape)
    if dtype.startswith("complex"):   # real and imaginary parts both from the domain
        a = a + 1j * rng.uniform(t.lo, t.hi, size=shape)
    if t.make == "specials" and a.size:
        sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
        a = np.where(rng.random(shape) < 0.3, rng.choice(sp, size=shape), a)
    if t.make in ("wellcond", "spd"):
        n = shape[-1]
        if t.make == "spd":
            a = a @ np.swapaxes(a, -1, -2)
        a = a + 4 * np.eye(n)
    return a.astype(dtype)


@dataclass
class Arr:
    """A realized T: the contiguous base array and the view to build on it."""
    base: np.ndarray
    shape: tuple
    layout: str
    grad: bool


def realize(obj, rng, *, float64=False, leaf_layouts=True):
    """Replace every T in `obj` by an Arr with drawn values. float64: floating tensors become
    float64 (gradcheck); leaf_layouts=False: "expand" becomes "C" (an expanded tensor as a
    differentiable leaf would make finite differences move several elements at once)."""
    if isinstance(obj, T):
        dtype = "float64" if float64 and obj.dtype.startswith("float") else obj.dtype
        layout = obj.layout if (leaf_layouts or obj.layout != "expand") else "C"
        if obj.values is not None:   # explicit values describe the view itself
            return Arr(_draw(rng, obj, obj.shape, dtype), tuple(obj.shape), "C", obj.grad)
        shape = tuple(obj.shape)
        if obj.make in ("wellcond", "spd"):   # the matrix structure lives in the view
            a = _draw(rng, obj, shape, dtype)
            if layout == "T":
                a = np.ascontiguousarray(a.transpose(*reversed(range(a.ndim))))
            return Arr(a, shape, layout if layout in ("C", "T") else "C", obj.grad)
        return Arr(_draw(rng, obj, base_shape(shape, layout), dtype), shape, layout, obj.grad)
    if isinstance(obj, (list, tuple)):
        return type(obj)(realize(x, rng, float64=float64, leaf_layouts=leaf_layouts)
                         for x in obj)
    if isinstance(obj, dict):
        return {k: realize(v, rng, float64=float64, leaf_layouts=leaf_layouts)
                for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj


def make_tensor(arr, lib, requires_grad=False):
    """The Arr as a `lib` tensor: base from the same bytes, then the layout's view ops. With
    requires_grad the view itself is made a leaf (detach keeps its strides)."""
    base = arr.base.copy()
    if lib is torch:   # (from_numpy keeps NumPy's odd strides of empty arrays: copy)
        t0 = torch.from_numpy(base)
        x = torch.empty_like(t0, memory_format=torch.contiguous_format).copy_(t0)
    else:
        x = ember.from_numpy(base)
    x = apply_layout(x, arr.shape, arr.layout)
    if requires_grad and arr.grad and arr.base.dtype.kind == "f":
        x = x.detach().requires_grad_(True)
    return x


def to_lib(obj, lib, tensor=None):
    """Realized arguments -> `lib` objects. tensor(arr) makes each tensor (default:
    make_tensor); the compiled-vs-eager test passes its own to feed traced inputs."""
    tensor = tensor or (lambda a: make_tensor(a, lib))
    if isinstance(obj, Arr):
        return tensor(obj)
    if isinstance(obj, L):
        return obj.fn(lib)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_lib(x, lib, tensor) for x in obj)
    if isinstance(obj, dict):
        return {k: to_lib(v, lib, tensor) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj


def arrays_in(obj):
    """Every Arr in `obj`, in the order to_lib meets them."""
    if isinstance(obj, Arr):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [a for x in obj for a in arrays_in(x)]
    if isinstance(obj, dict):
        return [a for v in obj.values() for a in arrays_in(v)]
    return []


def _linalg_name(name):
    """'inv' for 'linalg_inv' when ember.linalg.inv is the op (torch.linalg's names), else None."""
    if name.startswith("linalg_") and hasattr(ember.linalg, name[7:]):
        return name[7:]
    return None


def _special_name(name):
    """'entr' for 'special_entr' when ember.special.entr is the op (torch.special's names)."""
    if name.startswith("special_") and hasattr(ember.special, name[8:]):
        return name[8:]
    return None


def _fft_name(name):
    """'rfft' for 'fft_rfft' when ember.fft.rfft is the op (torch.fft's names)."""
    if name.startswith("fft_") and hasattr(ember.fft, name[4:]):
        return name[4:]
    return None


def is_public(name):
    """Reachable as ember.<name>, Tensor.<name>, ember.nn.functional.<name> or, for
    linalg_<f> / special_<f>, ember.linalg.<f> / ember.special.<f>."""
    return hasattr(ember, name) or hasattr(ember.Tensor, name) or \
        hasattr(ember.nn.functional, name) or _linalg_name(name) is not None or \
        _special_name(name) is not None or _fft_name(name) is not None


# ops without a public torch name: the reference torch computes them with
REFERENCE = {"alias": lambda x: torch.ops.aten.alias(x)}


def call(name, sample, args, kwargs, lib, reference=None):
    """Call op `name` on `lib` the public way: ember.<name> / torch.<name> when the op is a
    function (lib.linalg.<f> for linalg_<f>), else (or when the sample asks) the Tensor method on the first argument.
    `reference` (by default REFERENCE's entry) replaces the torch call for ops that have no
    public torch name."""
    if lib is torch and reference is None:
        reference = REFERENCE.get(name)
    if lib is torch and reference is not None:
        return reference(*args, **kwargs)
    if not sample.method and not hasattr(ember, name) and _linalg_name(name):
        return getattr(lib.linalg, _linalg_name(name))(*args, **kwargs)
    if not sample.method and not hasattr(ember, name) and _fft_name(name):
        return getattr(lib.fft, _fft_name(name))(*args, **kwargs)
    if not sample.method and not hasattr(ember, name) and _special_name(name):
        return getattr(lib.special, _special_name(name))(*args, **kwargs)
    if not sample.method and hasattr(ember.nn.functional, name) and (
            not hasattr(ember, name) or name not in FUNCTIONS):
        # an nn.functional op; ember.<name>, if any, is torch's top-level form of it
        # (ember/toplevel_forms.py: other signatures, tested in tests/ops)
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    if sample.method or not hasattr(ember, name):
        meth = sample.method if isinstance(sample.method, str) else name
        attr = getattr(args[0], meth)
        return attr if isinstance(attr, lib.Tensor) else attr(*args[1:], **kwargs)  # x.T
    return getattr(lib, name)(*args, **kwargs)


@dataclass
class ErrorInput:
    """One invalid call (tests/opinfo/error_inputs.py): `sample` (args/kwargs as in samples),
    the builtin exception class torch raises (`exc`: RuntimeError for torch's LinAlgError),
    a regex its message and ember's must match, and `what`, a short name (the key of the
    known-mismatch table)."""
    sample: Sample
    exc: type
    regex: str
    what: str

    def __repr__(self):
        return f"ErrorInput({self.what}: {self.sample!r} -> {self.exc.__name__} /{self.regex}/)"


def E(what, exc, regex, *args, **kwargs):
    """An ErrorInput calling the public function."""
    return ErrorInput(Sample(args, kwargs), exc, regex, what)


def Em(what, exc, regex, *args, **kwargs):
    """An ErrorInput calling the Tensor method."""
    return ErrorInput(Sample(args, kwargs, method=True), exc, regex, what)
