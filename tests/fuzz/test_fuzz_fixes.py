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


def check_raises_as_torch(name, call, message):
    """`call(lib, F)` raises on torch (else the row is no bad input) and on ember, the same
    exception class, and both messages contain `message` when it is given."""
    (tk, tr), (ek, er) = _run(call, torch, TF), _run(call, ember, EF)
    assert tk == "raise", f"torch accepted {name}: the case is not bad input"
    assert ek == "raise", f"ember accepted {name}, torch raised {tr!r}"
    assert type(er) is type(tr), (tr, er)
    if message is not None:
        assert message in str(tr) and message in str(er), (tr, er)


@pytest.mark.parametrize("name,call,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_as_torch(name, call, message):
    check_raises_as_torch(name, call, message)


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


# ---- one mechanism: what the op raised internally becomes torch's answer at the seam ------
# (ember.dispatch_args.internal_error, asked by dispatch.argument_error only after an op
# raised). Compared by the builtin class the fuzzer compares (torch's LinAlgError is a
# RuntimeError), with a message both share where ember copies torch's.
def _v(L):
    return L.tensor([1.0, 2.0, 3.0, 4.0])


def _sq(L, n=3, dt=None):
    return L.eye(n, dtype=dt or L.float64) * 2


SEAM = [
    # an AttributeError naming a non-tensor argument: the parser's TypeError
    ("addbmm str batch1", lambda L, F: L.addbmm(L.ones(2, 2), "abc", L.ones(1, 2, 2)), None),
    ("cdist list x1", lambda L, F: L.cdist([1.0, 2.0], L.ones(2, 2)), None),
    ("det str", lambda L, F: L.det("abc"), None),
    ("logdet str", lambda L, F: L.logdet("abc"), None),
    ("qr list", lambda L, F: L.qr([1.0, 2.0]), None),
    ("matrix_exp str", lambda L, F: L.matrix_exp("abc"), None),
    ("linalg.lu list", lambda L, F: L.linalg.lu([1.0, 2.0]), None),
    ("trapezoid list", lambda L, F: L.trapezoid([1.0, 2.0]), None),
    ("tensordot list other", lambda L, F: L.tensordot(L.ones(2, 2), [1.0, 2.0]), None),
    ("softmax str", lambda L, F: L.softmax("abc", 0),
     "softmax(): argument 'input' (position 1) must be Tensor, not str"),
    ("sdpa str key", lambda L, F: F.scaled_dot_product_attention(L.ones(2, 2), "abc",
                                                                 L.ones(2, 2)), None),
    ("nll_loss str", lambda L, F: F.nll_loss("abc", L.tensor([0, 1])), None),
    ("kl_div list", lambda L, F: F.kl_div([1.0, 2.0], L.ones(2), reduction="sum"), None),
    ("conv_transpose1d str weight", lambda L, F: F.conv_transpose1d(L.ones(1, 1, 4), "abc"),
     None),
    ("triplet_margin_loss str", lambda L, F: F.triplet_margin_loss(L.ones(2, 3), L.ones(2, 3),
                                                                  "abc"), None),
    # torch's function is Python code: its AttributeError is torch's answer (TORCH_PYTHON)
    ("stft list", lambda L, F: L.stft([1.0, 2.0], 4, return_complex=True),
     "'list' object has no attribute 'dim'"),
    ("stft list center=False", lambda L, F: L.stft([1.0] * 8, 4, center=False,
                                                   return_complex=True), None),
    ("split list", lambda L, F: L.split([1.0, 2.0], 1), "'list' object has no attribute"),
    ("split str", lambda L, F: L.split("abc", 1), None),
    ("unravel_index str", lambda L, F: L.unravel_index("abc", (2, 2)),
     "'str' object has no attribute 'is_complex'"),
    ("max_unpool2d list", lambda L, F: F.max_unpool2d([1.0, 2.0], L.zeros(1, 1, 1, 1,
                                                                          dtype=L.int64), 2),
     "'list' object has no attribute 'size'"),
    ("adaptive_avg_pool3d str", lambda L, F: F.adaptive_avg_pool3d("abc", 2),
     "'str' object has no attribute 'size'"),
    ("mse_loss str target", lambda L, F: F.mse_loss(L.ones(2), "abc"),
     "'str' object has no attribute 'size'"),
    ("smooth_l1_loss list", lambda L, F: F.smooth_l1_loss([1.0, 2.0], L.ones(2)),
     "'list' object has no attribute 'size'"),
    # a str that failed a conversion, where torch's parser refuses a str: TypeError
    ("masked_fill str value", lambda L, F: L.masked_fill(L.ones(2), L.tensor([True, False]),
                                                         "abc"), None),
    ("dsplit str", lambda L, F: L.dsplit(L.ones(2, 2, 4), "x"), None),
    ("max_pool3d str kernel", lambda L, F: F.max_pool3d(L.ones(1, 1, 4, 4, 4), "x"), None),
    ("stft str hop_length", lambda L, F: L.stft(L.ones(20, dtype=L.float64), 8, "x",
                                                return_complex=True), None),
    # a bool where an int goes, once the op raised: TypeError
    ("avg_pool3d bool kernel", lambda L, F: F.avg_pool3d(L.ones(1, 1, 4, 4, 4), True,
                                                         padding=1), None),
    # NumPy's ValueError inside a kernel (a reshape, a broadcast, LAPACK): torch's RuntimeError
    ("unfold negative size", lambda L, F: _v(L).unfold(0, -1, 1), None),
    ("binomial mismatched shapes", lambda L, F: L.binomial(L.ones(2, 2) * 5,
                                                          L.ones(2, 3) * 0.5), None),
    ("multinomial of an empty batch", lambda L, F: L.multinomial(L.ones(0, 3), 4), None),
    ("linalg.cond of NaN", lambda L, F: L.linalg.cond(_sq(L) * float("nan")), None),
    ("histogram weight shape", lambda L, F: L.histogram(_v(L), 3, weight=L.ones(2, 4)), None),
]

ARGS = [
    # bools and floats where torch's parser wants an int (int_arg, the size parsers)
    ("select bool index", lambda L, F: L.ones(2, 3).select(1, True),
     "select(): argument 'index' (position 2) must be int, not bool"),
    ("select float index", lambda L, F: L.ones(2, 3).select(1, 1.0),
     "select(): argument 'index' (position 2) must be int, not float"),
    ("select() bool index", lambda L, F: L.select(L.ones(2, 3), 1, True), "must be int, not bool"),
    ("unfold bool step", lambda L, F: _v(L).unfold(0, 2, True),
     "unfold(): argument 'step' (position 3) must be int, not bool"),
    ("repeat float", lambda L, F: _v(L).repeat(2.0), None),
    ("tensor_split bool", lambda L, F: L.tensor_split(_v(L), True),
     "tensor_split() received an invalid combination of arguments"),
    ("ones bool size", lambda L, F: L.ones(True), None),
    ("rand bool size", lambda L, F: L.rand(True, dtype=L.float64), None),
    ("randn bool size", lambda L, F: L.randn(True, 2), None),
    ("expand bool size first", lambda L, F: L.ones(1, 3).expand(True, 3), None),
    ("expand a tuple of a bool first", lambda L, F: L.ones(1, 3).expand((True, 3)), None),
    ("view bool size", lambda L, F: L.ones(2, 3).view(True, 6), None),
    ("ones a tuple of a bool first", lambda L, F: L.ones((True, 2)), None),
    ("repeat bool first", lambda L, F: L.ones(2, 3).repeat(True, 1), None),
    ("diff huge n", lambda L, F: L.diff(_v(L), 2 ** 63), "Overflow when unpacking long long"),
    ("tensorinv bool ind", lambda L, F: L.linalg.tensorinv(L.eye(4).reshape(2, 2, 2, 2), True),
     "linalg_tensorinv(): argument 'ind' (position 2) must be int, not bool"),
    ("squeeze None", lambda L, F: L.squeeze(L.ones(2, 1), None),
     "squeeze() received an invalid combination of arguments - got (Tensor, NoneType)"),
    ("x.squeeze(dim=None)", lambda L, F: L.ones(2, 1).squeeze(dim=None), None),
    # unknown keywords
    ("empty_strided bogus", lambda L, F: L.empty_strided((2,), (1,), bogus=1),
     "empty_strided() got an unexpected keyword argument 'bogus'"),
    ("normal bogus", lambda L, F: L.normal(L.ones(3), 1.0, bogus=1),
     "normal() received an invalid combination of arguments"),
    # dtypes torch's kernels refuse
    ("isin bool test", lambda L, F: L.isin(L.tensor([1, 2]), True),
     "Unsupported input type encountered for isin(): Bool"),
    ("isin bool elements", lambda L, F: L.isin(L.tensor([True]), L.tensor([1])),
     "Unsupported input type encountered for isin(): Bool"),
    ("ldexp bool exponent", lambda L, F: L.ldexp(_v(L), L.tensor([True] * 4)),
     "\"ldexp_cpu_exp\" not implemented for 'Bool'"),
    ("histogram int64 weight", lambda L, F: L.histogram(_v(L).double(), 3,
                                                        weight=L.ones(4, dtype=L.int64)),
     "if weight tensor is provided, input tensor and weight tensor should have the same dtype"),
    ("histogram bool bins", lambda L, F: L.histogram(_v(L).double(), L.tensor([True, False])),
     "input tensor and bins tensors should have the same dtype"),
    ("householder_product bool tau", lambda L, F: L.linalg.householder_product(
        _sq(L), L.tensor([True, False])), "tau dtype Bool does not match input dtype Double"),
    ("orgqr float32 tau", lambda L, F: L.orgqr(_sq(L), L.ones(2)),
     "tau dtype Float does not match input dtype Double"),
    ("ormqr int64 tau", lambda L, F: L.ormqr(_sq(L), L.ones(3, dtype=L.int64), _sq(L)),
     "Expected input and tau to have the same dtype"),
    ("ormqr float32 other", lambda L, F: L.ormqr(_sq(L), L.ones(3, dtype=L.float64),
                                                 _sq(L).float()),
     "Expected input and other to have the same dtype"),
    ("triangular_solve int64 b", lambda L, F: L.triangular_solve(L.ones(3, 2, dtype=L.int64),
                                                                 _sq(L)),
     "Expected b and A to have the same dtype, but found b of type Long and A of type Double"),
    ("kl_div int64 target", lambda L, F: F.kl_div(_v(L).double(), L.ones(4, dtype=L.int64),
                                                  reduction="sum"),
     "kl_div: Integral inputs not supported."),
    ("layer_norm int64 weight", lambda L, F: F.layer_norm(L.ones(2, 3, dtype=L.float64), (3,),
                                                          L.ones(3, dtype=L.int64)),
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    ("layer_norm float32 weight of float64", lambda L, F: F.layer_norm(
        L.ones(2, 3, dtype=L.float64), (3,), L.ones(3)), "mixed dtype (CPU)"),
    ("stft bool", lambda L, F: L.stft(L.ones(20, dtype=L.bool), 8, return_complex=True),
     "\"reflection_pad1d\" not implemented for 'Bool'"),
    ("stft bool without return_complex", lambda L, F: L.stft(L.ones(20, dtype=L.bool), 8),
     "\"reflection_pad1d\" not implemented for 'Bool'"),
    ("stft int64", lambda L, F: L.stft(L.ones(20, dtype=L.int64), 8, return_complex=True),
     "expected a tensor of floating point or complex values"),
    ("stft bool center=False", lambda L, F: L.stft(L.ones(20, dtype=L.bool), 8, center=False,
                                                   return_complex=True),
     "expected a tensor of floating point or complex values"),
    # shapes
    ("index_reduce source shape", lambda L, F: L.index_reduce(
        _sq(L), 0, L.tensor([0, 1, 2]), L.ones(3, 2, dtype=L.float64), "prod"),
     "source tensor shape must match self tensor shape, excluding the specified dimension"),
    ("multi_margin_loss weight size", lambda L, F: F.multi_margin_loss(
        L.ones(3, 4), L.tensor([0, 1, 2]), weight=L.ones(5)),
     "inconsistent weight size, expected 4 but got [5]"),
    ("multi_margin_loss 2-d weight", lambda L, F: F.multi_margin_loss(
        L.ones(3, 4), L.tensor([0, 1, 2]), weight=L.ones(2, 2)), "weight must be one-dimensional"),
    ("avg_pool3d kernel beyond the input", lambda L, F: F.avg_pool3d(
        L.ones(1, 1, 5, 5, 5), 7, stride=2, padding=1),
     "input image (T: 5 H: 5 W: 5) smaller than kernel size (kT: 7 kH: 7 kW: 7)"),
    ("max_unpool2d negative output size", lambda L, F: F.max_unpool2d(
        L.ones(1, 1, 2, 2), L.zeros(1, 1, 2, 2, dtype=L.int64), -8, stride=2),
     "max_unpooling: output_size must contain non-negative spatial dimensions, but got "
     "output_size[0]=-6"),
    ("max_unpool1d negative output size", lambda L, F: F.max_unpool1d(
        L.ones(1, 2, 3), L.zeros(1, 2, 3, dtype=L.int64), -1), "output_size[0]=-3"),
    ("fft of an empty batch", lambda L, F: L.fft.fft(L.ones(0, 6), 5), "MKL FFT error"),
    ("rfft of an empty batch", lambda L, F: L.fft.rfft(L.ones(2, 0, 6)), "MKL FFT error"),
    ("irfft of an empty batch", lambda L, F: L.fft.irfft(L.ones(0, 6)), "MKL FFT error"),
]


@pytest.mark.parametrize("name,call,message", SEAM + ARGS, ids=[c[0] for c in SEAM + ARGS])
def test_bad_input_gets_torchs_class(name, call, message):
    from fuzzer import _class
    (tk, tr), (ek, er) = _run(call, torch, TF), _run(call, ember, EF)
    assert tk == "raise", f"torch accepted {name}: the case is not bad input"
    assert ek == "raise", f"ember accepted {name}, torch raised {tr!r}"
    assert _class(er) == _class(tr), (tr, er)
    if message is not None:
        assert message in str(tr) and message in str(er), (tr, er)


def test_the_valid_forms_still_work():
    """What the new checks must let through, as torch does."""
    for L in (torch, ember):
        x = L.ones(2, 1, 3)
        assert tuple(x.squeeze().shape) == (2, 3) and tuple(x.squeeze(1).shape) == (2, 3)
        assert tuple(L.squeeze(x).shape) == (2, 3)
        assert L.select(x, 2, 1).shape == L.select(x, 2, L.tensor(1)).shape
        assert tuple(L.ones(1, 3).expand(2, -1).shape) == (2, 3)
        assert L.isin(L.tensor([1, 2]), L.tensor([2])).tolist() == [False, True]
        assert tuple(L.fft.fft(L.ones(6, 0), 5).shape) == (6, 5)
        assert tuple(L.empty_strided((2,), (1,), layout=L.strided).shape) == (2,)
        assert tuple(L.normal(L.ones(3), 1.0, generator=None).shape) == (3,)
        assert tuple(F_layer_norm(L)(L.ones(2, 3, dtype=L.bfloat16), (3,), L.ones(3),
                                     L.ones(3)).shape) == (2, 3)
        # a bool after the first size is an int to torch's parser
        assert tuple(L.ones(3, 1).expand(3, True).shape) == (3, 1)
        assert tuple(L.ones(2, 3).view(6, True).shape) == (6, 1)
        assert tuple(L.zeros(2, True).shape) == (2, 1)
        assert tuple(L.ones(2, 3).repeat(2, True).shape) == (4, 3)
    s = ember.std(ember.tensor([[1.0, 2.0], [3.0, 5.0]]), True)
    assert s.tolist() == torch.std(torch.tensor([[1.0, 2.0], [3.0, 5.0]]), True).tolist()
    t = torch.stft(torch.ones(20, dtype=torch.float64), 8, return_complex=True)
    e = ember.stft(ember.ones(20, dtype=ember.float64), 8, return_complex=True)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)


def F_layer_norm(L):
    return (TF if L is torch else EF).layer_norm


def test_igamma_tests_x_before_a_nan():
    """torch's igamma/igammac answer x == 0 and x == inf before looking at a NaN `a`."""
    nan, inf = float("nan"), float("inf")
    a = [nan, nan, nan, nan, 0.0, inf, inf, 1.0, -1.0, 2.0, 0.0]
    x = [0.0, 1.0, inf, -1.0, 0.0, 0.0, inf, 0.0, 0.0, nan, inf]
    for f in ("igamma", "igammac"):
        for dt in ("float32", "float64"):
            t = getattr(torch, f)(torch.tensor(a, dtype=getattr(torch, dt)),
                                  torch.tensor(x, dtype=getattr(torch, dt)))
            e = getattr(ember, f)(ember.tensor(a, dtype=getattr(ember, dt)),
                                  ember.tensor(x, dtype=getattr(ember, dt)))
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)   # (NaN where NaN)
    t = torch.igamma(torch.tensor([nan, 1.0]), torch.tensor([False, True]))
    e = ember.igamma(ember.tensor([nan, 1.0]), ember.tensor([False, True]))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_chebyshev_of_nan_is_compared_on_shapes():
    """torch 2.13's Chebyshev kernels leave their result uninitialized for NaN x at larger
    n (a denormal on one call, 1e37 on another): the fuzzer compares shapes and dtypes there;
    ember's recurrence gives NaN, and agrees with torch on finite x."""
    from fuzzer import TORCH_UNDEFINED_ON_SPECIALS, run_one
    assert "special_shifted_chebyshev_polynomial_w" in TORCH_UNDEFINED_ON_SPECIALS
    assert run_one("special_shifted_chebyshev_polynomial_w", 0, "specials")[0] == "agree"
    n = ember.tensor([7, 9, 12])
    e = ember.special.shifted_chebyshev_polynomial_w(ember.tensor([float("nan")] * 3), n)
    assert np.isnan(e.numpy()).all()
    x = [0.1, 0.4, 0.9]
    t = torch.special.shifted_chebyshev_polynomial_w(torch.tensor(x), torch.tensor([7, 9, 12]))
    e = ember.special.shifted_chebyshev_polynomial_w(ember.tensor(x), n)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-4, atol=1e-4)


def test_the_fuzzer_reads_a_conjugate_view_and_skips_an_unreadable_torch_result():
    """torch's conj views (adjoint, ihfft) are read through resolve_conj, as their values;
    a torch result numpy cannot read (an empty expand to a size -8) has no oracle."""
    from fuzzer import _flat, run_one
    c = torch.tensor([[1 + 2j, 3j]]).adjoint()
    assert c.is_conj() and _flat(c, torch)[0][3].tolist() == [[1 - 2j], [-3j]]
    assert run_one("adjoint", 3, "last_dim_plus_one")[0] == "agree"
    assert run_one("expand", 3, "dim_too_negative") is None
