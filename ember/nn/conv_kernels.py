"""C kernels for the eager convolutions and max pooling (1-D and 2-D, float32/float64).

NumPy builds an im2col matrix from a padded copy and a strided window view (two passes, the
second a strided gather), and col2im and max pooling take one pass per kernel tap. Each
kernel here is one pass in C with OpenMP over (batch x channels) or (rows x batch), a team
sized to the work (ember.ops.native.NativeLibrary.team), bounds handled inline (no padded
copy). Every wrapper returns None where it does not apply (no C compiler, another dtype, a
meta or CuPy array, 3-D, EMBER_EAGER_KERNELS=0): the callers in functional_im2col and
functional_pool then run their NumPy path, which gives the same values.

    cols = im2col(a, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (32, 32))   # (C*9, N*32*32)

Layouts (all C-contiguous):
    cols       (C*prod(K), N*prod(O)), rows ordered (c, kh, kw), columns (n, oh, ow): the
               layout of functional_im2col._cols (groups split the rows); or per sample
               (N, C*prod(K), prod(O)) (conv_per_sample, and col2im of a 3-d cols)
    tap        int64 (N, C, *O): the window tap (kh * KW + kw) that holds each maximum
"""
import math

import numpy as np

from ..ops.native import NativeLibrary, pointer, c_int64, c_void_p, c_int

_DIMS = "int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t SH, " \
        "int64_t SW, int64_t PH, int64_t PW, int64_t DH, int64_t DW, int64_t OH, int64_t OW"

SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>

/* the output columns [lo, hi) whose input column ow * SW + off lies in [0, W) */
static inline void valid_range(int64_t off, int64_t SW, int64_t W, int64_t OW,
                               int64_t *lo, int64_t *hi) {
    int64_t l = off < 0 ? (-off + SW - 1) / SW : 0;
    int64_t h = W - 1 - off < 0 ? 0 : (W - 1 - off) / SW + 1;
    if (h > OW) h = OW;
    if (l > h) l = h;
    *lo = l; *hi = h;
}

#define DEFINE(T, S)                                                                        \
/* cols[(c, i, j), (n, oh, ow)] = x[n, c, oh*SH - PH + i*DH, ow*SW - PW + j*DW] or 0; row \
   r of sample n starts at r * RS + n * NS: (RS, NS) = (N*P, P) is the (C*K, N*P) layout,   \
   (P, C*K*P) the per-sample (N, C*K, P) one */                                             \
void im2col2d_##S(const T *x, T *cols, DIMS, int64_t RS, int64_t NS, int nt) {              \
    const int64_t P = OH * OW, R = C * KH * KW;                                             \
    _Pragma("omp parallel for collapse(2) schedule(static) num_threads(nt) if(nt > 1)")     \
    for (int64_t r = 0; r < R; r++)                                                         \
        for (int64_t n = 0; n < N; n++) {                                                   \
            const int64_t c = r / (KH * KW), i = (r / KW) % KH, j = r % KW;                 \
            const int64_t off = j * DW - PW;                                                \
            const T *xp = x + (n * C + c) * H * W;                                          \
            T *dst = cols + r * RS + n * NS;                                                \
            int64_t lo, hi;                                                                 \
            valid_range(off, SW, W, OW, &lo, &hi);                                          \
            if (SH == 1 && SW == 1 && OW == W && W * (int64_t)sizeof(T) < 128) {            \
                /* a "same"-width stride-1 window: the tap's block is the plane shifted by \
                   (roff rows, off columns), one memcpy (short rows copied one by one cost \
                   a loop each: 2x faster for 8..28 floats), then the columns that wrapped \
                   around are zeroed. Rows of 32 floats and more copy faster row by row    \
                   (measured; a 4 KiB plane's shifted copy meets 4K aliasing) */           \
                const int64_t roff = i * DH - PH;                                           \
                int64_t hlo = roff < 0 ? -roff : 0, hhi = H - roff < OH ? H - roff : OH;    \
                if (hlo > OH) hlo = OH;                                                     \
                if (hhi < hlo) hhi = hlo;                                                   \
                memset(dst, 0, sizeof(T) * hlo * OW);                                       \
                memset(dst + hhi * OW, 0, sizeof(T) * (OH - hhi) * OW);                     \
                int64_t k0 = hlo * OW, k1 = hhi * OW;                                       \
                const int64_t shift = roff * W + off;                                       \
                if (k0 + shift < 0) k0 = -shift;                                            \
                if (k1 + shift > H * W) k1 = H * W - shift;                                 \
                if (k1 > k0) memcpy(dst + k0, xp + k0 + shift, sizeof(T) * (k1 - k0));      \
                for (int64_t oh = hlo; oh < hhi; oh++) {                                    \
                    T *d = dst + oh * OW;                                                   \
                    for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                          \
                    for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                         \
                }                                                                           \
                continue;                                                                   \
            }                                                                               \
            for (int64_t oh = 0; oh < OH; oh++) {                                           \
                const int64_t ih = oh * SH - PH + i * DH;                                   \
                T *d = dst + oh * OW;                                                       \
                if (ih < 0 || ih >= H) { memset(d, 0, sizeof(T) * OW); continue; }          \
                const T *src = xp + ih * W + off;                                           \
                for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                              \
                if (SW == 1) for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow];          \
                else for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow * SW];             \
                for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                             \
            }                                                                               \
        }                                                                                   \
}                                                                                           \
                                                                                            \
