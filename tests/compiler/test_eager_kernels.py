"""Eager kernels (ember/compiler/eager.py): gelu, layer_norm and attention on big inputs run
as fused C generated from their compositions. Values and gradients against torch, strided
inputs, double backward, the fallbacks (no compiler, turned off, dispatch mode, threads),
a dtype change never reusing another dtype's kernel, and the malloc settings."""
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.compiler import eager
from ember.nn import functional as EF
from ember.nn import functional_norm as EN
from ember.nn import functional_attention as EA

RNG = np.random.default_rng(0)


def _tol(dt):
    return dict(rtol=1e-9, atol=1e-10) if dt == np.float64 else dict(rtol=3e-4, atol=3e-5)


def _both(fn, arrays, layout=None):
    """(ember out, grads), (torch out, grads) of fn(lib, *leaves) backpropagating a fixed
    random cotangent; `layout` turns each leaf's array into a strided view first."""
    results = []
    for lib in (ember, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        used = [layout(x) if layout else x for x in leaves]
        out = fn(lib, *used)
        g = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
        out.backward(lib.tensor(g))
        results.append((out.detach().numpy(), [x.grad.numpy() for x in leaves]))
    return results


def _check(fn, arrays, kernels, layout=None):
    before = [k.calls for k in kernels]
    (eo, eg), (to, tg) = _both(fn, arrays, layout)
    tol = _tol(arrays[0].dtype)
    np.testing.assert_allclose(eo, to, **tol)
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(a, b, **tol)
    assert all(k.calls > b for k, b in zip(kernels, before)), \
        [(k.name, k.broken) for k in kernels]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 16, 40), (70, 100)])
def test_gelu_kernels_match_torch(dtype, shape):
    x = RNG.standard_normal(shape).astype(dtype) * 3
    _check(lambda L, x: L.nn.functional.gelu(x), [x],
           [EF._gelu_kernel, EF._gelu_backward_kernel])


def test_gelu_kernels_on_a_transposed_input():
    x = RNG.standard_normal((100, 70)).astype(np.float32)
    _check(lambda L, x: L.nn.functional.gelu(x), [x],
           [EF._gelu_kernel, EF._gelu_backward_kernel], layout=lambda t: t.t())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,norm", [((16, 32, 80), (80,)), ((32, 40, 30), (40, 30))])
def test_layer_norm_kernels_match_torch(dtype, affine, shape, norm):
    x = RNG.standard_normal(shape).astype(dtype) * 2 + 1
    arrays = [x]
    if affine:
        arrays += [RNG.standard_normal(norm).astype(dtype), RNG.standard_normal(norm).astype(dtype)]
        kernels = [EN._ln_forward_kernel, EN._ln_dx_kernel, EN._ln_dweight_kernel]
    else:
        kernels = [EN._ln_forward_kernel, EN._ln_dx_kernel]
    _check(lambda L, x, *wb: L.nn.functional.layer_norm(x, norm, *wb), arrays, kernels)


def test_layer_norm_kernels_on_a_permuted_input():
    x = RNG.standard_normal((64, 48, 24)).astype(np.float32)
    _check(lambda L, x: L.nn.functional.layer_norm(x, (48,)), [x],
           [EN._ln_forward_kernel, EN._ln_dx_kernel], layout=lambda t: t.permute(2, 0, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [True, False])
def test_attention_kernels_match_torch(dtype, causal):
    # maps of more than native_nn.MAX_ELEMENTS scores: smaller ones run the hand-written
    # softmax (tests/nn/test_native_nn_kernels.py)
    shapes = [(2, 4, 96, 16), (2, 4, 88, 16), (2, 4, 88, 8)] if not causal else \
        [(2, 4, 96, 16)] * 2 + [(2, 4, 96, 8)]
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    _check(lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=causal), arrays, [EA._softmax_of_scores_kernel,
                                              EA._scores_grad_kernel])


def test_double_backward_through_kernel_paths_matches_torch():
    x = RNG.standard_normal((400, 90))
    w, b = RNG.standard_normal(90), RNG.standard_normal(90)
    outs = []
    for lib in (ember, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.gelu(lib.nn.functional.layer_norm(leaves[0], (90,), *leaves[1:]))
        grads = lib.autograd.grad((y * y).sum(), leaves, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), leaves)
        outs.append([g.detach().numpy() for g in grads + second])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9)


def test_a_dtype_change_never_reuses_another_dtypes_kernel():
    # unifying two traces that differ in dtype as well as size used to replay float32
    # kernels on float64 inputs
    f = ember.compile(lambda p, d: p * (d - (d * p).sum(-1, keepdim=True)), dynamic=True)
    for shape, dt in [((4, 64, 64), ember.float32), ((3, 40, 40), ember.float64),
                      ((5, 40, 40), ember.float64), ((4, 64, 64), ember.float32),
                      ((6, 40, 40), ember.float64)]:
        p = ember.randn(*shape, dtype=dt)
        d = ember.randn(*shape, dtype=dt)
        out = f(p, d)
        assert out.dtype is dt
        ref = p * (d - (d * p).sum(-1, keepdim=True))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), **_tol(np.dtype(dt.np).type))


