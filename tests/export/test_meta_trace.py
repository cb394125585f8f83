"""Export traces on meta stand-ins (ember/export/_fake.py): no compute, no memory, state and RNG
untouched; a model built on the meta device exports, and its program run on real weights
equals eager ember and torch on the same weights; an op without a meta rule falls back to a
real trace with the op named in ``ep.trace_info``."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.export as E
from ember.examples.gpt import GPT

SMALL = dict(block_size=8, n_layer=2, n_head=2, n_embd=16)


def _torch_gpt(em):
    from benchmarks.train_workloads import example_module
    tm = example_module(torch, "gpt").GPT(**SMALL).eval()
    tm.load_state_dict({k: torch.tensor(v.detach().numpy().copy())
                        for k, v in em.state_dict().items()})
    return tm


def test_real_model_traces_on_meta_and_is_untouched():
    ember.manual_seed(0)
    m = GPT(**SMALL, dropout=0.5).train()    # dropout in training: draws random numbers
    before = {k: v.detach().clone() for k, v in m.state_dict().items()}
    versions = {k: v._version for k, v in m.state_dict().items()}
    arrays = {k: v._data for k, v in m.state_dict().items()}
    idx = ember.randint(0, 256, (2, 8))
    rng = ember.get_rng_state()
    ep = E.export(m, (idx,))
    assert ep.trace_info == {"device": "meta", "reason": None}
    assert bool((ember.get_rng_state() == rng).all())
    for k, v in m.state_dict().items():
        assert v._data is arrays[k] and not v.is_meta and v._version == versions[k]
        assert ember.equal(v, before[k])
    # the program holds the caller's tensors, with their values
    own = dict(m.named_parameters())
    own.update(m.named_buffers())
    assert all(ep.state_dict[k] is own[k] for k in ep.state_dict)
    m.eval()
    epe = E.export(m, (idx,), dynamic_shapes={"idx": {0: E.Dim("batch", max=16)}})
    assert epe.trace_info["device"] == "meta"
    tm = _torch_gpt(m)
    for b in (2, 5):
        x = ember.randint(0, 256, (b, 8))
        with ember.no_grad():
            got = epe.module()(x)[0].numpy()
            np.testing.assert_allclose(got, m(x)[0].numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, tm(torch.tensor(x.numpy()))[0].detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_model_built_on_meta_exports_and_runs_on_real_weights():
    ember.manual_seed(1)
    real = GPT(**SMALL).eval()
    with ember.device("meta"):
        m = GPT(**SMALL).eval()
    assert all(p.is_meta for p in m.parameters())
    idx = ember.randint(0, 256, (3, 8))
    ep = E.export(m, (idx,), dynamic_shapes={"idx": {0: E.Dim("batch", max=8)}})
    assert ep.trace_info["device"] == "meta"
    assert all(p.is_meta for p in m.parameters())
    # the recorded program creates its own tensors on the real state's device, not on meta
    assert "type='meta'" not in str(ep.graph_module)
    mod = ep.module()
    mod.load_state_dict(real.state_dict(), assign=True)
    tm = _torch_gpt(real)
    for b in (3, 6):
        x = ember.randint(0, 256, (b, 8))
        with ember.no_grad():
            got = mod(x)[0].numpy()
            np.testing.assert_allclose(got, real(x)[0].numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, tm(torch.tensor(x.numpy()))[0].detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_export_of_a_model_too_big_to_build_for_real():
    # ~3.4 GB of float32 parameters: exporting it must neither compute nor allocate them
    with ember.device("meta"):
        m = enn.Sequential(enn.Linear(30000, 30000), enn.GELU(), enn.Linear(30000, 8))
    ep = E.export(m, (ember.empty(4, 30000, device="meta"),))
    assert ep.trace_info["device"] == "meta"
    out = [n for n in ep.graph.nodes if n.kind == "output"][0].args[0][0]
    assert tuple(out.meta[0]) == (4, 8)


class _Hist(enn.Module):
    """histogram has no meta kernel (torch's meta device has none either)."""
    def __init__(self, lib):
        super().__init__()
        self.lib = lib

    def forward(self, y):
        return self.lib.histogram(y.flatten(), bins=5, range=(-3.0, 3.0)).hist


def test_op_without_meta_rule_falls_back_to_real_tensors_naming_it():
    # (any op without a meta rule would do)
    em = enn.Sequential(enn.Conv2d(2, 3, 3), _Hist(ember))
    x = ember.randn(2, 2, 8, 8)
    w = em[0].weight._data.copy()
    ep = E.export(em, (x,))
    assert ep.trace_info["device"] == "cpu"
    assert "histogram" in ep.trace_info["reason"]
    assert np.array_equal(em[0].weight._data, w)
    with ember.no_grad():
        # (the conv is ember's, so the counts compare exactly)
        want = torch.histogram(torch.tensor(em[0](x).numpy()).flatten(), bins=5,
                               range=(-3.0, 3.0)).hist
        np.testing.assert_allclose(ep.module()(x).numpy(), want.numpy())
    # a model on meta has no real tensors to fall back to: the meta error, naming the op
    with ember.device("meta"):
        mm = enn.Sequential(enn.Conv2d(2, 3, 3), _Hist(ember))
    with pytest.raises(NotImplementedError, match="histogram"):
        E.export(mm, (x,))


def test_data_dependent_branch_still_names_the_line_on_meta():
    class Branch(enn.Module):
        def forward(self, x):
            if x.sum() > 0:          # the line the error names
                return x * 2
            return x
    with pytest.raises(E.UserError, match="test_meta_trace.py"):
        E.export(Branch(), (ember.randn(3),))


def test_cnn_and_layers_with_cpu_helpers_trace_on_meta():
    # max pooling, reflection padding and bilinear upsampling build cpu helpers (indices,
    # interpolation weights) inside the op: they meet the meta input without a device error
    from ember.examples.cnn import ResNet
    em = enn.Sequential(enn.Conv2d(3, 4, 3), enn.MaxPool2d(2), enn.ReflectionPad2d(1),
                        enn.Upsample(scale_factor=2, mode="bilinear")).eval()
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.MaxPool2d(2),
                             torch.nn.ReflectionPad2d(1),
                             torch.nn.Upsample(scale_factor=2, mode="bilinear")).eval()
    tm.load_state_dict({k: torch.tensor(v.detach().numpy().copy())
                        for k, v in em.state_dict().items()})
    x = ember.randn(2, 3, 9, 9)
    ep = E.export(em, (x,), dynamic_shapes={"input": {0: E.Dim("b", max=8)}})
    assert ep.trace_info == {"device": "meta", "reason": None}
    for b in (2, 3):
        xb = ember.randn(b, 3, 9, 9)
        with ember.no_grad():
            np.testing.assert_allclose(ep.module()(xb).numpy(),
                                       tm(torch.tensor(xb.numpy())).detach().numpy(), rtol=1e-5,
                                       atol=1e-5)
    cnn = ResNet().eval()
    ep = E.export(cnn, (ember.randn(2, 3, 32, 32),))
    assert ep.trace_info["device"] == "meta"
    xb = ember.randn(2, 3, 32, 32)
    with ember.no_grad():
        np.testing.assert_allclose(ep.module()(xb).numpy(), cnn(xb).numpy(), rtol=1e-5,
                                   atol=1e-5)


