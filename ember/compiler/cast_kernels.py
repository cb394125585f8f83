"""C kernels for float32 <-> bfloat16 / float16 conversion, installed into core/lowp_cast.

Autocast converts between float32 and bfloat16 around every lower-precision op; ml_dtypes
takes ~1.3 ns per element to round float32 to bfloat16 and ~0.8 ns to widen it (float16 in
NumPy: 2.9 / 1.4 ns). These loops are memory-bound instead. They give the same bits as
ml_dtypes and NumPy (tests/amp/test_cast_kernels.py compares them over every 16-bit pattern
and around every rounding boundary):

- float32 -> bfloat16: round to nearest even on the bit pattern; NaN -> sign | 0x7fc0.
- float32 -> float16: NumPy's npy_floatbits_to_halfbits (nearest even, subnormals, overflow
  to inf, NaN keeps the sign and the top 10 payload bits, never becoming inf), written
  without branches so that it vectorises; subnormals are rounded by the FPU (x + 0.5 in the
  default round-to-nearest-even mode; the library is never built with -ffast-math).
- bfloat16 -> float32: the 16 bits shifted up (exact); float16 -> float32: a 65536-entry
  table made by NumPy itself at load, so it is NumPy's widening by construction.

Big arrays are split over ember.set_num_threads's threads with OpenMP (one thread below
`PARALLEL_ELEMENTS`, where waking a team costs more than the loop). The library goes through
build.py's disk cache; without a C compiler nothing is installed and ml_dtypes/NumPy convert.
"""
import ctypes

import numpy as np

from ..core import dtype as D
from ..core import lowp_cast
from . import build, threads

PARALLEL_ELEMENTS = 1 << 18

SOURCE = r"""
#include <stdint.h>
#include <string.h>

#define PAR(n, nt) \
    _Pragma("omp parallel for schedule(static) num_threads(nt) if(nt > 1 && n >= %(par)d)")

static inline uint16_t f32_to_bf16(uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: ml_dtypes' quiet NaN */
        return (uint16_t)((u >> 16) & 0x8000u) | 0x7fc0u;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* branch-free, so the loop vectorises; every case selects its result */
static inline uint16_t f32_to_f16(uint32_t f) {
    uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t a = f & 0x7fffffffu;
    /* normal float16: rebias the exponent 127 -> 15, round the 13 dropped bits to even
       (a carry into the exponent is right, up to inf at 65520) */
    uint32_t b = a - 0x38000000u;
    uint32_t normal = (b + 0xfffu + ((b >> 13) & 1u)) >> 13;
    /* subnormal (|x| < 2^-14): x + 0.5 rounds x to a multiple of 2^-24, to nearest even,
       in the FPU; the low bits are then the float16 mantissa */
    float x, half = 0.5f, s;
    memcpy(&x, &a, 4);
    s = x + half;
    uint32_t sb;
    memcpy(&sb, &s, 4);
    uint32_t sub = sb - 0x3f000000u;
    /* NaN: NumPy keeps the top 10 payload bits, and never lets them all be 0 (inf) */
    uint32_t m = (a & 0x7fffffu) >> 13;
    uint32_t nan = 0x7c00u + m + (uint32_t)(m == 0u && (a & 0x7fffffu) != 0u);
    uint32_t r = a < 0x38800000u ? sub : normal;
    r = a >= 0x47800000u ? 0x7c00u : r;
    r = a >= 0x7f800000u ? nan : r;
    return (uint16_t)(sign | r);
}

void ember_f32_to_bf16(const uint32_t *src, uint16_t *dst, int64_t n, int nt) {
    PAR(n, nt)
    for (int64_t i = 0; i < n; i++) dst[i] = f32_to_bf16(src[i]);
}

void ember_bf16_to_f32(const uint16_t *src, uint32_t *dst, int64_t n, int nt) {
    PAR(n, nt)
    for (int64_t i = 0; i < n; i++) dst[i] = (uint32_t)src[i] << 16;
}

void ember_f32_to_f16(const uint32_t *src, uint16_t *dst, int64_t n, int nt) {
    PAR(n, nt)
    for (int64_t i = 0; i < n; i++) dst[i] = f32_to_f16(src[i]);
}

void ember_f16_to_f32(const uint16_t *src, uint32_t *dst, int64_t n, int nt,
                      const uint32_t *table) {
    PAR(n, nt)
    for (int64_t i = 0; i < n; i++) dst[i] = table[src[i]];
}
""" % {"par": PARALLEL_ELEMENTS}

_lib = None
_f16_table = None


def _load():
    """The loaded library (built once, then from the disk cache)."""
    path, _ = build.build_library(SOURCE)
    lib = ctypes.CDLL(path)
    for name in ("ember_f32_to_bf16", "ember_bf16_to_f32", "ember_f32_to_f16"):
        fn = getattr(lib, name)
        fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int)
        fn.restype = None
    lib.ember_f16_to_f32.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                     ctypes.c_int, ctypes.c_void_p)
    lib.ember_f16_to_f32.restype = None
    return lib


def _kernel(fn):
    def run(src, dst, n):
        fn(src.__array_interface__["data"][0], dst.__array_interface__["data"][0], n,
           threads._num_threads)
    run.__name__ = fn.__name__
    return run


def _f16_kernel(fn, table):
    tp = table.ctypes.data

    def run(src, dst, n):
        fn(src.__array_interface__["data"][0], dst.__array_interface__["data"][0], n,
           threads._num_threads, tp)
    run.__name__ = fn.__name__
    return run


def kernels():
    """{(src np.dtype, dst np.dtype): kernel} for lowp_cast.install; {} without a compiler."""
    global _lib, _f16_table
    if _lib is None:
        try:
            _lib = _load()
        except (build.CompilerUnavailable, build.CompileError, OSError):
            return {}
        _f16_table = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    f32, f16 = np.dtype(np.float32), np.dtype(np.float16)
    out = {(f32, f16): _kernel(_lib.ember_f32_to_f16),
           (f16, f32): _f16_kernel(_lib.ember_f16_to_f32, _f16_table)}
    if D.bfloat16.np is not None:
        out[(f32, D.bfloat16.np)] = _kernel(_lib.ember_f32_to_bf16)
        out[(D.bfloat16.np, f32)] = _kernel(_lib.ember_bf16_to_f32)
    return out


def install():
    """Install the kernels into ember.core.lowp_cast (called when the compiler is
    imported)."""
    lowp_cast.install(kernels)     # built at the first conversion that can use a kernel
