"""ember/core/parallel.py and compiler/threads.split_call: big eager work split into chunks
that threads claim. Results equal the one-call NumPy / one-thread kernel results bit for bit
(and torch's within float tolerance), calls that do not qualify are declined, errors
propagate, and a helper thread that is stuck (its core held by another process) never
stalls the caller. The size threshold is lowered so the tensors stay small."""
import threading

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.core import parallel
from ember.compiler import threads

RNG = np.random.default_rng(0)


@pytest.fixture
def two_threads(monkeypatch):
    """2 threads, with chunks from 2048 elements on (one thread per 2048 elements)."""
    before = ember.get_num_threads()
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 2048)
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _arr(shape, dt=np.float32):
    return RNG.standard_normal(shape).astype(dt)


UNARY = [np.exp, np.tanh, np.log1p, np.sqrt, np.sin, np.negative, np.abs, np.expm1]
BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.greater,
          np.power, np.arctan2]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("uf", UNARY)
def test_unary_bit_exact(two_threads, uf, dt):
    x = _arr((67, 129), dt)
    with np.errstate(all="ignore"):
        got = parallel.ufunc_call(uf, x)
        want = uf(x)
    assert got is not None
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shapes", [((64, 100), (64, 100)), ((64, 100), (100,)),
                                    ((64, 1, 50), (64, 7, 50)), ((5, 64, 30), (64, 1)),
                                    ((64, 100), ())])
@pytest.mark.parametrize("uf", BINARY)
def test_binary_broadcast_bit_exact(two_threads, uf, shapes):
    a, b = _arr(shapes[0]), _arr(shapes[1])
    with np.errstate(all="ignore"):
        got = parallel.ufunc_call(uf, a, b)
        want = uf(a, b)
    assert got is not None
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_python_scalar_and_int_dtypes(two_threads):
    x = _arr((64, 100))
    got = parallel.ufunc_call(np.multiply, x, 0.5)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x * 0.5)
    i = RNG.integers(-50, 50, (64, 100))
    np.testing.assert_array_equal(parallel.ufunc_call(np.add, i, 3), i + 3)


def test_declines(two_threads):
    x = _arr((64, 100))
    assert parallel.ufunc_call(np.add, x[:, ::2], 1.0) is None      # strided full operand
    assert parallel.ufunc_call(np.add, x.T, 1.0) is None            # F order: NumPy's layout
    assert parallel.ufunc_call(np.add, x[:3], x[:3]) is None        # too small
    assert parallel.ufunc_call(np.add, x, _arr((3, 100))) is None   # NumPy raises the error
    assert parallel.ufunc_call(np.divmod, x, 2.0) is None           # two outputs
    ember.set_num_threads(1)
    assert parallel.ufunc_call(np.add, x, x) is None                # one thread


@pytest.mark.parametrize("axis", [(1,), (0,), (1, 2), (0, 2)])
@pytest.mark.parametrize("uf", [np.add, np.maximum, np.minimum])
def test_reduce_bit_exact(two_threads, uf, axis):
    x = _arr((16, 40, 33))
    for keepdims in (False, True):
        got = parallel.reduce_call(uf, x, axis, keepdims=keepdims)
        want = uf.reduce(x, axis=axis, keepdims=keepdims)
        assert got is not None and got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    got = parallel.reduce_call(np.add, x, axis, dtype=np.float64)
    np.testing.assert_array_equal(got, np.add.reduce(x, axis=axis, dtype=np.float64))
    # every axis reduced: nothing left to split along
    assert parallel.reduce_call(uf, x, (0, 1, 2)) is None


def test_run_each_chunk_once_and_errors(two_threads):
    seen = []
    lock = threading.Lock()

    def fn(i):
        with lock:
            seen.append(i)
    parallel.run(fn, 37)
    assert sorted(seen) == list(range(37))

    def bad(i):
        if i == 5:
            raise ValueError("chunk 5")
    with pytest.raises(ValueError, match="chunk 5"):
        parallel.run(bad, 8)


def test_stuck_helper_does_not_stall_the_caller(two_threads):
    """A helper that cannot run (here: blocked in another job) takes no chunk; the caller
    does them all and returns while the helper is still blocked."""
    release = threading.Event()
    blocker = parallel._Job(lambda i: release.wait(10), 1)
    parallel._helpers(1)[0].put(blocker)
    try:
        ran = []
        parallel.run(ran.append, 16)
        assert sorted(ran) == list(range(16))
        assert not blocker.finished.is_set()        # the helper was stuck all along
    finally:
        release.set()
    assert blocker.finished.wait(10)


