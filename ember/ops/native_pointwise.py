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
