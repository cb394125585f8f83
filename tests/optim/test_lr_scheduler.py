"""LR schedulers vs torch.optim.lr_scheduler: the lr (and cycled momentum / beta1) of every
param group after each step equals torch's, for 40 steps; state_dict round trips resume
identically; argument errors match."""
import copy
import math
import warnings

import numpy as np
import pytest
import torch

import ember


def make_opt(lib, opt="SGD"):
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if opt == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return getattr(lib.optim, opt)(groups, lr=0.1)


def L(lib):
    return lib.optim.lr_scheduler


class Halver:
    """A callable object: its __dict__ is saved in the scheduler's state_dict."""

    def __init__(self):
        self.k = 0.5

    def __call__(self, e):
        return self.k ** (e // 7)


SCHEDS = {
    "lambda": lambda lib, o: L(lib).LambdaLR(o, lambda e: 0.95 ** e),
    "lambda_list": lambda lib, o: L(lib).LambdaLR(o, [lambda e: 1 / (e + 1), Halver()]),
    "multiplicative": lambda lib, o: L(lib).MultiplicativeLR(o, lambda e: 0.9),
    "step": lambda lib, o: L(lib).StepLR(o, step_size=4, gamma=0.5),
    "multistep": lambda lib, o: L(lib).MultiStepLR(o, [3, 8, 8, 20], gamma=0.3),
    "constant": lambda lib, o: L(lib).ConstantLR(o, factor=0.25, total_iters=6),
    "linear": lambda lib, o: L(lib).LinearLR(o, start_factor=0.1, end_factor=0.9,
                                             total_iters=10),
    "exponential": lambda lib, o: L(lib).ExponentialLR(o, gamma=0.9),
    "cosine": lambda lib, o: L(lib).CosineAnnealingLR(o, T_max=10),
    "cosine_eta": lambda lib, o: L(lib).CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "warm_restarts": lambda lib, o: L(lib).CosineAnnealingWarmRestarts(o, T_0=5),
    "warm_restarts_mult": lambda lib, o: L(lib).CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001),
    "cyclic": lambda lib, o: L(lib).CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "cyclic2": lambda lib, o: L(lib).CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=3,
                                              step_size_down=5, mode="triangular2"),
    "cyclic_exp": lambda lib, o: L(lib).CyclicLR(o, 0.01, 0.1, step_size_up=5,
                                                 mode="exp_range", gamma=0.95,
                                                 base_momentum=0.7, max_momentum=0.95),
    "cyclic_custom": lambda lib, o: L(lib).CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                    scale_fn=lambda x: 1 / (1 + x),
                                                    scale_mode="iterations",
                                                    cycle_momentum=False),
    "onecycle": lambda lib, o: L(lib).OneCycleLR(o, max_lr=0.5, total_steps=45),
    "onecycle_linear": lambda lib, o: L(lib).OneCycleLR(
        o, max_lr=[0.5, 0.2], epochs=5, steps_per_epoch=9, anneal_strategy="linear",
        pct_start=0.4, div_factor=10.0, final_div_factor=100.0),
    "onecycle_3phase": lambda lib, o: L(lib).OneCycleLR(o, max_lr=0.5, total_steps=41,
                                                        three_phase=True,
                                                        cycle_momentum=False),
    "polynomial": lambda lib, o: L(lib).PolynomialLR(o, total_iters=12, power=2.0),
    "polynomial_1": lambda lib, o: L(lib).PolynomialLR(o),
    "sequential": lambda lib, o: L(lib).SequentialLR(
        o, [L(lib).LinearLR(o, start_factor=0.1, total_iters=5),
            L(lib).CosineAnnealingLR(o, T_max=10), L(lib).ExponentialLR(o, gamma=0.9)],
        milestones=[5, 15]),
    "chained": lambda lib, o: L(lib).ChainedScheduler(
        [L(lib).ConstantLR(o, factor=0.5, total_iters=4), L(lib).ExponentialLR(o, gamma=0.9),
         L(lib).StepLR(o, 5, 0.5)]),
}
ADAM_SCHEDS = {"cyclic", "cyclic_exp", "onecycle", "onecycle_linear"}
CASES = [(k, "SGD") for k in SCHEDS] + [(k, "Adam") for k in sorted(ADAM_SCHEDS)]


