"""ember.func.functional_call and stack_module_state against torch.func: values, tied weights,
strict mode, restoring the module's state (also after an error), gradients through the
given tensors, and the errors."""
import copy

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef


def mirrored(seed=0):
    """The same small MLP (with a batch norm, for buffers) in ember and in torch."""
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2))
    me, mt = build(ember), build(torch)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for (ne, pe), (nt, pt) in zip(me.named_parameters(), mt.named_parameters()):
            a = rng.standard_normal(tuple(pt.shape)).astype(np.float32)
            pt.copy_(torch.tensor(a))
            pe.detach().copy_(ember.tensor(a))
    return me, mt


def arr(rng, *shape):
    a = rng.standard_normal(shape).astype(np.float32)
    return ember.tensor(a), torch.tensor(a)


def close(e, t, tol=1e-5):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def test_functional_call_replaces_and_restores():
    me, mt = mirrored()
    rng = np.random.default_rng(1)
    (we, wt), (xe, xt) = arr(rng, 4, 3), arr(rng, 5, 3)
    before = {n: p.detach().numpy().copy() for n, p in me.named_parameters()}
    ye = ef.functional_call(me, {"0.weight": we}, (xe,))
    yt = tf.functional_call(mt, {"0.weight": wt}, (xt,))
    close(ye, yt)
    for n, p in me.named_parameters():           # the module's own tensors are back
        assert type(p) is ember.nn.Parameter
        np.testing.assert_array_equal(p.detach().numpy(), before[n])
    # args as a single tensor, kwargs, a list of dicts (params and buffers separately)
    pe = {k: v * 2 for k, v in me.named_parameters()}
    pt = {k: v * 2 for k, v in mt.named_parameters()}
    be = {k: v + 1 for k, v in me.named_buffers() if v.is_floating_point()}
    bt = {k: v + 1 for k, v in mt.named_buffers() if v.is_floating_point()}
    me.eval()
    mt.eval()
    close(ef.functional_call(me, [pe, be], xe), tf.functional_call(mt, [pt, bt], xt))
    close(ef.functional_call(me, (pe, be), args=(), kwargs={"input": xe}),
          tf.functional_call(mt, (pt, bt), args=(), kwargs={"input": xt}))


def test_functional_call_gradients_flow_to_the_given_tensors():
    me, mt = mirrored()
    rng = np.random.default_rng(2)
    xe, xt = arr(rng, 5, 3)
    pe = {k: v.detach().clone().requires_grad_() for k, v in me.named_parameters()}
    pt = {k: v.detach().clone().requires_grad_() for k, v in mt.named_parameters()}
    ef.functional_call(me, pe, (xe,)).pow(2).sum().backward()
    tf.functional_call(mt, pt, (xt,)).pow(2).sum().backward()
    for k in pt:
        close(pe[k].grad, pt[k].grad, 1e-4)
    assert all(p.grad is None for p in me.parameters())


def test_buffers_updated_in_the_call_do_not_leak():
    me, mt = mirrored()
    rng = np.random.default_rng(3)
    xe, xt = arr(rng, 6, 3)
    re, rt = ember.zeros(4), torch.zeros(4)
    ef.functional_call(me, {"1.running_mean": re}, (xe,))
    tf.functional_call(mt, {"1.running_mean": rt}, (xt,))
    close(re, rt)                                   # the given buffer was updated in place
    close(me[1].running_mean, mt[1].running_mean)   # the module's own one was not


