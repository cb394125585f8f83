"""The composite ops of ember/ops/nn_ops*.py: each is one registered COMPOSITE OpDef with a
decomposition; the decomposition (forced, by calling op.decomp) and the public function's
path agree with torch in values and gradients (float64, gradcheck on the decomposition);
sdpa's joint backward formula matches torch for every subset of inputs requiring grad; the
compiler is the fused-kernel provider and nothing below it imports it."""
import ast
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember.ops.registry import OPS, COMPOSITE, FUNCTIONS, METHODS

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.standard_normal(shape)


def _idx(n, *shape):
    return RNG.integers(0, n, shape)


# name -> (call(lib, F-or-decomp, *tensors), arrays, which arrays are differentiable)
# `f` is the function under test: torch's / ember's public one, or ember's op.decomp
CASES = {
    "softmax": (lambda f, x: f(x, 1), [_x(3, 5)], [0]),
    "log_softmax": (lambda f, x: f(x, -1), [_x(2, 3, 4)], [0]),
    "gelu": (lambda f, x: f(x), [_x(4, 6)], [0]),
    "gelu_tanh": (lambda f, x: f(x, approximate="tanh"), [_x(4, 6)], [0]),
    "layer_norm": (lambda f, x, w, b: f(x, (5,), w, b), [_x(3, 4, 5), _x(5), _x(5)],
                   [0, 1, 2]),
    "layer_norm_2d": (lambda f, x: f(x, (2, 3)), [_x(4, 2, 3)], [0]),
    "rms_norm": (lambda f, x, w: f(x, (6,), w, 1e-6), [_x(3, 6), _x(6)], [0, 1]),
    "scaled_dot_product_attention": (lambda f, q, k, v: f(q, k, v, is_causal=True),
                                     [_x(2, 3, 4, 5), _x(2, 3, 4, 5), _x(2, 3, 4, 6)],
                                     [0, 1, 2]),
    "sdpa_mask": (lambda f, q, k, v, m: f(q, k, v, attn_mask=m),
                  [_x(2, 4, 5), _x(2, 6, 5), _x(2, 6, 3), _x(4, 6)], [0, 1, 2]),
    "cross_entropy": (lambda f, x, t: f(x, t), [_x(6, 5), _idx(5, 6)], [0]),
    "cross_entropy_smooth": (lambda f, x, t: f(x, t, label_smoothing=0.2, reduction="sum"),
                             [_x(6, 5), _idx(5, 6)], [0]),
    "nll_loss": (lambda f, x, t: f(x, t, ignore_index=2), [_x(6, 5), _idx(5, 6)], [0]),
    "embedding": (lambda f, i, w: f(i, w), [_idx(7, 3, 4), _x(7, 5)], [1]),
    "embedding_padding": (lambda f, i, w: f(i, w, padding_idx=1), [_idx(7, 3, 4), _x(7, 5)],
                          [1]),
}
OP_OF = {"gelu_tanh": "gelu", "layer_norm_2d": "layer_norm",
         "sdpa_mask": "scaled_dot_product_attention", "cross_entropy_smooth": "cross_entropy",
         "embedding_padding": "embedding"}
MOVED = ["softmax", "log_softmax", "gelu", "layer_norm", "rms_norm",
         "scaled_dot_product_attention", "cross_entropy", "nll_loss", "embedding"]


def _fn(lib, case, which):
    name = OP_OF.get(case, case)
    if which == "decomp":
        return OPS[name].decomp
    return getattr(lib.nn.functional, name)


