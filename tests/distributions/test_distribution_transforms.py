"""Transforms, constraints and the constraint registries against torch: each transform's
forward, inverse, log|det J| (values and gradients), shapes, sign and domain/codomain;
each constraint's check; biject_to / transform_to for every constraint torch registers."""
import numpy as np
import pytest
import torch

import ember
from _cases import as_np, close, pos, real, spd, tril, RNG

TD, ED = torch.distributions, ember.distributions


def _t(lib, v):
    return lib.tensor(v, dtype=lib.float64)


# name -> (make(D, lib), input x ndarray); make builds the transform in one library from
# parameters drawn once here (both libraries get the same)
_EXPO, _LOC, _SCALE, _SCALE2, _CLOC, _CSCALE = (np.array([0.5, 2.0, 3.0]), real(3), pos(3),
                                                pos(3), real(3), pos(3))
TRANSFORMS = {
    "Exp": (lambda D, lib: D.ExpTransform(), real(2, 3)),
    "Power": (lambda D, lib: D.PowerTransform(_t(lib, _EXPO)), pos(2, 3)),
    "Sigmoid": (lambda D, lib: D.SigmoidTransform(), real(2, 3)),
    "Softplus": (lambda D, lib: D.SoftplusTransform(), real(2, 3)),
    "Tanh": (lambda D, lib: D.TanhTransform(), real(2, 3)),
    "Abs": (lambda D, lib: D.AbsTransform(), pos(2, 3)),
    "Affine": (lambda D, lib: D.AffineTransform(_t(lib, _LOC), _t(lib, _SCALE)), real(2, 3)),
    "Affine-scalar": (lambda D, lib: D.AffineTransform(1.5, -2.0), real(2, 3)),
    "Affine-event": (lambda D, lib: D.AffineTransform(0.5, _t(lib, _SCALE2), event_dim=1),
                     real(2, 3)),
    "Compose": (lambda D, lib: D.ComposeTransform([D.ExpTransform(),
                                                   D.AffineTransform(1.0, 2.0)]), real(2, 3)),
    "Identity": (lambda D, lib: D.identity_transform, real(2, 3)),
    "Independent": (lambda D, lib: D.IndependentTransform(D.SigmoidTransform(), 1), real(2, 3)),
    "Reshape": (lambda D, lib: D.ReshapeTransform((2, 3), (3, 2)), real(4, 2, 3)),
    "Softmax": (lambda D, lib: D.SoftmaxTransform(), real(2, 3)),
    "StickBreaking": (lambda D, lib: D.StickBreakingTransform(), real(2, 3)),
    "LowerCholesky": (lambda D, lib: D.LowerCholeskyTransform(), real(2, 3, 3)),
    "PositiveDefinite": (lambda D, lib: D.PositiveDefiniteTransform(), real(2, 3, 3)),
    "CorrCholesky": (lambda D, lib: D.CorrCholeskyTransform(), real(2, 3)),
    "Cat": (lambda D, lib: D.CatTransform([D.ExpTransform(), D.identity_transform], dim=1,
                                          lengths=[2, 1]), real(2, 3)),
    "Stack": (lambda D, lib: D.StackTransform([D.ExpTransform(), D.SigmoidTransform()], dim=1),
              real(3, 2)),
    "CDF": (lambda D, lib: D.CumulativeDistributionTransform(
        D.Normal(_t(lib, _CLOC), _t(lib, _CSCALE))), real(2, 3)),
    "Inverse-Exp": (lambda D, lib: D.ExpTransform().inv, pos(2, 3)),
    "Inverse-Sigmoid": (lambda D, lib: D.SigmoidTransform().inv,
                        RNG.uniform(0.1, 0.9, (2, 3))),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name):
    make, x = TRANSFORMS[name]
    tt, et = make(TD, torch), make(ED, ember)
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    ty, ey = tt(tx), et(ex)
    close(ey, ty)
    close(et.inv(ey.detach()), tt.inv(ty.detach()), rtol=1e-5, atol=1e-8)
    assert type(et).__name__ == type(tt).__name__
    assert et.bijective == tt.bijective
    assert tuple(et.forward_shape(ex.shape)) == tuple(tt.forward_shape(tx.shape))
    assert tuple(et.inverse_shape(ey.shape)) == tuple(tt.inverse_shape(ty.shape))
    assert repr(et.domain) == repr(tt.domain) and repr(et.codomain) == repr(tt.codomain)
    try:
        tj = tt.log_abs_det_jacobian(tx, ty)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            et.log_abs_det_jacobian(ex, ey)
        return
    ej = et.log_abs_det_jacobian(ex, ey)
    close(ej, tj, rtol=1e-6, atol=1e-8)
    if tj.requires_grad:
        (tg,) = torch.autograd.grad((tj.sum() + ty.sum()), [tx])
        (eg,) = ember.autograd.grad((ej.sum() + ey.sum()), [ex])
        close(eg, tg, rtol=1e-6, atol=1e-8)


def test_transform_algebra():
    D = ED.transforms
    t = D.ExpTransform()
    assert t.inv.inv is t and t.sign == 1 and t == D.ExpTransform() and t != D.TanhTransform()
    c = D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.0, -2.0)])
    assert c.sign == -1 and c.inv.inv is c
    assert D.AffineTransform(1.0, 2.0) == D.AffineTransform(1.0, 2.0)
    cached = D.ExpTransform(cache_size=1)
    x = ember.randn(3)
    y = cached(x)
    assert cached.inv(y) is x            # the cache returns the very input
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.ExpTransform(cache_size=2)
    with pytest.raises(ValueError):
        D.ReshapeTransform((2, 3), (4,))
    with pytest.raises(ValueError):
        torch.distributions.transforms.ReshapeTransform((2, 3), (4,))


