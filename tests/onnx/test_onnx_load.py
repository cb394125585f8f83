"""ember.onnx.load: files ember exported and files real torch exported (its TorchScript-based
exporter, dynamo=False) run as ember Modules and agree with torch eager."""
import io
import warnings

import numpy as np
import pytest
import torch

import ember
from onnx_check import both, export_bytes, randn

MODELS = {
    "mlp": (lambda L: L.nn.Sequential(L.nn.Linear(4, 8), L.nn.GELU(), L.nn.LayerNorm(8),
                                      L.nn.Linear(8, 3), L.nn.Softmax(-1)), (2, 4)),
    "cnn": (lambda L: L.nn.Sequential(L.nn.Conv2d(3, 4, 3, padding=1), L.nn.BatchNorm2d(4),
                                      L.nn.ReLU(), L.nn.MaxPool2d(2),
                                      L.nn.Upsample(scale_factor=2, mode="bilinear"),
                                      L.nn.AvgPool2d(2), L.nn.AdaptiveAvgPool2d(1),
                                      L.nn.Flatten(), L.nn.Linear(4, 2)), (2, 3, 8, 8)),
    "conv_transpose_pad": (lambda L: L.nn.Sequential(
        L.nn.ReflectionPad2d(1), L.nn.ConvTranspose2d(3, 2, 3, stride=2), L.nn.Tanh(),
        L.nn.Upsample(scale_factor=2, mode="nearest")), (2, 3, 4, 4)),
    "transformer": (lambda L: L.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                    (2, 5, 8)),
}


def torch_export(t_mod, x, dynamic, opset=17):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(t_mod, (torch.tensor(x),), f, dynamo=False, input_names=["x"],
                          output_names=["y"], opset_version=opset,
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic
                          else None)
    return f.getvalue()


# torch's own exporter fails on TransformerEncoderLayer in eval mode (its fast path passes a
# tensor as is_causal), so torch-made files cover the other models
CASES = [(n, "ember") for n in sorted(MODELS)] + [(n, "torch") for n in sorted(MODELS)
                                                  if n != "transformer"]


@pytest.mark.parametrize("name,source", CASES)
def test_load_runs_like_torch(name, source):
    make, shape = MODELS[name]
    e_mod, t_mod = both(make)
    x = randn(*shape)
    if source == "ember":
        data = export_bytes(e_mod, (ember.tensor(x),), input_names=["x"],
                            dynamic_axes={"x": {0: "batch"}})
    else:
        data = torch_export(t_mod, x, dynamic=True)
    loaded = ember.onnx.load(data)
    assert isinstance(loaded, ember.nn.Module)
    for arr in (x, randn(*((3,) + shape[1:]), seed=4)):
        got = loaded(ember.tensor(arr))
        with torch.no_grad():
            want = t_mod(torch.tensor(arr))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [18, 19, 20, 21])
def test_load_every_opset_of_the_range(opset):
    """Files at opsets 18-21 (17 above), made by torch's exporter and by ember's, load and
    run like torch eager at the export batch size and another one."""
    make, shape = MODELS["cnn"]
    e_mod, t_mod = both(make)
    x = randn(*shape)
    for data in (torch_export(t_mod, x, dynamic=True, opset=opset),
                 export_bytes(e_mod, (ember.tensor(x),), input_names=["x"],
                              dynamic_axes={"x": {0: "batch"}}, opset_version=opset)):
        import onnx
        assert onnx.load_model_from_string(data).opset_import[0].version == opset
        loaded = ember.onnx.load(data)
        for arr in (x, randn(*((3,) + shape[1:]), seed=4)):
            with torch.no_grad():
                want = t_mod(torch.tensor(arr))
            np.testing.assert_allclose(loaded(ember.tensor(arr)).numpy(), want.numpy(),
                                       rtol=1e-4, atol=1e-5)


def test_load_from_path_and_bad_arity(tmp_path):
    e_mod, _ = both(lambda L: L.nn.Linear(3, 2))
    path = tmp_path / "lin.onnx"
    ember.onnx.export(e_mod, (ember.randn(2, 3),), str(path))
    loaded = ember.onnx.load(str(path))
    x = ember.randn(2, 3)
    np.testing.assert_allclose(loaded(x).numpy(), e_mod(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(TypeError):
        loaded(x, x)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_load_torch_recurrent_nodes(kind):
    """torch writes nn.LSTM/GRU/RNN as ONNX's LSTM/GRU/RNN nodes; the loader runs them."""
    torch.manual_seed(0)
    t_mod = getattr(torch.nn, kind)(4, 3, num_layers=2, bidirectional=True).eval()
    x = randn(5, 2, 4)
    data = torch_export(t_mod, x, dynamic=False)
    import onnx
    assert kind in {n.op_type for n in onnx.load_model_from_string(data).graph.node}
    got = ember.onnx.load(data)(ember.tensor(x))
    with torch.no_grad():
        want = t_mod(torch.tensor(x))
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-4, atol=1e-5)


def test_load_ember_exported_gpt_and_lstm_lm():
    from test_onnx_models import example_cls
    rng = np.random.default_rng(0)
    cases = [(lambda L: example_cls("gpt", "GPT")(L)(vocab_size=32, block_size=16, n_layer=1,
                                                      n_head=2, n_embd=16), (2, 8)),
             (lambda L: example_cls("lstm_lm", "LSTMLanguageModel")(L)(
                 20, emb_size=8, hidden_size=8, num_layers=2), (2, 5))]
    for make, shape in cases:
        e_mod, t_mod = both(make)
        idx = rng.integers(0, 16, shape).astype(np.int64)
        data = export_bytes(e_mod, (ember.tensor(idx),), input_names=["idx"],
                            dynamic_axes={"idx": {0: "batch"}})
        loaded = ember.onnx.load(data)
        other = rng.integers(0, 16, (3, shape[1])).astype(np.int64)
        got = loaded(ember.tensor(other))
        got = got[0] if isinstance(got, tuple) else got
        with torch.no_grad():
            want = t_mod(torch.tensor(other))[0]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=2e-5)
