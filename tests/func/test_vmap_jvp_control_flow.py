"""vmap of the derivative transforms (jvp, jacfwd, linearize, grad, vjp, jacrev, hessian)
when the function runs Python control flow (``if``, ``float()``, ``.item()``, ``bool()``,
``int()``, ``.tolist()``) on a primal the vmap does not batch: torch.func allows it and
ember gives torch's values; on a value the vmap does batch (the primal, a closure, a
tangent) both refuse with torch's RuntimeError. Also the in-place refusals on such a
primal, and linearize's jvp_fn under vmap (torch's linearize refuses control flow, so
torch.func.jvp is the reference there, as in test_linearize_once.py). float64 throughout."""
import numpy as np
import pytest
import torch

import ember
from ember import func as efunc

X0 = np.array([0.5, -1.0, 2.0])
T0 = np.array([[1., 0, 0], [0, 1, 0], [0, 0, 1], [1, 2, 3]])
XS = np.array([[0.5, -1.0, 2.0], [-3., -1, -2]])

# torch words the refusal this way when the read goes through a derivative transform
THROUGH = r"vmap: It looks like you're either \(1\) calling \.item\(\) on a Tensor or \(2\)"


def _bodies(lib):
    """Functions whose Python control flow reads their argument's value."""
    def f_if(x):
        if x.sum() > 0:
            return x.sin() * 2
        return x.cos()

    return {
        "if": f_if,
        "float": lambda x: x * float(x.max()),
        "item": lambda x: x ** 2 * x[0].item(),
        "bool": lambda x: x.exp() if bool((x > 0).all()) else x * 3,
        "int": lambda x: x * int(x.argmax()),
        "tolist": lambda x: x * sum(x.tolist()),
        "slice": lambda x: x[:int(x.argmax()) + 1].sum() * x,
        "nonzero": lambda x: x.sum() * x.nonzero().shape[0],
    }


BODIES = list(_bodies(np))


def _cases(F, lib, f):
    """name -> thunk: each a vmap of a transform of `f` (one of `_bodies`)."""
    x, T, X = (lib.tensor(a, dtype=lib.float64) for a in (X0, T0, XS))
    return {
        # the primal is not batched: allowed
        "jvp_batched_tangent": lambda: F.vmap(lambda t: F.jvp(f, (x,), (t,)))(T),
        "jvp_in_dims_none": lambda: F.vmap(lambda p, t: F.jvp(f, (p,), (t,)),
                                           in_dims=(None, 0))(x, T),
        "jvp_closure_unbatched": lambda: F.vmap(
            lambda p: F.jvp(lambda q: q * f(x), (p,), (p,)))(X),
        "jvp_over_batched_closure": lambda: F.vmap(
            lambda p: F.jvp(lambda q: f(q) * p, (x,), (x,)))(X),
        "jacfwd": lambda: F.jacfwd(f)(x),
        "vmap_jacfwd_batched_closure": lambda: F.vmap(
            lambda p: F.jacfwd(lambda q: f(q) * p)(x))(X),
        "vmap_vmap_jvp": lambda: F.vmap(F.vmap(lambda t: F.jvp(f, (x,), (t,))))(
            T.reshape(2, 2, 3)),
        "jvp_of_jacrev": lambda: F.vmap(
            lambda t: F.jvp(F.jacrev(lambda z: f(z).sum()), (x,), (t,)))(T),
        "jvp_of_jvp": lambda: F.vmap(
            lambda t: F.jvp(lambda a: F.jvp(f, (a,), (t,))[1], (x,), (x,)))(T),
        "grad_of_jvp": lambda: F.vmap(
            lambda t: F.grad(lambda q: F.jvp(f, (q,), (t,))[1].sum())(x))(T),
        "grad_unbatched_primal": lambda: F.vmap(
            lambda t: F.grad(lambda z: (f(z) * t).sum())(x))(T),
        "vjp_batched_closure": lambda: F.vmap(
            lambda p: F.vjp(lambda q: f(q) * p, x)[1](p))(X),
        "jacrev_batched_closure": lambda: F.vmap(lambda p: F.jacrev(lambda q: f(q) * p)(x))(X),
        "hessian_batched_closure": lambda: F.vmap(
            lambda p: F.hessian(lambda q: (f(q) * p).sum())(x))(X),
        "grad_of_vmap": lambda: F.grad(lambda q: F.vmap(lambda t: f(q) * t)(T).sum())(x),
        # the control flow reads a value the vmap batches: refused
        "jvp_batched_primal": lambda: F.vmap(lambda p, t: F.jvp(f, (p,), (t,)))(X, T[:2]),
        "jvp_batched_primal_unbatched_tangent": lambda: F.vmap(
            lambda p: F.jvp(f, (p,), (x,)))(X),
        "vmap_jacfwd_batched_primal": lambda: F.vmap(F.jacfwd(f))(X),
        "vmap_grad_batched_primal": lambda: F.vmap(F.grad(lambda z: f(z).sum()))(X),
        "outer_vmap_batches_primal": lambda: F.vmap(
            lambda p: F.vmap(lambda t: F.jvp(f, (p,), (t,)))(T))(X),
        "inner_vmap_batches_primal": lambda: F.vmap(
            lambda t: F.vmap(lambda p: F.jvp(f, (p,), (t,)))(X))(T),
    }


CASES = list(_cases(efunc, ember, None))
# torch refuses vmap over ops with data-dependent output shapes; ember loops over the batch
# (its vmap fallback), so those pairs are left out rather than compared
DYNAMIC_SHAPE = {"jvp_batched_primal", "jvp_batched_primal_unbatched_tangent",
                 "vmap_jacfwd_batched_primal", "vmap_grad_batched_primal",
                 "outer_vmap_batches_primal", "inner_vmap_batches_primal"}


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _flat(v)]
    return [x]


