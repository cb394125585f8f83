"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal)
and the legacy nn.utils.weight_norm / spectral_norm, against torch: values, gradients of the
originals, state_dict keys, class names, removal, caching, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.nn.utils import parametrize as EP, parametrizations as EPZ
import torch.nn.utils.parametrize as TP
import torch.nn.utils.parametrizations as TPZ


def _linear_pair(i=4, o=3, seed=0, bias=True):
    torch.manual_seed(seed)
    t = torch.nn.Linear(i, o, bias=bias).double()
    e = nn.Linear(i, o, bias=bias).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, e


def _close(e, t, tol=1e-9):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _sym(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def _scale(lib):
    class Scale(lib.nn.Module):
        def forward(self, X):
            return 2 * X
    return Scale()


def test_register_parametrization_values_grads_and_state_dict():
    t, e = _linear_pair(3, 3)
    TP.register_parametrization(t, "weight", _sym(torch))
    EP.register_parametrization(e, "weight", _sym(ember))
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert list(e.state_dict()) == list(t.state_dict())
    assert EP.is_parametrized(e) and EP.is_parametrized(e, "weight")
    assert not EP.is_parametrized(e, "bias")
    assert EP.type_before_parametrizations(e) is nn.Linear
    _close(e.weight, t.weight)
    _close(e.parametrizations.weight.original, t.parametrizations.weight.original)
    x = np.random.default_rng(0).standard_normal((2, 3))
    (t(torch.tensor(x)) ** 2).sum().backward()
    (e(ember.tensor(x)) ** 2).sum().backward()
    _close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad)
    # assignment goes through right_inverse
    a = np.arange(9.0).reshape(3, 3)
    t.weight = torch.tensor(a)
    e.weight = ember.tensor(a)
    _close(e.parametrizations.weight.original, t.parametrizations.weight.original)
    _close(e.weight, t.weight)
    # a second parametrization stacks on the first
    TP.register_parametrization(t, "weight", _scale(torch))
    EP.register_parametrization(e, "weight", _scale(ember))
    _close(e.weight, t.weight)
    assert len(e.parametrizations.weight) == len(t.parametrizations.weight) == 2


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    t, e = _linear_pair(3, 3, seed=1)
    TP.register_parametrization(t, "weight", _scale(torch))
    EP.register_parametrization(e, "weight", _scale(ember))
    orig_e = e.parametrizations.weight.original
    TP.remove_parametrizations(t, "weight", leave_parametrized=leave)
    EP.remove_parametrizations(e, "weight", leave_parametrized=leave)
    assert type(e) is nn.Linear and not hasattr(e, "parametrizations")
    assert isinstance(e.weight, nn.Parameter) and e.weight is orig_e
    _close(e.weight, t.weight)
    assert list(e.state_dict()) == list(t.state_dict())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        TP.remove_parametrizations(t, "weight")
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        EP.remove_parametrizations(e, "weight")


def test_errors_match_torch():
    t, e = _linear_pair(4, 3)

    def shape_changer(lib):
        class Sum(lib.nn.Module):
            def forward(self, X):
                return X.sum(0)
        return Sum()

    def dtype_changer(lib):
        class F(lib.nn.Module):
            def forward(self, X):
                return X.float()
        return F()

    for make, what in ((shape_changer, "shape"), (dtype_changer, "dtype")):
        with pytest.raises(ValueError, match=f"may not change the {what}") as ti:
            TP.register_parametrization(t, "weight", make(torch))
        with pytest.raises(ValueError, match=f"may not change the {what}") as ei:
            EP.register_parametrization(e, "weight", make(ember))
        assert str(ei.value).split("\n")[0] == str(ti.value).split("\n")[0]
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        TP.register_parametrization(t, "nope", _scale(torch))
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        EP.register_parametrization(e, "nope", _scale(ember))
    # unsafe lets the shape change
    TP.register_parametrization(t, "weight", shape_changer(torch), unsafe=True)
    EP.register_parametrization(e, "weight", shape_changer(ember), unsafe=True)
    assert tuple(e.weight.shape) == tuple(t.weight.shape) == (4,)
    # assigning without right_inverse
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        t.weight = torch.zeros(4)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        e.weight = ember.zeros(4)


