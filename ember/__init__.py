"""ember: a tensor computation system with PyTorch's programming model, written in Python.

    import ember as torch
    x = torch.randn(3, requires_grad=True)
    (x * x).sum().backward()

This module is the public, torch-like namespace. The functions and Tensor methods come from
the op registry (ember/ops/registry.py), which defines each op once.
"""
from .version import __version__  # noqa: F401

import os as _os

import numpy as _np

# PyTorch never warns about inf/NaN arising in arithmetic, and wrapping every kernel in
# np.errstate costs more than the kernel itself on small tensors. So ember turns NumPy's
# floating-point warnings off (for the importing thread's context), unless asked not to.
if _os.environ.get("EMBER_NUMPY_WARNINGS") != "1":
    _np.seterr(all="ignore")

from .core.allocator import tune_malloc as _tune_malloc
_tune_malloc()        # big temporaries reuse freed heap memory (see core/allocator.py)

from .core import dtype as _dtype_mod
from .core.dtype import (dtype, bool_ as bool, uint8, int8, int16, int32, int64,  # noqa: F401
                         float16, bfloat16, float32, float64, finfo, iinfo, promote_types,
                         complex64, complex128,
                         can_cast as _can_cast, get_default_dtype, set_default_dtype)
from .core.device import device, set_default_device, get_default_device  # noqa: F401
from .core.tensor import Tensor, Size, is_tensor  # noqa: F401
from .core.tensor import (memory_format, contiguous_format, preserve_format,  # noqa: F401
                          channels_last, channels_last_3d)
from .core.storage import Storage as UntypedStorage  # noqa: F401
from .core.tensor import layout  # noqa: F401  (the class of ember.strided, ember.sparse_coo)
from .core.typed_storage import *  # noqa: F401,F403  (TypedStorage, FloatStorage, ...)
from .core.printing import set_printoptions, get_printoptions  # noqa: F401
from .autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled,  # noqa: F401
                                 inference_mode, is_grad_enabled, is_inference_mode_enabled)
from . import ops as _ops
from . import linalg  # noqa: F401,E402  (ember.linalg; also registers inverse, det, svd...)
from . import fft  # noqa: F401,E402  (ember.fft: torch.fft's transforms)
from .ops import registry as _registry
from .ops.random import Generator, default_generator  # noqa: F401
from . import cuda  # noqa: F401
from . import random  # noqa: F401,E402  (ember.random: torch.random's namespace, fork_rng)
from . import cpu  # noqa: F401  (ember.cpu: torch.cpu's device-agnostic helpers)
from . import backends  # noqa: F401,E402
from .backends import set_float32_matmul_precision, get_float32_matmul_precision  # noqa: F401,E402

half = float16
float = float32
double = float64
long = int64
int = int32
short = int16
uint8 = uint8
cfloat = complex64
cdouble = complex128

# ---- install the registry's functions and Tensor methods ----
_registry.install_methods(Tensor)
globals().update(_registry.FUNCTIONS)
from . import special  # noqa: E402,F401  (ember.special: torch.special's namespace)
from . import testing  # noqa: E402,F401  (ember.testing: assert_close, make_tensor)

from .ops.view import T as _T, mT as _mT  # noqa: E402
from .dispatch import with_mode_seam as _seam  # noqa: E402
# the transposing properties pass the mode seam like every other op
_T = property(_seam(_registry.op_for("T"), _T.fget))
_mT = property(_seam(_registry.op_for("mT"), _mT.fget))
Tensor.T = _T
Tensor.mT = _mT
from .ops import complex_ops as _complex_ops  # noqa: E402
# x.real / x.imag are assignable views; x.H / x.mH conjugate complex tensors
Tensor.real = property(_seam(_registry.op_for("real"), _complex_ops.REAL_PROPERTY.fget),
                       _complex_ops.REAL_PROPERTY.fset)
Tensor.imag = property(_seam(_registry.op_for("imag"), _complex_ops.IMAG_PROPERTY.fget),
                       _complex_ops.IMAG_PROPERTY.fset)
Tensor.H = property(_seam(_registry.op_for("adjoint"), _complex_ops.H_PROPERTY.fget))
Tensor.mH = property(_seam(_registry.op_for("adjoint"), _complex_ops.MH_PROPERTY.fget))


