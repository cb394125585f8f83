"""Vectorisable math for generated C kernels: exp, log, log1p, expm1, tanh, sigmoid, erf.

glibc's libm is scalar (a call per element stops GCC from vectorising the loop), and its
vector variants are only declared under -ffast-math, which breaks the NaN/inf semantics eager
keeps. So these functions are written as branch-free C (range reduction + polynomials, specials
chosen with `?:` which GCC turns into blends) that GCC vectorises inside `#pragma omp simd`
loops with plain `-O3 -march=native` (plus -fno-math-errno, which only drops errno).

Every function handles NaN (propagated), +-inf, overflow to inf, underflow to 0 (through
subnormals for exp) and -0.0 like NumPy does. Polynomials: Taylor series for exp/expm1/log (the
reduced ranges are small), weighted least-squares fits on Chebyshev nodes against mpmath for
erf; float32 tanh and erf are single rationals x P(x^2)/Q(x^2), chosen for speed: no exp, so a
loop of them is memory-bound (2-2.6x faster than the exp-based forms, a few ulp less exact).

Measured max error (float32 against float64 NumPy/SciPy; float64 against long-double NumPy, erf
against SciPy's float64 erf, whose own error is part of the figure), sweeping +-1e-44..1e38 /
+-1e-320..1e308 log-spaced plus uniform grids on [0, 10] and [0, 800] and the specials
(tests/compiler/test_cmath.py asserts these bounds + 1 ulp of headroom):
    float32: exp 0.9, log 0.8, log1p 1.5, expm1 1.3, tanh 4.5, sigmoid 2.4, erf 4.5 ulp
             (tanh and erf: relative error <= 3e-7)
    float64: exp 1, log 1, log1p 1, expm1 2, tanh 3, sigmoid 4, erf 3 ulp
(sigmoid keeps subnormal results for x < -87 / -709 where 1/(1+exp(-x)) overflows to 0.)
sin, cos and pow (other than its constant-exponent fast paths) stay libm calls: correct, but a
loop using them is not vectorised.
"""
import math

