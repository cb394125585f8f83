"""Generated C under AddressSanitizer and UBSan (issue 19, part 4).

A child process with EMBER_SANITIZE=1 builds every library with
`-fsanitize=address,undefined -fno-sanitize-recover=all` (ember/compiler/build.py) and, since
the libraries are loaded by ctypes into a Python that was not built with ASan, runs with the
compiler's libasan preloaded (LD_PRELOAD; leak checking off: the interpreter's own
allocations at exit are not ours). In it, compiled models train and infer on the C backend
and must equal eager ember: pointwise chains over broadcast, transposed and sliced inputs,
reductions, an MLP with LayerNorm/GELU/cross_entropy trained for three compiled steps, a
small causal-attention transformer block, and the fused eager kernels (gelu, layer_norm,
attention). Any sanitizer report aborts the child, which fails the test with the report.

A control case checks the harness itself catches a bug: a C extension that writes one
element past its buffer must be reported by ASan in the same kind of child.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _runtime(name):
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        return None
    res = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True)
    path = res.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBASAN = _runtime("libasan.so")
needs_asan = pytest.mark.skipif(LIBASAN is None, reason="the C compiler has no libasan")


def run_sanitized(code, tmp_path, timeout=600):
    env = dict(os.environ, EMBER_SANITIZE="1", EMBER_CACHE_DIR=str(tmp_path / "cache"),
               LD_PRELOAD=LIBASAN, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          timeout=timeout, capture_output=True, text=True, cwd=str(tmp_path))


MODELS = """
    import numpy as np
    import ember
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.compiler import build

    assert "-fsanitize=address,undefined" in build.FLAGS, build.FLAGS
    ember.manual_seed(0)
    rng = np.random.default_rng(0)

    def same(a, b, tol=1e-5):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)

    # pointwise chains and reductions over broadcast, transposed and sliced inputs
    def chain(a, b, c):
        y = (a.t() * b + c).exp() - (a.t() - 0.5).sin() * c
        return y.softmax(-1), y.sum(0), y.amax(1, keepdim=True), (y * y).mean()
    a = ember.tensor(rng.standard_normal((37, 53)).astype(np.float32))
    b = ember.tensor(rng.standard_normal((1, 37)).astype(np.float32))
    c = ember.tensor(rng.standard_normal((53, 74)).astype(np.float32))[:, ::2]
    compiled = ember.compile(chain, backend="c")
    for args in [(a, b, c), (a[:, 1:], b[:, :], c[1:])]:
        for got, want in zip(compiled(*args), chain(*args)):
            same(got, want)

    # an MLP trained for three compiled steps against eager from the same weights
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(12, 33), nn.LayerNorm(33), nn.GELU(),
                                     nn.Linear(33, 5))
        def forward(self, x, y):
            return F.cross_entropy(self.net(x), y)
    eager_m, comp_m = MLP(), MLP()
    comp_m.load_state_dict(eager_m.state_dict())
    opt_e = ember.optim.AdamW(eager_m.parameters(), lr=1e-2)
    opt_c = ember.optim.AdamW(comp_m.parameters(), lr=1e-2)
    step_m = ember.compile(comp_m, backend="c")
    for i in range(3):
        x = ember.tensor(rng.standard_normal((17, 12)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 5, 17))
        for m, fwd, opt in ((eager_m, eager_m, opt_e), (comp_m, step_m, opt_c)):
            opt.zero_grad()
            fwd(x, y).backward()
            opt.step()
        for p, q in zip(eager_m.parameters(), comp_m.parameters()):
            same(p, q, 1e-4)

    # a causal-attention block, forward and backward
    class Block(nn.Module):
        def __init__(self, d=32, h=4):
            super().__init__()
            self.h, self.ln, self.qkv, self.proj = h, nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return x + self.proj(y.transpose(1, 2).reshape(B, T, C))
    blk = Block()
    cblk = ember.compile(blk, backend="c")
    x = ember.tensor(rng.standard_normal((3, 11, 32)).astype(np.float32), requires_grad=True)
    want = blk(x); want.square().sum().backward(); gx = x.grad.clone(); x.grad = None
    got = cblk(x); got.square().sum().backward()
    same(got, want, 1e-4); same(x.grad, gx, 1e-4)

    # the fused eager kernels (big enough inputs to use them)
    big = ember.tensor(rng.standard_normal((64, 257)).astype(np.float32), requires_grad=True)
    F.gelu(big).sum().backward()
    F.layer_norm(big, (257,)).square().sum().backward()
    q = ember.tensor(rng.standard_normal((2, 4, 64, 32)).astype(np.float32), requires_grad=True)
    F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()

    assert build.stats["compiled"] > 0, build.stats
    print("sanitized kernels built:", build.stats["compiled"])
"""


@needs_asan
def test_compiled_models_run_clean_under_asan_and_ubsan(tmp_path):
    res = run_sanitized(MODELS, tmp_path)
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-6000:])
    assert "sanitized kernels built:" in res.stdout
    assert "runtime error" not in res.stderr and "AddressSanitizer" not in res.stderr


OVERFLOW = """
    import numpy as np
    from ember.utils.cpp_extension import load_inline
    src = '''
    #include <stdlib.h>
    double poke(long n) {
        double *a = malloc(sizeof(double) * n);
        for (long i = 0; i <= n; i++) a[i] = i;   /* one past the end */
        double s = a[0]; free(a); return s;
    }
    '''
    mod = load_inline(name="poke", c_sources=src, functions=["poke"])
    mod.poke(8)
    print("not caught")
"""


@needs_asan
def test_the_sanitized_child_reports_an_out_of_bounds_write(tmp_path):
    res = run_sanitized(OVERFLOW, tmp_path)
    assert res.returncode != 0 and "not caught" not in res.stdout
    assert "heap-buffer-overflow" in res.stderr, res.stderr[-3000:]
