"""Differential tests of capture (ember.compile, numpy backend): compiled == eager.

Every check calls the compiled function TWICE: the first call traces (and returns the eager
result by construction), the second call — with different input values — replays the
captured graph, and that replay is what is compared with eager execution (and, where the
function is written with methods both libraries share, with real torch). Each check also
asserts that the second call really was a replay: one variant, not an eager fallback, no
recompile. Gradients (inputs and parameters) after `.backward()` are compared too.
"""
import os
import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")   # the C backend: tests/compiler/test_c_backend.py


# ---------------------------------------------------------------- helpers
def cfun(obj):
    """The CompiledFunction behind a compiled function or module."""
    return getattr(obj, "_compiled", obj)


def assert_replayed(compiled):
    """The last call was a replay of one captured graph (not an eager fallback)."""
    cf = cfun(compiled)
    assert cf.recompiles == [], cf.recompiles
    assert len(cf.variants) == 1, [v.breaks for v in cf.variants]
    v = cf.variants[0]
    assert not v.eager, [str(b) for b in v.breaks]
    assert v.graphs, "no graph was captured"


def flat(x):
    if isinstance(x, (ember.Tensor, torch.Tensor)):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in flat(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat(v)]
    return []


def npy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()


def tol(dtype):
    return (1e-10, 1e-12) if np.dtype(dtype) == np.float64 else (2e-5, 2e-6)


