"""ember.profiler's schedule, its step cycles in profile(), tensorboard_trace_handler and the
small torch.profiler names (ProfilerAction, RecordScope, DeviceType, KinetoStepTracker,
supported_activities, register_optimizer_step_post_hook), each compared with torch.profiler
running the same code."""
import gzip
import itertools
import json
import os
import re
import socket
import warnings

import pytest
import torch

import ember

LIBS = (torch, ember)


def _quiet_schedule(lib, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # warmup=0's warning, checked on its own below
        return lib.profiler.schedule(**kw)


# ---- schedule() ----

COMBOS = [dict(wait=w, warmup=u, active=a, repeat=r, skip_first=s, skip_first_wait=sw)
          for w, u, a, r, s, sw in itertools.product(range(3), range(3), (1, 2, 3), (0, 1, 2),
                                                     (0, 2), (0, 1))]


def test_schedule_actions_match_torch():
    for kw in COMBOS:
        seqs = [[fn(step).name for step in range(40)]
                for fn in (_quiet_schedule(lib, **kw) for lib in LIBS)]
        assert seqs[0] == seqs[1], kw


def test_schedule_defaults_match_torch():
    fns = [lib.profiler.schedule(wait=2, warmup=1, active=3) for lib in LIBS]
    assert [fns[0](s).name for s in range(30)] == [fns[1](s).name for s in range(30)]


def test_profiler_action_members():
    assert ([(m.name, m.value) for m in torch.profiler.ProfilerAction]
            == [(m.name, m.value) for m in ember.profiler.ProfilerAction])


def _raised(fn):
    try:
        fn()
    except Exception as e:          # noqa: BLE001 - the type and message are what's compared
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("kw", [
    dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=-2, active=1),
    dict(wait=0, warmup=1, active=0), dict(wait=1, warmup=1, active=-1),
    dict(wait=1, warmup=1, active=1, repeat=-1), dict(wait=1, warmup=1, active=1, skip_first=-3),
])
def test_schedule_bad_arguments_raise_as_torch(kw):
    got = [_raised(lambda: _quiet_schedule(lib, **kw)) for lib in LIBS]
    assert got[0] is not None and got[0] == got[1]


def test_schedule_arguments_are_keyword_only():
    got = [_raised(lambda: lib.profiler.schedule(1, 1, 1)) for lib in LIBS]
    assert got[0][0] == got[1][0] == "TypeError"


def test_schedule_negative_step_raises_as_torch():
    got = [_raised(lambda: lib.profiler.schedule(wait=1, warmup=1, active=1)(-1)) for lib in LIBS]
    assert got[0] is not None and got[0] == got[1]


def test_schedule_without_warmup_warns_as_torch():
    seen = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.profiler.schedule(wait=1, warmup=0, active=1)
        seen.append([(x.category, str(x.message), x.filename) for x in w])
    assert seen[0] and seen[0] == seen[1]


# ---- profile(schedule=..., on_trace_ready=...) ----

def _loop(lib, n, sched, acc_events=False, explicit=False):
    """A training-style loop with a marker op per step; what the handler and the profile
    report afterwards."""
    log = []

    def handler(p):
        counts = {e.key: e.count for e in p.key_averages()}
        steps = sorted(e.trace_name for e in p.events() if e.name == "ProfilerStep*")
        log.append((p.step_num, counts.get("marker"), counts.get("ProfilerStep*"), steps))

    x = lib.ones(3)
    prof = lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                schedule=sched, on_trace_ready=handler, acc_events=acc_events)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # "clears events at the end of each cycle"
        if explicit:
            prof.start()
        else:
            prof.__enter__()
        for _ in range(n):
            with lib.profiler.record_function("marker"):
                x.add(1)
            log.append(("at", prof.step_num, prof.current_action.name))
            prof.step()
        if explicit:
            prof.stop()
        else:
            prof.__exit__(None, None, None)
    after = _raised(prof.key_averages)
    if after is None:
        counts = {e.key: e.count for e in prof.key_averages()}
        after = (counts.get("marker"), counts.get("ProfilerStep*"))
    return log, after, prof.step_num


