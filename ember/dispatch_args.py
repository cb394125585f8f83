"""torch's argument parser, as errors: what torch raises for a call whose arguments it
would refuse (an int beyond int64, a str where a Tensor goes), and the cheap checks ops run
on their own int and tensor arguments (`int_arg`, `tensor_args`).

`argument_error` is asked only after an op raised (dispatch.py's mode seam, the
composition seam, `raise_as_torch` in the COMPOSITE choice functions), so valid calls never
pay for it; through `internal_error` it turns what the op raised internally (an
AttributeError on a str, a failed str conversion, a bool where an int goes, NumPy's
ValueError) into what torch raises.
"""
import inspect
import linecache
import re

from .core import dtype as D
from .core.tensor import Tensor


_INT64 = (-2 ** 63, 2 ** 63 - 1)


def argument_error(op, fn, args, kwargs, exc=None):
    """The exception torch's argument parser raises for this call, or None: a Python int
    beyond int64 (ValueError "Overflow when unpacking long long"; TypeError "failed to unpack"
    when it is an element of an int list such as a size), or a tensor argument that is
    not a Tensor (TypeError naming the argument). Only asked after the op itself raised, so
    valid calls never pay for the check; it turns internal AttributeErrors ('str' object has no
    attribute 'dim') and out-of-range guesses into torch's answer."""
    facts = _facts(op, fn)
    for v in list(args) + list(kwargs.values()):
        for k, x in enumerate(v if isinstance(v, (list, tuple)) else (v,)):
            if type(x) is int and not _INT64[0] <= x <= _INT64[1]:
                if _holds(facts.own_range_check, fn, args, kwargs, v):
                    return None    # (the op raises torch's error for it itself)
                if _holds(facts.uint64_scalars, fn, args, kwargs, v):
                    if 0 <= x < 2 ** 64:
                        return None    # (a Scalar holds it: the op's own error is torch's)
                    return OverflowError("int too big to convert" if x > 0 else
                                         "can't convert negative int to unsigned")
                if hasattr(op, "inputs") and (isinstance(v, (list, tuple))
                                              or _in_varargs(fn, args, v)):
                    # one element of an int list (a size): the parser says so, as TypeError
                    name, pos = _list_arg(fn, args, v)
                    if name is not None:
                        if not isinstance(v, (list, tuple)):
                            k = pos
                        return TypeError(f"{op.name}(): "
                                         f"argument '{name}' failed to unpack the object at "
                                         f"pos {k + 1} with error \"Overflow when unpacking "
                                         f"long long\"")
                return ValueError("Overflow when unpacking long long")
    if facts.own_type_check:
        return None    # (the op raises torch's error for a non-tensor itself)
    if not hasattr(op, "inputs") or python_level(op, fn, args, kwargs):
        # (a seam named by a string: nn functions' own seams; or torch's function is Python)
        return None if exc is None else internal_error(op, fn, args, kwargs, exc)
    try:
        sig = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None if exc is None else internal_error(op, fn, args, kwargs, exc)
    declared = {("input" if n == "self" else n) for n in op.inputs} | {"self"}
    bound = list(zip(sig, args)) + [(k, v) for k, v in kwargs.items()]
    for pos, (name, value) in enumerate(bound):
        if isinstance(value, Tensor) or isinstance(value, (int, float, bool, complex)):
            continue              # (many ops take Python numbers for tensor operands)
        if op.name in ("mm", "matmul") and getattr(type(value), "_ember_sparse", False):
            continue              # an ember.sparse operand: the product's own error stands
        if value is None and name in sig and sig[name].default is None:
            continue              # an optional tensor (bias=None)
        if name in declared:      # a tensor input: nothing else but a number will do
            if isinstance(value, (list, tuple)) and value and all(
                    isinstance(v, Tensor) for v in value):
                continue          # a sequence of tensors (cat's `tensors`)
        elif name in _TENSOR_ARGS:
            if not isinstance(value, str) and value is not None and not (
                    isinstance(value, (list, tuple)) and any(type(v) is float for v in value)):
                continue          # (a shape or dims tuple may share the name: only a str,
        else:                     # a missing value or a list of floats is surely wrong there)
            continue
        where = f" (position {pos + 1})" if pos < len(args) else ""
        what = "tuple of Tensors" if name == "tensors" else "Tensor"
        return TypeError(f"{op.name}(): argument '{name}'{where} must be {what}, not "
                         f"{type(value).__name__}")
    return None if exc is None else internal_error(op, fn, args, kwargs, exc)


