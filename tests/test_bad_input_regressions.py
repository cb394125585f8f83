"""Regression tests for bad (and unusual but valid) input found by the differential fuzzer of
issue 19: each case runs on torch and on ember with the same arguments, and ember must give
torch's answer: the same exception class, or an equal result (values, shape, dtype)."""
import math

import numpy as np
import pytest
import torch

import ember

NAN = math.nan


def _setitem(lib, target_shape, index, value_shape):
    y = lib.zeros(*target_shape)
    y[index] = lib.arange(1.0, 1 + int(np.prod(value_shape))).reshape(value_shape)
    return y


CASES = {
    # binary_cross_entropy's target must have the input's dtype (torch does not promote)
    "binary_cross_entropy int64 target": lambda lib: lib.nn.functional.binary_cross_entropy(
        lib.full((3,), 0.5), lib.tensor([0, 1, 1])),
    "binary_cross_entropy float64 target": lambda lib: lib.nn.functional.binary_cross_entropy(
        lib.full((3,), 0.5), lib.full((3,), 0.25, dtype=lib.float64)),
    # a float or bool dim of a 2-d transpose is refused (0.0 == 0 matched the fast path)
    "swapaxes(0.0, 1) 2-d": lambda lib: lib.ones(2, 3).swapaxes(0.0, 1),
    "transpose(0, 1.0) 2-d": lambda lib: lib.ones(2, 3).transpose(0, 1.0),
    "transpose(True, 0) 2-d": lambda lib: lib.ones(2, 3).transpose(True, 0),
    "swapaxes(x, 0, 1.0) 2-d": lambda lib: lib.swapaxes(lib.ones(2, 3), 0, 1.0),
    "transpose(0, 1) 2-d": lambda lib: lib.ones(2, 3).transpose(0, 1),
    # complex bounds give a complex linspace (it was silently real zeros)
    "linspace(0, 1j, 3)": lambda lib: lib.linspace(0, 1j, 3),
    "linspace(1+1j, 3-2j, 5)": lambda lib: lib.linspace(1 + 1j, 3 - 2j, 5),
    "linspace(0, 2j, 4, complex128)": lambda lib: lib.linspace(0, 2j, 4, dtype=lib.complex128),
    # NumPy has no bfloat16: numpy() refuses it (TypeError), force or not
    "bfloat16 numpy()": lambda lib: lib.ones(2, dtype=lib.bfloat16).numpy(),
    "bfloat16 numpy(force=True)": lambda lib: lib.ones(2, dtype=lib.bfloat16).numpy(force=True),
    # Python conversions of a tensor with several elements: ValueError (not TypeError)
    "float of 3 elements": lambda lib: float(lib.ones(3)),
    "int of 3 elements": lambda lib: int(lib.ones(3)),
    "complex of 3 elements": lambda lib: complex(lib.ones(3)),
    # `in` with a non-tensor, non-number
    "contains str": lambda lib: "a" in lib.ones(3),
    "contains None": lambda lib: None in lib.ones(3),
    "contains number": lambda lib: 1.0 in lib.ones(3),
    "contains tensor": lambda lib: lib.tensor(2.0) in lib.ones(3),
    # factories take size= by keyword
    "zeros(size=)": lambda lib: lib.zeros(size=(2, 3)),
    "ones(size=)": lambda lib: lib.ones(size=[2]),
    "empty(size=).shape": lambda lib: lib.empty(size=(1, 2)).shape,
    "rand(size=).shape": lambda lib: lib.rand(size=(2,)).shape,
    "randn(size=).shape": lambda lib: lib.randn(size=(3,)).shape,
    "zeros(2, size=)": lambda lib: lib.zeros(2, size=(2, 3)),
    # __setitem__ drops the value's leading size-1 dims; a real mismatch is refused
    "setitem [0] = [5.]": lambda lib: _setitem(lib, (3,), 0, (1,)),
    "setitem [1] = (1, 1, 3)": lambda lib: _setitem(lib, (2, 3), 1, (1, 1, 3)),
    "setitem [idx] = (1, 2)": lambda lib: _setitem(lib, (4,), lib.tensor([0, 2]), (1, 2)),
    "setitem [0:2] = (3,)": lambda lib: _setitem(lib, (3,), slice(0, 2), (3,)),
    # a uint8 index tensor is a mask (deprecated in torch, still a mask)
    "uint8 mask getitem": lambda lib: lib.arange(4.0)[lib.tensor([1, 0, 1, 1], dtype=lib.uint8)],
    "uint8 mask on dim 1": lambda lib: lib.arange(8.0).reshape(2, 4)[
        :, lib.tensor([0, 1, 1, 0], dtype=lib.uint8)],
    "uint8 mask setitem tensor": lambda lib: _setitem(
        lib, (4,), lib.tensor([1, 0, 1, 1], dtype=lib.uint8), (3,)),
    "uint8 mask setitem scalar": lambda lib: lib.zeros(4).__setitem__(
        lib.tensor([1, 0, 1, 1], dtype=lib.uint8), 9.0),
    # integers in an index with tensors are applied first, as basic indices (torch's order)
    "x[0, :, idx]": lambda lib: lib.zeros(1, 4, 1)[0, :, lib.tensor([0])].shape,
    "x[1, :, idx] values": lambda lib: lib.arange(24.0).reshape(2, 3, 4)[1, :, lib.tensor([2, 0])],
    "x[:, 1, idx] values": lambda lib: lib.arange(24.0).reshape(2, 3, 4)[:, 1, lib.tensor([3])],
    "x[..., 0, idx]": lambda lib: lib.arange(24.0).reshape(2, 3, 4)[..., 0, lib.tensor([1, 2])],
    "x[0, mask]": lambda lib: lib.arange(24.0).reshape(2, 3, 4)[
        0, lib.tensor([[True, False, True, False]] * 3)],
    "x[0, :, idx] = v": lambda lib: _setitem(lib, (2, 3, 4), (0, slice(None), lib.tensor([2, 0])),
                                             (3, 2)),
    # an allocation too big for memory is torch's RuntimeError, not MemoryError
    "zeros(2**40)": lambda lib: lib.zeros(2 ** 40),
    "ones(2**20, 2**21)": lambda lib: lib.ones(2 ** 20, 2 ** 21, dtype=lib.float64),
    # view(dtype) with another element size: the last dim rescaled, torch's conditions
    "float32 view int16": lambda lib: lib.arange(8, dtype=lib.float32).view(lib.int16),
    "float32 view float64": lambda lib: lib.arange(8, dtype=lib.float32).reshape(2, 4).view(
        lib.float64),
    "int32 rows view int8": lambda lib: lib.arange(12, dtype=lib.int32).reshape(3, 4)[::2].view(
        lib.int8),
    "view float64 of odd size": lambda lib: lib.arange(3.0).view(lib.float64),
    "view float64 at odd offset": lambda lib: lib.arange(8, dtype=lib.float32)[1:7].view(
        lib.float64),
    "view float64 of a transpose": lambda lib: lib.arange(8, dtype=lib.float32).reshape(
        4, 2).t().view(lib.float64),
    "view int16 of a 0-dim": lambda lib: lib.tensor(1.0).view(lib.int16),
    # shapes
    "broadcast_shapes with -1": lambda lib: lib.broadcast_shapes((2, 3, 1), (-1,)),
    "tensor_split 2**63 sections": lambda lib: lib.tensor_split(lib.ones(3, 3), 2 ** 63, 1),
    # found by tests/fuzz: chunk of an empty dim into 2**63 pieces looped for ever; ints
    # beyond int64 and non-tensors for tensor arguments get torch's parser errors
    "sum(dim=None, keepdim=True)": lambda lib: lib.ones(2, 3).sum(dim=None, keepdim=True),
    # the *_with_indices forms return the pair whatever return_indices says
    "max_pool1d_with_indices":
        lambda lib: lib.nn.functional.max_pool1d_with_indices(lib.arange(8.).reshape(1, 2, 4), 2),
    "max_pool2d_with_indices": lambda lib: lib.nn.functional.max_pool2d_with_indices(
        lib.arange(32.).reshape(1, 2, 4, 4), 2, return_indices=False),
    "trapezoid of bool": lambda lib: lib.trapezoid(lib.ones(3, dtype=lib.bool)),
    "trapezoid of bool, empty dim": lambda lib: lib.trapezoid(lib.ones(2, 0, dtype=lib.bool)),
    "trapezoid of int64, empty dim": lambda lib: lib.trapezoid(lib.ones(2, 0, dtype=lib.int64)),
    "trapezoid with bool x": lambda lib: lib.trapezoid(lib.ones(2, 3), lib.ones(3, dtype=lib.bool)),
    "cumulative_trapezoid of bool":
        lambda lib: lib.cumulative_trapezoid(lib.ones(3, dtype=lib.bool)),
    "mvlgamma p=2**63": lambda lib: lib.mvlgamma(lib.ones(2) * 5, 2 ** 63),
    "linalg.vander N=2**63": lambda lib: lib.linalg.vander(lib.ones(3), N=2 ** 63),
    "chunk 2**63 of empty": lambda lib: lib.zeros(0, 3).chunk(2 ** 63),
    "sum dim 2**63": lambda lib: lib.ones(2, 3).sum(2 ** 63),
    "unsqueeze 2**63": lambda lib: lib.ones(2).unsqueeze(2 ** 63),
    "sort of a list": lambda lib: lib.sort([1.0, 2.0]),
    "sum of a str": lambda lib: lib.sum("abc"),
    "matmul with a str": lambda lib: lib.matmul(lib.ones(2, 2), "a"),
    "tensor_split 2**62 sections": lambda lib: lib.tensor_split(lib.ones(3, 3), 2 ** 62, 1),
    "multi_dot of one matrix": lambda lib: lib.linalg.multi_dot([lib.ones(2, 2)]),
    # wrong types of tensor arguments: TypeError, not an AttributeError from inside
    "stack with None": lambda lib: lib.stack([lib.ones(2), None]),
    "cat with None": lambda lib: lib.cat([lib.ones(2), None]),
    "linear weight None": lambda lib: lib.nn.functional.linear(lib.ones(2), None),
    "linear input None": lambda lib: lib.nn.functional.linear(None, lib.ones(2, 2)),
    # Module.to(float) is float64
    "Module.to(float)": lambda lib: lib.nn.Linear(2, 2).to(float).weight.dtype,
    "Module.to(int)": lambda lib: lib.nn.Linear(2, 2).to(int),
    # distribution parameters out of range
    "cauchy_ sigma < 0": lambda lib: lib.ones(2).cauchy_(0, -1.0),
    "cauchy_ sigma = 0": lambda lib: lib.ones(2).cauchy_(0, 0.0),
    "geometric_ p > 1": lambda lib: lib.ones(2).geometric_(1.5),
    "geometric_ p = 0": lambda lib: lib.ones(2).geometric_(0.0),
    "geometric_ p nan": lambda lib: lib.ones(2).geometric_(NAN),
    "log_normal_ std < 0": lambda lib: lib.ones(2).log_normal_(0, -1.0),
    # activations: bounds, dtypes, NaN
    "hardtanh min > max": lambda lib: lib.nn.functional.hardtanh(lib.ones(3), 2.0, 1.0),
    "hardtanh bool": lambda lib: lib.nn.functional.hardtanh(lib.ones(3, dtype=lib.bool)),
    "hardtanh int": lambda lib: lib.nn.functional.hardtanh(lib.arange(-3, 3)),
    "hardshrink nan": lambda lib: lib.nn.functional.hardshrink(
        lib.tensor([NAN, 0.3, -2.0, 2.0, -0.5])),
    "softshrink nan": lambda lib: lib.nn.functional.softshrink(
        lib.tensor([NAN, 0.3, -2.0, 2.0, math.inf])),
    # found by tests/fuzz (second pass): wrong values
    "adaptive_avg_pool3d inf stays in its window": lambda lib: lib.nn.functional.adaptive_avg_pool3d(
        lib.tensor([[[[[1.0, math.inf, 2.0], [0.5, 1.0, NAN], [3.0, 1.0, 2.0]]]]]), (2, 2, 2)),
    "adaptive_avg_pool2d -inf, 5 -> 3": lambda lib: lib.nn.functional.adaptive_avg_pool2d(
        lib.tensor([[[1.0, -math.inf, 2.0, 0.5, 1.0]] * 2]), (1, 3)),
    "adaptive_avg_pool1d int": lambda lib: lib.nn.functional.adaptive_avg_pool1d(
        lib.ones(1, 2, 4, dtype=lib.int64), 2),
    "bce_with_logits: target's dtype": lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(
        lib.ones(3, dtype=lib.float64), lib.ones(3)).dtype,
    "bce_with_logits int input": lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(
        lib.ones(3, dtype=lib.int64), lib.ones(3)),
    "bce_with_logits int target": lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(
        lib.ones(3), lib.ones(3, dtype=lib.int64)),
    "sdpa: a row with all scores -inf is 0": lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.ones(1, 2, 3), lib.tensor([[[-math.inf, 1, 1], [1, 1, 1], [1, 1, 1.0]]]),
        lib.arange(9.0).reshape(1, 3, 3), is_causal=True),
    "sdpa: a fully masked row is 0": lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.ones(1, 2, 3), lib.ones(1, 3, 3), lib.arange(9.0).reshape(1, 3, 3),
        attn_mask=lib.tensor([[False] * 3, [True, False, True]])),
    # bool, float and None where an int goes; ints beyond int64 (torch's parser)
    "topk k bool": lambda lib: lib.ones(5).topk(True),
    "topk k np.int64": lambda lib: lib.ones(5).topk(np.int64(2)).values,
    "kthvalue k float": lambda lib: lib.ones(5).kthvalue(2.0),
    "tril diagonal bool": lambda lib: lib.ones(3, 3).tril(True),
    "triu diagonal float": lambda lib: lib.ones(3, 3).triu(1.0),
    "tril diagonal 2**63": lambda lib: lib.ones(3, 3).tril(2 ** 63),
    "roll shifts bool": lambda lib: lib.ones(3).roll(True),
    "roll shifts 2**63": lambda lib: lib.ones(3).roll(2 ** 63),
    "rot90 k float": lambda lib: lib.ones(3, 3).rot90(1.0),
    "rot90 k 2**63": lambda lib: lib.ones(3, 3).rot90(2 ** 63),
    "diag_embed offset bool": lambda lib: lib.diag_embed(lib.ones(3), True),
    "diagflat offset bool": lambda lib: lib.diagflat(lib.ones(3), True),
    "diagonal offset 2**63": lambda lib: lib.ones(3, 3).diagonal(2 ** 63),
    "chunk chunks bool": lambda lib: lib.ones(4).chunk(True),
    "tril_indices offset 2**63": lambda lib: lib.tril_indices(3, 3, 2 ** 63),
    "triu_indices row 2**63": lambda lib: lib.triu_indices(2 ** 63, 3),
    "vsplit bool": lambda lib: lib.ones(4, 2).vsplit(True),
    "softmax dim None": lambda lib: lib.softmax(lib.ones(3), None),
    "log_softmax dim None": lambda lib: lib.ones(3).log_softmax(None),
    "F.softmax without dim": lambda lib: lib.nn.functional.softmax(lib.ones(3)),
    "matrix_power n 2**63": lambda lib: lib.linalg.matrix_power(lib.eye(2), 2 ** 63),
    "randperm 2**63": lambda lib: lib.randperm(2 ** 63),
    "randint low float": lambda lib: lib.randint(2.0, 5, (2,)),
    "randint_like 2**63": lambda lib: lib.randint_like(lib.ones(2), 2 ** 63),
    "randint_like float": lambda lib: lib.randint_like(lib.ones(2), 3.0),
    "randn_like unknown keyword": lambda lib: lib.randn_like(lib.ones(2), bogus=1),
    "linspace steps bool": lambda lib: lib.linspace(0, 1, True),
    "range without end": lambda lib: lib.range(5),
    "full_like None": lambda lib: lib.full_like(lib.ones(2), None),
    "sum_to_size (2.0, 1)": lambda lib: lib.ones(2, 3).sum_to_size((2.0, 1)),
    "sum_to_size 2**63": lambda lib: lib.ones(2, 3).sum_to_size(2 ** 63, 3),
    "zeros(2, 2**63)": lambda lib: lib.zeros(2, 2 ** 63),
    "repeat 2**63": lambda lib: lib.ones(2, 3).repeat(1, 2 ** 63),
    # dtypes that torch's kernels refuse
    "trace bool": lambda lib: lib.ones(3, 3, dtype=lib.bool).trace(),
    "prelu weight float64": lambda lib: lib.nn.functional.prelu(lib.ones(2, 3),
                                                                lib.ones(3, dtype=lib.float64)),
    "vecdot float32 . float64": lambda lib: lib.linalg.vecdot(lib.ones(3),
                                                              lib.ones(3, dtype=lib.float64)),
    "huber_loss int input": lambda lib: lib.nn.functional.huber_loss(
        lib.ones(3, dtype=lib.int64), lib.ones(3)),
    "huber_loss int target": lambda lib: lib.nn.functional.huber_loss(
        lib.ones(3), lib.ones(3, dtype=lib.int64)),
    "max_pool3d bool": lambda lib: lib.nn.functional.max_pool3d(
        lib.ones(1, 2, 4, 4, 4, dtype=lib.bool), 2),
    "max_pool1d bool": lambda lib: lib.nn.functional.max_pool1d(
        lib.ones(1, 2, 4, dtype=lib.bool), 2),
    "max_pool2d int": lambda lib: lib.nn.functional.max_pool2d(
        lib.arange(16).reshape(1, 1, 4, 4), 2),
    "multilabel_margin_loss int": lambda lib: lib.nn.functional.multilabel_margin_loss(
        lib.ones(2, 3, dtype=lib.int64), lib.ones(2, 3, dtype=lib.int64)),
    "conv_transpose2d padding -1": lambda lib: lib.nn.functional.conv_transpose2d(
        lib.ones(1, 2, 4, 4), lib.ones(2, 3, 3, 3), padding=-1),
    "conv_transpose2d output_padding -1": lambda lib: lib.nn.functional.conv_transpose2d(
        lib.ones(1, 2, 4, 4), lib.ones(2, 3, 3, 3), output_padding=-1),
    "conv1d weight without channels": lambda lib: lib.nn.functional.conv1d(
        lib.ones(1, 2, 5), lib.ones(0, 2, 3)),
    "searchsorted of a str": lambda lib: lib.searchsorted(lib.arange(4.0), "abc", side="right"),
    "searchsorted of a bool": lambda lib: lib.searchsorted(lib.arange(4.0), True),
    "bucketize with list boundaries": lambda lib: lib.bucketize(lib.ones(3), [1.0, 2.0]),
    "dot with a list of floats": lambda lib: lib.dot(lib.ones(2), [1.0, 2.0]),
    "masked_select with a list mask": lambda lib: lib.ones(2).masked_select([1.0, 2.0]),
    "max_unpool2d float output_size": lambda lib: lib.nn.functional.max_unpool2d(
        *lib.nn.functional.max_pool2d(lib.arange(16.0).reshape(1, 1, 4, 4), 2,
                                      return_indices=True), 2, output_size=(4.0, 4)),
    "max_unpool2d float kernel_size": lambda lib: lib.nn.functional.max_unpool2d(
        *lib.nn.functional.max_pool2d(lib.arange(16.0).reshape(1, 1, 4, 4), 2,
                                      return_indices=True), 2.0),
    "max_unpool2d output_size": lambda lib: lib.nn.functional.max_unpool2d(
        *lib.nn.functional.max_pool2d(lib.arange(16.0).reshape(1, 1, 4, 4), 2,
                                      return_indices=True), 2, output_size=(5, 5)),
    # fill_ has no OpDef: its Scalar's uint64 range is declared on the function (2**63 into
    # int64 is the op's own RuntimeError, past uint64 the parser's OverflowError)
    "fill_ int64 2**63": lambda lib: lib.zeros(2, dtype=lib.int64).fill_(2 ** 63),
    "fill_ uint8 2**64": lambda lib: lib.zeros(2, dtype=lib.uint8).fill_(2 ** 64),
    "fill_ int64 -2**63-1": lambda lib: lib.zeros(2, dtype=lib.int64).fill_(-2 ** 63 - 1),
    # past uint64 the parser refuses a Scalar for every dtype, floats included
    "fill_ float32 2**64": lambda lib: lib.zeros(2).fill_(2 ** 64),
    "fill_ float64 -2**63-1": lambda lib: lib.zeros(2, dtype=lib.float64).fill_(-2 ** 63 - 1),
    "fill_ float32 2**64-1": lambda lib: lib.zeros(2).fill_(2 ** 64 - 1),
    "fill_ uint8 -1 wraps": lambda lib: lib.zeros(2, dtype=lib.uint8).fill_(-1),
    # torch.fill takes fill_'s Scalar checks (it raised NumPy's ValueError)
    "fill int64 2**63": lambda lib: lib.fill(lib.zeros(2, dtype=lib.int64), 2 ** 63),
    "fill float32 2**64": lambda lib: lib.fill(lib.zeros(2), 2 ** 64),
    "fill int8 300": lambda lib: lib.fill(lib.zeros(2, dtype=lib.int8), 300),
    "fill uint8 -1 wraps": lambda lib: lib.fill(lib.zeros(2, dtype=lib.uint8), -1),
    # a complex Scalar's finite components must fit the component type (c10's check)
    "fill_ complex64 1e300": lambda lib: lib.zeros(2, dtype=lib.complex64).fill_(1e300),
    "fill_ complex64 1j*1e300": lambda lib: lib.zeros(2, dtype=lib.complex64).fill_(1e300j),
    "fill_ complex64 inf+1j": lambda lib: lib.zeros(2, dtype=lib.complex64).fill_(
        complex(math.inf, 1)),
    "fill_ complex128 1e300": lambda lib: lib.zeros(2, dtype=lib.complex128).fill_(1e300),
    "full complex64 -1e39": lambda lib: lib.full((2,), -1e39, dtype=lib.complex64),
    "addcmul complex64 value=1e300": lambda lib: lib.addcmul(
        lib.ones(2, dtype=lib.complex64), lib.ones(2, dtype=lib.complex64),
        lib.ones(2, dtype=lib.complex64), value=1e300),
}
for _name in ("elu", "selu", "celu", "silu", "softplus", "mish", "hardswish", "hardsigmoid",
              "logsigmoid", "leaky_relu", "hardshrink", "softshrink", "glu"):
    for _dt in ("int64", "bool"):
        CASES[f"{_name} {_dt}"] = (lambda lib, n=_name, d=_dt: getattr(lib.nn.functional, n)(
            lib.ones(2, 2, dtype=getattr(lib, d))))