CASES = [
    (12, dict(wait=1, warmup=1, active=2, repeat=2), False),
    (3, dict(wait=1, warmup=1, active=3), False),          # ends inside RECORD
    (2, dict(wait=1, warmup=1, active=3), False),          # ends as RECORD starts
    (1, dict(wait=1, warmup=1, active=3), False),          # ends in WARMUP: no trace
    (2, dict(wait=5, warmup=1, active=1), False),          # never prepared
    (5, None, False),                                      # no schedule: one trace
    (9, dict(wait=0, warmup=0, active=2), True),           # acc_events keeps every cycle
    (9, dict(wait=0, warmup=0, active=2), False),
    (9, dict(wait=0, warmup=0, active=1), False),
    (10, dict(wait=1, warmup=0, active=1, skip_first=2), False),
    (14, dict(wait=3, warmup=1, active=2, skip_first=1, skip_first_wait=1), False),
]


@pytest.mark.parametrize("n,kw,acc", CASES)
def test_profile_schedule_records_as_torch(n, kw, acc):
    got = [_loop(lib, n, _quiet_schedule(lib, **kw) if kw else None, acc) for lib in LIBS]
    assert got[0][0] and got[0] == got[1]


def test_profile_start_step_stop_without_with():
    kw = dict(wait=1, warmup=1, active=2, repeat=1)
    got = [_loop(lib, 6, _quiet_schedule(lib, **kw), explicit=True) for lib in LIBS]
    assert got[0] == got[1]


def test_incorrect_user_schedule_warns_as_torch():
    def run(lib):
        A = lib.profiler.ProfilerAction
        ready = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.profiler.profile(schedule=lambda s: A.RECORD if s < 2 else A.NONE,
                                      on_trace_ready=ready.append) as p:
                for _ in range(4):
                    lib.ones(2).add(1)
                    p.step()
        msgs = [str(x.message) for x in w if "Incorrect schedule" in str(x.message)]
        return msgs, len(ready), {e.key: e.count for e in p.key_averages()}.get("ProfilerStep*")
    got = [run(lib) for lib in LIBS]
    assert got[0][0] and got[0] == got[1]


def test_device_stopped_from_a_schedule_is_refused_as_torch():
    def make(lib):
        return lambda: lib.profiler.profile(
            schedule=lambda s: lib.profiler.ProfilerAction.DEVICE_STOPPED)
    got = [_raised(make(lib)) for lib in LIBS]
    assert got[0] is not None and got[0] == got[1]


def test_chrome_trace_inside_handler_has_the_cycle(tmp_path):
    def run(lib):
        out = []

        def handler(p):
            path = str(tmp_path / f"{lib.__name__}_{p.step_num}.json")
            p.export_chrome_trace(path)
            ev = json.load(open(path))["traceEvents"]
            out.append((p.step_num, sum(e.get("name") == "marker" for e in ev),
                        sorted(e["name"] for e in ev
                               if e.get("name", "").startswith("ProfilerStep")),
                        sorted({e.get("cat") for e in ev if e.get("name") == "marker"})))
        with lib.profiler.profile(schedule=lib.profiler.schedule(wait=1, warmup=1, active=2),
                                  on_trace_ready=handler) as p:
            for _ in range(9):
                with lib.profiler.record_function("marker"):
                    lib.ones(2).mul(2)
                p.step()
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [run(lib) for lib in LIBS]
    assert got[0] and got[0] == got[1]


# ---- tensorboard_trace_handler ----

