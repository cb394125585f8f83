"""Every exportable nn layer: onnx.checker passes, onnxruntime equals ember and torch eager
(same weights) at the export batch size and at another batch size (dynamic axis 0)."""
import pytest

from onnx_check import check, randn

B = {0: {0: "batch"}}


def fn_module(f):
    """make(lib) for a module whose forward is f(lib, x)."""
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                return f(lib, x)
        return M()
    return make


LAYERS = {
    "linear": (lambda L: L.nn.Linear(4, 3), (2, 4)),
    "linear_3d": (lambda L: L.nn.Linear(4, 3), (2, 5, 4)),
    "conv1d": (lambda L: L.nn.Conv1d(3, 4, 3, padding=1), (2, 3, 8)),
    "conv2d": (lambda L: L.nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=1), (2, 3, 8, 8)),
    "conv2d_groups": (lambda L: L.nn.Conv2d(4, 4, 3, groups=2, dilation=2), (2, 4, 8, 8)),
    "conv3d": (lambda L: L.nn.Conv3d(2, 3, 3, padding=1), (2, 2, 4, 4, 4)),
    "conv_transpose1d": (lambda L: L.nn.ConvTranspose1d(3, 2, 3, stride=2), (2, 3, 5)),
    "conv_transpose2d": (lambda L: L.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1,
                                                       output_padding=1), (2, 3, 4, 4)),
    "conv_transpose3d": (lambda L: L.nn.ConvTranspose3d(2, 2, 2, stride=2), (2, 2, 3, 3, 3)),
    "maxpool1d": (lambda L: L.nn.MaxPool1d(2), (2, 3, 8)),
    "maxpool2d": (lambda L: L.nn.MaxPool2d(3, stride=2, padding=1), (2, 3, 8, 8)),
    "maxpool2d_ceil": (lambda L: L.nn.MaxPool2d(2, ceil_mode=True), (2, 3, 7, 7)),
    "maxpool3d": (lambda L: L.nn.MaxPool3d(2), (2, 2, 4, 4, 4)),
    "maxpool3d_ceil": (lambda L: L.nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True),
                       (2, 2, 6, 5, 4)),
    "adaptive_avg3d": (lambda L: L.nn.AdaptiveAvgPool3d((1, 2, 1)), (2, 2, 4, 4, 4)),
    "avgpool1d": (lambda L: L.nn.AvgPool1d(2), (2, 3, 8)),
    "avgpool2d": (lambda L: L.nn.AvgPool2d(3, stride=2, padding=1), (2, 3, 8, 8)),
    "avgpool2d_nopad": (lambda L: L.nn.AvgPool2d(3, stride=2, padding=1,
                                                 count_include_pad=False), (2, 3, 8, 8)),
    "avgpool3d": (lambda L: L.nn.AvgPool3d(2), (2, 2, 4, 4, 4)),
    "adaptive_avg2d": (lambda L: L.nn.AdaptiveAvgPool2d((1, 1)), (2, 3, 6, 6)),
    "adaptive_avg1d": (lambda L: L.nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    "adaptive_max2d": (lambda L: L.nn.AdaptiveMaxPool2d(2), (2, 3, 6, 6)),
    "batchnorm1d": (lambda L: L.nn.BatchNorm1d(4), (3, 4, 5)),
    "batchnorm2d": (lambda L: L.nn.BatchNorm2d(3), (2, 3, 4, 4)),
    "layernorm": (lambda L: L.nn.LayerNorm(5), (2, 3, 5)),
    "groupnorm": (lambda L: L.nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    "rmsnorm": (lambda L: L.nn.RMSNorm(5), (2, 3, 5)),
    "instancenorm": (lambda L: L.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    "hardsigmoid_selu": (lambda L: L.nn.Sequential(L.nn.Hardsigmoid(), L.nn.SELU(),
                                                   L.nn.Softsign()), (2, 5)),
    "relu": (lambda L: L.nn.ReLU(), (2, 5)),
    "gelu": (lambda L: L.nn.GELU(), (2, 5)),
    "gelu_tanh": (lambda L: L.nn.GELU(approximate="tanh"), (2, 5)),
    "sigmoid": (lambda L: L.nn.Sigmoid(), (2, 5)),
    "tanh": (lambda L: L.nn.Tanh(), (2, 5)),
    "softmax": (lambda L: L.nn.Softmax(dim=-1), (2, 3, 5)),
    "log_softmax": (lambda L: L.nn.LogSoftmax(dim=1), (2, 5)),
    "silu": (lambda L: L.nn.SiLU(), (2, 5)),
    "leaky_relu": (lambda L: L.nn.LeakyReLU(0.1), (2, 5)),
    "elu": (lambda L: L.nn.ELU(), (2, 5)),
    "hardtanh": (lambda L: L.nn.Hardtanh(-0.5, 0.5), (2, 5)),
    "relu6": (lambda L: L.nn.ReLU6(), (2, 5)),
    "softplus": (lambda L: L.nn.Softplus(), (2, 5)),
    "mish": (lambda L: L.nn.Mish(), (2, 5)),
    "hardswish": (lambda L: L.nn.Hardswish(), (2, 5)),
    "prelu": (lambda L: L.nn.PReLU(3), (2, 3, 4)),
    "dropout_eval": (lambda L: L.nn.Sequential(L.nn.Dropout(0.5), L.nn.Linear(4, 2)), (2, 4)),
    "flatten": (lambda L: L.nn.Flatten(), (2, 3, 2, 2)),
    "upsample_nearest": (lambda L: L.nn.Upsample(scale_factor=2, mode="nearest"),
                         (2, 3, 4, 4)),
    "upsample_nearest_size": (lambda L: L.nn.Upsample(size=(7, 5), mode="nearest"),
                              (2, 3, 4, 3)),
    "upsample_bilinear": (lambda L: L.nn.Upsample(scale_factor=2, mode="bilinear"),
                          (2, 3, 4, 4)),
    "upsample_bilinear_ac": (lambda L: L.nn.Upsample(scale_factor=2, mode="bilinear",
                                                     align_corners=True), (2, 3, 4, 4)),
    "upsample_bilinear_size": (lambda L: L.nn.Upsample(size=(5, 7), mode="bilinear"),
                               (2, 3, 4, 4)),
    "upsample_bicubic": (lambda L: L.nn.Upsample(scale_factor=2, mode="bicubic"),
                         (2, 3, 4, 4)),
    "upsample_bicubic_ac": (lambda L: L.nn.Upsample(size=(6, 6), mode="bicubic",
                                                    align_corners=True), (2, 3, 4, 4)),
    "pad_constant": (lambda L: L.nn.ConstantPad2d((1, 2, 0, 1), 0.5), (2, 3, 4, 4)),
    "pad_reflect": (lambda L: L.nn.ReflectionPad2d((1, 2, 2, 1)), (2, 3, 4, 4)),
    "pad_replicate": (lambda L: L.nn.ReplicationPad2d(2), (2, 3, 4, 4)),
    "pad_circular": (lambda L: L.nn.CircularPad2d((1, 2, 2, 1)), (2, 3, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_exports_and_matches(name):
    make, shape = LAYERS[name]
    x = randn(*shape)
    other = randn(*((5,) + shape[1:]), seed=1)
    check(make, [x], dynamic=B, other=[other])


def test_embedding_gathers():
    import numpy as np
    idx = np.array([[1, 2, 0], [4, 3, 9]], dtype=np.int64)
    check(lambda L: L.nn.Embedding(10, 4), [idx], dynamic=B,
          other=[np.array([[5, 1, 1]] * 4, dtype=np.int64)])


@pytest.mark.parametrize("opset", [18, 19, 20, 21])
def test_opsets_written_exactly(opset):
    # reductions take their axes as an input from opset 18, Pad has mode=wrap from 19,
    # Gelu exists from 20
    make = lambda L: L.nn.Sequential(L.nn.Conv2d(3, 4, 3), L.nn.GroupNorm(2, 4),  # noqa: E731
                                     L.nn.GELU(), L.nn.CircularPad2d(1), L.nn.Softmax(1),
                                     L.nn.Upsample(scale_factor=2, mode="bilinear"),
                                     L.nn.AdaptiveMaxPool2d(2))
    check(make, [randn(2, 3, 4, 4)], dynamic=B, other=[randn(3, 3, 4, 4)], opset=opset)


@pytest.mark.parametrize("what", ["cat_split", "permute_view", "slicing", "where",
                                  "reductions", "stack_chunk", "math"])
def test_tensor_ops(what):
    def f(L, x):
        if what == "cat_split":
            a, b = L.cat([x, x * 2], 1).split([2, 4], dim=1)
            return a.sum(1) + b.mean(1)
        if what == "permute_view":
            y = x.permute(0, 2, 1).contiguous()
            return y.view(y.shape[0], -1).transpose(0, 1).reshape(-1, 2)
        if what == "slicing":
            return x[:, 1:3, ::2] + x[..., -1:][:, None, 0]
        if what == "where":
            return L.where(x > 0, x, x.abs() * 0.5).clamp(-0.3, 0.7)
        if what == "reductions":
            return L.stack([x.amax(-1), x.min(dim=1).values.sum(-1, keepdim=True).expand(-1, 3),
                            x.std(-1), x.var(-1, unbiased=False), x.logsumexp(-1)], 0)
        if what == "stack_chunk":
            p, q = x.chunk(2, dim=-1)
            return L.stack([p, q], dim=1).flatten(1).unsqueeze(-1).squeeze(-1)
        return (x.exp() - x.sigmoid() * x.tanh() + (x * x + 1).sqrt().log() + x.pow(2)
                + x.sign() + x.neg().relu() + x.sin() + x.cos() + x.erf() + (x.abs() + 1).rsqrt()
                + x.floor() + x.round() + x.reciprocal().clamp(-1, 1))
    check(fn_module(f), [randn(2, 3, 4)], dynamic=B, other=[randn(4, 3, 4)])
