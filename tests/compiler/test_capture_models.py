"""Differential tests of capture, continued from test_capture.py (same helpers, same rule:
the second call of every compiled function replays the captured graph and is compared with
eager): the examples' models, in-place mutation of inputs, the printed IR and explain(),
ops returning their input, and backward captured as a graph.
"""
import os
import copy

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F

from test_capture import (
    LAYERS, _rn, assert_replayed, assert_same, cfun, check_fn, check_module, ints, make,
    randn)

BACKEND = os.environ.get("EMBER_TEST_BACKEND", "numpy")


# ---------------------------------------------------------------- example models
def test_gpt_example_model():
    from ember.examples.gpt import GPT

    def arrays_of(seed):
        rng = np.random.default_rng(seed)
        return [rng.integers(0, 32, (2, 8)), rng.integers(0, 32, (2, 8))]
    # (atol 1e-5: float32 gradients up to ~40 in size; eager's C attention softmax and the
    # compiled kernel round differently, ~6e-6 apart on an element of 0.2)
    check_module(lambda: GPT(vocab_size=32, block_size=8, n_layer=2, n_head=2, n_embd=16),
                 arrays_of, atol=1e-5)


def test_gpt_example_model_dropout_train_mode():
    from ember.examples.gpt import GPT

    def arrays_of(seed):
        rng = np.random.default_rng(seed)
        return [rng.integers(0, 32, (2, 6)), rng.integers(0, 32, (2, 6))]
    check_module(lambda: GPT(vocab_size=32, block_size=8, n_layer=1, n_head=2, n_embd=8,
                             dropout=0.2), arrays_of, train=True)


def test_gpt_example_generate_step_no_grad():
    from ember.examples.gpt import GPT
    check_module(lambda: GPT(vocab_size=16, block_size=8, n_layer=1, n_head=2, n_embd=8),
                 ints((1, 5), 16), train=False, no_grad=True)


@pytest.mark.parametrize("name,shape,kw", [("LeNet5", (2, 1, 28, 28), {}),
                                           ("ResNet", (2, 3, 8, 8),
                                            {"layers": (1, 1), "widths": (4, 8)})])
