"""torch's top-level forms of nn.functional ops and in-place methods (ember/toplevel_forms.py),
and the in-place / method forms of ember/ops/misc_*.py, against torch: same values, dtypes,
shapes, gradients and exception types, called with torch's top-level signatures (embedding
takes the weight first, batch_norm weight and bias first, losses an integer `reduction`)."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)


def arr(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape)


def both(a, grad=False):
    t = torch.from_numpy(np.array(a))
    e = ember.from_numpy(np.array(a))
    if grad:
        t.requires_grad_()
        e.requires_grad_()
    return t, e


def close(e, t, tol=1e-6):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, tol)
        return
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


def check(name, *arrays, grad=True, extra=(), kwargs=None, tol=1e-6, nograd=()):
    """torch.<name>(*tensors, *extra, **kwargs) vs ember's: result and the gradients of the
    inputs (all floating ones but those at the positions `nograd`)."""
    kwargs = kwargs or {}
    pairs = [both(a, grad and np.asarray(a).dtype.kind == "f" and k not in nograd)
             for k, a in enumerate(arrays)]
    t = getattr(torch, name)(*[p[0] for p in pairs], *extra, **kwargs)
    e = getattr(ember, name)(*[p[1] for p in pairs], *extra, **kwargs)
    close(e, t, tol)
    tout = t[0] if isinstance(t, tuple) else t
    eout = e[0] if isinstance(e, tuple) else e
    if grad and tout.requires_grad:
        g = RNG.standard_normal(tuple(tout.shape))
        tout.backward(torch.from_numpy(g))
        eout.backward(ember.from_numpy(g.copy()))
        for (tt, ee) in pairs:
            if tt.requires_grad:
                close(ee.grad, tt.grad, tol)


CASES = [
    ("conv1d", (arr(2, 3, 7), arr(4, 3, 3)), (None, 2, 1)),
    ("conv2d", (arr(1, 2, 5, 5), arr(3, 2, 3, 3), arr(3)), (1, 1)),
    ("conv3d", (arr(1, 1, 4, 4, 4), arr(2, 1, 2, 2, 2)), ()),
    ("conv_transpose1d", (arr(1, 2, 5), arr(2, 3, 3)), (None, 2)),
    ("conv_transpose2d", (arr(1, 2, 3, 3), arr(2, 1, 2, 2)), ()),
    ("conv_tbc", (arr(6, 2, 3), arr(3, 3, 4), arr(4)), (1,)),
    ("layer_norm", (arr(2, 3, 4),), ((4,),)),
    ("group_norm", (arr(2, 4, 3),), (2,)),
    ("rms_norm", (arr(2, 5),), ((5,),)),
    ("pixel_shuffle", (arr(1, 8, 2, 2),), (2,)),
    ("pixel_unshuffle", (arr(1, 2, 4, 4),), (2,)),
    ("channel_shuffle", (arr(2, 6, 3),), (3,)),
    ("max_pool1d", (arr(2, 3, 8),), (3, 2, 1)),
    ("max_pool2d", (arr(1, 2, 6, 6),), (2,)),
    ("max_pool3d", (arr(1, 1, 4, 4, 4),), (2,)),
    ("max_pool1d_with_indices", (arr(1, 2, 7),), (2,)),
    ("avg_pool1d", (arr(2, 3, 8),), (3, 2, 1, True, False)),
    ("adaptive_avg_pool1d", (arr(2, 3, 7),), (3,)),
    ("adaptive_max_pool1d", (arr(2, 3, 7),), (3,)),
    ("celu", (arr(3, 4),), (0.7,)),
    ("selu", (arr(3, 4),), ()),
    ("threshold", (arr(3, 4),), (0.5, -1.0)),
    ("hardshrink", (arr(3, 4),), (0.7,)),
    ("prelu", (arr(2, 3, 4), arr(3)), ()),
    ("rrelu", (arr(3, 4),), (0.1, 0.3)),
    ("bilinear", (arr(2, 3), arr(2, 4), arr(5, 3, 4), arr(5)), ()),
    ("cosine_similarity", (arr(3, 4), arr(3, 4)), (1,)),
    ("pairwise_distance", (arr(3, 4), arr(3, 4)), (2.0, 1e-6, True)),
    ("pdist", (arr(4, 3),), (2,)),
    ("pdist", (arr(5, 2),), (1.0,)),
    ("constant_pad_nd", (arr(2, 3),), ((1, 2, 0, 1), 0.5)),
    ("binary_cross_entropy_with_logits", (arr(3, 4), arr(3, 4, lo=0, hi=1)), ()),
    ("kl_div", (arr(3, 4), arr(3, 4, lo=0.1, hi=1)), (2,)),
    ("hinge_embedding_loss", (arr(3, 4), np.sign(arr(3, 4)).astype(np.int64)), (1.0, 1)),
    ("margin_ranking_loss", (arr(4), arr(4), np.sign(arr(4)).astype(np.int64)), (0.2, 2)),
    ("cosine_embedding_loss", (arr(3, 4), arr(3, 4), np.sign(arr(3)).astype(np.int64)),
     (0.1,)),
    ("triplet_margin_loss", (arr(3, 4), arr(3, 4), arr(3, 4)), (1.0, 2, 1e-6, True, 1)),
    ("poisson_nll_loss", (arr(3, 4), arr(3, 4, lo=0, hi=3)), (True, False, 1e-8, 1)),
    ("rnn_tanh_cell", (arr(2, 3), arr(2, 4), arr(4, 3), arr(4, 4), arr(4), arr(4)), ()),
    ("rnn_relu_cell", (arr(2, 3), arr(2, 4), arr(4, 3), arr(4, 4)), ()),
    ("gru_cell", (arr(2, 3), arr(2, 4), arr(12, 3), arr(12, 4), arr(12), arr(12)), ()),
]


@pytest.mark.parametrize("name,arrays,extra", CASES, ids=[c[0] for c in CASES])
def test_functional_forms_match_torch(name, arrays, extra):
    check(name, *arrays, extra=extra)


def test_forms_with_inputs_torch_does_not_differentiate():
    # torch has no derivative for native_channel_shuffle, nor for bce's weight/pos_weight
    check("native_channel_shuffle", arr(1, 4, 2, 2), extra=(2,), grad=False)
    check("binary_cross_entropy_with_logits", arr(3, 4), arr(3, 4, lo=0, hi=1), arr(4),
          arr(4, lo=0.5, hi=2), extra=(1,), nograd=(2, 3))
    t, e = both(arr(2, 4, 3), grad=True)
    wt, we = both(arr(4), grad=True)
    close(ember.group_norm(e, 2, we, we, 1e-5, True), torch.group_norm(t, 2, wt, wt, 1e-5, True))
    close(ember.rms_norm(e, (3,), ember.ones(3, dtype=ember.float64)),
          torch.rms_norm(t, (3,), torch.ones(3, dtype=torch.float64)))


def test_lstm_cell_and_embedding_and_norms():
    x, h, c = arr(2, 3), arr(2, 4), arr(2, 4)
    w_ih, w_hh, b = arr(16, 3), arr(16, 4), arr(16)
    t = torch.lstm_cell(*[torch.from_numpy(a) for a in (x,)], [torch.from_numpy(h),
                        torch.from_numpy(c)], *[torch.from_numpy(a) for a in (w_ih, w_hh, b, b)])
    e = ember.lstm_cell(ember.from_numpy(x), [ember.from_numpy(h), ember.from_numpy(c)],
                        *[ember.from_numpy(a) for a in (w_ih, w_hh, b, b)])
    close(e, t)
    w = arr(5, 3)
    idx = np.array([[0, 2], [4, 2]])
    check("embedding", w, idx)
    check("embedding", w, idx, extra=(2,))
    x, wt, bs, rm, rv = arr(2, 3, 4), arr(3), arr(3), arr(3), arr(3, lo=0.5, hi=2)
    for training in (False, True):
        pt = [torch.from_numpy(a.copy()) for a in (x, wt, bs, rm, rv)]
        pe = [ember.from_numpy(a.copy()) for a in (x, wt, bs, rm, rv)]
        close(ember.batch_norm(*pe, training, 0.1, 1e-5, True),
              torch.batch_norm(*pt, training, 0.1, 1e-5, True))
        close(pe[3], pt[3])            # the running statistics update alike
        close(ember.instance_norm(pe[0], pe[1], pe[2], None, None, True, 0.1, 1e-5, True),
              torch.instance_norm(pt[0], pt[1], pt[2], None, None, True, 0.1, 1e-5, True))


def test_dropout_forms():
    a = arr(50, 40)
    t, e = both(a)
    for name in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
        close(getattr(ember, name)(e, 0.3, False), getattr(torch, name)(t, 0.3, False))
        r = getattr(ember, name)(e.reshape(50, 40, 1), 0.0, True)
        close(r, getattr(torch, name)(t.reshape(50, 40, 1), 0.0, True))
    r = ember.dropout(e, 0.5, True)
    kept = (r.numpy() != 0).mean()
    assert 0.4 < kept < 0.6 and np.allclose(r.numpy()[r.numpy() != 0],
                                            2 * a[r.numpy() != 0])
    x = ember.from_numpy(a.copy())
    assert ember.dropout_(x, 0.5, True) is x


def test_rrelu_training_slopes_are_in_range():
    e = ember.from_numpy(-np.ones(1000))
    r = ember.rrelu(e, 0.1, 0.3, True).numpy()
    assert (r <= -0.1 + 1e-12).all() and (r >= -0.3 - 1e-12).all() and r.std() > 0.01


def test_grid_forms():
    theta = arr(2, 2, 3)
    tt, et = both(theta)
    close(ember.affine_grid_generator(et, (2, 1, 3, 4), False),
          torch.affine_grid_generator(tt, (2, 1, 3, 4), False))
    x, g = arr(1, 2, 4, 4), arr(1, 3, 3, 2, lo=-1, hi=1)
    for mode in (0, 1):
        for pad in (0, 1, 2):
            close(ember.grid_sampler(ember.from_numpy(x), ember.from_numpy(g), mode, pad, True),
                  torch.grid_sampler(torch.from_numpy(x), torch.from_numpy(g), mode, pad, True))


def test_reduction_enum_errors():
    t, e = both(arr(3))
    with pytest.raises(TypeError):
        torch.kl_div(t, t, "mean")
    with pytest.raises(TypeError):
        ember.kl_div(e, e, "mean")


INPLACE = ["abs_", "acos_", "asin_", "atan_", "ceil_", "cos_", "cosh_", "erf_", "erfc_",
           "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "i0_", "log10_", "log1p_",
           "log2_", "log_", "neg_", "negative_", "reciprocal_", "relu_", "round_", "rsqrt_",
           "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
           "trunc_", "deg2rad_", "rad2deg_", "arccos_", "arcsin_", "arctan_", "logit_",
           "zero_", "arcsinh_", "asinh_", "atanh_", "arctanh_", "nan_to_num_"]


@pytest.mark.parametrize("name", INPLACE)
def test_top_level_inplace_functions(name):
    a = arr(3, 4, lo=0.1, hi=0.9)
    t, e = both(a)
    rt, re_ = getattr(torch, name)(t), getattr(ember, name)(e)
    assert re_ is e and rt is t
    close(e, t)


def test_top_level_inplace_with_arguments():
    a = arr(3, 4)
    for name, args in (("clamp_", (-0.5, 0.5)), ("clip_", (-1, 1)), ("clamp_min_", (0.1,)),
                       ("clamp_max_", (0.2,)), ("fill_", (3.0,)), ("xlogy_", (2.0,))):
        t, e = both(a)
        getattr(torch, name)(t, *args)
        getattr(ember, name)(e, *args)
        close(e, t)
    ti, ei = both(np.array([4, 6, 9]))
    for name in ("gcd_", "lcm_"):
        getattr(torch, name)(ti, torch.tensor([6, 4, 3]))
        getattr(ember, name)(ei, ember.tensor([6, 4, 3]))
        close(ei, ti)
    t, e = both(np.array([1.0, 2.0]))
    torch.ldexp_(t, torch.tensor([2, -1]))
    ember.ldexp_(e, ember.tensor([2, -1]))
    close(e, t)
    assert ember.is_signed(e) == torch.is_signed(t) and \
        ember.is_inference(e) == torch.is_inference(t)
    with pytest.raises(TypeError):
        ember.abs_(3.0)


def test_inplace_methods_of_misc_ops():
    a, m1, m2 = arr(2, 3), arr(2, 4), arr(4, 3)
    for name, args in (("addmm_", (m1, m2)), ("addr_", (arr(2), arr(3)))):
        t, e = both(a)
        getattr(t, name)(*[torch.from_numpy(x) for x in args], beta=0.5, alpha=2)
        getattr(e, name)(*[ember.from_numpy(x) for x in args], beta=0.5, alpha=2)
        close(e, t)
    t, e = both(arr(2))
    mat, vec = arr(2, 3), arr(3)
    t.addmv_(torch.from_numpy(mat), torch.from_numpy(vec), alpha=2)
    e.addmv_(ember.from_numpy(mat), ember.from_numpy(vec), alpha=2)
    close(e, t)
    t, e = both(arr(2))
    torch.addmv_(t, torch.from_numpy(mat), torch.from_numpy(vec))
    ember.addmv_(e, ember.from_numpy(mat), ember.from_numpy(vec))
    close(e, t)
    b1, b2 = arr(5, 2, 4), arr(5, 4, 3)
    for name in ("addbmm_", "baddbmm_"):
        base = a if name == "addbmm_" else arr(5, 2, 3)
        t, e = both(base)
        getattr(t, name)(torch.from_numpy(b1), torch.from_numpy(b2))
        getattr(e, name)(ember.from_numpy(b1), ember.from_numpy(b2))
        close(e, t)
    t, e = both(arr(2, 3, 4))
    t.swapaxes_(0, 2), e.swapaxes_(0, 2)
    close(e, t)
    t.swapdims_(1, 0), e.swapdims_(1, 0)
    close(e, t)
    for shape, wrap in (((3, 5), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)):
        t, e = both(np.zeros(shape))
        t.fill_diagonal_(2.0, wrap=wrap)
        e.fill_diagonal_(2.0, wrap=wrap)
        close(e, t)
    t, e = both(np.array([2.0, 3.0]))
    t.float_power_(2), e.float_power_(2)
    close(e, t)
    with pytest.raises(RuntimeError):
        ember.tensor([1.0]).float_power_(2)
    with pytest.raises(RuntimeError):
        torch.tensor([1.0]).float_power_(2)
    t, e = both(arr(3, 4))
    t.renorm_(2, 0, 1.0), e.renorm_(2, 0, 1.0)
    close(e, t)
    t, e = both(np.ones((3, 2)))
    src = arr(3, 2)
    t.index_reduce_(0, torch.tensor([0, 0, 2]), torch.from_numpy(src), "amax")
    e.index_reduce_(0, ember.tensor([0, 0, 2]), ember.from_numpy(src), "amax")
    close(e, t)
    t, e = both(arr(2, 3))
    nt, ne = t.new_empty_strided((2, 3), (1, 2)), e.new_empty_strided((2, 3), (1, 2))
    assert nt.stride() == ne.stride() and nt.dtype == torch.float64 and ne.dtype is ember.float64
    assert ember.tensor([2.0]).is_nonzero() and not ember.tensor([0]).is_nonzero()
    with pytest.raises(RuntimeError):
        ember.tensor([1.0, 2.0]).is_nonzero()


def test_removed_functions_raise_torchs_error():
    a = ember.eye(2)
    for name, args in (("solve", (a, a)), ("lstsq", (a, a)), ("symeig", (a,)), ("eig", (a,)),
                       ("matrix_rank", (a,))):
        with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
            getattr(ember, name)(*args)
        with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
            getattr(torch, name)(*[torch.eye(2) for _ in args])
    with pytest.raises(RuntimeError, match="linalg.solve"):
        a.solve(a)


def test_gradients_of_composites():
    """Gradients of the composite misc functions equal torch's (float64)."""
    x = arr(3, 4)
    for fn in (lambda L, x: L.diff(x, 2, 1), lambda L, x: L.cov(x),
               lambda L, x: L.corrcoef(x), lambda L, x: L.trapezoid(x),
               lambda L, x: L.cumulative_trapezoid(x, dim=0),
               lambda L, x: L.renorm(x, 2, 1, 1.0), lambda L, x: L.block_diag(x, x[:1]),
               lambda L, x: L.inner(x, x), lambda L, x: L.dist(x, x * 2, 3),
               lambda L, x: L.logaddexp(x, x.flip(0)), lambda L, x: L.logaddexp2(x, 1 - x),
               lambda L, x: L.select_scatter(x, x[0] * 3, 0, 1),
               lambda L, x: L.slice_scatter(x, x[:, :2] ** 2, 1, 1, 3),
               lambda L, x: L.diagonal_scatter(x, x[0, :3].exp()),
               lambda L, x: L.index_reduce(x, 0, L.tensor([0, 0, 1]), x * 2, "prod"),
               lambda L, x: L.frexp(x * 10)[0], lambda L, x: L.nuclear_norm(x)):
        t, e = both(x, grad=True)
        rt, re_ = fn(torch, t), fn(ember, e)
        close(re_, rt)
        g = RNG.standard_normal(tuple(rt.shape))
        rt.backward(torch.from_numpy(g))
        re_.backward(ember.from_numpy(g.copy()))
        close(e.grad, t.grad)


