"""Meta tensors through the ops added with complex/fft/special/linalg/distributions, checked
against torch's own meta device (torch's cpu build has one): the results' shapes and dtypes
(and strides where ember's cpu layout is torch's: LAPACK's column-major factors), meta
backward through the fft kernel ops, and samplers that draw nothing.
(tests/opinfo/test_generated_meta.py compares every op's meta result with ember's cpu one,
strides included.)
"""
import pytest
import torch

import ember


def _pair(shape, dtype="float32", perm=None):
    t = torch.empty(*shape, dtype=getattr(torch, dtype), device="meta")
    e = ember.empty(*shape, dtype=getattr(ember, dtype), device="meta")
    if perm is not None:
        t, e = t.permute(*perm), e.permute(*perm)
    return t, e


def _same(t, e, strides=False):
    if isinstance(t, torch.Tensor):
        assert e.is_meta, e.device
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        if strides and t.numel() > 1:
            assert [s for s, n in zip(e.stride(), e.shape) if n > 1] == \
                [s for s, n in zip(t.stride(), t.shape) if n > 1], (e.stride(), t.stride())
    else:
        assert len(t) == len(e)
        for a, b in zip(t, e):
            _same(a, b, strides)


@pytest.mark.parametrize("name, call", [
    ("fft", lambda m, x: m.fft.fft(x, n=6)),
    ("rfft2", lambda m, x: m.fft.rfft2(x)),
    ("irfftn", lambda m, x: m.fft.irfftn(x.to(m.complex64), s=(3, 8))),
    ("hfft", lambda m, x: m.fft.hfft(x.to(m.complex64))),
    ("ihfft", lambda m, x: m.fft.ihfft(x, dim=0)),
    ("vector_norm", lambda m, x: m.linalg.vector_norm(x, 3.0, (0, 2), True)),
    ("norm", lambda m, x: m.norm(x, dim=1)),
    ("matrix_norm_nuc", lambda m, x: m.linalg.matrix_norm(x, "nuc")),
    ("chebyshev_t", lambda m, x: m.special.chebyshev_polynomial_t(x, 3)),
    ("frexp", lambda m, x: m.frexp(x)),
    ("isin", lambda m, x: m.isin(x, x[0])),
])
def test_meta_matches_torch_meta(name, call):
    t, e = _pair((2, 3, 4), perm=(2, 0, 1))
    _same(call(torch, t), call(ember, e))


@pytest.mark.parametrize("name, call, strides", [
    ("lu_factor", lambda m, A: m.linalg.lu_factor(A), True),
    ("lu_factor_ex", lambda m, A: m.linalg.lu_factor_ex(A), True),
    ("lu", lambda m, A: m.linalg.lu(A), False),
    ("cholesky_ex", lambda m, A: m.linalg.cholesky_ex(A), False),
    ("ldl_factor", lambda m, A: m.linalg.ldl_factor(A), False),
    ("solve_triangular", lambda m, A: m.linalg.solve_triangular(A, A[..., :2], upper=True),
     False),
    ("matrix_exp", lambda m, A: m.linalg.matrix_exp(A), False),
])
def test_linalg_meta_matches_torch_meta(name, call, strides):
    t, e = _pair((2, 3, 3))
    _same(call(torch, t), call(ember, e), strides)


def test_meta_backward_through_fft():
    # (r2c's gradient is the real part of a c2c: a view, so the engine copies it into .grad;
    # the second backward accumulates into the meta .grad)
    x = ember.empty(6, 4, device="meta", requires_grad=True)
    t = torch.empty(6, 4, device="meta", requires_grad=True)
    for _ in range(2):
        ember.fft.rfft(x.t()).abs().sum().backward()
        torch.fft.rfft(t.t()).abs().sum().backward()
        _same(t.grad, x.grad, strides=True)


def test_meta_samplers_draw_nothing():
    g = ember.Generator().manual_seed(0)
    state = g.get_state()
    rate = ember.empty(3, 2, device="meta")
    for r in (ember.poisson(rate, generator=g), ember._standard_gamma(rate, generator=g)):
        _same(torch.poisson(torch.empty(3, 2, device="meta")), r)
    assert ember.equal(g.get_state(), state)