def hyper(opt):
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def stepper(lib, opt, sched):
    """Optimizer step (no grads, so params stay) then scheduler step."""
    def f(i):
        opt.step()
        sched.step()
    return f


def check_run(topt, tsched, eopt, esched, steps):
    assert esched.get_last_lr() == tsched.get_last_lr()
    assert hyper(eopt) == hyper(topt)
    ft, fe = stepper(torch, topt, tsched), stepper(ember, eopt, esched)
    for i in range(steps):
        ft(i)
        fe(i)
        assert esched.get_last_lr() == tsched.get_last_lr(), i
        assert hyper(eopt) == hyper(topt), i


@pytest.mark.parametrize("name,opt", CASES)
def test_matches_torch(name, opt):
    topt, eopt = make_opt(torch, opt), make_opt(ember, opt)
    tsched, esched = SCHEDS[name](torch, topt), SCHEDS[name](ember, eopt)
    check_run(topt, tsched, eopt, esched, 40 if "onecycle" not in name else 40)


@pytest.mark.parametrize("name,opt", CASES)
def test_state_dict_resume(name, opt):
    topt, eopt = make_opt(torch, opt), make_opt(ember, opt)
    tsched, esched = SCHEDS[name](torch, topt), SCHEDS[name](ember, eopt)
    check_run(topt, tsched, eopt, esched, 15)
    tsd, esd = tsched.state_dict(), esched.state_dict()
    assert set(esd) == set(tsd)
    osd, ssd = copy.deepcopy(eopt.state_dict()), copy.deepcopy(esd)
    # a new optimizer and scheduler, loaded from the checkpoint, continue like the original
    eopt2 = make_opt(ember, opt)
    esched2 = SCHEDS[name](ember, eopt2)
    eopt2.load_state_dict(osd)
    esched2.load_state_dict(ssd)
    check_run(topt, tsched, eopt2, esched2, 20)


def test_last_epoch_resume_and_missing_initial_lr():
    for lib in (torch, ember):
        opt = make_opt(lib)
        with pytest.raises(KeyError, match="initial_lr"):
            L(lib).StepLR(opt, 3, last_epoch=5)
    topt, eopt = make_opt(torch), make_opt(ember)
    for o in (topt, eopt):
        for g in o.param_groups:
            g["initial_lr"] = g["lr"] * 2
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=9, last_epoch=4)
    esched = ember.optim.lr_scheduler.CosineAnnealingLR(eopt, T_max=9, last_epoch=4)
    check_run(topt, tsched, eopt, esched, 20)


@pytest.mark.parametrize("T_mult", [1, 2])
def test_warm_restarts_fractional_epochs(T_mult):
    topt, eopt = make_opt(torch), make_opt(ember)
    lrs = []
    for lib, o in ((torch, topt), (ember, eopt)):
        s = L(lib).CosineAnnealingWarmRestarts(o, T_0=2, T_mult=T_mult, eta_min=0.001)
        out = []
        for epoch in range(8):
            for i in range(5):
                o.step()
                s.step(epoch + i / 5)
                out.append((s.get_last_lr(), s.last_epoch, s.T_cur, s.T_i))
        lrs.append(out)
    assert lrs[0] == lrs[1]


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", factor=0.5, patience=2),
                                dict(threshold_mode="abs", threshold=0.05, cooldown=2,
                                     patience=1, min_lr=[0.02, 0.001]),
                                dict(mode="max", threshold_mode="abs", patience=0,
                                     factor=0.3, eps=0.02)])
def test_reduce_on_plateau(kw):
    rng = np.random.default_rng(0)
    metrics = np.concatenate([np.linspace(3, 1, 10), 1 + 0.05 * rng.standard_normal(50)])
    topt, eopt = make_opt(torch), make_opt(ember)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kw)
    es = ember.optim.lr_scheduler.ReduceLROnPlateau(eopt, **kw)
    for i, m in enumerate(metrics):
        topt.step()
        eopt.step()
        # metrics given as floats and as 0-dim tensors
        ts.step(torch.tensor(float(m)) if i % 2 else float(m))
        es.step(ember.tensor(float(m)) if i % 2 else float(m))
        assert es.get_last_lr() == ts.get_last_lr()
        assert (es.best, es.num_bad_epochs, es.cooldown_counter, es.last_epoch) == \
            (ts.best, ts.num_bad_epochs, ts.cooldown_counter, ts.last_epoch)
        if i == 30:  # resume from a checkpoint
            sd = copy.deepcopy(es.state_dict())
            assert set(sd) == set(ts.state_dict())
            es = ember.optim.lr_scheduler.ReduceLROnPlateau(eopt)
            es.load_state_dict(sd)


