"""Regression tests of the spurious errors and exception classes the differential fuzzer
found at seeds 0, 4242 and 20261203 (issue 19) and that were fixed: empty matrices that
torch's LAPACK ops factor whatever their dtype (lu, lu_factor, geqrf, torch.cholesky,
linalg.cond's zeros), one bool operand of mse/smooth_l1/huber loss, index_put of a
one-element value through a mask (torch's masked_fill_ path), irfft/hfft of an empty signal
with n given; and torch's order of checks (index_copy's IndexErrors, index_reduce's reduce,
index_select of an empty self, solve_triangular's shapes before its dtype, linalg.cond's
norm names, cholesky_inverse's kernel), the parser's TypeErrors (clamp_max(x, None), dist's
str p, stft's bool n_fft, torch.norm/max_pool3d reading an attribute first), and ints of
2**63: a Scalar there is a uint64 (full, new_full, fill_, arange, linalg.cond), or torch's
Python hands it on (norm's dim, max_unpool's size, tensordot's dims, stft's padding); and
the ones seeds 777 and 99991 showed (einsum of an empty pair, index_reduce's index checks,
stft's n_fft None, cross and lerp checking shapes first, histogramdd's range, cholesky_solve).
Each call runs on torch and on ember: both raise the same exception class (with a message
both contain, where given), or both return the same values, dtype and shape."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF
import torch.nn.functional as TF
from test_fuzz_fixes import _run, check_raises_as_torch  # (tests/fuzz is on sys.path)

H = 2 ** 63


def _z(L, *shape, dt="float32"):
    return L.zeros(*shape, dtype=getattr(L, dt))


def _mask(L):
    return L.tensor([True, False, True])


BAD = [
    ("index_copy source of fewer dims",
     lambda L, F: L.index_copy(_z(L, 2, 3, 4), 0, L.tensor([0, 1]), _z(L, 2, 4)),
     "index_copy_(): When source and destination are not scalars, their dimensionality must "
     "match. Source dimensionality (2), destination dimensionality (3)"),
    ("index_copy extra dim before the index dtype",
     lambda L, F: L.index_copy(_z(L, 3, 4), 1, L.tensor([0], dtype=L.int32), _z(L, 2, 3, 1)),
     "their dimensionality must match"),
    ("index_copy scalar source, two indices",
     lambda L, F: L.index_copy(_z(L, 2, 3), 0, L.tensor([0, 1]), L.tensor(1.0)),
     "index_copy_(): When source is scalar, index should have one element (got 2)"),
    ("index_copy slice shapes", lambda L, F: L.index_copy(_z(L, 2, 3, 4), 0, L.tensor([0]),
                                                          _z(L, 1, 5, 4)),
     "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
     "shape: 3 4 at dimension 0 and source slice shape: 5 4 at dimension 0."),
    ("index_copy number of indices",
     lambda L, F: L.index_copy(_z(L, 2, 3), 0, L.tensor([0]), _z(L, 2, 3)),
     "index_copy_(): Number of indices (1) should be equal to source.size(dim) (2)"),
    ("index_copy 2-D index", lambda L, F: L.index_copy(_z(L, 2, 3), 0, L.tensor([[0]]),
                                                       _z(L, 1, 3)),
     "index_copy_(): Index should have dimension 1 or 0 (got 2)"),
    ("index_reduce sum before the dim",
     lambda L, F: L.index_reduce(_z(L, 3, 2), -8, L.tensor([0, 1]), _z(L, 2, 2), "sum"),
     "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    ("index_select of an empty dim", lambda L, F: L.index_select(_z(L, 0, 4), 0,
                                                                 L.tensor([0, 1, 2])),
     "index_select(): self indexing axis dim should be positive"),
    ("index_select of an empty self, index out of range",
     lambda L, F: L.index_select(_z(L, 4, 0), 0, L.tensor([5])),
     "INDICES element is out of DATA bounds, id=5 axis_dim=4"),
    ("index_put uint8 mask, one value",
     lambda L, F: L.index_put(_z(L, 3, 2), [L.tensor([1, 0, 1], dtype=L.uint8)], L.tensor(1.)),
     "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"),
    ("index_put mask of the wrong size, one value",
     lambda L, F: L.index_put(_z(L, 3, 2), [L.tensor([True, False])], L.tensor(5.)),
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor "
     "[3, 2] at index 0"),
    ("solve_triangular int64 A, B of the wrong size",
     lambda L, F: L.linalg.solve_triangular(L.eye(3, dtype=L.int64), L.ones(2, 2),
                                            upper=False),
     "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
     "(3x3 and 2x2)"),
    ("solve_triangular int64 non-square A",
     lambda L, F: L.linalg.solve_triangular(_z(L, 0, 3, dt="int64"), _z(L, 3, 2, dt="int64"),
                                            upper=True),
     "linalg.solve_triangular: A must be batches of square matrices, but they are 0 by 3 "
     "matrices"),
    ("solve_triangular batch dims",
     lambda L, F: L.linalg.solve_triangular(L.ones(2, 3, 3, dtype=L.int64), L.ones(4, 3, 2),
                                            upper=False),
     "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("cholesky_inverse int64", lambda L, F: L.cholesky_inverse(L.eye(3, dtype=L.int64)),
     "\"cholesky_inverse_out_cpu\" not implemented for 'Long'"),
    ("cholesky_inverse non-square", lambda L, F: L.cholesky_inverse(L.ones(2, 3)),
     "cholesky_inverse: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("cholesky 1-D int64", lambda L, F: L.cholesky(L.ones(2, dtype=L.int64)),
     "cholesky: The input tensor A must have at least 2 dimensions."),
    ("cholesky non-square float16", lambda L, F: L.cholesky(L.ones(2, 3, dtype=L.float16)),
     "cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("lu_factor 1-D int64 (the dims first)", lambda L, F: L.linalg.lu_factor(
        L.ones(2, dtype=L.int64)),
     "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [2] instead"),
    ("cond fro non-square", lambda L, F: L.linalg.cond(_z(L, 0, 3), "fro"),
     "linalg.cond(ord=fro): A must be batches of square matrices, but they are 0 by 3 "
     "matrices"),
    ("cond 1 non-square", lambda L, F: L.linalg.cond(L.ones(2, 3), 1),
     "linalg.cond(ord=1): A must be batches of square matrices"),
    ("cond inf non-square", lambda L, F: L.linalg.cond(L.ones(2, 3), float("inf")),
     "linalg.cond(ord=inf): A must be batches of square matrices"),
    ("cond 3 before the shape", lambda L, F: L.linalg.cond(L.ones(2, 3), 3),
     "linalg.cond got an invalid norm type: 3"),
    ("cond 2.5", lambda L, F: L.linalg.cond(L.ones(2, 3), 2.5),
     "linalg.cond got an invalid norm type: 2.5"),
    ("cond 1-D", lambda L, F: L.linalg.cond(L.ones(3, dtype=L.int64)),
     "linalg.cond: The input tensor must have at least 2 dimensions."),
    ("cond int64 (svd's dtype check)", lambda L, F: L.linalg.cond(L.eye(3, dtype=L.int64)),
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    ("cond int64 ord 1 (inv's)", lambda L, F: L.linalg.cond(L.eye(3, dtype=L.int64), 1),
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    ("cond 2**63", lambda L, F: L.linalg.cond(L.eye(3), H),
     "linalg.cond got an invalid norm type: 9.22337e+18"),
    ("cond 2**64", lambda L, F: L.linalg.cond(L.eye(3), 2 ** 64), "int too big to convert"),
    ("clamp_max(x, None)", lambda L, F: L.clamp_max(L.ones(2), None),
     "clamp_max() received an invalid combination of arguments - got (Tensor, NoneType), but "
     "expected one of:"),
    ("clamp_min(x, None)", lambda L, F: L.clamp_min(L.ones(2), None),
     "clamp_min() received an invalid combination of arguments - got (Tensor, NoneType)"),
    ("x.clamp_max(None)", lambda L, F: L.ones(2).clamp_max(None),
     "clamp_max() received an invalid combination of arguments - got ("),
    ("x.clamp_min_(None)", lambda L, F: L.ones(2).clamp_min_(None),
     "clamp_min_() received an invalid combination of arguments - got (NoneType), but "
     "expected one of:"),
    ("dist str p", lambda L, F: L.dist(L.ones(2, 3), L.ones(3), "x"),
     "must be Number, not str"),
    ("dist p None", lambda L, F: L.dist(L.ones(2), L.ones(2), None),
     "dist(): argument 'p' (position 3) must be Number, not NoneType"),
    ("stft bool n_fft", lambda L, F: L.stft(L.ones(20, dtype=L.float64), True,
                                            return_complex=True),
     "stft() received an invalid combination of arguments - got (Tensor, bool, NoneType, "
     "NoneType, NoneType, bool, NoneType, bool, NoneType), but expected one of:"),
    ("stft n_fft 2**63", lambda L, F: L.stft(L.ones(20, dtype=L.float64), H,
                                             return_complex=True),
     "Padding size should be less than the corresponding input dimension"),
    ("norm of a str", lambda L, F: L.norm("abc", -1, keepdim=True),
     "'str' object has no attribute 'layout'"),
    ("norm of a list", lambda L, F: L.norm([1.0, 2.0]), "'list' object has no attribute 'layout'"),
    ("norm dim 2**63", lambda L, F: L.norm(L.ones(3, 4), float("inf"), H),
     "linalg_vector_norm(): argument 'dim' failed to unpack the object at pos 1 with error "
     "\"Overflow when unpacking long long"),
    ("norm nuc dim 2**63", lambda L, F: L.norm(L.ones(3, 4), "nuc", H),
     "linalg_matrix_norm(): argument 'dim' failed to unpack the object at pos 1"),
    ("max_pool3d of a list, return_indices",
     lambda L, F: F.max_pool3d([1.0, 2.0], 2, return_indices=True),
     "'list' object has no attribute 'is_cuda'"),
    ("max_unpool2d stride 2**63",
     lambda L, F: F.max_unpool2d(_z(L, 1, 1, 2, 2, dt="float64"), _z(L, 1, 1, 2, 2, dt="int64"),
                                 2, stride=H),
     "max_unpool2d(): argument 'output_size' failed to unpack the object at pos 1 with error "
     "\"Overflow when unpacking long long"),
    ("max_unpool1d stride 2**63",
     lambda L, F: F.max_unpool1d(_z(L, 1, 1, 2, dt="float64"), _z(L, 1, 1, 2, dt="int64"), 2,
                                 stride=H),
     "max_unpool2d(): argument 'output_size' failed to unpack the object at pos 1"),
    ("tensordot dims 2**63", lambda L, F: L.tensordot(L.ones(2, 3, 4), L.ones(3, 4, 2), dims=H),
     "tensordot expects dims < ndim_a or ndim_b, but got dims=9223372036854775808"),
    ("full 2**63", lambda L, F: L.full((2,), H),
     "value cannot be converted to type int64_t without overflow"),
    ("full 2**64", lambda L, F: L.full((2,), 2 ** 64), "int too big to convert"),
    ("full -2**63 - 1", lambda L, F: L.full((2,), -H - 1),
     "can't convert negative int to unsigned"),
    ("full uint8 300", lambda L, F: L.full((2,), 300, dtype=L.uint8),
     "value cannot be converted to type uint8_t without overflow"),
    ("full int64 1e30", lambda L, F: L.full((2,), 1e30, dtype=L.int64),
     "value cannot be converted to type int64_t without overflow"),
    ("full int64 nan", lambda L, F: L.full((2,), float("nan"), dtype=L.int64),
     "value cannot be converted to type int64_t without overflow"),
    ("full float16 1e6", lambda L, F: L.full((2,), 1e6, dtype=L.float16),
     "value cannot be converted to type c10::Half without overflow"),
    ("new_full int64 2**63", lambda L, F: L.ones(2, dtype=L.int64).new_full((2,), H),
     "value cannot be converted to type int64_t without overflow"),
    ("full_like int64 2**63", lambda L, F: L.full_like(L.ones(2, dtype=L.int64), H),
     "value cannot be converted to type int64_t without overflow"),
    ("fill_ int64 2**63", lambda L, F: L.ones(2, dtype=L.int64).fill_(H),
     "value cannot be converted to type int64_t without overflow"),
    ("arange(2**63)", lambda L, F: L.arange(H),
     "value cannot be converted to type int64_t without overflow"),
    ("arange(0, 10, 2**63)", lambda L, F: L.arange(0, 10, H),
     "value cannot be converted to type int64_t without overflow"),
    ("arange(2**63, 4, 0.5)", lambda L, F: L.arange(H, 4, 0.5),
     "upper bound and lower bound inconsistent with step sign"),
    ("arange(2**63, 5)", lambda L, F: L.arange(H, 5),
     "upper bound and lower bound inconsistent with step sign"),
    ("from_dlpack of a str", lambda L, F: L.from_dlpack("abc"),
     "from_dlpack received an invalid capsule"),
    ("from_dlpack of a list", lambda L, F: L.from_dlpack([1.0, 2.0]),
     "from_dlpack received an invalid capsule"),
    ("irfft of an empty signal, no n", lambda L, F: L.fft.irfft(
        _z(L, 0, 6, dt="complex128"), None, 0), "Invalid number of data points (-2) specified"),
    ("scalar_tensor int64 2**63", lambda L, F: L.scalar_tensor(H, dtype=L.int64),
     "value cannot be converted to type int64_t without overflow"),
    ("scalar_tensor uint8 300", lambda L, F: L.scalar_tensor(300, dtype=L.uint8),
     "without overflow"),
    ("norm int64 p 2**63", lambda L, F: L.norm(L.ones(3, 4, dtype=L.int64), H),
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    ("index_reduce dim None before reduce", lambda L, F: L.index_reduce(
        _z(L, 3, 2), None, L.tensor([0, 1]), _z(L, 2, 2), "sum"),
     "index_reduce(): argument 'dim' (position 2) must be int, not NoneType"),
    ("index_reduce index out of range", lambda L, F: L.index_reduce(
        L.ones(3, 2), 0, L.tensor([0, 5]), L.ones(2, 2), "prod"), "index out of range in self"),
    ("index_reduce negative index", lambda L, F: L.index_reduce(
        L.ones(3, 2), 0, L.tensor([-1]), L.ones(1, 2), "amax"), "index out of range in self"),
    ("index_reduce of an empty self", lambda L, F: L.index_reduce(
        _z(L, 0, 2, dt="float64"), 0, L.tensor([1, 2]), _z(L, 2, 2, dt="float64"), "prod"),
     "select(): index 0 out of range for tensor of size [0, 2] at dimension 0"),
    ("stft n_fft None", lambda L, F: L.stft(L.ones(20, dtype=L.float64), None),
     "unsupported operand type(s) for //: 'NoneType' and 'int'"),
    ("stft n_fft None, center=False", lambda L, F: L.stft(L.ones(20, dtype=L.float64), None,
                                                          center=False),
     "stft() received an invalid combination of arguments - got (Tensor, NoneType"),
    ("cross bool, float", lambda L, F: L.linalg.cross(L.ones(3, 3, dtype=L.bool), L.ones(3, 3)),
     "\"cross\" not implemented for 'Bool'"),
    ("cross bool, float, dims of 2", lambda L, F: L.linalg.cross(L.ones(3, 2, dtype=L.bool),
                                                                 L.ones(3, 2)),
     "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    ("lerp shapes before the int64 kernel", lambda L, F: L.lerp(
        _z(L, 0, 2, dt="int64"), L.ones(2, 2, dtype=L.int64), L.ones(2, 2, dtype=L.int64)),
     "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("histogramdd range of 4 for 3 dims", lambda L, F: L.histogramdd(
        L.ones(8, 3), 3, range=[-2.0, 2.0, -2.0, 2.0], density=True),
     "torch.histogramdd: for a 3-dimensional histogram range should have 6 elements, but got 4"),
    ("histogramdd range of 8 for 3 dims", lambda L, F: L.histogramdd(
        L.ones(8, 3), 3, range=[-2.0, 2.0] * 4), "should have 6 elements, but got 8"),
    ("cholesky_solve bool L", lambda L, F: L.cholesky_solve(
        L.ones(3, 2, dtype=L.float64), L.eye(3, dtype=L.bool), True),
     "Expected b and A to have the same dtype, but found b of type Double and A of type Bool "
     "instead."),
    ("l1_loss float, bool (torch's composition subtracts)", lambda L, F: F.l1_loss(
        L.ones(2, 3), _z(L, 2, 3, dt="bool")), "Subtraction, the `-` operator, with a bool"),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,call,message", BAD, ids=[c[0] for c in BAD])
def test_bad_input_raises_as_torch(name, call, message):
    check_raises_as_torch(name, call, message)


GOOD = [(f"{op} {shape} {dt}", call(shape, dt)) for op, call in (
    ("lu_factor", lambda sh, dt: lambda L, F: L.linalg.lu_factor(_z(L, *sh, dt=dt))),
    ("lu_factor_ex", lambda sh, dt: lambda L, F: L.linalg.lu_factor_ex(_z(L, *sh, dt=dt))),
    ("linalg.lu", lambda sh, dt: lambda L, F: L.linalg.lu(_z(L, *sh, dt=dt))),
    ("torch.lu", lambda sh, dt: lambda L, F: L.lu(_z(L, *sh, dt=dt))),
    ("torch.cholesky", lambda sh, dt: lambda L, F: L.cholesky(_z(L, *sh, dt=dt))),
    ("linalg.cond", lambda sh, dt: lambda L, F: L.linalg.cond(_z(L, *sh, dt=dt))),
    ("linalg.cond 1", lambda sh, dt: lambda L, F: L.linalg.cond(_z(L, *sh, dt=dt), 1)),
) for shape in ((0, 3), (3, 0), (2, 0, 3), (0, 2, 3)) for dt in ("float32", "int64", "bool")] + [
    ("geqrf (0, 3)", lambda L, F: L.geqrf(_z(L, 0, 3))),
    ("geqrf (2, 0, 3) float64", lambda L, F: L.geqrf(_z(L, 2, 0, 3, dt="float64"))),
    ("lu_factor (0, 3) float16", lambda L, F: L.linalg.lu_factor(_z(L, 0, 3, dt="float16"))),
    ("torch.cholesky (0,) float16", lambda L, F: L.cholesky(_z(L, 0, dt="float16"))),
    ("torch.cholesky upper (0, 3)", lambda L, F: L.cholesky(_z(L, 0, 3), upper=True)),
    ("linalg.cond 2x0x0 inf", lambda L, F: L.linalg.cond(_z(L, 2, 0, 0, dt="float64"),
                                                         float("inf"))),
    ("linalg.cond 0x0 nuc", lambda L, F: L.linalg.cond(_z(L, 0, 0), "nuc")),
    ("linalg.cond 3x3 fro", lambda L, F: L.linalg.cond(L.eye(3) * 2 + 1, "fro")),
    ("linalg.cond 3x3 -1", lambda L, F: L.linalg.cond(L.eye(3) * 2 + 1, -1)),
    ("irfft empty signal, n given", lambda L, F: L.fft.irfft(
        _z(L, 0, 6, dt="complex128"), 8, 0, "ortho")),
    ("hfft empty signal, n given", lambda L, F: L.fft.hfft(_z(L, 0, 6, dt="complex64"), 8, 0)),
    ("mse_loss float, bool", lambda L, F: F.mse_loss(L.ones(2, 3), _z(L, 3, dt="bool"),
                                                     reduction="none")),
    ("mse_loss bool, float", lambda L, F: F.mse_loss(L.ones(2, 3, dtype=L.bool), _z(L, 2, 3))),
    ("smooth_l1_loss float, bool", lambda L, F: F.smooth_l1_loss(L.ones(3, 4) * 3,
                                                                 _z(L, 3, 4, dt="bool"))),
    ("huber_loss float, bool", lambda L, F: F.huber_loss(L.ones(2, 3), _z(L, 2, 3, dt="bool"),
                                                         reduction="sum")),
    ("index_put float64 <- float32 0-d", lambda L, F: L.index_put(
        _z(L, 3, 4, dt="float64"), [_mask(L)], L.tensor(1.5))),
    ("index_put float32 <- bool 0-d", lambda L, F: L.index_put(
        _z(L, 3, 4), [_mask(L)], L.tensor(True))),
    ("index_put int64 <- float64 one element", lambda L, F: L.index_put(
        _z(L, 3, 2, dt="int64"), [_mask(L)], L.tensor([-2.7], dtype=L.float64))),
    ("index_put uint8 <- int64 -2", lambda L, F: L.index_put(
        _z(L, 3, 2, dt="uint8"), [_mask(L)], L.tensor(-2))),
    ("full uint8 -1 wraps", lambda L, F: L.full((2,), -1, dtype=L.uint8)),
    ("full float32 2**63", lambda L, F: L.full((2,), H, dtype=L.float32)),
    ("full bool 2**63", lambda L, F: L.full((2,), H, dtype=L.bool)),
    ("new_full float 2**63", lambda L, F: L.ones(2).new_full((2,), H)),
    ("arange(0, 10., 2**63)", lambda L, F: L.arange(0, 10., H)),
    ("index_copy 1-D from a scalar", lambda L, F: L.index_copy(_z(L, 3), 0, L.tensor([2]),
                                                               L.tensor(5.))),
    ("einsum of an empty pair, mixed dtypes", lambda L, F: L.einsum(
        "i,i->", _z(L, 0), _z(L, 0, dt="int64"))),
    ("einsum of an empty pair, int64 first", lambda L, F: L.einsum(
        "i,i->", _z(L, 0, dt="int64"), _z(L, 0))),
    ("einsum (2, 0) @ (0, 3) mixed", lambda L, F: L.einsum(
        "ij,jk->ik", _z(L, 2, 0), _z(L, 0, 3, dt="int64"))),
    ("scalar_tensor uint8 -1", lambda L, F: L.scalar_tensor(-1, dtype=L.uint8)),
    ("scalar_tensor 2**63 float", lambda L, F: L.scalar_tensor(H)),
    ("lerp broadcast weight", lambda L, F: L.lerp(_z(L, 2, 2), L.ones(2), L.tensor(0.3))),
    ("cholesky_solve", lambda L, F: L.cholesky_solve(L.ones(3, 2), L.eye(3) * 2)),
    ("index_copy dim 1", lambda L, F: L.index_copy(_z(L, 2, 3), 1, L.tensor([2, 0]),
                                                   L.ones(2, 2))),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,call", GOOD, ids=[c[0] for c in GOOD])
def test_valid_calls_agree_with_torch(name, call):
    (tk, t), (ek, e) = _run(call, torch, TF), _run(call, ember, EF)
    assert tk == "ok" and ek == "ok", (t, e)
    ts = t if isinstance(t, tuple) else (t,)
    es = e if isinstance(e, tuple) else (e,)
    assert len(ts) == len(es)
    for a, b in zip(ts, es):
        assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1], (a, b)
        assert tuple(b.shape) == tuple(a.shape), (a, b)
        np.testing.assert_allclose(b.numpy().astype(np.float64), a.numpy().astype(np.float64),
                                   rtol=1e-6)


def test_an_empty_cholesky_stays_differentiable():
    """torch.cholesky of an empty matrix: an empty result that requires grad, as torch's."""
    x = ember.zeros(3, 0, requires_grad=True)
    r = ember.cholesky(x)
    assert r.requires_grad and tuple(r.shape) == (3, 0)
    assert torch.cholesky(torch.zeros(3, 0, requires_grad=True)).requires_grad