def _kernel_results(fn, *xs):
    """fn's result with 1 thread (whole kernel calls) and 2 threads (split calls)."""
    with ember.no_grad():
        fn(*xs)                              # the first call traces: not the kernel's result
        ember.set_num_threads(1)
        one = fn(*xs).numpy().copy()
        ember.set_num_threads(2)
        return one, fn(*xs).numpy()


def _counting_split(monkeypatch):
    calls = []
    real = threads.split_call

    def counted(*a):
        done = real(*a)
        calls.append(done)
        return done
    monkeypatch.setattr(threads, "split_call", counted)
    return calls


@pytest.mark.parametrize("case", ["gelu", "layer_norm", "gelu_1d", "softmax_sdpa"])
def test_eager_kernels_split_bit_exact(two_threads, monkeypatch, case):
    calls = _counting_split(monkeypatch)
    x = _arr((64, 256))
    if case == "gelu":
        fn, args, ref = (lambda t: F.gelu(t)), (x,), (lambda T, t: T.nn.functional.gelu(t))
    elif case == "layer_norm":
        x, w, b = _arr((160, 256)), _arr(256), _arr(256)     # its kernel: from 32k on
        fn = lambda t, w, b: F.layer_norm(t, (256,), w, b)  # noqa: E731
        args, ref = (x, w, b), (lambda T, t, w, b: T.nn.functional.layer_norm(t, (256,), w, b))
    elif case == "gelu_1d":
        fn, args, ref = (lambda t: F.gelu(t)), (x.reshape(-1),), (
            lambda T, t: T.nn.functional.gelu(t))
    else:
        q = _arr((2, 4, 64, 32))
        fn = lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True)  # noqa: E731
        args, ref = (q,), (lambda T, q: T.nn.functional.scaled_dot_product_attention(
            q, q, q, is_causal=True))
    one, two = _kernel_results(fn, *[ember.tensor(a) for a in args])
    np.testing.assert_array_equal(two, one)
    want = ref(torch, *[torch.tensor(a) for a in args]).numpy()
    np.testing.assert_allclose(two, want, rtol=3e-4, atol=3e-5)
    if case != "softmax_sdpa":      # sdpa's kernel rows may be too few to split
        assert any(calls), "no kernel call was split"


def test_compiled_pointwise_split(two_threads, monkeypatch):
    calls = _counting_split(monkeypatch)
    f = ember.compile(lambda x, y: (x * y + 1.0).tanh() * 0.5)
    x, y = _arr((96, 128)), _arr((96, 128))
    one, two = _kernel_results(f, ember.tensor(x), ember.tensor(y))
    np.testing.assert_array_equal(two, one)
    want = (torch.tanh(torch.tensor(x) * torch.tensor(y) + 1.0) * 0.5).numpy()
    np.testing.assert_allclose(two, want, rtol=3e-6, atol=3e-6)
    assert any(calls)


def test_gradients_match_torch_with_split_kernels(two_threads):
    x = _arr((64, 256))
    res = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.layer_norm(lib.nn.functional.gelu(t), (256,))
        out.backward(lib.tensor(np.cos(x)))
        res.append((out.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=3e-4, atol=3e-5)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=3e-4, atol=3e-4)


def test_helpers_see_the_callers_errstate(two_threads):
    """NumPy's error state is per context: chunks a helper thread runs see the caller's
    ``np.errstate``, and a bad value there raises as it would in one call."""
    import time
    seen = []

    def chunk(i):
        time.sleep(0.002)          # long enough for the helper to take some chunks
        seen.append((threading.get_ident(), np.geterr()["invalid"]))
    main = threading.get_ident()
    for _ in range(20):
        seen.clear()
        with np.errstate(invalid="raise"):
            parallel.run(chunk, 8)
        if any(t != main for t, _ in seen):
            break
    assert any(t != main for t, _ in seen), "the helper never took a chunk"
    assert all(mode == "raise" for _, mode in seen)
    x = -np.ones((64, 100), np.float32)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            parallel.ufunc_call(np.log, x)
