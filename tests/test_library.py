"""ember.library.custom_op (torch.library's API): a Python-kernel op checked against the same
op defined with torch.library, its registrations (autograd, fake, per-device kernel), mutation,
errors, and what the rest of ember sees of it: the registry, ember.ops.<ns>, the profiler and
the compiler (traced as one call, compiled equal to eager)."""
import numpy as np
import pytest
import torch

import ember
from ember.library import custom_op, opcheck
from ember.ops.registry import EXTERN, OPS, op_for


# ---- the same op in torch and ember: y = sin(x) * scale, kernels in NumPy ----
@torch.library.custom_op("ember_test_lib::scaled_sin", mutates_args=())
def torch_scaled_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.detach().numpy()) * scale)


def _torch_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def _torch_backward(ctx, g):
    x, = ctx.saved_tensors
    return g * x.cos() * ctx.scale, None


torch_scaled_sin.register_autograd(_torch_backward, setup_context=_torch_setup)


def _define():
    ops = {}

    @custom_op("ember_test_lib::scaled_sin", mutates_args=())
    def scaled_sin(x: ember.Tensor, scale: float) -> ember.Tensor:
        return ember.from_numpy(np.sin(x.detach().numpy()) * scale)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]

    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos() * ctx.scale, None

    scaled_sin.register_autograd(backward, setup_context=setup)

    @scaled_sin.register_fake
    def _(x, scale):
        return ember.empty_like(x)
    ops["scaled_sin"] = scaled_sin

    @custom_op("ember_test_lib::no_grad_op", mutates_args=())
    def no_grad_op(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(x.detach().numpy() * 2)
    ops["no_grad_op"] = no_grad_op

    @custom_op("ember_test_lib::add_one_", mutates_args=("x",))
    def add_one_(x: ember.Tensor) -> None:
        x.numpy(force=True)[...] += 1
    ops["add_one_"] = add_one_

    @custom_op("ember_test_lib::sneaky", mutates_args=())
    def sneaky(x: ember.Tensor) -> ember.Tensor:
        x.numpy(force=True)[...] += 1      # writes, though it declares no mutation
        return x.clone()
    ops["sneaky"] = sneaky
    return ops


@pytest.fixture(scope="module")
def ops():
    defined = _define()
    yield defined
    for op in defined.values():    # keep the registry as it was for the other test files
        op._destroy()
    assert not any(n.startswith("ember_test_lib::") for n in OPS)


def _pair(shape=(3, 4), dtype=np.float64, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def test_forward_and_backward_match_torchs_custom_op(ops):
    x, tx = _pair()
    y, ty = ops["scaled_sin"](x, 1.5), torch_scaled_sin(tx, 1.5)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy())
    g = np.random.default_rng(1).standard_normal((3, 4))
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    assert y.grad_fn.name() == ty.grad_fn.name() \
        == "GeneratedBackwardFor_ember_test_lib_scaled_sin_defaultBackward"


def test_gradcheck_and_opcheck(ops):
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ops["scaled_sin"](t, 0.7), (x,))
    assert opcheck(ops["scaled_sin"], (x.detach(), 0.7))


def test_the_op_is_a_registry_entry_and_an_ember_ops_attribute(ops):
    op = ops["scaled_sin"]
    entry = OPS["ember_test_lib::scaled_sin"]
    assert entry.kind == EXTERN and op_for("ember_test_lib::scaled_sin") is entry
    assert entry.meta is not None           # register_fake filled the meta slot
    assert ember.ops.ember_test_lib.scaled_sin is op
    assert ember.ops.ember_test_lib.scaled_sin.default is op
    x = ember.randn(5)
    np.testing.assert_allclose(ember.ops.ember_test_lib.scaled_sin(x, scale=2.0).numpy(),
                               np.sin(x.numpy()) * 2)
    assert op.schema == "(Tensor x, float scale) -> Tensor"


def test_no_autograd_registered_raises_on_backward_like_torch(ops):
    @torch.library.custom_op("ember_test_lib::no_grad_op", mutates_args=())
    def t_op(x: torch.Tensor) -> torch.Tensor:
        return x * 2
    x, tx = _pair()
    with pytest.raises(RuntimeError) as theirs:
        t_op(tx).sum().backward()
    with pytest.raises(RuntimeError) as ours:
        ops["no_grad_op"](x).sum().backward()
    assert str(ours.value) == str(theirs.value)
    # without grad the op just runs
    assert ops["no_grad_op"](x.detach()).grad_fn is None


