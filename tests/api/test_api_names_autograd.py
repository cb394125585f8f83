"""torch.autograd names added for issue 20, each checked against real torch: the
__torch_function__ helpers, enforce_grad_layout_policy, the profiler enums and the
typing names the namespace re-exports."""
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = [torch, ember]


# ---- has_torch_function / handle_torch_function / is_tensor_like ----

class Duck:
    """Not a tensor, but overrides every function it is handed."""
    calls = []

    def __init__(self, v):
        self.v = v

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append((cls.__name__, func.__name__, tuple(t.__name__ for t in types)))
        return ("handled", cls.__name__, len(args), tuple(sorted((kwargs or {}).items())))


class Duckling(Duck):
    pass


class Refuser:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Duck.calls.append((cls.__name__, func.__name__, tuple(t.__name__ for t in types)))
        return NotImplemented


def public_fn(*a, **k):
    return "plain"


public_fn.__module__ = "userlib"


@pytest.mark.parametrize("make", [
    lambda lib: (lib.ones(2),),
    lambda lib: [lib.ones(2), 3, "s"],
    lambda lib: (1, 2.0, None),
    lambda lib: (),
    lambda lib: "ab",
    lambda lib: (Duck(1),),
    lambda lib: [lib.ones(1), Duckling(2)],
    lambda lib: (Refuser(),),
    lambda lib: (lib.nn.Parameter(lib.ones(1)),),
    lambda lib: [lib.nn.Buffer(lib.ones(1))],
    lambda lib: (lib.nn.parameter.UninitializedParameter(),),
])
def test_has_torch_function_matches(make):
    got = [lib.autograd.has_torch_function(make(lib)) for lib in LIBS]
    assert got[0] == got[1]
    got = [lib.nn.functional.has_torch_function(make(lib)) for lib in LIBS]
    assert got[0] == got[1]


@pytest.mark.parametrize("bad", [5, None, 2.5])
def test_has_torch_function_needs_a_sequence(bad):
    errs = []
    for lib in LIBS:
        with pytest.raises(TypeError) as e:
            lib.autograd.has_torch_function(bad)
        errs.append(str(e.value))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(3),
    lambda lib: lib.nn.Parameter(lib.ones(3)),
    lambda lib: 7,
    lambda lib: Duck(0),
    lambda lib: Refuser(),
])
def test_unary_variadic_match(make):
    for name in ("has_torch_function_unary",):
        got = [getattr(lib.nn.functional, name)(make(lib)) for lib in LIBS]
        assert got[0] == got[1]
    got = [lib.nn.functional.has_torch_function_variadic(1, make(lib), "x") for lib in LIBS]
    assert got[0] == got[1]
    got = [lib.nn.functional.has_torch_function_variadic() for lib in LIBS]
    assert got[0] == got[1] is False


def test_handle_torch_function_order_and_result():
    results, calls = [], []
    for lib in LIBS:
        Duck.calls = []
        args = (lib.ones(1), Refuser(), Duck(1), Duckling(2), Duck(3))
        r = lib.autograd.handle_torch_function(public_fn, args, *args, scale=2)
        results.append(r)
        calls.append(list(Duck.calls))
    assert results[0] == results[1]
    assert calls[0] == calls[1]       # Refuser first, then the subclass before its base


def test_handle_torch_function_tensors_take_part():
    """Tensors join the dispatch: alone they run the function; beside a type that is not
    their base they step aside (NotImplemented) for the overriding argument."""
    got = []
    for lib in LIBS:
        Duck.calls = []
        alone = lib.autograd.handle_torch_function(public_fn, (lib.ones(1),), 1)
        mixed = lib.autograd.handle_torch_function(public_fn, (lib.ones(1), Duck(2)), 1)
        got.append((alone, mixed, list(Duck.calls)))
    assert got[0] == got[1]


