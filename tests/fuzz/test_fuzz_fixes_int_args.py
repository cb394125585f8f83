"""Regression tests of bad input the differential fuzzer found silently accepted (issue 19):
an int argument given as a bool, float or None (pool and conv sizes, fft's n, stft's hop,
as_strided's offset, split sizes, repeats, eye's m, std's overloads), shape and dtype checks
that were missing (lu_solve, householder_product, ormqr, histogram's bins, range's step
sign), int64 avg_pool's integer mean and mvlgamma at -inf. Each call runs on torch and on
ember: both raise the same exception class (with a message both contain, where given), or
both return the same values, dtype and shape."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF
import torch.nn.functional as TF
from test_fuzz_fixes import _run, check_raises_as_torch  # (tests/fuzz is on sys.path)


def _x(L, *shape):
    shape = shape or (2, 3)
    return L.arange(float(np.prod(shape))).reshape(*shape)


def _c(L):
    return L.tensor([[1 + 2j, 3 - 1j, 0.5j], [2, 1j, -1]], dtype=L.complex64)


def _lu(L):
    return L.linalg.lu_factor(_x(L, 3, 3).double() + 5 * L.eye(3, dtype=L.float64))


BAD = [
    ("as_strided offset bool", lambda L, F: L.as_strided(_x(L), (2,), (1,), True),
     "argument 'storage_offset' (position 4) must be int, not bool"),
    ("as_strided_scatter offset float",
     lambda L, F: L.as_strided_scatter(_x(L), L.zeros(2), (2,), (1,), 1.0),
     "argument 'storage_offset' (position 5) must be int, not float"),
    ("avg_pool3d kernel_size float", lambda L, F: F.avg_pool3d(_x(L, 1, 1, 4, 4, 4), 2.0),
     "avg_pool3d(): argument 'kernel_size' (position 2) must be tuple of ints, not float"),
    ("avg_pool3d stride float", lambda L, F: F.avg_pool3d(_x(L, 1, 1, 4, 4, 4), 2, 1.0),
     "argument 'stride' (position 3) must be tuple of ints, not float"),
    ("avg_pool2d padding float", lambda L, F: F.avg_pool2d(_x(L, 1, 1, 4, 4), 2, 1, 1.0),
     "argument 'padding' (position 4) must be tuple of ints, not float"),
    ("max_pool2d kernel_size bool", lambda L, F: F.max_pool2d(_x(L, 1, 1, 4, 4), True),
     "must be tuple of ints, not bool"),
    ("max_pool2d kernel_size float element",
     lambda L, F: F.max_pool2d(_x(L, 1, 1, 4, 4), [2.0, 2]),
     "must be tuple of ints, but found element of type float"),
    ("conv2d stride float",
     lambda L, F: F.conv2d(_x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), None, 1.0),
     "conv2d() received an invalid combination of arguments"),
    ("conv2d padding float element",
     lambda L, F: F.conv2d(_x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), None, 1, (1.0, 1)),
     "conv2d() received an invalid combination of arguments"),
    ("conv1d dilation float",
     lambda L, F: F.conv1d(_x(L, 1, 1, 4), _x(L, 1, 1, 2), None, 1, 0, 1.0),
     "conv1d() received an invalid combination of arguments"),
    ("conv2d groups float",
     lambda L, F: F.conv2d(_x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), None, 1, 0, 1, 1.0),
     "conv2d() received an invalid combination of arguments"),
    ("conv_transpose2d groups float",
     lambda L, F: F.conv_transpose2d(_x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), None, 1, 0, 0, 1.0),
     "argument 'groups' (position 7) must be int, not float"),
    ("conv_transpose2d stride float",
     lambda L, F: F.conv_transpose2d(_x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), None, 2.0),
     "argument 'stride' (position 4) must be tuple of ints, not float"),
    ("fft.rfft n bool", lambda L, F: L.fft.rfft(_x(L, 4), True),
     "fft_rfft(): argument 'n' (position 2) must be int, not bool"),
    ("fft.fft n float", lambda L, F: L.fft.fft(_x(L, 4), 4.0),
     "fft_fft(): argument 'n' (position 2) must be int, not float"),
    ("fft.ihfft n bool", lambda L, F: L.fft.ihfft(_x(L, 4), True),
     "fft_ihfft(): argument 'n' (position 2) must be int, not bool"),
    ("fft.irfft n bool", lambda L, F: L.fft.irfft(_x(L, 4), True),
     "fft_irfft(): argument 'n' (position 2) must be int, not bool"),
    ("prod(x, None)", lambda L, F: L.prod(_x(L), None),
     "prod() received an invalid combination of arguments"),
    ("x.prod(dim=None)", lambda L, F: _x(L).prod(dim=None), None),
    ("prod(x, True)", lambda L, F: L.prod(_x(L), True), None),
    ("repeat_interleave float repeats", lambda L, F: L.repeat_interleave(_x(L), 2.0),
     "repeat_interleave() received an invalid combination of arguments"),
    ("repeat_interleave bool repeats", lambda L, F: L.repeat_interleave(_x(L), True),
     "repeat_interleave() received an invalid combination of arguments"),
    ("std(x, True, keepdim=True)", lambda L, F: L.std(_x(L), True, keepdim=True),
     "std() received an invalid combination of arguments"),
    ("std(x, True, True)", lambda L, F: L.std(_x(L), True, True),
     "std() received an invalid combination of arguments"),
    ("var(x, True, correction=0)", lambda L, F: L.var(_x(L), True, correction=0), None),
    ("istft hop_length bool",
     lambda L, F: L.istft(L.stft(_x(L, 16), 4, window=L.ones(4), return_complex=True), 4,
                          True, window=L.ones(4)),
     "istft(): argument 'hop_length' (position 3) must be int, not bool"),
    ("stft win_length float",
     lambda L, F: L.stft(_x(L, 16), 4, 1, 4.0, window=L.ones(4), return_complex=True), None),
    ("split bool", lambda L, F: L.split(_x(L), True, 0),
     "split() received an invalid combination of arguments"),
    ("split float", lambda L, F: _x(L).split(2.0),
     "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not float"),
    ("split bool element", lambda L, F: _x(L, 4, 3).split([True, 3]),
     "must be tuple of ints, but found element of type bool at pos 0"),
    ("eye(n, None)", lambda L, F: L.eye(2, None),
     "eye() received an invalid combination of arguments"),
    ("eye(float)", lambda L, F: L.eye(2.0), "eye(): argument 'n' (position 1) must be int"),
    ("eye(n, float)", lambda L, F: L.eye(2, 3.0),
     "eye() received an invalid combination of arguments"),
    ("adaptive_avg_pool3d None", lambda L, F: F.adaptive_avg_pool3d(_x(L, 1, 1, 2, 2, 2), None),
     None),        # (torch: len() of None, from its Python code)
    ("adaptive_avg_pool1d float", lambda L, F: F.adaptive_avg_pool1d(_x(L, 1, 1, 4), 2.0),
     "adaptive_avg_pool1d(): argument 'output_size' (position 2) must be tuple of ints"),
    ("adaptive_max_pool2d bool", lambda L, F: F.adaptive_max_pool2d(_x(L, 1, 1, 4, 4), True),
     "adaptive_max_pool2d(): argument 'output_size' (position 2) must be tuple of ints"),
    ("adaptive_avg_pool1d [None]", lambda L, F: F.adaptive_avg_pool1d(_x(L, 1, 1, 4), [None]),
     "must be tuple of ints"),
    ("histogram bins -1", lambda L, F: L.histogram(_x(L), -1),
     "torch.histogram(): bins must be > 0, but got -1 for dimension 0"),
    ("histogram bins 0", lambda L, F: L.histogram(_x(L), 0),
     "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
    ("isin str", lambda L, F: L.isin(_x(L), "ab"),
     "isin() received an invalid combination of arguments"),
    ("isin list", lambda L, F: L.isin(_x(L), [1.0, 2.0]),
     "isin() received an invalid combination of arguments"),
    ("isin None", lambda L, F: L.isin(None, _x(L)),
     "isin() received an invalid combination of arguments"),
    ("lu_solve B dtype", lambda L, F: L.linalg.lu_solve(*_lu(L), L.ones(3, 2, dtype=L.int64)),
     "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type Double "
     "and B of type Long instead"),
    ("lu_solve pivots dtype",
     lambda L, F: L.linalg.lu_solve(_lu(L)[0], _lu(L)[1].long(), L.ones(3, 2, dtype=L.float64)),
     "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32"),
    ("lu_solve pivots batch shape",
     lambda L, F: L.linalg.lu_solve(_lu(L)[0], _lu(L)[1].reshape(1, 3),
                                    L.ones(3, 2, dtype=L.float64)),
     "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same"),
    ("lu_solve pivots count",
     lambda L, F: L.linalg.lu_solve(_lu(L)[0], _lu(L)[1][:2], L.ones(3, 2, dtype=L.float64)),
     "linalg.lu_solve: Number of pivots per batch should be same as the dimension"),
    ("householder_product tau dims", lambda L, F: L.linalg.householder_product(
        _x(L, 3, 3), L.ones(3, 3)),
     "householder_product: Expected tau to have one dimension less than input"),
    ("householder_product tau batch", lambda L, F: L.linalg.householder_product(
        _x(L, 2, 3, 3), L.ones(1, 3)),
     "householder_product: Expected batch dimensions of tau to be equal to input.shape[:-2]"),
    ("orgqr tau dims", lambda L, F: L.orgqr(_x(L, 3, 3), L.ones(3, 3)),
     "Expected tau to have one dimension less than input"),
    ("ormqr other dims", lambda L, F: L.ormqr(_x(L, 3, 3), L.ones(3), L.ones(2, 3, 3)),
     "torch.ormqr: Expected other to have the same number of dimensions as input"),
    ("ormqr other batch", lambda L, F: L.ormqr(_x(L, 2, 3, 3), L.ones(2, 3), L.ones(1, 3, 3)),
     "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2]"),
    ("range step sign", lambda L, F: L.range(0, 5, -1),
     "upper bound and lower bound inconsistent with step sign"),
    ("avg_pool2d int32", lambda L, F: F.avg_pool2d(_x(L, 1, 1, 4, 4).int(), 2),
     "\"avg_pool2d\" not implemented for 'Int'"),
    ("avg_pool1d bool", lambda L, F: F.avg_pool1d(_x(L, 1, 1, 4).bool(), 2),
     "\"avg_pool2d\" not implemented for 'Bool'"),
    ("avg_pool3d uint8", lambda L, F: F.avg_pool3d(_x(L, 1, 1, 2, 2, 2).to(L.uint8), 2),
     "\"avg_pool3d_out_frame\" not implemented for 'Byte'"),
    # found by tests/opinfo/test_generated_dtypes.py (dtype_known.py's "accepted" rows)
    ("nansum complex", lambda L, F: L.nansum(_c(L)),
     "nansum on CPU does not support complex inputs"),
    ("nanmean complex", lambda L, F: L.nanmean(_c(L), 0),
     "nansum on CPU does not support complex inputs"),
    ("polygamma(0, complex)", lambda L, F: L.polygamma(0, _c(L)),
     "\"digamma\" not implemented for 'ComplexFloat'"),
    ("soft_margin_loss int input", lambda L, F: F.soft_margin_loss(
        L.tensor([1, 2]), L.tensor([1.0, -1.0]), reduction="none"),
     "result type Float can't be cast to the desired output type Long"),
    ("hinge_embedding_loss int mean", lambda L, F: F.hinge_embedding_loss(
        L.tensor([1, 2]), L.tensor([1, -1])), "mean(): could not infer output dtype"),
    ("vecdot int", lambda L, F: L.linalg.vecdot(L.tensor([1, 2]), L.tensor([1, 2])),
     "linalg.vecdot: Expected a floating point or complex tensor as input. Got Long"),
    ("vecdot bool and float", lambda L, F: L.linalg.vecdot(L.tensor([True]), L.tensor([1.0])),
     "linalg.vecdot: Expected a floating point or complex tensor as input. Got Bool"),
    ("unravel_index complex", lambda L, F: L.unravel_index(_c(L), (2, 3)),
     "expected 'indices' to be integer dtype"),
    ("bucketize complex", lambda L, F: L.bucketize(_c(L), _c(L)[0]),
     "\"searchsorted_out_cpu\" not implemented for 'ComplexFloat'"),
    # found at a fresh seed (20261203)
    ("linspace(None, 1, 3)", lambda L, F: L.linspace(None, 1, 3),
     "linspace() received an invalid combination of arguments"),
    ("logspace(0, 'a', 3)", lambda L, F: L.logspace(0, "a", 3),
     "logspace() received an invalid combination of arguments"),
    ("narrow float start", lambda L, F: _x(L, 3, 4).narrow(1, 1.0, 2),
     "narrow() received an invalid combination of arguments"),
    ("narrow float length", lambda L, F: _x(L, 3, 4).narrow(1, 1, 2.0),
     "narrow() received an invalid combination of arguments"),
    ("narrow float tensor start", lambda L, F: _x(L, 3, 4).narrow(1, L.tensor(1.0), 2),
     "start must be an 0-dim integral Tensor."),
    ("pad reflect bool", lambda L, F: F.pad(_x(L, 1, 2, 3).bool(), (1, 1), mode="reflect"),
     "\"reflection_pad1d\" not implemented for 'Bool'"),
    ("pad replicate bool 2-d", lambda L, F: F.pad(_x(L, 1, 2, 3, 3).bool(), (1, 1, 1, 1),
                                                  mode="replicate"),
     "\"replication_pad2d\" not implemented for 'Bool'"),
    ("split negative", lambda L, F: _x(L).split(-1),
     "split expects split_size be non-negative, but got split_size=-1"),
    ("split negative of empty", lambda L, F: L.ones(0).split(-1),
     "split expects split_size be non-negative, but got split_size=-1"),
    ("index_fill uint8 overflow", lambda L, F: L.ones(3, dtype=L.uint8).index_fill(
        0, L.tensor([0]), 256), "value cannot be converted to type uint8_t without overflow"),
    ("index_fill uint8 negative float", lambda L, F: L.ones(3, dtype=L.uint8).index_fill(
        0, L.tensor([0]), -1.5), "value cannot be converted to type uint8_t without overflow"),
    ("batch_norm running_mean size", lambda L, F: F.batch_norm(
        _x(L), L.zeros(4), L.ones(4)), "running_mean should contain 3 elements not 4"),
    ("batch_norm running_var size", lambda L, F: F.batch_norm(
        _x(L), L.zeros(3), L.ones(4)), "running_var should contain 3 elements not 4"),
    ("batch_norm weight size, training", lambda L, F: F.batch_norm(
        _x(L), None, None, L.ones(4), training=True), "weight should contain 3 elements not 4"),
    ("batch_norm bias size", lambda L, F: F.batch_norm(
        _x(L, 2, 3, 5), L.zeros(3), L.ones(3), L.ones(3), L.ones(2)),
     "bias should contain 3 elements not 2"),
    ("BatchNorm1d channels", lambda L, F: L.nn.BatchNorm1d(4)(_x(L)),
     "running_mean should contain 3 elements not 4"),
    ("bmm bool with double", lambda L, F: L.bmm(L.ones(2, 2, 2, dtype=L.bool),
                                                 L.ones(2, 2, 2, dtype=L.float64)),
     "\"bmm\" not implemented for 'Bool'"),
    ("repeat_interleave(x, None)", lambda L, F: L.repeat_interleave(L.tensor([1, 2]), None),
     "repeat_interleave() received an invalid combination of arguments"),
    ("x.repeat_interleave(None)", lambda L, F: L.tensor([1, 2]).repeat_interleave(None),
     "repeat_interleave() received an invalid combination of arguments"),
    ("searchsorted bool promoted", lambda L, F: L.searchsorted(L.tensor([False, True]), True),
     "\"searchsorted_out_cpu\" not implemented for 'Bool'"),
]


@pytest.mark.filterwarnings("ignore::UserWarning")     # (torch.range's deprecation)
@pytest.mark.parametrize("name,call,message", BAD, ids=[c[0] for c in BAD])
def test_bad_int_and_shape_arguments_raise_as_torch(name, call, message):
    check_raises_as_torch(name, call, message)


def _i(L, *shape):
    return L.tensor([-7, 2, -9, 4, 5, -1, 3, -2, 8, -5, 6, 1]).reshape(*shape)


GOOD = [   # valid calls next to the refused ones: same values, dtype and shape as torch
    ("max_pool2d numpy int sizes", lambda L, F: F.max_pool2d(
        _x(L, 1, 1, 4, 4), (2, np.int32(2)), np.int64(1))),
    ("avg_pool2d bool in a size list", lambda L, F: F.avg_pool2d(_x(L, 1, 1, 4, 4), [2, True])),
    ("conv2d 0-d tensor dilation", lambda L, F: F.conv2d(
        _x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), dilation=L.tensor(1))),
    ("conv2d numpy stride", lambda L, F: F.conv2d(
        _x(L, 1, 1, 4, 4), _x(L, 1, 1, 2, 2), stride=np.int64(2))),
    ("conv2d padding str", lambda L, F: F.conv2d(
        _x(L, 1, 1, 4, 4), _x(L, 1, 1, 3, 3), padding="same")),
    ("fft n int", lambda L, F: L.fft.rfft(_x(L, 4), 6)),
    ("prod dim", lambda L, F: L.prod(_x(L) + 1, 1)),
    ("prod all", lambda L, F: (_x(L) + 1).prod()),
    ("std(x, True)", lambda L, F: L.std(_x(L), True)),
    ("var(x, False)", lambda L, F: _x(L).var(False)),
    ("repeat_interleave int", lambda L, F: L.repeat_interleave(_x(L), 2, dim=1)),
    ("split 0-d tensor", lambda L, F: L.stack(L.split(_x(L, 4, 3), L.tensor(2)))),
    ("split sizes", lambda L, F: L.cat(_x(L, 4, 3).split((1, 3)))),
    ("eye(n)", lambda L, F: L.eye(3)),
    ("eye(n, m)", lambda L, F: L.eye(2, 3)),
    ("eye(0-d tensor)", lambda L, F: L.eye(L.tensor(2))),
    ("adaptive_avg_pool2d None element", lambda L, F: F.adaptive_avg_pool2d(
        _x(L, 1, 1, 4, 4), (None, 2))),
    ("adaptive_avg_pool1d 0-d tensor", lambda L, F: F.adaptive_avg_pool1d(
        _x(L, 1, 1, 4), L.tensor(2))),
    ("histogram bins int", lambda L, F: L.histogram(_x(L), 3)[0]),
    ("isin number", lambda L, F: L.isin(_x(L), 2.0)),
    ("lu_solve", lambda L, F: L.linalg.lu_solve(*_lu(L), L.ones(3, 2, dtype=L.float64))),
    ("ormqr batched", lambda L, F: L.ormqr(_x(L, 2, 3, 3), L.ones(2, 3), L.ones(2, 3, 3))),
    ("range", lambda L, F: L.range(5, 0, -1)),
    ("avg_pool1d int64 mean truncates", lambda L, F: F.avg_pool1d(_i(L, 1, 1, 12), 2, 1)),
    ("avg_pool1d int64 padded", lambda L, F: F.avg_pool1d(_i(L, 1, 1, 12), 2, 1, padding=1)),
    ("avg_pool1d int64 padding uncounted", lambda L, F: F.avg_pool1d(
        _i(L, 1, 1, 12), 2, 1, padding=1, count_include_pad=False)),
    ("avg_pool2d int64 divisor_override", lambda L, F: F.avg_pool2d(
        _i(L, 1, 1, 3, 4), 2, 1, divisor_override=3)),
    ("avg_pool3d int64", lambda L, F: F.avg_pool3d(_i(L, 1, 1, 2, 2, 3), 2, 1)),
    ("mvlgamma at -inf", lambda L, F: L.mvlgamma(
        L.tensor([-float("inf"), float("inf"), 2.5], dtype=L.float64), 3)),
    ("narrow 0-d tensor start", lambda L, F: _x(L, 3, 4).narrow(1, L.tensor(1), 2)),
    ("pad circular bool", lambda L, F: F.pad(_x(L, 1, 2, 3).bool(), (1, 1), mode="circular")),
    ("linspace tensor bounds", lambda L, F: L.linspace(L.tensor(0.0), L.tensor(1.0), 5)),
    ("linspace numpy bounds", lambda L, F: L.linspace(np.float64(0.0), np.int64(2), 5)),
    ("index_fill uint8 wraps a negative int", lambda L, F: L.ones(3, dtype=L.uint8).index_fill(
        0, L.tensor([0, 2]), -255)),
    ("index_fill int8 truncates a float", lambda L, F: L.ones(3, dtype=L.int8).index_fill(
        0, L.tensor([1]), -3.7)),
    ("repeat_interleave counts form", lambda L, F: L.repeat_interleave(L.tensor([1, 2, 0]))),
    ("cov complex", lambda L, F: L.cov(_c(L))),
    ("cov complex weighted", lambda L, F: L.cov(_c(L), fweights=L.tensor([1, 2, 1]),
                                               aweights=L.tensor([0.5, 1.0, 2.0]))),
    ("corrcoef complex", lambda L, F: L.corrcoef(_c(L))),
    ("logsumexp complex", lambda L, F: L.logsumexp(_c(L), 1)),
    ("vander complex", lambda L, F: L.vander(_c(L)[0], 3)),
    ("vecdot complex conjugates x", lambda L, F: L.linalg.vecdot(_c(L), _c(L).flip(1))),
    ("hinge_embedding_loss int none", lambda L, F: F.hinge_embedding_loss(
        L.tensor([1, 2, 0, -3]), L.tensor([1, -1, -1, -1]), -0.5, reduction="none")),
    ("hinge_embedding_loss int sum", lambda L, F: F.hinge_embedding_loss(
        L.tensor([1, 2, 0, -3]), L.tensor([1, -1, -1, -1]), 2.7, reduction="sum")),
    ("searchsorted float boundaries, bool values", lambda L, F: L.searchsorted(
        L.tensor([0.0, 1.0, 2.0]), L.tensor([True, False]))),
    ("searchsorted int boundaries, float value", lambda L, F: L.searchsorted(
        L.tensor([0, 1, 2]), 1.5)),
]


def test_logsumexp_of_complex_input_has_torchs_gradient():
    grads = []
    for L in (torch, ember):
        x = _c(L).to(L.complex128).requires_grad_()
        r = L.logsumexp(x, 1)
        (r.real.sum() + 2 * r.imag.sum()).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,call", GOOD, ids=[c[0] for c in GOOD])
def test_valid_calls_beside_them_agree_with_torch(name, call):
    (tk, t), (ek, e) = _run(call, torch, TF), _run(call, ember, EF)
    assert tk == "ok" and ek == "ok", (t, e)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