SOURCE = r"""
/* ---- ember vectorisable math (ember/compiler/cmath.py) ---- */
#include <stdint.h>
#include <string.h>
#include <math.h>

/* polynomials use fused multiply-adds where the CPU has them; kernels themselves are built
   with -ffp-contract=off so user arithmetic rounds exactly like eager NumPy */
#ifdef __FMA__
#define EM_FMAF(a, b, c) __builtin_fmaf((a), (b), (c))
#define EM_FMA(a, b, c) __builtin_fma((a), (b), (c))
#else
#define EM_FMAF(a, b, c) ((a) * (b) + (c))
#define EM_FMA(a, b, c) ((a) * (b) + (c))
#endif

static inline int32_t em_fbits(float x) { int32_t i; memcpy(&i, &x, 4); return i; }
static inline float em_ffrom(int32_t i) { float x; memcpy(&x, &i, 4); return x; }
static inline int64_t em_dbits(double x) { int64_t i; memcpy(&i, &x, 8); return i; }
static inline double em_dfrom(int64_t i) { double x; memcpy(&x, &i, 8); return x; }

/* exp: x = n ln2 + r, |r| <= ln2/2; e^r by Taylor; 2^n applied in two halves so subnormal
   results round once and n = 128 does not overflow the scale itself. The clamps pass NaN. */
static inline float em_expf(float x) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    float t = xc * 1.44269504088896341f + 12582912.0f;         /* round via 1.5*2^23 */
    float n = t - 12582912.0f;
    int32_t ni = em_fbits(t) - 0x4B400000;
    float r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = @EXPF@;
    int32_t n1 = ni >> 1, n2 = ni - n1;
    return p * em_ffrom((n1 + 127) << 23) * em_ffrom((n2 + 127) << 23);
}

static inline double em_exp(double x) {
    double xc = x > 710.0 ? 710.0 : x;
    xc = xc < -746.0 ? -746.0 : xc;
    double t = xc * 1.4426950408889634 + 6755399441055744.0;    /* 1.5*2^52 */
    double n = t - 6755399441055744.0;
    int64_t ni = em_dbits(t) - em_dbits(6755399441055744.0);
    double r = (xc - n * 0.6931471803691238) - n * 1.9082149292705877e-10;
    double p = @EXP@;
    int64_t n1 = ni >> 1, n2 = ni - n1;
    return p * em_dfrom((n1 + 1023) << 52) * em_dfrom((n2 + 1023) << 52);
}

/* log: x = 2^k m, m in [sqrt(1/2), sqrt(2)); log(m) = log(1+f) = f - f^2/2 + s(f^2/2 + R(s^2))
   with s = f/(2+f) (fdlibm's arrangement, R by its atanh series). */
static inline float em_log_coref(float x, float *kout) {
    int sub = x < 1.17549435e-38f;
    float xs = sub ? x * 8388608.0f : x;
    int32_t ix = em_fbits(xs);
    int32_t k = (ix - 0x3f3504f3) >> 23;
    float m = em_ffrom(ix - (k << 23));
    *kout = (float)k - (sub ? 23.0f : 0.0f);
    return m - 1.0f;
}

static inline float em_logf(float x) {
    float k;
    float f = em_log_coref(x, &k);
    float s = f / (2.0f + f), z = s * s;
    float R = z * @LOGF@;
    float hf = 0.5f * f * f;
    float y = k * 0.693145751953125f - ((hf - (s * (hf + R) + k * 1.428606765330187e-06f)) - f);
    y = x < 0.0f ? NAN : y;
    y = x == 0.0f ? -INFINITY : y;
    y = x == INFINITY ? x : y;
    return x != x ? x : y;
}

static inline double em_log_core(double x, double *kout) {
    int sub = x < 2.2250738585072014e-308;
    double xs = sub ? x * 18014398509481984.0 : x;             /* 2^54 */
    int64_t ix = em_dbits(xs);
    /* k = (ix - c) >> 52 arithmetically, written as a logical shift of a value made
       non-negative (+2^62), and (double)k by the 1.5 * 2^52 trick: AVX2 has neither a
       64-bit arithmetic shift nor an int64 -> double conversion (AVX-512 has both), and
       GCC would not vectorise the loop without them */
    int64_t k = (int64_t)((uint64_t)(ix - 0x3fe6a09e667f3bcdLL + (1LL << 62)) >> 52) - 1024;
    double m = em_dfrom(ix - (k << 52));
    *kout = (em_dfrom(k + 0x4338000000000000LL) - 6755399441055744.0) - (sub ? 54.0 : 0.0);
    return m - 1.0;
}

static inline double em_log(double x) {
    double k;
    double f = em_log_core(x, &k);
    double s = f / (2.0 + f), z = s * s;
    double R = z * @LOG@;
    double hf = 0.5 * f * f;
    double y = k * 0.6931471803691238 - ((hf - (s * (hf + R) + k * 1.9082149292705877e-10)) - f);
    y = x < 0.0 ? NAN : y;
    y = x == 0.0 ? -INFINITY : y;
    y = x == INFINITY ? x : y;
    return x != x ? x : y;
}

/* log1p(x) = log(u) - ((u - 1) - x)/u with u = 1 + x rounded: the second term restores what
   rounding u lost. */
static inline float em_log1pf(float x) {
    float u = 1.0f + x;
    float y = em_logf(u) - ((u - 1.0f) - x) / u;
    y = x == -1.0f ? -INFINITY : y;
    y = x == INFINITY ? x : y;
    return x == 0.0f ? x : y;                                    /* keeps -0.0 */
}

static inline double em_log1p(double x) {
    double u = 1.0 + x;
    double y = em_log(u) - ((u - 1.0) - x) / u;
    y = x == -1.0 ? -INFINITY : y;
    y = x == INFINITY ? x : y;
    return x == 0.0 ? x : y;
}

/* expm1 core for x clamped to [-18, 20] (float) / [-40, 40] (double):
   2^n (expm1(r) + 1) - 1 = 2^n expm1(r) + (2^n - 1), both terms exact-ish. */
static inline float em_expm1_coref(float x) {
    float xc = x > 20.0f ? 20.0f : x;
    xc = xc < -18.0f ? -18.0f : xc;
    float t = xc * 1.44269504088896341f + 12582912.0f;
    float n = t - 12582912.0f;
    int32_t ni = em_fbits(t) - 0x4B400000;
    float r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = EM_FMAF(r * r, @EXPM1F@, r);
    float s = em_ffrom((ni + 127) << 23);
    return EM_FMAF(s, p, s - 1.0f);
}

static inline float em_expm1f(float x) {
    float y = x > 20.0f ? em_expf(x) : em_expm1_coref(x);
    return x == 0.0f ? x : y;
}

static inline double em_expm1_core(double x) {
    double xc = x > 40.0 ? 40.0 : x;
    xc = xc < -40.0 ? -40.0 : xc;
    double t = xc * 1.4426950408889634 + 6755399441055744.0;
    double n = t - 6755399441055744.0;
    int64_t ni = em_dbits(t) - em_dbits(6755399441055744.0);
    double r = (xc - n * 0.6931471803691238) - n * 1.9082149292705877e-10;
    double p = EM_FMA(r * r, @EXPM1@, r);
    double s = em_dfrom((ni + 1023) << 52);
    return EM_FMA(s, p, s - 1.0);
}

static inline double em_expm1(double x) {
    double y = x > 40.0 ? em_exp(x) : em_expm1_core(x);
    return x == 0.0 ? x : y;
}

/* tanh, float: one rational x P(x^2)/Q(x^2) on |x| <= 8 (8e-9 relative in exact arithmetic,
   ~5 ulp after float rounding; tanh(8) is 1 - 2.3e-7), clamped to 1 above: no exp, one
   division, so the loop stays memory-bound like erf's.
   double: tanh|x| = e/(e+2), e = expm1(2|x|), saturating at |x| = 20. */
static inline float em_tanhf(float x) {
    float a = fabsf(x);
    a = a > 8.0f ? 8.0f : a;
    float z = a * a;
    float y = a * @TANHPF@ / @TANHQF@;
    y = y > 1.0f ? 1.0f : y;
    return copysignf(y, x);
}

static inline double em_tanh(double x) {
    double a = fabs(x);
    a = a > 20.0 ? 20.0 : a;
    double e = em_expm1_core(2.0 * a);
    return copysign(e / (e + 2.0), x);
}

/* sigmoid from e = exp(-|x|) <= 1: 1/(1+e) for x >= 0, e/(1+e) below (never overflows, so tiny
   results stay accurate down to the subnormals). */
static inline float em_sigmoidf(float x) {
    float e = em_expf(-fabsf(x)), s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s;
}
static inline double em_sigmoid(double x) {
    double e = em_exp(-fabs(x)), s = 1.0 / (1.0 + e);
    return x >= 0.0 ? s : e * s;
}

/* erf, float: one rational x P(x^2)/Q(x^2) on |x| <= 4 (a weighted least-squares fit against
   mpmath, ~2.3e-9 relative in exact arithmetic; float rounding brings it to ~4.5 ulp near 1),
   clamped to 1 above (erf(3.92) rounds to 1.0f). No exp and one division: memory-bound speed.
   double: |x| < 1: x P(x^2); 1 <= |x| (clamped to 6, where erf rounds to 1):
   1 - exp(-x^2) Q, Q fitted to erfc(x) exp(x^2) in two pieces. */
static inline float em_erff(float x) {
    float a = fabsf(x);
    a = a > 4.0f ? 4.0f : a;
    float z = a * a;
    float p = @ERFPF@;
    float q = @ERFQF@;
    float y = a * p / q;
    y = y > 1.0f ? 1.0f : y;
    return copysignf(y, x);
}

static const double em_erf_b1[21] = {
    0.2849722347374364, -0.0982322591358639, 0.03136704192398659, -0.009390935492460787,
    0.0026591791241939782, -0.0007168914456002332, 0.00018495607833372518,
    -4.585616725282434e-05, 1.0962893654895245e-05, -2.5345101936955166e-06,
    5.680165322666529e-07, -1.2366204524714345e-07, 2.6200670353797183e-08,
    -5.410707062266305e-09, 1.0906070447436768e-09, -2.1525456858825415e-10,
    4.1648677397891586e-11, -7.623970610548138e-12, 1.3367290361168324e-12,
    -3.2941526889042675e-13, 7.464288359448918e-14};
static const double em_erf_b2[21] = {
    0.1293452747859879, -0.05065257997557654, 0.01939134046373593, -0.007266954317470019,
    0.002669003717065132, -0.0009617329800835574, 0.00034031161374345736,
    -0.00011835418382593058, 4.048627659953302e-05, -1.3631749222967662e-05,
    4.520580183626236e-06, -1.4774465137769034e-06, 4.7607111991611397e-07,
    -1.5116773346519365e-07, 4.7458157778529695e-08, -1.4926087107907053e-08,
    4.542157716065976e-09, -1.1948488438032622e-09, 3.693251663745394e-10,
    -1.8894038457685468e-10, 5.276479286566379e-11};

static inline double em_erf(double x) {
    double z = x * x;
    double pa = x * @ERFA@;
    double a = fabs(x);
    double b = a < 1.0 ? 1.0 : (a > 6.0 ? 6.0 : a);
    int lo = b < 2.5;
    double t = lo ? (b - 1.75) * (1.0 / 0.75) : (b - 4.25) * (1.0 / 1.75);
    double q = 0.0;
    EM_ERF_HORNER
    double pb = 1.0 - em_exp(-b * b) * q;
    return a < 1.0 ? pa : copysign(pb, x);
}
/* ---- end of ember math ---- */
"""



