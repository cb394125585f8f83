"""The ``_foreach_*`` ops (``torch._foreach_add_(params, grads, alpha=-lr)``...): one op
applied to every tensor of a list, as optimizers written by users call them.

    ember._foreach_mul_(exp_avgs, beta1)
    ember._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    norms = ember._foreach_norm(grads)

torch runs them as fused multi-tensor kernels; ember runs the per-tensor op in a loop, so
each is exactly the op it names (same dtypes, errors and autograd). The second argument
takes torch's forms: a number (for every tensor), a list of numbers or of tensors (one per
tensor, the lengths checked with torch's messages) or one tensor (for every tensor). The
in-place forms return the list they were given.
"""
import numbers

from ..core.tensor import Tensor
from .registry import FUNCTIONS

__all__ = []


def _check(tensors, fn):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'self' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")


def _per_tensor(tensors, other, scalars_tensor=False):
    """`other` spread over `tensors`: one item per tensor. With `scalars_tensor`, a tensor
    is a 1-D tensor of numbers, one per tensor (addcmul's and addcdiv's `scalars`)."""
    n = len(tensors)
    if isinstance(other, Tensor):
        if scalars_tensor:
            if other.dim() != 1 or other.numel() != n:
                raise RuntimeError("Tensor list must have same number of elements as scalar "
                                   "list.")
            return other.tolist()
        return [other] * n
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            if other and all(isinstance(o, Tensor) for o in other):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                                   f"{n} and {len(other)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other)
    if isinstance(other, (numbers.Number, bool)):
        return [other] * n
    raise TypeError(f"expected a number, a tensor or a list, got {type(other).__name__}")


def _export(fn):
    globals()[fn.__name__] = fn
    __all__.append(fn.__name__)
    return fn


def _make_unary(name):
    def out_of_place(self):
        _check(self, f"_foreach_{name}")
        return tuple(getattr(t, name)() for t in self)

    def in_place(self):
        _check(self, f"_foreach_{name}_")
        for t in self:
            getattr(t, name + "_")()
        return self

    out_of_place.__name__ = f"_foreach_{name}"
    in_place.__name__ = f"_foreach_{name}_"
    out_of_place.__doc__ = f"``[t.{name}() for t in self]``."
    in_place.__doc__ = f"``t.{name}_()`` for each tensor of `self`."
    _export(out_of_place)
    _export(in_place)


for _name in ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
              "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
              "trunc").split():
    _make_unary(_name)


def _make_binary(name, method, takes_alpha=False, scalar_method=None):
    """`method` per tensor with its item of `other`; `scalar_method` instead when that item
    is a number (maximum/minimum of a number are clamps, as in torch)."""
    def pick(x, o, inplace):
        m = scalar_method if scalar_method and not isinstance(o, Tensor) else method
        if inplace and not hasattr(x, m + "_"):      # Tensor has no maximum_/minimum_
            return lambda o: x.copy_(getattr(x, m)(o))
        return getattr(x, m + "_" if inplace else m)

    if takes_alpha:
        def out_of_place(self, other, *, alpha=1):
            _check(self, f"_foreach_{name}")
            return tuple(pick(x, o, False)(o, alpha=alpha)
                         for x, o in zip(self, _per_tensor(self, other)))

        def in_place(self, other, *, alpha=1):
            _check(self, f"_foreach_{name}_")
            for x, o in zip(self, _per_tensor(self, other)):
                pick(x, o, True)(o, alpha=alpha)
            return self
    else:
        def out_of_place(self, other):
            _check(self, f"_foreach_{name}")
            return tuple(pick(x, o, False)(o) for x, o in zip(self, _per_tensor(self, other)))

        def in_place(self, other):
            _check(self, f"_foreach_{name}_")
            for x, o in zip(self, _per_tensor(self, other)):
                pick(x, o, True)(o)
            return self
    out_of_place.__name__ = f"_foreach_{name}"
    in_place.__name__ = f"_foreach_{name}_"
    out_of_place.__doc__ = f"``[t.{method}(o) for t, o in zip(self, other)]`` (see the module)."
    in_place.__doc__ = f"``t.{method}_(o)`` for each tensor of `self` (see the module)."
    _export(out_of_place)
    _export(in_place)


_make_binary("add", "add", takes_alpha=True)
_make_binary("sub", "sub", takes_alpha=True)
_make_binary("mul", "mul")
_make_binary("div", "div")
_make_binary("clamp_min", "clamp_min")
_make_binary("clamp_max", "clamp_max")
_make_binary("maximum", "maximum", scalar_method="clamp_min")
_make_binary("minimum", "minimum", scalar_method="clamp_max")