def _facts(op, fn):
    """What decides torch's exception for the op's bad input: its OpDef, whose fields
    (registry.py) torch_python, uint64_scalars, own_range_check, own_type_check and
    bool_overload are facts about torch's function; for a seam named by a string (a method
    with no OpDef: fill_), the same attributes on its function, where such a method keeps
    its jvp and batch rule too."""
    return op if hasattr(op, "torch_python") else _SeamFacts(fn)


class _SeamFacts:
    """The facts a function with no OpDef declares (``fill_.uint64_scalars``), OpDef's
    defaults for the others."""
    __slots__ = ("torch_python", "uint64_scalars", "own_range_check", "own_type_check",
                 "bool_overload")

    def __init__(self, fn):
        self.torch_python = getattr(fn, "torch_python", None)
        self.uint64_scalars = getattr(fn, "uint64_scalars", ())
        self.own_range_check = getattr(fn, "own_range_check", ())
        self.own_type_check = getattr(fn, "own_type_check", False)
        self.bool_overload = getattr(fn, "bool_overload", False)


def _holds(names, fn, args, kwargs, v):
    """Whether argument value `v` fills one of the parameters `names` (an op's
    uint64_scalars or own_range_check: torch's parser takes an int up to 2**64 - 1 there,
    as uint64, and the op's own check speaks, "value cannot be converted to type int64_t
    without overflow", "linalg.cond got an invalid norm type: 9.22337e+18"; or the op
    checks the int's range itself, as torch.norm's dim, which torch's Python hands on as a
    list to linalg's norms)."""
    if not names:
        return False
    return any(value is v and name in names for name, _, value in _bound(fn, args, kwargs))


# what the seams catch and hand to `argument_error` (NotImplementedError is a RuntimeError)
ARG_ERRORS = (AttributeError, OverflowError, IndexError, ValueError, TypeError, RuntimeError)


def raise_as_torch(op, fn, args, kwargs, exc):
    """Raise what torch raises for this call, on which `fn` raised `exc` (`argument_error`'s
    answer, else `exc`): for the functions that are their own seam (the COMPOSITE choice
    functions), called from their `except ARG_ERRORS` clause, which costs nothing until
    something raises."""
    if isinstance(exc, TypeError):    # (torch's class already: the op's own message stays)
        raise exc
    better = argument_error(op, fn, args, kwargs, exc)
    if better is None:
        raise exc
    raise better from exc


# ---- the op raised an internal error: what torch's parser or kernel says instead ----
# (the facts about torch's function this reads are the op's: OpDef.torch_python, the
# attribute torch's Python code reads of which arguments first, so a non-tensor there is
# torch's AttributeError; OpDef.bool_overload, an overload taking a bool where another
# takes an int, std(x, True): unbiased)
_NO_ATTR = re.compile(r"'(\w+)' object has no attribute")
_STR_CONVERSION = ("could not convert string to", "invalid literal for int()",
                   "could not convert string")
# parameters that take a str in torch (a str there is not refused by the parser)
_STR_PARAMS = {"equation", "ord", "p", "norm", "padding", "rounding_mode", "compute_mode",
               "driver", "mode", "side", "interpolation", "indexing", "UPLO", "device",
               "reduction", "pad_mode", "approximate", "name", "names", "dims", "dim",
               "padding_mode", "reduce", "nonlinearity", "dtype", "layout"}
# parameters torch's Python code converts with int() (manual_seed's seed): its ValueError
_PY_INT_PARAMS = {"seed"}
# number parameters (Scalars take a bool)
_SCALAR_PARAMS = {"alpha", "beta", "value", "other", "exponent", "min", "max", "scale", "p",
                  "margin", "eps", "fill_value", "lambd", "threshold"}
# int parameters (a bool there is torch's TypeError "must be int, not bool")
_INT_PARAMS = {"dim", "k", "n", "index", "step", "size", "kernel_size", "stride", "diagonal",
               "offset", "repeats", "sections", "chunks", "split_size", "ind", "dim0", "dim1",
               "start_dim", "end_dim", "n_fft", "hop_length", "win_length", "window_length",
               "steps", "output_size", "dilation", "groups", "num_classes", "source",
               "destination", "shifts", "dims", "sizes", "split_size_or_sections",
               "indices_or_sections", "padding", "output_padding", "num_samples",
               "upscale_factor", "downscale_factor"}
_LIST_FLOAT_OK = {"scale_factor", "q", "weight", "boundaries", "values", "data", "bins",
                  "range", "pad", "normalized_shape"}


