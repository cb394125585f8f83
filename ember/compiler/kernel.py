"""Kernel IR: what the fusion pass hands to a code generator.

One `Kernel` is one loop nest over an (R, N) iteration space: R rows (the outer dims of the
fused ops, collapsed), N elements per row (the inner dims, collapsed). Per row it computes its
`reductions` in order (each a sum/max/min over the row of a scalar expression, which may use
the rows's earlier reductions), then writes its `outputs`: per-element outputs (R*N values,
row-major, contiguous) or per-row outputs (R values). Pointwise-only kernels have no
reductions.

Expressions are nested tuples, hashable, so identical kernels share one build:
    ("load", i)                  element (r, j) of input i: data[r*so_i + j*sj_i]
    ("const", value, dtype)      a literal (Python float/int/bool)
    ("n", dtype)                 N, the row length at run time, as `dtype` (for means)
    ("row", k)                   this row's value of reduction k
    ("call", op, dtype, *args)   op applied to args; `dtype` is the result's dtype
dtypes are names: "float32", "float64", "bool", "int32", "int64".

Ops of ("call", ...) and their meaning (NumPy's / PyTorch's, NaN propagating):
    unary:  neg abs exp log log1p expm1 sqrt rsqrt reciprocal tanh sigmoid erf sin cos
            relu sign floor ceil trunc round(half to even) square logical_not isnan cast
    binary: add sub mul div pow maximum minimum gt ge lt le eq ne logical_and logical_or
    ternary: where(cond, a, b)
`cast` converts its argument to the call's dtype. Arguments of a binary op already share one
dtype (the fusion pass inserts casts); comparisons produce "bool".
"""
from dataclasses import dataclass, field

STRIDE_ZERO, STRIDE_ONE, STRIDE_ANY = "zero", "one", "any"


@dataclass(frozen=True)
class Input:
    """A kernel input: an array of `dtype` read at element (r, j) as data[r*so + j*sj].
    `outer`/`inner` say what the fusion pass promised about so and sj: "zero" (broadcast),
    "one" (unit stride; inner only) or "any" (passed at run time)."""
    dtype: str
    outer: str = STRIDE_ANY
    inner: str = STRIDE_ONE


@dataclass(frozen=True)
class Reduction:
    """Per row: op ("sum" | "max" | "min") over j of `expr`, accumulated in `dtype`.
    max/min propagate NaN; an empty row gives 0 for sum and -inf/+inf for max/min."""
    op: str
    expr: tuple
    dtype: str


@dataclass(frozen=True)
class Output:
    """A kernel output, contiguous, of `dtype`: per element (R*N values) or, when `per_row`,
    one value per row (R values; `expr` may then use only rows, consts, n and inputs whose
    inner stride is "zero")."""
    expr: tuple
    dtype: str
    per_row: bool = False


@dataclass(frozen=True)
class Kernel:
    inputs: tuple            # of Input
    reductions: tuple        # of Reduction, computed in order
    outputs: tuple           # of Output
    ops: tuple = field(default=(), compare=False)   # names of the graph ops fused (comments)

    def describe(self):
        red = ", ".join(r.op for r in self.reductions)
        return (f"Kernel({len(self.inputs)} inputs, {len(self.outputs)} outputs"
                + (f", reductions: {red}" if red else "") + ")")