@pytest.mark.parametrize("train", [True, False])
def test_cnn_example_models(name, shape, kw, train):
    from ember.examples import cnn
    check_module(lambda: getattr(cnn, name)(**kw), randn(shape), train=train,
                 grad_inputs=(0,), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tied", [False, True])
def test_lstm_lm_example_model(tied):
    from ember.examples.lstm_lm import LSTMLanguageModel

    def make():
        return LSTMLanguageModel(20, 8, 8, num_layers=2, dropout=0.1, tie_weights=tied)

    def call(m, xs):
        h = (xs[1], xs[2])
        return m(xs[0], h)

    def arrays_of(seed):
        rng = np.random.default_rng(seed)
        return [rng.integers(0, 20, (2, 5)),
                rng.standard_normal((2, 2, 8)).astype(np.float32),
                rng.standard_normal((2, 2, 8)).astype(np.float32)]
    check_module(make, arrays_of, train=True, call=call)


# ---------------------------------------------------------------- in-place mutation of inputs
def test_inplace_add_on_input_mutates_callers_tensor():
    def f(x, y):
        x.add_(1)
        return x * y
    cf = ember.compile(f, backend=BACKEND)
    cf(ember.zeros(2, 3), ember.ones(2, 3))
    a = _rn(1, (2, 3))
    xc, xe = ember.tensor(a), ember.tensor(a)
    y = ember.full((2, 3), 3.0)
    out_c, out_e = cf(xc, y), f(xe, y)
    assert_replayed(cf)
    assert_same(out_c, out_e)
    np.testing.assert_allclose(xc.numpy(), a + 1, rtol=1e-6)


def test_setitem_on_input_mutates_callers_tensor():
    def f(x):
        x[0] = 5
        x[:, 1] *= 2
        return x.sum(0)
    cf = ember.compile(f, backend=BACKEND)
    cf(ember.zeros(3, 2))
    a = _rn(2, (3, 2))
    xc, xe = ember.tensor(a), ember.tensor(a)
    out_c, out_e = cf(xc), f(xe)
    assert_replayed(cf)
    assert_same(out_c, out_e)
    assert_same(xc, xe)
    assert xc.numpy()[0, 0] == 5 and xc.numpy()[0, 1] == 10


def test_inplace_on_input_view_mutates_base():
    """Writing through a view argument reaches the caller's base tensor."""
    def f(v):
        v.mul_(2)
        return v + 1
    cf = ember.compile(f, backend=BACKEND)
    cf(ember.ones(4, 3)[:, 1])
    a = _rn(3, (4, 3))
    base_c, base_e = ember.tensor(a), ember.tensor(a)
    out_c, out_e = cf(base_c[:, 1]), f(base_e[:, 1])
    assert_replayed(cf)
    assert_same(out_c, out_e)
    assert_same(base_c, base_e)


def test_inplace_buffer_update_in_module():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", ember.zeros(3))

        def forward(self, x):
            self.total += x.sum(0)
            return x * 2
    check_module(Counter, randn((4, 3)), grad_inputs=(0,))


# ---------------------------------------------------------------- printing the IR, explain
def _graph(compiled, name="graph"):
    return cfun(compiled).variants[0].graphs[name]


def test_print_readable_is_python_naming_the_ops_and_runs():
    def f(x, y):
        z = (x * y + 1).relu()
        return F.softmax(z[:, 1:] @ y.t()[1:], -1).sum(1), z.transpose(0, 1).reshape(-1)
    cf = ember.compile(f, backend=BACKEND)
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    cf(x, y)
    g = _graph(cf)
    src = g.print_readable(print_output=False)
    assert src == str(g)
    code = compile(src, "<printed graph>", "exec")
    for op in ("mul", "add", "relu", "matmul", "exp", "sum", "transpose", "reshape"):
        assert op in src, op
    assert g.verify()
    # the printed program is the computation: running it gives f's result
    ns = {"ember": ember, "F": F}
    exec(code, ns)
    assert_same(ns["forward"](x, y), f(x, y))
    assert __file__ in src      # nodes name the user's source lines


def test_print_readable_of_module_forward_and_backward_graphs():
    m = nn.Sequential(nn.Linear(4, 5), nn.GELU(), nn.LayerNorm(5))
    cm = ember.compile(m, backend=BACKEND)
    cm(ember.randn(3, 4))
    for name in ("forward", "backward"):
        g = _graph(cm, name)
        assert g.verify()
        compile(str(g), f"<{name}>", "exec")
    assert "linear" in str(_graph(cm, "forward"))
    assert "self_0_weight" in str(_graph(cm, "forward"))


def test_explain_mentions_graph_count_ops_and_guards():
    def f(x, y):
        return (x @ y).tanh().sum(0)
    cf = ember.compile(f, backend=BACKEND)
    x, y = ember.randn(2, 3), ember.randn(3, 4)
    cf(x, y)
    report = ember.compiler.explain(cf)(ember.randn(2, 3), ember.randn(3, 4))
    text = str(report)
    assert report.graph_count == 1
    assert "Graph count: 1" in text
    assert "Graph break count: 0" in text
    assert f"Op count: {sum(report.op_counts)}" in text and sum(report.op_counts) >= 3
    assert "x.shape == (2, 3)" in text and "y.shape == (3, 4)" in text
    assert "x.dtype" in text and "ember.is_grad_enabled()" in text
    assert len(cfun(cf).variants) == 1


def test_explain_of_a_plain_function_compiles_it():
    report = ember.compiler.explain(lambda a: a.exp() + 1)(ember.randn(3))
    assert report.graph_count == 1 and report.graph_breaks == []
    assert "Graph count: 1" in str(report)


# ---------------------------------------------------------------- ops that return their input
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("op", ["float", "contiguous", "to_same_dtype", "type_as"])
def test_ops_returning_their_own_input(op, grad):
    """x.float() on a float32 x (and .contiguous() on a contiguous x...) returns x itself:
    the replay must still read the caller's new tensor."""
    fns = {"float": lambda x: x.float() * 2 + x,
           "contiguous": lambda x: x.contiguous().exp() - x,
           "to_same_dtype": lambda x: x.to(x.dtype).sin() * x,
           "type_as": lambda x: x.type_as(x) + 1}
    check_fn(fns[op], randn((3, 4)), grad=(0,) if grad else ())


# ---------------------------------------------------------------- backward captured as a graph
BACKWARD_CAPTURED = {
    "Linear": LAYERS["Linear"],
    "Conv2d": LAYERS["Conv2d"],
    "MaxPool2d": (lambda: nn.Sequential(nn.Linear(6, 6), nn.Unflatten(1, (1, 2, 3)),
                                        nn.MaxPool2d((2, 1))), randn((2, 6))),
    "Embedding": (lambda: nn.Embedding(10, 4), ints((3, 5), 10)),
    "LSTM": LAYERS["LSTM"],
    "MultiheadAttention": LAYERS["MultiheadAttention"],
}


@pytest.mark.parametrize("name", sorted(BACKWARD_CAPTURED))
def test_backward_is_captured_as_a_graph(name):
    """With parameters requiring grad the compiled module has a forward AND a backward graph
    (issue: "capture the backward too"), not a forward replayed under eager autograd."""
    make_module, arrays_of = BACKWARD_CAPTURED[name]
    m = make_module()
    cm = ember.compile(m, backend=BACKEND)
    cm(*[ember.tensor(a) for a in arrays_of(0)])
    v = cfun(cm).variants[0]
    assert not v.eager
    assert set(v.graphs) == {"forward", "backward"}, v.backward_note
    assert v.backward_note is None