def _install_operators():
    F = _registry.FUNCTIONS
    M = _registry.METHODS
    add, sub, mul, div, pow_ = F["add"], F["sub"], F["mul"], F["div"], F["pow"]
    floor_divide, remainder, matmul = F["floor_divide"], F["remainder"], F["matmul"]

    def reflected(fn):
        return lambda self, other: fn(other, self)

    def comparison(fn):
        def cmp(self, other):
            if other is None or not _is_operand(other):
                return NotImplemented
            return fn(self, other)
        return cmp

    ops = {
        "__add__": add, "__radd__": reflected(add), "__iadd__": M["add_"],
        "__sub__": sub, "__rsub__": reflected(sub), "__isub__": M["sub_"],
        "__mul__": mul, "__rmul__": reflected(mul), "__imul__": M["mul_"],
        "__truediv__": div, "__rtruediv__": reflected(div), "__itruediv__": M["div_"],
        "__floordiv__": floor_divide, "__rfloordiv__": reflected(floor_divide),
        "__ifloordiv__": M["floor_divide_"],
        "__mod__": remainder, "__rmod__": reflected(remainder), "__imod__": M["remainder_"],
        "__pow__": pow_, "__rpow__": reflected(pow_), "__ipow__": M["pow_"],
        "__matmul__": matmul, "__rmatmul__": reflected(matmul),
        "__and__": F["bitwise_and"], "__rand__": reflected(F["bitwise_and"]),
        "__iand__": M["bitwise_and_"],
        "__or__": F["bitwise_or"], "__ror__": reflected(F["bitwise_or"]),
        "__ior__": M["bitwise_or_"],
        "__xor__": F["bitwise_xor"], "__rxor__": reflected(F["bitwise_xor"]),
        "__ixor__": M["bitwise_xor_"],
        "__lshift__": F["bitwise_left_shift"], "__rlshift__": reflected(F["bitwise_left_shift"]),
        "__ilshift__": M["bitwise_left_shift_"],
        "__rshift__": F["bitwise_right_shift"],
        "__rrshift__": reflected(F["bitwise_right_shift"]),
        "__irshift__": M["bitwise_right_shift_"],
        "__invert__": F["_invert"], "__neg__": F["neg"], "__abs__": F["abs"],
        "__pos__": F["positive"],
        "__eq__": comparison(F["eq"]), "__ne__": comparison(F["ne"]),
        "__lt__": comparison(F["lt"]), "__le__": comparison(F["le"]),
        "__gt__": comparison(F["gt"]), "__ge__": comparison(F["ge"]),
    }
    for name, fn in ops.items():
        setattr(Tensor, name, fn)
    Tensor.__hash__ = lambda self: id(self)


def _is_operand(x):
    import numbers
    import numpy as np
    return isinstance(x, (Tensor, numbers.Number, np.generic))


_install_operators()


def result_type(tensor1, tensor2):
    """The dtype an op on these two operands would produce (PyTorch's promotion)."""
    from .dispatch import operand
    metas = [(d, c) for _, d, c in (operand(tensor1), operand(tensor2))]
    return _dtype_mod.result_type_of(metas)


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow `from_` -> `to` (no float->int, no ->bool)."""
    return _can_cast(from_, to)


def is_floating_point(input):
    return input.dtype.is_floating_point


def is_nonzero(input):
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins_bool(input)


def numel(input):
    return input.numel()


def broadcast_shapes(*shapes):
    """The shape that `shapes` broadcast to (torch.broadcast_shapes)."""
    from .core.strides import broadcast_shapes as _b
    shapes = [(s,) if isinstance(s, builtins_int) else tuple(s) for s in shapes]
    for s in shapes:   # (`any` here is ember.any)
        for d in s:
            if d < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
    return Size(_b(*shapes))


import builtins as _builtins  # noqa: E402
builtins_bool = _builtins.bool
builtins_int = _builtins.int


def _legacy(dt):
    class _LegacyMeta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, Tensor) and obj.dtype is dt

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and isinstance(args[0], Tensor):  # shares memory, like torch's
            if args[0].dtype is not dt:
                raise TypeError(f"expected {dt} (got {args[0].dtype})")
            return args[0].detach()
        if len(args) == 1 and not isinstance(args[0], builtins_int):
            return tensor(args[0], dtype=dt)
        return zeros(*args, dtype=dt)
    return _LegacyMeta(f"{dt.name.capitalize()}Tensor", (), {"__new__": __new__, "dtype": dt})


FloatTensor = _legacy(float32)
DoubleTensor = _legacy(float64)
HalfTensor = _legacy(float16)
BFloat16Tensor = _legacy(bfloat16)
LongTensor = _legacy(int64)
IntTensor = _legacy(int32)
ShortTensor = _legacy(int16)
CharTensor = _legacy(int8)
ByteTensor = _legacy(uint8)
BoolTensor = _legacy(bool)


def use_deterministic_algorithms(mode, *, warn_only=False):
    """ember's CPU kernels are deterministic; the flag is recorded for ops that consult it."""
    global _deterministic
    _deterministic = builtins_bool(mode)


