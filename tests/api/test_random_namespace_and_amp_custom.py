"""torch.random's namespace (fork_rng), torch.amp's custom_fwd/custom_bwd and
is_autocast_available, and torch.func.replace_all_batch_norm_modules_, each against torch."""
import numpy as np
import pytest
import torch

import ember


LIBS = [torch, ember]


@pytest.mark.parametrize("lib", LIBS, ids=["torch", "ember"])
def test_fork_rng_restores_the_state_on_exit(lib):
    lib.manual_seed(0)
    with lib.random.fork_rng():
        inside = lib.rand(3)
    after = lib.rand(3)
    assert lib.equal(inside, after)          # the block's draws did not advance the state
    with lib.random.fork_rng(enabled=False):
        lib.rand(3)
    assert not lib.equal(lib.rand(3), after)
    with pytest.raises(ZeroDivisionError):   # restored when the block raises, too
        with lib.random.fork_rng():
            lib.rand(5)
            1 / 0
    lib.manual_seed(1)
    a = lib.rand(2)
    lib.manual_seed(1)
    with lib.random.fork_rng(devices=[]):
        lib.rand(7)
    assert lib.equal(lib.rand(2), a)


def test_random_namespace_has_torchs_names():
    for name in ("Generator", "default_generator", "manual_seed", "seed", "initial_seed",
                 "get_rng_state", "set_rng_state", "fork_rng"):
        assert hasattr(torch.random, name) and hasattr(ember.random, name), name
    g = ember.random.manual_seed(3)
    assert g is ember.random.default_generator and ember.random.initial_seed() == 3
    st = ember.random.get_rng_state()
    x = ember.rand(4)
    ember.random.set_rng_state(st)
    assert ember.equal(ember.rand(4), x)


def _function_class(lib, seen, cast_inputs):
    amp = lib.amp

    class Scale(lib.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, w):
            seen["fwd"] = (str(a.dtype).split(".")[-1], str(w.dtype).split(".")[-1],
                           lib.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, w)
            return a @ w

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, w = ctx.saved_tensors
            seen["bwd"] = lib.is_autocast_enabled("cpu")
            return g @ w.t(), a.t() @ g
    return Scale


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
@pytest.mark.parametrize("autocast_on", [True, False])
def test_custom_fwd_and_bwd_follow_torch(cast_inputs, autocast_on):
    rng = np.random.default_rng(0)
    a_np, w_np = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    res = []
    for lib in LIBS:
        seen = {}
        fn = _function_class(lib, seen, None if cast_inputs is None else lib.float32)
        a = lib.tensor(a_np, dtype=lib.float32, requires_grad=True)
        w = lib.tensor(w_np, dtype=lib.float32, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocast_on):
            out = fn.apply(a, w)
            out.float().sum().backward()
        res.append((seen, str(out.dtype).split(".")[-1], str(a.grad.dtype).split(".")[-1],
                    str(w.grad.dtype).split(".")[-1]))
    assert res[0] == res[1]


def test_custom_fwd_needs_a_device_type_and_is_autocast_available():
    for lib in LIBS:
        with pytest.raises(TypeError):
            lib.amp.custom_fwd(lambda ctx, x: x)
        with pytest.raises(TypeError):
            lib.amp.custom_bwd(lambda ctx, g: g)
        assert lib.amp.is_autocast_available("cpu") is True
        assert lib.amp.is_autocast_available("meta") is False


def _bn_model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3),
                         nn.Sequential(nn.Flatten(), nn.BatchNorm1d(12, affine=False)),
                         nn.Linear(12, 2))


def test_replace_all_batch_norm_modules_is_torchs():
    got = []
    for lib in LIBS:
        m = _bn_model(lib)
        assert lib.func.replace_all_batch_norm_modules_(m) is m
        bns = [x for x in m.modules() if type(x).__name__.startswith("BatchNorm")]
        got.append(([(x.running_mean, x.running_var, x.num_batches_tracked,
                      x.track_running_stats) for x in bns], sorted(m.state_dict())))
    assert got[0] == got[1]


def test_vmap_over_a_model_with_batch_norm_after_the_replacement():
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((4, 5, 2, 2, 2)).astype(np.float32)   # 4 models' batches
    outs = []
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.func.replace_all_batch_norm_modules_(_bn_model(lib))
        torch.manual_seed(0)
        ref = _bn_model(torch)
        sd = {k: lib.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()
              if "running" not in k and "num_batches" not in k}
        m.load_state_dict(sd)
        out = lib.func.vmap(lambda x: lib.func.functional_call(m, dict(m.named_parameters()),
                                                               (x,)))(lib.tensor(xs))
        outs.append(out.detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-5)


def test_custom_fwd_casts_lower_precision_inputs_in_an_autocast_region():
    res = []
    for lib in LIBS:
        seen = {}
        fn = _function_class(lib, seen, lib.float32)
        a = lib.ones(3, 4, dtype=lib.bfloat16, requires_grad=True)
        w = lib.ones(4, 2, dtype=lib.bfloat16, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = fn.apply(a, w)
        out.sum().backward()
        res.append((seen, str(out.dtype).split(".")[-1], str(a.grad.dtype).split(".")[-1]))
    assert res[0] == res[1]
    assert res[1][0]["fwd"] == ("float32", "float32", False)
