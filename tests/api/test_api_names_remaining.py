"""The last counted names that no other test calls by name, each against torch: 3-d and
1-d pooling modules, LPPool, ConvTranspose3d, InstanceNorm3d, ZeroPad3d, the RNN base
classes, the `*_with_indices` poolings, the in-place activations of nn.functional, softsign,
tanhshrink, the legacy upsample functions, multi_head_attention_forward, the top-level
dropout variants, grid_sampler_2d, the storage classes, autocast's state functions,
interop threads, lr_scheduler's module names and the utils.data datasets."""
import bisect
import warnings

import numpy as np
import pytest
import torch

import ember


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    return x.detach().numpy() if hasattr(x, "detach") else x


def both(fn, rtol=1e-5, atol=1e-6):
    """fn(lib) on torch and ember: equal results (arrays, or tuples of them)."""
    t, e = fn(torch), fn(ember)
    tn, en = _np(t), _np(e)
    if isinstance(tn, list):
        assert len(tn) == len(en)
        for a, b in zip(en, tn):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(en, tn, rtol=rtol, atol=atol)
    return t, e


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _same_weights(tm, em):
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.AdaptiveAvgPool3d((2, 1, 3)), (1, 2, 4, 5, 6)),
    (lambda nn: nn.AdaptiveMaxPool1d(3), (2, 3, 7)),
    (lambda nn: nn.AdaptiveMaxPool3d(2), (1, 2, 4, 4, 5)),
    (lambda nn: nn.AvgPool3d(2, stride=1), (1, 2, 4, 4, 4)),
    (lambda nn: nn.MaxPool3d(2), (1, 2, 4, 4, 4)),
    (lambda nn: nn.LPPool1d(2, 3), (2, 3, 9)),
    (lambda nn: nn.LPPool2d(3, 2), (1, 2, 6, 6)),
    (lambda nn: nn.LPPool3d(2, 2), (1, 2, 4, 4, 4)),
    (lambda nn: nn.ZeroPad3d((1, 0, 2, 1, 0, 1)), (1, 2, 3, 3, 3)),
], ids=["AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool3d", "AvgPool3d",
        "MaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "ZeroPad3d"])
def test_parameterless_modules(make, shape):
    x = np.abs(_x(shape)) + 0.1      # (LPPool of negatives with an odd p is NaN in both)
    both(lambda lib: make(lib.nn)(lib.from_numpy(x.copy())))


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1, output_padding=1),
     (1, 2, 3, 3, 3)),
    (lambda nn: nn.InstanceNorm3d(2, affine=True), (2, 2, 3, 3, 3)),
], ids=["ConvTranspose3d", "InstanceNorm3d"])
def test_modules_with_weights(make, shape):
    torch.manual_seed(0)
    tm, em = make(torch.nn), make(ember.nn)
    _same_weights(tm, em)
    x = _x(shape)
    tx, ex = torch.from_numpy(x.copy()).requires_grad_(), ember.from_numpy(x.copy())
    ex.requires_grad_()
    ty, ey = tm(tx), em(ex)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    ty.sum().backward()
    ey.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_max_unpool1d_inverts_max_pool1d():
    x = _x((1, 2, 8))

    def f(lib):
        pool, unpool = lib.nn.MaxPool1d(2, return_indices=True), lib.nn.MaxUnpool1d(2)
        y, idx = pool(lib.from_numpy(x.copy()))
        return unpool(y, idx)
    both(f)


def test_rnn_base_classes():
    for lib in (torch, ember):
        assert isinstance(lib.nn.LSTM(3, 4), lib.nn.RNNBase)
        assert isinstance(lib.nn.GRU(3, 4), lib.nn.RNNBase)
        assert isinstance(lib.nn.GRUCell(3, 4), lib.nn.RNNCellBase)
        assert isinstance(lib.nn.LSTMCell(3, 4), lib.nn.RNNCellBase)
        assert not isinstance(lib.nn.Linear(3, 4), lib.nn.RNNBase)


@pytest.mark.parametrize("name,shape,size", [
    ("adaptive_max_pool1d_with_indices", (2, 3, 7), 3),
    ("adaptive_max_pool2d_with_indices", (1, 2, 5, 7), (2, 3)),
    ("adaptive_max_pool3d_with_indices", (1, 2, 4, 4, 5), 2)])
def test_with_indices_poolings(name, shape, size):
    x = _x(shape)
    t, e = both(lambda lib: getattr(lib.nn.functional, name)(lib.from_numpy(x.copy()), size))
    assert str(e[1].dtype) == "ember.int64" and t[1].dtype == torch.int64


@pytest.mark.parametrize("name,args", [("elu_", ()), ("hardtanh_", (-0.5, 0.5)),
                                       ("leaky_relu_", (0.2,)), ("threshold_", (0.1, -3.0))])
def test_inplace_activations(name, args):
    x = _x((3, 4))

    def f(lib):
        t = lib.from_numpy(x.copy())
        r = getattr(lib.nn.functional, name)(t, *args)
        assert r is t
        return t
    both(f)