def are_deterministic_algorithms_enabled():
    return _deterministic


_deterministic = False



from .ops import foreach as _foreach  # noqa: E402  (torch._foreach_add_ ... for optimizers)
globals().update({_n: getattr(_foreach, _n) for _n in _foreach.__all__})
from . import autograd  # noqa: E402,F401
from .autograd import tensor_methods as _tm  # noqa: E402
_tm.install(Tensor)
from . import nn  # noqa: E402,F401
from . import toplevel_forms as _forms  # noqa: E402  (torch.conv2d, torch.relu_, ...)
from .toplevel_forms import *  # noqa: E402,F401,F403
from .toplevel_misc import *  # noqa: E402,F401,F403  (settings, asarray, gradient, cond...)
Tensor.hardshrink = _forms.hardshrink
Tensor.prelu = _forms.prelu
from . import utils  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import distributions  # noqa: E402,F401
from . import library  # noqa: E402,F401  (custom ops: ember.library.custom_op)
from . import amp  # noqa: E402,F401
from .amp import (autocast, is_autocast_enabled, get_autocast_dtype, set_autocast_enabled,  # noqa: E402,F401
                  set_autocast_dtype, is_autocast_cpu_enabled, get_autocast_cpu_dtype,
                  is_autocast_cache_enabled, clear_autocast_cache)
from .autograd import is_anomaly_enabled, set_detect_anomaly  # noqa: E402,F401

from . import profiler  # noqa: E402,F401
# torch.profiler re-exports the optimizers' global step hook; ember.profiler's layer sits
# below optim's, so the top namespace hands it over
profiler.register_optimizer_step_post_hook = optim.register_optimizer_step_post_hook
from . import memory  # noqa: E402,F401
from . import func  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401
from . import compiler  # noqa: E402,F401
from . import futures  # noqa: E402,F401  (ember.futures.Future: torch.futures')
from . import distributed  # noqa: E402,F401  (loads no MPI until init_process_group)
from . import onnx  # noqa: E402,F401  (imports the onnx package only in export/load)
from .nn import parallel as _nn_parallel  # noqa: E402,F401  (ember.nn.parallel: DDP)
from .compiler import compile  # noqa: E402,F401
from . import export  # noqa: E402,F401  (ember.export: programs that run without the source)
from . import jit  # noqa: E402,F401  (ember.jit: TorchScript's API over ember.export)
from .compiler.threads import (set_num_threads, get_num_threads,  # noqa: F401,E402
                               set_num_interop_threads, get_num_interop_threads)

from . import sparse  # noqa: E402,F401  (ember.sparse: COO and 2-D CSR sparse tensors)
from .sparse import (sparse_coo_tensor, sparse_csr_tensor, spmm,  # noqa: E402,F401
                     sparse_coo, sparse_csr, strided)
from .core.tensor import sparse_csc, sparse_bsr, sparse_bsc  # noqa: E402,F401
# ember.sparse sits above the ops, so Tensor gets its to_sparse here (is_sparse and
# is_sparse_csr are ops/tensor_glue's False flags, layout core's property)
Tensor.to_sparse = Tensor.to_sparse_coo = sparse.to_sparse
Tensor.to_sparse_csr = sparse.to_sparse_csr
