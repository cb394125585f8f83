"""ember.onnx.export's API: torch's keywords accepted, opset range, unsupported ops named
with the user's line, parameters as initializers by state_dict name, the interpolate
coordinate_transformation_mode written per mode, dynamic dims symbolic in the file."""
import inspect
import io

import numpy as np
import pytest
import torch

import ember
from onnx_check import export_bytes, onnx, session


def test_accepts_every_keyword_of_torch_onnx_export():
    ours = inspect.signature(ember.onnx.export).parameters
    theirs = inspect.signature(torch.onnx.export).parameters
    assert list(theirs) == list(ours)
    m = ember.nn.Linear(3, 2)
    f = io.BytesIO()
    ember.onnx.export(m, (ember.randn(2, 3),), f, dynamo=False, external_data=False,
                      verbose=False, report=False, optimize=True, verify=False,
                      keep_initializers_as_inputs=True, do_constant_folding=False)
    proto = onnx.load_model_from_string(f.getvalue())
    assert {"weight", "bias"} <= {i.name for i in proto.graph.input}


@pytest.mark.parametrize("opset", [16, 22])
def test_opset_outside_range_is_refused(opset):
    with pytest.raises(ValueError, match="17..21"):
        ember.onnx.export(ember.nn.ReLU(), (ember.randn(2),), io.BytesIO(),
                          opset_version=opset)


def test_unsupported_op_names_op_and_line():
    class M(ember.nn.Module):
        def forward(self, x):
            return x.cummax(0).values         # no ONNX mapping

    with pytest.raises(ember.onnx.UnsupportedOperatorError,
                       match=r"cummax.*test_onnx_export_api.py:\d+ in forward"):
        ember.onnx.export(M(), (ember.randn(3, 2),), io.BytesIO())


def test_data_dependent_control_flow_is_an_export_error():
    class M(ember.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(ember.onnx.OnnxExporterError, match="test_onnx_export_api.py"):
        ember.onnx.export(M(), (ember.randn(3),), io.BytesIO())


def test_parameters_are_initializers_with_state_dict_names_and_no_params_mode():
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4)).eval()
    proto = onnx.load_model_from_string(export_bytes(m, (ember.randn(2, 3),)))
    names = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "1.running_mean", "1.running_var"} <= names
    f = io.BytesIO()
    ember.onnx.export(m, (ember.randn(2, 3),), f, export_params=False)
    p2 = onnx.load_model_from_string(f.getvalue())
    assert "0.weight" not in {i.name for i in p2.graph.initializer}
    assert "0.weight" in {i.name for i in p2.graph.input}


