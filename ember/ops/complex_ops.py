"""Complex numbers: the parts of a complex tensor as views (`real`, `imag`, `view_as_real`,
`view_as_complex`), building complex tensors (`complex`, `polar`), the conjugate (`conj`,
`conj_physical`, `resolve_conj`, `is_conj`), `angle`, `isreal`, `adjoint` and the `H`/`mH`
properties.

Views share memory exactly as torch's do: `x.real` of a complex64 tensor is a float32 view
with doubled strides, `view_as_real` adds a trailing dim of size 2 with stride 1. `conj()` is
eager (a copy, torch's is a lazy view with a conjugate bit): its result still answers
``is_conj()`` True, as torch's does, and `resolve_conj`/`conj_physical` give plain tensors.

Derivatives follow torch's convention (conjugate Wirtinger): for a real loss L of
z = x + iy, ``z.grad`` is dL/dx + i dL/dy. The ops here are not holomorphic, so their
formulas are written in that convention directly (``holomorphic=False`` on their OpDefs).

    >>> z = ember.tensor([1 + 2j, 3 - 1j])
    >>> z.real, ember.view_as_real(z).shape
    (tensor([1., 3.]), ember.Size([2, 2]))
"""
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core import dtype as D
from ..core.tensor import make_view
from ..dispatch import wrap, torch_name, not_implemented
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, OPS, VIEW, POINTWISE, register, METHODS, FUNCTIONS
from ..autograd.derivative import Derivative
from .pointwise import defpw, _unary
from . import batch_rules as _br
from . import meta_rules as _M
from ..core.meta import MetaData, is_meta_array, meta_array


# ---- views of the parts ------------------------------------------------------------------
def _part_view(op, self, arr, dtype):
    """`arr` (a backend view of self's memory) as a tensor of `dtype`, with op's node."""
    out = make_view(self, arr)
    out.dtype = dtype
    if self._requires_grad and state.enabled:
        graph.record(op, (self,), out, {})
    return out


# the gradient of a part is a complex tensor: g where the part lives, 0 elsewhere. The real
# gradient of `real` is made complex by the engine (it casts to the input's dtype).
_REAL = Derivative("real", grads={"self": lambda g: g}, holomorphic=False)
_IMAG = Derivative("imag", grads={"self": lambda g: g * 1j}, holomorphic=False)
_VIEW_AS_REAL = Derivative("view_as_real", holomorphic=False,
                           grads={"self": lambda g: view_as_complex(g.contiguous())})
_VIEW_AS_COMPLEX = Derivative("view_as_complex", holomorphic=False,
                              grads={"self": lambda g: view_as_real(g.resolve_conj())})


def real(input):
    """The real part: a view sharing memory (``x.real``); a real tensor is returned as is.

    >>> ember.tensor([1 + 2j]).real
    tensor([1.])
    """
    if not input.dtype.is_complex:
        return input
    return _part_view(_REAL, input, input._data.real, input.dtype.to_real())


def imag(input):
    """The imaginary part: a view sharing memory (``x.imag``); complex tensors only.

    >>> ember.tensor([1 + 2j]).imag
    tensor([2.])
    """
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part_view(_IMAG, input, input._data.imag, input.dtype.to_real())


def view_as_real(input):
    """A complex tensor's memory seen as real pairs: shape (..., 2), sharing memory.

    >>> ember.view_as_real(ember.tensor([1 + 2j]))
    tensor([[1., 2.]])
    """
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if getattr(input, "_conj", False):
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj(); however, be warned that the resulting tensor "
                           "will NOT alias the original.")
    a = input._data
    re = a.real
    # (subok: a meta input's view stays a MetaArray)
    arr = as_strided(re, a.shape + (2,), re.strides + (re.itemsize,), subok=True)
    return _part_view(_VIEW_AS_REAL, input, arr, input.dtype.to_real())