def test_closed_form_with_epoch():
    """step(epoch) uses the closed form (with a deprecation warning) like torch."""
    for name in ("step", "multistep", "exponential", "cosine", "linear", "constant",
                 "polynomial"):
        topt, eopt = make_opt(torch), make_opt(ember)
        tsched, esched = SCHEDS[name](torch, topt), SCHEDS[name](ember, eopt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for e in (3, 7, 2, 11, 11, 20):
                topt.step()
                eopt.step()
                tsched.step(e)
                esched.step(e)
                assert esched.get_last_lr() == tsched.get_last_lr(), (name, e)


def test_warnings_match():
    for lib in (torch, ember):
        opt = make_opt(lib)
        s = L(lib).StepLR(opt, 2)
        with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
            s.step()
        with pytest.warns(UserWarning, match="get_last_lr"):
            s.get_lr()


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("case", [
    lambda lib, o: L(lib).StepLR(object(), 3),
    lambda lib, o: L(lib).ConstantLR(o, factor=1.5),
    lambda lib, o: L(lib).LinearLR(o, start_factor=0),
    lambda lib, o: L(lib).LinearLR(o, end_factor=2),
    lambda lib, o: L(lib).LambdaLR(o, [lambda e: 1.0]),
    lambda lib, o: L(lib).CosineAnnealingWarmRestarts(o, T_0=0),
    lambda lib, o: L(lib).CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda lib, o: L(lib).CyclicLR(o, 0.1, 1.0, mode="bogus"),
    lambda lib, o: L(lib).CyclicLR(o, [0.1], 1.0),
    lambda lib, o: L(lib).OneCycleLR(o, max_lr=0.1),
    lambda lib, o: L(lib).OneCycleLR(o, max_lr=0.1, total_steps=0),
    lambda lib, o: L(lib).OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5),
    lambda lib, o: L(lib).OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="x"),
    lambda lib, o: (lambda s: [s.step() for _ in range(4)])(
        L(lib).OneCycleLR(o, max_lr=0.1, total_steps=3)),
    lambda lib, o: L(lib).ReduceLROnPlateau(o, factor=1.0),
    lambda lib, o: L(lib).ReduceLROnPlateau(o, mode="avg"),
    lambda lib, o: L(lib).ReduceLROnPlateau(o, threshold_mode="x"),
    lambda lib, o: L(lib).ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda lib, o: L(lib).SequentialLR(o, [L(lib).StepLR(o, 2)], milestones=[3]),
    lambda lib, o: L(lib).SequentialLR(o, [L(lib).ReduceLROnPlateau(o)], milestones=[]),
    lambda lib, o: L(lib).ChainedScheduler([]),
    lambda lib, o: L(lib).CyclicLR(lib.optim.Adagrad(
        [lib.zeros(1, requires_grad=True)]), 0.1, 1.0),
])
def test_errors_match(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_type, t_msg = _err(lambda: case(torch, make_opt(torch)))
        e_type, e_msg = _err(lambda: case(ember, make_opt(ember)))
    assert t_type is not None and e_type is t_type, (t_type, t_msg, e_type, e_msg)
    assert e_msg.split(",")[0] == t_msg.split(",")[0]


def test_math_sanity_cosine_values():
    """The recursive cosine values stay on the closed-form curve (torch is the oracle above;
    this guards the comparison itself against both being wrong in the same way)."""
    opt = make_opt(ember)
    s = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.0)
    for e in range(1, 10):
        opt.step()
        s.step()
        assert math.isclose(s.get_last_lr()[0], 0.05 * (1 + math.cos(math.pi * e / 10)),
                            rel_tol=1e-9)


def test_verbose_is_deprecated_but_accepted():
    opt = make_opt(ember)
    s = ember.optim.lr_scheduler.StepLR(opt, 2)  # default: no warning
    with pytest.warns(UserWarning, match="verbose parameter is deprecated"):
        s = ember.optim.lr_scheduler.ExponentialLR(opt, 0.5, verbose=True)
    opt.step()
    s.step()
    assert s.get_last_lr() == [0.05, 0.025]
