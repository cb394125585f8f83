"""The eager fast paths of layer_norm, gelu and scaled_dot_product_attention (one NumPy
computation and one graph node each): values, gradients and double-backward gradients
against torch, the plain composition under a dispatch mode that must see ember ops, and the
fast path under the profiler, which only observes."""
import itertools

import numpy as np
import pytest
import torch

import ember


def _run(lib, fn, arrays, seed=0):
    """fn(lib, *leaves) -> (output, grads of sum(out * w), grads of the squared first
    gradients (double backward), grad_fn name)."""
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *leaves)
    w = lib.tensor(np.random.default_rng(seed).standard_normal(tuple(out.shape)))
    w = w.to(out.dtype)
    grads = lib.autograd.grad((out * w).sum(), leaves, create_graph=True)
    total = sum((g * g).sum() for g in grads)
    second = lib.autograd.grad(total, leaves, allow_unused=True)
    return (out.detach().numpy(), [g.detach().numpy() for g in grads],
            [None if g is None else g.numpy() for g in second], out.grad_fn.name())


CASES = {
    "layer_norm": (lambda L, x, w, b: L.nn.functional.layer_norm(x, (5,), w, b),
                   [(3, 4, 5), (5,), (5,)], "NativeLayerNormBackward0"),
    "layer_norm_2d": (lambda L, x: L.nn.functional.layer_norm(x, (2, 3)),
                      [(4, 2, 3)], "NativeLayerNormBackward0"),
    "gelu": (lambda L, x: L.nn.functional.gelu(x * 2), [(6, 7)], "GeluBackward0"),
    "sdpa_causal": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), [(2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 6)],
        "ScaledDotProductAttentionBackward0"),
    "sdpa_broadcast": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(
        q, k, v, scale=0.7), [(2, 1, 3, 5), (2, 4, 6, 5), (6, 2)],
        "ScaledDotProductAttentionBackward0"),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_path_matches_torch_to_second_order(name, dtype):
    fn, shapes, node = CASES[name]
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    e_out, e_g, e_gg, e_name = _run(ember, fn, arrays)
    t_out, t_g, t_gg, _ = _run(torch, fn, arrays)
    assert e_name == node                      # the fast path ran (one node)
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(e_out, t_out, **tol)
    for a, b in itertools.chain(zip(e_g, t_g), zip(e_gg, t_gg)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, **tol)


class OpByOp:
    """A dispatch mode that must see ember ops, like the compiler's tracer: it runs each op
    call it gets, and keeps the names."""

    def __init__(self):
        self.names = []

    def call(self, op, fn, args, kwargs):
        self.names.append(op if isinstance(op, str) else op.name)
        return fn(*args, **kwargs)

    def __enter__(self):
        from ember.autograd.grad_mode import state
        state.modes = state.modes + (self,)
        return self

    def __exit__(self, *exc):
        from ember.autograd.grad_mode import state
        state.modes = state.modes[:-1]


OP_NAMES = {"layer_norm": "layer_norm", "layer_norm_2d": "layer_norm", "gelu": "gelu",
            "sdpa_causal": "scaled_dot_product_attention",
            "sdpa_broadcast": "scaled_dot_product_attention"}


@pytest.mark.parametrize("name", list(CASES))
def test_under_a_dispatch_mode_the_composition_runs(name):
    fn, shapes, node = CASES[name]
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in shapes]
    plain = _run(ember, fn, arrays)
    with OpByOp() as mode:
        seen = _run(ember, fn, arrays)
    assert seen[3] != node                     # the mode sees the ops of the composition
    assert OP_NAMES[name] not in mode.names and len(mode.names) > 3
    np.testing.assert_allclose(seen[0], plain[0], rtol=1e-10, atol=1e-12)
    for a, b in zip(seen[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_the_profiler_times_the_fast_path(name):
    """The profiler only observes: the op takes the path it takes unprofiled (one node), and
    the profile lists the op and its backward node."""
    fn, shapes, node = CASES[name]
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in shapes]
    plain = _run(ember, fn, arrays)
    with ember.profiler.profile() as prof:
        profiled = _run(ember, fn, arrays)
    assert profiled[3] == plain[3] == node
    keys = {r.key for r in prof.key_averages()}
    assert "ember::" + OP_NAMES[name] in keys
    assert "autograd::engine::evaluate_function: " + node in keys
    np.testing.assert_allclose(profiled[0], plain[0], rtol=1e-10, atol=1e-12)
    for a, b in zip(profiled[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_fused_layer_norm_checks_saved_input_version():
    x = ember.randn(3, 4, requires_grad=True)
    y = x * 1
    out = ember.nn.functional.layer_norm(y, (4,))
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("shape,perm,target", [
    ((2, 3, 4), (0, 2, 1), (2, 12)), ((2, 3, 4), (1, 0, 2), (6, 4)),
    ((2, 3, 4, 5), (0, 2, 1, 3), (2, 4, 15)), ((2, 3, 4, 5), (0, 2, 1, 3), (8, 3, 5)),
    ((4, 6), (1, 0), (3, 2, 4)), ((4, 6), (1, 0), (24,))])
def test_view_and_reshape_of_permuted_tensors_match_torch(shape, perm, target):
    base = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    e, t = ember.tensor(base).permute(*perm), torch.tensor(base).permute(*perm)
    try:
        tv = t.view(*target)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            e.view(*target)
    else:
        ev = e.view(*target)
        assert ev.stride() == tv.stride() and np.array_equal(ev.numpy(), tv.numpy())
    er, tr = e.reshape(*target), t.reshape(*target)
    assert er.stride() == tr.stride() and np.array_equal(er.numpy(), tr.numpy())