def view_as_complex(input):
    """Real pairs (a last dim of size 2, stride 1) seen as complex numbers, sharing memory.

    >>> ember.view_as_complex(ember.tensor([[1., 2.]]))
    tensor([1.+2.j])
    """
    dt = input.dtype
    if dt not in (D.float32, D.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {torch_name(dt)}"
                           + (" (ember has no complex32)" if dt is D.float16 else ""))
    a = input._data
    if a.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    st = input.stride()
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in st[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    cdt = dt.to_complex()
    arr = a.view(cdt.np)[..., 0]      # NumPy allows it: the last dim is contiguous
    return _part_view(_VIEW_AS_COMPLEX, input, arr, cdt)


def _set_part(part):
    def setter(self, value):
        target = part(self)
        target.copy_(value)
    return setter


# (vmap: each acts per element or on the trailing dim, so the op on the batch is the rule)
real = register(OpDef("real", VIEW, method=False, holomorphic=False, batch=_br.direct), real)
imag = register(OpDef("imag", VIEW, method=False, holomorphic=False, batch=_br.direct), imag)
view_as_real = register(OpDef("view_as_real", VIEW, method=False, holomorphic=False,
                              batch=_br.direct), view_as_real)
def _view_as_complex_batch(v, args, kwargs):
    # the batch dim moved to the front may leave the pairs non-contiguous: lay them out
    x = args[0]
    if v.is_batched(x) and (x.stride(-1) != 1 or any(s % 2 for s in x.stride()[:-1])):
        x = v.mark(x.contiguous())
    return v.call(x, *args[1:], **kwargs)


view_as_complex = register(OpDef("view_as_complex", VIEW, method=False, holomorphic=False,
                                 batch=_view_as_complex_batch), view_as_complex)
# `x.real` / `x.imag` are properties, assignable (``x.real = y`` copies y into the part)
REAL_PROPERTY = property(real, _set_part(real))
IMAG_PROPERTY = property(imag, _set_part(imag))


# ---- complex(real, imag), polar(abs, angle) ------------------------------------------------
def _parts_check(what):
    def precheck(values, metas, dt, attrs):
        (d0, _), (d1, _) = metas
        if d0 not in (D.float16, D.float32, D.float64) or d1 not in (D.float16, D.float32,
                                                                        D.float64):
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but "
                               f"got {torch_name(d0)} and {torch_name(d1)}")
        if d0 is not d1:
            raise RuntimeError(f"Expected object of scalar type {torch_name(d0)} but got scalar "
                               f"type {torch_name(d1)} for second argument")
        if d0 is D.float16 and what == "polar":     # (torch: no Half kernel)
            raise not_implemented("polar_cpu", d0)
        if d0 is D.float16:
            raise TypeError(f"{what}: ember has no complex32 (chalf) dtype")
    return precheck


def _to_complex_rule(dt, name):
    if dt not in (D.float32, D.float64):    # (the precheck gives torch's messages first)
        raise RuntimeError(f"{name}: expected Float or Double tensors")
    return dt, dt.to_complex()


def _complex_kernel(xp, re, im):
    if is_meta_array(re) or is_meta_array(im):    # (out.real = re would read the mapping)
        raise MetaData("complex() of meta tensors")
    shape = np.broadcast_shapes(np.shape(re), np.shape(im))
    out = np.empty(shape, np.result_type(re, im, np.complex64))
    out.real, out.imag = re, im      # no 0 * inf = nan from re + 1j * im
    return out


def _polar_kernel(xp, r, theta):
    return _complex_kernel(xp, r * np.cos(theta), r * np.sin(theta))


complex_ = defpw("complex", None, _complex_kernel, inputs=("real", "imag"), inplace=False,
                method=False, tensor_only=True, rule=_to_complex_rule,
                precheck=_parts_check("complex"), holomorphic=False,
                grads={"real": lambda g: g.real, "imag": lambda g: g.imag})
