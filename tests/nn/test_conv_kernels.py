"""The C kernels of the eager convolutions and max pooling (ember/nn/conv_kernels.py): the
same values as the NumPy path they replace (run with ember.ops.native.enabled off) and as
PyTorch, for strides, padding (asymmetric 'same' too), dilation, groups, 1-D and 2-D,
float32/float64, NaN and ties in max pooling; gradcheck on both paths; the kept im2col
matrix; no provider and EMBER_EAGER_KERNELS=0 fall back to NumPy."""
import os
import shutil
import subprocess
import sys

import numpy as np
import threadpoolctl
import pytest
import torch

import ember
import ember.nn.functional as EF
from ember.ops import native
from ember.nn import conv_kernels
from tests.nn._nn_common import E, close

HAVE_CC = shutil.which(os.environ.get("CC") or "cc") is not None


@pytest.fixture
def numpy_path():
    """Run the body with the C kernels off."""
    native.enabled = False
    try:
        yield
    finally:
        native.enabled = True


def _both(fn, *arrays, seed=0):
    """fn's output and input gradients on the C path and on the NumPy path."""
    results = []
    for on in (True, False):
        native.enabled = on
        try:
            xs = [ember.tensor(a).requires_grad_() for a in arrays]
            out = fn(*xs)
            g = np.random.default_rng(seed).standard_normal(tuple(out.shape))
            out.backward(ember.tensor(g.astype(arrays[0].dtype)))
            results.append([out.detach().numpy()] + [x.grad.numpy() for x in xs])
        finally:
            native.enabled = True
    return results


def _same(c, n, dtype):
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(c, n):
        np.testing.assert_allclose(a, b, **tol)


def test_kernels_build_and_run():
    if not HAVE_CC:
        pytest.skip("no C compiler: the NumPy path is the one tested")
    assert conv_kernels.LIB.function("im2col2d_f32") is not None, conv_kernels.LIB.broken
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    cols = conv_kernels.im2col(a, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (4, 5))
    assert cols.shape == (27, 40)
    assert cols[4].reshape(2, 4, 5).tolist() == a[:, 0].tolist()     # the centre tap


CONVS = [
    # (fn, x shape, w shape, kwargs)
    (EF.conv2d, (2, 3, 7, 6), (4, 3, 3, 3), dict(padding=1)),
    (EF.conv2d, (2, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 3), padding=(1, 2), dilation=(2, 1),
                                               groups=2)),
    (EF.conv2d, (1, 2, 6, 7), (3, 2, 2, 4), dict(padding="same", dilation=(2, 1))),
    (EF.conv2d, (3, 2, 5, 5), (2, 2, 1, 1), dict()),
    (EF.conv2d, (2, 2, 5, 4), (2, 2, 5, 4), dict(padding=(0, 1), stride=3)),
    (EF.conv1d, (2, 4, 11), (6, 2, 3), dict(stride=2, padding=2, dilation=2, groups=2)),
    (EF.conv1d, (3, 2, 8), (3, 2, 4), dict(padding="same")),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,xs,ws,kw", CONVS)
