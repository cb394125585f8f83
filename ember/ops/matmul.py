"""The matmul family: matmul, mm, bmm, mv, dot, vdot, outer, addmm, addmv, addbmm, baddbmm
and linear. The recording helpers EXTERN ops share (`record_fn`, `finish`, `kernel_array`)
are ops/record.py's, imported here too.

Every kernel calls BLAS (np.matmul) on whole batches, never a Python loop over batch
elements. Derivatives are written with ember ops, so they can be differentiated again. Ops
with several tensor inputs or outputs (einsum, the decompositions in ember/linalg.py) use
`record_fn`: a node whose backward is a Python function of ember ops.
"""
import math
import weakref

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import strides as S
from ..core import dtype as D
from ..core.tensor import Tensor
from .. import dispatch
from ..dispatch import wrap, torch_name, call_mode
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, EXTERN, LOWER_PRECISION, MULTILINEAR, register, register_each
from ..autograd.derivative import Derivative
from .native_pointwise import stacked_outer as _stacked_outer
from .dtype_support import ALL_BUT_BOOL
from ..core.meta import MetaData
from . import meta_rules as M
from .registry import OPS
from . import batch_rules as _br
from .record import LOWP, FnNode, record_fn, finish, _out, kernel_array  # noqa: F401


# ---- matmul family ------------------------------------------------------------------------
def _plain_mm(g, t):
    """True when a matrix-product gradient may be one np.matmul: float matrices of g's dtype,
    and nothing that `g @ t.mT` would do besides (record a graph, call a mode, autocast)."""
    return (g.dtype is t.dtype and g.dtype in _FAST_MATMUL and not state.enabled
            and not state.modes and not state.autocast_enabled)


def _mm_self_grad(g, self, other):
    sd, od = self._data.ndim, other._data.ndim
    if sd > 1 and od > 1:
        if _plain_mm(g, other):
            return wrap(_matmul_arrays(g._data, other._data.swapaxes(-1, -2)), g.dtype)
        return g @ other.mT
    if sd == 1 and od == 1:
        return g * other
    if sd == 1:
        return (g.unsqueeze(-2) @ other.mT).squeeze(-2)
    return g.unsqueeze(-1) * other


def _mm_other_grad(g, self, other):
    sd, od = self._data.ndim, other._data.ndim
    if sd > 2 and od == 2 and not state.modes:
        # a batched input times a matrix (x @ W): the batch is folded into the reduction, one
        # GEMM (k, B*T) @ (B*T, n), not B GEMMs whose (B, k, n) result the engine then sums:
        # 1.7 -> 1.3 ms for (16, 64, 128) @ (128, 512), 3.7 -> 1.5 ms when x is a
        # transposed view (its reshape copies once). Not the other way round (2-d @ batched):
        # there both operands would need a transposed copy, which costs more than it saves.
        # Not under a mode (vmap's physical dims are not the logical ones)
        # the rows spelt out: reshape(-1, 0) cannot infer them
        rows, k, n = math.prod(g._data.shape[:-1]), self._data.shape[-1], g._data.shape[-1]
        if _plain_mm(g, self):
            return wrap(_matmul_arrays(self._data.reshape(rows, k).T,
                                       g._data.reshape(rows, n)), g.dtype)
        return self.reshape(rows, k).mT @ g.reshape(rows, n)
    if sd > 1 and od > 1:
        if _plain_mm(g, self):
            return wrap(_matmul_arrays(self._data.swapaxes(-1, -2), g._data), g.dtype)
        return self.mT @ g
    if sd == 1 and od == 1:
        return g * self
    if sd == 1:
        return self.unsqueeze(-1) * g.unsqueeze(-2)
    return (self.mT @ g.unsqueeze(-1)).squeeze(-1)


_MM_GRADS = {"self": _mm_self_grad, "other": _mm_other_grad}
_MATMUL = OpDef("matmul", EXTERN, inputs=("self", "other"), grads=_MM_GRADS,
                node_name="MmBackward0", amp=LOWER_PRECISION, jvp=MULTILINEAR,
                onnx=_ox.matmul)
_BMM = Derivative("bmm", inputs=("self", "other"), grads=_MM_GRADS)
_MV = Derivative("mv", inputs=("self", "other"), grads=_MM_GRADS)
_DOT = Derivative("dot", inputs=("self", "other"), grads=_MM_GRADS)


