"""Custom ops (ember.library.custom_op) through deployment: ember.export (one node named by
the op's qualified name, ep.module(), save/load resolving the name to the op registered in the
loading process, a fresh one included), ember.jit (trace/save/load), ember.onnx (a mapping from
register_onnx, register_custom_op_symbolic or custom_translation_table, checked by
onnxruntime against eager; a custom-domain node; a clear error without a mapping), and a C
kernel from ember.utils.cpp_extension inside a custom op. torch's custom op of the same name is
the oracle for values, gradients and torch.export's graph."""
import io
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import ember
from ember.library import custom_op
from ember.ops.registry import OPS

QUAL = "coptest::scaled_sin"


# ---- the same op in torch and ember: y = sin(x) * scale, kernels in NumPy ----
@torch.library.custom_op(QUAL, mutates_args=())
def _t_scaled_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.detach().numpy()) * scale)


@_t_scaled_sin.register_fake
def _(x, scale):
    return torch.empty_like(x)


def _t_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def _t_backward(ctx, g):
    x, = ctx.saved_tensors
    return g * x.cos() * ctx.scale, None


_t_scaled_sin.register_autograd(_t_backward, setup_context=_t_setup)

# the ember definition, as source: this process runs it, and so does the fresh process
DEFINE = textwrap.dedent('''
    import numpy as np
    import ember

    @ember.library.custom_op("coptest::scaled_sin", mutates_args=())
    def scaled_sin(x: ember.Tensor, scale: float) -> ember.Tensor:
        return ember.from_numpy(np.sin(x.detach().numpy()) * scale)

    @scaled_sin.register_fake
    def _(x, scale):
        return ember.empty_like(x)

    def _setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[1]

    def _backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos() * ctx.scale, None

    scaled_sin.register_autograd(_backward, setup_context=_setup)
''')


@pytest.fixture(scope="module")
def op():
    space = {}
    exec(DEFINE, space)
    yield space["scaled_sin"]
    space["scaled_sin"]._destroy()      # the registry as it was for the other test files
    assert QUAL not in OPS


def _model(lib, op):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(4, 3)

        def forward(self, x):
            return op(self.lin(x), 0.5) + 1
    return M()


def _pair(op):
    torch.manual_seed(0)
    t_mod = _model(torch, _t_scaled_sin)
    e_mod = _model(ember, op)
    e_mod.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                           for k, v in t_mod.state_dict().items()})
    return e_mod, t_mod


def _x(n=2, seed=1):
    a = np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)
    return ember.tensor(a), torch.tensor(a)


def _calls(ep):
    return [n.opname for n in ep.graph.nodes if n.kind == "call"]


