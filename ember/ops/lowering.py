"""How the compiler's fused kernels compute an op: the `lower` field of an OpDef.

A fused kernel is a loop nest whose body is an expression tree of the Kernel IR
(ember/compiler/kernel.py): ``("call", name, dtype, *args)`` where `name` is the registry name
of the op whose lowering computes it. The lowering is part of the op's one definition:

- `c`: the C expression, a template over the argument code ``{a}``, ``{b}``, ``{c}``, the
  result's C type ``{T}`` and the float32 suffix ``{f}`` ("f" for float32 arguments, "" for
  float64: ``sqrt{f}`` is sqrtf or sqrt). A callable gets a `CContext` instead;
- `c_int`: the template when the arguments are integers or bools (default: `c`); `NO_INT`
  where the op has no integer form in a kernel (the fusion pass casts such inputs first);
- `np`: the NumPy evaluation used by the compiler's fallback backend (default: the op's own
  eager kernel, so both backends compute what eager computes);
- `build`: how the fusion pass writes a graph node as IR when it is not simply the op applied
  to its arguments (clamp is maximum/minimum, threshold_backward a where); `reduce` does the
  same for a reduction (mean is a sum divided by n);
- `compare`: the arguments are computed in their common dtype and the result is bool;
- `kwargs`: keyword arguments a fusable call may carry (others keep the call unfused);
- `cost`: the relative cost of recomputing it (the row cache stores costly values);
- `dims`: for a reduction whose arguments are not ``(dim, keepdim)``: a function
  ``dims(args, kwargs, input shape) -> (reduced dims, keepdim)`` or None when it does not reduce
  like a keepdim/dim reduction (sum_to_size's size).

>>> from ember.ops.registry import op_for
>>> op_for("mul").lower.c
'(({T})({a} * {b}))'
"""

NO_INT = object()     # `c_int`: the op has no integer form inside a fused kernel
COSTLY = 8            # `cost` of a transcendental or a division


class Lower:
    """One op's lowering into fused kernels (see the module docstring)."""

    __slots__ = ("c", "c_int", "np", "build", "reduce", "compare", "kwargs", "cost",
                 "positional", "prim", "dims")

    def __init__(self, c=None, *, c_int=None, np=None, build=None, reduce=None,
                 compare=False, kwargs=(), cost=1, positional=("dim", "keepdim"), prim=None,
                 dims=None):
        self.c, self.c_int, self.np = c, c_int, np
        self.build, self.reduce = build, reduce
        self.compare, self.kwargs, self.cost = compare, frozenset(kwargs), cost
        self.positional = positional   # reductions: the positional arguments after self
        self.prim = prim               # the IR name; set to the op's name at registration
        self.dims = dims               # reductions: (dims, keepdim) from unusual arguments


class CContext:
    """What a callable C lowering sees: result dtype/C type, argument dtype, the arguments'
    C code and their IR expressions (a constant exponent selects pow's fast paths)."""

    __slots__ = ("dtype", "T", "adt", "f", "args", "exprs")

    def __init__(self, dtype, T, adt, f, args, exprs):
        self.dtype, self.T, self.adt, self.f = dtype, T, adt, f
        self.args, self.exprs = args, exprs


def template_args(args):
    return dict(zip("abc", args))