def _product(op, input, other):
    """np.matmul on the operands, with PyTorch's dtype rule (same dtype, no bool)."""
    if input.dtype.name == "bool":
        raise NotImplementedError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    try:
        r = _matmul_arrays(kernel_array(input), kernel_array(other))
    except ValueError:
        _matmul_error(input._data, other._data)
        raise
    except MetaData:    # meta operands: the product's metadata, and its node
        return _meta_product(op, (input, other), M.matmul_shape(input, other, _matmul_error),
                             input.dtype)
    return finish(op, (input, other), r, input.dtype)


def _meta_product(op, args, shape, dt, attrs=None):
    """The meta result of a product (the cpu kernel's result is C-contiguous too)."""
    dispatch.check_meta_devices(args, {})
    res = M.result(shape, dt)
    if state.enabled and dt.is_floating_point and any(
            isinstance(a, Tensor) and a._requires_grad for a in args):
        graph.record(op, args, res, attrs or {})
    return res


_FAST_MATMUL = (D.float32, D.float64)


def _rows_fold(a):
    """True when `a`'s dims before the last merge into one without a copy (C-contiguous, or
    e.g. a slice of wider rows, qkv[..., :128]), so a.reshape(-1, k) is a view."""
    if a.flags.c_contiguous:
        return True
    d = [(n, s) for n, s in zip(a.shape[:-1], a.strides[:-1]) if n != 1]
    # (a.reshape is right either way: this only tells whether it would copy)
    return all(d[i][1] == d[i + 1][0] * d[i + 1][1] for i in range(len(d) - 1))


def _matmul_arrays(a, b):
    """np.matmul, with the batch dims of `a` folded into its rows when `b` is a matrix and
    that fold is a view: one BLAS call on (batch*n, k) instead of one per batch element
    (~25% faster for a (16, 64, 128) activation, ~11% for a slice of wider rows). Not when
    the fold would copy: that pays for some shapes and loses for others (a (16, 4, 64, 32)
    head view: 0.17 -> 0.24 ms)."""
    if a.ndim > 2 and b.ndim == 2 and a.size and a.shape[-1] == b.shape[0] and _rows_fold(a):
        return np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[1:])
    if a.ndim > 2 and a.shape[-1] == 1 and b.ndim > 2 and b.shape[-2] == 1:
        # stacked outer products (vmap(grad)'s per-sample weight gradients): a C loop, ~3x
        # NumPy's broadcast product, itself ~2x its stacked matmul at k == 1
        r = _stacked_outer(a, b)
        return np.multiply(a, b) if r is None else r
    return np.matmul(a, b)