def _run(lib, case, which):
    call, arrays, diff = CASES[case]
    ts = [lib.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    out = call(_fn(lib, case, which), *ts)
    g = lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
    grads = lib.autograd.grad(out, [ts[i] for i in diff], g)
    return out.detach().numpy(), [x.numpy() for x in grads]


@pytest.mark.parametrize("name", MOVED)
def test_each_moved_op_is_one_registered_composite(name):
    op = OPS[name]
    assert op.kind == COMPOSITE and callable(op.decomp) and op.fn is not None
    # the public surface stays PyTorch's: only softmax and log_softmax are registry
    # functions and Tensor methods; ember.<name> exists where torch.<name> does (torch's
    # top-level form, ember/toplevel_forms.py, for layer_norm, rms_norm, embedding ...)
    public = name in ("softmax", "log_softmax")
    assert (name in FUNCTIONS) == public and (name in METHODS) == public
    assert hasattr(ember, name) == hasattr(torch, name)
    assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name)
    assert hasattr(ember.nn.functional, name)


@pytest.mark.parametrize("case", list(CASES))
def test_decomposition_and_public_path_match_torch(case):
    t_out, t_grads = _run(torch, case, "public")
    for which in ("public", "decomp"):
        out, grads = _run(ember, case, which)
        np.testing.assert_allclose(out, t_out, rtol=1e-10, atol=1e-12, err_msg=which)
        for a, b in zip(grads, t_grads):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=which)


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("embedding")])
def test_gradcheck_of_the_decomposition(case):
    call, arrays, diff = CASES[case]
    decomp = OPS[OP_OF.get(case, case)].decomp
    ts = [ember.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]

    def f(*leaves):
        args = list(ts)
        for i, leaf in zip(diff, leaves):
            args[i] = leaf
        return call(decomp, *args)
    assert ember.autograd.gradcheck(f, tuple(ts[i] for i in diff))


def test_gradcheck_of_the_embedding_decomposition():
    idx = ember.tensor(_idx(7, 3, 4))
    w = ember.tensor(_x(7, 5), requires_grad=True)
    assert ember.autograd.gradcheck(lambda w: OPS["embedding"].decomp(idx, w), (w,))


@pytest.mark.parametrize("needs", [(1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0),
                                   (0, 1, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_joint_backward_matches_torch(needs, causal):
    """One formula gives dQ, dK and dV; it computes only those asked for."""
    arrays = [_x(2, 3, 4, 5), _x(2, 3, 6, 5), _x(2, 3, 6, 7)]
    results = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=bool(n)) for a, n in zip(arrays, needs)]
        out = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=causal)
        g = lib.tensor(np.random.default_rng(3).standard_normal(tuple(out.shape)))
        out.backward(g)
        results.append((out.grad_fn.name() if lib is ember else None,
                        [None if t.grad is None else t.grad.numpy() for t in ts]))
    assert results[0][0] == "ScaledDotProductAttentionBackward0"
    for a, b in zip(results[0][1], results[1][1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_sdpa_joint_backward_under_create_graph_matches_torch():
    arrays = [_x(2, 4, 5), _x(2, 6, 5), _x(2, 6, 3)]
    outs = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=True)
        grads = lib.autograd.grad((out * out).sum(), ts, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), ts)
        outs.append([g.detach().numpy() for g in grads + second])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case,node", [("cross_entropy", "NllLossBackward0"),
                                       ("embedding", "EmbeddingBackward0")])
def test_under_the_profiler_the_fast_path_runs(case, node):
    call, arrays, diff = CASES[case]
    ts = [ember.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    with ember.profiler.profile() as prof:
        out = call(getattr(ember.nn.functional, case), *ts)
    assert out.grad_fn.name() == node
    assert "ember::" + case in {r.key for r in prof.key_averages()}


def test_the_compiler_provides_the_fused_kernels():
    from ember.ops import nn_ops
    from ember.compiler.eager import EagerKernel
    assert nn_ops.FUSED_KERNELS
    assert all(isinstance(k.kernel, EagerKernel) for k in nn_ops.FUSED_KERNELS)


def test_nn_and_ops_never_import_the_compiler():
    root = Path(ember.__file__).parent
    for sub in ("nn", "ops"):
        for path in (root / sub).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom):
                    names = [(node.module or "")] + [a.name for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                assert not any("compiler" in n for n in names), (path, ast.dump(node))
