"""One-pass C kernels for the SGD and Adam/AdamW parameter updates.

NumPy spends ten passes over memory on an SGD-with-momentum step (scale the buffer, add the
gradient, a temporary for ``-lr * buf``, add it) and about fifteen on an Adam step; after a
backward pass the parameters and the optimizer's state are out of cache, so those passes are
what the step costs (0.84 ms for the 670k parameters of the benchmark MLP, against 0.40 ms
when the same arrays are hot). These kernels read each array once and write it once.

One C call updates all the parameters of a group (per dtype), as torch's multi-tensor
`foreach`/`fused` steps do: a GPT's 52 parameters cost 52 ctypes calls of ~25 us each
otherwise, more than the arithmetic.

They compute exactly what the NumPy path computes, operation by operation in the same order
and the same dtype (the C is built with ``-ffp-contract=off``, and each Python float is
rounded to the array's dtype first, as NumPy does with a Python scalar), so the results are
bitwise the NumPy path's; tests/optim/test_fused_steps.py checks that and checks both
against torch. `fusable` says where they do not apply (a dtype other than float32/float64,
a non-contiguous or mismatched array, no C compiler, EMBER_EAGER_KERNELS=0); the optimizer
runs its NumPy path for those parameters.

    if fusable(x, g, buf):
        items.append((x, g, buf, first))      # then, once per group:
    sgd_step(items, lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=False,
             maximize=False)
"""
import ctypes
import math
import weakref

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
/* Adam's flags (MAXIMIZE as above) */
#define DECOUPLED 2
#define AMSGRAD 4
#define ADAM_L2 8
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
/* One call updates every parameter of a group: ptrs holds each tensor's arrays (SGD: x, g,
   b; Adam: x, g, m, v, vmax), sizes their lengths, flags each one's variant (a momentum
   buffer's first step, say). One parallel region for all of them, each thread taking its
   share of every tensor, so no barrier between tensors. */
