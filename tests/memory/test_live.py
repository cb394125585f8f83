"""Who holds this: live_tensors() and leak_check() on the seeds' cases: a loss kept by a
plotting list (and with it the whole graph's saved activations), gradients never zeroed,
a Parameter registered outside the module."""
import gc

import pytest

import ember
from ember import nn
from ember import memory as M


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 2)
        self.register_buffer("scale", ember.ones(2))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def setup_training():
    ember.manual_seed(0)
    model = Net()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    return model, opt


def train_step(model, opt, history, keep_tensor):
    opt.zero_grad()
    x = ember.randn(5, 6)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    history.append(loss if keep_tensor else loss.item())


def holders_of(report, pred):
    return [h for lt in report for h in lt.held_by if pred(h)]


def validate(model, val_losses):
    """An evaluation step written without no_grad(), keeping the loss for a plot."""
    x = ember.randn(5, 6)
    val_losses.append(model(x).pow(2).mean())


def test_a_loss_kept_in_a_plotting_list_keeps_its_graph():
    model, opt = setup_training()
    val_losses = []
    with M.leak_check(warn=False) as leaks:
        validate(model, val_losses)
    kept = [lt for lt in leaks.leaked
            if any(h.startswith("item 0 of a list (len 1) held by local variable 'val_losses'")
                   for h in lt.held_by)]
    assert len(kept) == 1 and kept[0].shape == ()             # the loss itself
    graph = holders_of(leaks.leaked, lambda h: "in the autograd graph of" in h)
    assert graph and all("'val_losses'" in h for h in graph)  # named by the list's variable
    assert any("of AddmmBackward0" in h for h in graph)       # the layers' saved inputs
    assert any("of ReluBackward0" in h for h in graph)
    # the saved activations are most of the leak: the input and both hidden layers
    assert leaks.leaked.total_bytes() > 5 * (6 + 16) * 4
    # every leak was allocated in validate (or the model's forward it called)
    assert all(lt.site.split(" in ")[-1] in ("validate", "forward") for lt in leaks.leaked)
    assert "outlived it" in str(leaks)
    # the fix: keep a number (loss.item()), or run validation under no_grad()
    with M.leak_check(warn=False) as fixed:
        with ember.no_grad():
            validate(model, val_losses)
    assert [lt.shape for lt in fixed.leaked] == [()]          # only the kept loss


def test_after_backward_a_kept_loss_holds_only_itself():
    """backward() frees the saved tensors: a kept training loss costs its own 4 bytes
    (and the nodes of its graph), not the activations."""
    model, opt = setup_training()
    losses = []
    train_step(model, opt, losses, keep_tensor=True)
    with M.leak_check(warn=False) as leaks:
        train_step(model, opt, losses, keep_tensor=True)
    kinds = sorted("grad" if any(".grad" in h for h in lt.held_by) else "list"
                   for lt in leaks.leaked)
    assert kinds == ["grad"] * len(list(model.parameters())) + ["list"]


def test_the_fixed_loop_leaks_only_the_new_gradients():
    model, opt = setup_training()
    losses = []
    train_step(model, opt, losses, keep_tensor=False)
    with M.leak_check(warn=False) as leaks:
        train_step(model, opt, losses, keep_tensor=False)
    # zero_grad() set the grads to None, so backward made new ones: those outlive the step
    # (they are the optimizer's input); nothing else does
    reasons = [h for lt in leaks.leaked for h in lt.held_by]
    assert len(leaks.leaked) == len(list(model.parameters()))
    assert all(h.startswith("the .grad of parameter '") for h in reasons)
    assert {h.split("'")[1] for h in reasons} == {n for n, _ in model.named_parameters()}


def test_gradients_never_zeroed_hold_as_much_memory_as_the_parameters(quiet_gc):
    model, opt = setup_training()
    losses = []
    for _ in range(2):
        train_step(model, opt, losses, keep_tensor=False)
    report = M.live_tensors()
    # (this model's gradients only: under xdist a parameter of an earlier test may still be
    # alive in the same worker, with its own .grad)
    mine = {id(p.grad) for p in model.parameters()}
    grads = [lt for lt in report if any(h.startswith("the .grad of parameter") for h in lt.held_by)
             and id(lt.tensor()) in mine]
    param_bytes = sum(p.nbytes for p in model.parameters())
    assert len(grads) == len(mine)
    assert sum(lt.nbytes for lt in grads) == param_bytes
    before = M.memory_allocated()
    opt.zero_grad(set_to_none=True)                          # the fix frees them, exactly
    assert before - M.memory_allocated() == param_bytes


def test_module_parameters_buffers_and_optimizer_state_are_named():
    model, _ = setup_training()
    opt = ember.optim.Adam(model.parameters())
    model(ember.randn(2, 6)).sum().backward()
    opt.step()
    report = M.live_tensors()
    reasons = {h for lt in report for h in lt.held_by}
    for n, _ in model.named_parameters():
        assert f"parameter '{n}' of Net" in reasons
        assert f"Adam state 'exp_avg' of parameter '{n}'" in reasons
        assert f"the .grad of parameter '{n}'" in reasons
    assert "buffer 'scale' of Net" in reasons


class LeakyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        # a Parameter kept in a plain list: the module does not register it, so
        # parameters() (and the optimizer, and state_dict) never see it
        self.extras = [nn.Parameter(ember.randn(32, 32))]


def test_a_parameter_registered_outside_the_module_is_flagged():
    model = LeakyNet()
    assert len(list(model.parameters())) == 2
    report = M.live_tensors()
    stray = [lt for lt in report if lt.is_parameter and lt.shape == (32, 32)]
    assert len(stray) == 1
    held = stray[0].held_by
    assert not any(h.startswith("parameter '") for h in held)     # no module owns it
    assert any("item 0 of a list (len 1)" in h and "LeakyNet" in h for h in held)
    registered = [lt for lt in report if lt.is_parameter and lt.shape == (4, 4)]
    assert any("parameter 'fc.weight' of LeakyNet" in h for lt in registered
               for h in lt.held_by)


def test_by_site_groups_and_counts_blocks_once(history):
    def make():
        a = ember.ones(100)
        return a, a[10:], a.view(10, 10)
    keep = make()
    groups = M.live_tensors().by_site()
    site = next(s for s in groups if s.endswith("in make"))
    assert len(groups[site]) == 3
    assert M.LiveTensors(groups[site]).total_bytes() == keep[0].nbytes
    del keep


def test_leak_check_warns_raises_and_passes():
    keep = []
    with pytest.warns(UserWarning, match="outlived"):
        with M.leak_check():
            keep.append(ember.ones(3))
    with pytest.raises(RuntimeError, match="outlived"):
        with M.leak_check(raise_on_leak=True):
            keep.append(ember.ones(3))

    def clean():
        t = ember.ones(50)
        return (t * 2).sum().item()
    with M.leak_check(raise_on_leak=True) as leaks:
        clean()
    assert len(leaks) == 0 and "no tensor" in str(leaks)
    # an exception inside the block propagates; no leak error on top of it
    with pytest.raises(KeyError):
        with M.leak_check(raise_on_leak=True):
            keep.append(ember.ones(2))
            raise KeyError("boom")
    gc.collect()


def test_a_report_does_not_keep_tensors_alive(quiet_gc):
    t = ember.ones(64)
    report = M.live_tensors()
    before = M.memory_allocated()
    del t
    assert before - M.memory_allocated() == 64 * 4
    assert any(lt.tensor() is None for lt in report)