polar = defpw("polar", None, _polar_kernel, inputs=("abs", "angle"), inplace=False,
              method=False, tensor_only=True, rule=_to_complex_rule, errstate=True,
              precheck=_parts_check("polar"), holomorphic=False,
              grads={"abs": lambda g, result: (g.conj() * result.sgn()).real,
                     "angle": lambda g, result: (g.conj() * (result * 1j)).real})



def _c_order_meta(op):
    """The derived pointwise rule with the kernel's C-contiguous layout (np.empty)."""
    rule = _M.pointwise(op)

    def meta(*args, **kwargs):
        res = rule(*args, **kwargs)
        res._data = meta_array(res._data.shape, res._data.dtype)
        return res
    return meta


OPS["complex"].meta = _c_order_meta(OPS["complex"])
OPS["polar"].meta = _c_order_meta(OPS["polar"])


# ---- the conjugate -------------------------------------------------------------------------
# (gradients are conjugated physically: no conjugate bit ever reaches a .grad)
_CONJ = Derivative("_conj_copy", grads={"self": lambda g: g.conj_physical()},
                   holomorphic=False, node_name="ConjBackward0")
_CONJ_PHYSICAL = Derivative("_conj_physical_copy",
                            grads={"self": lambda g: g.conj_physical()}, holomorphic=False,
                            node_name="ConjPhysicalBackward0")


def _conj_of(op, input, mark):
    try:
        arr = np.conj(input._data)
    except MetaData:    # a meta input: the result's metadata (NumPy keeps the dim order)
        arr = _M.out_array(input._data.shape, input._data.dtype, input, like=input)
    out = wrap(arr, input.dtype)
    if mark:
        out._conj = not getattr(input, "_conj", False)
    if state.enabled and input._requires_grad:
        graph.record(op, (input,), out, {})
    return out


def conj(input):
    """The complex conjugate; a real tensor is returned as is. ember computes it at once (torch
    makes a lazy view), and the result answers ``is_conj()`` as torch's does.

    >>> ember.tensor([1 + 2j]).conj()
    tensor([1.-2.j])
    """
    if not input.dtype.is_complex:
        return input
    return _conj_of(_CONJ, input, True)


def conj_physical(input, *, out=None):
    """The complex conjugate, always materialized (``is_conj()`` False)."""
    if not input.dtype.is_complex:
        r = input
    else:
        r = _conj_of(_CONJ_PHYSICAL, input, False)
    if out is not None:
        from ..dispatch import copy_into_out
        return copy_into_out(out, r)
    return r


def conj_physical_(self):
    if self.dtype.is_complex:
        graph.check_inplace(self)
        np.conjugate(self._data, out=self._data)
        self._bump_version()
    return self


def resolve_conj(input):
    """A tensor with the conjugation applied: `input` itself unless ``is_conj()``."""
    if not getattr(input, "_conj", False):
        return input
    return input.clone()


def is_conj(input):
    """True for the result of ``conj()`` of a complex tensor (torch's conjugate bit)."""
    return bool(getattr(input, "_conj", False))


def resolve_neg(input):
    """ember never makes torch's lazy negative views, so `input` itself."""
    return input


def is_neg(input):
    """False: ember never makes torch's lazy negative views (``is_neg()``)."""
    return False


conj = register(OpDef("conj", POINTWISE, holomorphic=False), conj)
conj_physical = register(OpDef("conj_physical", POINTWISE, holomorphic=False), conj_physical)
METHODS["conj_physical_"] = FUNCTIONS["conj_physical_"] = conj_physical_


def cfloat(self, memory_format=None):
    """``x.cfloat()`` is ``x.to(ember.complex64)``."""
    return self.to(D.complex64)


def cdouble(self, memory_format=None):
    """``x.cdouble()`` is ``x.to(ember.complex128)``."""
    return self.to(D.complex128)


METHODS["cfloat"], METHODS["cdouble"] = cfloat, cdouble
def is_complex(input):
    """True for a complex tensor (``ember.is_complex(x)``, ``x.is_complex()``)."""
    return input.dtype._kind == 3