def test_as_strided_scatter_gradient():
    """d/dinput is the incoming gradient with the scattered positions zeroed, d/dsrc the
    incoming gradient there. (torch 2.13's backward zeroes the complement instead, for the
    input, so ember is checked against the definition, and torch's values are compared.)"""
    x = ember.zeros(3, 4, dtype=ember.float64, requires_grad=True)
    s = ember.ones(2, dtype=ember.float64, requires_grad=True)
    y = ember.as_strided_scatter(x, s, (2,), (5,), 1)
    close(y, torch.as_strided_scatter(torch.zeros(3, 4, dtype=torch.float64),
                                      torch.ones(2, dtype=torch.float64), (2,), (5,), 1))
    g = np.arange(12.0).reshape(3, 4)
    y.backward(ember.from_numpy(g.copy()))
    expect = g.copy().reshape(-1)
    expect[[1, 6]] = 0
    np.testing.assert_array_equal(x.grad.numpy(), expect.reshape(3, 4))
    np.testing.assert_array_equal(s.grad.numpy(), g.reshape(-1)[[1, 6]])


def test_embedding_renorm_():
    w = arr(5, 3, lo=-3, hi=3)
    t, e = both(w)
    idx = np.array([0, 2, 2, 4])
    rt = torch.embedding_renorm_(t, torch.from_numpy(idx), 1.5, 2.0)
    re_ = ember.embedding_renorm_(e, ember.from_numpy(idx), 1.5, 2.0)
    assert rt is t and re_ is e
    close(e, t)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize("layers,bidir,batch_first,bias", [(1, False, False, True),
                                                           (2, True, True, True),
                                                           (1, True, False, False)])
