"""Grad modes against torch: no_grad / enable_grad / set_grad_enabled / inference_mode as
context managers, as decorators (with and without parentheses, on generators), nesting,
exceptions, thread-locality, and inference tensors.
"""
import threading

import pytest
import torch

import ember


def both(fn):
    t, e = fn(torch), fn(ember)
    assert e == t
    return t


def flags(L, t):
    return t.requires_grad, t.is_leaf


def test_context_managers():
    def fn(L):
        x = L.ones(2, requires_grad=True)
        out = []
        with L.no_grad():
            out += [flags(L, x * 2), L.is_grad_enabled()]
            with L.enable_grad():
                out += [flags(L, x * 2), L.is_grad_enabled()]
            with L.set_grad_enabled(True):
                out.append(L.is_grad_enabled())
        with L.set_grad_enabled(False):
            out += [flags(L, x * 2)]
        with L.inference_mode():
            y = x * 2
            out += [flags(L, y), y.is_inference(), L.is_grad_enabled(),
                    L.is_inference_mode_enabled()]
            with L.inference_mode(False):
                out += [L.is_grad_enabled(), L.is_inference_mode_enabled()]
        out += [L.is_grad_enabled(), L.is_inference_mode_enabled(), flags(L, x * 2)]
        return out
    both(fn)


def test_set_grad_enabled_as_function():
    def fn(L):
        x = L.ones(2, requires_grad=True)
        L.set_grad_enabled(False)
        a = (x * 2).requires_grad, L.is_grad_enabled()
        L.set_grad_enabled(True)
        return a, (x * 2).requires_grad
    both(fn)


def test_decorators():
    def fn(L):
        x = L.ones(2, requires_grad=True)

        @L.no_grad()
        def a():
            return (x * 2).requires_grad

        @L.no_grad
        def b():
            return (x * 2).requires_grad

        @L.enable_grad()
        def c():
            return (x * 2).requires_grad

        @L.enable_grad
        def d():
            return (x * 2).requires_grad

        @L.set_grad_enabled(False)
        def e():
            return (x * 2).requires_grad

        @L.inference_mode()
        def f():
            return (x * 2).is_inference(), L.is_inference_mode_enabled()

        @L.inference_mode
        def g():
            return (x * 2).is_inference()

        @L.inference_mode(False)
        def h():
            return (x * 2).requires_grad

        out = [a(), b(), e(), f(), g(), h(), L.is_grad_enabled()]   # decorating changes nothing
        with L.no_grad():
            out += [c(), d(), L.is_grad_enabled()]
        return out
    both(fn)


def test_generator_decorator():
    def fn(L):
        @L.no_grad()
        def gen(n):
            seen = []
            for _ in range(n):
                sent = yield L.is_grad_enabled()
                seen.append((sent, L.is_grad_enabled()))
            return seen

        g = gen(2)
        out = [next(g), L.is_grad_enabled(), g.send(5), L.is_grad_enabled()]
        try:
            g.send(6)
        except StopIteration as stop:
            out.append(stop.value)
        return out
    both(fn)


def test_mode_restored_after_exception():
    def fn(L):
        for ctx in (L.no_grad(), L.inference_mode(), L.set_grad_enabled(False)):
            try:
                with ctx:
                    raise KeyError
            except KeyError:
                pass
        return L.is_grad_enabled(), L.is_inference_mode_enabled()
    assert both(fn) == (True, False)


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
def test_modes_are_thread_local(L, mode):
    ctx = {"no_grad": L.no_grad, "inference_mode": L.inference_mode,
           "set_grad_enabled": lambda: L.set_grad_enabled(False)}[mode]
    entered, checked = threading.Event(), threading.Event()
    seen = {}

    def other():
        entered.wait()
        x = L.ones(2, requires_grad=True)
        seen["other"] = ((x * 2).requires_grad, L.is_grad_enabled(),
                         L.is_inference_mode_enabled())
        checked.set()

    th = threading.Thread(target=other)
    th.start()
    with ctx():
        entered.set()
        checked.wait()
        seen["main"] = L.is_grad_enabled()
    th.join()
    assert seen == {"other": (True, True, False), "main": False}


def test_inference_tensors():
    def fn(L):
        with L.inference_mode():
            x = L.ones(2)
            y = x * 2
            v = x[0]
            s = x.sum()
        with L.no_grad():
            n = L.ones(2)
        z = x + 1   # an op outside inference mode on an inference tensor: a normal tensor
        w = L.ones(2, requires_grad=True) + x   # add saves nothing: allowed
        return [t.is_inference() for t in (x, y, v, s, n, z, w)] + [w.requires_grad]
    both(fn)


def test_inference_tensor_inplace_inside_mode():
    def fn(L):
        with L.inference_mode():
            x = L.ones(2)
            x.add_(1)
            x.requires_grad_(True)
            x.requires_grad_(False)
        return x.tolist(), x.is_inference()
    both(fn)
