"""Whole models through ONNX: the examples' GPT, CNNs and LSTM language model, recurrent
layers, attention and the transformer layer; onnxruntime equals ember and torch eager at the
export size and at another batch size (and sequence length where the model allows)."""
import importlib.util
import io
import os
import re
import tokenize

import numpy as np
import pytest
import torch

from onnx_check import check, randn

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "ember", "examples")


def example(name, lib):
    """ember/examples/<name>.py exec'd against `lib` (its import lines swapped for torch)."""
    path = os.path.join(EXAMPLES, name + ".py")
    src = open(path).read()
    if lib is torch:
        src = re.sub(r"^import ember\b", "import torch", src, flags=re.M)
        names = {t.string for t in tokenize.generate_tokens(io.StringIO(src).readline)
                 if t.type == tokenize.NAME}
        assert "ember" not in names
    spec = importlib.util.spec_from_loader(f"{name}_onnx_{lib.__name__}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


_MODS = {}


def example_cls(module, cls):
    def make(lib):
        key = (module, lib.__name__)
        if key not in _MODS:
            _MODS[key] = example(module, lib)
        return getattr(_MODS[key], cls)
    return make


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_gpt_dynamic_batch_and_sequence():
    cls = example_cls("gpt", "GPT")
    make = lambda L: cls(L)(vocab_size=32, block_size=16, n_layer=2, n_head=2,  # noqa: E731
                            n_embd=16)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 32, (2, 8)).astype(np.int64)
    other = rng.integers(0, 32, (3, 11)).astype(np.int64)
    check(make, [idx], dynamic={0: {0: "batch", 1: "seq"}}, other=[other], atol=2e-5)


def test_lenet_and_resnet():
    for name, shape in (("LeNet5", (2, 1, 28, 28)), ("ResNet", (2, 3, 8, 8))):
        cls = example_cls("cnn", name)
        make = (lambda L, cls=cls: cls(L)()) if name == "LeNet5" else \
            (lambda L, cls=cls: cls(L)(layers=(1, 1), widths=(4, 8)))
        check(make, [randn(*shape)], dynamic={0: {0: "batch"}},
              other=[randn(*((3,) + shape[1:]), seed=2)], atol=1e-4)


def test_lstm_language_model():
    cls = example_cls("lstm_lm", "LSTMLanguageModel")
    make = lambda L: cls(L)(20, emb_size=8, hidden_size=8, num_layers=2)  # noqa: E731
    rng = np.random.default_rng(0)
    check(make, [rng.integers(0, 20, (2, 5)).astype(np.int64)], dynamic={0: {0: "batch"}},
          other=[rng.integers(0, 20, (4, 5)).astype(np.int64)])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers(kind):
    def make(L):
        return getattr(L.nn, kind)(4, 3, num_layers=2, bidirectional=True, batch_first=True)
    check(make, [randn(2, 5, 4)], dynamic={0: {0: "batch"}}, other=[randn(3, 5, 4, seed=1)])


def test_multihead_attention():
    def make(L):
        class Attn(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = L.nn.MultiheadAttention(8, 2, batch_first=True)

            def forward(self, x):
                return self.mha(x, x, x)
        return Attn()
    check(make, [randn(2, 5, 8)], dynamic={0: {0: "batch"}}, other=[randn(3, 5, 8, seed=1)])


def test_transformer_encoder_layer():
    make = lambda L: L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1,  # noqa: E731
                                                  batch_first=True)
    check(make, [randn(2, 5, 8)], dynamic={0: {0: "batch", 1: "seq"}},
          other=[randn(3, 7, 8, seed=1)], atol=1e-4)


@pytest.mark.parametrize("mode", ["causal", "mask", "bool_mask"])
def test_scaled_dot_product_attention(mode):
    def make(L):
        F = L.nn.functional

        class M(L.nn.Module):
            def forward(self, q, k):
                if mode == "causal":
                    return F.scaled_dot_product_attention(q, k, k, is_causal=True)
                t = q.shape[-2]
                if mode == "mask":
                    mask = L.ones(t, t).triu(1) * -3.0
                else:
                    mask = L.ones(t, t, dtype=L.bool).tril()
                return F.scaled_dot_product_attention(q, k, k, attn_mask=mask)
        return M()
    check(make, [randn(2, 2, 4, 8), randn(2, 2, 4, 8, seed=1)],
          dynamic={0: {0: "batch"}, 1: {0: "batch"}},
          other=[randn(3, 2, 4, 8, seed=2), randn(3, 2, 4, 8, seed=3)])