def test_conv_c_path_equals_numpy_and_torch(fn, xs, ws, kw, dtype):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    c, n = _both(lambda x, w, b: fn(x, w, b, **kw), x, w, b)
    _same(c, n, dtype)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    tout = getattr(torch.nn.functional, fn.__name__)(tx, tw, tb, **kw)
    tout.backward(torch.tensor(np.random.default_rng(0).standard_normal(tuple(tout.shape))
                               .astype(dtype)))
    tol = (1e-4, 1e-5) if dtype == np.float32 else None
    for got, want in zip(c, (tout, tx.grad, tw.grad, tb.grad)):
        close(ember.tensor(got), want, tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_transpose_c_path_equals_numpy(dtype):
    rng = np.random.default_rng(2)
    x, w = (rng.standard_normal(s).astype(dtype) for s in ((2, 4, 4, 3), (4, 3, 3, 2)))
    c, n = _both(lambda x, w: EF.conv_transpose2d(x, w, stride=2, padding=1, groups=2,
                                                  output_padding=1), x, w)
    _same(c, n, dtype)


POOLS = [
    # (fn, x shape, kwargs)
    (EF.max_pool2d, (2, 3, 8, 8), dict(kernel_size=2)),
    (EF.max_pool2d, (2, 3, 9, 7), dict(kernel_size=(3, 2), stride=(2, 1), padding=1,
                                       dilation=(1, 2))),
    (EF.max_pool2d, (1, 2, 7, 7), dict(kernel_size=3, stride=2, ceil_mode=True)),
    (EF.max_pool2d, (1, 2, 5, 6), dict(kernel_size=3, stride=1, padding=1)),
    (EF.max_pool1d, (2, 3, 10), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    (EF.max_pool1d, (2, 3, 8), dict(kernel_size=2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,xs,kw", POOLS)
def test_max_pool_c_path_equals_numpy_and_torch(fn, xs, kw, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(dtype)
    x.reshape(-1)[::7] = x.reshape(-1)[1::7]         # ties between neighbours
    c, n = _both(lambda x: fn(x, **kw), x)
    _same(c, n, dtype)
    tx = torch.tensor(x, requires_grad=True)
    to, ti = getattr(torch.nn.functional, fn.__name__)(tx, return_indices=True, **kw)
    to.backward(torch.tensor(np.random.default_rng(0).standard_normal(tuple(to.shape))
                             .astype(dtype)))
    close(ember.tensor(c[0]), to)
    close(ember.tensor(c[1]), tx.grad)
    _, ei = fn(ember.tensor(x), return_indices=True, **kw)
    close(ei, ti, what="indices")


def test_max_pool_nan_and_infinite_gradients():
    x = np.random.default_rng(4).standard_normal((1, 2, 6, 6))
    x[0, 0, 1, 1] = x[0, 1, 2, 3] = x[0, 1, 3, 3] = np.nan
    c, n = _both(lambda x: EF.max_pool2d(x, 2), x)
    for a, b in zip(c, n):
        np.testing.assert_array_equal(a, b)
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(tx, 2).sum().backward()
    close(ember.tensor(c[0]), torch.nn.functional.max_pool2d(torch.tensor(x), 2))
    ex = ember.tensor(x).requires_grad_()
    out = EF.max_pool2d(ex, 2)
    out.backward(ember.full(tuple(out.shape), float("inf"), dtype=ember.float64))
    tx.grad = None
    to = torch.nn.functional.max_pool2d(tx, 2)
    to.backward(torch.full(to.shape, float("inf"), dtype=torch.float64))
    close(ex.grad, tx.grad)          # an infinite gradient lands on the max only (no inf * 0)


def test_max_pool_window_outside_the_input():
    # dilation puts the last window wholly in the padding: -inf, as torch and the NumPy path
    x = np.random.default_rng(5).standard_normal((1, 1, 1, 3))
    for on in (True, False):
        native.enabled = on
        try:
            r = EF.max_pool2d(ember.tensor(x), (1, 3), stride=(1, 2), padding=(0, 1),
                              dilation=(1, 2), ceil_mode=True)
        finally:
            native.enabled = True
        t = torch.nn.functional.max_pool2d(torch.tensor(x), (1, 3), stride=(1, 2),
                                           padding=(0, 1), dilation=(1, 2), ceil_mode=True)
        close(r, t)


@pytest.mark.parametrize("on", [True, False])
def test_gradcheck_both_paths(on):
    native.enabled = on
    try:
        rng = np.random.default_rng(6)
        for fn, shapes in (
                (lambda x, w, b: EF.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2),
                                           groups=2), ((2, 4, 5, 6), (4, 2, 2, 3), (4,))),
                (lambda x, w: EF.conv1d(x, w, padding="same"), ((1, 2, 6), (3, 2, 4))),
                (lambda x, w: EF.conv3d(x, w, padding=1), ((1, 1, 2, 3, 2), (2, 1, 2, 2, 2))),
                (lambda x: EF.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True), ((1, 2, 6, 5),)),
                (lambda x: EF.max_pool1d(x, 2), ((2, 2, 6),)),
                (lambda x: EF.avg_pool2d(x, 3, 2, 1, count_include_pad=False), ((1, 2, 5, 6),))):
            xs = tuple(ember.tensor(rng.standard_normal(s)).requires_grad_() for s in shapes)
            assert ember.autograd.gradcheck(fn, xs)
            assert ember.autograd.gradgradcheck(fn, xs)
    finally:
        native.enabled = True


def test_kept_im2col_and_a_second_backward():
    # the weight gradient reuses the forward's im2col matrix once; retain_graph recomputes it
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32)).requires_grad_()
    out = EF.conv2d(x, w, padding=1)
    out.sum().backward(retain_graph=True)
    first = w.grad.numpy().copy()
    w.grad = None
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), first)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    torch.nn.functional.conv2d(torch.tensor(x.numpy()), tw, padding=1).sum().backward()
    close(w.grad, tw.grad, (1e-4, 1e-5))


