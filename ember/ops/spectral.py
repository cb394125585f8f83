"""Discrete Fourier transforms: the three kernel ops and torch.fft's functions built on them.

As in ATen, every transform is one of three ops over a set of dims, NumPy's pocketfft doing
the work (it computes in double precision for float32 too; results are cast back):
- `_fft_c2c(x, dim, norm, forward)`: complex -> complex;
- `_fft_r2c(x, dim, norm, onesided)`: real -> complex (onesided: the last dim keeps its
  n//2 + 1 non-redundant bins);
- `_fft_c2r(x, dim, norm, last_dim_size)`: the Hermitian-symmetric half -> real.
Each derivative is the adjoint transform: c2c's is c2c the other way round with the same
scale (the norm names swap: "backward" <-> "forward"), r2c's is c2c of the zero-extended
gradient (real part), c2r's is r2c with the non-redundant bins counted twice (torch's
formulas). The functions of `ember.fft` (ember/fft/__init__.py) resize inputs with
narrow/cat (`n`, `s`) and pick the op; hfft and ihfft are c2r and r2c of the conjugate.
"""
import numpy as np

from ..core import dtype as D
from ..core.strides import wrap_dim
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name, not_implemented
from ..dispatch_args import int_arg
from ..autograd.grad_mode import state
from ..autograd import graph
from .registry import OpDef, EXTERN, COMPOSITE, register
from . import batch_rules as _br
from . import meta_rules as _M

NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _finish(op, x, arr, dt, attrs):
    out = wrap(np.ascontiguousarray(arr), dt)
    if state.enabled and x._requires_grad:
        graph.record(op, (x,), out, attrs)
    return out


# ---- the three kernel ops -----------------------------------------------------------------
def _c2c_grad(g, dim, norm, forward):
    return _fft_c2c(g, dim, _SWAP[norm], not forward)


def _r2c_grad(g, self, dim, norm, onesided):
    n = self.shape[dim[-1]]
    if onesided and g.shape[dim[-1]] != n:      # the dropped bins get a zero gradient
        g = resize(g, dim[-1], n)
    return _fft_c2c(g, dim, _SWAP[norm], False).real


def _c2r_grad(g, self, dim, norm, last_dim_size):
    gi = _fft_r2c(g, dim, _SWAP[norm], True)
    double = g.shape[dim[-1]] - gi.shape[dim[-1]]
    if double > 0:      # bins 1.. stand for themselves and their mirror images
        k = gi.shape[dim[-1]]
        idx = np.ones(k)
        idx[1:1 + double] = 2
        shape = [1] * gi.dim()
        shape[dim[-1]] = k
        gi = gi * wrap(idx.reshape(shape).astype(gi.dtype.to_real().np), gi.dtype.to_real())
    return gi


def _batch(v, args, kwargs):
    """vmap: the transform dims move one place right, past the batch dim."""
    x, dim = args[0], args[1]
    if not v.is_batched(x):
        return v.call(*args, **kwargs)
    return v.call(x, _br.shift(tuple(dim), v.logical_dim(x)), *args[2:], **kwargs)


_C2C = OpDef("_fft_c2c", EXTERN, attrs={"dim": None, "norm": "backward", "forward": True},
             grads={"self": _c2c_grad}, holomorphic=False, node_name="FftC2CBackward0",
             function=False, method=False, batch=_batch)
_R2C = OpDef("_fft_r2c", EXTERN, attrs={"dim": None, "norm": "backward", "onesided": True},
             grads={"self": _r2c_grad}, holomorphic=False, node_name="FftR2CBackward0",
             function=False, method=False, batch=_batch)
_C2R = OpDef("_fft_c2r", EXTERN, attrs={"dim": None, "norm": "backward",
                                        "last_dim_size": None},
             grads={"self": _c2r_grad}, holomorphic=False, node_name="FftC2RBackward0",
             function=False, method=False, batch=_batch)


def _fft_c2c(self, dim, norm, forward):
    a = self._data
    f = np.fft.fftn if forward else np.fft.ifftn
    r = f(a, axes=dim, norm=norm) if a.size else np.zeros(a.shape, a.dtype)
    return _finish(_C2C, self, r.astype(self.dtype.np, copy=False), self.dtype,
                   {"dim": dim, "norm": norm, "forward": forward})


def _fft_r2c(self, dim, norm, onesided):
    a = self._data
    cdt = self.dtype.to_complex()
    if onesided:
        r = np.fft.rfftn(a, axes=dim, norm=norm)
    else:
        r = np.fft.fftn(a, axes=dim, norm=norm)
    return _finish(_R2C, self, r.astype(cdt.np, copy=False), cdt,
                   {"dim": dim, "norm": norm, "onesided": onesided})