def _traces(lib, dir_name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(
                schedule=lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
                on_trace_ready=lib.profiler.tensorboard_trace_handler(dir_name, **kw)) as p:
            for _ in range(10):
                with lib.profiler.record_function("marker"):
                    lib.ones(2).add(1)
                p.step()
    # in time order: the number before ".pt.trace" is the write time (ns)
    return sorted(os.listdir(dir_name),
                  key=lambda f: int(re.search(r"\.(\d+)\.pt\.trace", f).group(1)))


def _load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize("kw", [{}, dict(worker_name="worker0"), dict(use_gzip=True)])
def test_tensorboard_trace_handler_files_as_torch(tmp_path, kw):
    worker = kw.get("worker_name") or f"{socket.gethostname()}_{os.getpid()}"
    pattern = re.compile(re.escape(worker) + r"\.\d+\.pt\.trace\.json"
                         + (r"\.gz" if kw.get("use_gzip") else "") + "$")
    per_lib = []
    for lib in LIBS:
        d = str(tmp_path / lib.__name__ / "not" / "yet")       # created by the handler
        files = _traces(lib, d, **kw)
        assert all(pattern.match(f) for f in files), files
        per_lib.append([sum(e.get("name") == "marker" for e in _load(os.path.join(d, f)))
                        for f in files])
    assert per_lib[0] and per_lib[0] == per_lib[1]


# ---- the small names ----

def test_supported_activities():
    want = {ember.profiler.ProfilerActivity.CPU}
    if ember.cuda.is_available():
        want.add(ember.profiler.ProfilerActivity.CUDA)
    assert ember.profiler.supported_activities() == want
    if not ember.cuda.is_available() and not torch.cuda.is_available():
        assert ({a.name for a in ember.profiler.supported_activities()}
                == {a.name for a in torch.profiler.supported_activities()})


def test_kineto_available_is_autograds():
    # ember's profiler is its own, not Kineto: False, the same function as ember.autograd's
    assert ember.profiler.kineto_available is ember.autograd.kineto_available
    assert ember.profiler.kineto_available() is False
    assert torch.profiler.kineto_available is torch.autograd.kineto_available


@pytest.mark.parametrize("name", ["RecordScope", "DeviceType"])
def test_enums_match_torch(name):
    t, e = getattr(torch.profiler, name), getattr(ember.profiler, name)
    assert ({k: int(v) for k, v in t.__members__.items()}
            == {k: int(v) for k, v in e.__members__.items()})
    first = next(iter(t.__members__))
    assert str(t.__members__[first]) == str(e.__members__[first])
    assert torch.profiler.DeviceType is torch.autograd.DeviceType
    assert ember.profiler.DeviceType is ember.autograd.DeviceType


def test_kinetosteptracker_counts_as_torch():
    def run(tr):
        base = tr.current_step()
        out = []
        tr.init_step_count("emberA")
        out.append(tr.increment_step("emberA") - base)
        out.append(tr.increment_step("emberA") - base)
        out.append(tr.increment_step("emberB") - base)      # a new requester starts at the top
        tr.init_step_count("emberC")
        out.append(tr.increment_step("emberC") - base)
        out.append(tr.increment_step("emberA") - base)      # behind the max: no change
        out.append(tr.current_step() - base)
        out.append([tr.erase_step_count(r) for r in ("emberA", "emberB", "emberC", "emberA")])
        return out
    got = [run(torch.autograd.profiler.KinetoStepTracker), run(ember.profiler.KinetoStepTracker)]
    assert got[0] == got[1]
    assert torch.profiler.KinetoStepTracker is torch.autograd.profiler.KinetoStepTracker


def test_register_optimizer_step_post_hook_as_torch():
    def run(lib):
        calls = []
        w = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.SGD([w], lr=0.1)
        h = lib.profiler.register_optimizer_step_post_hook(
            lambda o, args, kwargs: calls.append(
                (o is opt, len(args), args[0] is opt, kwargs)))     # args: the optimizer too
        for _ in range(3):
            w.grad = lib.ones(3)
            opt.step()
        h.remove()
        opt.step()
        return calls
    got = [run(lib) for lib in LIBS]
    assert len(got[0]) == 3 and got[0] == got[1]


def test_profiler_hook_is_optims():
    assert (ember.profiler.register_optimizer_step_post_hook
            is ember.optim.optimizer.register_optimizer_step_post_hook)


def test_optimizer_calls_are_labelled_as_torch():
    def run(lib):
        w = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.Adam([w], lr=0.1)
        with lib.profiler.profile() as p:
            for _ in range(3):
                opt.zero_grad()
                (w * w).sum().backward()
                opt.step()
        return {e.key: e.count for e in p.key_averages() if e.key.startswith("Optimizer.")}
    got = [run(lib) for lib in LIBS]
    assert got[0] and got[0] == got[1]
