"""Regression tests of the divergences the differential fuzzer found and that were fixed
(issue 19): each call runs on torch and on ember; both must raise the same exception class
(with torch's message where ember copies it), or both return the same result."""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF
import torch.nn.functional as TF


def _x(lib):
    return lib.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])


# (name, call(lib, F) -> result, message torch and ember share or None)
CASES = [
    ("max(x, None)", lambda L, F: L.max(_x(L), None), "max() received an invalid combination"),
    ("x.max(dim=None)", lambda L, F: _x(L).max(dim=None), None),
    ("min(x, None)", lambda L, F: L.min(_x(L), None), "min() received an invalid combination"),
    ("median(x, None)", lambda L, F: L.median(_x(L), None),
     "median(): argument 'dim' (position 2) must be int, not NoneType"),
    ("nanmedian(x, None)", lambda L, F: L.nanmedian(_x(L), None),
     "nanmedian(): argument 'dim' (position 2) must be int, not NoneType"),
    ("scatter list src", lambda L, F: L.scatter(_x(L), 1, L.tensor([[0], [1]]), [1.0, 2.0],
                                                reduce="add"),
     "scatter()"),    # (ember's seam names the argument; torch lists the overloads)
    ("sum_to_size float", lambda L, F: _x(L).sum_to_size(2.0, 3), None),
    ("sum_to_size float last", lambda L, F: _x(L).sum_to_size(2, 3.0), None),
    ("column_stack str", lambda L, F: L.column_stack(["abc", _x(L)]),
     "expected Tensor as element 0 in argument 0, but got str"),
    ("hstack str", lambda L, F: L.hstack([_x(L), "abc"]),
     "expected Tensor as element 1 in argument 0, but got str"),
    ("dstack str", lambda L, F: L.dstack((_x(L), "abc")),
     "expected Tensor as element 1 in argument 0, but got str"),
    ("vstack a str", lambda L, F: L.vstack("abc"),
     "vstack(): argument 'tensors' (position 1) must be tuple of Tensors, not str"),
    ("cholesky int64", lambda L, F: L.cholesky(L.eye(3, dtype=L.int64)),
     "\"cholesky_cpu\" not implemented for 'Long'"),
    ("cholesky bool", lambda L, F: L.cholesky(L.eye(3, dtype=L.bool)),
     "\"cholesky_cpu\" not implemented for 'Bool'"),
    ("conv1d list weight", lambda L, F: F.conv1d(L.ones(1, 1, 4), [1.0, 2.0]),
     "conv1d() received an invalid combination of arguments - got (Tensor, list"),
    ("conv2d list input", lambda L, F: F.conv2d([1.0, 2.0], L.ones(1, 1, 2, 2)),
     "conv2d() received an invalid combination of arguments - got (list, Tensor"),
    ("conv3d str bias", lambda L, F: F.conv3d(L.ones(1, 1, 2, 2, 2), L.ones(1, 1, 1, 1, 1),
                                              "abc"),
     "conv3d() received an invalid combination of arguments - got (Tensor, Tensor, str"),
]


def _eye(L):
    return L.eye(3, dtype=L.float64)


def _m(L):
    return L.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], dtype=L.float64)


