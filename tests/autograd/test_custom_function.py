"""Custom autograd.Function against torch: the same Function written once per library.

Covers forward/backward/apply, save_for_backward/saved_tensors, needs_input_grad, mark_dirty,
mark_non_differentiable, set_materialize_grads, ctx attributes, non-tensor arguments and
outputs, once_differentiable, the setup_context style, `vjp`, and the errors.
"""
import numpy as np
import pytest
import torch

import ember


def norm(v):
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, (torch.Tensor, ember.Tensor)):
        return ("tensor", tuple(v.shape), np.round(np.asarray(v.detach().tolist(), float), 6))
    return v


def same(a, b):
    if isinstance(a, tuple) and a[:1] == ("tensor",):
        assert b[:2] == a[:2]
        np.testing.assert_allclose(b[2], a[2], rtol=1e-6, atol=1e-6)
    elif isinstance(a, list):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


def both(fn):
    same(norm(fn(torch)), norm(fn(ember)))


def scaled_exp(L):
    class ScaledExp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, tag=None):
            y = x.exp() * k
            ctx.save_for_backward(y, x)
            ctx.k, ctx.tag = k, tag     # arbitrary ctx attributes
            return y

        @staticmethod
        def backward(ctx, g):
            y, x = ctx.saved_tensors
            return g * y, None, None    # None for the non-tensor arguments

    x = L.tensor([0.5, -1.0], requires_grad=True)
    y = ScaledExp.apply(x, 2.0, "t")
    y.sum().backward()
    return [y, x.grad, type(y.grad_fn).__name__, y.grad_fn.k, y.grad_fn.tag, y.requires_grad,
            [type(n).__name__ for n, _ in y.grad_fn.next_functions]]