/* the adjoint: dx[n, c] = sum over taps (i, j), in that order, of the cols that read it; \
   the cols layout (RS, NS) as im2col's */                                                  \
void col2im2d_##S(const T *cols, T *dx, DIMS, int64_t RS, int64_t NS, int nt) {             \
    _Pragma("omp parallel for collapse(2) schedule(static) num_threads(nt) if(nt > 1)")     \
    for (int64_t n = 0; n < N; n++)                                                         \
        for (int64_t c = 0; c < C; c++) {                                                   \
            T *xp = dx + (n * C + c) * H * W;                                               \
            memset(xp, 0, sizeof(T) * H * W);                                               \
            for (int64_t i = 0; i < KH; i++)                                                \
                for (int64_t j = 0; j < KW; j++) {                                          \
                    const int64_t off = j * DW - PW;                                        \
                    const T *src = cols + ((c * KH + i) * KW + j) * RS + n * NS;            \
                    int64_t lo, hi;                                                         \
                    valid_range(off, SW, W, OW, &lo, &hi);                                  \
                    for (int64_t oh = 0; oh < OH; oh++) {                                   \
                        const int64_t ih = oh * SH - PH + i * DH;                           \
                        if (ih < 0 || ih >= H) continue;                                    \
                        T *d = xp + ih * W + off;                                           \
                        const T *s = src + oh * OW;                                         \
                        if (SW == 1) for (int64_t ow = lo; ow < hi; ow++) d[ow] += s[ow];   \
                        else for (int64_t ow = lo; ow < hi; ow++) d[ow * SW] += s[ow];      \
                    }                                                                       \
                }                                                                           \
        }                                                                                   \
}                                                                                           \
                                                                                            \
/* per window: the max and the first tap holding it (the last NaN, if any, as torch), over \
   the taps inside x (padding is chosen only by a window wholly outside x). Taps outer, a branch-free vector loop along     \
   each output row (a branch per element mispredicts on random data: 10x slower). */       \