# a tensor argument given a str or a list: torch's "argument 'name' (position k) must be
# Tensor, not T" (ember.dispatch_args.tensor_args), where ember's internals said AttributeError
MUST_BE_TENSOR = [
    ("layer_norm str", lambda L, F: F.layer_norm("abc", (2,)),
     "layer_norm(): argument 'input' (position 1) must be Tensor, not str"),
    ("layer_norm list", lambda L, F: L.layer_norm([1.0, 2.0], (2,)),
     "layer_norm(): argument 'input' (position 1) must be Tensor, not list"),
    ("log_softmax list", lambda L, F: L.log_softmax([1.0, 2.0], -1),
     "log_softmax(): argument 'input' (position 1) must be Tensor, not list"),
    ("F.log_softmax list", lambda L, F: F.log_softmax([1.0, 2.0], -1),
     "'list' object has no attribute 'log_softmax'"),    # (torch's F: input.log_softmax)
    ("embedding list", lambda L, F: F.embedding([1, 0], L.eye(3)),
     "embedding(): argument 'indices' (position 2) must be Tensor, not list"),
    ("cross_entropy str", lambda L, F: F.cross_entropy(L.ones(2, 3), "abc"),
     "cross_entropy_loss(): argument 'target' (position 2) must be Tensor, not str"),
    ("poisson_nll_loss list", lambda L, F: F.poisson_nll_loss([1.0, 2.0], L.ones(2)),
     "poisson_nll_loss(): argument 'input' (position 1) must be Tensor, not list"),
    ("rms_norm str weight", lambda L, F: F.rms_norm(L.ones(2, 3), (3,), "abc"),
     "rms_norm(): argument 'weight' (position 3) must be Tensor, not str"),
    ("linalg.svd list", lambda L, F: L.linalg.svd([1.0, 2.0]),
     "linalg_svd(): argument 'A' (position 1) must be Tensor, not list"),
    ("matrix_power str", lambda L, F: L.matrix_power("abc", 2),
     "matrix_power(): argument 'input' (position 1) must be Tensor, not str"),
    ("pinverse list", lambda L, F: L.pinverse([1.0, 2.0]),
     "pinverse(): argument 'input' (position 1) must be Tensor, not list"),
    ("cholesky_inverse list", lambda L, F: L.cholesky_inverse([1.0, 2.0]),
     "cholesky_inverse(): argument 'input' (position 1) must be Tensor, not list"),
    ("householder_product str", lambda L, F: L.linalg.householder_product("abc", L.ones(2)),
     "linalg_householder_product(): argument 'input' (position 1) must be Tensor, not str"),
    ("inv_ex list", lambda L, F: L.linalg.inv_ex([1.0, 2.0]),
     "linalg_inv_ex(): argument 'A' (position 1) must be Tensor, not list"),
    ("ldl_factor str", lambda L, F: L.linalg.ldl_factor("abc"),
     "linalg_ldl_factor(): argument 'input' (position 1) must be Tensor, not str"),
    ("ldl_factor_ex list", lambda L, F: L.linalg.ldl_factor_ex([1.0, 2.0]),
     "linalg_ldl_factor_ex(): argument 'input' (position 1) must be Tensor, not list"),
    ("lu_factor list", lambda L, F: L.linalg.lu_factor([1.0, 2.0]),
     "linalg_lu_factor(): argument 'A' (position 1) must be Tensor, not list"),
    ("lu_factor_ex str", lambda L, F: L.linalg.lu_factor_ex("abc"),
     "linalg_lu_factor_ex(): argument 'A' (position 1) must be Tensor, not str"),
    ("lu_solve str B", lambda L, F: L.linalg.lu_solve(*L.linalg.lu_factor(_m(L)), "abc"),
     "linalg_lu_solve(): argument 'B' (position 3) must be Tensor, not str"),
    ("tensorinv list", lambda L, F: L.linalg.tensorinv([1.0, 2.0]),
     "linalg_tensorinv(): argument 'input' (position 1) must be Tensor, not list"),
    ("vander list", lambda L, F: L.linalg.vander([1.0, 2.0]),
     "linalg_vander(): argument 'x' (position 1) must be Tensor, not list"),
    ("lu_unpack str", lambda L, F: L.lu_unpack("abc", L.ones(3, dtype=L.int32)),
     "lu_unpack(): argument 'LU_data' (position 1) must be Tensor, not str"),
    ("ormqr list tau", lambda L, F: L.ormqr(_eye(L), [1.0, 2.0], _eye(L)),
     "ormqr(): argument 'input2' (position 2) must be Tensor, not list"),
    ("linalg.cholesky list", lambda L, F: L.linalg.cholesky([1.0, 2.0]),
     "linalg_cholesky(): argument 'input' (position 1) must be Tensor, not list"),
]
CASES += MUST_BE_TENSOR

