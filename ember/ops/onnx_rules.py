"""ONNX mappings referenced by the OpDefs (their ``onnx=`` field), as batch_rules.py holds
their vmap rules. Each is ``fn(g, *args, **kwargs)`` with the op's own signature: tensors
arrive as ONNX values (ember/onnx/builder.py's V: name, dtype, shape with None for dims that
vary), sizes that vary along a dynamic axis as DynInts, and `g` builds the nodes. Nothing
here imports onnx (ember/onnx hands the builder in); simple pointwise ops map by a string.

    relu = _unary("relu", ...,
                  onnx="Relu")                 # one node, inputs one to one
    _ONNX = {sum: onnx_rules.sum_}            # a function: reads dim/keepdim
"""
import math

from .onnx_rules_shape import (Unsupported, _unsupported, _is_v, _dims, _shape_args,  # noqa: F401
                               INT64_MAX)


def _float_dtype(g, x):
    return g.out_dtype or x.dtype


# ---- pointwise ----------------------------------------------------------------------------
def _bin(g, op_type, x, y, dt=None):
    dt = dt or g.out_dtype
    return g.op(op_type, g.scalar(x, dt), g.scalar(y, dt), dtype=dt)


def add(g, x, y, alpha=1):
    if alpha != 1:
        y = _bin(g, "Mul", y, alpha)
    return _bin(g, "Add", x, y)


def sub(g, x, y, alpha=1):
    if alpha != 1:
        y = _bin(g, "Mul", y, alpha)
    return _bin(g, "Sub", x, y)


def div(g, x, y, rounding_mode=None):
    dt = g.out_dtype
    r = _bin(g, "Div", x, y, dt)
    if rounding_mode == "floor" and dt.startswith("float"):
        r = g.op("Floor", r)
    elif rounding_mode == "trunc" and dt.startswith("float"):
        r = g.op("Mul", g.op("Sign", r), g.op("Floor", g.op("Abs", r)))
    elif rounding_mode is not None and not dt.startswith("float"):
        if rounding_mode == "floor":
            fx = g.op("Div", g.scalar(x, "float64"), g.scalar(y, "float64"))
            r = g.cast(g.op("Floor", fx), dt)
    return r


def pow_(g, x, exponent):
    dt = g.out_dtype
    return g.op("Pow", g.scalar(x, dt), g.scalar(exponent, dt), dtype=dt)


def rsqrt(g, x):
    return g.op("Reciprocal", g.op("Sqrt", g.cast(x, g.out_dtype)))


def expm1(g, x):
    return _bin(g, "Sub", g.op("Exp", g.cast(x, g.out_dtype)), 1)


def log1p(g, x):
    return g.op("Log", _bin(g, "Add", x, 1))


def square(g, x):
    return _bin(g, "Mul", x, x)


def erfc(g, x):
    return _bin(g, "Sub", 1, g.op("Erf", g.cast(x, g.out_dtype)))


def ne(g, x, y):
    t = x if _is_v(x) else y
    dt = t.dtype
    if _is_v(x) and _is_v(y) and x.dtype != y.dtype:
        dt = x.dtype if x.dtype.startswith("float") else y.dtype
    return g.op("Not", g.op("Equal", g.scalar(x, dt), g.scalar(y, dt), dtype="bool"))


def clamp(g, x, min=None, max=None):
    dt = g.out_dtype
    x = g.cast(x, dt)
    if _is_v(min) or _is_v(max):
        if min is not None:
            x = g.op("Max", x, g.scalar(min, dt))
        if max is not None:
            x = g.op("Min", x, g.scalar(max, dt))
        return x
    return g.op("Clip", x, None if min is None else g.scalar(min, dt),
                None if max is None else g.scalar(max, dt))


def clamp_min(g, x, min):
    return clamp(g, x, min=min)


def clamp_max(g, x, max):
    return clamp(g, x, max=max)


def where(g, condition, input=None, other=None):
    if input is None:
        _unsupported("where(condition) with one argument (data-dependent shape)")
    dt = g.out_dtype
    return g.op("Where", g.cast(condition, "bool"), g.scalar(input, dt), g.scalar(other, dt),
                dtype=dt)


