"""ember.utils.grad_doctor: each diagnosis on a small model built to show it, the figures
against torch's gradients for the same model, and a healthy model that reports nothing
alarming."""
import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.autograd.grad_mode import state
from ember.utils import grad_doctor


def mlp(sizes, act=nn.ReLU, lib=nn):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(lib.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(act())
    return lib.Sequential(*layers)


def test_a_healthy_model_reports_nothing_alarming_and_its_figures_match_torch():
    ember.manual_seed(0)
    model = mlp([8, 32, 32, 1])
    tmodel = mlp([8, 32, 32, 1], act=torch.nn.ReLU, lib=torch.nn)
    with torch.no_grad():
        for (_, p), (_, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 8)).astype(np.float32), rng.standard_normal((64, 1))
    y = y.astype(np.float32)
    doctor = grad_doctor.watch(model, opt)
    try:
        for step in range(4):
            opt.zero_grad()
            nn.functional.mse_loss(model(ember.tensor(x)), ember.tensor(y)).backward()
            topt.zero_grad()
            torch.nn.functional.mse_loss(tmodel(torch.tensor(x)), torch.tensor(y)).backward()
            before = {n: p.detach().clone() for n, p in tmodel.named_parameters()}
            rep = doctor.report()
            assert not rep.alarming, str(rep)
            assert "nothing alarming" in str(rep)
            for n, tp in tmodel.named_parameters():
                s = rep[n]
                g = tp.grad.double()
                np.testing.assert_allclose(s.grad_norm, g.norm().item(), rtol=1e-4)
                np.testing.assert_allclose(s.mean_abs, g.abs().mean().item(), rtol=1e-4)
                np.testing.assert_allclose(s.zero_frac, (g == 0).double().mean().item())
                assert s.nan == s.inf == 0
                if step == 0:
                    assert s.update_ratio is None      # no optimizer step measured yet
                else:
                    np.testing.assert_allclose(s.update_ratio, ratios[n], rtol=1e-3)
            opt.step()
            topt.step()
            ratios = {n: ((tp.detach() - before[n]).double().norm()
                          / before[n].double().norm()).item()
                      for n, tp in tmodel.named_parameters()}
    finally:
        doctor.remove()


def test_update_ratio_without_an_optimizer_is_measured_between_reports():
    ember.manual_seed(0)
    model = nn.Linear(4, 2)
    doctor = grad_doctor.watch(model)
    model(ember.randn(3, 4)).sum().backward()
    assert doctor.report()["weight"].update_ratio is None
    w0 = model.weight.detach().clone()
    with ember.no_grad():
        model.weight.mul_(1.1)
    model(ember.randn(3, 4)).sum().backward()
    r = doctor.report()["weight"].update_ratio
    np.testing.assert_allclose(r, 0.1, rtol=1e-5)
    assert float(((model.weight - w0).norm() / w0.norm()).item()) == pytest.approx(r, rel=1e-5)
    doctor.remove()


def test_exploding_norm_growth_then_nan():
    ember.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = ember.optim.SGD(model.parameters(), lr=2.0)     # far too large: SGD diverges
    x, y = ember.randn(32, 4) * 3, ember.randn(32, 1)
    kinds = []
    with grad_doctor.watch(model, opt) as doctor:
        for _ in range(6):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            rep = doctor.report()
            kinds.append(rep.kinds())
            opt.step()
    assert "exploding" not in kinds[0] and "exploding" in kinds[-1]
    msg = [d for d in rep.diagnoses if d.kind == "exploding"][0].message
    assert "grew" in msg and "clip_grad_norm_" in msg and "lower the learning rate" in msg

    model = nn.Linear(3, 1)
    with grad_doctor.watch(model) as doctor:
        (model(ember.randn(5, 3)) * ember.tensor(float("nan"))).sum().backward()
        rep = doctor.report()
    (d,) = [d for d in rep.diagnoses if d.kind == "exploding"]
    assert "NaN" in d.message and "GradScaler" in d.message
    assert rep["weight"].nan == 3 and rep["weight"].grad_norm == 0.0