def test_whole_recurrences(kind, layers, bidir, batch_first, bias):
    torch.manual_seed(0)
    mod = {"LSTM": lambda: torch.nn.LSTM(3, 4, layers, bias, batch_first,
                                         bidirectional=bidir),
           "GRU": lambda: torch.nn.GRU(3, 4, layers, bias, batch_first, bidirectional=bidir),
           "RNN_TANH": lambda: torch.nn.RNN(3, 4, layers, "tanh", bias, batch_first,
                                            bidirectional=bidir),
           "RNN_RELU": lambda: torch.nn.RNN(3, 4, layers, "relu", bias, batch_first,
                                            bidirectional=bidir)}[kind]().double()
    d = 2 if bidir else 1
    x = arr(2, 5, 3) if batch_first else arr(5, 2, 3)
    h0, c0 = arr(layers * d, 2, 4), arr(layers * d, 2, 4)
    tw = [w.detach() for w in mod._flat_weights]
    ew = [ember.from_numpy(w.numpy().copy()).requires_grad_() for w in tw]
    tw = [w.clone().requires_grad_() for w in tw]
    fn = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}[kind]
    th = (torch.from_numpy(h0), torch.from_numpy(c0)) if kind == "LSTM" else torch.from_numpy(h0)
    eh = (ember.from_numpy(h0), ember.from_numpy(c0)) if kind == "LSTM" else ember.from_numpy(h0)
    rt = getattr(torch, fn)(torch.from_numpy(x), th, tw, bias, layers, 0.0, False, bidir,
                            batch_first)
    re_ = getattr(ember, fn)(ember.from_numpy(x), eh, ew, bias, layers, 0.0, False, bidir,
                             batch_first)
    close(re_, rt)
    rt[0].sum().backward()
    re_[0].sum().backward()
    for a, b in zip(ew, tw):
        close(a.grad, b.grad)


def test_fork_wait_and_as_strided_():
    for lib in (torch, ember):
        f = lib.fork(lambda a, k=1: a * 2 + k, lib.ones(2), k=3)
        assert lib.wait(f).tolist() == [5.0, 5.0] and f.wait().tolist() == [5.0, 5.0]
        x = lib.arange(6.0)
        y = x.view(2, 3)
        r = y.as_strided_((3,), (2,), 1)
        assert r is y and y.tolist() == [1.0, 3.0, 5.0] and y.stride() == (2,)
        assert y.storage_offset() == 1
        x[3] = 30.0
        assert y.tolist() == [1.0, 30.0, 5.0]
        z = lib.arange(4.0)
        lib.as_strided_(z, (2,), (2,))
        assert z.tolist() == [0.0, 2.0]