def masked_fill(g, x, mask, value):
    return g.op("Where", g.cast(mask, "bool"), g.scalar(value, x.dtype), x)


def _bitwise(logical, bitwise):
    """bitwise_and/or/xor: And/Or/Xor on bool tensors, BitwiseX (opset 18) on integers."""
    def fn(g, x, y):
        dt = g.out_dtype
        if dt == "bool":
            return g.op(logical, g.scalar(x, dt), g.scalar(y, dt), dtype=dt)
        if g.opset < 18:
            _unsupported(f"{bitwise} on integers below opset 18")
        return g.op(bitwise, g.scalar(x, dt), g.scalar(y, dt), dtype=dt)
    return fn


bitwise_and = _bitwise("And", "BitwiseAnd")
bitwise_or = _bitwise("Or", "BitwiseOr")
bitwise_xor = _bitwise("Xor", "BitwiseXor")


def bitwise_not(g, x):
    if x.dtype == "bool":
        return g.op("Not", x)
    if g.opset < 18:
        _unsupported("BitwiseNot on integers below opset 18")
    return g.op("BitwiseNot", x)


def as_output_dtype(g, x, *args, **kwargs):
    """to(dtype), type_as, float(), contiguous, clone, detach: a Cast to the result's dtype
    (none when it is the same)."""
    return g.cast(x, g.out_dtype) if g.out_dtype else x


def prelu(g, x, weight):
    if x.rank > 2 and weight.shape and weight.shape[0] != 1:
        weight = g.reshape(weight, [weight.shape[0]] + [1] * (x.rank - 2))
    return g.op("PRelu", x, weight)


# ---- reductions ---------------------------------------------------------------------------
def _reduce(op_type):
    def fn(g, x, dim=None, keepdim=False, *, dtype=None):
        if isinstance(dim, bool):           # positional keepdim in sum(x, True)? not torch's
            _unsupported("a bool dim")
        x = g.cast(x, g.out_dtype) if g.out_dtype else x
        return g.reduce(op_type, x, _dims(dim, x.rank), keepdim)
    return fn


sum_ = _reduce("ReduceSum")
mean = _reduce("ReduceMean")
amax = _reduce("ReduceMax")
amin = _reduce("ReduceMin")
logsumexp = _reduce("ReduceLogSumExp")


def prod(g, x, dim=None, keepdim=False, *, dtype=None):
    return g.reduce("ReduceProd", g.cast(x, g.out_dtype), _dims(dim, x.rank), keepdim)


def _max_min(op_type, arg_type, elementwise):
    def fn(g, x, dim=None, keepdim=False, *, other=None):
        if _is_v(dim) or other is not None:
            o = dim if other is None else other
            return g.op(elementwise, x, g.cast(o, x.dtype))
        if dim is None:
            return g.reduce(op_type, x, None, False)
        d = dim % x.rank if x.rank else 0
        values = g.reduce(op_type, x, [d], keepdim)
        idx = g.op(arg_type, x, axis=d, keepdims=int(bool(keepdim)),
                   select_last_index=0, dtype="int64")
        return values, idx
    return fn


max_ = _max_min("ReduceMax", "ArgMax", "Max")
min_ = _max_min("ReduceMin", "ArgMin", "Min")


def _arg(op_type):
    def fn(g, x, dim=None, keepdim=False):
        if dim is None:
            flat = g.reshape(x, [-1])
            r = g.op(op_type, flat, axis=0, keepdims=0, dtype="int64")
            return g.reshape(r, [1] * x.rank) if keepdim else r
        return g.op(op_type, x, axis=dim % x.rank, keepdims=int(bool(keepdim)), dtype="int64")
    return fn


argmax = _arg("ArgMax")
argmin = _arg("ArgMin")


