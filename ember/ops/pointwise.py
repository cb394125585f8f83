"""Pointwise ops: one table row each — kernel, dtype rule, derivative formulas, lowering.

`defpw` (and `_unary` for one input) turns a row into the op's OpDef and its generated
function, method and in-place method. The rows live in pointwise_arith.py (arithmetic),
pointwise_math.py (unary math) and pointwise_logic.py (comparisons, logical, bitwise); this
file holds the machinery and the ops the others' derivative formulas use: where, clamp and
masked_fill, whose optional or unpromoted inputs need a hand-written front.

Formulas are written with ember ops on the incoming gradient `g`; their parameter names say
what they read (inputs by name, `result`, or attributes), which is all the node saves. The
engine reduces broadcast gradients back to each input's shape, so formulas never do.
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from .. import dispatch
from ..core import dtype as D
from ..dispatch import rule_promote, rule_float, torch_name, not_implemented, checked_scalar
from .registry import OpDef, POINTWISE, register, METHODS as _METHODS
from .lowering import Lower
from . import lowering_pointwise as _lw


def defpw(name, ufunc=None, kernel=None, inputs=("self", "other"), rule=rule_promote,
          grads=None, attrs=None, names=None, method_names=None, inplace=True, precheck=None,
          exact_scalar=False, native_lowp=False, scalars_promote=True, tensor_only=False,
          **kw):
    """Define a pointwise op. `precheck(values, metas, promoted_dtype, attrs)`, if given, runs
    on the raw operands before conversion (checks that need scalars or per-operand dtypes).
    float16/bfloat16 compute in float32 with Python scalars first rounded to the low dtype,
    as PyTorch does, except with `exact_scalar` (mul, div keep the scalar exact) or
    `native_lowp` (the kernel runs on the low-precision array itself). Without
    `scalars_promote`, Python-scalar operands take no part in type promotion (lerp's weight).
    With `tensor_only`, every input must be a Tensor (torch's signature), else TypeError."""
    if kernel is None:
        kernel = (lambda xp, *a, _u=ufunc: _u(*a))
    op = OpDef(name, POINTWISE, kernel=kernel, ufunc=ufunc, inputs=inputs, dtype_rule=rule,
               grads=grads, attrs=attrs, inplace=inplace, **kw)
    op.precheck = precheck
    op.exact_scalar = exact_scalar
    op.native_lowp = native_lowp
    op.scalars_promote = scalars_promote
    op.tensor_only = tensor_only
    fn, inplace_fn = dispatch.make_pointwise(op)
    register(op, fn, names=names, method_names=method_names,
             inplace_fn=inplace_fn if inplace else None)
    return fn


def _zeros(g):
    return g.mul(0)


KINDS = "bifc"   # dtype kinds: bool, integral, floating, complex


def only(kinds, kernel_name, base=rule_promote):
    """A dtype rule: PyTorch's NotImplementedError (naming its CPU kernel) unless the promoted
    dtype's kind is in `kinds` ("b" bool, "i" integral, "f" floating, "c" complex); then
    `base` decides."""
    def rule(dt, name):
        if KINDS[dt._kind] not in kinds:
            raise not_implemented(kernel_name, dt)
        return base(dt, name)
    rule.base = base          # (dispatch reads it: a comparison writes bools into any self)
    return rule


def no_complex(message, base=rule_float, exc=NotImplementedError):
    """A dtype rule: torch's refusal (`exc(message)`) when the promoted dtype is complex,
    else `base` decides (relu, maximum, the comparisons: ops torch has no complex loop for)."""
    def rule(dt, name):
        if dt._kind == 3:
            raise exc(message)
        return base(dt, name)
    rule.base = base
    return rule


def _np_torch_name(a):
    return torch_name(D.FROM_NP[a.dtype])


def _unary(name, ufunc, grad, rule=rule_float, errstate=True, names=None, kernel=None, **kw):
    return defpw(name, ufunc, kernel, inputs=("self",), rule=rule, errstate=errstate,
                 grads={"self": grad} if grad else None, names=names, **kw)


# ---- where and clamp: inputs that are optional or not promoted ----
def _where_kernel(xp, cond, a, b):
    return xp.where(cond, a, b)


def _where_rule_check(cond):
    from ..core.tensor import Tensor
    if isinstance(cond, Tensor) and cond.dtype.name not in ("bool", "uint8"):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {dispatch.torch_name(cond.dtype)}")


_where = defpw("_where", None, _where_kernel, inputs=("condition", "self", "other"),
               function=False, method=False, inplace=False, node_name="WhereBackward0",
               grads={"self": lambda g, condition: _where_grad(g, condition, True),
                      "other": lambda g, condition: _where_grad(g, condition, False)},
               onnx=_ox.where)


def _where_grad(g, condition, first):
    from .creation import zeros_like
    z = zeros_like(g)
    return _where(condition, g, z) if first else _where(condition, z, g)


def where(condition, input=None, other=None, *, out=None):
    """``where(cond, x, y)`` picks from `x` where `cond` holds, else from `y`;
    ``where(cond)`` is ``nonzero(cond, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    _where_rule_check(condition)
    from ..core.tensor import Tensor
    if not isinstance(condition, Tensor):
        from .creation import tensor
        condition = tensor(condition)
    return _where_call(condition, input, other, out)


def _where_call(condition, input, other, out):
    # the condition takes no part in type promotion: promote input/other, then select
    from .. import core
    vals = [dispatch.operand(x) for x in (input, other)]
    dt = core.dtype.result_type_of([(d, c) for _, d, c in vals])
    from ..core.tensor import Tensor
    # Python scalars must fit the result dtype (where(c, 128, int8_tensor) is an error)
    a = input.to(dt) if isinstance(input, Tensor) else checked_scalar(input, dt)
    b = other.to(dt) if isinstance(other, Tensor) else checked_scalar(other, dt)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        from .creation import tensor
        a = tensor(a, dtype=dt)
    cond = condition if condition.dtype.name == "bool" else condition.bool()
    r = _where(cond, a, b, out=out)
    return r


def _where_method(self, condition, other):
    """``x.where(cond, y)`` is ``where(cond, x, y)``."""
    return where(condition, self, other)


where = register(OpDef("where", POINTWISE, method=False, inputs=("condition", "input", "other"),
                      lower=Lower("({a} ? {b} : {c})", build=_lw.where_ir, np=_lw.where_np),
                       onnx=_ox.where),
                 where)
_METHODS["where"] = _where_method


def _clamp_kernel(xp, a, lo, hi):
    if lo is not None:
        a = xp.maximum(a, lo)
    if hi is not None:
        a = xp.minimum(a, hi)
    return a


def _clamp_self_grad(g, self, min, max):
    mask = None
    if min is not None:
        mask = self >= min
    if max is not None:
        m2 = self <= max
        mask = m2 if mask is None else mask & m2
    return where(mask, g, 0.0)     # as torch: a nan gradient outside the range becomes 0


def _clamp_min_grad(g, self, min):
    return where(self < min, g, 0.0)


def _clamp_max_grad(g, self, max):
    return where(self > max, g, 0.0)


def _check_clamp(values, metas, dt, attrs):
    if dt._kind == 3:
        raise NotImplementedError("clamp is not supported for complex types")
    # bool has only PyTorch's one-tensor-bound kernels (they are maximum/minimum)
    bounds = [c for _, c in metas[1:] if c >= 0]
    if dt is D.bool_ and (len(bounds) != 1 or bounds[0] == 2):
        raise not_implemented("clamp_scalar_cpu" if 2 in bounds else "clamp_cpu", dt)
    for v, (_, c) in zip(values[1:], metas[1:]):
        if c == 2:
            checked_scalar(v, dt)     # Python bounds must fit the result dtype


_clamp = defpw("_clamp", None, _clamp_kernel, inputs=("self", "min", "max"), function=False,
               precheck=_check_clamp,
               method=False, node_name="ClampBackward1", inplace=True,
               grads={"self": _clamp_self_grad, "min": _clamp_min_grad, "max": _clamp_max_grad})


def clamp(input, min=None, max=None, *, out=None):
    """Limit every element to ``[min, max]`` (either bound may be None, a number or a tensor).

    >>> ember.tensor([-2., 0.5, 3.]).clamp(0, 1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    min, max = _check_bounds(min, max)
    return _clamp(input, min, max, out=out)


def _check_bounds(min, max):
    """PyTorch has clamp(Tensor, Number?, Number?) and clamp(Tensor, Tensor?, Tensor?): a
    tensor bound with a number bound is a TypeError, unless it is 0-dim (then a number)."""
    from ..core.tensor import Tensor
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None and \
            max is not None:
        if (min if isinstance(min, Tensor) else max).dim() != 0:
            raise TypeError("clamp() received an invalid combination of arguments: min and max "
                            "must both be numbers or both be tensors")
        min, max = (b.item() if isinstance(b, Tensor) else b for b in (min, max))
    return min, max


def clamp_(self, min=None, max=None):
    min, max = _check_bounds(min, max)
    return _CLAMP_INPLACE(self, min, max)


def _no_bound(name, what, method=False):
    """torch's TypeError for clamp_min/clamp_max given None: their one bound is no
    optional (clamp's own RuntimeError is for both bounds None)."""
    if method:
        return TypeError(f"{name}() received an invalid combination of arguments - got "
                         f"(NoneType), but expected one of:\n * (Tensor {what})\n      didn't "
                         f"match because some of the arguments have invalid types: "
                         f"(!NoneType!)\n * (Number {what})\n      didn't match because some "
                         f"of the arguments have invalid types: (!NoneType!)\n")
    return TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                     f"NoneType), but expected one of:\n * (Tensor input, Tensor {what}, *, "
                     f"Tensor out = None)\n * (Tensor input, Number {what}, *, Tensor out = "
                     f"None)\n")


def clamp_min(input, min):
    if min is None:
        raise _no_bound("clamp_min", "min")
    return clamp(input, min=min)


def clamp_max(input, max):
    if max is None:
        raise _no_bound("clamp_max", "max")
    return clamp(input, max=max)


def _clamp_min_(self, min):
    if min is None:
        raise _no_bound("clamp_min_", "min", method=True)
    return clamp_(self, min=min)


def _clamp_max_(self, max):
    if max is None:
        raise _no_bound("clamp_max_", "max", method=True)
    return clamp_(self, max=max)


_CLAMP_INPLACE = _METHODS.pop("_clamp_", None)
_clamp_fn = clamp
clamp = register(OpDef("clamp", POINTWISE, lower=Lower(build=_lw.clamp_ir, kwargs=("min", "max")),
                       onnx=_ox.clamp),
                 _clamp_fn, names=("clamp",))
register(OpDef("clip", POINTWISE, lower=Lower(build=_lw.clamp_ir, kwargs=("min", "max")),
               onnx=_ox.clamp),
         _clamp_fn, names=("clip",))
_METHODS["clamp_"] = _METHODS["clip_"] = clamp_
clamp_min = register(OpDef("clamp_min", POINTWISE,
                           onnx=_ox.clamp_min), clamp_min)
clamp_max = register(OpDef("clamp_max", POINTWISE,
                           onnx=_ox.clamp_max), clamp_max)
_METHODS["clamp_min_"] = _clamp_min_
_METHODS["clamp_max_"] = _clamp_max_


def masked_fill(input, mask, value):
    """`input` with `value` written where the boolean `mask` holds (mask broadcasts)."""
    from ..core.tensor import Tensor
    if mask.dtype.name != "bool":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{dispatch.CPP_TYPES[mask.dtype.name]}")   # (torch: the C++ name)
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.dim()} dimension(s).")
        if not value.is_meta:       # (a meta value has no number to check)
            checked_scalar(value.item(), input.dtype)
        v = value.to(input.dtype)
    else:
        v = dispatch.wrap(np.asarray(checked_scalar(value, input.dtype)).astype(input.dtype.np),
                          input.dtype)
    return _where(mask, v, input)     # input and mask broadcast together


def masked_fill_(self, mask, value):
    r = masked_fill(self, mask, value)
    if tuple(r.shape) != tuple(self.shape):   # in place, the mask may not grow self
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(r.shape)}")
    return self.copy_(r)


masked_fill = register(OpDef("masked_fill", POINTWISE,
                             onnx=_ox.masked_fill), masked_fill)
_METHODS["masked_fill_"] = masked_fill_
