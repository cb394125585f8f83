"""Autograd through complex ops with torch's convention (conjugate Wirtinger: for a real loss
L of z = x + iy, z.grad = dL/dx + i dL/dy): gradients equal torch's for real losses built
from complex ops, and ember's gradcheck passes on real-valued wrappers in float64."""
import numpy as np
import pytest
import torch

import ember


def _leaf(lib, arr):
    return lib.from_numpy(arr.copy()).requires_grad_(True)


def _c(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)


def _r(shape, seed, lo=0.3, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# each case: (inputs as arrays, fn(lib, *leaves) -> real loss)
CASES = {
    "mul_abs": ([_c(3, 0), _c(3, 1)], lambda lib, z, w: (z * w).abs().sum()),
    "div_real": ([_c(3, 0), _c(3, 1)], lambda lib, z, w: (z / w).real.sum()),
    "imag_exp": ([_c(3, 0)], lambda lib, z: z.exp().imag.sum()),
    "log_sqrt": ([_c(3, 2)], lambda lib, z: (z.log() + z.sqrt()).abs().sum()),
    "trig": ([_c(3, 3)], lambda lib, z: (z.sin() * z.cos() + z.tanh()).real.sum()),
    "pow_reciprocal": ([_c(3, 4)], lambda lib, z: (z ** 3 + z.reciprocal()).abs().sum()),
    "pow_complex_exponent": ([_c(3, 4), _c(3, 5)],
                             lambda lib, z, w: (z ** w).real.sum()),
    "neg_sub_conj": ([_c(3, 5), _c(3, 6)],
                     lambda lib, z, w: (-(z - w.conj()) * z).imag.sum()),
    "angle_sgn": ([_c(4, 6)], lambda lib, z: (z.angle() * 2 + z.sgn().real).sum()),
    "view_as_real": ([_c((2, 3), 7)],
                     lambda lib, z: (lib.view_as_real(z * z) ** 2 *
                                     lib.arange(2.0, dtype=lib.float64)).sum()),
    "view_as_complex": ([_r((3, 2), 8, -2, 2)],
                        lambda lib, x: (lib.view_as_complex(x) ** 2).abs().sum()),
    "polar": ([_r(3, 9), _r(3, 10, -3, 3)],
              lambda lib, r, t: (lib.polar(r, t) * (1 + 2j)).real.sum()),
    "complex": ([_r(3, 9, -2, 2), _r(3, 10, -2, 2)],
                lambda lib, a, b: (lib.complex(a, b) ** 2).imag.sum()),
    "real_times_complex": ([_r(3, 11, -2, 2), _c(3, 12)],
                           lambda lib, x, z: (x * z).abs().sum()),
    "to_complex": ([_r(3, 13, -2, 2)],
                   lambda lib, x: (x.to(lib.complex128) * (1 - 1j)).exp().imag.sum()),
    "matmul": ([_c((2, 3), 14), _c((3, 2), 15)], lambda lib, a, b: (a @ b).abs().sum()),
    "einsum": ([_c((2, 3), 14), _c((3, 2), 15)],
               lambda lib, a, b: lib.einsum("ij,jk->ik", a, b).real.sum()),
    "sum_mean_prod": ([_c((2, 3), 16)],
                      lambda lib, z: (z.sum(0) * z.mean(1).sum() + z.prod()).abs().sum()),
    "mH": ([_c((2, 3), 17)], lambda lib, z: (z @ z.mH).real.sum()),
    "imag_view_setitem": ([_c(3, 18)],
                          lambda lib, z: (z * 1).imag.pow(2).sum() + (z * z).real.sum()),
    "sigmoid_rsqrt": ([_c(3, 19)], lambda lib, z: (z.sigmoid() + z.rsqrt()).abs().sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_equal_torch(name):
    arrays, fn = CASES[name]
    tl = [_leaf(torch, a) for a in arrays]
    el = [_leaf(ember, a) for a in arrays]
    lt, le = fn(torch, *tl), fn(ember, *el)
    np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-10)
    lt.backward()
    le.backward()
    for a, b in zip(el, tl):
        assert a.grad.dtype.name == str(b.grad.dtype)[6:]
        assert not a.grad.is_conj()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.resolve_conj().numpy(), rtol=1e-9,
                                   atol=1e-12)


GRADCHECK = {
    # real-valued wrappers: real float64 inputs, complex inside, real outputs
    "mul_abs": (lambda x: (ember.view_as_complex(x) * (1 + 2j)).abs(), (3, 2)),
    "exp_view": (lambda x: ember.view_as_real(ember.view_as_complex(x).exp()), (3, 2)),
    "polar": (lambda x: ember.view_as_real(ember.polar(x[0].abs() + 0.5, x[1])), (2, 3)),
    "angle": (lambda x: ember.view_as_complex(x).angle(), (3, 2)),
    "sgn": (lambda x: ember.view_as_real(ember.view_as_complex(x).sgn()), (3, 2)),
    "div_log": (lambda x: ember.view_as_real(ember.view_as_complex(x).log() /
                                             (ember.view_as_complex(x) + 3)), (3, 2)),
    "matmul": (lambda x: ember.view_as_real(ember.view_as_complex(x) @
                                            ember.view_as_complex(x).mT), (2, 2, 2)),
    "real_imag": (lambda x: ember.view_as_complex(x).real * ember.view_as_complex(x).imag,
                  (3, 2)),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradcheck_real_wrappers(name):
    fn, shape = GRADCHECK[name]
    x = ember.from_numpy(_r(shape, 3, 0.5, 2.0)).requires_grad_(True)
    assert ember.autograd.gradcheck(fn, (x,))


def test_complex_leaf_requires_grad_and_errors():
    z = ember.tensor([1 + 1j], requires_grad=True)
    assert z.requires_grad
    with pytest.raises(RuntimeError) as ee:
        z.sum().backward()
    with pytest.raises(RuntimeError) as te:
        torch.tensor([1 + 1j], requires_grad=True).sum().backward()
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


def test_create_graph_through_complex():
    """A second derivative through the conjugated formulas (they record their own graph)."""
    def run(lib):
        x = lib.tensor([0.7, -0.4], dtype=lib.float64, requires_grad=True)
        z = lib.complex(x, x * 2)
        loss = (z * z * z).abs().sum()
        g, = lib.autograd.grad(loss, x, create_graph=True)
        g.sum().backward()
        return g.detach().numpy(), x.grad.numpy()
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-9)


@pytest.mark.parametrize("name,kw", [("var", {}), ("std", {"dim": 1}),
                                     ("var_mean", {"dim": 0, "keepdim": True}),
                                     ("std_mean", {}), ("var", {"dim": (0, 1), "correction": 0})])
def test_var_std_of_complex(name, kw):
    a = _c((3, 4), 20)
    tl, el = _leaf(torch, a), _leaf(ember, a)
    tr, er = getattr(torch, name)(tl, **kw), getattr(ember, name)(el, **kw)
    tr, er = (tr, er) if isinstance(tr, tuple) else ((tr,), (er,))
    for x, y in zip(er, tr):
        assert x.dtype.name == str(y.dtype)[6:] and tuple(x.shape) == tuple(y.shape)
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-10)
    tr[0].sum().backward()
    er[0].sum().backward()
    np.testing.assert_allclose(el.grad.numpy(), tl.grad.numpy(), rtol=1e-9)
