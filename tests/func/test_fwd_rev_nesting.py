"""Forward-over-reverse nesting (issue 14): jacfwd(jacrev(f)), hessian under vmap, against
torch.func on a small elementwise function and a tanh MLP layer; and the known gap,
vmap(jacfwd(jacrev(f))), pinned as the NotImplementedError it raises today."""
import numpy as np
import pytest
import torch

import ember
from ember import func as efunc

B, D, H = 4, 3, 2
rng = np.random.default_rng(14)
X = rng.standard_normal((B, D)).astype(np.float64)
W = rng.standard_normal((H, D)).astype(np.float64)
BIAS = rng.standard_normal(H).astype(np.float64)


def _fns(lib):
    w, b = lib.tensor(W), lib.tensor(BIAS)
    return {"sin_x": lambda x: (x.sin() * x).sum(),
            "tanh_layer": lambda x: (x @ w.t() + b).tanh()}


def _close(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["sin_x", "tanh_layer"])
def test_jacfwd_jacrev_matches_torch(name):
    e = efunc.jacfwd(efunc.jacrev(_fns(ember)[name]))(ember.tensor(X[0]))
    t = torch.func.jacfwd(torch.func.jacrev(_fns(torch)[name]))(torch.tensor(X[0]))
    _close(e, t)


@pytest.mark.parametrize("name", ["sin_x", "tanh_layer"])
def test_vmap_hessian_matches_torch(name):
    e = efunc.vmap(efunc.hessian(_fns(ember)[name]))(ember.tensor(X))
    t = torch.func.vmap(torch.func.hessian(_fns(torch)[name]))(torch.tensor(X))
    _close(e, t)


@pytest.mark.parametrize("name", ["sin_x", "tanh_layer"])
def test_vmap_jacrev_jacrev_matches_torch_vmap_jacfwd_jacrev(name):
    # the supported spelling of the same batched Hessian
    e = efunc.vmap(efunc.jacrev(efunc.jacrev(_fns(ember)[name])))(ember.tensor(X))
    t = torch.func.vmap(torch.func.jacfwd(torch.func.jacrev(_fns(torch)[name])))(
        torch.tensor(X))
    _close(e, t)


@pytest.mark.parametrize("name", ["sin_x", "tanh_layer"])
def test_vmap_jacfwd_jacrev_is_the_known_gap(name):
    # torch computes this (see the test above for its values); ember refuses it loudly
    # rather than return a wrong Hessian: reverse mode inside a forward-AD level inside vmap
    # works on unbatched values only (ember/func/_physical.py, README_func.md)
    with pytest.raises(NotImplementedError, match="inside a forward-mode transform"):
        efunc.vmap(efunc.jacfwd(efunc.jacrev(_fns(ember)[name])))(ember.tensor(X))
