"""EmbeddingBag / F.embedding_bag against torch, and gumbel_softmax's properties."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember


def _pair(num, dim, seed, **kw):
    torch.manual_seed(seed)
    t = torch.nn.EmbeddingBag(num, dim, **kw).double()
    e = ember.nn.EmbeddingBag(num, dim, **kw).double()
    e.load_state_dict({"weight": ember.tensor(t.weight.detach().numpy())})
    return e, t


def _check(e_out, t_out, e, t):
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    w = np.random.default_rng(0).standard_normal(tuple(t_out.shape))
    (e_out * ember.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(e.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_2d_input(mode, padding_idx):
    e, t = _pair(6, 3, 0, mode=mode, padding_idx=padding_idx)
    idx = np.array([[0, 2, 4], [5, 2, 2], [1, 1, 3]])
    _check(e(ember.tensor(idx)), t(torch.tensor(idx)), e, t)


@settings(max_examples=25)
@given(data=st.data(), mode=st.sampled_from(["sum", "mean", "max"]),
       last=st.booleans())
def test_1d_input_with_offsets(data, mode, last):
    n = data.draw(st.integers(1, 12))
    idx = np.array(data.draw(st.lists(st.integers(0, 7), min_size=n, max_size=n)))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=4))) | {0})
    if mode == "max":   # torch's max over an empty bag is 0, like ember's; keep bags nonempty
        cuts = sorted(set(c for c in cuts if c < n)) or [0]
    offsets = np.array(cuts + ([n] if last else []))
    e, t = _pair(8, 4, 1, mode=mode, include_last_offset=last)
    _check(e(ember.tensor(idx), ember.tensor(offsets)),
           t(torch.tensor(idx), torch.tensor(offsets)), e, t)


def test_per_sample_weights_and_errors():
    e, t = _pair(5, 2, 2, mode="sum")
    idx, off, psw = np.array([0, 1, 4, 3]), np.array([0, 2]), np.array([0.5, 2.0, -1.0, 3.0])
    pe, pt = ember.tensor(psw, requires_grad=True), torch.tensor(psw, requires_grad=True)
    _check(e(ember.tensor(idx), ember.tensor(off), pe), t(torch.tensor(idx), torch.tensor(off),
                                                          pt), e, t)
    np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-10)
    em, tm = _pair(5, 2, 2, mode="mean")
    with pytest.raises(NotImplementedError):
        tm(torch.tensor(idx), torch.tensor(off), torch.tensor(psw))
    with pytest.raises(NotImplementedError):
        em(ember.tensor(idx), ember.tensor(off), ember.tensor(psw))
    with pytest.raises(ValueError):
        t(torch.tensor(idx))
    with pytest.raises(ValueError):
        e(ember.tensor(idx))
    assert repr(e) == repr(t)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_properties(hard):
    logits = ember.randn(4, 5, requires_grad=True)
    ember.manual_seed(3)
    y = ember.nn.functional.gumbel_softmax(logits, tau=0.5, hard=hard)
    ember.manual_seed(3)
    y2 = ember.nn.functional.gumbel_softmax(logits, tau=0.5, hard=hard)
    ref = torch.nn.functional.gumbel_softmax(torch.randn(4, 5), tau=0.5, hard=hard)
    assert tuple(y.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(y.detach().numpy(), y2.detach().numpy())
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), 1.0, rtol=1e-6)
    if hard:
        assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    y.max().backward()
    assert logits.grad is not None and logits.grad.shape == logits.shape
