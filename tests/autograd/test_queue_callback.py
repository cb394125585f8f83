"""The engine's final callbacks (ember.autograd.engine.queue_callback, torch's
``Variable._execution_engine.queue_callback``): queued from a hook during backward, run once
backward has finished and before it returns, in order; outside backward, torch's error."""
import pytest
import torch

import ember
from ember.autograd.engine import queue_callback


def test_callbacks_run_after_every_gradient_and_before_backward_returns():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    log = []

    def hook(p):
        log.append(("hook", p is a))
        if len(log) == 1:
            queue_callback(lambda: log.append(("first", a.grad is not None,
                                               b.grad is not None)))
            queue_callback(lambda: queue_callback(lambda: log.append(("nested",))))
    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(hook)
    (a * 2 + b * b).sum().backward()
    assert [e[0] for e in log] == ["hook", "hook", "first", "nested"]
    assert log[2] == ("first", True, True)          # both gradients were there


def test_callbacks_belong_to_one_backward():
    x = ember.randn(2, requires_grad=True)
    calls = []
    handle = x.register_post_accumulate_grad_hook(
        lambda p: queue_callback(lambda: calls.append(1)))
    x.sum().backward()
    x.sum().backward()
    assert calls == [1, 1]
    handle.remove()
    x.sum().backward()
    assert calls == [1, 1]


def test_a_backward_inside_a_callback_has_its_own_callbacks():
    x = ember.randn(2, requires_grad=True)
    y = ember.randn(2, requires_grad=True)
    order = []
    y.register_post_accumulate_grad_hook(
        lambda p: queue_callback(lambda: order.append("inner")))

    def outer():
        order.append("outer")
        assert not ember.is_grad_enabled()      # as in torch: the backward's grad mode
        with ember.enable_grad():
            (y * 3).sum().backward()
        order.append("outer done")
    x.register_post_accumulate_grad_hook(lambda p: queue_callback(outer))
    x.sum().backward()
    assert order == ["outer", "inner", "outer done"]


def test_outside_backward_raises_like_torch():
    with pytest.raises(RuntimeError, match="only be installed during backward pass") as t:
        torch.autograd.Variable._execution_engine.queue_callback(lambda: None)
    with pytest.raises(RuntimeError, match=str(t.value)):
        queue_callback(lambda: None)


def test_an_error_in_a_callback_propagates_and_leaves_the_engine_usable():
    x = ember.randn(2, requires_grad=True)

    def boom():
        raise ValueError("boom")
    h = x.register_post_accumulate_grad_hook(lambda p: queue_callback(boom))
    with pytest.raises(ValueError, match="boom"):
        x.sum().backward()
    h.remove()
    with pytest.raises(RuntimeError, match="during backward pass"):
        queue_callback(lambda: None)
    x.sum().backward()                      # the next backward is unaffected
    assert ember.equal(x.grad, ember.full((2,), 2.0))
