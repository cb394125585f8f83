"""Which dtypes an op's cpu kernel implements: the `dtypes=` field of an OpDef.

torch's kernels are compiled for a fixed list of dtypes each (its dispatch tables), and a
tensor of any other dtype gets ``NotImplementedError: "gelu_cpu" not implemented for
'Long'`` before anything runs. ember's NumPy code would often compute something anyway
(softmax of integers, a convolution of bools), so an op declares the dtypes its first
tensor argument may have, and `register` wraps the published function in `dtype_checked`,
which raises torch's error for the rest. `dtype_kernel=` names the kernel as torch's
message does ("GeluKernelImpl"); the default is "<name>_cpu". An op without `dtypes`
accepts whatever its own code accepts. tests/opinfo/test_generated_dtypes.py checks every
declaration, and every op with samples, against torch for every dtype.

    gelu = composite("gelu", gelu, _gelu_decomp, dtypes=FLOATING, dtype_kernel="GeluKernelImpl")
"""
import functools

from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import not_implemented

FLOATING = frozenset({D.float16, D.bfloat16, D.float32, D.float64})
COMPLEX = frozenset({D.complex64, D.complex128})
INTEGRAL = frozenset({D.uint8, D.int8, D.int16, D.int32, D.int64})
FLOAT32_64 = frozenset({D.float32, D.float64})
INT64 = frozenset({D.int64})
ALL = FLOATING | COMPLEX | INTEGRAL | {D.bool_}
ALL_BUT_BOOL = ALL - {D.bool_}
ALL_BUT_COMPLEX = ALL - COMPLEX
# the special functions of torch.special with their own cpu loops: no Half, no BFloat16,
# no complex (integers and bool are promoted to the default float first)
REAL_NO_HALF = FLOAT32_64 | INTEGRAL | {D.bool_}


def _first_tensor(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, (list, tuple)):     # einsum's operands, given as a list
            for b in a:
                if isinstance(b, Tensor):
                    return b
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return a
    return None


def _kernel_name(op):
    return op.dtype_kernel or op.name + "_cpu"


def _tensors(args, kwargs):
    return [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]


def _kernel_dtype(how, args, kwargs):
    """The dtype torch's kernel would be chosen by, or None (no check): "first", the first
    tensor argument's; "promoted", the promoted dtype of all tensor arguments (losses that
    promote input and target first); "matching", the common dtype when every tensor
    argument has it (otherwise the op's own dtype-mismatch error comes first, as in torch)."""
    if how == "first":
        t = _first_tensor(args, kwargs)
        return None if t is None else t.dtype
    ts = _tensors(args, kwargs)
    if not ts:
        return None
    if how == "matching":
        dt = ts[0].dtype
        return dt if all(t.dtype is dt for t in ts) else None
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = D.promote_types(dt, t.dtype)
    return dt


def dtype_checked(op, fn):
    """`fn` refusing, as torch does, a call whose kernel dtype (`op.dtypes_of`: see
    _kernel_dtype) `op.dtypes` lacks."""
    allowed, how, kernel = op.dtypes, op.dtypes_of, _kernel_name(op)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        dt = _kernel_dtype(how, args, kwargs)
        if dt is not None and dt not in allowed:
            raise not_implemented(kernel, dt)
        return fn(*args, **kwargs)
    return checked


def check_dtype(op, t):
    """torch's NotImplementedError when tensor `t`'s dtype is not among `op.dtypes`; for the
    choice functions of composite ops (ops/nn_ops.py), which callers reach directly."""
    if isinstance(t, Tensor) and t.dtype not in op.dtypes:
        raise not_implemented(_kernel_name(op), t.dtype)
