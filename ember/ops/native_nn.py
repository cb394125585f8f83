"""C kernels for two eager nn forwards that NumPy runs in many small passes: layer_norm (no
graph recorded) and the attention softmax of scaled_dot_product_attention's fast path.

Token-by-token generation calls them on a few rows at a time (1-64 x 128), where each NumPy
pass costs a few microseconds of call overhead and the compiler's fused eager kernels
(ember/compiler/eager.py) cost more in guards than they save (layer_norm's starts at 32k
elements). One ctypes call here does a row in one sweep. Built through the NativeLibrary slot
(ember/ops/native.py); each function returns None where it does not apply, and the caller
keeps its NumPy path, which stays tested (EMBER_EAGER_KERNELS=0).

    out = layer_norm_rows(x, w, b, n, eps)         # a new array, or None
    p = softmax_scores(scores, scale, is_causal)   # `scores` overwritten with p, or None

layer_norm's sums run in double with eight partial sums; the softmax's run in the input's
dtype as `omp simd` reductions (partial sums, as NumPy's pairwise ones), its exp is the
compiler's vectorisable em_expf/em_exp (ember/compiler/cmath.py, <= 1 ulp; the provider
puts it in place of the VECTOR_MATH line), the one the fused kernels use. The elementwise
steps round as NumPy's do (-ffp-contract=off), so the results agree with the NumPy path to
float rounding.
"""
import ctypes

import numpy as np

from .native import NativeLibrary, VECTOR_MATH, pointer, c_int64, c_void_p, c_int

SOURCE = VECTOR_MATH + r"""
#include <stdint.h>
#include <math.h>

static inline double sum8(const double *acc) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#define DEFINE(T, S, EXP)                                                                  \
void layer_norm_##S(const T *restrict x, const T *restrict w, const T *restrict b,        \
                    T *restrict out, int64_t R, int64_t N, double eps, int nt) {          \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t r = 0; r < R; r++) {                                                       \
        const T *xr = x + r * N;                                                            \
        T *o = out + r * N;                                                                 \
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                           \
        int64_t j = 0;                                                                      \
        for (; j + 8 <= N; j += 8)                                                          \
            for (int u = 0; u < 8; u++) acc[u] += (double)xr[j + u];                        \
        double s = sum8(acc);                                                               \
        for (; j < N; j++) s += (double)xr[j];                                              \
        const double mean = s / (double)N;                                                  \
        for (int u = 0; u < 8; u++) acc[u] = 0;                                             \
        for (j = 0; j + 8 <= N; j += 8)                                                     \
            for (int u = 0; u < 8; u++) {                                                   \
                const double d = (double)xr[j + u] - mean;                                  \
                acc[u] += d * d;                                                            \
            }                                                                               \
        double v = sum8(acc);                                                               \
        for (; j < N; j++) { const double d = (double)xr[j] - mean; v += d * d; }           \
        const T m = (T)mean;                                                                \
        const T rstd = (T)(1.0 / sqrt(v / (double)N + eps));                                \
        if (w && b) for (j = 0; j < N; j++) o[j] = (xr[j] - m) * rstd * w[j] + b[j];        \
        else if (w) for (j = 0; j < N; j++) o[j] = (xr[j] - m) * rstd * w[j];               \
        else if (b) for (j = 0; j < N; j++) o[j] = (xr[j] - m) * rstd + b[j];               \
        else for (j = 0; j < N; j++) o[j] = (xr[j] - m) * rstd;                             \
    }                                                                                       \
}                                                                                           \
/* softmax(s * scale) over each row of (B, L, S) scores, in place; causal: row i keeps    \
   columns j <= i (torch's top-left mask), the others come out 0. torch's kernel adds the  \
   mask, so a masked score that is NaN or +inf (+inf - inf) makes its row NaN, as here. A  \
   row whose kept scores are all -inf gives 0 (torch's answer); a NaN makes its row NaN. */\
void softmax_scores_##S(T *restrict s, int64_t B, int64_t L, int64_t Sn, double scale,    \
                        int causal, int nt) {                                               \
    const T sc = (T)scale;                                                                  \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t r = 0; r < B * L; r++) {                                                   \
        T *row = s + r * Sn;                                                                \
        int64_t i = r % L;                                                                  \
        int64_t n = causal ? (i + 1 < Sn ? i + 1 : Sn) : Sn;                                \
        int poisoned = 0;                                                                   \
        for (int64_t j = n; j < Sn; j++) {                                                  \
            const T v = row[j] * sc;                                                        \
            poisoned |= (v != v) | (v == INFINITY);                                         \
        }                                                                                   \
        if (poisoned) { for (int64_t j = 0; j < Sn; j++) row[j] = NAN; continue; }          \
        T top = -INFINITY;                                                                  \
        _Pragma("omp simd reduction(max:top)")                                              \
        for (int64_t j = 0; j < n; j++) {                                                   \
            const T v = row[j] * sc;                                                        \
            row[j] = v;                                                                     \
            top = v > top ? v : top;     /* NaNs skipped here: they reach the sum */        \
        }                                                                                   \
        if (top == -INFINITY) top = 0;                                                      \
        T total = 0;                                                                        \
        _Pragma("omp simd reduction(+:total)")                                              \
        for (int64_t j = 0; j < n; j++) { const T e = EXP(row[j] - top); row[j] = e;        \
                                          total += e; }                                     \
        const T t = total == 0 ? (T)1 : total;                                              \
        _Pragma("omp simd")                                                                 \
        for (int64_t j = 0; j < n; j++) row[j] = row[j] / t;                                \
        for (int64_t j = n; j < Sn; j++) row[j] = 0;                                        \
    }                                                                                       \
}
DEFINE(float, f32, em_expf)
DEFINE(double, f64, em_exp)

"""