def var(g, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(unbiased, bool) or unbiased is None:
        corr = (1 if unbiased is None or unbiased else 0) if correction is None else correction
    else:
        corr = unbiased if correction is None else correction
    dims = _dims(dim, x.rank) or list(range(x.rank))
    mu = g.reduce("ReduceMean", x, dims, True)
    d = g.op("Sub", x, mu)
    r = g.reduce("ReduceMean", g.op("Mul", d, d), dims, keepdim)
    if not corr:
        return r
    n = 1
    for k in dims:
        n = n * g.size(x, k) if not isinstance(n, int) or x.shape[k] is None else \
            n * x.shape[k]
    if isinstance(n, int):
        return g.op("Mul", r, g.scalar(n / (n - corr) if n > corr else float("inf"), x.dtype))
    nf = g.scalar(n, x.dtype)                  # the count read at run time
    return g.op("Mul", r, g.op("Div", nf, g.op("Sub", nf, g.scalar(corr, x.dtype))))


def std(g, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return g.op("Sqrt", var(g, x, dim, unbiased, keepdim, correction=correction))


def _bool_reduce(op_type):
    def fn(g, x, dim=None, keepdim=False):
        r = g.reduce(op_type, g.cast(x, "int32"), _dims(dim, x.rank), keepdim)
        return g.cast(r, "bool")
    return fn


all_ = _bool_reduce("ReduceMin")
any_ = _bool_reduce("ReduceMax")


def cumsum(g, x, dim, *, dtype=None):
    return g.op("CumSum", g.cast(x, g.out_dtype), g.const(dim % x.rank, "int64"))


def _topk(g, x, k, dim, largest):
    d = dim % max(x.rank, 1)
    kk = g.ints([k])
    values, idx = g.op("TopK", x, kk, outputs=2, axis=d, largest=int(bool(largest)), sorted=1)
    idx.dtype = "int64"
    return values, idx


def topk(g, x, k, dim=-1, largest=True, sorted=True):
    return _topk(g, x, k, dim, largest)


def sort(g, x, dim=-1, descending=False, *, stable=False):
    # TopK over the whole dim sorts; ties keep the lower index first, as a stable sort does
    return _topk(g, x, g.size(x, dim), dim, descending)


def argsort(g, x, dim=-1, descending=False, *, stable=False):
    return sort(g, x, dim, descending)[1]


# ---- matmul -------------------------------------------------------------------------------
def matmul(g, x, y):
    return g.op("MatMul", x, y)


def linear(g, x, weight, bias=None):
    if x.rank == 2:
        return g.op("Gemm", x, weight, bias, transB=1)
    r = g.op("MatMul", x, g.op("Transpose", weight, perm=[1, 0]))
    return r if bias is None else g.op("Add", r, bias)


def addmm(g, input, mat1, mat2, *, beta=1, alpha=1):
    return g.op("Gemm", mat1, mat2, input, alpha=float(alpha), beta=float(beta))


def baddbmm(g, input, batch1, batch2, *, beta=1, alpha=1):
    r = g.op("MatMul", batch1, batch2)
    if alpha != 1:
        r = g.op("Mul", r, g.scalar(alpha, r.dtype))
    if beta == 0:
        return r
    b = input if beta == 1 else g.op("Mul", input, g.scalar(beta, input.dtype))
    return g.op("Add", r, b)


def einsum(g, equation, *operands):
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) \
        else list(operands)
    return g.op("Einsum", *ops, equation=equation.replace(" ", ""))


def outer(g, x, y):
    return g.op("Mul", g.unsqueeze(x, [1]), g.unsqueeze(y, [0]))


# ---- creation -----------------------------------------------------------------------------
def _fill(g, shape, value):
    dt = g.out_dtype
    return g.op("ConstantOfShape", g.ints(shape), value=g.value_attr(value, dt), dtype=dt)


def _creation(value):
    def fn(g, *size, **kwargs):
        return _fill(g, _shape_args(size), value)
    return fn


zeros = _creation(0)
ones = _creation(1)
empty = _creation(0)


def full(g, size, fill_value, **kwargs):
    return _fill(g, list(size), fill_value)


def _like(value):
    def fn(g, x, *args, **kwargs):
        v = kwargs.get("fill_value", args[0] if args and value is None else value)
        return g.op("ConstantOfShape", g.shape_of(x), value=g.value_attr(v, g.out_dtype),
                    dtype=g.out_dtype)
    return fn


zeros_like = _like(0)
ones_like = _like(1)
full_like = _like(None)


def _new(value):
    def fn(g, self, *size, **kwargs):
        return _fill(g, _shape_args(size), value)
    return fn


new_zeros = _new(0)
new_ones = _new(1)


def new_full(g, self, size, fill_value, **kwargs):
    return _fill(g, list(size), fill_value)


def arange(g, start, end=None, step=1, **kwargs):
    if end is None:
        start, end = 0, start
    dt = g.out_dtype
    return g.op("Range", g.scalar(start, dt), g.scalar(end, dt), g.scalar(step, dt), dtype=dt)


# ---- composites (recorded whole by ember.export; a plain trace sees their decompositions) -
def softmax(g, x, dim, dtype=None, _stacklevel=3):
    return g.op("Softmax", g.cast(x, g.out_dtype), axis=dim % max(x.rank, 1))


def log_softmax(g, x, dim, dtype=None, _stacklevel=3):
    return g.op("LogSoftmax", g.cast(x, g.out_dtype), axis=dim % max(x.rank, 1))


def gelu(g, x, approximate="none"):
    if g.opset >= 20:
        return g.op("Gelu", x, approximate=approximate)
    half = g.op("Mul", x, g.scalar(0.5, x.dtype))
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, g.scalar(0.044715, x.dtype)))
        t = g.op("Tanh", g.op("Mul", inner, g.scalar(math.sqrt(2 / math.pi), x.dtype)))
    else:
        t = g.op("Erf", g.op("Mul", x, g.scalar(1 / math.sqrt(2), x.dtype)))
    return g.op("Mul", half, g.op("Add", t, g.scalar(1.0, x.dtype)))


