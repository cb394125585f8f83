"""The lowerings of pointwise and reduction ops that are more than one C template: the
constructors the op rows in pointwise.py and reduction.py call, and the IR builders for ops
that a fused kernel computes through other ops (clamp is maximum/minimum, mean a sum / n).

An IR builder gets `b`, the fusion pass's view of the node being lowered: ``b.val(x, dtype)``
is the IR of an argument (a node or a Python number) converted to `dtype`, ``b.dtype_of(x)``
the kernel dtype name of a node argument, ``b.reduce(combine, expr, dtype)`` the row value of
a reduction ("sum", "max" or "min") and ``b.n(dtype)`` the row length.
"""
import numpy as np

from .lowering import Lower, NO_INT, COSTLY


def cmath(fn):
    """A float-only function of ember's C math library (cmath.py: em_exp, em_tanh, ...) or of
    libm (sin, cos): ``fn`` for float64, ``fn + "f"`` for float32."""
    return Lower(fn + "{f}({a})", c_int=NO_INT, cost=COSTLY)


def compare(symbol):
    """A comparison: both sides in their common dtype, a bool (uint8_t 0/1) result."""
    return Lower(f"((uint8_t)({{a}} {symbol} {{b}}))", compare=True)


def sign_c(ctx):
    # sign(NaN) = 0 like torch (both comparisons are false); bools are their own sign
    a = ctx.args[0]
    return a if ctx.adt == "bool" else f"(({ctx.T})(({a} > 0) - ({a} < 0)))"


def pow_c(ctx):
    """pow: em_ipow for integers (negative exponents give 1, -1 or 0 like torch); for floats,
    torch's fast paths for the constant exponents 2, 3, 1, 0.5, -0.5, -1, -2, else powf/pow."""
    a, b = ctx.args
    if ctx.dtype not in ("float32", "float64"):
        return f"(({ctx.T})em_ipow({a}, {b}))"
    f = "" if ctx.dtype == "float64" else "f"
    one = "1.0" + f
    bexpr = ctx.exprs[1] if len(ctx.exprs) > 1 else ("load",)
    if bexpr[0] == "const":
        special = {2.0: f"({a} * {a})", 3.0: f"({a} * {a} * {a})", 1.0: f"({a})",
                   0.5: f"sqrt{f}({a})", -0.5: f"({one} / sqrt{f}({a}))",
                   -1.0: f"({one} / {a})", -2.0: f"({one} / ({a} * {a}))"}
        code = special.get(float(bexpr[1]))
        if code is not None:
            return code
    return f"pow{f}({a}, {b})"


def threshold_ir(b, args, kwargs, dt):
    """threshold_backward(g, result): 0 where result <= 0, else g (a NaN passes g, as torch)."""
    rdt = b.dtype_of(args[1])
    off = ("call", "le", "bool", b.val(args[1], rdt), ("const", 0, rdt))
    return ("call", "where", dt, off, ("const", 0, dt), b.val(args[0], dt))


def where_ir(b, args, kwargs, dt):
    return ("call", "where", dt, b.val(args[0], "bool"), b.val(args[1], dt), b.val(args[2], dt))


def where_np(cond, a, other):
    return np.where(cond.astype(bool), a, other)


def clamp_ir(b, args, kwargs, dt):
    """clamp(x, min, max): maximum with the lower bound, then minimum with the upper one."""
    lo = args[1] if len(args) > 1 else kwargs.get("min")
    hi = args[2] if len(args) > 2 else kwargs.get("max")
    e = b.val(args[0], dt)
    if lo is not None:
        e = ("call", "maximum", dt, e, b.val(lo, dt))
    if hi is not None:
        e = ("call", "minimum", dt, e, b.val(hi, dt))
    return e


# ---- reductions over a row: combine "sum" | "max" | "min" ----
def _sum_ir(b, x, dt, args, kwargs):
    return b.reduce("sum", x, dt)


def _mean_ir(b, x, dt, args, kwargs):
    return ("call", "div", dt, b.reduce("sum", x, dt), b.n(dt))


def _var_ir(b, x, dt, args, kwargs):
    """The mean, then the mean of squared deviations over n - correction."""
    c, unbiased = kwargs.get("correction"), kwargs.get("unbiased")
    correction = c if c is not None else (0 if unbiased is False else 1)
    mean = ("call", "div", dt, b.reduce("sum", x, dt), b.n(dt))
    dev = ("call", "sub", dt, x, mean)
    r = b.reduce("sum", ("call", "mul", dt, dev, dev), dt)
    return ("call", "div", dt, r, ("call", "sub", dt, b.n(dt), ("const", correction, dt)))


REDUCE_KWARGS = ("dim", "keepdim")
SUM = Lower(reduce=_sum_ir, kwargs=REDUCE_KWARGS)
MEAN = Lower(reduce=_mean_ir, kwargs=REDUCE_KWARGS)
AMAX = Lower(reduce=lambda b, x, dt, args, kwargs: b.reduce("max", x, dt), kwargs=REDUCE_KWARGS)
AMIN = Lower(reduce=lambda b, x, dt, args, kwargs: b.reduce("min", x, dt), kwargs=REDUCE_KWARGS)


def _sum_to_size_dims(args, kwargs, shape):
    """sum_to_size(x, size) with len(size) == x.dim() is a keepdim sum over the dims where
    size is 1 (and x's is not); a size with fewer dims drops dims: None (not such a sum)."""
    size = args[1] if len(args) == 2 and isinstance(args[1], (tuple, list)) else args[1:]
    if kwargs or len(size) != len(shape) or not all(type(s) is int for s in size):
        return None
    dims = tuple(i for i, (s, n) in enumerate(zip(size, shape)) if s == 1 and n != 1)
    return (dims, True) if dims else None


SUM_TO_SIZE = Lower(reduce=_sum_ir, dims=_sum_to_size_dims)
# var(x, dim) only: keepdim and the correction come by keyword
VAR = Lower(reduce=_var_ir, kwargs=("dim", "keepdim", "correction", "unbiased"),
            positional=("dim",))
