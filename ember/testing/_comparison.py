"""ember.testing.assert_close / assert_allclose: torch.testing's comparison of tensors, scalars
and (nested) sequences and mappings of them, with torch's tolerances, errors and messages.

The comparison runs in two phases, as torch's does: first the inputs are walked and every leaf
pair is classified (None, bool, number, tensor-like) -- a structural problem (length, keys, an
input no kind handles, a lone rtol) aborts here with the generated message, whatever ``msg``
says; then each pair is compared and the first failure is raised, with ``msg`` applied.

The value check is computed on the host arrays (NumPy) the way torch.isclose computes it: in
the tensors' own dtype (float16 stays float16), integer/bool errors against a default-dtype
tolerance, so the pass/fail verdict and the printed differences match torch's.
"""
import cmath
import collections.abc
import contextlib
import sys
import warnings

import numpy as np

from ..core import dtype as _dt
from ..core.tensor import Tensor
from ..ops.creation import as_tensor as _as_tensor, tensor as _tensor

__all__ = ["assert_close", "assert_allclose"]

# {dtype: (rtol, atol)}: torch's defaults; every other dtype (integers, bool) compares exactly
_DEFAULT_TOLERANCES = {
    _dt.float16: (0.001, 1e-5),
    _dt.bfloat16: (0.016, 1e-5),
    _dt.float32: (1.3e-6, 1e-5),
    _dt.float64: (1e-7, 1e-7),
    _dt.complex64: (1.3e-6, 1e-5),
    _dt.complex128: (1e-7, 1e-7),
}

# the looser defaults of the deprecated assert_allclose
_ALLCLOSE_TOLERANCES = {
    _dt.float16: (1e-3, 1e-3),
    _dt.float32: (1e-4, 1e-5),
    _dt.float64: (1e-5, 1e-8),
}

# the dtype a Python number stands for, for its default tolerances
_NUMBER_DTYPES = {int: _dt.int64, float: _dt.float64, complex: _dt.complex128}


class _Failure(Exception):
    """A comparison failure: the exception type the user gets, its generated text, and the
    path (sequence indices / mapping keys) of the leaf that failed."""

    def __init__(self, kind, text, path=()):
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path

    def to_error(self, msg=None):
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(str([p]) for p in self.path)
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """A pair kind cannot handle these inputs; the next kind is tried."""


def _tolerances(dtypes, rtol, atol, path, table=_DEFAULT_TOLERANCES):
    # both or neither: atol=0 alone would still let rtol pass values, a surprise
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                       f"but got no {'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    pairs = [table.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


# ---- messages ----