def test_register_kernel_replaces_the_cpu_kernel(ops):
    @custom_op("ember_test_lib::plus", mutates_args=())
    def plus(x: ember.Tensor) -> ember.Tensor:
        return x + 1
    try:
        @plus.register_kernel("cpu")
        def _(x):
            return x + 100
        assert plus(ember.zeros(2)).tolist() == [100.0, 100.0]
        with pytest.raises(NotImplementedError):
            only_cuda = custom_op("ember_test_lib::only_cuda", lambda x: x,
                                  mutates_args=(), device_types="cuda", schema="(Tensor x)")
            try:
                only_cuda(ember.zeros(2))
            finally:
                only_cuda._destroy()
    finally:
        plus._destroy()


def test_mutating_op_bumps_the_version_so_autograd_sees_it(ops):
    x = ember.zeros(3)
    v = x._version
    assert ops["add_one_"](x) is None and x.tolist() == [1.0, 1.0, 1.0] and x._version > v
    a = ember.randn(3, requires_grad=True)
    y = a.exp()                      # ExpBackward0 saves its result
    ops["add_one_"](y.detach())      # writes y's storage behind autograd's back
    ta = torch.tensor(a.detach().numpy(), requires_grad=True)
    ty = ta.exp()
    ty.detach().add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_opcheck_catches_a_wrong_fake_and_an_undeclared_mutation(ops):
    @custom_op("ember_test_lib::bad_fake", mutates_args=())
    def bad_fake(x: ember.Tensor) -> ember.Tensor:
        return x.sum(0)
    bad_fake.register_fake(lambda x: ember.empty_like(x))
    try:
        with pytest.raises(AssertionError, match="fake"):
            opcheck(bad_fake, (ember.randn(3, 2),))
    finally:
        bad_fake._destroy()
    with pytest.raises(AssertionError, match="mutates_args"):
        opcheck(ops["sneaky"], (ember.randn(3),))


def test_definition_errors_match_torch():
    def h(x: ember.Tensor) -> ember.Tensor:
        return x

    def th(x: torch.Tensor) -> torch.Tensor:
        return x
    cases = [(dict(name="ember_test_lib::h1", mutates_args=("y",)), ValueError),
             (dict(name="ember_test_lib::h2", mutates_args="x"), ValueError),
             (dict(name="nonamespace", mutates_args=()), ValueError)]
    for kw, exc in cases:
        name = kw.pop("name")
        with pytest.raises(exc):
            torch.library.custom_op(name, th, **kw)
        with pytest.raises(exc):
            custom_op(name, h, **kw)
    with pytest.raises(ValueError, match="type annotation"):
        torch.library.custom_op("ember_test_lib::h3", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="type annotation"):
        custom_op("ember_test_lib::h3", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="taken"):
        custom_op("linalg::h4", h, mutates_args=())    # ember.ops.linalg is a module


def test_profiler_sees_the_op(ops):
    with ember.profiler.profile() as prof:
        ops["scaled_sin"](ember.randn(4), 1.0)
    assert "ember::ember_test_lib::scaled_sin" in [e.key for e in prof.key_averages()]


def test_compile_traces_it_as_one_call_and_equals_eager(ops):
    lin = ember.nn.Linear(4, 3)
    op = ops["scaled_sin"]

    def step(x):
        loss = op(lin(x), 0.5).pow(2).sum()
        loss.backward()
        return loss

    x = ember.randn(5, 4)
    lin.zero_grad()
    eager = step(x)
    g_eager = lin.weight.grad.clone()
    compiled = ember.compile(step, fullgraph=True)
    report = ember.compiler.explain(compiled)(x)
    calls = [n.opname for g in report.graphs for n in g.nodes if n.kind == "call"]
    assert "ember.ops.ember_test_lib::scaled_sin" in calls
    assert not report.graph_breaks
    for _ in range(2):                 # the first call traces, the second replays
        lin.zero_grad()
        out = compiled(x)
        np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-5)
        np.testing.assert_allclose(lin.weight.grad.numpy(), g_eager.numpy(), rtol=1e-5)