@pytest.mark.parametrize("name", ["softsign", "tanhshrink"])
def test_softsign_tanhshrink_with_grads(name):
    x = _x((3, 4))

    def f(lib):
        t = lib.from_numpy(x.copy()).requires_grad_()
        y = getattr(lib.nn.functional, name)(t)
        (g,) = lib.autograd.grad(y.sum(), t)
        return y, g
    both(f)


def test_legacy_upsample_functions():
    x = _x((1, 2, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda lib: lib.nn.functional.upsample(lib.from_numpy(x.copy()), scale_factor=2))
        both(lambda lib: lib.nn.functional.upsample_nearest(lib.from_numpy(x.copy()),
                                                            size=(5, 7)))
        both(lambda lib: lib.nn.functional.upsample_bilinear(lib.from_numpy(x.copy()),
                                                             scale_factor=2))


def test_multi_head_attention_forward_matches_the_module():
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2)
    em = ember.nn.MultiheadAttention(8, 2)
    _same_weights(tm, em)
    q = _x((5, 2, 8))

    def f(lib, m):
        x = lib.from_numpy(q.copy())
        return lib.nn.functional.multi_head_attention_forward(
            x, x, x, 8, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
            m.out_proj.weight, m.out_proj.bias, training=False)
    t, e = f(torch, tm), f(ember, em)
    np.testing.assert_allclose(e[0].detach().numpy(), t[0].detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(e[1].detach().numpy(), t[1].detach().numpy(), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("name", ["alpha_dropout_", "feature_alpha_dropout_",
                                  "feature_dropout_", "threshold_"])
def test_toplevel_inplace_dropouts_and_threshold(name):
    x = _x((2, 3, 4))
    args = (0.5, False) if "dropout" in name else (0.0, -1.0)    # train=False: identity

    def f(lib):
        t = lib.from_numpy(x.copy())
        r = getattr(lib, name)(t, *args)
        assert r is t
        return t
    both(f)


@pytest.mark.parametrize("nd", [2])      # (ember's grid_sample is 2-d only: no grid_sampler_3d)
def test_grid_samplers(nd):
    shape = (1, 2) + (4,) * nd
    x = _x(shape)
    grid = np.random.default_rng(1).uniform(-1, 1, (1,) + (3,) * nd + (nd,)).astype(np.float32)
    fn = f"grid_sampler_{nd}d"
    for mode in (0, 1):             # bilinear, nearest
        both(lambda lib: getattr(lib, fn)(lib.from_numpy(x.copy()), lib.from_numpy(grid.copy()),
                                          mode, 0, False))


def test_storage_classes_and_is_tensor():
    for name, dt in [("BFloat16Storage", "bfloat16"), ("ByteStorage", "uint8"),
                     ("CharStorage", "int8"), ("ComplexDoubleStorage", "complex128"),
                     ("ComplexFloatStorage", "complex64"), ("HalfStorage", "float16"),
                     ("IntStorage", "int32"), ("ShortStorage", "int16")]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts, es = getattr(torch, name)(3), getattr(ember, name)(3)
            assert len(ts) == len(es) == 3
            assert str(es.dtype) == "ember." + dt and str(ts.dtype) == "torch." + dt
            t = getattr(torch, dt.replace("uint8", "uint8"))
            assert isinstance(torch.ones(2, dtype=t).storage(), getattr(torch, name))
            assert isinstance(ember.ones(2, dtype=getattr(ember, dt)).storage(),
                              getattr(ember, name))
    for lib in (torch, ember):
        assert lib.UntypedStorage(8).nbytes() == 8 and len(lib.UntypedStorage()) == 0
        assert lib.UntypedStorage([1, 2, 3]).nbytes() == 3
        assert lib.is_tensor(lib.ones(1)) and not lib.is_tensor([1.0])
        assert str(lib.sparse_bsr).endswith("sparse_bsr")
        assert str(lib.sparse_bsc).endswith("sparse_bsc")


def test_autocast_state_functions_and_interop_threads():
    for lib in (torch, ember):
        assert lib.is_autocast_cpu_enabled() is False
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_enabled("cpu") is True
        lib.set_autocast_dtype("cpu", lib.float16)
        assert lib.get_autocast_dtype("cpu") == lib.float16
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        lib.set_autocast_enabled("cpu", False)
        lib.clear_autocast_cache()
        assert lib.is_autocast_enabled("cpu") is False
        assert isinstance(lib.get_num_interop_threads(), int)
        assert lib.get_num_interop_threads() >= 1


def test_lr_scheduler_module_names():
    import ember.optim.lr_scheduler as E
    import torch.optim.lr_scheduler as T
    assert E.bisect_right is T.bisect_right is bisect.bisect_right
    assert E.EPOCH_DEPRECATION_WARNING == T.EPOCH_DEPRECATION_WARNING

    class Halving(E.LRScheduler):        # the documented base: subclasses give get_lr
        def get_lr(self):
            return [g["lr"] * 0.5 for g in self.optimizer.param_groups]

    class THalving(T.LRScheduler):
        def get_lr(self):
            return [g["lr"] * 0.5 for g in self.optimizer.param_groups]
    lrs = []
    for lib, cls in ((ember, Halving), (torch, THalving)):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        s = cls(opt)
        seen = []
        for _ in range(3):
            opt.step()
            s.step()
            seen.append(s.get_last_lr()[0])
        lrs.append(seen)
    assert lrs[0] == lrs[1]


def test_utils_data_datasets():
    for lib in (torch, ember):
        D = lib.utils.data
        a = D.TensorDataset(lib.arange(3.0))
        b = D.TensorDataset(lib.arange(10.0, 12.0))
        cat = D.ConcatDataset([a, b])
        assert len(cat) == 5 and float(cat[3][0]) == 10.0 and float(cat[-1][0]) == 11.0

        class It(D.IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n))
        assert list(D.ChainDataset([It(2), It(3)])) == [0, 1, 0, 1, 2]
        st = D.StackDataset(a, D.TensorDataset(lib.arange(5.0, 8.0)))
        assert len(st) == 3 and float(st[1][1][0]) == 6.0
        st2 = D.StackDataset(x=a, y=a)
        assert set(st2[0]) == {"x", "y"}

        class Evens(D.Sampler):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(0, self.n, 2))

            def __len__(self):
                return (self.n + 1) // 2
        loader = D.DataLoader(D.TensorDataset(lib.arange(6.0)), sampler=Evens(6), batch_size=2)
        assert [b[0].tolist() for b in loader] == [[0.0, 2.0], [4.0]]