@_export
def _foreach_lerp(self, tensors1, weight):
    """``[t.lerp(e, w) ...]``; `weight` a number, a list of numbers or of tensors."""
    _check(self, "_foreach_lerp")
    return tuple(x.lerp(e, w) for x, e, w in
                 zip(self, _per_tensor(self, tensors1), _per_tensor(self, weight)))


@_export
def _foreach_lerp_(self, tensors1, weight):
    """``t.lerp_(e, w)`` for each tensor of `self`."""
    _check(self, "_foreach_lerp_")
    for x, e, w in zip(self, _per_tensor(self, tensors1), _per_tensor(self, weight)):
        x.lerp_(e, w)
    return self


@_export
def _foreach_pow(self, exponent):
    """``[t ** e ...]``; `self` may also be a number raised to each tensor of `exponent`."""
    if isinstance(self, numbers.Number):
        _check(exponent, "_foreach_pow")
        return tuple(FUNCTIONS["pow"](self, e) for e in exponent)
    _check(self, "_foreach_pow")
    return tuple(x.pow(e) for x, e in zip(self, _per_tensor(self, exponent)))


@_export
def _foreach_pow_(self, exponent):
    """``t.pow_(e)`` for each tensor of `self`."""
    _check(self, "_foreach_pow_")
    for x, e in zip(self, _per_tensor(self, exponent)):
        x.pow_(e)
    return self


def _make_pointwise3(name):
    def out_of_place(self, tensor1, tensor2, value=1):
        _check(self, f"_foreach_{name}")
        t1, t2 = _per_tensor(self, tensor1), _per_tensor(self, tensor2)
        return tuple(getattr(x, name)(a, b, value=v)
                     for x, a, b, v in zip(self, t1, t2, _per_tensor(self, value, True)))

    def in_place(self, tensor1, tensor2, value=1):
        _check(self, f"_foreach_{name}_")
        t1, t2 = _per_tensor(self, tensor1), _per_tensor(self, tensor2)
        for x, a, b, v in zip(self, t1, t2, _per_tensor(self, value, True)):
            getattr(x, name + "_")(a, b, value=v)
        return self

    out_of_place.__name__ = f"_foreach_{name}"
    in_place.__name__ = f"_foreach_{name}_"
    out_of_place.__doc__ = f"``[t.{name}(a, b, value=v) ...]``; `value` a number, a list of " \
                           "numbers or a 1-D tensor of them."
    in_place.__doc__ = f"``t.{name}_(a, b, value=v)`` for each tensor of `self`."
    _export(out_of_place)
    _export(in_place)


_make_pointwise3("addcmul")
_make_pointwise3("addcdiv")


@_export
def _foreach_norm(self, ord=2, dtype=None):
    """The `ord`-norm of each tensor (0-d tensors), optionally computed in `dtype`.

    >>> ember._foreach_norm([ember.tensor([3., 4.])])
    (tensor(5.),)
    """
    _check(self, "_foreach_norm")
    if dtype is None:
        return tuple(t.norm(ord) for t in self)
    return tuple(t.norm(ord, dtype=dtype) for t in self)


@_export
def _foreach_max(self):
    """The largest element of each tensor."""
    _check(self, "_foreach_max")
    return tuple(t.max() for t in self)


@_export
def _foreach_powsum(self, exponent):
    """``sum(|t| ** exponent)`` of each tensor."""
    _check(self, "_foreach_powsum")
    return tuple(t.abs().pow(exponent).sum() for t in self)


@_export
def _foreach_mm(self, mat2):
    """``[a @ b for a, b in zip(self, mat2)]`` (2-D matrices)."""
    _check(self, "_foreach_mm")
    return tuple(a.mm(b) for a, b in zip(self, _per_tensor(self, mat2)))


@_export
def _foreach_copy_(self, src, non_blocking=False):
    """``t.copy_(s)`` for each pair."""
    _check(self, "_foreach_copy_")
    for t, s in zip(self, _per_tensor(self, src)):
        t.copy_(s)
    return self


@_export
def _foreach_zero_(self):
    """Zero every tensor of `self` in place."""
    _check(self, "_foreach_zero_")
    for t in self:
        t.zero_()
    return self


@_export
def _foreach_clone(self):
    """A copy of each tensor."""
    _check(self, "_foreach_clone")
    return tuple(t.clone() for t in self)
