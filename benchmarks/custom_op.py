"""custom_op: the seeds' fused Swish (seed 2 §3.2) as a C kernel custom op, against the
two-op Python version ``x * sigmoid(x)`` in ember and in torch.

    python -m benchmarks.custom_op [--sizes 1000 100000 1000000] [--threads 1]

Prints the best-of-7 time per call (forward, and forward + backward) and the speedup of the
fused op over ember's two-op version. The fused kernel is one pass over x (and one over x
and the gradient in backward) with no temporaries; the two-op version makes an intermediate
sigmoid tensor, and its backward runs four elementwise ops.
"""
import argparse
import time

import ember
from ember.library import custom_op
from ember.utils.cpp_extension import load_inline

SWISH_C = r"""
/* em_sigmoidf: ember's vectorisable sigmoid, declared by cpp_extension */
void swish_fwd_f32(const float* x, float* y, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) y[i] = x[i] * em_sigmoidf(x[i]);
}
void swish_bwd_f32(const float* x, const float* g, float* gx, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) {
        float s = em_sigmoidf(x[i]);
        gx[i] = g[i] * (s + x[i] * s * (1.0f - s));
    }
}
"""


def make_swish():
    """The fused Swish custom op (float32) and its backward op."""
    lib = load_inline("bench_swish", c_sources=SWISH_C)

    @custom_op("bench::swish", mutates_args=())
    def swish(x: ember.Tensor) -> ember.Tensor:
        x = x.contiguous()
        y = ember.empty_like(x)
        lib.swish_fwd_f32(x, y, x.numel())
        return y

    @custom_op("bench::swish_backward", mutates_args=())
    def swish_backward(x: ember.Tensor, g: ember.Tensor) -> ember.Tensor:
        x, g = x.contiguous(), g.contiguous()
        gx = ember.empty_like(x)
        lib.swish_bwd_f32(x, g, gx, x.numel())
        return gx

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        x, = ctx.saved_tensors
        return swish_backward(x, g)

    swish.register_autograd(backward, setup_context=setup_context)
    return swish


def median_time(fn, target=0.3, samples=7):
    fn()
    n, t = 1, 0.0
    while t < target / samples:          # calibrate the inner loop count
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        n *= 2
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return min(times)      # best of `samples`: the least disturbed by other load


def cases(n, swish):
    import torch
    x = ember.randn(n, requires_grad=True)
    tx = torch.randn(n, requires_grad=True)

    def fwd(f, t):
        return lambda: f(t)

    def fwd_bwd(f, t):
        def run():
            f(t).sum().backward()
            t.grad = None
        return run

    def two_op(t):
        return t * t.sigmoid()
    return {
        "forward": {"fused C op": fwd(swish, x.detach()), "ember two-op": fwd(two_op, x.detach()),
                    "torch two-op": fwd(two_op, tx.detach())},
        "forward+backward": {"fused C op": fwd_bwd(swish, x), "ember two-op": fwd_bwd(two_op, x),
                             "torch two-op": fwd_bwd(two_op, tx)},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    swish = make_swish()
    print(f"{'elements':>10} {'pass':<17} {'fused C op':>12} {'ember two-op':>13} "
          f"{'torch two-op':>13} {'fused speedup':>14}")
    for n in args.sizes:
        for kind, fns in cases(n, swish).items():
            t = {k: median_time(f) for k, f in fns.items()}
            print(f"{n:>10} {kind:<17} {t['fused C op'] * 1e6:>10.1f}us "
                  f"{t['ember two-op'] * 1e6:>11.1f}us {t['torch two-op'] * 1e6:>11.1f}us "
                  f"{t['ember two-op'] / t['fused C op']:>13.2f}x")


if __name__ == "__main__":
    main()
