"""Error inputs for the registered ops, beside their sample inputs (PyTorch's OpInfo
`error_inputs`): calls that must raise, with the exception class and a message regex.

`error_inputs_for(name)` lists the `ErrorInput`s of op `name`: the generic ones its kind and
signature give, then the op's own entries (error_inputs_ops.py). Arguments are written like
samples (T, I, B, L from _make.py), so the same call is built on torch and on ember. The test
(test_generated_errors.py) runs each call on torch first: torch must raise `exc` with a
message matching `regex` (else the entry itself is wrong), then on ember, which must raise
the same exception class with a message matching the same regex.

Generic error inputs:
- every op whose public function takes `dim` (reductions, scans, softmax, cat, fft, index
  ops...): its first sample with dim=5 (IndexError "Dimension out of range") and with a float
  dim (TypeError, from torch's argument parser);
- reductions over a dim list: a repeated dim (RuntimeError "appears multiple times");
- public pointwise ops with plain tensor inputs: a string where a tensor is expected
  (TypeError "must be Tensor, not str"); binary and ternary ones also non-broadcastable
  shapes (RuntimeError "must match the size of tensor");
- every op declaring `dtypes=` (ember/ops/dtype_support.py): its first sample with the first
  tensor recast to a dtype the kernel lacks (NotImplementedError "not implemented for").
"""
import inspect
import re
from dataclasses import replace

from ember.ops.registry import OPS, POINTWISE

try:
    from ._make import ErrorInput, Sample, T, is_public
    from .samples import INTEGRAL, POINTWISE_SPECIAL, REDUCTIONS, samples_for
    from .error_inputs_ops import ERRORS, NO_GENERIC
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import ErrorInput, Sample, T, is_public
    from samples import INTEGRAL, POINTWISE_SPECIAL, REDUCTIONS, samples_for
    from error_inputs_ops import ERRORS, NO_GENERIC


DIM_RANGE = r"Dimension out of range \(expected to be in range of \[-?\d+, -?\d+\], but got 5\)"
# torch's argument parser: one overload ("argument 'dim' ... must be int, not float") or
# several ("received an invalid combination of arguments")
DIM_TYPE = (r"must be int, not float|must be tuple of ints, not float|"
            r"invalid combination of arguments - got \(.*float")
# (several overloads: "received an invalid combination of arguments - got (Tensor, str)")
NOT_TENSOR = (r"must be Tensor, not str|"
              r"invalid combination of arguments - got \(Tensor, (Tensor, )?str")
BROADCAST = r"The size of tensor a \(3\) must match the size of tensor b \(4\) at " \
            r"non-singleton dimension 1"


def _first_tensor(args):
    for a in args:
        if isinstance(a, T):
            return a
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], T):
            return a[0]
    return None


def _with_arg(sample, sig, param, value):
    """`sample` with parameter `param` of signature `sig` set to `value`: replaced where the
    sample passes it positionally, else passed by keyword."""
    names = list(sig.parameters)
    k = names.index(param)
    if k < len(sample.args) and sig.parameters[param].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        args = sample.args[:k] + (value,) + sample.args[k + 1:]
        return replace(sample, args=args, kwargs=dict(sample.kwargs))
    return replace(sample, kwargs=dict(sample.kwargs, **{param: value}))


def _signature(name):
    try:
        return inspect.signature(OPS[name].fn)
    except (TypeError, ValueError):
        return None


def dim_errors(name):
    """dim=5 and dim=1.5 on the op's first sample whose first tensor has 1 to 3 dims."""
    sig = _signature(name)
    if sig is None or "dim" not in sig.parameters:
        return []
    for s in samples_for(name):
        t = _first_tensor(s.args)
        if t is not None and 1 <= len(t.shape) <= 3 and not s.method:
            return [ErrorInput(_with_arg(s, sig, "dim", 5), IndexError, DIM_RANGE, "dim=5"),
                    ErrorInput(_with_arg(s, sig, "dim", 1.5), TypeError, DIM_TYPE,
                               "float dim")]
    return []