# ---- ember.export ---------------------------------------------------------------------------
def test_export_records_one_node_named_by_the_qualified_name(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    ep = ember.export.export(e_mod, (ex,))
    tep = torch.export.export(t_mod, (tx,))
    t_custom = [n for n in tep.graph.nodes if n.op == "call_function" and
                getattr(n.target, "name", lambda: "")() == QUAL]
    e_custom = [c for c in _calls(ep) if c.endswith(QUAL)]
    assert len(t_custom) == len(e_custom) == 1
    assert e_custom == ["ember.ops." + QUAL]
    # printed as torch prints it (torch.ops.coptest.scaled_sin.default), valid Python
    assert "ember.ops.coptest.scaled_sin.default(" in str(ep)
    np.testing.assert_allclose(ep.module()(ex).detach().numpy(), tep.module()(tx).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_exported_module_backward_uses_the_registered_autograd(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    m = ember.export.export(e_mod, (ex,)).module()
    m(ex).pow(2).sum().backward()
    t_mod(tx).pow(2).sum().backward()
    grads = dict(m.named_parameters())
    for name, p in t_mod.named_parameters():
        np.testing.assert_allclose(grads[name].grad.numpy(), p.grad.numpy(), rtol=1e-4,
                                   atol=1e-6)


def test_save_load_round_trip_in_this_process(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    ep = ember.export.export(e_mod, (ex,))
    buf = io.BytesIO()
    ember.export.save(ep, buf)
    buf.seek(0)
    ep2 = ember.export.load(buf)
    assert _calls(ep2) == _calls(ep)
    np.testing.assert_allclose(ep2.module()(ex).detach().numpy(), t_mod(tx).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_load_refuses_a_schema_other_than_the_saved_one(tmp_path):
    @custom_op("coptest::sch", mutates_args=())
    def sch(x: ember.Tensor, scale: float) -> ember.Tensor:
        return x * scale
    try:
        e_mod = _model(ember, sch)
        ember.export.save(ember.export.export(e_mod, (_x()[0],)), str(tmp_path / "m.ept"))
    finally:
        sch._destroy()

    @custom_op("coptest::sch", mutates_args=())
    def other(x: ember.Tensor) -> ember.Tensor:
        return x.clone()
    try:
        with pytest.raises(RuntimeError, match=r"'coptest::sch' registered in this process "
                                               r"has the schema \(Tensor x\) -> Tensor"):
            ember.export.load(str(tmp_path / "m.ept"))
    finally:
        other._destroy()
    with pytest.raises(RuntimeError, match=r"'coptest::sch', which is not registered.*"
                                           r"Register it first"):
        ember.export.load(str(tmp_path / "m.ept"))


# ---- a fresh process: fails without the op, runs with it (export and jit files) -------------
FRESH = '''
import json, sys
import ember
out = {}
for kind, path in (("export", sys.argv[1]), ("jit", sys.argv[2])):
    load = ember.export.load if kind == "export" else ember.jit.load
    try:
        load(path)
        out[kind + "_unregistered"] = "loaded"
    except Exception as e:
        out[kind + "_unregistered"] = type(e).__name__ + ": " + str(e)
exec(DEFINE)
x = ember.tensor(json.loads(sys.argv[3]))
ember.set_grad_enabled(False)
out["export"] = ember.export.load(sys.argv[1]).module()(x).tolist()
out["jit"] = ember.jit.load(sys.argv[2])(x).tolist()
print(json.dumps(out))
'''


def test_fresh_process_loads_after_registering_the_op(op, tmp_path):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    ember.export.save(ember.export.export(e_mod, (ex,)), str(tmp_path / "m.ept"))
    ember.jit.trace(e_mod, (ex,)).save(str(tmp_path / "m.pt"))
    script = f"DEFINE = {DEFINE!r}\n" + FRESH
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ember.__file__)))
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.ept"),
                        str(tmp_path / "m.pt"), json.dumps(ex.tolist())],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for kind in ("export", "jit"):
        msg = out[kind + "_unregistered"]
        assert msg.startswith("ExportFormatError") and "'coptest::scaled_sin'" in msg and \
            "Register it first" in msg, msg
        np.testing.assert_allclose(out[kind], t_mod(tx).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


# ---- ember.jit ------------------------------------------------------------------------------
def test_jit_trace_save_load(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    traced = ember.jit.trace(e_mod, (ex,))
    assert "ember.ops.coptest.scaled_sin.default(" in traced.code
    buf = io.BytesIO()
    ember.jit.save(traced, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    ex3, tx3 = _x(3, seed=2)
    for e_in, t_in in ((ex, tx), (ex3, tx3)):
        np.testing.assert_allclose(loaded(e_in).detach().numpy(), t_mod(t_in).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


# ---- ember.onnx -----------------------------------------------------------------------------
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _sin_scale(g, x, scale):
    return g.op("Mul", g.op("Sin", x), g.const(np.array(scale, dtype=x.dtype)))


def _ort(proto, x):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]


def test_onnx_without_a_mapping_names_the_op(op):
    e_mod, _ = _pair(op)
    ex, _ = _x()
    with pytest.raises(ember.onnx.UnsupportedOperatorError,
                       match=r"custom op 'coptest::scaled_sin' has no ONNX mapping.*"
                             r"register_custom_op_symbolic"):
        ember.onnx.export(e_mod, (ex,), None)


def test_onnx_register_onnx_decomposes_and_matches_eager_with_a_dynamic_batch(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    op.register_onnx(_sin_scale)
    try:
        proto = ember.onnx.export(e_mod, (ex,), None, input_names=["x"],
                                  dynamic_axes={"x": {0: "batch"}})
    finally:
        op._unregister_onnx()
    onnx.checker.check_model(proto)
    assert {"Sin", "Mul"} <= {n.op_type for n in proto.graph.node}
    for e_in, t_in in (_x(), _x(5, seed=3)):
        want = t_mod(t_in).detach().numpy()
        np.testing.assert_allclose(_ort(proto, e_in), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(e_mod(e_in).detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_onnx_register_custom_op_symbolic_by_opset(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    ember.onnx.register_custom_op_symbolic(QUAL, _sin_scale, 18)
    try:
        with pytest.raises(ember.onnx.UnsupportedOperatorError, match=r"opset 18.*not for "
                                                                      r"opset 17"):
            ember.onnx.export(e_mod, (ex,), None, opset_version=17)
        proto = ember.onnx.export(e_mod, (ex,), None, opset_version=19)
    finally:
        ember.onnx.unregister_custom_op_symbolic(QUAL, 18)
    assert [o.version for o in proto.opset_import if o.domain == ""] == [19]
    np.testing.assert_allclose(_ort(proto, ex), t_mod(tx).detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ember.onnx.UnsupportedOperatorError):      # unregistered again
        ember.onnx.export(e_mod, (ex,), None)


def test_onnx_register_names_are_checked_as_torch_checks_them(op):
    for bad in ("scaled_sin", "coptest:scaled_sin"):
        with pytest.raises(torch.onnx.OnnxExporterError) as t_err:
            torch.onnx.register_custom_op_symbolic(bad, _sin_scale, 17)
        with pytest.raises(ember.onnx.OnnxExporterError, match="domain::name") as e_err:
            ember.onnx.register_custom_op_symbolic(bad, _sin_scale, 17)
        assert type(t_err.value).__name__ == type(e_err.value).__name__
    with pytest.raises(ValueError, match="onnx domain cannot be modified"):
        torch.onnx.register_custom_op_symbolic("onnx::Relu", _sin_scale, 17)
    with pytest.raises(ValueError, match="onnx domain cannot be modified"):
        ember.onnx.register_custom_op_symbolic("onnx::Relu", _sin_scale, 17)
    with pytest.raises(ember.onnx.OnnxExporterError, match="no custom op of that name"):
        ember.onnx.register_custom_op_symbolic("coptest::missing", _sin_scale, 17)


def test_onnx_custom_translation_table_for_one_export(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()
    for key in (ember.ops.coptest.scaled_sin.default, QUAL):
        proto = ember.onnx.export(e_mod, (ex,), None, custom_translation_table={key: _sin_scale})
        np.testing.assert_allclose(_ort(proto, ex), t_mod(tx).detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
    with pytest.raises(ember.onnx.UnsupportedOperatorError):       # for that export only
        ember.onnx.export(e_mod, (ex,), None)
    with pytest.raises(TypeError, match="not a registered op"):
        ember.onnx.export(e_mod, (ex,), None, custom_translation_table={"nope::x": _sin_scale})


def test_onnx_custom_domain_node_with_custom_opsets(op):
    e_mod, _ = _pair(op)
    ex, _ = _x()

    def as_node(g, x, scale):
        return g.op("coptest::ScaledSin", x, scale=float(scale))
    proto = ember.onnx.export(e_mod, (ex,), None, custom_translation_table={QUAL: as_node},
                              custom_opsets={"coptest": 2})
    onnx.checker.check_model(proto)
    node, = [n for n in proto.graph.node if n.domain == "coptest"]
    assert node.op_type == "ScaledSin"
    assert onnx.helper.get_attribute_value(node.attribute[0]) == pytest.approx(0.5)
    assert {o.domain: o.version for o in proto.opset_import} == {"": 17, "coptest": 2}


def test_onnx_load_runs_a_custom_domain_node_with_the_registered_op(op):
    e_mod, t_mod = _pair(op)
    ex, tx = _x()

    def as_node(g, x, scale):                   # the node names the op: coptest::scaled_sin
        return g.op(QUAL, x, scale=float(scale))
    proto = ember.onnx.export(e_mod, (ex,), None, custom_translation_table={op: as_node})
    loaded = ember.onnx.load(proto)
    np.testing.assert_allclose(loaded(ex).numpy(), t_mod(tx).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    node, = [n for n in proto.graph.node if n.domain == "coptest"]
    node.op_type = "unknown_op"
    with pytest.raises(NotImplementedError, match=r"no custom op 'coptest::unknown_op' is "
                                                  r"registered in this process"):
        ember.onnx.load(proto)


# ---- a C kernel (ember.utils.cpp_extension) as the custom op's kernel -----------------------
C_SRC = """
#include <math.h>
void c_scaled_sin(const float* x, float* y, long n, double scale) {
    for (long i = 0; i < n; i++) y[i] = (float)(sinf(x[i]) * scale);
}
"""


def test_a_c_kernel_custom_op_exports_and_round_trips():
    from ember.utils.cpp_extension import load_inline
    lib = load_inline("coptest_c_ext", c_sources=C_SRC, functions=["c_scaled_sin"])

    @custom_op("coptest::c_scaled_sin", mutates_args=())
    def c_scaled_sin(x: ember.Tensor, scale: float) -> ember.Tensor:
        x = x.contiguous()
        y = ember.empty_like(x)
        lib.c_scaled_sin(x, y, x.numel(), scale)
        return y
    c_scaled_sin.register_fake(lambda x, scale: ember.empty_like(x))
    try:
        e_mod, t_mod = _pair(c_scaled_sin)
        ex, tx = _x()
        ep = ember.export.export(e_mod, (ex,))
        assert "ember.ops.coptest::c_scaled_sin" in _calls(ep)
        buf = io.BytesIO()
        ember.export.save(ep, buf)
        buf.seek(0)
        out = ember.export.load(buf).module()(ex)
        np.testing.assert_allclose(out.detach().numpy(), t_mod(tx).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    finally:
        c_scaled_sin._destroy()
