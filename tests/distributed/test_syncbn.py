"""SyncBatchNorm: over 2 MPI ranks (the launch shared with test_ddp.py, _ddp_launch.py) it
equals torch's BatchNorm on the concatenated batch (forward, input/weight/bias gradients,
running statistics, eval mode), on the default group and on a new_group; without a process
group it is torch's SyncBatchNorm (plain batch norm); convert_sync_batchnorm as torch's.
"""
import numpy as np
import pytest
import torch

import ember
import ember.nn as enn

try:
    from ._ddp_launch import SYNC_BN_CASES as CASES, results as launch
    from ._mpi import requires_mpi
except ImportError:
    from _ddp_launch import SYNC_BN_CASES as CASES, results as launch
    from _mpi import requires_mpi


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return launch(tmp_path_factory)


def _torch_bn(data, name):
    """torch's BatchNorm on the whole batch: the same steps as the worker."""
    shape, split, affine, momentum = CASES[name]
    k = "sbn." + name + "."
    bn = torch.nn.BatchNorm1d(shape[1], momentum=None if momentum < 0 else momentum,
                              affine=affine) if len(shape) < 4 else \
        torch.nn.BatchNorm2d(shape[1], momentum=momentum, affine=affine)
    if affine:
        with torch.no_grad():
            bn.weight.copy_(torch.tensor(data[k + "weight"]))
            bn.bias.copy_(torch.tensor(data[k + "bias"]))
    x = torch.tensor(data[k + "x"]).requires_grad_()
    y = bn(x)
    y.backward(torch.tensor(data[k + "dy"]))
    with torch.no_grad():
        bn(torch.tensor(data[k + "x"]) * 2 + 1)
    bn.eval()
    return bn, x, y, bn(torch.tensor(data[k + "x"])).detach()


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=what)


@requires_mpi
@pytest.mark.parametrize("name", sorted(CASES))
def test_sync_batchnorm_equals_batchnorm_on_the_global_batch(results, name):
    data, ranks = results
    split, k = CASES[name][1], "sbn." + name + "."
    bn, x, y, y_eval = _torch_bn(data, name)
    for r, got in enumerate(ranks):
        rows = slice(0, split) if r == 0 else slice(split, None)
        _close(got[k + "y"], y.detach().numpy()[rows], f"rank {r} forward")
        _close(got[k + "xgrad"], x.grad.numpy()[rows], f"rank {r} input grad")
        _close(got[k + "running_mean"], bn.running_mean.numpy(), f"rank {r} running_mean")
        _close(got[k + "running_var"], bn.running_var.numpy(), f"rank {r} running_var")
        assert int(got[k + "num_batches_tracked"]) == int(bn.num_batches_tracked)
        _close(got[k + "eval"], y_eval.numpy()[rows], f"rank {r} eval forward")
    if CASES[name][2]:
        # weight/bias gradients stay local (DDP averages them): their sum is torch's
        _close(ranks[0][k + "wgrad"] + ranks[1][k + "wgrad"],
               bn.weight.grad.numpy(), "weight grad")
        _close(ranks[0][k + "bgrad"] + ranks[1][k + "bgrad"],
               bn.bias.grad.numpy(), "bias grad")


# ---- one process, no process group: torch's SyncBatchNorm falls back to batch norm ----

def test_without_a_process_group_it_is_torch_sync_batchnorm():
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((6, 3, 4)).astype(np.float32)
    dyn = rng.standard_normal((6, 3, 4)).astype(np.float32)
    results = []
    for lib in (torch, ember):
        bn = lib.nn.SyncBatchNorm(3, momentum=0.2)
        x = lib.tensor(xn).requires_grad_()
        y = bn(x)
        y.backward(lib.tensor(dyn))
        bn.eval()
        results.append([y.detach().numpy(), x.grad.numpy(), bn.weight.grad.numpy(),
                        bn.running_mean.numpy(), bn.running_var.numpy(),
                        bn(lib.tensor(xn)).detach().numpy()])
    for got, want in zip(results[1], results[0]):
        _close(got, want, "fallback")


def test_convert_sync_batchnorm_like_torch():
    def build(nn):
        inner = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3, momentum=0.3))
        return nn.Sequential(inner, nn.BatchNorm1d(4, affine=False, eps=1e-3), nn.ReLU())
    t = torch.nn.SyncBatchNorm.convert_sync_batchnorm(build(torch.nn))
    net = build(enn)
    old_bn = net[0][1]
    e = enn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert [type(m).__name__ for m in e.modules()] == [type(m).__name__ for m in t.modules()]
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(e.state_dict()) == list(t.state_dict())
    new_bn = e[0][1]
    assert new_bn.weight is old_bn.weight and new_bn.running_mean is old_bn.running_mean
    assert (new_bn.momentum, e[1].eps, e[1].affine) == (0.3, 1e-3, False)
    # a bare BatchNorm comes back as a new SyncBatchNorm
    bare = enn.BatchNorm1d(5).eval()
    conv = enn.SyncBatchNorm.convert_sync_batchnorm(bare)
    assert isinstance(conv, enn.SyncBatchNorm) and conv is not bare and not conv.training


@pytest.mark.parametrize("shape,text", [((5,), "expected at least 2D input"),
                                        ((4, 0), "number of input channels should be non-zero")])
def test_bad_input_raises_like_torch(shape, text):
    for lib in (torch, ember):
        bn = lib.nn.SyncBatchNorm(max(shape[-1], 1))
        with pytest.raises(ValueError, match=text):
            bn(lib.zeros(shape))


def test_bias_false():
    t, e = torch.nn.SyncBatchNorm(3, bias=False), enn.SyncBatchNorm(3, bias=False)
    assert e.bias is None and t.bias is None
    assert list(e.state_dict()) == list(t.state_dict())
