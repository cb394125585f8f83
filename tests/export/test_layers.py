"""Every kind of layer exports, survives save/load and run_decompositions, and the programs
give the eager outputs (eager ember itself is checked against torch in tests/nn)."""
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.export as E
from ember.compiler.runtime import flatten


class _Pad(nn.Module):
    def forward(self, x):
        return F.pad(x, (1, 2, 1, 1), mode="reflect")


class _Kw(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, *, scale=None, extra=None):
        y = self.lin(x) * scale
        return [y, extra["z"] + 1]


def _cases():
    r = ember.randn
    return {
        "lstm": (nn.LSTM(4, 6, num_layers=2, batch_first=True), (r(2, 5, 4),), {}),
        "gru": (nn.GRU(4, 6), (r(5, 2, 4),), {}),
        "mha": (nn.MultiheadAttention(8, 2, batch_first=True), (r(2, 5, 8),) * 3, {}),
        "encoder": (nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                    (r(2, 5, 8),), {}),
        "embedding": (nn.Embedding(10, 4), (ember.randint(0, 10, (2, 3)),), {}),
        "groupnorm": (nn.GroupNorm(2, 4), (r(2, 4, 3, 3),), {}),
        "conv_transpose": (nn.ConvTranspose2d(4, 2, 3, stride=2), (r(2, 4, 3, 3),), {}),
        "conv1d": (nn.Conv1d(4, 2, 3), (r(2, 4, 7),), {}),
        "pools": (nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(1), nn.AdaptiveAvgPool2d(2)),
                  (r(1, 2, 8, 8),), {}),
        "reflect_pad": (_Pad(), (r(1, 2, 4, 4),), {}),
        "upsample": (nn.Upsample(scale_factor=2, mode="bilinear"), (r(1, 2, 4, 4),), {}),
        "dropout_eval": (nn.Dropout(0.3), (r(4),), {}),
        "kwargs": (_Kw(), (r(2, 4),), {"scale": r(4), "extra": {"z": r(3)}}),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_layer_roundtrip(name):
    ember.manual_seed(0)
    m, args, kwargs = _cases()[name]
    m.eval()
    ep = E.export(m, args, kwargs)
    buf = io.BytesIO()
    E.save(ep, buf)
    buf.seek(0)
    loaded = E.load(buf)
    ref = flatten(m(*args, **kwargs), {})
    for prog in (ep, loaded, ep.run_decompositions()):
        out = flatten(prog.module()(*args, **kwargs), {})
        with ember.no_grad():       # the replay that reuses dead intermediates' buffers
            out2 = flatten(prog.module()(*args, **kwargs), {})
        assert [p for p, _ in out] == [p for p, _ in ref] == [p for p, _ in out2]
        for (_, a), (_, b), (_, c) in zip(ref, out, out2):
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
            np.testing.assert_allclose(c.numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_shared_dim_across_inputs():
    class Add(nn.Module):
        def forward(self, x, y):
            return x + y
    b = E.Dim("b", max=9)
    ep = E.export(Add(), (ember.randn(3, 2), ember.randn(3, 2)),
                  dynamic_shapes={"x": {0: b}, "y": {0: b}})
    assert len(ep.range_constraints) == 1
    out = ep.module()(ember.ones(6, 2), ember.ones(6, 2))
    assert out.shape == (6, 2)
    with pytest.raises(AssertionError, match="y.size"):
        ep.module()(ember.ones(6, 2), ember.ones(5, 2))


def test_inplace_replay_reuses_buffers_and_matches():
    from ember.examples.cnn import ResNet
    m = ResNet().eval()
    x = ember.randn(2, 3, 16, 16)
    ep = E.export(m, (x,))
    fn = ep._replay_inplace
    n_inplace = sum(1 for v in fn.env.values() if getattr(v, "__name__", "").endswith("_"))
    assert n_inplace >= 10
    with ember.no_grad():
        np.testing.assert_allclose(ep.module()(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
        inputs = [x.clone()]
        ep.module()(inputs[0])
        np.testing.assert_array_equal(inputs[0].numpy(), x.numpy())   # inputs never reused


class _MaskedMHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, mask):
        return self.m(x, x, x, key_padding_mask=mask)[0]


def _dynamic_cases():
    from ember.examples.cnn import ResNet
    r = ember.randn
    return {
        "groupnorm": (nn.GroupNorm(2, 4), lambda b: (r(b, 4, 5, 5),)),
        "adaptive_pool": (nn.AdaptiveAvgPool2d(2), lambda b: (r(b, 2, 6, 6),)),
        "resnet": (ResNet(), lambda b: (r(b, 3, 16, 16),)),
        "mha_key_padding_mask": (_MaskedMHA(), lambda b: (
            r(b, 5, 8), ember.arange(5).expand(b, 5) > 3)),
    }


@pytest.mark.parametrize("name", sorted(_dynamic_cases()))
def test_dynamic_batch(name):
    ember.manual_seed(0)
    m, make = _dynamic_cases()[name]
    m.eval()
    args = make(3)
    batch = E.Dim("batch", max=16)
    ep = E.export(m, args, dynamic_shapes=tuple({0: batch} for _ in args))
    assert list(ep.range_constraints) == ["s0"]
    for b in (2, 7):
        other = make(b)
        np.testing.assert_allclose(ep.module()(*other).detach().numpy(),
                                   m(*other).detach().numpy(), rtol=1e-5, atol=1e-6)