def test_handle_torch_function_nobody_handles():
    msgs = []
    for lib in LIBS:
        with pytest.raises(TypeError) as e:
            lib.nn.functional.handle_torch_function(public_fn, (Refuser(), 1), 1)
        msgs.append(str(e.value))
        with pytest.raises(TypeError) as e2:
            lib.nn.functional.handle_torch_function(public_fn, (1,), 1)
        msgs.append(str(e2.value))
    assert msgs[:2] == msgs[2:]


def test_user_function_pattern():
    """PyTorch's documented pattern for a user function that honours overrides."""
    for lib in LIBS:
        def scaled(x, k=2):
            if lib.nn.functional.has_torch_function_unary(x):
                return lib.nn.functional.handle_torch_function(scaled, (x,), x, k=k)
            return x * k
        assert scaled(Duck(1))[0] == "handled"
    np.testing.assert_allclose(np.asarray(ember.ones(2) * 2), torch.ones(2).numpy() * 2)


def test_plain_method_override_warns():
    class Plain:
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return 41
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert lib.autograd.handle_torch_function(public_fn, (Plain(),)) == 41
        assert any(issubclass(x.category, DeprecationWarning) for x in w)


@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(2),
    lambda lib: lib.nn.Parameter(lib.zeros(1)),
    lambda lib: lib.Tensor,
    lambda lib: lib.nn.Parameter,
    lambda lib: 3,
    lambda lib: [lib.ones(1)],
    lambda lib: Duck(1),
    lambda lib: Duck,
    lambda lib: np.ones(2),
])
def test_is_tensor_like(make):
    got = [lib.autograd.is_tensor_like(make(lib)) for lib in LIBS]
    assert got[0] == got[1]


# ---- enforce_grad_layout_policy ----

def _layout_case(lib):
    p = lib.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
    (p * 2).sum().backward()
    r = lib.randn(3, 5).t().requires_grad_()
    r.exp().sum().backward()
    return p.grad.stride(), r.grad.stride()


@pytest.mark.parametrize("enable", [True, False])
def test_enforce_grad_layout_policy_strides(enable):
    got = []
    for lib in LIBS:
        with lib.autograd.enforce_grad_layout_policy(enable):
            got.append(_layout_case(lib))
    assert got[0] == got[1]


def test_enforce_grad_layout_policy_as_function_and_decorator():
    got = []
    for lib in LIBS:
        @lib.autograd.enforce_grad_layout_policy(False)
        def relaxed():
            return _layout_case(lib)
        inside = relaxed()
        after = _layout_case(lib)          # the decorator restored the policy
        lib.autograd.enforce_grad_layout_policy(False)   # a plain call sets it now
        set_now = _layout_case(lib)
        lib.autograd.enforce_grad_layout_policy(True)
        restored = _layout_case(lib)
        ctx = lib.autograd.enforce_grad_layout_policy(False)
        clone = ctx.clone()
        lib.autograd.enforce_grad_layout_policy(True)
        got.append((inside, after, set_now, restored, type(clone).__name__, clone.mode))
    assert got[0] == got[1]