def repeated_dim_errors(name):
    if not REDUCTIONS.get(name, {}).get("multi"):
        return []
    x = T((2, 3))
    s = Sample((x,), {"dim": (0, 0)}) if REDUCTIONS[name].get("kw") else Sample((x, (0, 0)))
    return [ErrorInput(s, RuntimeError, r"dim 0 appears multiple times in the list of dims",
                       "repeated dim")]


def pointwise_errors(name):
    """A string operand, and (two or three inputs) non-broadcastable shapes."""
    op = OPS[name]
    if op.kind != POINTWISE or name in POINTWISE_SPECIAL or not is_public(name):
        return []
    declared = None if op.dtypes is None else {str(d).replace("ember.", "") for d in op.dtypes}
    integral = name in INTEGRAL or name in ("gcd", "lcm") or (
        declared is not None and "float32" not in declared)
    dt = "int64" if integral else "float32"
    n = len(op.inputs)
    if n not in (1, 2, 3):
        return []
    ok = [T((2, 3), dt)] * n
    out = [ErrorInput(Sample(tuple(ok[:-1]) + ("a",)), TypeError, NOT_TENSOR,
                      "str operand")]
    if n > 1:
        bad = (T((2, 3), dt), T((4,), dt)) + (T((1,), dt),) * (n - 2)
        out.append(ErrorInput(Sample(bad), RuntimeError, BROADCAST, "broadcast"))
    if n > 1 and integral:   # the shapes are checked before the kernel's dtypes
        bad = (T((2, 3)), T((4,))) + (T((1,)),) * (n - 2)
        out.append(ErrorInput(Sample(bad), RuntimeError, BROADCAST, "float broadcast"))
    return out


_TORCH_NAME = {"int64": "Long", "bool": "Bool", "complex64": "ComplexFloat",
               "float32": "Float", "float64": "Double"}


def dtype_errors(name):
    """The op's first sample with its first tensor in a dtype its kernel lacks."""
    op = OPS[name]
    if op.dtypes is None or op.dtypes_of != "first":
        return []
    declared = {str(d).replace("ember.", "") for d in op.dtypes}
    for s in samples_for(name):
        t = _first_tensor(s.args)
        if t is None or not isinstance(s.args[0], T):
            continue
        for dt in ("int64", "bool", "complex64", "float32"):
            if dt not in declared and dt != t.dtype:
                bad = replace(t, dtype=dt, make=None, values=None)
                return [ErrorInput(replace(s, args=(bad,) + s.args[1:]), NotImplementedError,
                                   f"not implemented for '{_TORCH_NAME[dt]}'",
                                   f"{dt} input")]
        return []
    return []


GENERIC = (dim_errors, repeated_dim_errors, pointwise_errors, dtype_errors)


def error_inputs_for(name):
    """The error inputs of op `name` ([] when it has none): generic, then its own."""
    out = []
    skip = NO_GENERIC.get(name, {})
    for gen in GENERIC:
        out += [e for e in gen(name) if e.what not in skip]
    out += ERRORS.get(name, [])
    return out


def error_names():
    return sorted(n for n in OPS if error_inputs_for(n))


def check_tables():
    """Each table names registered ops only; each entry compiles its regex and has a unique
    `what` per op; each NO_GENERIC row names a generic error input the op has."""
    stale = sorted((set(ERRORS) | set(NO_GENERIC)) - set(OPS))
    assert not stale, f"error inputs for ops that are not registered: {stale}"
    for name, skips in NO_GENERIC.items():
        generic = {e.what for gen in GENERIC for e in gen(name)}
        assert set(skips) <= generic, f"{name}: NO_GENERIC names {set(skips) - generic}"
    for name in set(ERRORS) | set(NO_GENERIC):
        whats = [e.what for e in error_inputs_for(name)]
        assert len(whats) == len(set(whats)), f"{name}: duplicate error-input names {whats}"
        for e in error_inputs_for(name):
            re.compile(e.regex)
    return True
