"""ember.onnx.export of an ember.export ExportedProgram (as torch.onnx.export takes one):
composites arrive whole, so they map to ONNX's own ops (Gelu from opset 20, Softmax,
LayerNormalization, Conv with its bias); onnxruntime equals torch eager."""
import io

import numpy as np
import pytest
import torch

import ember
from onnx_check import both, onnx, randn, run_ort, session

MODELS = {
    "mlp": (lambda L: L.nn.Sequential(L.nn.Linear(4, 8), L.nn.GELU(), L.nn.LayerNorm(8),
                                      L.nn.Linear(8, 3), L.nn.LogSoftmax(-1)), (2, 4)),
    "gelu_tanh_softmax": (lambda L: L.nn.Sequential(L.nn.GELU(approximate="tanh"),
                                                    L.nn.Softmax(1)), (2, 5)),
    "cnn": (lambda L: L.nn.Sequential(L.nn.Conv2d(3, 4, 3, padding="same"),
                                      L.nn.BatchNorm2d(4), L.nn.ReLU(), L.nn.MaxPool2d(2),
                                      L.nn.ConvTranspose2d(4, 2, 2, stride=2),
                                      L.nn.Upsample(scale_factor=2, mode="nearest"),
                                      L.nn.Flatten(),
                                      L.nn.Linear(2 * 16 * 16, 3)), (2, 3, 8, 8)),
    "transformer": (lambda L: L.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                          activation="gelu"), (2, 5, 8)),
    "embedding": (lambda L: L.nn.Embedding(10, 4), None),
}


def _input(name, shape):
    if shape is None:
        return np.array([[1, 2, 9], [0, 3, 3]], dtype=np.int64)
    return randn(*shape)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_exported_program_to_onnx(name, opset):
    make, shape = MODELS[name]
    e_mod, t_mod = both(make)
    x = _input(name, shape)
    ep = ember.export.export(e_mod, (ember.tensor(x),))
    f = io.BytesIO()
    ember.onnx.export(ep, (), f, opset_version=opset)
    proto = onnx.load_model_from_string(f.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == opset
    types = {n.op_type for n in proto.graph.node}
    if "gelu" in name or name in ("mlp", "transformer"):
        assert ("Gelu" in types) == (opset >= 20)
    if name in ("mlp", "transformer"):
        assert "LayerNormalization" in types
    got = run_ort(session(f.getvalue()), [x])[0]
    with torch.no_grad():
        want = t_mod(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_gpt_exported_program():
    from test_onnx_models import example_cls
    cls = example_cls("gpt", "GPT")
    make = lambda L: cls(L)(vocab_size=32, block_size=16, n_layer=1, n_head=2,  # noqa: E731
                            n_embd=16)
    e_mod, t_mod = both(make)
    idx = np.random.default_rng(0).integers(0, 32, (2, 8)).astype(np.int64)
    ep = ember.export.export(e_mod, (ember.tensor(idx),))
    f = io.BytesIO()
    ember.onnx.export(ep, (), f, opset_version=20)
    got = run_ort(session(f.getvalue()), [idx])
    with torch.no_grad():
        want = t_mod(torch.tensor(idx))[0].numpy()
    assert len(got) == 1           # the None loss is not an output
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=2e-5)


def test_dynamic_exported_program_keeps_its_dims_symbolic():
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.GELU(), ember.nn.LayerNorm(4))
    batch = ember.export.Dim("batch")
    ep = ember.export.export(m, (ember.randn(2, 3),), dynamic_shapes={"input": {0: batch}})
    f = io.BytesIO()
    ember.onnx.export(ep, (), f, opset_version=20)
    proto = onnx.load_model_from_string(f.getvalue())
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    x = randn(5, 3)
    got = run_ort(session(f.getvalue()), [x])[0]
    np.testing.assert_allclose(got, m(ember.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