def _mismatch_text(identifier, default, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    exact = rtol == 0 and atol == 0
    if identifier is None:
        identifier = default
    elif callable(identifier):
        identifier = identifier(default)

    def line(kind, diff, idx, tol):
        s = (f"{kind.title()} difference: {diff}" if idx is None
             else f"Greatest {kind} difference: {diff} at index {idx}")
        return s + ("" if exact else f" (up to {tol} allowed)") + "\n"

    text = f"{identifier} are not {'equal' if exact else 'close'}!\n\n"
    if extra:
        text += extra.strip() + "\n"
    text += line("absolute", abs_diff, abs_idx, atol)
    text += line("relative", rel_diff, rel_idx, rtol)
    return text.strip()


def _scalar_text(actual, expected, rtol, atol, identifier=None):
    diff = abs(actual - expected)
    rel = float("inf") if expected == 0 else diff / abs(expected)
    return _mismatch_text(identifier, "Scalars", f"Expected {expected} but got {actual}.",
                          diff, None, atol, rel, None, rtol)


def _abs(x):
    """|x|; a complex magnitude is hypot(re, im) in double precision (rounded once for
    complex64), as torch's: NumPy's complex abs can be an ulp off it."""
    if x.dtype.kind == "c":
        h = np.hypot(x.real.astype(np.float64), x.imag.astype(np.float64))
        return h.astype(np.float32) if x.dtype == np.complex64 else h
    return np.abs(x)


def _diff(a, e):
    """a - e as torch computes it: for complex, a - 1*e with a complex product, so an inf
    part turns the other part NaN (inf+0j - inf+0j is nan+nanj, not NumPy's nan+0j)."""
    with np.errstate(all="ignore"):
        if a.dtype.kind == "c":
            return a - e * e.dtype.type(1)
        return a - e


def _unravel(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _greatest(diff):
    """(value, flat index) of the largest entry; a NaN wins, the first one, as torch.max."""
    key = diff.astype(np.float32) if diff.dtype == _dt.bfloat16.np else diff
    i = int(np.argmax(key))
    return diff[i].item(), i


def _tensor_text(a, e, matches, dtype, rtol, atol, identifier=None):
    n = matches.size
    bad = n - int(matches.sum())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    shape = matches.shape
    a, e, m = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if not (dtype.is_floating_point or dtype.is_complex):
        # integers (and bool) are differenced in int64, so that the difference cannot wrap
        a, e = a.astype(np.int64), e.astype(np.int64)
    diff = _abs(_diff(a, e))
    diff[m] = 0
    max_abs, abs_i = _greatest(diff)
    if diff.dtype.kind in "iu":     # int / int divides in the default float dtype, as torch
        f = _dt.get_default_dtype().np
        rel = diff.astype(f) / np.abs(e).astype(f)
    else:
        rel = diff / _abs(e)
    rel[m] = 0
    max_rel, rel_i = _greatest(rel)
    return _mismatch_text(identifier, "Tensor-likes", extra, max_abs, _unravel(abs_i, shape),
                          atol, max_rel, _unravel(rel_i, shape), rtol)


# ---- the value check ----

def _close(a, e, dtype, rtol, atol, equal_nan):
    """torch.isclose on two host arrays of one dtype."""
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = np.asarray(a == e)
    inexact = dtype.is_floating_point or dtype.is_complex
    if equal_nan and inexact:
        close |= np.isnan(a) & np.isnan(e)
    if rtol == 0 and atol == 0:
        return close
    if not inexact:
        # integers and bool are compared in the default float dtype (so int64 2**40 + 1 is
        # close to 2**40 with atol=0.5 under float32), as torch.isclose does
        f = _dt.get_default_dtype().np
        a, e = a.astype(f), e.astype(f)
    allowed = atol + _abs(rtol * e)
    err = _abs(_diff(a, e))
    with np.errstate(all="ignore"):
        close |= np.isfinite(err) & (err <= allowed)
    return close


def _host(t):
    """The tensor's values as a host NumPy array (detached, conjugation resolved)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype.is_complex and t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return np.asarray(t._numpy())


def _compare_values(a, e, rtol, atol, equal_nan, path, identifier=None):
    """Raise a _Failure if two dense tensors of one dtype and shape are not close."""
    dtype = a.dtype
    x, y = _host(a), _host(e)
    matches = _close(x, y, dtype, rtol, atol, equal_nan)
    if matches.all():
        return
    if x.ndim == 0:
        text = _scalar_text(a.item(), e.item(), rtol, atol, identifier)
    else:
        text = _tensor_text(x, y, matches, dtype, rtol, atol, identifier)
    raise _Failure(AssertionError, text, path)


# ---- the pair kinds ----

def _none_pair(actual, expected, path, options):
    if actual is not None and expected is not None:
        raise _Unsupported

    def compare():
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)
    return compare


def _bool_pair(actual, expected, path, options):
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    a, e = bool(actual), bool(expected)

    def compare():
        if a is not e:
            raise _Failure(AssertionError, f"Booleans mismatch: {a} is not {e}", path)
    return compare


def _number_pair(actual, expected, path, options):
    kinds = (int, float, complex, np.number)
    if not all(isinstance(x, kinds) for x in (actual, expected)):
        raise _Unsupported
    a, e = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    for x in (a, e):
        if type(x) not in _NUMBER_DTYPES:
            # a bool among numbers (True vs 1): torch fails here with an internal error too
            raise TypeError(f"a {type(x).__name__} is not a Python number type "
                            "(int, float, complex)")
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(x)] for x in (a, e)],
                             options["rtol"], options["atol"], path)
    check_dtype, equal_nan = options["check_dtype"], options["equal_nan"]

    def compare():
        if check_dtype and type(a) is not type(e):
            raise _Failure(AssertionError,
                           f"The (d)types do not match: {type(a)} != {type(e)}.", path)
        if a == e or (equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= atol + rtol * abs(e):
            return
        raise _Failure(AssertionError, _scalar_text(a, e, rtol, atol), path)
    return compare


def _is_sparse(x):
    return getattr(type(x), "_ember_sparse", False)


def _tensorlike(x):
    if isinstance(x, Tensor) or _is_sparse(x):
        return x
    try:
        return _as_tensor(x)
    except Exception:
        raise _Unsupported from None


_SUPPORTED_LAYOUTS = ("strided", "sparse_coo", "sparse_csr")


def _tensor_pair(actual, expected, path, options):
    # inputs must be of related types: a numpy array never compares with a tensor
    # ember's sparse tensors are not Tensor subclasses; torch's are plain Tensors
    ta, te = (Tensor if _is_sparse(x) else type(x) for x in (actual, expected))
    if not (issubclass(ta, te) or issubclass(te, ta)):
        raise _Unsupported
    if not options["allow_subclasses"] and ta is not te:
        raise _Unsupported
    a, e = _tensorlike(actual), _tensorlike(expected)
    for t in (a, e):
        if str(t.layout).rpartition(".")[2] not in _SUPPORTED_LAYOUTS:
            raise _Failure(ValueError, f"Unsupported tensor layout {t.layout}", path)
    rtol, atol = _tolerances([a.dtype, e.dtype], options["rtol"], options["atol"], path)
    o = options

    def compare():
        _compare_attributes(a, e, o, path)
        if a.device.type == "meta" or e.device.type == "meta":
            return
        x, y = _equalize(a, e)
        _compare_tensor_values(x, y, rtol, atol, o["equal_nan"], path)
    return compare


def _compare_attributes(a, e, o, path):
    def mismatch(name, x, y):
        raise _Failure(AssertionError,
                       f"The values for attribute '{name}' do not match: {x} != {y}.", path)

    if a.shape != e.shape:
        mismatch("shape", a.shape, e.shape)
    if a.layout != e.layout:
        if o["check_layout"]:
            mismatch("layout", a.layout, e.layout)
    elif str(a.layout).endswith("strided") and o["check_stride"] and a.stride() != e.stride():
        mismatch("stride()", a.stride(), e.stride())
    if o["check_device"] and a.device != e.device:
        mismatch("device", a.device, e.device)
    if o["check_dtype"] and a.dtype != e.dtype:
        mismatch("dtype", a.dtype, e.dtype)


def _equalize(a, e):
    """Bring two tensors to one device, dtype and layout for the value check."""
    if a.device != e.device:
        a, e = a.cpu(), e.cpu()
    if a.dtype != e.dtype:
        d = _dt.promote_types(a.dtype, e.dtype)
        a, e = a.to(d), e.to(d)
    if a.layout != e.layout:
        a = a if isinstance(a, Tensor) else a.to_dense()
        e = e if isinstance(e, Tensor) else e.to_dense()
    return a, e


def _compare_tensor_values(a, e, rtol, atol, equal_nan, path):
    if not _is_sparse(a):
        return _compare_values(a, e, rtol, atol, equal_nan, path)
    if str(a.layout).endswith("sparse_coo"):
        fmt = "COO"
        if a.sparse_dim() != e.sparse_dim():
            raise _Failure(AssertionError, "The number of sparse dimensions in sparse COO tensors "
                           f"does not match: {a.sparse_dim()} != {e.sparse_dim()}", path)
        indices = [("Sparse COO indices", a._indices(), e._indices())]
    else:
        fmt = "CSR"
        indices = [("Sparse CSR crow_indices", a.crow_indices(), e.crow_indices()),
                   ("Sparse CSR col_indices", a.col_indices(), e.col_indices())]
    if a._nnz() != e._nnz():
        raise _Failure(AssertionError, f"The number of specified values in sparse {fmt} tensors "
                       f"does not match: {a._nnz()} != {e._nnz()}", path)
    for name, x, y in indices:
        if x.dtype != y.dtype:
            d = _dt.promote_types(x.dtype, y.dtype)
            x, y = x.to(d), y.to(d)
        _compare_values(x, y, 0, 0, False, path, identifier=name)
    values = (a._values(), e._values()) if fmt == "COO" else (a.values(), e.values())
    _compare_values(*values, rtol, atol, equal_nan, path, identifier=f"Sparse {fmt} values")


_PAIR_KINDS = (_none_pair, _bool_pair, _number_pair, _tensor_pair)


def _originate(actual, expected, path, options, out):
    """Walk the inputs, appending one compare() per leaf pair to `out`."""
    seq = collections.abc.Sequence
    if (isinstance(actual, seq) and not isinstance(actual, str)
            and isinstance(expected, seq) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                           f"{len(actual)} != {len(expected)}", path)
        for i in range(len(actual)):
            _originate(actual[i], expected[i], (*path, i), options, out)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ka, ke = set(actual.keys()), set(expected.keys())
        if ka != ke:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(ke - ka)}\n"
                           f"Additional keys in the actual mapping: {sorted(ka - ke)}", path)
        keys = ka
        with contextlib.suppress(Exception):     # a fixed order, so the first failure is stable
            keys = sorted(ka)
        for k in keys:
            _originate(actual[k], expected[k], (*path, k), options, out)
        return
    for kind in _PAIR_KINDS:
        try:
            out.append(kind(actual, expected, path, options))
            return
        except _Unsupported:
            continue
        except _Failure:
            raise
        except Exception as e:
            # not a comparison outcome but a fault: RuntimeError, as torch reports it
            raise RuntimeError(f"Building the {kind.__name__.strip('_')} comparison at item "
                               f"{''.join(str([p]) for p in path)} of {type(actual).__name__} "
                               f"{actual!r} and {type(expected).__name__} {expected!r} raised "
                               "the exception above") from e
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                   f"{type(actual)} and {type(expected)}.", path)


def _unwrap_dtensors(actual, expected):
    # ember.distributed.tensor is only consulted once loaded: no DTensor exists before that
    mod = sys.modules.get("ember.distributed.tensor")
    if mod is None:
        return actual, expected
    da, de = isinstance(actual, mod.DTensor), isinstance(expected, mod.DTensor)
    if da and de:
        if actual.placements != expected.placements:
            raise AssertionError("DTensor placements do not match: "
                                 f"{actual.placements} != {expected.placements}")
        if actual.device_mesh != expected.device_mesh:
            raise AssertionError("DTensor device meshes do not match: "
                                 f"{actual.device_mesh} != {expected.device_mesh}")
        return actual.to_local(), expected.to_local()
    if da != de:
        raise TypeError("Comparing a DTensor with a non-DTensor is ambiguous: call "
                        ".full_tensor() to compare the whole tensor, or .to_local() to "
                        "compare the local shard.")
    return actual, expected


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that `actual` and `expected` are close, as torch.testing.assert_close.

    Tensors (and anything ``as_tensor`` takes, of related types) are close if their shapes
    (and, unless disabled, dtype, device, layout; stride if check_stride) agree and
    ``|actual - expected| <= atol + rtol * |expected|`` elementwise (inf only equals itself,
    NaN only NaN with ``equal_nan``). Python scalars, None and bools compare too; sequences
    and mappings recurse. Default tolerances follow the dtype (float32: rtol 1.3e-6, atol
    1e-5; float64: 1e-7, 1e-7; float16: 1e-3, 1e-5; bfloat16: 1.6e-2, 1e-5; integers and
    bool: exact). `msg` replaces the message (a str) or rewrites it (a callable).
    Raises AssertionError on a mismatch; TypeError for inputs it cannot compare; ValueError
    if only one of rtol and atol is given.
    """
    __tracebackhide__ = True     # noqa: F841  (pytest hides this frame)
    actual, expected = _unwrap_dtensors(actual, expected)
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    compares = []
    try:
        _originate(actual, expected, (), options, compares)
    except _Failure as f:
        # a structural problem: its own message, even when `msg` is given (as torch)
        raise f.to_error() from None
    for compare in compares:
        try:
            compare()
        except _Failure as f:
            raise f.to_error(msg) from None
        except RuntimeError:
            raise
        except Exception as e:
            raise RuntimeError("Comparing the inputs raised the exception above") from e


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (as in torch since 1.12): assert_close with check_dtype=False, NaN equal
    to NaN by default, non-tensor `expected` built with `actual`'s dtype, and looser default
    tolerances (float16: 1e-3/1e-3, float32: 1e-4/1e-5, float64: 1e-5/1e-8)."""
    warnings.warn("ember.testing.assert_allclose() is deprecated, as torch.testing's is since "
                  "1.12, and will go when torch removes it; use ember.testing.assert_close() "
                  "instead (see https://github.com/pytorch/pytorch/issues/61844).",
                  FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = _tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances([actual.dtype, expected.dtype], None, None, (),
                                 table=_ALLCLOSE_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)
