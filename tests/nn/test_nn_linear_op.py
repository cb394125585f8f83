"""F.linear as one op (ember/ops/linalg.py:linear): values and gradients against torch for
1-D, 2-D, batched and transposed inputs, with and without bias; gradcheck; layout of
weight.grad; dtype errors."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck


@pytest.mark.parametrize("shape", [(3,), (5, 3), (2, 4, 3), (0, 3)])
@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("transposed", [False, True])
def test_linear_matches_torch(shape, use_bias, transposed):
    transposed = transposed and len(shape) >= 2   # mT needs a matrix
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape[:-2] + shape[-2:][::-1] if transposed else shape)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    xe, we, be = [ember.tensor(v, requires_grad=True) for v in (x, w, b)]
    xt, wt, bt = [torch.tensor(v, requires_grad=True) for v in (x, w, b)]
    ie, it = (xe.mT, xt.mT) if transposed else (xe, xt)
    ye = ember.nn.functional.linear(ie, we, be if use_bias else None)
    yt = torch.nn.functional.linear(it, wt, bt if use_bias else None)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    for e, t in ((xe, xt), (we, wt), (be, bt)):
        if t.grad is None:
            assert e.grad is None
        else:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert we.grad.stride() == we.stride()   # accumulated without a transposed copy


def test_linear_gradcheck_and_errors():
    args = (ember.randn(2, 3, dtype=ember.float64, requires_grad=True),
            ember.randn(4, 3, dtype=ember.float64, requires_grad=True),
            ember.randn(4, dtype=ember.float64, requires_grad=True))
    assert gradcheck(ember.nn.functional.linear, args)
    assert gradgradcheck(ember.nn.functional.linear, args)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3, dtype=torch.float64))
    with pytest.raises(RuntimeError):
        ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.ones(2, 5), torch.ones(4, 3))
    with pytest.raises(RuntimeError):
        ember.nn.functional.linear(ember.ones(2, 5), ember.ones(4, 3))


@pytest.mark.parametrize("dtypes", [("float32", "float32", "float64"),
                                    ("float64", "float64", "float32"),
                                    ("float32", "float64", None), ("float64", "float32", None),
                                    ("float32", "float64", "float32"),
                                    ("float32", "float64", "float64"),
                                    ("float16", "float32", "bfloat16"),
                                    ("bfloat16", "float16", None)])
@pytest.mark.parametrize("shape", [(3, 4), (4,), (2, 3, 4)])
def test_linear_dtype_mismatch_message_matches_torch(dtypes, shape):
    # the message names the dtypes PyTorch names (it once named weight's twice for a bias
    # that differed)
    def message(lib):
        i, w, b = (None if d is None else getattr(lib, d) for d in dtypes)
        x, weight = lib.ones(shape, dtype=i), lib.ones(5, 4, dtype=w)
        bias = None if b is None else lib.ones(5, dtype=b)
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.linear(x, weight, bias)
        return str(info.value)
    assert message(ember) == message(torch)


@pytest.mark.parametrize("a, b", [("int64", "int32"), ("uint8", "bool"), ("float16", "float64"),
                                  ("float32", "bfloat16")])
def test_matmul_and_add_product_dtype_messages_match_torch(a, b):
    def messages(lib):
        x, y = lib.ones(2, 2, dtype=getattr(lib, a)), lib.ones(2, 2, dtype=getattr(lib, b))
        v, bx, by = y[0], x.unsqueeze(0), y.unsqueeze(0)
        out = []
        for call in (lambda: x @ y, lambda: lib.addmm(x, x, y), lambda: lib.addmm(y, x, y),
                     lambda: lib.addmv(v, x, v), lambda: lib.addmv(x[0], y, v),
                     lambda: lib.addbmm(y, bx, by), lambda: lib.addbmm(x, by, by),
                     lambda: lib.baddbmm(by, bx, by), lambda: lib.baddbmm(bx, by, by)):
            with pytest.raises(RuntimeError) as info:
                call()
            out.append(str(info.value))
        return out
    assert messages(ember) == messages(torch)
