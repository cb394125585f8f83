"""torch's argument parser, as errors: what torch raises for a call whose arguments it
would refuse (an int beyond int64, a str where a Tensor goes), and the cheap checks ops run
on their own int and tensor arguments (`int_arg`, `tensor_args`).

`argument_error` is asked only after an op raised (dispatch.py's mode seam), so valid calls
never pay for it; it turns an internal AttributeError into torch's TypeError or ValueError.
"""
import inspect

from .core import dtype as D
from .core.tensor import Tensor


_INT64 = (-2 ** 63, 2 ** 63 - 1)


def argument_error(op, fn, args, kwargs):
    """The exception torch's argument parser raises for this call, or None: a Python int
    beyond int64 (ValueError "Overflow when unpacking long long"; TypeError "failed to unpack"
    when it is an element of an int list such as a size), or a tensor argument that is
    not a Tensor (TypeError naming the argument). Only asked after the op itself raised, so
    valid calls never pay for the check; it turns internal AttributeErrors ('str' object has no
    attribute 'dim') and out-of-range guesses into torch's answer."""
    for v in list(args) + list(kwargs.values()):
        for k, x in enumerate(v if isinstance(v, (list, tuple)) else (v,)):
            if type(x) is int and not _INT64[0] <= x <= _INT64[1]:
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
    if not hasattr(op, "inputs"):    # a seam named by a string (nn functions' own seams)
        return None
    try:
        sig = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
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
    return None


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
