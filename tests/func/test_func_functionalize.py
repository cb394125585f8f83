"""ember.func.functionalize against torch.func.functionalize: the outputs, the inputs after
the call (mutations applied), which outputs still alias the inputs (seen by mutating the
outputs afterwards), under both `remove` modes, and composed with vmap, grad, jvp and
backward; the refusal of an unknown `remove`. float64."""
import numpy as np
import pytest
import torch

import ember
from ember import func as efunc

A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])


def _fns(lib):
    """name -> (f, number of inputs); inputs are fresh copies of A's rows / A."""
    def mutate_input(x):
        x.add_(1)
        return x * 2

    def mutate_view_of_input(x):
        v = x[0]
        v.mul_(10)
        return x.sum(), v

    def intermediate(x):
        y = x.clone()
        y.t()[0].fill_(7)
        y.mul_(x)
        return y

    def pytree(x, y):
        x.sub_(y)
        return {"a": x, "b": [x.view(-1), y * 3]}

    def views_out(x):
        return x.view(-1), x.t(), x

    def mutate_then_view(x):
        x.add_(1)
        return x.view(-1)

    def views_of_intermediate(x):
        y = x * 2
        return y, y.view(-1)

    return {"mutate_input": (mutate_input, 1), "mutate_view_of_input": (mutate_view_of_input, 1),
            "intermediate": (intermediate, 1), "pytree": (pytree, 2),
            "views_out": (views_out, 1), "mutate_then_view": (mutate_then_view, 1),
            "views_of_intermediate": (views_of_intermediate, 1)}


def _leaves(x):
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _leaves(x[k])]
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _leaves(v)]
    return [x]


def _run(F, lib, name, remove):
    f, n = _fns(lib)[name]
    inputs = [lib.tensor(A, dtype=lib.float64) for _ in range(n)]
    out = F.functionalize(f, remove=remove)(*inputs)
    snapshot = [o.clone() for o in _leaves(out)]
    after = [i.clone() for i in inputs]
    for o in _leaves(out):          # which outputs alias the inputs or each other
        o.mul_(3)
    return snapshot, after, [i.clone() for i in inputs], [o.clone() for o in _leaves(out)], \
        [o is i for o in _leaves(out) for i in inputs]


def _same(e, t):
    assert len(e) == len(t)
    for a, b in zip(e, t):
        if isinstance(b, bool):
            assert a == b
        else:
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("name", list(_fns(np)))
def test_outputs_inputs_and_aliasing_match_torch(name, remove):
    got = _run(efunc, ember, name, remove)
    want = _run(torch.func, torch, name, remove)
    for e, t in zip(got, want):
        _same(e, t)


def _composed(F, lib):
    X = lib.tensor(A, dtype=lib.float64)
    x = lib.tensor(A[0], dtype=lib.float64)

    def f(a):
        y = a.clone()
        y.mul_(a)
        return y.sin()

    def g(a):
        a.mul_(2)
        return a + 1

    return {
        "vmap": lambda: F.vmap(F.functionalize(f))(X),
        "vmap_input_mutation": lambda: (F.vmap(F.functionalize(g))(X.clone()),),
        "vmap_mutated_input_after": lambda: (lambda Y: (F.vmap(F.functionalize(g))(Y), Y))(
            X.clone()),
        "grad": lambda: F.grad(F.functionalize(lambda a: f(a).sum()))(x),
        "functionalize_of_grad": lambda: F.functionalize(F.grad(lambda a: f(a).sum()))(x),
        "jvp": lambda: F.jvp(F.functionalize(f), (x,), (lib.ones(3, dtype=lib.float64),)),
        "vmap_grad": lambda: F.vmap(F.grad(F.functionalize(lambda a: f(a).sum())))(X),
        "jacrev": lambda: F.jacrev(F.functionalize(f))(x),
        "jacfwd_views_removed": lambda: F.jacfwd(
            F.functionalize(f, remove="mutations_and_views"))(x),
    }


@pytest.mark.parametrize("case", list(_composed(efunc, ember)))
def test_composes_with_transforms_like_torch(case):
    got = _leaves(_composed(efunc, ember)[case]())
    want = _leaves(_composed(torch.func, torch)[case]())
    _same(got, want)


def test_backward_through_functionalize_matches_torch():
    def run(F, lib):
        x = lib.tensor(A[1], dtype=lib.float64, requires_grad=True)
        y = F.functionalize(lambda a: (a.clone().mul_(2) * a).sum())(x)
        y.backward()
        return [y.detach(), x.grad]
    _same(run(efunc, ember), run(torch.func, torch))


def test_unknown_remove_raises_torchs_error():
    with pytest.raises(RuntimeError) as te:
        torch.func.functionalize(lambda x: x, remove="views")
    with pytest.raises(RuntimeError) as ee:
        efunc.functionalize(lambda x: x, remove="views")
    assert str(ee.value) == str(te.value)


def test_keeps_the_function_name_and_kwargs():
    def scale(x, k=3):
        return x * k
    for F, lib in ((efunc, ember), (torch.func, torch)):
        g = F.functionalize(scale)
        assert g.__name__ == "scale"
        np.testing.assert_allclose(g(lib.ones(2, dtype=lib.float64), k=2).numpy(), [2.0, 2.0])
