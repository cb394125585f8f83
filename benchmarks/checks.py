"""Small one-process checks quoted in notes: `python -m benchmarks.checks`.

1. (64, 256, 256) float32 einsum / matmul / bmm in ember beside NumPy's matmul (a Python loop
   over the batch would show as a large factor).
2. inference_mode beside no_grad on a small forward, alternating, medians.
3. `a + b` and `a @ b` on (8, 8) float32, ember beside torch (1 thread each), alternating.
4. Small-op-heavy code compiled: a 40-op chain on (8, 8) tensors, forward under no_grad and
   forward+backward, ember.compile (both backends, and the C backend with
   mode="reduce-overhead") beside ember eager, alternating, medians.
"""
import statistics
import timeit

import numpy as np

import ember


def median_time(fn, number, repeat=9):
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def batched_products():
    x = ember.randn(64, 256, 256)
    y = ember.randn(64, 256, 256)
    xa, ya = x.numpy(), y.numpy()
    base = median_time(lambda: np.matmul(xa, ya), 3)
    print(f"np.matmul (64,256,256): {base * 1e3:.1f} ms")
    for name, fn in (("ember.matmul", lambda: ember.matmul(x, y)),
                     ("ember.bmm", lambda: ember.bmm(x, y)),
                     ("ember.einsum", lambda: ember.einsum("bij,bjk->bik", x, y))):
        t = median_time(fn, 3)
        print(f"{name:14s}: {t * 1e3:.1f} ms  ({t / base:.2f}x NumPy's matmul)")


def grad_modes():
    a, b, c = ember.randn(4), ember.randn(4), ember.randn(4)

    def body():
        for _ in range(1000):
            a * b + c
    samples = {"no_grad": [], "inference_mode": []}
    for _ in range(9):
        with ember.no_grad():
            samples["no_grad"].append(timeit.timeit(body, number=1) / 1000)
        with ember.inference_mode():
            samples["inference_mode"].append(timeit.timeit(body, number=1) / 1000)
    for k, v in samples.items():
        print(f"a * b + c under {k:15s}: {statistics.median(v) * 1e6:.2f} us (median of 9)")


def small_ops():
    import torch
    torch.set_num_threads(1)
    ember.set_num_threads(1)
    libs = {"ember": ember, "torch": torch}
    samples = {(lib, op): [] for lib in libs for op in ("a + b", "a @ b")}
    for _ in range(7):
        for name, lib in libs.items():
            a, b = lib.ones(8, 8), lib.ones(8, 8)
            samples[(name, "a + b")].append(timeit.timeit(lambda: a + b, number=50000) / 50000)
            samples[(name, "a @ b")].append(timeit.timeit(lambda: a @ b, number=50000) / 50000)
    for (name, op), v in samples.items():
        print(f"{op} (8x8 float32) {name:5s}: {statistics.median(v) * 1e6:.2f} us (median of 7)")


def compiled_small_ops():
    ember.set_num_threads(1)

    def chain(x, w):
        for _ in range(10):
            x = ((x @ w).tanh() * 0.5 + x).relu()
        return x.sum()
    x = ember.randn(8, 8)
    w = ember.randn(8, 8, requires_grad=True)
    fns = {"eager": chain, "numpy": ember.compile(chain, backend="numpy"),
           "c": ember.compile(chain, backend="c"),
           "c reduce-overhead": ember.compile(chain, backend="c", mode="reduce-overhead")}

    def fwd(f):
        with ember.no_grad():
            f(x, w)

    def fwd_bwd(f):
        f(x, w).backward()
    for name, body in (("forward (no_grad)", fwd), ("forward+backward", fwd_bwd)):
        for f in fns.values():
            body(f), body(f)                  # trace, then a first replay
        samples = {k: [] for k in fns}
        for _ in range(7):
            for k, f in fns.items():
                samples[k].append(timeit.timeit(lambda: body(f), number=200) / 200)
        med = {k: statistics.median(v) for k, v in samples.items()}
        print(f"40-op chain on (8, 8), {name}: " + ", ".join(
            f"{k} {v * 1e6:.0f} us" for k, v in med.items())
            + f"; eager/compiled: numpy {med['eager'] / med['numpy']:.2f}x, "
            f"c {med['eager'] / med['c']:.2f}x, "
            f"c reduce-overhead {med['eager'] / med['c reduce-overhead']:.2f}x")


if __name__ == "__main__":
    batched_products()
    grad_modes()
    small_ops()
    compiled_small_ops()