def internal_error(op, fn, args, kwargs, exc):
    """torch's exception for a call on which the op raised an internal error (asked only
    then, by `argument_error`), or None to let it through:

    - an AttributeError naming a non-tensor argument's type ('str' object has no attribute
      'dim'): torch's parser refuses that argument, TypeError naming it (except where torch's
      function is Python code, OpDef.torch_python: the AttributeError is torch's answer too);
    - a str that failed a NumPy/int conversion, a str where no str goes, a list of floats
      where no float list goes, a bool where an int goes: the parser's TypeError;
    - a ValueError NumPy raised inside a kernel (a reshape, broadcast or LAPACK failure,
      where ember's own code did not raise it): torch's kernels raise RuntimeError there."""
    fname = getattr(op, "name", op)
    bound = _bound(fn, args, kwargs)
    msg = str(exc)
    facts = _facts(op, fn)
    in_python = python_level(op, fn, args, kwargs)
    if in_python:
        attrs, positions = facts.torch_python[:2]
        for k, p in enumerate(positions):
            attr = attrs if isinstance(attrs, str) else attrs[k]
            v = args[p] if p < len(args) else None
            if p < len(args) and not isinstance(v, Tensor) and not hasattr(v, "dtype"):
                if hasattr(v, attr):    # ("abc".split(2, 0): str's own method refuses)
                    return TypeError(f"{fname}(): argument {p + 1} must be Tensor, not "
                                     f"{type(v).__name__}")
                return AttributeError(f"'{type(v).__name__}' object has no attribute "
                                      f"'{attr}'")
    if isinstance(exc, AttributeError):
        m = _NO_ATTR.match(msg)
        if m is None:     # (an argument torch's Python code reads was answered above)
            return None
        for name, pos, value in bound:
            if type(value).__name__ == m.group(1) and not isinstance(value, Tensor):
                return TypeError(_must_be(fname, name, pos, "Tensor", value))
        return None
    if isinstance(exc, TypeError):    # (torch's class already: int_arg's, NumPy's own)
        return None
    for name, pos, value in bound:
        if isinstance(value, str) and name is not None and name not in _STR_PARAMS and \
                name not in _PY_INT_PARAMS and name not in _DEFAULTS_STR(fn):
            return TypeError(_invalid_combination(fname, args, kwargs))
        if isinstance(value, bool) and name not in _SCALAR_PARAMS and \
                not facts.bool_overload and not in_python and (
                name in _INT_PARAMS or _int_default(fn, name)):
            return TypeError(_must_be(fname, name, pos, "int", value))
        if isinstance(value, list) and value and name not in _LIST_FLOAT_OK and \
                any(type(v) is float for v in value) and not in_python:
            return TypeError(_invalid_combination(fname, args, kwargs))
    if isinstance(exc, ValueError) and any(s in msg for s in _STR_CONVERSION) and not any(
            name in _PY_INT_PARAMS for name, _, v in bound if isinstance(v, str)):
        return TypeError(_invalid_combination(fname, args, kwargs))
    if type(exc).__name__ in ("ValueError", "LinAlgError") and _from_numpy(exc) and not any(
            s in msg for s in _STR_CONVERSION + ("math domain error",)):   # (Python's own)
        return RuntimeError(msg)
    return None


def python_level(op, fn, args, kwargs):
    """Whether torch's function for `op` is Python code that reads an attribute of its
    arguments before its parser sees them, on this call (OpDef.torch_python)."""
    entry = _facts(op, fn).torch_python
    return entry is not None and (len(entry) == 2 or entry[2](args, kwargs))