def needs_input_grad(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            ctx.seen = ctx.needs_input_grad
            return a * b + c

        @staticmethod
        def backward(ctx, g):
            return g if ctx.needs_input_grad[0] else None, None, g * 2

    a, b, c = L.ones(2, requires_grad=True), L.ones(2), L.ones(2, requires_grad=True)
    y = F.apply(a, b, c)
    y.sum().backward()
    return [list(y.grad_fn.seen), a.grad, b.grad, c.grad]


def mark_dirty(L):
    class Double(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = L.tensor([1., 3.], requires_grad=True)
    b = a * 1
    y = Double.apply(b)
    (y * y).sum().backward()
    return [y is b, a.grad, type(b.grad_fn).__name__]


def non_differentiable(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            return x * 2, mask, (x > 0).long()

        @staticmethod
        def backward(ctx, g, gmask, gidx):
            return g * 2

    x = L.tensor([1., -2.], requires_grad=True)
    s, mask, idx = F.apply(x)
    s.sum().backward()
    return [s.requires_grad, mask.requires_grad, idx.requires_grad, x.grad]


def materialize(L):
    seen = []
    for mat in (True, False):
        class F(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(mat)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append([g1 is None, g2 is None, None if g2 is None else g2])
                return g1 * 2

        x = L.ones(2, requires_grad=True)
        a, _ = F.apply(x)
        a.sum().backward()
    return seen


def once_differentiable(L):
    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @L.autograd.function.once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x

    x = L.tensor([1., 3.], requires_grad=True)
    g, = L.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    return [g, g.requires_grad]


def setup_context_style(L):
    class Sin(L.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x.sin() * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.cos() * ctx.k, None

    x = L.tensor([1., 3.], requires_grad=True)
    y = Sin.apply(x, 3)
    y.sum().backward()
    g, = L.autograd.grad(Sin.apply(x, 2).sum(), x, create_graph=True)
    gg, = L.autograd.grad(g.sum(), x)   # backward written in ops is differentiable
    return [y, x.grad, type(y.grad_fn).__name__, gg]


def returns_input_and_others(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x, x * 2, 5

        @staticmethod
        def backward(ctx, g1, g2, g3):
            return g1 * 3 + g2

    x = L.tensor([1., 3.], requires_grad=True)
    y, z, k = F.apply(x)
    (y + z).sum().backward()
    return [y is x, k, x.grad, type(y.grad_fn).__name__, y.is_leaf]


def no_grad_apply(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    x = L.tensor([1., 3.], requires_grad=True)
    with L.no_grad():
        y = F.apply(x)
    return [y.requires_grad, y.grad_fn is None, F.apply(L.ones(2)).requires_grad]


def vjp_only(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 5

    x = L.tensor([1., 3.], requires_grad=True)
    F.apply(x).sum().backward()
    return x.grad


def save_none(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * a if b is None else None

    x = L.tensor([1., 3.], requires_grad=True)
    F.apply(x).sum().backward()
    return x.grad


SCENARIOS = [scaled_exp, needs_input_grad, mark_dirty, non_differentiable, materialize,
             once_differentiable, setup_context_style, returns_input_and_others, no_grad_apply,
             vjp_only, save_none]


@pytest.mark.parametrize("fn", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_function_matches_torch(fn):
    both(fn)


def _simple(L, backward_result, save_input=False):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            if save_input:
                ctx.save_for_backward(x)
            return x * k

        @staticmethod
        def backward(ctx, g):
            if save_input:
                ctx.saved_tensors
            return backward_result(g)
    return F


def err_wrong_count(L):
    _simple(L, lambda g: (g, None, g)).apply(L.ones(3, requires_grad=True), 2).sum().backward()


def err_grad_for_non_tensor(L):
    _simple(L, lambda g: (g, g)).apply(L.ones(3, requires_grad=True), 2).sum().backward()


def err_wrong_shape(L):
    _simple(L, lambda g: (g[:2], None)).apply(L.ones(3, requires_grad=True), 2).sum().backward()


def err_twice(L):
    y = _simple(L, lambda g: (g, None), True).apply(L.ones(3, requires_grad=True) * 1, 2).sum()
    y.backward()
    y.backward()


def err_modified(L):
    h = L.ones(3, requires_grad=True) * 1
    y = _simple(L, lambda g: (g, None), True).apply(h, 2)
    h.add_(1)
    y.sum().backward()


def err_dirty_leaf(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, g):
            return g
    F.apply(L.ones(2, requires_grad=True))


def err_once_differentiable(L):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x ** 2

        @staticmethod
        @L.autograd.function.once_differentiable
        def backward(ctx, g):
            return g * 2

    x, v = L.ones(2, requires_grad=True), L.ones(2, requires_grad=True)
    g, = L.autograd.grad(F.apply(x * x), x, v, create_graph=True)
    g.sum().backward()


ERRORS = [(err_wrong_count, "returned an incorrect number of gradients (expected 2, got 3)"),
          (err_grad_for_non_tensor, "returned a gradient different than None at position 2"),
          (err_wrong_shape, "returned an invalid gradient at index 0 - got [2] but expected "
                            "shape compatible with [3]"),
          (err_twice, "Trying to backward through the graph a second time"),
          (err_modified, "which is output 0 of Add, is at version 1; expected version 0"),
          (err_dirty_leaf, "a leaf Variable that requires grad"),
          (err_once_differentiable, "trying to differentiate twice a function that was "
                                    "marked with @once_differentiable")]


@pytest.mark.parametrize("fn,gist", ERRORS, ids=[f.__name__ for f, _ in ERRORS])
def test_function_errors_match_torch(fn, gist):
    got = []
    for L in (torch, ember):
        with pytest.raises(Exception) as info:
            fn(L)
        got.append(info.type)
        assert gist in str(info.value)
    assert got[0] is got[1]


def test_mark_non_differentiable_on_returned_input_matches_torch():
    """An input returned unchanged and marked non-differentiable does not require grad."""
    import torch as _torch

    def make(lib):
        class PassThrough(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_non_differentiable(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return PassThrough

    te = ember.ones(3, requires_grad=True)
    tt = _torch.ones(3, requires_grad=True)
    ye, yt = make(ember).apply(te), make(_torch).apply(tt)
    assert ye.requires_grad == yt.requires_grad