def test_thread_count_does_not_change_values():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 8, 64, 64)).astype(np.float32)    # big enough for a team
    before = ember.get_num_threads()
    got = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            # BLAS stays at one thread: OpenBLAS's own split changes sgemm's bits on some
            # CPUs (seen on Zen 5); this test is about ember's C kernels' split
            with threadpoolctl.threadpool_limits(1, user_api="blas"):
                xe = ember.tensor(x).requires_grad_()
                out = EF.max_pool2d(EF.conv2d(xe, ember.ones(8, 8, 3, 3), padding=1), 2)
                out.sum().backward()
            got.append((out.detach().numpy(), xe.grad.numpy()))
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


def test_no_provider_falls_back_to_numpy():
    from ember.compiler import eager, threads
    native.set_native_provider(None)
    try:
        assert conv_kernels.LIB.function("im2col2d_f32") is None
        x = torch.randn(2, 3, 5, 5)
        close(EF.max_pool2d(EF.conv2d(E(x), ember.ones(2, 3, 3, 3)), 2),
              torch.nn.functional.max_pool2d(torch.nn.functional.conv2d(
                  x, torch.ones(2, 3, 3, 3)), 2), (1e-5, 1e-5))
    finally:
        native.set_native_provider(eager._build_native, lambda: threads._num_threads)


def test_env_switch_turns_the_kernels_off():
    code = ("import ember, numpy as np; from ember.ops import native; "
            "from ember.nn import conv_kernels as k; "
            "assert native.enabled is False and k.LIB.function('im2col2d_f32') is None; "
            "x = ember.ones(1, 2, 4, 4); "
            "print(float(ember.nn.functional.conv2d(x, ember.ones(1, 2, 3, 3)).sum()))")
    env = dict(os.environ, EMBER_EAGER_KERNELS="0")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert float(res.stdout) == 4 * 18.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_kernel_equals_numpy_and_torch(dtype):
    from ember.ops import native_pointwise
    rng = np.random.default_rng(9)
    x = rng.standard_normal((8, 3, 20, 20)).astype(dtype)     # above MIN_ELEMENTS
    g = rng.standard_normal(x.shape).astype(dtype)
    g.reshape(-1)[:5] = [np.inf, -np.inf, np.nan, np.inf, np.nan]
    x.reshape(-1)[:5] = [1.0, -1.0, 1.0, 0.0, -2.0]        # inf/NaN gradients where masked off
    x.reshape(-1)[5:7] = np.nan                              # a NaN output passes its gradient
    if HAVE_CC:
        assert native_pointwise.threshold_backward(g, np.maximum(x, 0)) is not None
    grads = []
    for on in (True, False):
        native.enabled = on
        try:
            ex = ember.tensor(x).requires_grad_()
            ember.relu(ex).backward(ember.tensor(g))
            grads.append(ex.grad.numpy())
        finally:
            native.enabled = True
    np.testing.assert_array_equal(grads[0], grads[1])
    tx = torch.tensor(x, requires_grad=True)
    torch.relu(tx).backward(torch.tensor(g))
    np.testing.assert_array_equal(grads[0], tx.grad.numpy())