# an int argument given a bool, float, None or an int beyond int64 (ember.dispatch_args.int_arg)
INT_ARGS = [
    ("fftfreq float", lambda L, F: L.fft.fftfreq(3.0),
     "fft_fftfreq(): argument 'n' (position 1) must be int, not float"),
    ("fftfreq None", lambda L, F: L.fft.fftfreq(None),
     "fft_fftfreq(): argument 'n' (position 1) must be int, not NoneType"),
    ("fftfreq negative", lambda L, F: L.fft.fftfreq(-1),
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("rfftfreq bool", lambda L, F: L.fft.rfftfreq(True),
     "fft_rfftfreq(): argument 'n' (position 1) must be int, not bool"),
    ("polygamma bool", lambda L, F: L.polygamma(True, _x(L)),
     "polygamma(): argument 'n' (position 1) must be int, not bool"),
    ("polygamma float", lambda L, F: L.polygamma(1.0, _x(L)),
     "polygamma(): argument 'n' (position 1) must be int, not float"),
    ("select_scatter bool index", lambda L, F: L.select_scatter(_x(L), L.ones(3), 0, True),
     "select_scatter(): argument 'index' (position 4) must be int, not bool"),
    ("select_scatter bool dim", lambda L, F: L.select_scatter(_x(L), L.ones(3), True, 0),
     "select_scatter(): argument 'dim' (position 3) must be int, not bool"),
    ("slice_scatter bool dim", lambda L, F: L.slice_scatter(_x(L), _x(L), True),
     "slice_scatter(): argument 'dim' (position 3) must be int, not bool"),
    ("slice_scatter huge start", lambda L, F: L.slice_scatter(_x(L), _x(L), 0, 2 ** 63),
     "Overflow when unpacking long long"),
    ("slice_scatter huge end", lambda L, F: L.slice_scatter(_x(L), _x(L), 0, 0, 2 ** 63),
     "Overflow when unpacking long long"),
    ("split_with_sizes bool dim", lambda L, F: L.split_with_sizes(_x(L), [1, 1], True),
     "split_with_sizes(): argument 'dim' (position 3) must be int, not bool"),
    ("std_mean float dim of int64", lambda L, F: L.std_mean(_x(L).long(), 1.0),
     "std_mean() received an invalid combination of arguments - got (Tensor, float)"),
    ("var str dim", lambda L, F: L.var(_x(L), "x"),
     "var() received an invalid combination of arguments - got (Tensor, str)"),
    ("hamming_window huge", lambda L, F: L.hamming_window(2 ** 63),
     "Overflow when unpacking long long"),
    ("bartlett_window bool", lambda L, F: L.bartlett_window(True),
     "bartlett_window(): argument 'window_length' (position 1) must be int, not bool"),
    ("istft bool n_fft", lambda L, F: L.istft(L.ones(5, 11, dtype=L.complex128), True),
     "istft(): argument 'n_fft' (position 2) must be int, not bool"),
    ("renorm None p", lambda L, F: L.renorm(_x(L), None, 0, 1.0),
     "renorm(): argument 'p' (position 2) must be Number, not NoneType"),
    ("renorm str dim", lambda L, F: L.renorm(_x(L), 2, "x", 1.0),
     "renorm(): argument 'dim' (position 3) must be int, not str"),
    ("renorm dim 7 of int64", lambda L, F: L.renorm(_x(L).long(), 2, 7, 1.0),
     "Dimension out of range (expected to be in range of [-2, 1], but got 7)"),
    ("renorm dim -8", lambda L, F: L.renorm(_x(L), 2, -8, 1.0),
     "Dimension out of range (expected to be in range of [-2, 1], but got -8)"),
]
CASES += INT_ARGS


def _run(call, lib, F):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # (torch.cholesky's deprecation warning)
        try:
            return "ok", call(lib, F)
        except Exception as exc:  # noqa: BLE001 - the class is what is compared
            return "raise", exc


@pytest.mark.parametrize("name,call,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_as_torch(name, call, message):
    (tk, tr), (ek, er) = _run(call, torch, TF), _run(call, ember, EF)
    assert tk == "raise", f"torch accepted {name}: the case is not bad input"
    assert ek == "raise", f"ember accepted {name}, torch raised {tr!r}"
    assert type(er) is type(tr), (tr, er)
    if message is not None:
        assert message in str(tr) and message in str(er), (tr, er)


def test_the_all_elements_forms_still_work():
    """The default dim (no dim given) still reduces all elements, also under vmap."""
    for f in ("max", "min", "median", "nanmedian"):
        t, e = getattr(torch, f)(_x(torch)), getattr(ember, f)(_x(ember))
        assert float(t) == float(e), f
        t, e = getattr(_x(torch), f)(1), getattr(_x(ember), f)(1)
        assert t.values.tolist() == e.values.tolist() and t.indices.tolist() == \
            e.indices.tolist(), f
    xs = _x(ember)
    assert ember.vmap(lambda t: t.max())(xs).tolist() == [5.0, 4.0]
    assert ember.vmap(lambda t: ember.median(t))(xs).tolist() == [2.0, 3.0]


def test_index_add_of_an_empty_self_returns_it():
    """torch checks no index against an empty self: index_add returns it unchanged."""
    for dt in ("int64", "float32"):
        tdt, edt = getattr(torch, dt), getattr(ember, dt)
        t = torch.index_add(torch.zeros(0, 4, dtype=tdt), 0, torch.tensor([0, 3]),
                            torch.ones(2, 4, dtype=tdt))
        e = ember.index_add(ember.zeros(0, 4, dtype=edt), 0, ember.tensor([0, 3]),
                            ember.ones(2, 4, dtype=edt))
        assert tuple(e.shape) == tuple(t.shape) == (0, 4) and str(e.dtype) == \
            str(t.dtype).replace("torch", "ember")
    # the shape check still comes first, as in torch
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        ember.index_add(ember.zeros(0, 4), 0, ember.tensor([0]), ember.ones(1, 5))
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        torch.index_add(torch.zeros(0, 4), 0, torch.tensor([0]), torch.ones(1, 5))


def test_the_int_arguments_still_take_ints():
    for L in (torch, ember):
        assert L.fft.fftfreq(4).tolist() == [0.0, 0.25, -0.5, -0.25]
        assert L.fft.rfftfreq(4).tolist() == [0.0, 0.25, 0.5]
    t = torch.slice_scatter(_x(torch), torch.zeros(2, 2), 1, 0, None, 2)
    e = ember.slice_scatter(_x(ember), ember.zeros(2, 2), 1, 0, None, 2)
    assert t.tolist() == e.tolist()
    t = torch.select_scatter(_x(torch), torch.zeros(3), 0, -1)
    assert t.tolist() == ember.select_scatter(_x(ember), ember.zeros(3), 0, -1).tolist()
    assert [a.tolist() for a in torch.split_with_sizes(_x(torch), [1, 2], -1)] == \
        [a.tolist() for a in ember.split_with_sizes(_x(ember), [1, 2], -1)]
    assert np.allclose(torch.polygamma(1, _x(torch)[:, :1] + 1).numpy(),
                       ember.polygamma(1, _x(ember)[:, :1] + 1).numpy())


def test_scatter_with_a_number_and_sum_to_size_with_ints_still_work():
    t = torch.scatter(_x(torch), 1, torch.tensor([[0], [1]]), 2.0, reduce="add")
    e = ember.scatter(_x(ember), 1, ember.tensor([[0], [1]]), 2.0, reduce="add")
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e = ember.scatter(_x(ember), 1, ember.tensor([[0], [1]]), np.float32(2.0), reduce="add")
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert _x(ember).sum_to_size(1, 3).tolist() == _x(torch).sum_to_size(1, 3).tolist()
    assert _x(ember).sum_to_size((2, 3)).tolist() == _x(torch).sum_to_size((2, 3)).tolist()


# ---- wrong values the fuzzer found at a fresh seed (20261202) ----
def _same_result(t, e):
    """Same shape, dtype and values (NaN where NaN, and the sign of zeros)."""
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype).split(".")[-1] == \
        str(t.dtype).split(".")[-1], (e, t)
    a, b = e.detach().numpy(), t.detach().numpy()
    np.testing.assert_array_equal(a, b)
    assert (np.signbit(a) == np.signbit(b)).all(), (a, b)


@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n", [-4, -3, -2, -1, 0, 1, 2, 5])
@pytest.mark.parametrize("d", [1.0, 0.0, -0.5])
def test_fftfreq_of_small_and_negative_n(fn, n, d):
    """torch's rfftfreq has n / 2 + 1 bins with C++'s division toward zero (rfftfreq(-1) is
    [-0.]), and scales by 1 / (n * d), so n = 0 or d = 0 give NaN/inf rather than an error."""
    (tk, tr), (ek, er) = (_run(lambda L, F: getattr(L.fft, fn)(n, d), lib, None)
                          for lib in (torch, ember))
    assert tk == ek, (tr, er)
    if tk == "raise":
        assert type(er) is type(tr) and str(er) == str(tr), (tr, er)
    else:
        _same_result(tr, er)


def _nonsymmetric(L, bad_pivot=False):
    a = np.array([[4.0, 1.0, 0.5], [2.0, 3.0, 0.2], [-1.0, 0.7, 2.0]])
    if bad_pivot:
        a[1, 1] = -3.0
    return L.tensor(np.stack([a, a.T + np.eye(3)]))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("bad_pivot", [False, True])
def test_cholesky_reads_the_triangle_torch_reads(upper, bad_pivot):
    """upper=True factors the upper triangle (LAPACK's uplo='U'), upper=False the lower
    one; on failure cholesky_ex returns LAPACK's partial factor of that triangle."""
    t = torch.linalg.cholesky_ex(_nonsymmetric(torch, bad_pivot), upper=upper)
    e = ember.linalg.cholesky_ex(_nonsymmetric(ember, bad_pivot), upper=upper)
    assert e.info.tolist() == t.info.tolist()
    np.testing.assert_allclose(e.L.numpy(), t.L.numpy(), rtol=1e-12, atol=1e-12)
    if not bad_pivot:
        np.testing.assert_allclose(
            ember.linalg.cholesky(_nonsymmetric(ember), upper=upper).numpy(),
            torch.linalg.cholesky(_nonsymmetric(torch), upper=upper).numpy(), rtol=1e-12)


def test_geqrf_is_compared_as_a_factorisation():
    """geqrf of NaN/inf input holds what the LAPACK build left (torch's and SciPy's spread
    NaN, and pick a -0.0 pivot's sign, differently): the fuzzer compares its shapes and
    dtypes only there, and its values everywhere else, where they agree with torch."""
    from fuzzer import _defined_part
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]], dtype=torch.float64)
    r = torch.geqrf(x)
    assert _defined_part(r, ((x,), {}), "specials", True)[1] is False
    assert _defined_part(r, ((x,), {}), "int64", True)[1] is True
    e = ember.geqrf(ember.tensor(x.numpy()))
    np.testing.assert_allclose(e.a.numpy(), r.a.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(e.tau.numpy(), r.tau.numpy(), rtol=1e-12, atol=1e-12)
