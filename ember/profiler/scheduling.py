"""The profiler's step schedule and trace handlers, with torch.profiler's names and behaviour.

``schedule(wait=, warmup=, active=, repeat=, skip_first=, skip_first_wait=)`` maps a step
number to a ``ProfilerAction``; ``profile(schedule=..., on_trace_ready=...)`` (profiler.py)
follows it at each ``prof.step()``: only RECORD / RECORD_AND_SAVE steps are recorded, and the
handler runs when a cycle ends. ``tensorboard_trace_handler`` is the usual handler: one Chrome
trace file per cycle, named as TensorBoard's plugin expects.

Also here: ``supported_activities()``, ``KinetoStepTracker`` (torch's step counter shared by
``prof.step()`` and optimizers; ember has no Kineto, so a count change triggers nothing) and
the ``RecordScope`` enum.
"""
import os
import socket
import time
import warnings
from collections import defaultdict
from enum import Enum

from ..autograd.profiler_types import ProfilerActivity, _IntValued

__all__ = ["ProfilerAction", "schedule", "tensorboard_trace_handler", "supported_activities",
           "KinetoStepTracker", "RecordScope"]


class ProfilerAction(Enum):
    """What the profiler does at a step. DEVICE_STOPPED is torch's internal state for a device
    trace cut short; ember never enters it and, like torch, refuses it from a schedule."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ProfilerAction function: ``skip_first`` steps of NONE, then cycles of ``wait``
    NONE, ``warmup`` WARMUP and ``active`` recorded steps (the last one RECORD_AND_SAVE),
    ``repeat`` times (0: without end). ``skip_first_wait`` non-zero drops the first cycle's
    wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        # torch's exception type and wording, so code that checks either behaves the same
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    period = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        # position counted from the first cycle's start; skipping its wait = starting `wait` in
        pos = step - skip_first + (wait if skip_first_wait != 0 else 0)
        if repeat > 0 and pos >= repeat * period:
            return ProfilerAction.NONE
        phase = pos % period
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if phase == period - 1 else ProfilerAction.RECORD

    return schedule_fn


def _default_schedule_fn(step):
    """No schedule given: every step is recorded, as one trace ending at ``stop()``."""
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """An ``on_trace_ready`` handler that writes each trace as
    ``{dir_name}/{worker_name}.{time_ns}.pt.trace.json`` (``.gz`` with ``use_gzip``), the layout
    TensorBoard's profiler plugin reads. ``worker_name`` defaults to ``{hostname}_{pid}``;
    the directory is created when missing. ``use_python_export`` is accepted for torch's
    signature (ember's export is Python already)."""
    state = {"worker": worker_name}

    def handler_fn(prof):
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not state["worker"]:
            state["worker"] = f"{socket.gethostname()}_{os.getpid()}"
        # nanoseconds (torch 2.13's choice): two cycles a millisecond apart get two files
        name = f"{state['worker']}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler_fn


def supported_activities():
    """The activities ember's profiler can record: CPU (op spans on the host), and CUDA when
    ember has a CUDA device (ember.cuda.is_available())."""
    from .. import cuda
    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def _kineto_step():
    """Where torch advances Kineto's step counter: ember has no Kineto, nothing to tell."""


class KinetoStepTracker:
    """One global step count for the profiler, however many requesters advance it.

    ``prof.step()`` and each optimizer (through an optimizer step hook) may each count steps;
    counting each separately and taking the maximum keeps a program that does both from
    advancing twice per iteration. Class-level state, as torch's."""
    _current_step = 0
    _step_dict = defaultdict(int)

    @classmethod
    def init_step_count(cls, requester):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester):
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester):
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        top = max(cls._step_dict.values())
        if top > cls._current_step:
            if top - cls._current_step > 1:
                warnings.warn("Profiler step count has increased more than 1 - current_step = "
                              f"{cls._current_step} step dict =  {cls._step_dict}", stacklevel=2)
            for _ in range(top - cls._current_step):
                _kineto_step()
            cls._current_step = top
        return cls._current_step

    @classmethod
    def current_step(cls):
        return cls._current_step


class RecordScope(_IntValued):
    """Kinds of RecordFunction scopes (torch._C._profiler.RecordScope), names and values."""
    FUNCTION = 0
    BACKWARD_FUNCTION = 1
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9