def layer_norm(g, x, normalized_shape, weight=None, bias=None, eps=1e-05):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if weight is None:
        import numpy as np
        weight = g.const(np.ones(shape, dtype=x.dtype))
    return g.op("LayerNormalization", x, weight, bias, axis=-len(shape), epsilon=float(eps))


def rms_norm(g, x, normalized_shape, weight=None, eps=None):
    import numpy as np
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    eps = float(np.finfo(x.dtype).eps) if eps is None else eps
    dims = list(range(x.rank - n, x.rank))
    ms = g.reduce("ReduceMean", g.op("Mul", x, x), dims, True)
    r = g.op("Mul", x, g.op("Reciprocal", g.op("Sqrt", g.op("Add", ms, g.scalar(eps, x.dtype)))))
    return r if weight is None else g.op("Mul", r, weight)


def embedding(g, input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        _unsupported("embedding with max_norm (it renormalizes the weight in place)")
    return g.op("Gather", weight, g.cast(input, "int64"), axis=0)


def scaled_dot_product_attention(g, query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    if enable_gqa:
        _unsupported("scaled_dot_product_attention(enable_gqa=True)")
    dt = query.dtype
    e = query.shape[-1]
    if scale is None:
        if e is None:
            _unsupported("attention with a dynamic head size")
        scale = 1.0 / math.sqrt(e)
    perm = list(range(key.rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    scores = g.op("Mul", g.op("MatMul", query, g.op("Transpose", key, perm=perm)),
                  g.scalar(scale, dt))
    neg = g.scalar(float("-inf"), dt)
    if is_causal:
        size = [g.size(query, -2), g.size(key, -2)]
        ones = g.op("ConstantOfShape", g.ints(size), value=g.value_attr(1, "bool"),
                    dtype="bool")
        lower = g.op("Trilu", g.cast(ones, "int32"), g.scalar(0, "int64"), upper=0)
        scores = g.op("Where", g.cast(lower, "bool"), scores, neg)
    if attn_mask is not None:
        if attn_mask.dtype == "bool":
            scores = g.op("Where", attn_mask, scores, neg)
        else:
            scores = g.op("Add", scores, g.cast(attn_mask, dt))
    return g.op("MatMul", g.op("Softmax", scores, axis=-1), value)



# the view/shape/indexing mappings live next door (one file stays readable)
from .onnx_rules_shape import (  # noqa: E402,F401
    reshape, reshape_as, flatten, unflatten, permute, transpose, t, T, mT, movedim, unsqueeze,
    squeeze, expand, expand_as, narrow, select, split, chunk, unbind, identity, getitem,
    repeat, flip, cat, stack, index_select, gather, tril, triu)
