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


def dtype_checked(op, fn):
    """`fn` refusing, as torch does, a first tensor argument whose dtype `op.dtypes` lacks."""
    allowed = op.dtypes
    kernel = op.dtype_kernel or op.name + "_cpu"

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        t = _first_tensor(args, kwargs)
        if t is not None and t.dtype not in allowed:
            raise not_implemented(kernel, t.dtype)
        return fn(*args, **kwargs)
    return checked


def check_dtype(op, t):
    """torch's NotImplementedError when tensor `t`'s dtype is not among `op.dtypes`; for the
    choice functions of composite ops (ops/nn_ops.py), which callers reach directly."""
    if isinstance(t, Tensor) and t.dtype not in op.dtypes:
        raise not_implemented(op.dtype_kernel or op.name + "_cpu", t.dtype)
