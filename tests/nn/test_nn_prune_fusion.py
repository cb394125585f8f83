"""nn.utils.prune, nn.utils.fusion, nn.utils.stateless, the conv weight memory formats and
skip_init, against torch: masks, pruned values, gradients, iterative pruning, removal,
global pruning, fused layers' outputs, and torch's errors."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune as TPR

import ember
from ember import nn
from ember.nn.utils import prune as EPR


def _pair(cls_t, cls_e, *args, seed=0):
    torch.manual_seed(seed)
    t = cls_t(*args).double()
    e = cls_e(*args).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, e


def _close(e, t, tol=1e-10):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _conv_pair(seed=0):
    return _pair(torch.nn.Conv2d, nn.Conv2d, 3, 5, 3, seed=seed)


@pytest.mark.parametrize("amount", [0.3, 7, 0])
def test_l1_unstructured(amount):
    t, e = _conv_pair()
    TPR.l1_unstructured(t, "weight", amount=amount)
    EPR.l1_unstructured(e, "weight", amount=amount)
    _close(e.weight_mask, t.weight_mask, 0)
    _close(e.weight, t.weight)
    assert sorted(e.state_dict()) == sorted(t.state_dict())
    assert EPR.is_pruned(e) and TPR.is_pruned(t)
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5))
    t(torch.tensor(x)).sum().backward()
    e(ember.tensor(x)).sum().backward()
    _close(e.weight_orig.grad, t.weight_orig.grad)


@pytest.mark.parametrize("n,dim", [(1, 0), (2, 1), (float("inf"), -1)])
def test_ln_structured_then_l1_combines_masks(n, dim):
    t, e = _conv_pair(1)
    TPR.ln_structured(t, "weight", amount=2, n=n, dim=dim)
    EPR.ln_structured(e, "weight", amount=2, n=n, dim=dim)
    _close(e.weight_mask, t.weight_mask, 0)
    # a second method acts on what is left (PruningContainer)
    TPR.l1_unstructured(t, "weight", amount=0.25)
    EPR.l1_unstructured(e, "weight", amount=0.25)
    _close(e.weight_mask, t.weight_mask, 0)
    te = [h for h in e._forward_pre_hooks.values() if isinstance(h, EPR.BasePruningMethod)]
    assert len(te) == 1 and isinstance(te[0], EPR.PruningContainer) and len(te[0]) == 2
    TPR.remove(t, "weight")
    EPR.remove(e, "weight")
    assert isinstance(e.weight, nn.Parameter) and not EPR.is_pruned(e)
    _close(e.weight, t.weight)
    assert sorted(e.state_dict()) == sorted(t.state_dict())


def test_random_methods_prune_the_right_counts():
    t, e = _conv_pair(2)
    EPR.random_unstructured(e, "weight", amount=0.4)
    TPR.random_unstructured(t, "weight", amount=0.4)
    assert int((e.weight_mask == 0).sum()) == int((t.weight_mask == 0).sum())
    e2, t2 = _conv_pair(3)[1], _conv_pair(3)[0]
    EPR.random_structured(e2, "weight", amount=2, dim=0)
    TPR.random_structured(t2, "weight", amount=2, dim=0)
    ek = e2.weight_mask.sum(dim=(1, 2, 3)) != 0
    tk = t2.weight_mask.sum(dim=(1, 2, 3)) != 0
    assert int(ek.sum()) == int(tk.sum()) == 3
    # whole channels: each kept channel is all ones
    assert bool((e2.weight_mask[ek] == 1).all())


def test_global_unstructured_and_custom_from_mask():
    (t1, e1), (t2, e2) = _conv_pair(4), _pair(torch.nn.Linear, nn.Linear, 6, 4, seed=5)
    TPR.global_unstructured([(t1, "weight"), (t2, "weight")], TPR.L1Unstructured, amount=20)
    EPR.global_unstructured([(e1, "weight"), (e2, "weight")], EPR.L1Unstructured, amount=20)
    _close(e1.weight_mask, t1.weight_mask, 0)
    _close(e2.weight_mask, t2.weight_mask, 0)
    mask = np.random.default_rng(1).integers(0, 2, (4,)).astype(np.float64)
    TPR.custom_from_mask(t2, "bias", torch.tensor(mask))
    EPR.custom_from_mask(e2, "bias", ember.tensor(mask))
    _close(e2.bias, t2.bias)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        TPR.global_unstructured([(t1, "bias")], TPR.LnStructured, amount=1, n=2, dim=0)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        EPR.global_unstructured([(e1, "bias")], EPR.LnStructured, amount=1, n=2, dim=0)


def test_identity_prune_method_and_errors():
    t, e = _pair(torch.nn.Linear, nn.Linear, 3, 2)
    TPR.identity(t, "weight")
    EPR.identity(e, "weight")
    _close(e.weight_mask, t.weight_mask, 0)
    x = torch.tensor([3.0, -1.0, 0.5, 2.0])
    ex = ember.tensor([3.0, -1.0, 0.5, 2.0])
    _close(EPR.L1Unstructured(amount=2).prune(ex), TPR.L1Unstructured(amount=2).prune(x))
    cases = [(lambda m: m.l1_unstructured(m_lin, "weight", amount=1.5), ValueError,
              "should either be a float in the range"),
             (lambda m: m.l1_unstructured(m_lin, "weight", amount="a"), TypeError,
              "Invalid type for amount"),
             (lambda m: m.l1_unstructured(m_lin, "weight", amount=100), ValueError,
              "should be smaller than the number of parameters"),
             (lambda m: m.ln_structured(m_lin, "bias", amount=1, n=2, dim=0), ValueError,
              "Structured pruning can only be applied to multidimensional tensors"),
             (lambda m: m.ln_structured(m_lin, "weight", amount=1, n=2, dim=4), IndexError,
              "Invalid index 4 for tensor of size"),
             (lambda m: m.remove(m_lin, "bias"), ValueError,
              "has to be pruned before pruning can be removed")]
    for fn, exc, msg in cases:
        for lib, mod in ((torch, TPR), (ember, EPR)):
            m_lin = lib.nn.Linear(3, 2)
            with pytest.raises(exc, match=msg):
                fn(mod)
            assert isinstance(m_lin.weight, lib.nn.Parameter)   # a failed prune leaves it


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    tc = (torch.nn.ConvTranspose2d if transpose else torch.nn.Conv2d)(3, 4, 3)
    ec = (nn.ConvTranspose2d if transpose else nn.Conv2d)(3, 4, 3)
    tb, eb = torch.nn.BatchNorm2d(4), nn.BatchNorm2d(4)
    rng = np.random.default_rng(2)
    tb.running_mean.copy_(torch.tensor(rng.standard_normal(4)))
    tb.running_var.copy_(torch.tensor(rng.uniform(0.5, 2, 4)))
    with torch.no_grad():
        tb.weight.copy_(torch.tensor(rng.standard_normal(4)))
        tb.bias.copy_(torch.tensor(rng.standard_normal(4)))
    for tm, em in ((tc, ec), (tb, eb)):
        em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                            tm.state_dict().items()})
        tm.eval()
        em.eval()
    tf = torch.nn.utils.fusion.fuse_conv_bn_eval(tc, tb, transpose=transpose)
    ef = nn.utils.fuse_conv_bn_eval(ec, eb, transpose=transpose)
    assert isinstance(ef.weight, nn.Parameter) and ef is not ec
    _close(ef.weight, tf.weight, 1e-6)
    _close(ef.bias, tf.bias, 1e-6)
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    _close(ef(ember.tensor(x)), eb(ec(ember.tensor(x))), 1e-4)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(ec.train(), eb)


def test_fuse_linear_bn_eval():
    t, e = _pair(torch.nn.Linear, nn.Linear, 5, 3)
    tb, eb = torch.nn.BatchNorm1d(3).double(), nn.BatchNorm1d(3).double()
    tb.running_var.fill_(2.0)
    eb.running_var.fill_(2.0)
    for m in (t, e, tb, eb):
        m.eval()
    tf = torch.nn.utils.fuse_linear_bn_eval(t, tb)
    ef = nn.utils.fuse_linear_bn_eval(e, eb)
    _close(ef.weight, tf.weight)
    _close(ef.bias, tf.bias)
    tw, tbias = torch.nn.utils.fuse_linear_bn_weights(t.weight, None, tb.running_mean,
                                                      tb.running_var, 1e-3, tb.weight, tb.bias)
    ew, ebias = nn.utils.fuse_linear_bn_weights(e.weight, None, eb.running_mean,
                                                eb.running_var, 1e-3, eb.weight, eb.bias)
    _close(ew, tw)
    _close(ebias, tbias)
    with pytest.raises(AssertionError, match="To fuse, linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(e, nn.BatchNorm1d(4).eval())


def test_stateless_functional_call_warns_and_matches_torch():
    t, e = _pair(torch.nn.Linear, nn.Linear, 3, 2)
    rng = np.random.default_rng(3)
    w, b, x = rng.standard_normal((2, 3)), rng.standard_normal(2), rng.standard_normal((4, 3))
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        to = torch.nn.utils.stateless.functional_call(t, {"weight": torch.tensor(w),
                                                          "bias": torch.tensor(b)},
                                                      (torch.tensor(x),))
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        eo = nn.utils.stateless.functional_call(e, {"weight": ember.tensor(w),
                                                    "bias": ember.tensor(b)}, (ember.tensor(x),))
    _close(eo, to)


def test_conv_weight_memory_format_and_skip_init():
    e = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.Conv2d(4, 4, 1)), nn.Conv3d(1, 1, 1))
    t = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1)),
                            torch.nn.Conv3d(1, 1, 1))
    torch.nn.utils.convert_conv2d_weight_memory_format(t, torch.channels_last)
    nn.utils.convert_conv2d_weight_memory_format(e, ember.channels_last)
    for tm, em in zip(t.modules(), e.modules()):
        if hasattr(tm, "weight"):
            assert em.weight.stride() == tm.weight.stride()
            assert isinstance(em.weight, nn.Parameter)
    torch.nn.utils.convert_conv3d_weight_memory_format(t, torch.channels_last_3d)
    nn.utils.convert_conv3d_weight_memory_format(e, ember.channels_last_3d)
    assert e[2].weight.stride() == t[2].weight.stride()
    m = nn.utils.skip_init(nn.Linear, 4, 3, bias=False)
    tm = torch.nn.utils.skip_init(torch.nn.Linear, 4, 3, bias=False)
    assert tuple(m.weight.shape) == tuple(tm.weight.shape) and m.bias is None

    class NoDevice(nn.Module):
        def __init__(self):
            super().__init__()
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(NoDevice)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