def _outcome(fn, lib):
    try:
        return "ok", fn(lib)
    except Exception as e:   # noqa: BLE001 - the class is what is compared
        return "raise", type(e)


def _plain(v):
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape),
                np.asarray(v.detach().numpy()).tolist())
    if isinstance(v, (torch.dtype, ember.dtype)):
        return ("dtype", str(v).split(".")[-1])
    if isinstance(v, (tuple, list)) and not isinstance(v, (torch.Size, ember.Size)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, (torch.Size, ember.Size)):
        return ("size", tuple(v))
    return v


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_answer_as_torch(name):
    tk, tv = _outcome(CASES[name], torch)
    ek, ev = _outcome(CASES[name], ember)
    assert ek == tk, f"{name}: torch {tk} {tv}, ember {ek} {ev}"
    if tk == "raise":
        assert issubclass(ev, tv) or (tv is NotImplementedError and ev is NotImplementedError), \
            f"{name}: torch raises {tv.__name__}, ember {ev.__name__}"
    else:
        a, b = _plain(ev), _plain(tv)
        assert str(a) == str(b), f"{name}: ember {a} != torch {b}"


def test_activation_messages_name_torchs_kernel():
    with pytest.raises(NotImplementedError, match="\"elu_cpu\" not implemented for 'Long'"):
        ember.nn.functional.elu(ember.ones(2, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="\"log_sigmoid_cpu\" not implemented for 'Bool'"):
        ember.nn.functional.logsigmoid(ember.ones(2, dtype=ember.bool))


def test_gradient_through_ints_then_tensor_index():
    a = np.arange(24.0).reshape(2, 3, 4)
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(a, requires_grad=True)
        y = x[1, :, lib.tensor([2, 0, 2])]
        (y * lib.arange(9.0, dtype=lib.float64).reshape(3, 3)).sum().backward()
        grads.append(x.grad.detach().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
