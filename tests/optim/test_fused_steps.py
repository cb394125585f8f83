"""The one-pass C updates of SGD and Adam/AdamW (ember/optim/fused_steps.py): bitwise the
NumPy path's results (EMBER_EAGER_KERNELS=0), and torch's within float tolerance, for every
combination of the options each kernel compiles a variant for."""
import itertools

import numpy as np
import pytest
import torch

import ember
import ember.ops.native as native
from ember.optim import fused_steps

SHAPES = [(37, 29), (5,), (3, 4, 5)]


def _params(lib, dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for s in SHAPES:
        a = rng.standard_normal(s)
        a[..., 0] = 0.0              # zero parameters and gradients at some positions
        out.append(lib.tensor(a, dtype=dtype, requires_grad=True))
    return out


def _grads(step, dtype, seed):
    rng = np.random.default_rng(seed * 1000 + step)
    out = []
    for s in SHAPES:
        g = rng.standard_normal(s) * (1 + step)
        g[..., 1] = 0.0
        out.append(g.astype(dtype))
    return out


def _run(lib, make_opt, dtype, steps=4, seed=0):
    np_dtype = np.float32 if dtype == "float32" else np.float64
    params = _params(lib, getattr(lib, dtype), seed)
    opt = make_opt(lib, params)
    for k in range(steps):
        for p, g in zip(params, _grads(k, np_dtype, seed)):
            p.grad = lib.tensor(g)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


SGD_CASES = [dict(momentum=m, dampening=d, nesterov=n, weight_decay=wd, maximize=mx)
             for m, d, n, wd, mx in itertools.product((0.0, 0.9), (0.0, 0.3), (False, True),
                                                      (0.0, 0.01), (False, True))
             if not (n and (m == 0 or d != 0))]
ADAM_CASES = [dict(cls=c, betas=b, weight_decay=wd, amsgrad=a, maximize=mx)
              for c, b, wd, a, mx in itertools.product(("Adam", "AdamW"),
                                                       ((0.9, 0.999), (0.3, 0.99)),
                                                       (0.0, 0.05), (False, True),
                                                       (False, True))]


def _sgd(kw):
    return lambda lib, ps: lib.optim.SGD(ps, lr=0.05, **kw)


def _adam(kw):
    kw = dict(kw)
    cls = kw.pop("cls")
    return lambda lib, ps: getattr(lib.optim, cls)(ps, lr=0.01, **kw)


def _kernel_calls(monkeypatch):
    """Patch the optimizers' calls of the C steps to record how many parameters each
    update; returns the list."""
    calls = []
    for module, name in (("sgd", "sgd_step"), ("adam", "adam_step")):
        real = getattr(fused_steps, name)

        def spy(items, _real=real, **k):
            calls.append(len(items))
            return _real(items, **k)
        monkeypatch.setattr(f"ember.optim.{module}.{name}", spy)
    return calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SGD_CASES + ADAM_CASES,
                         ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_fused_step_is_the_numpy_step_and_torchs(case, dtype, monkeypatch):
    make = _adam(case) if "cls" in case else _sgd(case)
    calls = _kernel_calls(monkeypatch)
    fused, _ = _run(ember, make, dtype)
    assert calls == [len(SHAPES)] * 4           # one C call per step, for every parameter
    monkeypatch.setattr(native, "enabled", False)
    calls.clear()
    plain, _ = _run(ember, make, dtype)
    assert calls == []                          # and here the NumPy path
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)     # bitwise
    ref, _ = _run(torch, make, dtype)
    tol = 2e-6 if dtype == "float32" else 1e-12
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_fused_sgd_state_matches_torch():
    """The momentum buffer the kernel writes is the optimizer's state, as torch's."""
    make = _sgd(dict(momentum=0.9, nesterov=True))
    _, eopt = _run(ember, make, "float32")
    _, topt = _run(torch, make, "float32")
    for ep, tp in zip(eopt.param_groups[0]["params"], topt.param_groups[0]["params"]):
        np.testing.assert_allclose(eopt.state[ep]["momentum_buffer"].numpy(),
                                   topt.state[tp]["momentum_buffer"].numpy(), rtol=2e-6)


def test_non_contiguous_and_mixed_arrays_take_the_numpy_path(monkeypatch):
    """A transposed gradient is no kernel's: the NumPy path runs and the result is still
    torch's."""
    calls = _kernel_calls(monkeypatch)
    for lib in (ember, torch):
        w = lib.tensor(np.arange(12.0).reshape(3, 4), dtype=lib.float32, requires_grad=True)
        w.grad = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3), dtype=lib.float32).t()
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        opt.step()
        opt.step()
        if lib is ember:
            e = w.detach().numpy()
        else:
            np.testing.assert_allclose(e, w.detach().numpy(), rtol=1e-6)
    assert calls == []


def test_lr_given_as_a_tensor():
    for cls in ("SGD", "AdamW"):
        outs = []
        for lib in (ember, torch):
            ps = _params(lib, lib.float32, 3)
            opt = getattr(lib.optim, cls)(ps, lr=lib.tensor(0.02))
            for k in range(2):
                for p, g in zip(ps, _grads(k, np.float32, 3)):
                    p.grad = lib.tensor(g)
                opt.step()
            outs.append([p.detach().numpy() for p in ps])
        for a, b in zip(*outs):
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