def assert_same(got, want, rtol=None, atol=None):
    """Same structure of tensors, same shapes/dtypes, values within tolerance."""
    g, w = flat(got), flat(want)
    assert len(g) == len(w), (len(g), len(w))
    for a, b in zip(g, w):
        a, b = npy(a), npy(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
        r, t = tol(a.dtype) if a.dtype.kind == "f" else (0, 0)
        np.testing.assert_allclose(a, b, rtol=rtol if rtol is not None else r,
                                   atol=atol if atol is not None else t)


def float_outputs(out):
    return [t for t in flat(out) if t.dtype.is_floating_point and t.requires_grad]


def backward_weighted(out, seed=7):
    """sum(out_i * w_i) with fixed random weights w_i, then .backward()."""
    rng = np.random.default_rng(seed)
    outs = float_outputs(out)
    assert outs, "no differentiable output"
    total = None
    for o in outs:
        w = rng.standard_normal(tuple(o.shape)).astype(npy(o).dtype)
        term = (o * (ember.tensor(w) if isinstance(o, ember.Tensor) else torch.tensor(w))).sum()
        total = term if total is None else total + term
    total.backward()


def make(arrays, lib=ember, grad=()):
    """Fresh leaf tensors of `lib` from numpy arrays; indices in `grad` require grad."""
    return [lib.tensor(a.copy(), requires_grad=(i in grad)) for i, a in enumerate(arrays)]


def check_fn(fn, arrays_of, grad=(), vs_torch=True, no_grad=False, rtol=None, atol=None):
    """fn compiled vs eager (and vs torch): trace on arrays_of(0), replay on arrays_of(1)."""
    cf = ember.compile(fn, backend=BACKEND)
    ctx = ember.no_grad if no_grad else _null
    with ctx():
        first = cf(*make(arrays_of(0), grad=grad))
        assert_same(first, fn(*make(arrays_of(0), grad=grad)), rtol, atol)
        a1 = arrays_of(1)
        xc, xe = make(a1, grad=grad), make(a1, grad=grad)
        out_c, out_e = cf(*xc), fn(*xe)
    assert_replayed(cf)
    assert_same(out_c, out_e, rtol, atol)
    if vs_torch:
        xt = make(a1, torch, grad=grad)
        ctx_t = torch.no_grad if no_grad else _null
        with ctx_t():
            out_t = fn(*xt)
        assert_same(out_c, out_t, rtol=1e-4, atol=1e-5)
    if grad and not no_grad:
        backward_weighted(out_c)
        backward_weighted(out_e)
        for i in grad:
            assert xc[i].grad is not None, f"input {i} got no grad from the compiled replay"
            assert_same(xc[i].grad, xe[i].grad, rtol, atol)
        if vs_torch:
            backward_weighted(out_t)
            for i in grad:
                assert_same(xc[i].grad, xt[i].grad, rtol=1e-4, atol=1e-5)
    if no_grad:
        assert all(not t.requires_grad for t in flat(out_c))
    return cf


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def randn(*shapes, seed_offset=0):
    """arrays_of(seed) giving standard-normal float32 arrays of `shapes`."""
    def arrays_of(seed):
        rng = np.random.default_rng(100 + seed + seed_offset)
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return arrays_of


# ---------------------------------------------------------------- functions of ops
FUNCTIONS = {
    "pointwise": (lambda x, y: (x * y + 1).relu() - x.tanh() / (y.abs() + 1) + x.sigmoid().exp(),
                  [(3, 4), (3, 4)]),
    "broadcast": (lambda x, y: x * y - (x + 2.5).clamp(min=0.5).sqrt() + y.pow(2),
                  [(2, 3, 4), (3, 1)]),
    "reductions": (lambda x: (x.sum(1), x.mean(0), x.amax(-1), x.var(1), x.logsumexp(1),
                              x.norm(), x.softmax(-1)),
                   [(5, 6)]),
    "views": (lambda x: (x.view(4, 6).t().reshape(3, 8)[1:, ::2] * 2,
                         x.permute(2, 0, 1).contiguous().flatten(),
                         x.unsqueeze(1).expand(2, 3, 3, 4).sum(1),
                         x.transpose(0, 2).narrow(0, 1, 2).squeeze()),
              [(2, 3, 4)]),
    "indexing": (lambda x: (x[0], x[:, 1:3], x[..., -1], x[[0, 2, 1]], x[1:, None, 2],
                            x.index_select(1, torch_or_ember(x).tensor([3, 0])),
                            x.gather(1, torch_or_ember(x).tensor([[0, 1], [2, 3], [1, 1]]))),
                 [(3, 4)]),
    "matmul": (lambda a, b, c: (a @ b + c, (a @ b).t() @ a, a.matmul(b[:, :1]).squeeze(1)),
               [(3, 5), (5, 4), (4,)]),
    "bmm": (lambda a, b: (a @ b).relu().bmm(b.transpose(1, 2)), [(2, 3, 5), (2, 5, 4)]),
    "cat_stack_split": (lambda x, y: (torch_or_ember(x).cat([x, y], 1),
                                      torch_or_ember(x).stack([x, y]).sum(0),
                                      *x.split(2, dim=1), *y.chunk(2, 0)),
                        [(4, 4), (4, 4)]),
    "where_masked": (lambda x, y: (torch_or_ember(x).where(x > y, x, y * 2),
                                   x.masked_fill(y < 0, 0.0), (x > 0).float() * y),
                     [(3, 4), (3, 4)]),
    "float64": (lambda x, y: (x.double() * y.double()).exp().sum(0), [(3, 4), (3, 4)]),
}


def torch_or_ember(t):
    return torch if isinstance(t, torch.Tensor) else ember


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_replay_matches_eager_and_torch(name):
    fn, shapes = FUNCTIONS[name]
    check_fn(fn, randn(*shapes))


@pytest.mark.parametrize("name", ["pointwise", "broadcast", "reductions", "views", "matmul",
                                  "bmm", "cat_stack_split", "where_masked"])
def test_function_gradients_match_eager_and_torch(name):
    fn, shapes = FUNCTIONS[name]
    check_fn(fn, randn(*shapes), grad=tuple(range(len(shapes))))


@pytest.mark.parametrize("name", ["pointwise", "matmul", "reductions"])
def test_function_under_no_grad(name):
    fn, shapes = FUNCTIONS[name]
    check_fn(fn, randn(*shapes), grad=tuple(range(len(shapes))), no_grad=True)


def test_functional_ops_replay():
    def f(x, w, b):
        h = F.gelu(F.linear(x, w, b))
        return F.layer_norm(h, (5,)), F.log_softmax(h, -1), F.silu(h).mean()
    check_fn(f, randn((4, 3), (5, 3), (5,)), grad=(0, 1, 2), vs_torch=False)


def test_closure_constant_tensor_is_read_at_each_call():
    """A tensor captured by closure is lifted: mutating it between calls is seen."""
    scale = ember.tensor([1.0, 2.0, 3.0])
    cf = ember.compile(lambda x: x * scale, backend=BACKEND)
    x = ember.ones(2, 3)
    cf(x)
    scale.mul_(10)
    out = cf(ember.ones(2, 3))
    assert_replayed(cf)
    np.testing.assert_allclose(out.numpy(), np.array([[10, 20, 30]] * 2, np.float32))


def test_python_control_flow_on_shapes_is_resolved_at_trace_time():
    def f(x):
        if x.shape[0] > 2:
            return x * 2
        return x - 1
    check_fn(f, randn((3, 2)))


# ---------------------------------------------------------------- random op compositions
UNARY = {
    "neg": lambda a: -a, "tanh": lambda a: a.tanh(), "sigmoid": lambda a: a.sigmoid(),
    "relu": lambda a: a.relu(), "abs": lambda a: a.abs(), "sin": lambda a: a.sin(),
    "cos": lambda a: a.cos(), "exp": lambda a: a.clamp(-5, 5).exp(),
    "square": lambda a: a * a, "half": lambda a: a * 0.5,
    "sqrt": lambda a: (a.abs() + 1).sqrt(), "log": lambda a: (a.abs() + 1).log(),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 1), "maximum": lambda a, b: a.maximum(b),
    "minimum": lambda a, b: a.minimum(b),
    "where": lambda a, b: torch_or_ember(a).where(a > b, a, b),
}
REDUCE = {
    "none": lambda a: a, "sum": lambda a: a.sum(-1), "mean": lambda a: a.mean(0),
    "amax": lambda a: a.amax(-1), "all": lambda a: a.sum(),
}