def test_small_inputs_and_other_dtypes_use_the_composition():
    k = EF._gelu_kernel
    before = k.calls
    EF.gelu(ember.randn(10, 10))
    assert k.calls == before
    # a 16-bit input runs the float32 kernel on its widened values, rounded once (torch's
    # CPU kernel computes bfloat16 gelu in float32 too)
    EF.gelu(ember.randn(100, 100).to(ember.bfloat16))
    assert k.calls == before + 1


class _OpByOp:
    """A dispatch mode that must see ember ops, like the compiler's tracer."""

    def __init__(self):
        self.names = []

    def call(self, op, fn, args, kwargs):
        self.names.append(op if isinstance(op, str) else op.name)
        return fn(*args, **kwargs)


def test_under_a_dispatch_mode_the_composition_runs():
    from ember.autograd.grad_mode import state
    x = ember.randn(64, 128, requires_grad=True)
    before = EF._gelu_kernel.calls
    mode = _OpByOp()
    state.modes = state.modes + (mode,)
    try:
        EF.gelu(x).sum().backward()
    finally:
        state.modes = state.modes[:-1]
    assert "erf" in mode.names                   # the mode saw the composition's ops
    assert EF._gelu_kernel.calls == before


def test_under_the_profiler_the_kernels_run():
    x = ember.randn(64, 128, requires_grad=True)
    before = [k.calls for k in (EF._gelu_kernel, EF._gelu_backward_kernel)]
    with ember.profiler.profile() as prof:
        EF.gelu(x).sum().backward()
    names = {e.key for e in prof.key_averages()}
    assert "ember::gelu" in names and "ember::erf" not in names
    assert "autograd::engine::evaluate_function: GeluBackward0" in names
    assert all(k.calls > b for k, b in zip((EF._gelu_kernel, EF._gelu_backward_kernel),
                                           before))


def test_without_a_compiler_the_composition_runs_quietly(monkeypatch):
    monkeypatch.setattr(ember.compiler.config, "cc", "/nonexistent/cc")
    # a composition of its own, so no disk-cached library can stand in for the compiler
    k = eager.EagerKernel(lambda x: (x * 1.2345678).exp() + 0.5, "test_no_cc")
    x = ember.randn(64, 128)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert k(x) is None
    assert k.broken and k.calls == 0
    assert k(x) is None                          # stays off, without trying again


def test_turned_off_runs_the_composition(monkeypatch):
    monkeypatch.setattr(eager, "enabled", False)
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    before = EF._gelu_kernel.calls
    out = EF.gelu(ember.tensor(x)).numpy()
    assert EF._gelu_kernel.calls == before
    np.testing.assert_allclose(out, torch.nn.functional.gelu(torch.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_calls_from_several_threads_are_correct():
    xs = [RNG.standard_normal((64, 128)).astype(np.float32) for _ in range(4)]
    refs = [torch.nn.functional.gelu(torch.tensor(x)).numpy() for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                np.testing.assert_allclose(EF.gelu(ember.tensor(xs[i])).numpy(), refs[i],
                                           rtol=1e-5, atol=1e-6)
        except Exception as e:      # reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


_FAULTS = """
import resource, numpy as np, ember
x = np.ones(1 << 20, np.float32)
for _ in range(5):
    x * 2
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    x * 2
print(ember.core.allocator.applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
"""


def _run_faults(env):
    env = {k: v for k, v in env.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", _FAULTS], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_big_temporaries_reuse_memory_without_page_faults():
    applied, faults = _run_faults(dict(os.environ))
    assert applied and faults < 100          # 4 MiB arrays: 1,024 pages each if fresh
    applied, _ = _run_faults(dict(os.environ, EMBER_MALLOC_TUNING="0"))
    assert not applied


def test_a_composition_that_breaks_the_graph_stays_eager():
    k = eager.EagerKernel(lambda x: x * float(x.sum()), "test_break")
    x = ember.randn(64, 128)
    assert k(x) is None and k.broken.startswith("graph break")
    assert k(x) is None and k.calls == 0


def test_the_first_call_returns_the_kernels_bits_not_the_compositions():
    # the first call traces the composition; its result must still be the kernel's, or a
    # run resumed from a checkpoint (a fresh process) diverges from the original run
    kernel = eager.EagerKernel(lambda x: x * 0.5 * (1.0 + (x * 0.7071067811865476).erf()),
                               "first_call_gelu")
    x = ember.tensor(RNG.standard_normal((64, 129)).astype(np.float32))
    first = kernel(x)
    assert first is not None and kernel.calls == 1
    second = kernel(x)
    assert kernel.calls == 2
    np.testing.assert_array_equal(first.numpy(), second.numpy())