#define DEFINE(T, S, SQRT)                                                                  \
void sgd_##S(int64_t count, const int64_t *ptrs, const int64_t *sizes, const int *flags,    \
             double nlr_, double mo_, double damp1_, double wd_, int nt) {                  \
    const T nlr = (T)nlr_, mo = (T)mo_, damp1 = (T)damp1_, wd = (T)wd_;                     \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                      \
    for (int64_t t = 0; t < count; t++) {                                                   \
        T *restrict x = (T *)ptrs[3 * t];                                                   \
        const T *restrict g = (const T *)ptrs[3 * t + 1];                                   \
        T *restrict b = (T *)ptrs[3 * t + 2];                                               \
        const int64_t n = sizes[t];                                                         \
        RANGE                                                                               \
        switch (flags[t]) { CASE64(SGD_LOOP_##S, 0) }                                       \
    }                                                                                       \
}                                                                                           \
void adam_##S(int64_t count, const int64_t *ptrs, const int64_t *sizes, const int *flags,   \
              const double *nsteps, const double *bc2ss, double w1_, double b2_,            \
              double c2_, double eps_, double decay_, double wd_, int nt) {                 \
    const T w1 = (T)w1_, b2 = (T)b2_, c2 = (T)c2_;                                          \
    const T eps = (T)eps_, decay = (T)decay_, wd = (T)wd_, rest1 = (T)1 - w1;               \
    const int low = w1 < (T)0.5;                                                            \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                      \
    for (int64_t t = 0; t < count; t++) {                                                   \
        T *restrict x = (T *)ptrs[5 * t];                                                   \
        const T *restrict g = (const T *)ptrs[5 * t + 1];                                   \
        T *restrict m = (T *)ptrs[5 * t + 2];                                               \
        T *restrict v = (T *)ptrs[5 * t + 3];                                               \
        T *restrict vmax = (T *)ptrs[5 * t + 4];                                            \
        const T nstep = (T)nsteps[t], bc2s = (T)bc2ss[t];                                   \
        const int64_t n = sizes[t];                                                         \
        RANGE                                                                               \
        if (low) { switch (flags[t]) { CASE16(ADAM_LOW_##S, 0) } }                           \
        else { switch (flags[t]) { CASE16(ADAM_HIGH_##S, 0) } }                              \
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
        else if ((FL) & ADAM_L2) gi = gi + wd * xi;                                              \
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
_P = c_void_p
_SGD_SIG = (c_int64, _P, _P, _P) + (ctypes.c_double,) * 4 + (c_int,)
_ADAM_SIG = (c_int64, _P, _P, _P, _P, _P) + (ctypes.c_double,) * 6 + (c_int,)
LIB = NativeLibrary("optim_kernels", SOURCE, {
    "sgd_f32": _SGD_SIG, "sgd_f64": _SGD_SIG, "adam_f32": _ADAM_SIG, "adam_f64": _ADAM_SIG})
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
# the C source's flags: SGD's; Adam uses MAXIMIZE, DECOUPLED, AMSGRAD and its own L2
MAXIMIZE, NESTEROV, FIRST, MOMENTUM, DAMPENING, L2 = 1, 2, 4, 8, 16, 32
DECOUPLED, AMSGRAD, ADAM_L2 = 2, 4, 8


def fusable(x, *others):
    """True when the kernels take these arrays: C-contiguous ndarrays of x's shape and
    dtype, float32 or float64 (None stands for an absent array), and C is available."""
    if type(x) is not np.ndarray or x.dtype not in _SUFFIX or not x.flags.c_contiguous:
        return False
    for a in others:
        if a is not None and (type(a) is not np.ndarray or a.dtype != x.dtype or
                              a.shape != x.shape or not a.flags.c_contiguous):
            return False
    return LIB.function("sgd_f32") is not None


# data addresses of the long-lived arrays (parameters, optimizer state): reading one costs
# ~1.5 us, and a GPT has ~50 parameters of 4 arrays each; keyed by id, checked by weakref
_ADDRESSES = {}


def _address(a):
    hit = _ADDRESSES.get(id(a))
    if hit is not None and hit[0]() is a:
        return hit[1]
    if len(_ADDRESSES) > 4096:        # drop entries whose array is gone
        for k in [k for k, (r, _) in _ADDRESSES.items() if r() is None]:
            del _ADDRESSES[k]
    ptr = pointer(a)
    _ADDRESSES[id(a)] = (weakref.ref(a), ptr)
    return ptr


def _tables(items, arrays):
    """(count, address table, sizes) for `items`, whose first `arrays` fields are arrays
    (field 1, the gradient, is new every step; the others are cached)."""
    ptrs = []
    for it in items:
        for k in range(arrays):
            a = it[k]
            ptrs.append(0 if a is None else pointer(a) if k == 1 else _address(a))
    return (np.array(ptrs, dtype=np.int64),
            np.array([it[0].size for it in items], dtype=np.int64))


def _by_dtype(items):
    groups = {}
    for it in items:
        groups.setdefault(it[0].dtype, []).append(it)
    return groups.items()


def sgd_step(items, *, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """SGD's update, in place, of every (x, g, buf, first) in `items` (arrays `fusable`;
    buf None without momentum; first: the buffer is set to the gradient, as on the first
    step), in one C call per dtype."""
    base = ((MAXIMIZE if maximize else 0) | (NESTEROV if nesterov else 0) |
            (MOMENTUM if momentum != 0 else 0) | (DAMPENING if dampening else 0) |
            (L2 if weight_decay != 0 else 0))
    for dtype, group in _by_dtype(items):
        ptrs, sizes = _tables(group, 3)
        flags = np.array([base | (FIRST if it[3] else 0) for it in group], dtype=np.intc)
        LIB.function("sgd_" + _SUFFIX[dtype])(
            len(group), pointer(ptrs), pointer(sizes), pointer(flags), float(-lr),
            float(momentum), float(1 - dampening), float(weight_decay),
            LIB.team(int(sizes.sum())))


def adam_step(items, *, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    """Adam's (AdamW's when `decoupled`) update, in place, of every (x, g, exp_avg,
    exp_avg_sq, max_exp_avg_sq or None, step number) in `items` (arrays `fusable`), in one
    C call per dtype."""
    flags = MAXIMIZE if maximize else 0
    if weight_decay != 0:
        flags |= DECOUPLED if decoupled else ADAM_L2
    for dtype, group in _by_dtype(items):
        ptrs, sizes = _tables(group, 5)
        fl = np.array([flags | (AMSGRAD if it[4] is not None else 0) for it in group],
                      dtype=np.intc)
        # the same Python arithmetic as adam.py's NumPy path, per parameter (its step count)
        nsteps = np.array([-(lr / (1 - beta1 ** it[5])) for it in group])
        bc2s = np.array([math.sqrt(1 - beta2 ** it[5]) for it in group])
        LIB.function("adam_" + _SUFFIX[dtype])(
            len(group), pointer(ptrs), pointer(sizes), pointer(fl), pointer(nsteps),
            pointer(bc2s), float(1 - beta1), float(beta2), float(1 - beta2), float(eps),
            float(1 - lr * weight_decay), float(weight_decay), LIB.team(int(sizes.sum())))