def test_cached_computes_once():
    calls = []

    class Count(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1.0

    e = nn.Linear(2, 2)
    EP.register_parametrization(e, "weight", Count())
    calls.clear()
    with EP.cached():
        a, b = e.weight, e.weight
        assert a is b
    assert len(calls) == 1
    e.weight, e.weight
    assert len(calls) == 3


def test_transfer_parametrizations_and_params():
    t, e = _linear_pair(3, 3, seed=2)
    TP.register_parametrization(t, "weight", _sym(torch))
    EP.register_parametrization(e, "weight", _sym(ember))
    t2, e2 = _linear_pair(3, 3, seed=3)
    TP.transfer_parametrizations_and_params(t, t2)
    EP.transfer_parametrizations_and_params(e, e2)
    assert e2.parametrizations.weight.original is e.parametrizations.weight.original
    _close(e2.weight, t2.weight)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    t, e = _linear_pair(4, 5, seed=4)
    TPZ.weight_norm(t, dim=dim)
    EPZ.weight_norm(e, dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    for k in ("original0", "original1"):
        _close(getattr(e.parametrizations.weight, k), getattr(t.parametrizations.weight, k))
    _close(e.weight, t.weight)
    x = np.random.default_rng(4).standard_normal((3, 4))
    t(torch.tensor(x)).pow(2).sum().backward()
    e(ember.tensor(x)).pow(2).sum().backward()
    for k in ("original0", "original1"):
        _close(getattr(e.parametrizations.weight, k).grad,
               getattr(t.parametrizations.weight, k).grad)


def test_weight_norm_loads_legacy_state_dict_and_legacy_api():
    t, e = _linear_pair(4, 5, seed=5)
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        torch.nn.utils.weight_norm(t)
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        nn.utils.weight_norm(e)
    assert sorted(e.state_dict()) == sorted(t.state_dict())
    _close(e.weight_g, t.weight_g)
    _close(e.weight, t.weight)
    x = np.random.default_rng(5).standard_normal((2, 4))
    t(torch.tensor(x)).sum().backward()
    e(ember.tensor(x)).sum().backward()
    _close(e.weight_g.grad, t.weight_g.grad)
    _close(e.weight_v.grad, t.weight_v.grad)
    # the parametrization version loads the legacy keys
    sd = {k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()}
    e2 = EPZ.weight_norm(nn.Linear(4, 5).double())
    e2.load_state_dict(sd)
    _close(e2.weight, t.weight)
    torch.nn.utils.remove_weight_norm(t)
    nn.utils.remove_weight_norm(e)
    assert isinstance(e.weight, nn.Parameter) and "weight_g" not in dict(e.named_parameters())
    _close(e.weight, t.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        torch.nn.utils.remove_weight_norm(t)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(e)


def _copy_uv(e_src, t_src, keys):
    for k in keys:
        getattr(e_src, k).copy_(ember.tensor(getattr(t_src, k).detach().numpy()))


@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_parametrization(train):
    t, e = _linear_pair(4, 6, seed=6)
    TPZ.spectral_norm(t)
    EPZ.spectral_norm(e)
    assert list(e.state_dict()) == list(t.state_dict())
    # the power-iteration start is random: give ember torch's vectors
    _copy_uv(e.parametrizations.weight[0], t.parametrizations.weight[0], ("_u", "_v"))
    t.train(train)
    e.train(train)
    x = np.random.default_rng(6).standard_normal((3, 4))
    for _ in range(2):
        t(torch.tensor(x)).pow(2).sum().backward()
        e(ember.tensor(x)).pow(2).sum().backward()
    _close(e.parametrizations.weight[0]._u, t.parametrizations.weight[0]._u)
    _close(e.weight, t.weight)
    _close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        TPZ.spectral_norm(torch.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        EPZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_spectral_norm_legacy_and_conv_transpose_dim():
    torch.manual_seed(7)
    t = torch.nn.ConvTranspose2d(3, 4, 2).double()
    e = nn.ConvTranspose2d(3, 4, 2).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    torch.nn.utils.spectral_norm(t)
    nn.utils.spectral_norm(e)
    assert sorted(e.state_dict()) == sorted(t.state_dict())
    assert tuple(e.weight_u.shape) == tuple(t.weight_u.shape) == (4,)     # dim=1
    _copy_uv(e, t, ("weight_u", "weight_v"))
    x = np.random.default_rng(7).standard_normal((1, 3, 3, 3))
    t(torch.tensor(x)).sum().backward()
    e(ember.tensor(x)).sum().backward()
    _close(e.weight, t.weight)
    _close(e.weight_orig.grad, t.weight_orig.grad)
    torch.nn.utils.remove_spectral_norm(t)
    nn.utils.remove_spectral_norm(e)
    _close(e.weight, t.weight)
    assert sorted(e.state_dict()) == sorted(t.state_dict())
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(e)


def _orth_available(name):
    return getattr(ember.linalg, name, None) is not None


@pytest.mark.parametrize("shape,orth_map", [((5, 5), "cayley"), ((6, 3), "cayley"),
                                            ((3, 6), "cayley"), ((4, 4), "matrix_exp"),
                                            ((6, 3), "householder")])
def test_orthogonal(shape, orth_map):
    need = {"matrix_exp": "matrix_exp", "householder": "householder_product"}.get(orth_map)
    if need and not _orth_available(need):
        pytest.skip(f"ember.linalg.{need} is not in this tree (another helper's op)")
    o, i = shape
    t, e = _linear_pair(i, o, seed=8)
    TPZ.orthogonal(t, orthogonal_map=orth_map)
    EPZ.orthogonal(e, orthogonal_map=orth_map)
    assert list(e.state_dict()) == list(t.state_dict())
    # the initial right_inverse of a square orthogonalises with QR (no randomness)
    w = e.weight
    g = w.T @ w if o >= i else w @ w.T
    np.testing.assert_allclose(g.detach().numpy(), np.eye(min(o, i)), atol=1e-8)
    if o == i:
        _close(e.weight, t.weight, 1e-7)
    x = np.random.default_rng(8).standard_normal((2, i))
    e.parametrizations.weight.original.data = ember.tensor(
        t.parametrizations.weight.original.detach().numpy())
    e.parametrizations.weight[0].base = ember.tensor(
        t.parametrizations.weight[0].base.detach().numpy())
    t(torch.tensor(x)).pow(2).sum().backward()
    e(ember.tensor(x)).pow(2).sum().backward()
    _close(e.weight, t.weight, 1e-7)
    _close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad,
           1e-7)


def test_orthogonal_errors():
    for lib, mod in ((torch, TPZ), (ember, EPZ)):
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
            mod.orthogonal(lib.nn.Linear(3, 3), "bias")
        with pytest.raises(ValueError, match='orthogonal_map has to be one of'):
            mod.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError, match="has no parameter or buffer with name"):
            mod.orthogonal(lib.nn.Linear(3, 3), "nope")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = EPZ.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        e.weight = ember.eye(2)


def test_deepcopy_works_and_pickle_is_refused():
    import copy
    import pickle
    t, e = _linear_pair(3, 3, seed=9)
    TPZ.weight_norm(t)
    EPZ.weight_norm(e)
    tc, ec = copy.deepcopy(t), copy.deepcopy(e)
    assert type(ec).__name__ == type(tc).__name__ == "ParametrizedLinear"
    assert ec.parametrizations.weight.original0 is not e.parametrizations.weight.original0
    _close(ec.weight, tc.weight)
    for m in (t, e):
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only "
                                               "supported through state_dict"):
            pickle.dumps(m)