@pytest.mark.parametrize("name,shape,args", [("lp_pool1d", (2, 3, 9), (2.0, 3)),
                                             ("lp_pool2d", (1, 2, 6, 6), (3.0, 2)),
                                             ("lp_pool3d", (1, 2, 4, 4, 4), (2.0, 2))])
def test_lp_pool_functions(name, shape, args):
    x = np.abs(_x(shape)) + 0.1
    both(lambda lib: getattr(lib.nn.functional, name)(lib.from_numpy(x.copy()), *args))


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pools_with_given_samples(nd):
    """With `_random_samples` given, the fractional poolings are deterministic: values and
    indices equal torch's, functions and the 3-d module alike."""
    x = _x((1, 2) + (7,) * nd)
    s = np.random.default_rng(2).uniform(0, 1, (1, 2, nd)).astype(np.float32)
    f = f"fractional_max_pool{nd}d"
    both(lambda lib: getattr(lib.nn.functional, f)(
        lib.from_numpy(x.copy()), 2, output_size=3, _random_samples=lib.from_numpy(s.copy())))
    t, e = both(lambda lib: getattr(lib.nn.functional, f + "_with_indices")(
        lib.from_numpy(x.copy()), 2, output_size=3, _random_samples=lib.from_numpy(s.copy())))
    if nd == 3:
        both(lambda lib: lib.nn.FractionalMaxPool3d(2, output_size=3, _random_samples=(
            lib.from_numpy(s.copy())))(lib.from_numpy(x.copy())))


def test_dropout3d():
    x = _x((2, 3, 2, 2, 2)) + 5.0
    both(lambda lib: lib.nn.functional.dropout3d(lib.from_numpy(x.copy()), 0.5,
                                                 training=False))
    for lib in (torch, ember):        # training: whole channels zeroed, the rest scaled by 2
        lib.manual_seed(0)
        y = lib.nn.functional.dropout3d(lib.from_numpy(x.copy()), 0.5).numpy()
        per_channel = y.reshape(2, 3, -1)
        kept = np.abs(per_channel).sum(-1) > 0       # (x > 0: a kept channel has no zero)
        assert (per_channel[~kept] == 0).all() and (per_channel[kept] != 0).all()
        np.testing.assert_allclose(per_channel[kept], 2 * x.reshape(2, 3, -1)[kept], rtol=1e-6)


def test_toplevel_leftovers():
    x = np.abs(_x((4,))) + 1.5
    both(lambda lib: (lambda t: (lib.arccosh_(t), t)[1])(lib.from_numpy(x.copy())))
    for lib in (torch, ember):
        assert lib.BFloat16Tensor(2).dtype == lib.bfloat16
        assert isinstance(lib.ones(1, dtype=lib.bfloat16), lib.Tensor)
        lib.set_autocast_cpu_enabled(True)
        assert lib.is_autocast_cpu_enabled() is True
        lib.set_autocast_cpu_enabled(False)
        assert lib.is_autocast_cpu_enabled() is False
        # (set_num_interop_threads is left out: torch refuses it once any parallel work
        # ran in the process, which the rest of the suite has done)


def test_set_num_interop_threads_in_a_fresh_process():
    """torch takes set_num_interop_threads only before any parallel work, so each library
    is asked in a process of its own."""
    import subprocess
    import sys
    code = ("import {m}; {m}.set_num_interop_threads(3); print({m}.get_num_interop_threads())"
            "; {m}.ones(1000, 1000).sum()")
    out = [subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True,
                          text=True, timeout=120).stdout.split() for m in ("torch", "ember")]
    assert out[0] == out[1] == ["3"]
