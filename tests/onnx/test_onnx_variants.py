"""Masks, padding modes and less common ops through ONNX: attention with key-padding and
boolean masks, a pre-norm causal encoder layer, reflect/circular convolution padding,
Embedding(padding_idx), batch statistics over a dynamic batch, area interpolation,
pixel (un)shuffle, sort/argmax, cumsum, index tensors, masked_fill, bitwise logic, einsum;
onnxruntime equals ember and torch eager at two batch sizes."""
import pytest

from onnx_check import check, randn


def _make(f):
    def make(L):
        class M(L.nn.Module):
            def __init__(s):
                super().__init__()
                s.mha = L.nn.MultiheadAttention(8, 2, batch_first=True)
                s.enc = L.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                     norm_first=True, activation="gelu")
                s.conv = L.nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect")
                s.conv2 = L.nn.Conv2d(3, 3, 3, padding=1, padding_mode="circular")
                s.emb = L.nn.Embedding(10, 8, padding_idx=0)

            def forward(s, x):
                return f(L, s, x)
        return M()
    return make


SEQ, IMG = (2, 5, 8), (2, 3, 6, 6)
CASES = {
    "mha_key_padding_mask": (lambda L, s, x: s.mha(x, x, x, key_padding_mask=(
        x[..., 0] > 1.0))[0], SEQ),
    "mha_no_weights": (lambda L, s, x: s.mha(x, x, x, need_weights=False)[0], SEQ),
    "mha_bool_mask": (lambda L, s, x: s.mha(x, x, x, attn_mask=L.ones(
        5, 5, dtype=L.bool).triu(1))[0], SEQ),
    "encoder_causal": (lambda L, s, x: s.enc(
        x, is_causal=True, src_mask=L.nn.Transformer.generate_square_subsequent_mask(5)),
        SEQ),
    "conv_padding_modes": (lambda L, s, x: s.conv(x) + s.conv2(x), IMG),
    "embedding_padding_idx": (lambda L, s, x: s.emb((x[:, 0, 0] * 3).abs().long().clamp(
        0, 9)), IMG),
    "batch_stats": (lambda L, s, x: L.nn.functional.batch_norm(x, None, None, training=True),
                    IMG),
    "interp_area": (lambda L, s, x: L.nn.functional.interpolate(x, size=(3, 3), mode="area"),
                    IMG),
    "pixel_shuffle": (lambda L, s, x: L.nn.functional.pixel_shuffle(
        x[:, :2].repeat(1, 2, 1, 1), 2), IMG),
    "pixel_unshuffle": (lambda L, s, x: L.nn.functional.pixel_unshuffle(x, 2), IMG),
    "sort_argmax": (lambda L, s, x: x.argmax(-1).float() + x.sort(-1).values[..., 0]
                    + x.topk(2, dim=-1).values.sum(-1), IMG),
    "cumsum_matmul": (lambda L, s, x: x.cumsum(-1) @ x.transpose(-1, -2), IMG),
    "index_tensor": (lambda L, s, x: x[:, L.tensor([2, 0])], IMG),
    "masked_fill": (lambda L, s, x: x.masked_fill(x > 0.5, 0.0) * 2, IMG),
    "bool_logic": (lambda L, s, x: L.where((x > 0) & (x < 1) | ~(x > -1), x, -x), IMG),
    "einsum": (lambda L, s, x: L.einsum("bchw,bcwk->bhk", x, x), IMG),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_variant(name):
    f, shape = CASES[name]
    check(_make(f), [randn(*shape)], dynamic={0: {0: "batch"}},
          other=[randn(*((3,) + shape[1:]), seed=5)], atol=1e-4)