void maxpool2d_##S(const T *x, T *out, int64_t *tap, DIMS, int nt) {                        \
    const int64_t P = OH * OW;                                                              \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t nc = 0; nc < N * C; nc++) {                                                \
        const T *xp = x + nc * H * W;                                                       \
        for (int64_t oh = 0; oh < OH; oh++) {                                               \
            T *ob = out + nc * P + oh * OW;                                                 \
            int64_t *tb = tap + nc * P + oh * OW;                                           \
            for (int64_t ow = 0; ow < OW; ow++) { ob[ow] = -INFINITY; tb[ow] = -1; }        \
            for (int64_t i = 0; i < KH; i++) {                                              \
                const int64_t ih = oh * SH - PH + i * DH;                                   \
                if (ih < 0 || ih >= H) continue;                                            \
                for (int64_t j = 0; j < KW; j++) {                                          \
                    const int64_t off = j * DW - PW, t = i * KW + j;                        \
                    const T *src = xp + ih * W + off;                                       \
                    int64_t lo, hi;                                                         \
                    valid_range(off, SW, W, OW, &lo, &hi);                                  \
                    for (int64_t ow = lo; ow < hi; ow++) {                                  \
                        const T v = src[ow * SW], b = ob[ow];                               \
                        const int64_t bt = tb[ow];                                          \
                        const int take = (bt < 0) | (v > b) | (v != v);        \
                        ob[ow] = take ? v : b;                                              \
                        tb[ow] = take ? t : bt;                                             \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
            /* a window wholly outside x: -inf, and tap 0 (a padding position, as NumPy's) */ \
            for (int64_t ow = 0; ow < OW; ow++) tb[ow] = tb[ow] < 0 ? 0 : tb[ow];           \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* the adjoint of the gather by tap: dx = 0, then each g added where its tap points; when  \
   the windows tile x (the usual 2x2/2 pool) each element is written once, g or 0 */        \
void maxpool2d_backward_##S(const T *g, const int64_t *tap, T *dx, DIMS, int nt) {          \
    const int64_t P = OH * OW;                                                              \
    const int tiles = KH == SH && KW == SW && DH == 1 && DW == 1 && PH == 0 && PW == 0 &&    \
                      OH * SH == H && OW * SW == W;                                         \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1)")                 \
    for (int64_t nc = 0; nc < N * C; nc++) {                                                \
        T *xp = dx + nc * H * W;                                                            \
        const T *gp = g + nc * P;                                                           \
        const int64_t *tp = tap + nc * P;                                                   \
        if (tiles) {                                                                        \
            for (int64_t oh = 0; oh < OH; oh++)                                             \
                for (int64_t i = 0; i < KH; i++) {                                          \
                    T *d = xp + (oh * KH + i) * W;                                          \
                    const T *gr = gp + oh * OW;                                             \
                    const int64_t *tr = tp + oh * OW;                                       \
                    if (KW == 2)                                                            \
                        for (int64_t ow = 0; ow < OW; ow++) {                               \
                            const int64_t t = tr[ow] - 2 * i;                               \
                            d[2 * ow] = t == 0 ? gr[ow] : (T)0;                             \
                            d[2 * ow + 1] = t == 1 ? gr[ow] : (T)0;                         \
                        }                                                                   \
                    else                                                                    \
                        for (int64_t ow = 0; ow < OW; ow++)                                 \
                            for (int64_t j = 0; j < KW; j++)                                \
                                d[ow * KW + j] = tr[ow] == i * KW + j ? gr[ow] : (T)0;      \
                }                                                                           \
            continue;                                                                       \
        }                                                                                   \
        memset(xp, 0, sizeof(T) * H * W);                                                   \
        for (int64_t oh = 0; oh < OH; oh++)                                                 \
            for (int64_t ow = 0; ow < OW; ow++) {                                           \
                const int64_t t = tp[oh * OW + ow];                                         \
                const int64_t ih = oh * SH - PH + (t / KW) * DH;                            \
                const int64_t iw = ow * SW - PW + (t % KW) * DW;                            \
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) xp[ih * W + iw] += gp[oh * OW + ow]; \
            }                                                                               \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* out[b, a, p] = r[a, b, p] (+ bias[a]): (A, B, P) -> (B, A, P), e.g. a GEMM's (Cout, N,   \
   P) into NCHW */                                                                          \
void swap01_##S(const T *r, const T *bias, T *out, int64_t A, int64_t B, int64_t P,        \
                int nt) {                                                                   \
    _Pragma("omp parallel for collapse(2) schedule(static) num_threads(nt) if(nt > 1)")     \
    for (int64_t b = 0; b < B; b++)                                                         \
        for (int64_t a = 0; a < A; a++) {                                                   \
            const T *s = r + (a * B + b) * P;                                               \
            T *d = out + (b * A + a) * P;                                                   \
            if (bias) { const T v = bias[a]; for (int64_t p = 0; p < P; p++) d[p] = s[p] + v; } \
            else memcpy(d, s, sizeof(T) * P);                                               \
        }                                                                                   \
}

DEFINE(float, f32)
DEFINE(double, f64)
""".replace("DIMS", _DIMS)

_SIG = (c_void_p, c_void_p) + (c_int64,) * 14 + (c_int,)
_SIGNATURES = {}
for _s in ("f32", "f64"):
    _SIGNATURES.update({f"im2col2d_{_s}": _SIG[:-1] + (c_int64, c_int64, c_int),
                        f"col2im2d_{_s}": _SIG[:-1] + (c_int64, c_int64, c_int),
                        f"maxpool2d_{_s}": (c_void_p,) + _SIG,
                        f"maxpool2d_backward_{_s}": (c_void_p,) + _SIG,
                        f"swap01_{_s}": (c_void_p,) * 3 + (c_int64,) * 3 + (c_int,)})
LIB = NativeLibrary("conv_kernels", SOURCE, _SIGNATURES)
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _fn(kind, *arrays):
    """The C function `kind` for these arrays, or None when it does not apply."""
    a = arrays[0]
    if type(a) is not np.ndarray:
        return None
    s = _SUFFIX.get(a.dtype)
    if s is None or any(type(b) is not np.ndarray or b.dtype != a.dtype for b in arrays[1:]):
        return None
    return LIB.function(f"{kind}_{s}")


def usable(*arrays):
    """Whether the C kernels take these arrays (NumPy, one float dtype, built)."""
    return _fn("swap01", *arrays) is not None


def _as2d(nd, ks, stride, pads, dil, out, size):
    """The 14 size arguments of a 2-D kernel (1-D: a height of one)."""
    if nd == 1:
        ks, stride, dil, out, size = (1,) + ks, (1,) + stride, (1,) + dil, (1,) + out, \
            (1,) + size
        pads = ((0, 0),) + tuple(pads)
    return (size[0], size[1], ks[0], ks[1], stride[0], stride[1], pads[0][0], pads[1][0],
            dil[0], dil[1], out[0], out[1])


def im2col(a, ks, stride, pads, dil, out):
    """cols (C*prod(ks), N*prod(out)) of `a` (N, C, *S) with zero padding `pads` ((lo, hi)
    per dim; hi is implied by `out`), or None."""
    nd = len(ks)
    fn = _fn("im2col2d", a) if nd in (1, 2) else None
    if fn is None:
        return None
    a = np.ascontiguousarray(a)
    n, c = a.shape[:2]
    k, p = math.prod(ks), math.prod(out)      # (math.prod: np.prod costs ~5 us a call)
    cols = np.empty((c * k, n * p), a.dtype)
    fn(pointer(a), pointer(cols), n, c, *_as2d(nd, ks, stride, pads, dil, out, a.shape[2:]),
       n * p, p, LIB.team(cols.size))
    return cols


def conv_per_sample(a, w, ks, stride, pads, dil, out, bias=None):
    """The convolution (N, Co, *out) of `a` (N, C, *S) with `w` (Co, C, *ks) (one group), or
    None. im2col in the per-sample layout (N, C*K, P), then one GEMM per sample
    (NumPy's stacked matmul) writes its (Co, P) block straight into NCHW: no (Co, N, P)
    result to transpose, and each GEMM is BLAS-friendlier than one (Co, N*P) product."""
    nd = len(ks)
    fn = _fn("im2col2d", a, w) if nd in (1, 2) else None
    if fn is None or (bias is not None and (type(bias) is not np.ndarray or
                                            bias.dtype != a.dtype)):
        return None
    a = np.ascontiguousarray(a)
    n, c = a.shape[:2]
    k, p = math.prod(ks), math.prod(out)
    if k == 1 and all(s == 1 for s in stride) and not any(lo or hi for lo, hi in pads):
        cols = a.reshape(n, c, p)       # a 1x1 convolution's im2col is its input
    else:
        cols = np.empty((n, c * k, p), a.dtype)
        fn(pointer(a), pointer(cols), n, c, *_as2d(nd, ks, stride, pads, dil, out,
                                                     a.shape[2:]),
           p, c * k * p, LIB.team(cols.size))
    r = np.matmul(w.reshape(w.shape[0], c * k), cols)
    if bias is not None:
        np.add(r, bias.reshape(-1, 1), out=r)
    return r.reshape((n, w.shape[0]) + tuple(out))


def col2im(cols, shape, ks, stride, pads, dil, out):
    """The adjoint of im2col: `cols` (C*prod(ks), N*prod(out)), or (N, C*prod(ks),
    prod(out)) in the per-sample layout, summed into a new array of `shape` (N, C, *S), or
    None."""
    nd = len(ks)
    fn = _fn("col2im2d", cols) if nd in (1, 2) else None
    if fn is None:
        return None
    cols = np.ascontiguousarray(cols)
    dx = np.empty(shape, cols.dtype)
    p = math.prod(out)
    rs, ns = (p, cols.shape[1] * p) if cols.ndim == 3 else (shape[0] * p, p)
    fn(pointer(cols), pointer(dx), shape[0], shape[1],
       *_as2d(nd, ks, stride, pads, dil, out, tuple(shape[2:])), rs, ns, LIB.team(cols.size))
    return dx


def max_pool(a, ks, stride, pads, dil, out):
    """(tap int64, max) per window of `a` (N, C, *S): the first maximum, or the last NaN
    (as torch); positions outside `a` are chosen only by a window wholly outside it (-inf,
    tap 0, as the NumPy path). None where the kernel does not apply."""
    nd = len(ks)
    fn = _fn("maxpool2d", a) if nd in (1, 2) else None
    if fn is None:
        return None
    a = np.ascontiguousarray(a)
    shape = a.shape[:2] + tuple(out)
    best, tap = np.empty(shape, a.dtype), np.empty(shape, np.int64)
    fn(pointer(a), pointer(best), pointer(tap), a.shape[0], a.shape[1],
       *_as2d(nd, ks, stride, pads, dil, out, a.shape[2:]), LIB.team(a.size))
    return tap, best


def max_pool_backward(g, tap, size, ks, stride, pads, dil):
    """The input gradient (N, C, *size) of max pooling: each g added at its tap, or None."""
    nd = len(ks)
    fn = _fn("maxpool2d_backward", g) if nd in (1, 2) else None
    if fn is None or type(tap) is not np.ndarray or tap.dtype != np.int64:
        return None
    g, tap = np.ascontiguousarray(g), np.ascontiguousarray(tap)
    dx = np.empty(g.shape[:2] + tuple(size), g.dtype)
    fn(pointer(g), pointer(tap), pointer(dx), g.shape[0], g.shape[1],
       *_as2d(nd, ks, stride, pads, dil, g.shape[2:], tuple(size)), LIB.team(dx.size))
    return dx


def swap01(r, bias=None):
    """(A, B, ...) -> (B, A, ...) contiguous, plus bias[a] along A when given, or None."""
    fn = _fn("swap01", r) if bias is None else _fn("swap01", r, bias)
    if fn is None:
        return None
    r = np.ascontiguousarray(r)
    A, B = r.shape[:2]
    out = np.empty((B, A) + r.shape[2:], r.dtype)
    fn(pointer(r), None if bias is None else pointer(np.ascontiguousarray(bias)), pointer(out),
       A, B, math.prod(r.shape[2:]), LIB.team(r.size))
    return out