def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rules for 1-D operands and broadcast batch dims.

    >>> (ember.ones(2, 3) @ ember.ones(3)).shape
    ember.Size([2])
    """
    # the mode check is made here (matmul._dispatches), so `a @ b` costs one call
    if state.modes:
        return call_mode(_MATMUL, matmul, (input, other), {} if out is None else {"out": out})
    if state.autocast_enabled:    # matmul._autocasts: _MATMUL.amp is applied here
        input, other = dispatch.autocast_args(_MATMUL, input, other)
    if (out is None and isinstance(input, Tensor) and isinstance(other, Tensor)
            and input.dtype is other.dtype and input.dtype in _FAST_MATMUL
            and input._data.ndim >= 2 and other._data.ndim >= 2):
        # the common case: float matrices (or batches), no out=, nothing to check first
        try:
            r = _matmul_arrays(input._data, other._data)
        except ValueError:
            _matmul_error(input._data, other._data)
            raise
        except MetaData:
            return _meta_product(_MATMUL, (input, other),
                                 M.matmul_shape(input, other, _matmul_error), input.dtype)
        res = wrap(r, input.dtype)
        if (input._requires_grad or other._requires_grad) and state.enabled:
            graph.record(_MATMUL, (input, other), res, {})
        return res
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        # a sparse operand (ember.sparse's classes, which ops may not import) brings its own
        # product: this lookup is off the dense path
        hook = getattr(type(other if isinstance(input, Tensor) else input), "_sparse_matmul",
                       None)
        if hook is not None:
            if out is not None:
                raise NotImplementedError("ember.sparse: out= with a sparse operand is not "
                                          "supported")
            return hook(input, other)
        raise TypeError("matmul(): argument 'other' must be Tensor")
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{D.CPP_NAMES[input.dtype.name]} != {D.CPP_NAMES[other.dtype.name]}")
    return _out(_product(_MATMUL, input, other), out)


def _matmul_error(a, b):
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1, a.shape[-1])
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a2.shape[0]}x"
                           f"{a2.shape[1]} and {b2.shape[-2]}x{b2.shape[-1]})")
    S.broadcast_shapes(a.shape[:-2], b.shape[:-2])


def mm(input, mat2, *, out=None):
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'self' if input.dim() != 2 else 'mat2'} must be a matrix")
    return matmul(input, mat2, out=out)


def _same_dtype_scalar(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {torch_name(a.dtype)} but found {torch_name(b.dtype)}")


def bmm(input, mat2, *, out=None):
    """Batched matrix product of (b, n, m) and (b, m, p) tensors (no broadcasting)."""
    for name, t in (("batch1", input), ("batch2", mat2)):
        if t.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    b, n, m = input.shape
    if tuple(mat2.shape[:2]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    if input.dtype is D.bool_:     # (torch's kernel has no bool loop: checked first)
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    _same_dtype_scalar(input, mat2)
    return _out(_product(_BMM, input, mat2), out)


def mv(input, vec, *, out=None):
    """Matrix (n, m) times vector (m,)."""
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.dim()}, "
                           f"{vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    _same_dtype_scalar(input, vec)
    return _out(_product(_MV, input, vec), out)


def _vec_check(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D "
                           "tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{torch_name(input.dtype)} and {torch_name(other.dtype)}")
    if input.dtype is D.bool_:
        raise NotImplementedError('"dot" not implemented for \'Bool\'')
    if input.shape[0] != other.shape[0]:
        _matmul_error(input._data, other._data)


def dot(input, tensor, *, out=None):
    """Inner product of two 1-D tensors of the same dtype."""
    _vec_check(input, tensor)
    return _out(_product(_DOT, input, tensor), out)


def vdot(input, other, *, out=None):
    """Inner product conjugating the first vector (the same as ``dot`` for real tensors)."""
    return dot(input, other, out=out)


def outer(input, vec2, *, out=None):
    """Outer product of two vectors (types promote, as ``a[:, None] * b``)."""
    if input.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.dim()}-D"
                           if input.dim() != 1 else
                           f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    return _out(input.unsqueeze(1) * vec2, out)


# ---- addmm, addmv, addbmm, baddbmm: beta * input + alpha * product ----------------------
def _add_prod_grads(name):
    def g_input(g, beta):
        return g * beta if beta != 1 else g

    def g_a(g, b, alpha):
        r = _bmm_grad_a(g, b, name)
        return r * alpha if alpha != 1 else r

    def g_b(g, a, alpha):
        r = _bmm_grad_b(g, a, name)
        return r * alpha if alpha != 1 else r
    return {"self": g_input, "a": g_a, "b": g_b}


def _bmm_grad_a(g, b, name):
    if name == "addmv":
        return g.unsqueeze(-1) * b
    if name == "addbmm":
        return g.unsqueeze(0) @ b.mT
    return g @ b.mT


def _bmm_grad_b(g, a, name):
    if name == "addmv":
        return a.mT @ g
    if name == "addbmm":
        return a.mT @ g.unsqueeze(0)
    return a.mT @ g


_ADD_OPS = {n: Derivative(n, inputs=("self", "a", "b"), attrs={"beta": 1, "alpha": 1},
                          grads=_add_prod_grads(n)) for n in ("addmm", "addmv", "addbmm", "baddbmm")}


def _add_product_dtype_error(name, input, a, b):
    # each of the four says it its own way in PyTorch
    if name == "addmv":
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{torch_name(input.dtype)}, {torch_name(a.dtype)}, and "
                           f"{torch_name(b.dtype)}")
    if name == "baddbmm":
        c = [D.CPP_NAMES[t.dtype.name] for t in (input, a, b)]
        raise RuntimeError(f"Input dtypes must be the same, got: input {c[0]}, batch1: {c[1]}, "
                           f"batch2: {c[2]}")
    first, what = (input, "self") if input.dtype is not b.dtype else (a, "mat1")
    raise RuntimeError(f"{what} and mat2 must have the same dtype, but got "
                       f"{torch_name(first.dtype)} and {torch_name(b.dtype)}")


def _add_product(name, input, a, b, beta, alpha, prod_shape, out):
    """Shared tail: dtype checks, the BLAS product, scale, add the broadcast input."""
    if input.dtype is not b.dtype or a.dtype is not b.dtype:
        _add_product_dtype_error(name, input, a, b)
    if a.dtype is D.bool_:
        raise NotImplementedError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    input.expand(prod_shape)   # raises PyTorch's message when input does not broadcast
    x, y = kernel_array(a), kernel_array(b)
    try:
        if name == "addbmm":   # sum_b a[b] @ b[b] as one GEMM: (n, b*m) @ (b*m, p)
            bt, n, m = x.shape
            p = np.matmul(x.transpose(1, 0, 2).reshape(n, bt * m), y.reshape(bt * m, -1))
        else:
            p = np.matmul(x, y)
        if alpha != 1:
            p = p * alpha
        if beta != 0:
            inp = kernel_array(input)
            p = p + (inp * beta if beta != 1 else inp)
    except MetaData:    # meta operands: the product's metadata, and its node
        return _out(_meta_product(_ADD_OPS[name], (input, a, b), prod_shape, input.dtype,
                                  {"beta": beta, "alpha": alpha}), out)
    p = np.broadcast_to(p, prod_shape)
    r = finish(_ADD_OPS[name], (input, a, b), np.ascontiguousarray(p), input.dtype,
               {"beta": beta, "alpha": alpha})
    return _out(r, out)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; input broadcasts to the product's shape."""
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {t.dim()}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        _matmul_error(mat1._data, mat2._data)
    return _add_product("addmm", input, mat1, mat2, beta, alpha,
                        (mat1.shape[0], mat2.shape[1]), out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    if mat.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, "
                           f"{mat.dim()}, {vec.dim()}")
    if mat.shape[1] != vec.shape[0] or input.numel() not in (1, mat.shape[0]):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.dim() else 1})"
                           f", mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    return _add_product("addmv", input, mat, vec, beta, alpha, (mat.shape[0],), out)


