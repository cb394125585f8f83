"""The backward's short paths (sum/matmul/relu formulas computed directly on arrays when
nothing records, leaves accumulated as soon as their gradient is complete, a 0-d root's
implicit gradient, inference_mode's cheap enter/exit) agree with torch, and step aside for
create_graph, hooks, modes (the compiler's tracer) and autocast."""
import threading

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)


def both(*shapes, dtype="float32"):
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    return ([ember.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def close(e, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", [((8, 8), (8, 8), (8, 8)),
                                    ((3, 4, 5), (5, 6), (3, 4, 6)),    # batch dims on `x`
                                    ((4, 5), (2, 5, 3), (1, 4, 3))])   # batch dims on `w`
def test_matmul_relu_mul_sum_grads_match_torch(dtype, shapes):
    (x, w, c), (tx, tw, tc) = both(*shapes, dtype=dtype)
    out = ((x @ w).relu() * c).sum()
    tout = ((tx @ tw).relu() * tc).sum()
    out.backward()
    tout.backward()
    close(out, tout)
    for e, t in ((x, tx), (w, tw), (c, tc)):
        close(e.grad, t.grad)
        assert e.grad.dtype == e.dtype
        assert e.grad.stride() == t.grad.stride()


def test_grads_accumulate_over_steps_and_keep_the_leaf_layout():
    a = RNG.standard_normal((5, 4)).astype("float32")
    x, tx = ember.tensor(a).t().requires_grad_(), torch.tensor(a).t().requires_grad_()
    (w,), (tw,) = both((5, 3))
    for _ in range(2):
        (x @ w).relu().sum().backward()
        (tx @ tw).relu().sum().backward()
    close(x.grad, tx.grad)
    close(w.grad, tw.grad)
    assert x.grad.stride() == tx.grad.stride()


def test_a_leaf_used_twice_gets_the_sum():
    (x, w), (tx, tw) = both((4, 4), (4, 4))
    ((x @ w) * x + x.relu()).sum().backward()
    ((tx @ tw) * tx + tx.relu()).sum().backward()
    close(x.grad, tx.grad)
    close(w.grad, tw.grad)


def test_create_graph_double_backward_matches_torch():
    (x, w, c), (tx, tw, tc) = both((3, 3), (3, 3), (3, 3))
    gx, gw = ember.autograd.grad(((x @ w).relu() * c * x).sum(), (x, w), create_graph=True)
    tgx, tgw = torch.autograd.grad(((tx @ tw).relu() * tc * tx).sum(), (tx, tw),
                                   create_graph=True)
    assert gx.requires_grad and gx.grad_fn is not None
    close(gx, tgx)
    close(gw, tgw)
    (gx.square().sum() + (gw * w).sum()).backward()
    (tgx.square().sum() + (tgw * tw).sum()).backward()
    for e, t in ((x, tx), (w, tw), (c, tc)):
        close(e.grad, t.grad)


def test_sum_backward_with_create_graph_is_differentiable():
    (x,), (tx,) = both((2, 3))
    (g,) = ember.autograd.grad(x.sum() * x.sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(tx.sum() * tx.sum(), tx, create_graph=True)
    close(g, tg)
    (h,) = ember.autograd.grad(g.sum(), x)
    (th,) = torch.autograd.grad(tg.sum(), tx)
    close(h, th)


def test_hooks_run_in_torch_order_and_may_replace_gradients():
    def run(m, x, w):
        log = []
        y = x @ w
        y.register_hook(lambda g: log.append("y") or g * 2)
        x.register_hook(lambda g: log.append("x") or g + 1)
        w.register_hook(lambda g: log.append("w"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("x-acc"))
        w.register_post_accumulate_grad_hook(lambda t: log.append("w-acc"))
        z = y.relu()
        z.grad_fn.register_hook(lambda gi, go: log.append("relu-node"))
        (z * 3).sum().backward()
        return log
    (x, w), (tx, tw) = both((3, 3), (3, 3))
    assert run(ember, x, w) == run(torch, tx, tw)
    close(x.grad, tx.grad)
    close(w.grad, tw.grad)


def test_retain_grad_of_an_intermediate_summed_whole():
    (x,), (tx,) = both((2, 3))
    y, ty = x * 2, tx * 2
    y.retain_grad()
    ty.retain_grad()
    y.sum().backward()
    ty.sum().backward()
    close(y.grad, ty.grad)
    close(x.grad, tx.grad)


def test_second_backward_without_retain_graph_fails():
    (x, w), _ = both((3, 3), (3, 3))
    out = (x @ w).relu().sum()
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_retain_graph_allows_a_second_backward():
    (x, w), (tx, tw) = both((3, 3), (3, 3))
    out, tout = (x @ w).relu().sum(), (tx @ tw).relu().sum()
    out.backward(retain_graph=True)
    out.backward()
    tout.backward(retain_graph=True)
    tout.backward()
    close(x.grad, tx.grad)


def test_modified_saved_output_is_detected():
    (x, w), _ = both((3, 3), (3, 3))
    z = (x @ w).relu()
    out = (z * 2).sum()
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_modified_saved_input_is_detected():
    (x,), _ = both((3, 3))
    w = ember.randn(3, 3, requires_grad=True)
    h = w * 1
    out = (x @ h).sum()
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_anomaly_mode_still_reports_nan():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.set_detect_anomaly(True):
        out = (x.sqrt() * 0 + x.relu()).sum()
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="returned nan"):
            (x.sqrt() / x).sum().backward()
    out.backward()


def test_autograd_grad_with_inputs_and_unused():
    (x, w, c), (tx, tw, tc) = both((3, 3), (3, 3), (3, 3))
    g = ember.autograd.grad(((x @ w).relu() * c).sum(), (w,))
    tg = torch.autograd.grad(((tx @ tw).relu() * tc).sum(), (tw,))
    close(g[0], tg[0])
    assert x.grad is None and w.grad is None
    gx, gu = ember.autograd.grad((x * 2).sum(), (x, c), allow_unused=True)
    assert gu is None
    close(gx, 2 * torch.ones(3, 3))


def test_backward_with_inputs_accumulates_only_those():
    (x, w), (tx, tw) = both((3, 3), (3, 3))
    (x @ w).relu().sum().backward(inputs=[w])
    (tx @ tw).relu().sum().backward(inputs=[tw])
    assert x.grad is None
    close(w.grad, tw.grad)


def test_float64_root_and_explicit_grad():
    (x, w), (tx, tw) = both((2, 3), (3, 2), dtype="float64")
    out, tout = x @ w, tx @ tw
    g = RNG.standard_normal((2, 2))
    out.backward(ember.tensor(g))
    tout.backward(torch.tensor(g))
    close(x.grad, tx.grad)
    close(w.grad, tw.grad)


def test_traced_backward_still_goes_through_the_mode():
    """The compiler's tracer sees the backward's ops (sum's expand, matmul's products)."""
    def fn(x, w):
        return (x @ w).relu().sum()
    cf = ember.compile(fn, backend="numpy")
    x, w = ember.randn(3, 4, requires_grad=True), ember.randn(4, 2, requires_grad=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    for _ in range(2):
        x.grad = w.grad = tx.grad = tw.grad = None
        cf(x, w).backward()
        fn(tx, tw).backward()
        close(x.grad, tx.grad)
        close(w.grad, tw.grad)


def test_autocast_sees_the_backward_matmuls():
    (x, w), _ = both((4, 4), (4, 4))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = (x @ w).float().sum()
        out.backward()
    assert x.grad.dtype == ember.float32 and w.grad.dtype == ember.float32


# ---- inference_mode ----
def test_inference_mode_restores_state_nested_and_as_decorator():
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert not ember.is_grad_enabled() and ember.is_inference_mode_enabled()
        with ember.inference_mode(False):
            assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
        with ember.inference_mode():
            assert ember.is_inference_mode_enabled()
        assert not ember.is_grad_enabled() and ember.is_inference_mode_enabled()
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()

    @ember.inference_mode
    def bare():
        return ember.is_inference_mode_enabled()

    @ember.inference_mode()
    def called():
        return ember.ones(2) * 2

    assert bare() and called().is_inference()
    assert not ember.is_inference_mode_enabled()


def test_inference_mode_is_per_thread_and_survives_exceptions():
    seen = []
    with ember.inference_mode():
        t = threading.Thread(target=lambda: seen.append(ember.is_inference_mode_enabled()))
        t.start()
        t.join()
    assert seen == [False]
    with pytest.raises(ValueError):
        with ember.inference_mode():
            raise ValueError
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_inference_and_no_grad_forward_values():
    (x, w, c), (tx, tw, tc) = both((8, 8), (8, 8), (8, 8))
    with ember.inference_mode():
        r = ((x @ w).relu() * c).sum()
    with ember.no_grad():
        s = ((x @ w).relu() * c).sum()
    with torch.inference_mode():
        tr = ((tx @ tw).relu() * tc).sum()
    assert r.is_inference() and not r.requires_grad
    assert not s.is_inference() and not s.requires_grad
    close(r, tr)
    close(s, tr)
