"""One-pass C kernels for the SGD and Adam/AdamW parameter updates.

NumPy spends ten passes over memory on an SGD-with-momentum step (scale the buffer, add the
gradient, a temporary for ``-lr * buf``, add it) and about fifteen on an Adam step; after a
backward pass the parameters and the optimizer's state are out of cache, so those passes are
what the step costs (0.84 ms for the 670k parameters of the benchmark MLP, against 0.40 ms
when the same arrays are hot). These kernels read each array once and write it once.

They compute exactly what the NumPy path computes, operation by operation in the same order
and the same dtype (the C is built with ``-ffp-contract=off``, and each Python float is
rounded to the array's dtype first, as NumPy does with a Python scalar), so the results are
bitwise the NumPy path's; tests/optim/test_fused_steps.py checks that and checks both
against torch. Each function returns False where it does not apply (a dtype other than
float32/float64, a non-contiguous or mismatched array, no C compiler, EMBER_EAGER_KERNELS=0),
and the optimizer then runs its NumPy path.

    if not sgd_update(x, g, buf, lr=0.1, momentum=0.9, dampening=0, weight_decay=0,
                      nesterov=False, maximize=False, first=False):
        ...  # NumPy
"""
import ctypes
import math

import numpy as np

from ..ops.native import NativeLibrary, pointer, c_int64, c_void_p, c_int

SOURCE = r"""
#include <stdint.h>
#include <math.h>
#include <omp.h>
/* SGD's flags */
#define MAXIMIZE 1
#define NESTEROV 2
#define FIRST 4
#define MOMENTUM 8
#define DAMPENING 16
#define L2 32
/* Adam's flags (MAXIMIZE and L2 as above) */
#define DECOUPLED 2
#define AMSGRAD 4
/* Each loop is compiled once per combination of flags (the switch below), so that no flag is
   tested per element and every variant vectorises. */
#define CASE1(LOOP, F) case (F): LOOP(F); break;
#define CASE2(LOOP, F) CASE1(LOOP, F) CASE1(LOOP, (F) + 1)
#define CASE4(LOOP, F) CASE2(LOOP, F) CASE2(LOOP, (F) + 2)
#define CASE8(LOOP, F) CASE4(LOOP, F) CASE4(LOOP, (F) + 4)
#define CASE16(LOOP, F) CASE8(LOOP, F) CASE8(LOOP, (F) + 8)
#define CASE32(LOOP, F) CASE16(LOOP, F) CASE16(LOOP, (F) + 16)
#define CASE64(LOOP, F) CASE32(LOOP, F) CASE32(LOOP, (F) + 32)
#define RANGE                                                                               \
    const int t_ = omp_get_thread_num(), k_ = omp_get_num_threads();                        \
    const int64_t lo = n * t_ / k_, hi = n * (t_ + 1) / k_;
#define DEFINE(T, S, SQRT)                                                                  \
void sgd_##S(T *restrict x, const T *restrict g, T *restrict b, int64_t n, double nlr_,    \
             double mo_, double damp1_, double wd_, int flags, int nt) {                    \
    const T nlr = (T)nlr_, mo = (T)mo_, damp1 = (T)damp1_, wd = (T)wd_;                     \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                      \
    {                                                                                       \
        RANGE                                                                               \
        switch (flags) { CASE64(SGD_LOOP_##S, 0) }                                          \
    }                                                                                       \
}                                                                                           \
void adam_##S(T *restrict x, const T *restrict g, T *restrict m, T *restrict v,             \
              T *restrict vmax, int64_t n, double w1_, double b2_, double c2_,              \
              double nstep_, double bc2s_, double eps_, double decay_, double wd_,          \
              int flags, int nt) {                                                          \
    const T w1 = (T)w1_, b2 = (T)b2_, c2 = (T)c2_, nstep = (T)nstep_, bc2s = (T)bc2s_;      \
    const T eps = (T)eps_, decay = (T)decay_, wd = (T)wd_, rest1 = (T)1 - w1;               \
    const int low = w1 < (T)0.5;                                                            \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                      \
    {                                                                                       \
        RANGE                                                                               \
        if (low) { switch (flags) { CASE64(ADAM_LOW_##S, 0) } }                             \
        else { switch (flags) { CASE64(ADAM_HIGH_##S, 0) } }                                \
    }                                                                                       \
}
#define SGD_LOOP(T, FL)                                                                     \
    for (int64_t i = lo; i < hi; i++) {                                                     \
        T gi = ((FL) & MAXIMIZE) ? -g[i] : g[i];                                            \
        if ((FL) & L2) gi = gi + wd * x[i];                                                 \
        T d = gi;                                                                           \
        if ((FL) & MOMENTUM) {                                                              \
            T bi;                                                                           \
            if ((FL) & FIRST) bi = gi;                                                      \
            else if ((FL) & DAMPENING) bi = b[i] * mo + damp1 * gi;                         \
            else bi = b[i] * mo + gi;                                                       \
            b[i] = bi;                                                                      \
            d = ((FL) & NESTEROV) ? gi + mo * bi : bi;                                      \
        }                                                                                   \
        x[i] = x[i] + nlr * d;                                                              \
    }
/* m <- lerp(m, g, w1): torch's two-sided formula, chosen by w1 < 0.5 outside the loop */
#define ADAM_LOOP(T, SQRT, FL, LERP)                                                        \
    for (int64_t i = lo; i < hi; i++) {                                                     \
        T gi = ((FL) & MAXIMIZE) ? -g[i] : g[i];                                            \
        T xi = x[i];                                                                        \
        if ((FL) & DECOUPLED) xi = xi * decay;                                              \
        else if ((FL) & L2) gi = gi + wd * xi;                                              \
        const T m0 = m[i];                                                                  \
        const T mi = LERP;                                                                  \
        m[i] = mi;                                                                          \
        T vi = v[i] * b2;                                                                   \
        vi = vi + (c2 * gi) * gi;                                                           \
        v[i] = vi;                                                                          \
        if ((FL) & AMSGRAD) {       /* np.maximum: a NaN in either wins */                  \
            const T old = vmax[i];                                                          \
            vi = (old < vi || vi != vi) ? vi : old;                                         \
            vmax[i] = vi;                                                                   \
        }                                                                                   \
        const T denom = SQRT(vi) / bc2s + eps;                                              \
        x[i] = xi + nstep * (mi / denom);                                                   \
    }
#define SGD_LOOP_f32(FL) SGD_LOOP(float, FL)
#define SGD_LOOP_f64(FL) SGD_LOOP(double, FL)
#define ADAM_LOW_f32(FL) ADAM_LOOP(float, sqrtf, FL, m0 + w1 * (gi - m0))
#define ADAM_HIGH_f32(FL) ADAM_LOOP(float, sqrtf, FL, gi - (gi - m0) * rest1)
#define ADAM_LOW_f64(FL) ADAM_LOOP(double, sqrt, FL, m0 + w1 * (gi - m0))
#define ADAM_HIGH_f64(FL) ADAM_LOOP(double, sqrt, FL, gi - (gi - m0) * rest1)
DEFINE(float, f32, sqrtf)
DEFINE(double, f64, sqrt)
"""
_D, _I64 = ctypes.c_double, c_int64
_SGD_SIG = (c_void_p,) * 3 + (_I64,) + (_D,) * 4 + (c_int, c_int)
_ADAM_SIG = (c_void_p,) * 5 + (_I64,) + (_D,) * 8 + (c_int, c_int)
LIB = NativeLibrary("optim_kernels", SOURCE, {
    "sgd_f32": _SGD_SIG, "sgd_f64": _SGD_SIG, "adam_f32": _ADAM_SIG, "adam_f64": _ADAM_SIG})
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
# the C source's flags: SGD's; Adam uses MAXIMIZE, L2, DECOUPLED and AMSGRAD
MAXIMIZE, NESTEROV, FIRST, MOMENTUM, DAMPENING, L2 = 1, 2, 4, 8, 16, 32
DECOUPLED, AMSGRAD = 2, 4