def test_tensors_the_forward_makes_and_devices_it_reads():
    class Pos(enn.Module):
        def __init__(self):
            super().__init__()
            self.lin = enn.Linear(4, 4)

        def forward(self, x):
            pos = ember.arange(x.shape[1], device=x.device).float()    # on x's device
            mask = ember.ones(x.shape[1], x.shape[1]).tril()           # a cpu tensor
            return (mask @ self.lin(x)) + pos[:, None]

    class TPos(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            pos = torch.arange(x.shape[1], device=x.device).float()
            mask = torch.ones(x.shape[1], x.shape[1]).tril()
            return (mask @ self.lin(x)) + pos[:, None]
    em, tm = Pos(), TPos()
    tm.load_state_dict({k: torch.tensor(v.detach().numpy().copy())
                        for k, v in em.state_dict().items()})
    x = ember.randn(2, 5, 4)
    ep = E.export(em, (x,), dynamic_shapes={"x": {0: E.Dim("b", max=8)}})
    assert ep.trace_info["device"] == "meta"
    assert "type='meta'" not in str(ep.graph_module)
    for b in (2, 3):
        xb = ember.randn(b, 5, 4)
        with ember.no_grad():
            np.testing.assert_allclose(ep.module()(xb).numpy(),
                                       tm(torch.tensor(xb.numpy())).detach().numpy(),
                                       rtol=1e-5, atol=1e-5)


def test_kernels_the_meta_trace_relies_on_stay_meta():
    # float32 erf of >= 4096 elements had a blocked kernel that read the (absent) data of a
    # meta array and returned a cpu tensor; pooling's select and indices helpers had no
    # meta path. torch gives meta results of the cpu results' shapes and dtypes.
    x = ember.empty(64, 64, device="meta")
    y = x.erf()
    assert y.is_meta and y.shape == (64, 64) and y.dtype is ember.float32
    xm = ember.empty(2, 3, 8, 8, device="meta")
    out, idx = ember.nn.functional.max_pool2d(xm, 2, return_indices=True)
    t_out, t_idx = torch.nn.functional.max_pool2d(torch.empty(2, 3, 8, 8, device="meta"), 2,
                                                  return_indices=True)
    assert out.is_meta and idx.is_meta
    assert tuple(out.shape) == tuple(t_out.shape) and tuple(idx.shape) == tuple(t_idx.shape)
    assert str(idx.dtype).split(".")[1] == str(t_idx.dtype).split(".")[1]