def test_relaxed_policy_keeps_gradient_values():
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    grads = []
    for lib in LIBS:
        p = lib.tensor(x).permute(1, 2, 0).requires_grad_()
        with lib.autograd.enforce_grad_layout_policy(False):
            (p.sin() * 3).sum().backward()
            (p * p).sum().backward()       # accumulates into the kept gradient
        grads.append(np.asarray(p.grad.detach().numpy() if lib is torch else p.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


# ---- profiler enumerations ----

@pytest.mark.parametrize("name", ["ProfilerActivity", "ProfilerState", "DeviceType"])
def test_profiler_enums(name):
    t, e = getattr(torch.autograd, name), getattr(ember.autograd, name)
    assert list(t.__members__) == list(e.__members__)
    for k in t.__members__:
        tm, em = getattr(t, k), getattr(e, k)
        assert (int(tm), tm.name, tm.value, str(tm), repr(tm)) == \
               (int(em), em.name, em.value, str(em), repr(em))
        assert hash(tm) == hash(em)
        assert (tm == int(tm)) == (em == int(em))
        assert t(int(tm)) == tm and e(int(em)) is em
    assert len({getattr(e, k) for k in e.__members__}) == len(t.__members__)


def test_profiler_activity_is_the_profilers():
    assert ember.profiler.ProfilerActivity is ember.autograd.ProfilerActivity
    assert torch.profiler.ProfilerActivity is torch.autograd.ProfilerActivity
    with ember.profiler.profile(activities=[ember.autograd.ProfilerActivity.CPU]) as prof:
        ember.ones(3).add(1)
    assert len(prof.events()) > 0


# ---- typing names in the namespace ----

@pytest.mark.parametrize("name", ["Mapping", "Sequence", "cast", "overload"])
def test_typing_reexports(name):
    assert getattr(ember.autograd, name) is getattr(torch.autograd, name)


# ---- NestedIOFunction ----

def test_nested_io_function_surface():
    """The class and its helpers as in torch (torch's own call path is broken in 2.x, so
    the call itself is compared with an equivalent Function below)."""
    got = []
    for lib in LIBS:
        N = lib.autograd.NestedIOFunction
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = N()
        a, b = lib.ones(2), lib.zeros(3)
        f.save_for_backward(a, (b, [a]))
        saved = (len(f.to_save), [t is a or t is b for t in f.to_save], f._to_save_nested[1][0] is b)
        f.mark_dirty(a, (b,))
        f.mark_non_differentiable((a,), [b])
        nie = [_err_type(lambda: f.forward_extended(a)), _err_type(lambda: f.backward_extended(a))]
        bad = _err_type(lambda: f.save_for_backward(a, 3))
        got.append((issubclass(N, lib.autograd.Function), saved, len(f.dirty_tensors),
                    len(f.non_differentiable), nie, bad,
                    [m for m in ("forward_extended", "backward_extended", "saved_tensors",
                                 "mark_dirty", "mark_non_differentiable", "save_for_backward",
                                 "_do_forward", "_do_backward") if hasattr(N, m)]))
    assert got[0] == got[1]


def _err_type(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the type is compared
        return type(e).__name__
    return None


def test_nested_io_function_call_matches_a_function():
    class MulAdd(ember.autograd.NestedIOFunction):
        def forward_extended(self, pair, c):
            a, b = pair
            self.save_for_backward(a, (b,))
            return (a * b, [a + c])

        def backward_extended(self, g_mul, g_add):
            a, (b,) = self.saved_tensors
            g_add = g_add[0]
            return (g_mul * b + g_add, g_mul * a), g_add

    class TMulAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            ctx.save_for_backward(a, b)
            return a * b, a + c

        @staticmethod
        def backward(ctx, g_mul, g_add):
            a, b = ctx.saved_tensors
            return g_mul * b + g_add, g_mul * a, g_add

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    gs = [rng.standard_normal(4).astype(np.float32) for _ in range(2)]
    ta, tb, tc = (torch.tensor(x, requires_grad=True) for x in xs)
    ea, eb, ec = (ember.tensor(x, requires_grad=True) for x in xs)
    t_mul, t_add = TMulAdd.apply(ta, tb, tc)
    e_out = MulAdd()((ea, eb), ec)
    assert isinstance(e_out, tuple) and isinstance(e_out[1], tuple)   # nested like the output
    e_mul, (e_add,) = e_out
    assert e_mul.grad_fn is not None and e_mul.requires_grad
    torch.autograd.backward([t_mul, t_add], [torch.tensor(g) for g in gs])
    ember.autograd.backward([e_mul, e_add], [ember.tensor(g) for g in gs])
    for t, e in ((t_mul, e_mul), (t_add, e_add), (ta.grad, ea.grad), (tb.grad, eb.grad),
                 (tc.grad, ec.grad)):
        np.testing.assert_allclose(np.asarray(e.detach()), t.detach().numpy(), rtol=1e-6)


def test_nested_io_function_rejects_other_inputs():
    class Id(ember.autograd.NestedIOFunction):
        def forward_extended(self, x):
            return x
    with pytest.raises(ValueError, match="NestedIOFunction doesn't know how to iterate"):
        Id()({"x": ember.ones(1)})