def test_vanishing_names_the_saturating_activation():
    ember.manual_seed(0)
    model = mlp([16] * 9 + [1], act=nn.Sigmoid)
    with grad_doctor.watch(model) as doctor:
        model(ember.randn(32, 16)).pow(2).mean().backward()
        rep = doctor.report()
    (d,) = [d for d in rep.diagnoses if d.kind == "vanishing"]
    assert "Sigmoid" in d.message and d.where == ["0.weight", "16.weight"]
    means = [rep[f"{i}.weight"].mean_abs for i in range(0, 17, 2)]
    assert means[0] < 1e-3 * means[-1]       # what the diagnosis reads


def test_dead_relu():
    ember.manual_seed(0)
    model = mlp([8, 32, 1])
    with ember.no_grad():
        model[0].bias.fill_(-10.0)      # every pre-activation negative
    with grad_doctor.watch(model) as doctor:
        model(ember.randn(16, 8)).sum().backward()
        rep = doctor.report()
    (d,) = [d for d in rep.diagnoses if d.kind == "dead_relu"]
    assert d.where == ["1"] and "100% of the 32 units of '1' (fed by '0')" in d.message
    assert rep["0.weight"].zero_frac == 1.0


class _Cut(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.how = how
        self.enc = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)
        self.unused = nn.Linear(4, 8)

    def forward(self, x):
        h = self.enc(x)
        if self.how == "detach":
            h = h.detach()
        elif self.how == "data":
            h = h.data
        elif self.how == "item":
            h = ember.full((x.shape[0], 8), h.mean().item())
        elif self.how == "numpy call":
            h = ember.from_numpy(np.tanh(h))
        elif self.how == "unused output":
            self.unused(x)
        return self.head(h)


@pytest.mark.parametrize("how,cut", [("detach", "cut by .detach() at"),
                                     ("data", "cut by .data at"),
                                     ("item", "cut by .item() at"),
                                     ("numpy call", "cut by a NumPy call"),
                                     ("unused output", "no cut")])
def test_detached_subgraph_names_the_module_and_the_cut(how, cut):
    model = _Cut(how)
    with grad_doctor.watch(model) as doctor:
        model(ember.randn(6, 4)).sum().backward()
        rep = doctor.report()
    (d,) = [d for d in rep.diagnoses if d.kind == "detached"]
    want = ["unused.weight", "unused.bias"] if how == "unused output" else \
        ["enc.weight", "enc.bias"]
    assert d.where == want and cut in d.message
    if how != "unused output":
        assert "module 'enc'" in d.message and "test_grad_doctor.py" in d.message
        assert "in forward" in d.message
    assert rep["head.weight"].has_grad and not rep[want[0]].has_grad
    # the same model run normally gets no such diagnosis
    ok = _Cut("none")
    with grad_doctor.watch(ok) as doctor:
        ok(ember.randn(6, 4)).sum().backward()
        assert "detached" not in doctor.report().kinds()


def test_bad_initialisation():
    ember.manual_seed(0)
    model = mlp([64, 64, 64, 1])
    with ember.no_grad():
        model[0].weight.normal_(0, 1.0)     # He would be sqrt(2/64) = 0.18
        model[2].weight.fill_(0.01)         # all equal: symmetric units
    with grad_doctor.watch(model) as doctor:
        model(ember.randn(8, 64)).sum().backward()
        rep = doctor.report()
    bad = {d.where[0]: d.message for d in rep.diagnoses if d.kind == "bad_init"}
    assert set(bad) == {"0.weight", "2.weight"}
    assert "ReLU" in bad["0.weight"] and "fan_in 64" in bad["0.weight"]
    assert "equal" in bad["2.weight"]


def test_report_before_backward_and_remove():
    model = mlp([4, 4, 1])
    before = state.modes
    doctor = grad_doctor.watch(model)
    model(ember.randn(2, 4))
    rep = grad_doctor.report()
    assert [d.kind for d in rep.diagnoses] == ["no_gradients"] and not rep.alarming
    assert state.modes == before            # the cut recorder is only on during forward
    doctor.remove()
    assert all(not m._forward_hooks for m in model.modules())
    assert all(not p._post_acc_hooks for p in model.parameters())
    with pytest.raises(RuntimeError, match="nothing is watched"):
        grad_doctor.report()