def _horner(var, coeffs, double):
    """C for sum(coeffs[i] * var**i) as nested fused multiply-adds."""
    fma = "EM_FMA" if double else "EM_FMAF"
    code = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        code = f"{fma}({var}, {code}, {c})"
    return code


def _inv_fact(k, double):
    return repr(1.0 / math.factorial(k)) if double else "%.9ef" % (1.0 / math.factorial(k))


_POLYS = {
    "EXPF": ("r", [_inv_fact(k, False) for k in range(8)], False),
    "EXP": ("r", [_inv_fact(k, True) for k in range(14)], True),
    "EXPM1F": ("r", [_inv_fact(k, False) for k in range(2, 9)], False),
    "EXPM1": ("r", [_inv_fact(k, True) for k in range(2, 15)], True),
    "LOGF": ("z", ["%.9ef" % (2.0 / (2 * k + 1)) for k in range(1, 6)], False),
    "LOG": ("z", [repr(2.0 / (2 * k + 1)) for k in range(1, 12)], True),
    "ERFPF": ("z", """1.128379226e+00f 1.852866709e-01f 5.431133136e-02f 3.850862617e-03f
                 3.789520997e-04f 4.665324468e-06f -1.310798936e-08f""".split(), False),
    "ERFQF": ("z", """1.0f 4.975394309e-01f 1.139781773e-01f 1.546228491e-02f
                 1.306942315e-03f 6.292630133e-05f""".split(), False),
    "TANHPF": ("z", """1.0f 1.344928443e-01f 3.577298718e-03f 2.198984839e-05f
                  1.536717775e-08f""".split(), False),
    "TANHQF": ("z", """1.0f 4.678261280e-01f 2.618608251e-02f 3.420662833e-04f
                  8.577242170e-07f""".split(), False),
    "ERFA": ("z", """1.1283791670955126 -0.37612638903183593 0.11283791670946422
                -0.02686617064341059 0.005223977608263572 -0.0008548326021555292
                0.00012055296094896663 -1.4924757004362964e-05 1.6447646035156651e-06
                -1.6210015397305692e-07 1.3726111363360568e-08 -7.806289857052296e-10""".split(),
             True),
}
for _name, (_var, _coeffs, _double) in _POLYS.items():
    SOURCE = SOURCE.replace(f"@{_name}@", _horner(_var, _coeffs, _double))

# the Horner steps of em_erf written out: GCC does not vectorise the loop form (an inner loop)
SOURCE = SOURCE.replace("EM_ERF_HORNER", "\n    ".join(
    f"q = EM_FMA(q, t, (lo ? em_erf_b1[{i}] : em_erf_b2[{i}]));" for i in range(20, -1, -1)))
