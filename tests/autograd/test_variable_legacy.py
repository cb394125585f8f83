"""torch.autograd's legacy and flag names against torch: Variable, variable, the
multithreading / view-replay / kineto flags, and _is_checkpoint_valid."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_is_a_detached_leaf_sharing_memory(requires_grad):
    x = np.arange(3.0)
    for lib in (torch, ember):
        t = lib.tensor(x)
        v = lib.autograd.Variable(t, requires_grad=requires_grad)
        assert type(v) is lib.Tensor and v is not t
        assert v.requires_grad is requires_grad and v.is_leaf
        assert v.data_ptr() == t.data_ptr()
        assert isinstance(t, lib.autograd.Variable)
    y = ember.ones(2, requires_grad=True) * 2
    w = ember.autograd.Variable(y)
    ty = torch.ones(2, requires_grad=True) * 2
    tw = torch.autograd.Variable(ty)
    assert w.requires_grad == tw.requires_grad and w.grad_fn is None and tw.grad_fn is None
    ev, tv = ember.autograd.Variable(), torch.autograd.Variable()
    assert tuple(ev.shape) == tuple(tv.shape) == (0,) and str(ev.dtype)[-7:] == str(tv.dtype)[-7:]


def test_variable_errors_and_volatile_warning():
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            lib.autograd.Variable([1, 2])
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
            lib.autograd.Variable(lib.ones(2, dtype=lib.int64), requires_grad=True)
        with pytest.warns(UserWarning, match="volatile was removed"):
            lib.autograd.Variable(lib.ones(2), volatile=True)
        with pytest.raises(RuntimeError, match=r"torch.autograd.variable\(...\) is deprecated"):
            lib.autograd.variable(lib.ones(2))


def test_flags_like_torch():
    for lib in (torch, ember):
        A = lib.autograd
        assert A.is_multithreading_enabled() is True
        with A.set_multithreading_enabled(False):
            assert A.is_multithreading_enabled() is False
        assert A.is_multithreading_enabled() is True
        assert A.is_view_replay_enabled() is False
        assert A._is_checkpoint_valid() is True
    assert ember.autograd.kineto_available() is False   # torch's wheel has Kineto; ember not


def test_is_checkpoint_valid_inside_backward():
    seen = {}

    def probe(lib, key):
        def hook(g):
            seen[(lib.__name__, key)] = lib.autograd._is_checkpoint_valid()
        return hook

    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(probe(lib, "backward"))
        y.sum().backward()
        z = x * 3
        z.register_hook(probe(lib, "grad"))
        lib.autograd.grad(z.sum(), x)
    assert seen[("torch", "backward")] is seen[("ember", "backward")] is True
    assert seen[("torch", "grad")] is seen[("ember", "grad")] is False