def _batch_checks(b1, b2):
    for name, t in (("batch1", b1), ("batch2", b2)):
        if t.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    _batch_checks(batch1, batch2)
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x"
                           f"{batch1.shape[2]} and {batch2.shape[1]}x{batch2.shape[2]})")
    return _add_product("addbmm", input, batch1, batch2, beta, alpha,
                        (batch1.shape[1], batch2.shape[2]), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    _batch_checks(batch1, batch2)
    b, n, m = batch1.shape
    if tuple(batch2.shape[:2]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {m}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")
    return _add_product("baddbmm", input, batch1, batch2, beta, alpha, (b, n, batch2.shape[2]),
                        out)


matmul._dispatches = matmul._autocasts = True
matmul = register(_MATMUL, matmul)


def _add_product_jvp(product):
    """Forward-mode rule of ``beta * input + alpha * product(a, b)`` (addmm and kin)."""
    def jvp(tan, result, input, a, b, *, beta=1, alpha=1, out=None):
        ti, ta, tb = tan(input), tan(a), tan(b)
        r = product(ta, b) if ta is not None else None
        if tb is not None:
            p = product(a, tb)
            r = p if r is None else r + p
        if r is not None and alpha != 1:
            r = r * alpha
        if ti is not None and beta != 0:
            ti = ti * beta if beta != 1 else ti
            r = ti.expand(result.shape).contiguous() if r is None else r + ti
        return r
    return jvp


mm = register(OpDef("mm", EXTERN, jvp=MULTILINEAR,
                    onnx=_ox.matmul), mm)
register_each(globals(), EXTERN, (mv, dot, vdot, outer), jvp=MULTILINEAR)
OPS["mv"].onnx = OPS["dot"].onnx = _ox.matmul
OPS["outer"].onnx = _ox.outer
addmv = register(OpDef("addmv", EXTERN, jvp=_add_product_jvp(lambda a, b: mv(a, b))), addmv)
# autocast runs these in its lower-precision dtype (registered behind OpDef.amp)
bmm = register(OpDef("bmm", EXTERN, amp=LOWER_PRECISION, jvp=MULTILINEAR,
                     onnx=_ox.matmul), bmm)
addmm = register(OpDef("addmm", EXTERN, amp=LOWER_PRECISION,
                       jvp=_add_product_jvp(lambda a, b: mm(a, b)),
                       onnx=_ox.addmm), addmm)
addbmm = register(OpDef("addbmm", EXTERN, amp=LOWER_PRECISION,
                        jvp=_add_product_jvp(lambda a, b: bmm(a, b).sum(0))), addbmm)
baddbmm = register(OpDef("baddbmm", EXTERN, amp=LOWER_PRECISION,
                         jvp=_add_product_jvp(lambda a, b: bmm(a, b)),
                         onnx=_ox.baddbmm), baddbmm)


# vmap batching rules (ember/ops/batch_rules.py): the batch is folded into the product's own
# batch dims, so a vmapped product is one BLAS call (or one batched one)
_MATMUL.batch = _br.matmul_batch
OPS["mm"].batch = _br.product_batch((2, 2), lambda x, y: f"{'self' if x != 2 else 'mat2'} "
                                    "must be a matrix")
OPS["mv"].batch = _br.product_batch((2, 1), lambda x, y: f"vector + matrix @ vector "
                                    f"expected, got 1, {x}, {y}")
OPS["dot"].batch = _br.product_batch((1, 1), lambda x, y: f"1D tensors expected, but got "
                                     f"{x}D and {y}D tensors")
OPS["bmm"].batch = _br.product_batch((3, 3), lambda x, y: f"batch{1 if x != 3 else 2} must "
                                     "be a 3D tensor")
OPS["outer"].batch = _br.decompose
OPS["addmm"].batch = _br.addmm_batch


# ---- linear: one op, so its weight gradient comes out in the weight's own layout ----------
def _linear_input_grad(g, weight):
    return g @ weight


def _linear_weight_grad(g, self):
    return g.reshape(-1, g.shape[-1]).mT @ self.reshape(-1, self.shape[-1])


def _linear_bias_grad(g):
    return g.reshape(-1, g.shape[-1]).sum(0)


def _linear_jvp(tan, result, input, weight, bias=None):
    ti, tw, tb = tan(input), tan(weight), tan(bias)
    r = linear(ti, weight) if ti is not None else None
    if tw is not None:
        p = linear(input, tw)
        r = p if r is None else r + p
    if tb is not None:
        r = tb.expand(result.shape).contiguous() if r is None else r + tb
    return r


_LINEAR = OpDef("linear", EXTERN, inputs=("self", "weight", "bias"),
                dtypes=ALL_BUT_BOOL, dtype_kernel="addmm_impl_cpu_",
                grads={"self": _linear_input_grad, "weight": _linear_weight_grad,
                       "bias": _linear_bias_grad}, node_name="AddmmBackward0", jvp=_linear_jvp,
                amp=LOWER_PRECISION, function=False, method=False,
                onnx=_ox.linear)


# OpenBLAS multiplies a few rows by a transposed weight 1.3-4x slower than by a contiguous
# one (8 x 128 @ 128 x 512: 44 vs 12 us), the shape of every step of token-by-token
# generation. So for up to _FEW_ROWS rows, outside training, linear uses a contiguous copy
# of weight.T, made once per weight and kept (weakly, beside its storage) until the weight
# changes (its version counter moves).
_FEW_ROWS = 128
_WEIGHT_T = weakref.WeakKeyDictionary()   # Storage -> (version, array, layout, weight.T copy)


def _weight_t(weight, w, a):
    if a.ndim == 0 or a.size > _FEW_ROWS * a.shape[-1] or w.dtype.kind != "f" or \
            (state.enabled and weight._requires_grad) or type(w) is M.MetaArray:
        return w.T
    st = weight._storage_obj()
    hit = _WEIGHT_T.get(st)
    if hit is not None and hit[0] == st.version and hit[1] is w:     # the usual: same array
        return hit[3]
    key = (w.__array_interface__["data"][0], w.shape, w.strides)
    if hit is not None and hit[0] == st.version and hit[2] == key:
        return hit[3]
    wt = np.ascontiguousarray(w.T)
    _WEIGHT_T[st] = (st.version, w, key, wt)
    return wt


def _linear_dtype_error(input, weight, bias):
    # PyTorch's checks, in its order: without bias it is matmul's; with one, addmm(bias,
    # input, weight.T) compares bias with weight ("self and mat2"), then input with weight
    if bias is None:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{D.CPP_NAMES[input.dtype.name]} != {D.CPP_NAMES[weight.dtype.name]}")
    _add_product_dtype_error("addmm", bias, input, weight)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` as one BLAS call; the backward gives ``weight.grad``
    contiguous like ``weight`` (no transposed copy to fix up at accumulation)."""
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        _linear_dtype_error(input, weight, bias)
    if input.dim() == 0 or weight.dim() != 2:
        return _product(_MATMUL, input, weight.t()) if bias is None else \
            _product(_MATMUL, input, weight.t()) + bias
    a, w = kernel_array(input), kernel_array(weight)
    if a.shape[-1] != w.shape[1]:
        _matmul_error(a, w.T)
    try:
        r = _matmul_arrays(a, _weight_t(weight, w, a))
    except MetaData:
        args = (input, weight, bias)
        if bias is not None:
            S.broadcast_shapes(tuple(bias.shape), a.shape[:-1] + (w.shape[0],))
        return _meta_product(_LINEAR, args, a.shape[:-1] + (w.shape[0],), input.dtype)
    if bias is not None:
        r += kernel_array(bias)
    args = (input, weight, bias)
    return finish(_LINEAR, args, r, input.dtype)


_LINEAR.batch = _br.linear_batch      # vmap (ember/ops/batch_rules.py)
# not a public ember function (torch has none either: F.linear calls it), but an op all
# the same: a compiler trace records it as one call; autocast runs it in the lower precision
linear = register(_LINEAR, linear)