@st.composite
def programs(draw):
    """(shape, inputs, steps, reduction): inputs are (shape, layout) with layout one of
    'plain', 'transposed' (a .transpose view of a contiguous array) or 'sliced' (every
    other element of a larger array); steps pick ops over earlier values."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    n_in = draw(st.integers(1, 3))
    inputs = []
    for _ in range(n_in):
        keep = draw(st.integers(0, ndim))           # drop leading dims
        s = list(shape[ndim - keep:])
        s = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in s]
        layout = draw(st.sampled_from(["plain", "transposed", "sliced"]))
        if layout == "transposed" and len(s) < 2:
            layout = "plain"
        inputs.append((tuple(s), layout))
    inputs[0] = (shape, inputs[0][1] if len(shape) >= 2 else inputs[0][1].replace(
        "transposed", "plain"))                    # the result has the full shape
    n_steps = draw(st.integers(1, 6))
    steps = []
    for k in range(n_steps):
        avail = n_in + k
        if draw(st.booleans()):
            steps.append(("u", draw(st.sampled_from(sorted(UNARY))),
                          draw(st.integers(0, avail - 1))))
        else:
            steps.append(("b", draw(st.sampled_from(sorted(BINARY))),
                          draw(st.integers(0, avail - 1)), draw(st.integers(0, avail - 1))))
    red = draw(st.sampled_from(sorted(REDUCE)))
    grad = draw(st.booleans())
    return shape, inputs, steps, red, grad


def build_program(steps, red):
    def fn(*xs):
        vals = list(xs)
        for s in steps:
            if s[0] == "u":
                vals.append(UNARY[s[1]](vals[s[2]]))
            else:
                vals.append(BINARY[s[1]](vals[s[2]], vals[s[3]]))
        # the last value, reduced, plus one intermediate as a second output; the zero-weighted
        # sum of all inputs keeps every input in the graph (so each gets a gradient)
        out = vals[-1] + sum(x.sum() for x in xs) * 0.0
        return REDUCE[red](out), vals[len(xs) + len(steps) // 2]
    return fn


def program_inputs(inputs, seed, lib, grad):
    """(leaves, arguments): the arguments are views (transposed/sliced) of the leaves."""
    rng = np.random.default_rng(seed)
    leaves, args = [], []
    for shape, layout in inputs:
        if layout == "transposed":
            base_shape = shape[:-2] + (shape[-1], shape[-2])
        elif layout == "sliced":
            base_shape = shape[:-1] + (2 * shape[-1],) if shape else (2,)
        else:
            base_shape = shape
        a = rng.standard_normal(base_shape).astype(np.float32)
        leaf = lib.tensor(a, requires_grad=grad)
        if layout == "transposed":
            arg = leaf.transpose(-1, -2)
        elif layout == "sliced" and shape:
            arg = leaf[..., ::2]
        elif layout == "sliced":
            arg = leaf[0]
        else:
            arg = leaf
        leaves.append(leaf)
        args.append(arg)
    return leaves, args


@settings(max_examples=30)
@given(programs())
def test_random_op_compositions(prog):
    shape, inputs, steps, red, grad = prog
    fn = build_program(steps, red)
    cf = ember.compile(fn, backend=BACKEND)
    cf(*program_inputs(inputs, 0, ember, grad)[1])
    lc, ac = program_inputs(inputs, 1, ember, grad)
    le, ae = program_inputs(inputs, 1, ember, grad)
    lt, at = program_inputs(inputs, 1, torch, grad)
    out_c, out_e, out_t = cf(*ac), fn(*ae), fn(*at)
    assert_replayed(cf)
    assert_same(out_c, out_e)
    assert_same(out_c, out_t, rtol=1e-4, atol=1e-5)
    if grad:
        for out, leaves in ((out_c, lc), (out_e, le), (out_t, lt)):
            backward_weighted(out)
        for a, b, c in zip(lc, le, lt):
            assert a.grad is not None
            assert_same(a.grad, b.grad)
            assert_same(a.grad, c.grad, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- nn layers
def check_module(make_module, arrays_of, train=True, grad_inputs=(), int_inputs=(),
                 no_grad=False, seeded=False, rtol=None, atol=None, call=None):
    """A compiled copy of a module vs the eager original: outputs of the replay call, the
    buffers afterwards (running stats), and parameter/input gradients after backward."""
    ember.manual_seed(0)
    m_e = make_module()
    m_e.train(train)
    m_c = copy.deepcopy(m_e)
    cm = ember.compile(m_c, backend=BACKEND)
    call = call or (lambda m, xs: m(*xs))

    def inputs(seed):
        arrs = arrays_of(seed)
        return [ember.tensor(a.copy(), requires_grad=(i in grad_inputs and not no_grad))
                for i, a in enumerate(arrs)]

    ctx = ember.no_grad if no_grad else _null
    with ctx():
        for seed in (0, 1):
            xc, xe = inputs(seed), inputs(seed)
            ember.manual_seed(seed + 10)
            out_c = call(cm, xc)
            ember.manual_seed(seed + 10)
            out_e = call(m_e, xe)
            assert_same(out_c, out_e, rtol, atol)
    assert_replayed(cm)
    for (n, b_c), (_, b_e) in zip(m_c.named_buffers(), m_e.named_buffers()):
        assert_same(b_c, b_e, rtol, atol)
    if no_grad:
        assert all(not t.requires_grad for t in flat(out_c))
        return cm, m_c, m_e
    for m in (m_c, m_e):
        for p in m.parameters():
            p.grad = None
    backward_weighted(out_c)
    backward_weighted(out_e)
    for (n, p_c), (_, p_e) in zip(m_c.named_parameters(), m_e.named_parameters()):
        if p_e.grad is None:
            assert p_c.grad is None, n
            continue
        assert p_c.grad is not None, f"{n} got no grad from the compiled replay"
        assert_same(p_c.grad, p_e.grad, rtol, atol)
    for i in grad_inputs:
        assert xc[i].grad is not None
        assert_same(xc[i].grad, xe[i].grad, rtol, atol)
    return cm, m_c, m_e


def ints(shape, high, seed_offset=0):
    def arrays_of(seed):
        return [np.random.default_rng(200 + seed + seed_offset).integers(0, high, shape)]
    return arrays_of


LAYERS = {
    "Linear": (lambda: nn.Linear(6, 4), randn((3, 6))),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), randn((5, 3), (5, 4))),
    "Conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), randn((2, 3, 7))),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1), randn((2, 2, 7, 6))),
    "Conv3d": (lambda: nn.Conv3d(2, 2, 2), randn((1, 2, 4, 4, 3))),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), randn((2, 3, 4, 4))),
    "LayerNorm": (lambda: nn.LayerNorm(5), randn((3, 4, 5))),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), randn((3, 4, 5))),
    "RMSNorm": (lambda: nn.RMSNorm(5), randn((3, 5))),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), randn((2, 3, 6, 6))),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1), randn((2, 3, 6, 6))),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), randn((2, 3, 6, 7))),
    "MaxPool1d": (lambda: nn.MaxPool1d(3, stride=2), randn((2, 3, 9))),
    "Upsample_nearest": (lambda: nn.Upsample(scale_factor=2), randn((1, 2, 3, 3))),
    "Upsample_bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear",
                                              align_corners=False), randn((1, 2, 3, 3))),
    "activations": (lambda: nn.Sequential(nn.GELU(), nn.SiLU(), nn.ELU(), nn.LeakyReLU(0.1),
                                          nn.Softplus(), nn.Hardswish(), nn.Mish(), nn.Tanh()),
                    randn((4, 5))),
    "activations2": (lambda: nn.Sequential(nn.Sigmoid(), nn.ReLU6(), nn.SELU(), nn.Softsign(),
                                           nn.LogSigmoid(), nn.Softmax(-1)), randn((4, 5))),
    "PReLU": (lambda: nn.PReLU(3), randn((2, 3, 4))),
    "Flatten": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(12, 2)), randn((2, 3, 4))),
    "ZeroPad2d": (lambda: nn.ZeroPad2d((1, 0, 2, 1)), randn((1, 2, 3, 3))),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), randn((1, 8, 2, 3))),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                           randn((2, 5, 8), (2, 4, 8), (2, 4, 8))),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                   batch_first=True),
                                randn((2, 5, 8))),
    "LSTM": (lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True), randn((2, 3, 4))),
    "GRU": (lambda: nn.GRU(4, 5), randn((3, 2, 4))),
    "RNN": (lambda: nn.RNN(4, 5, nonlinearity="tanh", bidirectional=True), randn((3, 2, 4))),
    "LSTMCell": (lambda: nn.LSTMCell(4, 5), randn((3, 4))),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_eager_with_grads(name):
    make_module, arrays_of = LAYERS[name]
    check_module(make_module, arrays_of, grad_inputs=(0,))


@pytest.mark.parametrize("name", ["Linear", "Conv2d", "LSTM", "MultiheadAttention",
                                  "TransformerEncoderLayer", "activations"])
def test_layer_under_no_grad(name):
    make_module, arrays_of = LAYERS[name]
    check_module(make_module, arrays_of, train=False, no_grad=True)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (4, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (3, 2, 4, 4))])
def test_batchnorm_running_stats_updated_like_eager(cls, shape, train):
    """In train mode running_mean/var and num_batches_tracked change at every call, in the
    compiled replay exactly as in eager; in eval mode they are read, not written."""
    cm, m_c, m_e = check_module(lambda: cls(shape[1]), randn(shape), train=train,
                                grad_inputs=(0,))
    if train:
        assert int(m_c.num_batches_tracked) == 2
        assert not np.allclose(m_c.running_mean.numpy(), 0)
    else:
        assert int(m_c.num_batches_tracked) == 0
        np.testing.assert_array_equal(m_c.running_mean.numpy(), 0)


def test_batchnorm_matches_torch():
    """The compiled BatchNorm2d replay (train mode) against torch, including running stats."""
    e = nn.BatchNorm2d(3)
    t = torch.nn.BatchNorm2d(3)
    cm = ember.compile(e, backend=BACKEND)
    for seed in (0, 1, 2):
        a = np.random.default_rng(seed).standard_normal((4, 3, 2, 2)).astype(np.float32)
        out_c, out_t = cm(ember.tensor(a)), t(torch.tensor(a))
        assert_same(out_c, out_t, rtol=1e-4, atol=1e-5)
    assert_replayed(cm)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_same(getattr(e, name), getattr(t, name), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,make,arrays_of", [
    ("Embedding", lambda: nn.Embedding(10, 4), ints((3, 5), 10)),
    ("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4, mode="mean"), ints((3, 5), 10)),
    ("EmbeddingBag_sum", lambda: nn.EmbeddingBag(10, 4, mode="sum"), ints((2, 3), 10)),
])
def test_embedding_layers(name, make, arrays_of):
    check_module(make, arrays_of)


@pytest.mark.parametrize("p", [0.0, 0.3])
def test_dropout_train_mode_same_seed_same_mask(p):
    """Dropout in train mode: the replay draws from the random stream exactly as eager."""
    cm, m_c, m_e = check_module(lambda: nn.Sequential(nn.Linear(6, 8), nn.Dropout(p)),
                                randn((16, 6)), train=True, grad_inputs=(0,))
    # and a different seed gives a different mask (the replay is not a frozen mask)
    if p:
        x = ember.ones(16, 6)
        ember.manual_seed(1)
        a = cm(x)
        ember.manual_seed(2)
        b = cm(x)
        assert ((a.detach().numpy() == 0) != (b.detach().numpy() == 0)).any()


def test_dropout_eval_mode_is_identity():
    cm, _, _ = check_module(lambda: nn.Dropout(0.5), randn((4, 5)), train=False,
                            grad_inputs=(0,))
    x = ember.tensor(_rn(4, (4, 5)))
    np.testing.assert_array_equal(cm(x).numpy(), x.numpy())


LOSSES = {
    "MSELoss": (nn.MSELoss, lambda s: [_rn(s, (4, 3)), _rn(s + 50, (4, 3))]),
    "L1Loss": (nn.L1Loss, lambda s: [_rn(s, (4, 3)), _rn(s + 50, (4, 3))]),
    "SmoothL1Loss": (nn.SmoothL1Loss, lambda s: [_rn(s, (4, 3)), _rn(s + 50, (4, 3))]),
    "HuberLoss": (lambda: nn.HuberLoss(delta=0.5), lambda s: [_rn(s, (4, 3)), _rn(s + 9, (4, 3))]),
    "CrossEntropyLoss": (nn.CrossEntropyLoss, lambda s: [
        _rn(s, (5, 4)), np.random.default_rng(s).integers(0, 4, 5)]),
    "CrossEntropyLoss_smooth": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), lambda s: [
        _rn(s, (5, 4)), np.random.default_rng(s).integers(0, 4, 5)]),
    "NLLLoss": (nn.NLLLoss, lambda s: [
        _rn(s, (5, 4)), np.random.default_rng(s).integers(0, 4, 5)]),
    "BCEWithLogitsLoss": (nn.BCEWithLogitsLoss, lambda s: [
        _rn(s, (4, 3)), np.random.default_rng(s).random((4, 3)).astype(np.float32)]),
    "BCELoss": (nn.BCELoss, lambda s: [
        np.random.default_rng(s).uniform(0.05, 0.95, (4, 3)).astype(np.float32),
        np.random.default_rng(s + 1).random((4, 3)).astype(np.float32)]),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), lambda s: [
        _rn(s, (4, 3)), np.random.default_rng(s).random((4, 3)).astype(np.float32)]),
}


def _rn(seed, shape):
    return np.random.default_rng(300 + seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_eager_and_torch(name):
    make, arrays_of = LOSSES[name]
    cm, _, _ = check_module(make, arrays_of, grad_inputs=(0,))
    a = arrays_of(1)
    tname = name.split("_")[0]
    kw = {"CrossEntropyLoss_smooth": {"label_smoothing": 0.1},
          "HuberLoss": {"delta": 0.5}, "KLDivLoss": {"reduction": "batchmean"}}.get(name, {})
    want = getattr(torch.nn, tname)(**kw)(*[torch.tensor(v) for v in a])
    got = cm(*[ember.tensor(v) for v in a])
    assert_same(got, want, rtol=1e-4, atol=1e-5)


def test_linear_and_conv_match_torch_weights():
    """Compiled Linear -> Conv1d stack with torch's weights gives torch's output and grads."""
    t = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 3), torch.nn.Flatten(),
                            torch.nn.Linear(12, 4))
    e = nn.Sequential(nn.Conv1d(2, 3, 3), nn.Flatten(), nn.Linear(12, 4))
    e.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    cm = ember.compile(e, backend=BACKEND)
    for seed in (0, 1):
        a = _rn(seed, (3, 2, 6))
        out_c, out_t = cm(ember.tensor(a)), t(torch.tensor(a))
    assert_replayed(cm)
    assert_same(out_c, out_t, rtol=1e-4, atol=1e-5)
    out_c.sum().backward()
    out_t.sum().backward()
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        assert_same(pe.grad, pt.grad, rtol=1e-4, atol=1e-5)