_LN_SIG = (c_void_p, c_void_p, c_void_p, c_void_p, c_int64, c_int64, ctypes.c_double, c_int)
_SM_SIG = (c_void_p, c_int64, c_int64, c_int64, ctypes.c_double, c_int, c_int)
LIB = NativeLibrary("nn_kernels", SOURCE,
                    {"layer_norm_f32": _LN_SIG, "layer_norm_f64": _LN_SIG,
                     "softmax_scores_f32": _SM_SIG, "softmax_scores_f64": _SM_SIG})
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
# above this many elements the compiler's fused kernels (several threads, vectorised exp)
# are left the work: these kernels are for the small calls where overhead dominates
MAX_ELEMENTS = 1 << 16


def _plain(a, dtype):
    return type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous


def layer_norm_rows(x, w, b, n, eps):
    """layer_norm over the last `n` elements of each row of `x` (C-contiguous float32 or
    float64), times `w` and plus `b` (arrays of the row's shape, or None); a new array, or
    None where the kernel does not apply."""
    suffix = _SUFFIX.get(x.dtype) if type(x) is np.ndarray else None
    if suffix is None or not x.size or x.size > MAX_ELEMENTS or not x.flags.c_contiguous:
        return None
    for p in (w, b):
        if p is not None and (not _plain(p, x.dtype) or p.size != n):
            return None
    fn = LIB.function("layer_norm_" + suffix)
    if fn is None:
        return None
    out = np.empty_like(x)
    rows = x.size // n
    fn(pointer(x), None if w is None else pointer(w), None if b is None else pointer(b),
       pointer(out), rows, n, float(eps), LIB.team(x.size))
    return out


def softmax_scores(scores, scale, is_causal):
    """softmax(scores * scale) over the last dim, with torch's top-left causal mask when
    `is_causal` (rows left all masked give 0), written into `scores`, which is returned; or
    None (nothing written) where the kernel does not apply."""
    suffix = _SUFFIX.get(scores.dtype) if type(scores) is np.ndarray else None
    if suffix is None or scores.ndim < 2 or not scores.size or scores.size > MAX_ELEMENTS or \
            not scores.flags.c_contiguous or not scores.flags.writeable:
        return None
    fn = LIB.function("softmax_scores_" + suffix)
    if fn is None:
        return None
    L, S = scores.shape[-2], scores.shape[-1]
    fn(pointer(scores), scores.size // (L * S), L, S, float(scale), int(bool(is_causal)),
       LIB.team(scores.size))
    return scores

