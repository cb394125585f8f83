"""A C kernel for relu's backward (threshold_backward): ``0 where r <= 0 else g`` in one pass
(a NaN output passes its gradient, as in torch).

NumPy needs three for it (the mask, a multiply that casts the mask to floats, and a finite
check of the product, since inf * 0 would make a NaN), and it runs on every activation of a
CNN or MLP each step. Built through the NativeLibrary slot (ember/ops/native.py); returns
None where it does not apply, and the caller keeps its NumPy path.

    out = threshold_backward(g, r)     # a new array, or None
"""
import numpy as np

from .native import NativeLibrary, pointer, c_int64, c_void_p, c_int

SOURCE = r"""
#include <stdint.h>
#define DEFINE(T, S)                                                                        \
void threshold_backward_##S(const T *g, const T *r, T *out, int64_t n, int nt) {            \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t i = 0; i < n; i++) out[i] = r[i] <= 0 ? (T)0 : g[i];                        \
}
DEFINE(float, f32)
DEFINE(double, f64)
"""

_SIG = (c_void_p, c_void_p, c_void_p, c_int64, c_int)
LIB = NativeLibrary("pointwise_kernels", SOURCE,
                    {"threshold_backward_f32": _SIG, "threshold_backward_f64": _SIG})
_NAMES = {np.dtype(np.float32): "threshold_backward_f32",
          np.dtype(np.float64): "threshold_backward_f64"}
MIN_ELEMENTS = 4096     # below this NumPy's three passes cost less than a ctypes call


def threshold_backward(g, r):
    """``np.where(r <= 0, 0, g)`` for same-shape, same-dtype C-contiguous float arrays, or
    None."""
    if type(g) is not np.ndarray or g.size < MIN_ELEMENTS or type(r) is not np.ndarray or \
            g.dtype != r.dtype or g.shape != r.shape or not g.flags.c_contiguous or \
            not r.flags.c_contiguous:
        return None
    name = _NAMES.get(g.dtype)
    fn = None if name is None else LIB.function(name)
    if fn is None:
        return None
    out = np.empty_like(g)
    fn(pointer(g), pointer(r), pointer(out), g.size, LIB.team(g.size))
    return out


# ---- stacked outer products: out[s, i, j] = a[s, i] * b[s, j] --------------------------
# the per-sample weight gradients of vmap(grad(loss)) of a linear layer; NumPy's broadcast
# multiply runs an inner loop per output row and is ~3x off the write bandwidth
OUTER_SOURCE = r"""
#include <stdint.h>
#define DEFINE(T, S)                                                                        \
void outer_##S(const T *a, const T *b, T *out, int64_t batch, int64_t m, int64_t n,        \
               int64_t as, int64_t ai, int64_t bs, int nt) {                               \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t r = 0; r < batch * m; r++) {                                               \
        int64_t s = r / m, i = r % m;                                                       \
        const T x = a[s * as + i * ai];                                                     \
        const T *restrict y = b + s * bs;                                                   \
        T *restrict o = out + r * n;                                                        \
        for (int64_t j = 0; j < n; j++) o[j] = x * y[j];                                    \
    }                                                                                       \
}
DEFINE(float, f32)
DEFINE(double, f64)
"""
_OUTER_SIG = (c_void_p, c_void_p, c_void_p, c_int64, c_int64, c_int64, c_int64, c_int64,
              c_int64, c_int)
OUTER_LIB = NativeLibrary("outer_kernels", OUTER_SOURCE,
                          {"outer_f32": _OUTER_SIG, "outer_f64": _OUTER_SIG})
_OUTER_NAMES = {np.dtype(np.float32): "outer_f32", np.dtype(np.float64): "outer_f64"}


def stacked_outer(a, b):
    """``np.multiply(a, b)`` for a of shape (..., m, 1) and b of shape (..., 1, n) with the
    same batch dims, the same float dtype and b's rows contiguous; or None."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype or \
            a.shape[:-2] != b.shape[:-2] or a.ndim < 3:
        return None
    name = _OUTER_NAMES.get(a.dtype)
    m, n = a.shape[-2], b.shape[-1]
    batch = a.size // m if m else 0
    if name is None or batch * m * n < MIN_ELEMENTS or b.strides[-1] != b.itemsize:
        return None
    a2 = a.reshape(batch, m)     # (views when the batch dims fold; else a copy of a small a)
    b2 = b.reshape(batch, n)
    if b2.strides[-1] != b.itemsize:
        return None
    fn = OUTER_LIB.function(name)
    if fn is None:
        return None
    out = np.empty(a.shape[:-1] + (n,), a.dtype)
    sz = a.itemsize
    fn(pointer(a2), pointer(b2), pointer(out), batch, m, n, a2.strides[0] // sz,
       a2.strides[1] // sz, b2.strides[0] // sz, OUTER_LIB.team(out.size))
    return out


# ---- per-channel affine map: out[n, c, p] = x[n, c, p] * a[c] + b[c] ---------------------
# eval-mode batch_norm (ember/nn/functional_norm.py): one pass where NumPy takes two (a
# multiply into a new array, an add in place). Built with -ffp-contract=off, so its values
# are NumPy's bit for bit. P == 1 is the channels-last (and (N, C)) case: C is the fastest
# axis and the loop runs along it.
AFFINE_SOURCE = r"""
#include <stdint.h>
#define DEFINE(T, S)                                                                        \
void channel_affine_##S(const T *restrict x, const T *restrict a, const T *restrict b,     \
                        T *restrict out, int64_t N, int64_t C, int64_t P, int nt) {         \
    if (P == 1) {                                                                           \
        _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")             \
        for (int64_t n = 0; n < N; n++) {                                                   \
            const T *xr = x + n * C;                                                        \
            T *o = out + n * C;                                                             \
            for (int64_t c = 0; c < C; c++) o[c] = xr[c] * a[c] + b[c];                     \
        }                                                                                   \
        return;                                                                             \
    }                                                                                       \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t r = 0; r < N * C; r++) {                                                   \
        const T av = a[r % C], bv = b[r % C];                                               \
        const T *xr = x + r * P;                                                            \
        T *o = out + r * P;                                                                 \
        for (int64_t p = 0; p < P; p++) o[p] = xr[p] * av + bv;                             \
    }                                                                                       \
}
DEFINE(float, f32)
DEFINE(double, f64)
"""
_AFFINE_SIG = (c_void_p,) * 4 + (c_int64,) * 3 + (c_int,)
AFFINE_LIB = NativeLibrary("affine_kernels", AFFINE_SOURCE,
                           {"channel_affine_f32": _AFFINE_SIG,
                            "channel_affine_f64": _AFFINE_SIG})
_AFFINE_NAMES = {np.dtype(np.float32): "channel_affine_f32",
                 np.dtype(np.float64): "channel_affine_f64"}


def channel_affine(x, a, b, out):
    """``out = x * a[c] + b[c]`` for x and out C-contiguous (N, C, P) arrays and a, b
    contiguous (C,) arrays, all of one float dtype; returns out, or None (nothing written)."""
    if type(x) is not np.ndarray or x.size < MIN_ELEMENTS:
        return None
    name = _AFFINE_NAMES.get(x.dtype)
    fn = None if name is None else AFFINE_LIB.function(name)
    if fn is None:
        return None
    n, c, p = x.shape
    fn(pointer(x), pointer(a), pointer(b), pointer(out), n, c, p, AFFINE_LIB.team(x.size))
    return out