CONSTRAINTS = {
    "real": (lambda C: C.real, np.array([0.0, np.inf, np.nan])),
    "positive": (lambda C: C.positive, np.array([-1.0, 0.0, 2.0])),
    "nonnegative": (lambda C: C.nonnegative, np.array([-1.0, 0.0, 2.0])),
    "unit_interval": (lambda C: C.unit_interval, np.array([-0.1, 0.0, 0.5, 1.0, 1.2])),
    "interval": (lambda C: C.interval(-1.0, 2.0), np.array([-2.0, -1.0, 2.0, 3.0])),
    "half_open": (lambda C: C.half_open_interval(0.0, 1.0), np.array([0.0, 1.0, 0.5])),
    "greater_than": (lambda C: C.greater_than(1.0), np.array([0.5, 1.0, 1.5])),
    "greater_than_eq": (lambda C: C.greater_than_eq(1.0), np.array([0.5, 1.0, 1.5])),
    "less_than": (lambda C: C.less_than(1.0), np.array([0.5, 1.0, 1.5])),
    "boolean": (lambda C: C.boolean, np.array([0.0, 1.0, 0.5])),
    "nonnegative_integer": (lambda C: C.nonnegative_integer, np.array([-1.0, 0.0, 2.0, 2.5])),
    "positive_integer": (lambda C: C.positive_integer, np.array([0.0, 1.0, 3.0])),
    "integer_interval": (lambda C: C.integer_interval(0, 3), np.array([-1.0, 0.0, 3.0, 4.0])),
    "simplex": (lambda C: C.simplex, np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])),
    "one_hot": (lambda C: C.one_hot, np.array([[0.0, 1.0], [1.0, 1.0]])),
    "multinomial": (lambda C: C.multinomial(3), np.array([[1.0, 2.0], [2.0, 2.0]])),
    "real_vector": (lambda C: C.real_vector, np.array([[0.0, np.nan], [1.0, 2.0]])),
    "independent": (lambda C: C.independent(C.positive, 1), np.array([[1.0, 2.0], [1.0, -1]])),
    "lower_triangular": (lambda C: C.lower_triangular, np.stack([np.tril(real(3, 3)),
                                                                 real(3, 3)])),
    "lower_cholesky": (lambda C: C.lower_cholesky, np.stack([tril(3), -tril(3)])),
    "corr_cholesky": (lambda C: C.corr_cholesky, np.stack([
        np.linalg.cholesky(np.array([[1, .3, .1], [.3, 1, .2], [.1, .2, 1.]])), tril(3)])),
    "square": (lambda C: C.square, real(2, 3, 3)),
    "symmetric": (lambda C: C.symmetric, np.stack([spd(3), real(3, 3)])),
    "positive_definite": (lambda C: C.positive_definite, np.stack([spd(3), -spd(3)])),
    "positive_semidefinite": (lambda C: C.positive_semidefinite, np.stack([spd(3), -spd(3)])),
    "cat": (lambda C: C.cat([C.positive, C.real], dim=0, lengths=[1, 2]),
            np.array([-1.0, 2.0, 3.0])),
    "stack": (lambda C: C.stack([C.positive, C.real], dim=1), np.array([[1.0, -2.0],
                                                                       [-1.0, 3.0]])),
}


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_constraint_check_matches_torch(name):
    make, v = CONSTRAINTS[name]
    tc, ec = make(TD.constraints), make(ED.constraints)
    np.testing.assert_array_equal(as_np(ec.check(ember.tensor(v))),
                                  as_np(tc.check(torch.tensor(v))))
    assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
    assert repr(ec) == repr(tc)


def test_dependent_constraints():
    for C in (TD.constraints, ED.constraints):
        assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
        with pytest.raises(ValueError):
            C.dependent.check(0)
        with pytest.raises(NotImplementedError):
            C.dependent.event_dim
        assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1
    assert ED.constraints.is_dependent(ED.Uniform.support)


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registry_matches_torch(name, registry):
    make, _ = CONSTRAINTS[name]
    tc, ec = make(TD.constraints), make(ED.constraints)
    treg, ereg = getattr(TD, registry), getattr(ED, registry)
    try:
        tt = treg(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ereg(ec)
        return
    et = ereg(ec)
    assert repr(et).replace(" ", "") == repr(tt).replace(" ", "")
    shape = tuple(tt.inverse_shape((2, 3) if tc.event_dim < 2 else (2, 3, 3)))
    if name in ("cat",):
        shape = (3,)
    if name in ("stack",):
        shape = (2, 2)
    x = RNG.standard_normal(shape)
    ty, ey = tt(torch.tensor(x)), et(ember.tensor(x))
    close(ey, ty, rtol=1e-6, atol=1e-8)
    assert bool(ec.check(ey).all())


def test_transform_base_class_like_torch():
    for D in (TD, ED):
        t = D.Transform()
        for fn in (lambda: t(1), lambda: t.inv(1), lambda: t.log_abs_det_jacobian(1, 1),
                   lambda: t.sign):
            with pytest.raises(NotImplementedError):
                fn()
        assert t.bijective is False and repr(t) == "Transform()"
        assert t.with_cache(1)._cache_size == 1
        assert t.inv.inv is t