def _kernel(kind, x, *others):
    """The C function for `kind` on these arrays, or None: every array a C-contiguous
    ndarray of x's shape and dtype (float32 or float64)."""
    suffix = _SUFFIX.get(x.dtype)
    if suffix is None or type(x) is not np.ndarray or not x.flags.c_contiguous:
        return None
    for a in others:
        if a is not None and (type(a) is not np.ndarray or a.dtype != x.dtype or
                              a.shape != x.shape or not a.flags.c_contiguous):
            return None
    return LIB.function(f"{kind}_{suffix}")


def sgd_update(x, g, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize,
               first):
    """SGD's update of parameter array `x` from gradient `g` in place, with the momentum
    buffer `buf` (None without momentum; `first`: the buffer is set to the gradient, as on
    the first step). True when done, False when the caller must run its NumPy path."""
    fn = _kernel("sgd", x, g, buf)
    if fn is None or (momentum != 0) != (buf is not None):
        return False
    flags = ((MAXIMIZE if maximize else 0) | (NESTEROV if nesterov else 0) |
             (FIRST if first else 0) | (MOMENTUM if momentum != 0 else 0) |
             (DAMPENING if dampening else 0) | (L2 if weight_decay != 0 else 0))
    fn(pointer(x), pointer(g), 0 if buf is None else pointer(buf), x.size, float(-lr),
       float(momentum), float(1 - dampening), float(weight_decay), flags, LIB.team(x.size))
    return True


def adam_update(x, g, exp_avg, exp_avg_sq, max_exp_avg_sq, *, lr, beta1, beta2, eps,
                weight_decay, decoupled, maximize, step):
    """Adam's (AdamW's when `decoupled`) update of `x` in place at step number `step`,
    updating the moment arrays (and `max_exp_avg_sq` for amsgrad, else None). True when
    done, False when the caller must run its NumPy path."""
    fn = _kernel("adam", x, g, exp_avg, exp_avg_sq, max_exp_avg_sq)
    if fn is None:
        return False
    flags = (MAXIMIZE if maximize else 0) | (AMSGRAD if max_exp_avg_sq is not None else 0)
    if weight_decay != 0:
        flags |= DECOUPLED if decoupled else L2
    step_size = lr / (1 - beta1 ** step)        # the same Python arithmetic as adam.py's
    fn(pointer(x), pointer(g), pointer(exp_avg), pointer(exp_avg_sq),
       0 if max_exp_avg_sq is None else pointer(max_exp_avg_sq), x.size, float(1 - beta1),
       float(beta2), float(1 - beta2), float(-step_size), math.sqrt(1 - beta2 ** step),
       float(eps), float(1 - lr * weight_decay), float(weight_decay), flags,
       LIB.team(x.size))
    return True