def _fft_c2r(self, dim, norm, last_dim_size):
    a = self._data
    rdt = self.dtype.to_real()
    s = [a.shape[d] for d in dim[:-1]] + [last_dim_size]
    r = np.fft.irfftn(a, s=s, axes=dim, norm=norm)
    return _finish(_C2R, self, r.astype(rdt.np, copy=False), rdt,
                   {"dim": dim, "norm": norm, "last_dim_size": last_dim_size})


_fft_c2c = register(_C2C, _fft_c2c)
_fft_r2c = register(_R2C, _fft_r2c)
_fft_c2r = register(_C2R, _fft_c2r)


# ---- meta rules: the result's shape from the transform's dims (every result is contiguous,
# as _finish makes it); the node is recorded as on cpu, so meta backward runs the adjoints
def _meta_finish(op, x, shape, dt, attrs):
    out = _M.result(shape, dt)
    if state.enabled and x._requires_grad:
        graph.record(op, (x,), out, attrs)
    return out


def _c2c_meta(self, dim, norm, forward):
    return _meta_finish(_C2C, self, self.shape, self.dtype,
                        {"dim": dim, "norm": norm, "forward": forward})


def _r2c_meta(self, dim, norm, onesided):
    shape = list(self.shape)
    if onesided:
        shape[dim[-1]] = shape[dim[-1]] // 2 + 1
    return _meta_finish(_R2C, self, shape, self.dtype.to_complex(),
                        {"dim": dim, "norm": norm, "onesided": onesided})


def _c2r_meta(self, dim, norm, last_dim_size):
    shape = list(self.shape)
    shape[dim[-1]] = last_dim_size
    return _meta_finish(_C2R, self, shape, self.dtype.to_real(),
                        {"dim": dim, "norm": norm, "last_dim_size": last_dim_size})


_C2C.meta = _c2c_meta
_R2C.meta = _r2c_meta
_C2R.meta = _c2r_meta


# ---- argument handling shared by the public functions --------------------------------------
def check_norm(norm):
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def resize(x, d, n):
    """`x` trimmed or zero-padded to size `n` along dim `d` (differentiable)."""
    size = x.shape[d]
    if n == size:
        return x
    if n < size:
        return x.narrow(d, 0, n)
    from .creation import zeros
    shape = list(x.shape)
    shape[d] = n - size
    return _cat([x, zeros(shape, dtype=x.dtype, device=x.device)], d)


def _cat(ts, d):
    from .joining import cat
    return cat(ts, d)


_REAL_ONLY = {"rfftn": "rfftn expects a real-valued input tensor, but got {dt}",
              "ihfftn": "Only supports floating-point dtypes, but found: {dt}"}


def _dim_arg(dim):
    """`dim` of an n-D transform or shift: None, an int or a sequence of ints."""
    if dim is None or isinstance(dim, (int, list, tuple)) and not isinstance(dim, bool):
        return dim
    raise TypeError(f"argument 'dim' must be tuple of ints, not {type(dim).__name__}")