def _from_numpy(exc):
    """Whether NumPy raised `exc`: its innermost frame is NumPy's or SciPy's, or ember code
    whose line is no `raise` (a C function of NumPy's raised it, a reshape or broadcast)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    if "/numpy/" in path or "/scipy/" in path:
        return True
    if "/ember/" not in path:
        return False
    return "raise" not in linecache.getline(path, tb.tb_lineno)


def _bound(fn, args, kwargs):
    """(name or None, position or None, value) of each argument of the call."""
    ps = _params(fn) or []
    names = []
    for p in ps:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        names.append(p.name)
    out = [(names[k] if k < len(names) else None, k, v) for k, v in enumerate(args)]
    return out + [(k, None, v) for k, v in kwargs.items()]


def _DEFAULTS_STR(fn):
    return {p.name for p in (_params(fn) or []) if isinstance(p.default, str)}


def _int_default(fn, name):
    p = next((p for p in (_params(fn) or []) if p.name == name), None)
    return p is not None and type(p.default) is int


def _must_be(fname, name, pos, what, value):
    where = f" (position {pos + 1})" if pos is not None else ""
    arg = f"argument '{name}'" if name is not None else "an argument"
    return f"{fname}(): {arg}{where} must be {what}, not {type(value).__name__}"


def _invalid_combination(fname, args, kwargs):
    def t(v):
        return "Tensor" if isinstance(v, Tensor) else type(v).__name__
    got = [t(v) for v in args] + [f"{k}={t(v)}" for k, v in kwargs.items()]
    return f"{fname}() received an invalid combination of arguments - got ({', '.join(got)})"


def is_int(value):
    """Whether torch's parser takes `value` as an int: a Python or NumPy integer (anything
    with ``__index__``), never a bool."""
    return not isinstance(value, bool) and hasattr(value, "__index__")


class Omitted:
    """A default that tells an argument left out from one passed as None: torch has an
    overload without the argument (max(x), eye(n), repeat_interleave(counts)) and none that
    takes None there, so an explicit None is its parser's TypeError."""
    __slots__ = ("what",)

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f"<{self.what}>"


def int_arg(value, fname, name, pos, what="int"):
    """`value` as torch's parser takes an int argument (argument `name`, at position `pos`,
    of `fname`): a Python or NumPy integer within int64. bool, float, None and others are
    torch's TypeError; an int beyond int64 its ValueError. Called by ops on their int
    arguments (topk's k, tril's diagonal); an int passes after two cheap tests.

    >>> int_arg(3, "topk", "k", 2)
    3
    """
    if type(value) is int and _INT64[0] <= value <= _INT64[1]:
        return value
    if type(value) is int:
        raise ValueError("Overflow when unpacking long long")
    if not isinstance(value, bool) and hasattr(value, "__index__") and not isinstance(
            value, Tensor):
        return int_arg(int(value.__index__()), fname, name, pos, what)
    if isinstance(value, Tensor) and value.numel() == 1 and not value.dtype.is_floating_point \
            and not value.dtype.is_complex and value.dtype is not D.bool_:
        return int(value.item())   # (torch takes a one-element integer tensor for an int)
    raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be {what}, not "
                    f"{type(value).__name__}")


def bounds_args(fname, start, end, steps):
    """torch's parser on linspace/logspace bounds: a number or a 0-dim tensor (None, a str
    or a list match no overload)."""
    for v in (start, end):
        if not isinstance(v, (Tensor, int, float, complex)) and not hasattr(v, "dtype"):
            raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                            f"({type(start).__name__}, {type(end).__name__}, "
                            f"{type(steps).__name__}), but expected one of: * (Tensor start, "
                            f"Tensor end, int steps, ...) * (Number start, Number end, int "
                            f"steps, ...)")


def tensor_args(fname, *named):
    """torch's parser on tensor arguments: `named` is (name, position, value) triples; the
    first value that is not a Tensor is torch's TypeError naming it (for ops whose internals
    would raise AttributeError on a str or list). Two cheap tests per argument when fine;
    anything with a dtype passes (a tracer's stand-in for a tensor)."""
    for name, pos, value in named:
        if not isinstance(value, Tensor) and not hasattr(value, "dtype"):
            raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")


def _params(fn):
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def _in_varargs(fn, args, v):
    """Whether positional value `v` fills fn's *args (``empty(2, 3)``'s *size)."""
    ps = _params(fn)
    if not ps:
        return False
    star = next((i for i, p in enumerate(ps) if p.kind is p.VAR_POSITIONAL
                 and p.name != "args"), None)      # (not a wrapper's *args)
    return star is not None and any(a is v for a in args[star:])


def _list_arg(fn, args, v):
    """(the name of the int-list argument holding `v`, v's position in it), or (None, 0)."""
    ps = _params(fn) or []
    for i, p in enumerate(ps):
        if p.kind is p.VAR_POSITIONAL and p.name != "args":
            rest = args[i:]
            pos = next((j for j, a in enumerate(rest) if a is v), None)
            if pos is not None:
                return p.name, pos
            return None, 0
        if i < len(args) and args[i] is v:
            return p.name, 0
    return None, 0


# argument names that hold tensors in torch's signatures of ops that declare no `inputs`
_TENSOR_ARGS = {"other", "mat1", "mat2", "tensor", "tensors", "index", "src", "mask", "vec",
                "vec1", "vec2", "target", "weight", "bias", "boundaries", "sorted_sequence",
                "operands", "indices", "values", "source"}