def _outcome(thunk):
    try:
        return "ok", _flat(thunk())
    except Exception as e:      # noqa: BLE001 (the exception itself is compared)
        return "error", e


def _compare(got, want):
    kind, value = want
    ekind, evalue = got
    if kind == "error":
        assert ekind == "error", f"torch raised {type(value).__name__}: {value}; ember gave a value"
        assert type(evalue) is type(value), (evalue, value)
        return value, evalue
    if ekind == "error":
        raise evalue
    assert len(evalue) == len(value)
    for e, t in zip(evalue, value):
        assert tuple(e.shape) == tuple(t.shape)
        assert e.dtype is ember.float64
        # (force: torch hands back a ZeroTensor for a tangent that is zero by structure)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(force=True),
                                   rtol=1e-12, atol=1e-12)
    return None, None


# (not compared: nonzero of a batched value, which torch's vmap refuses and ember's runs as
# a loop over the batch, a documented difference)
PAIRS = [(c, b) for b in BODIES for c in CASES if not (b == "nonzero" and c in DYNAMIC_SHAPE)]


@pytest.mark.parametrize("case,body", PAIRS)
def test_vmap_of_transform_with_control_flow_matches_torch(case, body):
    want = _outcome(_cases(torch.func, torch, _bodies(torch)[body])[case])
    got = _outcome(_cases(efunc, ember, _bodies(ember)[body])[case])
    terr, eerr = _compare(got, want)
    if terr is not None:
        assert str(eerr) == str(terr), (str(eerr), str(terr))


def test_allowed_and_refused_cases_are_both_present():
    # what the parametrized test above relies on, checked on torch: the unbatched-primal
    # cases give values and the batched ones raise torch's wording through the transforms
    f = _bodies(torch)["if"]
    cases = _cases(torch.func, torch, f)
    assert _outcome(cases["jvp_batched_tangent"])[0] == "ok"
    kind, err = _outcome(cases["jvp_batched_primal"])
    assert kind == "error" and type(err) is RuntimeError
    with pytest.raises(RuntimeError, match=THROUGH):
        _cases(efunc, ember, _bodies(ember)["if"])["jvp_batched_primal"]()


def _linearize_cases(F, lib, f, lin):
    """vmap of linearize's jvp_fn (ember) or of jvp (torch, whose linearize refuses control
    flow): made outside the vmap, and made inside it."""
    x, T = lib.tensor(X0, dtype=lib.float64), lib.tensor(T0, dtype=lib.float64)
    if lin:
        outside = lambda: F.vmap(F.linearize(f, x)[1])(T)        # noqa: E731
        inside = lambda: F.vmap(lambda t: F.linearize(f, x)[1](t))(T)   # noqa: E731
    else:
        outside = inside = lambda: F.vmap(lambda t: F.jvp(f, (x,), (t,))[1])(T)  # noqa: E731
    return {"outside": outside, "inside": inside}


@pytest.mark.parametrize("where", ["outside", "inside"])
@pytest.mark.parametrize("body", BODIES)
def test_vmap_of_linearize_with_control_flow_matches_torch_jvp(body, where):
    want = _outcome(_linearize_cases(torch.func, torch, _bodies(torch)[body], False)[where])
    got = _outcome(_linearize_cases(efunc, ember, _bodies(ember)[body], True)[where])
    _compare(got, want)


def _inplace_cases(F, lib):
    x, T = lib.tensor(X0, dtype=lib.float64), lib.tensor(T0, dtype=lib.float64)
    return {
        # an unbatched value written into the unbatched primal, then control flow: allowed
        "unbatched_into_primal": lambda: F.vmap(lambda t: F.jvp(
            lambda q: q.clone().add_(x) * (2 if q.sum() > 0 else 3), (x,), (t,)))(T),
        "unbatched_into_primal_mul": lambda: F.vmap(lambda t: F.jvp(
            lambda q: q.clone().mul_(x), (x,), (t,)))(T),
        # a batched value written into the unbatched primal: refused
        "batched_into_primal": lambda: F.vmap(lambda t: F.jvp(
            lambda q: q.clone().add_(t), (x,), (x,)))(T),
        "batched_into_grad_input": lambda: F.vmap(lambda t: F.grad(
            lambda q: q.clone().add_(t).sum())(x))(T),
        "different_randomness_into_primal": lambda: F.vmap(lambda t: F.jvp(
            lambda q: q.clone().uniform_() + q, (x,), (t,)), randomness="different")(T),
        # control flow on a value mixing the primal with a batched closure: refused
        "mixed_with_batched_closure": lambda: F.vmap(lambda t: F.jvp(
            lambda q: q if (q * t).sum() > 0 else -q, (x,), (x,)))(T),
        "on_the_tangent": lambda: F.vmap(lambda t: F.jvp(
            lambda q: q if t.sum() > 1 else -q, (x,), (t,)))(T),
        "has_aux": lambda: F.vmap(lambda t: F.jvp(
            lambda q: (q.sin(), q.max()) if q.max() > 1 else (q, q.min()), (x,), (t,),
            has_aux=True))(T),
    }


@pytest.mark.parametrize("case", list(_inplace_cases(efunc, ember)))
def test_inplace_and_mixed_values_match_torch(case):
    want = _outcome(_inplace_cases(torch.func, torch)[case])
    got = _outcome(_inplace_cases(efunc, ember)[case])
    terr, eerr = _compare(got, want)
    if terr is not None and "vmap: It looks like" in str(terr):
        assert str(eerr) == str(terr)