# flags and their resolution: functions of a tensor's metadata, not ops
FUNCTIONS["is_complex"] = is_complex
for _f in (resolve_conj, resolve_neg, is_conj, is_neg):
    FUNCTIONS[_f.__name__] = METHODS[_f.__name__] = _f


def adjoint(input):
    """The conjugate transpose of the last two dims (``x.mH``).

    >>> ember.adjoint(ember.tensor([[1j, 2.]])).shape
    ember.Size([2, 1])
    """
    if input.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.dim()}-D tensor.")
    return conj(input.transpose(-2, -1))


def _H(self):
    if self.dim() > 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.dim()}-D tensor.")
    return conj(self.transpose(0, 1) if self.dim() == 2 else self)


adjoint = register(OpDef("adjoint", VIEW, holomorphic=False, batch=_br.direct), adjoint)
H_PROPERTY = property(_H)
MH_PROPERTY = property(adjoint)


# ---- angle, isreal -------------------------------------------------------------------------
def _angle_rule(dt, name):
    if dt._kind == 3:
        return dt, dt.to_real()
    f = D.get_default_dtype() if dt._kind < 2 else dt   # integers give the default float
    return f, f


def _angle_kernel(xp, a):
    if a.dtype.kind == "c":
        return xp.angle(a)
    # torch: pi below zero, 0 otherwise (also at -0.0), NaN kept
    return xp.where(a < 0, math.pi, xp.where(xp.isnan(a), a, 0)).astype(a.dtype)


def _angle_grad(g, self):
    if not self.dtype.is_complex:
        return g * 0
    # d angle(x + iy) = (x dy - y dx) / |z|^2: the gradient g * i z / |z|^2, 0 at z = 0
    mag2 = (self * self.conj()).real
    return (g * (self * 1j) / mag2).masked_fill(mag2 == 0, 0)


angle = _unary("angle", None, _angle_grad, rule=_angle_rule, kernel=_angle_kernel,
               inplace=False, holomorphic=False)


def _isreal_kernel(xp, a):
    if is_meta_array(a):        # (xp.ones would make a cpu result)
        raise MetaData("isreal() of a meta tensor")
    return a.imag == 0 if a.dtype.kind == "c" else xp.ones(a.shape, bool)


isreal = _unary("isreal", None, None, rule=lambda dt, name: (dt, D.bool_),
                kernel=_isreal_kernel, inplace=False, errstate=False)
_isreal_derived = OPS["isreal"].meta
_isreal_c_order = _c_order_meta(OPS["isreal"])


def _isreal_meta(input):
    # a real input's result is C-contiguous (xp.ones; torch: ones_like, legacy contiguous)
    return _isreal_derived(input) if input.dtype.is_complex else _isreal_c_order(input)


OPS["isreal"].meta = _isreal_meta


# ---- abs and sgn of complex numbers (their rows are in pointwise_math.py) ---------------------
def abs_rule(dt, name):
    """abs: bool has no kernel; a complex input gives its real dtype."""
    if dt is D.bool_:
        raise not_implemented("abs_cpu", dt)
    return dt, dt.to_real()


def sgn_kernel(xp, a):
    """z / |z| (0 at 0) for complex, torch's sign for real."""
    if a.dtype.kind != "c":
        return None
    m = xp.abs(a)
    with np.errstate(all="ignore"):
        return xp.where(m == 0, 0, a / xp.where(m == 0, 1, m)).astype(a.dtype)


def sgn_grad(g, self, result):
    """torch's sgn derivative: (g - sgn * Re(conj(sgn) g)) / |z|, 0 where z = 0; 0 for real."""
    if not self.dtype.is_complex:
        return g * 0
    mag = self.abs()
    r = (g - result * (result.conj() * g).real) / mag
    return r.masked_fill(mag == 0, 0)