def test_export_leaves_training_mode_and_weights_alone():
    m = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Dropout(0.5))
    before = m[0].weight.detach().numpy().copy()
    proto = onnx.load_model_from_string(export_bytes(m, (ember.randn(2, 3),)))
    assert m.training
    assert np.array_equal(before, m[0].weight.detach().numpy())
    assert "Dropout" not in {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("mode,align,expected", [
    ("nearest", None, "asymmetric"), ("bilinear", False, "pytorch_half_pixel"),
    ("bilinear", True, "align_corners"), ("bicubic", False, "pytorch_half_pixel")])
def test_resize_coordinate_transformation_mode(mode, align, expected):
    m = ember.nn.Upsample(scale_factor=2, mode=mode, align_corners=align)
    proto = onnx.load_model_from_string(export_bytes(m, (ember.randn(1, 1, 3, 3),)))
    (node,) = [n for n in proto.graph.node if n.op_type == "Resize"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["coordinate_transformation_mode"].decode() == expected
    # the pitfall: ONNX's default (half_pixel) differs from PyTorch's nearest
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    got = session(proto.SerializeToString()).run(None, {proto.graph.input[0].name: x})[0]
    want = torch.nn.Upsample(scale_factor=2, mode=mode, align_corners=align)(torch.tensor(x))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_dynamic_axes_are_symbolic_and_shapes_read_at_run_time():
    class M(ember.nn.Module):
        def forward(self, x):
            return x.view(x.shape[0], -1, 2).sum(-1)
    proto = onnx.load_model_from_string(export_bytes(
        M(), (ember.randn(2, 4, 3),), input_names=["x"], output_names=["y"],
        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}))
    dim0 = proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert "Shape" in {n.op_type for n in proto.graph.node}
    out = session(proto.SerializeToString()).run(None, {"x": np.ones((7, 4, 3), np.float32)})
    assert out[0].shape == (7, 6)


def test_dynamic_axes_naming_an_unknown_input_is_refused():
    with pytest.raises(ValueError, match="nope"):
        ember.onnx.export(ember.nn.ReLU(), (ember.randn(2),), io.BytesIO(),
                          dynamic_axes={"nope": {0: "b"}})


def test_import_ember_onnx_needs_no_onnx_package():
    import subprocess
    import sys
    code = ("import sys; sys.modules['onnx'] = None\nimport ember, ember.onnx\n"
            "try:\n    ember.onnx.export(ember.nn.ReLU(), (ember.randn(2),), None)\n"
            "except ImportError as e:\n    print('IMPORTERROR', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert "IMPORTERROR" in r.stdout and "pip install onnx" in r.stdout, r.stderr


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("opset", [17, 20])
def test_gelu_is_one_node_from_opset_20_and_decomposed_below(approximate, opset):
    m = ember.nn.GELU(approximate=approximate)
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(2, 12)
    data = export_bytes(m, (ember.tensor(x),), opset_version=opset)
    proto = onnx.load_model_from_string(data)
    types = [n.op_type for n in proto.graph.node]
    assert ("Gelu" in types) == (opset >= 20)
    assert ("Erf" in types) == (opset < 20 and approximate == "none")
    got = session(data).run(None, {proto.graph.input[0].name: x})[0]
    want = torch.nn.GELU(approximate=approximate)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_dynamic_shapes_keyword_sets_dynamic_axes():
    m = ember.nn.Linear(3, 2)
    f = io.BytesIO()
    ember.onnx.export(m, (ember.randn(2, 3),), f,
                      dynamic_shapes={"input": {0: ember.export.Dim("batch")}})
    proto = onnx.load_model_from_string(f.getvalue())
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    x = np.ones((6, 3), np.float32)
    got = session(f.getvalue()).run(None, {"input": x})[0]
    np.testing.assert_allclose(got, m(ember.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_constant_subgraphs_are_folded():
    class M(ember.nn.Module):
        def forward(self, x):
            mask = ember.ones(4, 4).triu(1) * -1e9       # reads no input: one constant
            return (x + mask).softmax(-1)
    x = ember.randn(2, 4, 4)
    folded = onnx.load_model_from_string(export_bytes(M(), (x,)))
    kept = onnx.load_model_from_string(export_bytes(M(), (x,), do_constant_folding=False))
    assert "Trilu" not in {n.op_type for n in folded.graph.node}
    assert "Trilu" in {n.op_type for n in kept.graph.node}
    for proto in (folded, kept):       # no initializer is left unread
        read = {i for n in proto.graph.node for i in n.input}
        assert all(t.name in read for t in proto.graph.initializer)
    for proto in (folded, kept):
        got = session(proto.SerializeToString()).run(None, {"x": x.numpy()})[0]
        np.testing.assert_allclose(got, M()(x).numpy(), rtol=1e-5, atol=1e-6)


def test_multiple_outputs_names_and_a_dynamic_output_axis():
    class M(ember.nn.Module):
        def forward(self, x):
            return x.sum(-1), (x * 2, x.amax(0))
    data = export_bytes(M(), (ember.randn(3, 4),), input_names=["x"],
                        output_names=["s", "d"], dynamic_axes={"x": {0: "n"}, "s": [0]})
    proto = onnx.load_model_from_string(data)
    assert [o.name for o in proto.graph.output] == ["s", "d", "output_2"]
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "s_dynamic_axes_1"
    # an output dim that follows an input's dynamic dim carries that dim's name
    assert proto.graph.output[1].type.tensor_type.shape.dim[0].dim_param == "n"
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    s, d, mx = session(data).run(None, {"x": x})
    np.testing.assert_allclose(s, x.sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mx, x.max(0), rtol=1e-6)


def test_training_mode_export_uses_batch_statistics_and_restores_buffers():
    t_bn = torch.nn.BatchNorm1d(3).train()
    m = ember.nn.BatchNorm1d(3).train()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32) + 5
    before = m.running_mean.numpy().copy()
    rng = ember.get_rng_state().clone()
    data = export_bytes(m, (ember.tensor(x),), training=ember.onnx.TrainingMode.TRAINING,
                        input_names=["x"], dynamic_axes={"x": {0: "n"}})
    assert np.array_equal(before, m.running_mean.numpy()) and m.training
    assert ember.equal(rng, ember.get_rng_state())
    x2 = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    got = session(data).run(None, {"x": x2})[0]
    np.testing.assert_allclose(got, t_bn(torch.tensor(x2)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
