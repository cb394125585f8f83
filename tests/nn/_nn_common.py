"""Shared helpers of the ember.nn differential tests.

`pair(tmod, emod)` copies a torch module's state into the ember one (through numpy);
`run_both(...)` feeds the same inputs to both, backpropagates the same output gradient and
compares outputs, input gradients and every parameter's gradient (tolerance by dtype).
"""
import numpy as np
import torch

import ember

TOL = {torch.float32: (2e-5, 2e-6), torch.float64: (1e-9, 1e-11),
       ember.float32: (2e-5, 2e-6), ember.float64: (1e-9, 1e-11)}
DTYPES = [(torch.float32, ember.float32), (torch.float64, ember.float64)]


def E(t, requires_grad=None):
    """The ember copy of a torch tensor (same dtype, values; requires_grad as given or as t)."""
    e = ember.tensor(t.detach().numpy().copy())
    rg = t.requires_grad if requires_grad is None else requires_grad
    if rg:
        e.requires_grad_(True)
    return e


def close(e, t, tol=None, what="value"):
    """Assert ember tensor `e` matches torch tensor `t` in shape, dtype and values."""
    assert t is not None and e is not None, f"{what}: torch {t is None}, ember {e is None}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} vs {tuple(t.shape)}"
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], \
        f"{what}: dtype {e.dtype} vs {t.dtype}"
    rtol, atol = tol or TOL.get(t.dtype, (0, 0))
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64) if e.dtype.is_floating_point
                               else e.detach().numpy(),
                               t.detach().numpy().astype(np.float64) if t.is_floating_point()
                               else t.detach().numpy(),
                               rtol=rtol, atol=atol, err_msg=what)


def pair(tmod, emod):
    """Load `tmod`'s state_dict into `emod` (strict) and match train/eval mode."""
    emod.load_state_dict({k: E(v) for k, v in tmod.state_dict().items()})
    emod.train(tmod.training)
    return tmod, emod


def run_both(tmod, emod, *tinputs, tol=None, grad_seed=0, **kwargs):
    """Forward the same inputs through both modules, backward the same random output grad,
    and compare outputs, input grads and parameter grads."""
    einputs = [E(t) if isinstance(t, torch.Tensor) else t for t in tinputs]
    tout = tmod(*tinputs, **kwargs)
    eout = emod(*einputs, **kwargs)
    close(eout, tout, tol, "output")
    if not tout.requires_grad:
        return tout, eout
    g = torch.from_numpy(np.random.default_rng(grad_seed).standard_normal(tuple(tout.shape))
                         ).to(tout.dtype)
    tout.backward(g)
    eout.backward(E(g))
    for i, (t, e) in enumerate(zip(tinputs, einputs)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            close(e.grad, t.grad, tol, f"grad of input {i}")
    eparams = dict(emod.named_parameters())
    for name, p in tmod.named_parameters():
        if p.grad is None:
            assert eparams[name].grad is None, f"grad of {name}: torch None"
        else:
            close(eparams[name].grad, p.grad, tol, f"grad of {name}")
    return tout, eout


def norm_repr(s):
    """A torch repr with 'torch.' spelled 'ember.' (dtype names, Size)."""
    return s.replace("torch.", "ember.")