class Tied:
    @staticmethod
    def build(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(2, 2, bias=False)
                self.b = nn.Linear(2, 2, bias=False)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        lib.manual_seed(0)
        m = M()
        with lib.no_grad():
            m.a.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        return m


@pytest.mark.parametrize("values,tie", [
    ({"a.weight": 2.0}, True), ({"b.weight": 2.0}, True), ({"a.weight": 2.0}, False),
    ({"b.weight": 3.0}, False), ({"a.weight": 2.0, "b.weight": 3.0}, False),
])
def test_tied_weights(values, tie):
    outs = []
    for lib, F in ((ember, ef), (torch, tf)):
        m = Tied.build(lib)
        vals = {k: lib.eye(2) * v for k, v in values.items()}
        outs.append(F.functional_call(m, vals, (lib.ones(1, 2),), tie_weights=tie))
    close(*outs)


@pytest.mark.parametrize("case", [
    lambda lib, F, m: F.functional_call(m, {"a.weight": lib.eye(2), "b.weight": lib.eye(2)},
                                        (lib.ones(1, 2),)),
    lambda lib, F, m: F.functional_call(lib.nn.Linear(2, 2), {"weight": lib.eye(2)},
                                        (lib.ones(1, 2),), strict=True),
    lambda lib, F, m: F.functional_call(lib.nn.Linear(2, 2), {"weight": lib.eye(2),
                                        "bias": lib.ones(2), "foo": lib.ones(1)},
                                        (lib.ones(1, 2),), strict=True),
    lambda lib, F, m: F.functional_call(m, ({"a.weight": lib.eye(2)}, {"a.weight": lib.eye(2)}),
                                        (lib.ones(1, 2),)),
    lambda lib, F, m: F.functional_call(m, 3, (lib.ones(1, 2),)),
    lambda lib, F, m: F.functional_call(m, {}, (lib.ones(1, 2),), {"foo": 1}),
])
def test_functional_call_errors(case):
    kinds, msgs = [], []
    for lib, F in ((torch, tf), (ember, ef)):
        with pytest.raises(Exception) as info:
            case(lib, F, Tied.build(lib))
        kinds.append(info.type)
        msgs.append(str(info.value))
    assert kinds[0] is kinds[1], msgs
    if kinds[0] is not TypeError:            # (TypeError text names each library's class)
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("tie", [True, False])
def test_strict_with_tied_weights(tie):
    outs = []
    for lib, F in ((torch, tf), (ember, ef)):
        m = Tied.build(lib)
        try:
            outs.append(F.functional_call(m, {"a.weight": lib.eye(2) * 2}, (lib.ones(1, 2),),
                                          strict=True, tie_weights=tie).detach().numpy())
        except RuntimeError as e:
            outs.append(str(e))
    if isinstance(outs[0], str):
        assert outs[0] == outs[1]
    else:
        np.testing.assert_allclose(outs[1], outs[0])


def test_state_restored_after_an_error():
    class Boom(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = ember.nn.Parameter(ember.ones(2))

        def forward(self, x):
            assert type(self.w) is ember.Tensor           # the given tensor, as in torch
            raise ValueError("boom")
    m = Boom()
    own = m.w
    with pytest.raises(ValueError):
        ef.functional_call(m, {"w": ember.zeros(2)}, (ember.ones(1),))
    assert m.w is own and m._parameters["w"] is own


def test_non_strict_unknown_name_is_set_for_the_call_only():
    m = ember.nn.Linear(2, 2)
    seen = []
    m.register_forward_hook(lambda mod, i, o: seen.append(mod.foo))
    ef.functional_call(m, {"foo": ember.ones(1)}, (ember.ones(1, 2),))
    assert len(seen) == 1 and not hasattr(m, "foo")


def test_stack_module_state():
    models_e = [mirrored(s)[0] for s in range(3)]
    models_t = [mirrored(s)[1] for s in range(3)]
    pe, be = ef.stack_module_state(models_e)
    pt, bt = tf.stack_module_state(models_t)
    assert list(pe) == list(pt) and list(be) == list(bt)
    for k in pt:
        close(pe[k], pt[k])
        assert pe[k].is_leaf and pe[k].requires_grad == pt[k].requires_grad
    for k in bt:
        np.testing.assert_allclose(be[k].numpy(), bt[k].numpy())
    for lib, F in ((ember, ef), (torch, tf)):
        with pytest.raises(RuntimeError, match="Expected at least one model"):
            F.stack_module_state([])
        with pytest.raises(RuntimeError, match="same training/eval mode"):
            F.stack_module_state([lib.nn.Linear(3, 2), lib.nn.Linear(3, 2).eval()])
        ms = [lib.nn.Linear(3, 2), lib.nn.Linear(3, 2)]
        ms[1].weight.requires_grad_(False)
        with pytest.raises(RuntimeError, match="same .requires_grad"):
            F.stack_module_state(ms)


def test_ensemble_recipe_matches_torch():
    models_e = [mirrored(s)[0].eval() for s in range(4)]
    models_t = [mirrored(s)[1].eval() for s in range(4)]
    rng = np.random.default_rng(4)
    xe, xt = arr(rng, 5, 3)
    outs = []
    for lib, F, models, x in ((ember, ef, models_e, xe), (torch, tf, models_t, xt)):
        params, buffers = F.stack_module_state(models)
        base = copy.deepcopy(models[0])
        outs.append(F.vmap(lambda p, b, x: F.functional_call(base, (p, b), (x,)),
                           in_dims=(0, 0, None))(params, buffers, x))
    assert tuple(outs[0].shape) == (4, 5, 2)
    close(*outs, tol=1e-4)
    for i, m in enumerate(models_e):                     # equals a loop over the models
        close(outs[0][i], m(xe), 1e-5)