def as_float(x, name, real_only=False):
    """The input as a floating or complex tensor (integers become the default float)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    dt = x.dtype
    if real_only and dt.is_complex:   # (torch's n-D transforms word it their own way)
        raise RuntimeError(_REAL_ONLY.get(name, "{name} expects a real input tensor, but got "
                                          "{dt}").format(name=name, dt=torch_name(dt)))
    if dt._kind < 2:
        return x.to(D.get_default_dtype())
    if dt not in (D.float32, D.float64, D.complex64, D.complex128):
        raise RuntimeError(f"Unsupported dtype {torch_name(dt)}")
    return x


def as_complex(x):
    return x if x.dtype.is_complex else x.to(x.dtype.to_complex())


def dims_1d(x, n, dim, fname="fft"):
    """(dims, sizes) of a 1-D transform: dim wrapped, n defaulting to the input's size (an
    `n` given must be an int: torch's TypeError names `fname`'s argument otherwise)."""
    if n is not None:
        n = int_arg(n, f"fft_{fname}", "n", 2)
    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x.dim())
    n = x.shape[d] if n is None else n
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return (d,), (n,)


def dims_nd(x, s, dim, default_all=True):
    """(dims, sizes) of an n-D transform, as torch's fftn resolves `s` and `dim`."""
    nd = x.dim()
    dim = _dim_arg(dim)
    if dim is not None and isinstance(dim, int):
        dim = (dim,)
    if s is not None and dim is not None and len(s) != len(dim):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    if dim is None:
        if s is not None:
            if len(s) > nd:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                                   f"{nd} dimensions.")
            dims = tuple(range(nd - len(s), nd))
        else:
            dims = tuple(range(nd)) if default_all else ()
    else:
        dims = tuple(wrap_dim(d, nd) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    sizes = tuple(x.shape[d] if s is None or s[i] == -1 else int(s[i])
                  for i, d in enumerate(dims))
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, sizes


def resize_all(x, dims, sizes):
    for d, n in zip(dims, sizes):
        x = resize(x, d, n)
    return x


# ---- the transforms (ember.fft's functions call these) -------------------------------------
def _empty_batch(x, dims):
    """torch's CPU FFT (MKL's DFTI) refuses a transform of non-empty signals over an empty
    batch (an fft of a (0, 6) tensor); an empty signal is "Invalid number of data points"."""
    if not x._data.size and all(x._data.shape[d] for d in dims):
        raise RuntimeError("MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent "
                           "configuration parameters")
    return x


def c2c(x, dims, sizes, norm, forward, name):
    x = as_float(x, name)
    x = _empty_batch(as_complex(resize_all(x, dims, sizes)), dims)
    return _fft_c2c(x, dims, check_norm(norm), forward)


def r2c(x, dims, sizes, norm, name, onesided=True):
    x = as_float(x, name, real_only=True)
    return _fft_r2c(_empty_batch(resize_all(x, dims, sizes), dims), dims, check_norm(norm),
                    onesided)


def c2r(x, dims, sizes, norm, name):
    """Inverse real transform to `sizes` (the last one: the output length, default
    2 * (m - 1) when None); the input is resized to the half spectrum first."""
    x = as_complex(as_float(x, name))
    last = sizes[-1]
    if last is None:
        last = 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = resize_all(x, dims[:-1], sizes[:-1])
    x = _empty_batch(resize(x, dims[-1], last // 2 + 1), dims)
    return _fft_c2r(x, dims, check_norm(norm), last)


# ---- frequencies and shifts (no kernel op needed: creation and roll) ----------------------
def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False,
            pin_memory=False):
    """The sample frequencies of an n-point FFT: [0, 1, ..., -2, -1] / (d * n)."""
    n = int_arg(n, "fft_fftfreq", "n", 1)
    k = _arange(n)        # (torch: the size is checked, then the dtype)
    dt = _freq_dtype("fftfreq", dtype)
    k[(n + 1) // 2:] -= n
    return _freq(k, n, d, dt, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """The sample frequencies of rfft's n//2 + 1 bins: [0, 1, ..., n//2] / (d * n)."""
    n = int_arg(n, "fft_rfftfreq", "n", 1)
    # torch's n / 2 + 1 in C++ (division toward zero): rfftfreq(-1) has one bin, -0.0
    half = -(-n // 2) if n < 0 else n // 2
    k = _arange(half + 1)
    return _freq(k, n, d, _freq_dtype("rfftfreq", dtype), requires_grad)


def _freq_dtype(name, dtype):
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dt.is_complex:     # (torch's bins come from arange, which has no complex kernel)
        raise not_implemented("arange_cpu", dt)
    return dt


def _arange(size):
    if size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {size}: [{size}]")
    return np.arange(size, dtype=np.float64)


def _freq(k, n, d, dt, requires_grad):
    """k * (1 / (n * d)) as torch computes it: the bins in the result dtype times the scale
    (a division by zero gives inf, so n = 0 or d = 0 give NaN and inf, not an error)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.divide(1.0, np.float64(n) * d)
        arr = k.astype(dt.np) * dt.np.type(scale)
    t = wrap(arr.astype(dt.np), dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shift(x, dim, sign):
    if dim is None:
        dims = tuple(range(x.dim()))
    else:
        dim = _dim_arg(dim)
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return x
    # fftshift rolls by n // 2, ifftshift by -(n // 2) (they differ for odd n)
    shifts = tuple(sign * (x.shape[wrap_dim(d, x.dim())] // 2) for d in dims)
    return x.roll(shifts, dims)


def fftshift(input, dim=None):
    """Move the zero frequency to the middle (a roll by n // 2 along each dim)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift (a roll by -(n // 2))."""
    return _shift(input, dim, -1)


def _creation(name, fn):
    from .registry import CREATION
    return register(OpDef(name, CREATION, function=False, method=False), fn)


fftfreq = _creation("fft_fftfreq", fftfreq)
rfftfreq = _creation("fft_rfftfreq", rfftfreq)
fftshift = register(OpDef("fft_fftshift", COMPOSITE, function=False, method=False,
                          decomp=fftshift), fftshift)
ifftshift = register(OpDef("fft_ifftshift", COMPOSITE, function=False, method=False,
                           decomp=ifftshift), ifftshift)
