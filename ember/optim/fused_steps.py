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
/* -O3 would unswitch each loop on every loop-invariant option below, one copy per
   combination: seconds of build time for no speed (the blends cost nothing beside memory) */
#pragma GCC optimize ("no-unswitch-loops")
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
#define RANGE                                                                               \
    const int t_ = omp_get_thread_num(), k_ = omp_get_num_threads();                        \
    const int64_t lo = n * t_ / k_, hi = n * (t_ + 1) / k_;
/* The options are loop-invariant locals, so GCC turns each `? :` into a vector blend: both
   sides are computed and one is kept, and the kept one is exactly the NumPy path's value. One
   loop then serves every combination of options (a loop per combination took GCC seconds to
   build); only which arrays exist (a momentum buffer, Adam's max_exp_avg_sq) picks the loop.
   On the first step the buffer already holds a copy of the gradient, so reading it is safe. */
#define SGD_LOOP(T, WITH_B)                                                                 \
    for (int64_t i = lo; i < hi; i++) {                                                     \
        const T x0 = x[i], g0 = g[i];                                                       \
        T gi = neg ? -g0 : g0;                                                              \
        gi = l2 ? gi + wd * x0 : gi;                                                        \
        T d = gi;                                                                           \
        if (WITH_B) {                                                                       \
            const T b0 = b[i];                                                              \
            const T bm = damp ? b0 * mo + damp1 * gi : b0 * mo + gi;                        \
            const T bi = first ? gi : bm;                                                   \
            b[i] = bi;                                                                      \
            d = nest ? gi + mo * bi : bi;                                                   \
        }                                                                                   \
        x[i] = x0 + nlr * d;                                                                \
    }
/* m <- lerp(m, g, w1) with torch's two-sided formula (the side chosen by w1 < 0.5) */
#define ADAM_LOOP(T, SQRT, WITH_VMAX)                                                       \
    for (int64_t i = lo; i < hi; i++) {                                                     \
        const T g0 = g[i], x0 = x[i];                                                       \
        T gi = neg ? -g0 : g0;                                                              \
        const T xi = dec ? x0 * decay : x0;                                                 \
        gi = l2 ? gi + wd * x0 : gi;                                                        \
        const T m0 = m[i];                                                                  \
        const T mi = low ? m0 + w1 * (gi - m0) : gi - (gi - m0) * rest1;                    \
        m[i] = mi;                                                                          \
        const T vs = v[i] * b2;                                                             \
        T vi = vs + (c2 * gi) * gi;                                                         \
        v[i] = vi;                                                                          \
        if (WITH_VMAX) {            /* np.maximum: a NaN in either wins */                  \
            const T old = vmax[i];                                                          \
            vi = (old < vi || vi != vi) ? vi : old;                                         \
            vmax[i] = vi;                                                                   \
        }                                                                                   \
        const T denom = SQRT(vi) / bc2s + eps;                                              \
        x[i] = xi + nstep * (mi / denom);                                                   \
    }
/* One call updates every parameter of a group: ptrs holds each tensor's arrays (SGD: x, g,
   b; Adam: x, g, m, v, vmax), sizes their lengths, flags each one's options (a momentum
   buffer's first step, say). One parallel region for all of them, each thread taking its
   share of every tensor, so no barrier between tensors. */
#define DEFINE(T, S, SQRT)                                                                  \
void sgd_##S(int64_t count, const int64_t *ptrs, const int64_t *sizes, const int *flags,    \
             double nlr_, double mo_, double damp1_, double wd_, int nt) {                  \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                      \
    {                                                                                       \
        const T nlr = (T)nlr_, mo = (T)mo_, damp1 = (T)damp1_, wd = (T)wd_;                 \
        for (int64_t t = 0; t < count; t++) {                                               \
            T *restrict x = (T *)ptrs[3 * t];                                               \
            const T *restrict g = (const T *)ptrs[3 * t + 1];                               \
            T *restrict b = (T *)ptrs[3 * t + 2];                                           \
            const int64_t n = sizes[t];                                                     \
            const int f = flags[t];                                                         \
            const int neg = (f & MAXIMIZE) != 0, l2 = (f & L2) != 0;                        \
            const int damp = (f & DAMPENING) != 0, first = (f & FIRST) != 0;                \
            const int nest = (f & NESTEROV) != 0;                                           \
            RANGE                                                                           \
            if (f & MOMENTUM) { SGD_LOOP(T, 1) } else { SGD_LOOP(T, 0) }                    \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
void adam_##S(int64_t count, const int64_t *ptrs, const int64_t *sizes, const int *flags,   \
              const double *nsteps, const double *bc2ss, double w1_, double b2_,            \
              double c2_, double eps_, double decay_, double wd_, int nt) {                 \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                      \
    {                                                                                       \
        const T w1 = (T)w1_, b2 = (T)b2_, c2 = (T)c2_;                                      \
        const T eps = (T)eps_, decay = (T)decay_, wd = (T)wd_, rest1 = (T)1 - w1;           \
        const int low = w1 < (T)0.5;                                                        \
        for (int64_t t = 0; t < count; t++) {                                               \
            T *restrict x = (T *)ptrs[5 * t];                                               \
            const T *restrict g = (const T *)ptrs[5 * t + 1];                               \
            T *restrict m = (T *)ptrs[5 * t + 2];                                           \
            T *restrict v = (T *)ptrs[5 * t + 3];                                           \
            T *restrict vmax = (T *)ptrs[5 * t + 4];                                        \
            const T nstep = (T)nsteps[t], bc2s = (T)bc2ss[t];                               \
            const int64_t n = sizes[t];                                                     \
            const int f = flags[t];                                                         \
            const int neg = (f & MAXIMIZE) != 0, dec = (f & DECOUPLED) != 0;                \
            const int l2 = (f & ADAM_L2) != 0;                                              \
            RANGE                                                                           \
            if (f & AMSGRAD) { ADAM_LOOP(T, SQRT, 1) } else { ADAM_LOOP(T, SQRT, 0) }       \
        }                                                                                   \
    }                                                                                       \
}
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
