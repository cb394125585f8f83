"""The profiler: timed spans around ops, self/total times per name, chrome trace export.

`profile.start_trace` (from ``__enter__``, or from a ``step()`` whose schedule starts
recording; ember/profiler/scheduling.py) pushes a mode onto dispatch's mode stack, so every
op call (functions, Tensor methods and operators) runs inside a timed span, and times the
backward engine's per-node call; `stop_trace` pops it. The mode only observes: ops take the
same paths as unprofiled (a composite op is one span around its fast path, see
ember/ops/nn_ops.py). Spans nest, so an op's self time excludes the ops it called. Names
are ``ember::<op>`` and ``autograd::engine::evaluate_function: <Node>``.

``profile_memory=True`` switches memory counting on (ember/core/memory_stats.py) and gives
each span the bytes allocated minus freed while it ran (``cpu_memory_usage``; without its
children's: ``self_cpu_memory_usage``), the table's "CPU Mem" columns, and a ``[memory]``
instant event per allocation and free in the Chrome trace, as torch writes them.
``with_stack=True`` keeps the user's frames of each span (``stack``), which
``key_averages(group_by_stack_n=N)`` groups by.
"""
import gzip
import json
import os
import sys
import threading
import time
import warnings

from ..core import memory_stats as _ms
from ..autograd.profiler_types import ProfilerActivity  # torch.autograd's enum, re-exported
from .scheduling import (ProfilerAction, KinetoStepTracker, _default_schedule_fn,
                         supported_activities)

_STEP_REQUESTER = "ProfilerStep"     # prof.step()'s name in KinetoStepTracker
_WARNED = set()

# (previous action, next action; None: the profile stops) -> what to do, in order: torch's
# transitions. "prepare" starts a cycle, "start"/"stop" switch recording, "ready" calls
# on_trace_ready, "warn" flags a schedule that leaves a cycle unfinished.
_N, _W, _R, _RS = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                   ProfilerAction.RECORD_AND_SAVE)
_TRANSITIONS = {
    (_N, _W): ("prepare",), (_N, _R): ("prepare", "start"), (_N, _RS): ("prepare", "start"),
    (_W, _N): ("warn", "start", "stop"), (_W, _R): ("start",), (_W, _RS): ("start",),
    (_R, _N): ("warn", "stop"), (_R, _W): ("warn", "stop"),
    (_RS, _N): ("stop", "ready"), (_RS, _W): ("stop", "ready", "prepare"),
    (_RS, _R): ("stop", "ready", "prepare", "start"),
    (_RS, _RS): ("stop", "ready", "prepare", "start"),
    (_W, None): ("start", "stop"), (_R, None): ("stop", "ready"), (_RS, None): ("stop", "ready"),
}


def _checked(action):
    if action == ProfilerAction.DEVICE_STOPPED:
        raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and "
                         "must not be returned by a user-provided schedule")
    return action


def _warn_once(msg):
    if msg not in _WARNED:
        _WARNED.add(msg)
        warnings.warn(msg, stacklevel=3)

_lock = threading.Lock()
_active = [None]


class FunctionEvent:
    """One timed span: name, start/end (ns, perf_counter), self time, thread, depth.

    ``name`` is what tables group by: torch's ``ProfilerStep*`` for every ``ProfilerStep#N``
    step label, whose own name stays in ``trace_name`` (the Chrome trace's). ``cat`` is the
    trace category: ``cpu_op`` for ops, ``user_annotation`` for record_function spans."""
    __slots__ = ("name", "trace_name", "cat", "start_ns", "end_ns", "self_ns", "thread",
                 "depth", "shapes", "cpu_memory_usage", "self_cpu_memory_usage", "stack")

    def __init__(self, name, start_ns, end_ns, self_ns, thread, depth, shapes=None,
                 mem=0, self_mem=0, stack=None, cat="cpu_op"):
        self.trace_name, self.cat = name, cat
        if name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        self.name, self.start_ns, self.end_ns = name, start_ns, end_ns
        self.self_ns, self.thread, self.depth, self.shapes = self_ns, thread, depth, shapes
        self.cpu_memory_usage, self.self_cpu_memory_usage = mem, self_mem
        self.stack = stack or []

    @property
    def cpu_time_total(self):
        return (self.end_ns - self.start_ns) / 1e3      # microseconds, like torch

    @property
    def self_cpu_time_total(self):
        return self.self_ns / 1e3

    def __repr__(self):
        return (f"<FunctionEvent {self.name} total={self.cpu_time_total:.1f}us "
                f"self={self.self_cpu_time_total:.1f}us>")


class _Average:
    """Totals of all events with one key (``key_averages`` rows)."""

    def __init__(self, key):
        self.key, self.count, self.cpu_time_total, self.self_cpu_time_total = key, 0, 0.0, 0.0
        self.input_shapes = None
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.stack = []

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} "
                f"cpu_time_total={self.cpu_time_total:.1f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.1f}us>")


def _fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(n):
    """torch's memory cells: "256.00 KB", "-8 B" (1 KB = 1024 B)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


class EventList(list):
    """A list of events or averages, with PyTorch's ``table()``."""

    def __init__(self, items=(), profile_memory=False, stack_n=0):
        super().__init__(items)
        self._profile_memory, self._stack_n = profile_memory, stack_n

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, **kwargs):
        rows = list(self)
        if sort_by:
            key = sort_by.replace("cpu_time_total", "cpu_time_total")
            rows.sort(key=lambda r: getattr(r, key, 0), reverse=True)
        rows = rows[:row_limit] if row_limit and row_limit > 0 else rows
        self_total = sum(r.self_cpu_time_total for r in self) or 1.0
        name_w = min(max([len(r.key) for r in rows] + [4]), max_name_column_width)
        mem = self._profile_memory
        head = (f"{'Name':<{name_w}}  {'Self CPU %':>10}  {'Self CPU':>11}  {'CPU total %':>11}  "
                f"{'CPU total':>11}  {'CPU time avg':>12}  "
                + (f"{'CPU Mem':>12}  {'Self CPU Mem':>12}  " if mem else "")
                + f"{'# of Calls':>10}" + ("  Source Location" if self._stack_n else ""))
        line = "-" * len(head)
        out = [line, head, line]
        for r in rows:
            out.append(f"{r.key[:name_w]:<{name_w}}  "
                       f"{100 * r.self_cpu_time_total / self_total:>9.2f}%  "
                       f"{_fmt_us(r.self_cpu_time_total):>11}  "
                       f"{100 * r.cpu_time_total / self_total:>10.2f}%  "
                       f"{_fmt_us(r.cpu_time_total):>11}  {_fmt_us(r.cpu_time):>12}  "
                       + (f"{_fmt_mem(r.cpu_memory_usage):>12}  "
                          f"{_fmt_mem(r.self_cpu_memory_usage):>12}  " if mem else "")
                       + f"{r.count:>10}"
                       + (f"  {r.stack[0] if r.stack else ''}" if self._stack_n else ""))
            for frame in (r.stack[1:self._stack_n] if self._stack_n else ()):
                out.append(" " * (len(head) - len("Source Location")) + frame)
        out.append(line)
        out.append(f"Self CPU time total: {_fmt_us(self_total)}")
        return "\n".join(out)

    def __str__(self):
        return self.table()


class profile:
    """Context manager that records a span per op call (see the module docstring).

    With ``schedule=`` (ember.profiler.schedule) each ``step()`` asks it what the next step
    does; the transitions below are torch's: a cycle's events are cleared when it is prepared
    (unless ``acc_events=True``), recorded only in RECORD / RECORD_AND_SAVE steps, and
    ``on_trace_ready(prof)`` runs when it ends, with ``key_averages()`` / ``events()`` /
    ``export_chrome_trace()`` giving that cycle. Without a schedule every step records and the
    trace ends at ``__exit__`` / ``stop()``."""

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, enabled=True):
        acts = set()
        for item in (supported_activities() if activities is None else activities):
            if isinstance(item, dict):       # {activity: [activity type names]}
                acts.update(item.keys())
            else:
                acts.add(item)
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if not acts:
            raise AssertionError("No valid profiler activities found")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops, self.with_modules = with_flops, with_modules
        self.acc_events = acc_events
        self.enabled = enabled
        self.on_trace_ready = on_trace_ready
        # a user schedule also marks each step in the trace ("ProfilerStep#N"), as torch does
        self.record_steps = bool(schedule)
        self.schedule = schedule if schedule else _default_schedule_fn
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = _checked(self.schedule(0))
        self._events = []
        self._memory_events = []
        self._prepared = False           # torch: a cycle's profiler exists
        self._recording = False          # the mode is installed
        self._stacks = threading.local()
        self._patches = []
        KinetoStepTracker.init_step_count(_STEP_REQUESTER)

    # ---- the schedule ----
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        KinetoStepTracker.erase_step_count(_STEP_REQUESTER)
        return False

    def start(self):
        if not self.enabled:
            return
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step_label()

    def stop(self):
        if not self.enabled:
            return
        self._close_step_label()
        self._transit(self.current_action, None)

    def step(self):
        """The next step starts: ask the schedule what it does, and act on the change."""
        if not self.enabled:
            self.step_num += 1
            return
        self._close_step_label()
        prev = self.current_action
        action = _checked(self.schedule(self.step_num + 1))   # checked before any change
        self.step_num += 1
        self.current_action = action
        self._transit(prev, action)
        if os.environ.get("KINETO_USE_DAEMON", ""):
            KinetoStepTracker.increment_step(_STEP_REQUESTER)
        self._open_step_label()

    def _open_step_label(self):
        # entered after the transition: recorded only when this step records
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _close_step_label(self):
        if self.record_steps and self.step_rec_fn is not None:
            fn, self.step_rec_fn = self.step_rec_fn, None
            fn.__exit__(None, None, None)

    def _transit(self, prev, action):
        for what in _TRANSITIONS.get((prev, action), ()):
            if what == "warn":
                warnings.warn(f"Incorrect schedule: {prev.name} followed by {action.name}")
            elif what == "prepare":
                self.prepare_trace()
            elif what == "start":
                self.start_trace()
            elif what == "stop":
                self.stop_trace()
            elif self.on_trace_ready is not None:     # "ready"
                self.on_trace_ready(self)

    def prepare_trace(self):
        """A new cycle: forget the last one's events (all kept with ``acc_events=True``)."""
        if self._prepared and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events "
                       "from the current cycle will be reported. To keep events across "
                       "cycles, set acc_events=True.")
        if not self._prepared or not self.acc_events:
            self._events = []
            self._memory_events = []
        self._prepared = True

    def start_trace(self):
        """Start recording: every op call and backward node gets a span from now on."""
        with _lock:
            if _active[0] is not None and _active[0] is not self:
                raise RuntimeError("Profiler is already enabled on this thread")
            _active[0] = self
            self._install()
            self._recording = True
        if self.profile_memory:
            _ms.enable()
            _ms.add_listener(self._on_memory)

    def stop_trace(self):
        """Stop recording; the events stay until the next cycle is prepared."""
        if not self._recording:
            return
        _ms.remove_listener(self._on_memory)
        with _lock:
            self._uninstall()
            self._recording = False
            if _active[0] is self:
                _active[0] = None

    # ---- recording ----
    def _stack(self):
        st = getattr(self._stacks, "frames", None)
        if st is None:
            st = self._stacks.frames = []
        return st

    def _span(self, name, fn, args, kwargs):
        stack = self._stack()
        frame = [0, 0]                   # time and net bytes of the child spans
        stack.append(frame)
        m0 = _ms.current()               # net bytes of the span: allocated - freed
        start = time.perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            end = time.perf_counter_ns()
            stack.pop()
            dur = end - start
            used = _ms.current() - m0 if self.profile_memory else 0
            if stack:
                stack[-1][0] += dur
                stack[-1][1] += used
            shapes = None
            if self.record_shapes:
                shapes = [list(a.shape) if hasattr(a, "_data") else [] for a in args]
            self._events.append(FunctionEvent(
                name, start, end, dur - frame[0], threading.get_ident(), len(stack), shapes,
                used, used - frame[1], _user_stack() if self.with_stack else None))

    # ---- install / uninstall ----
    def _on_memory(self, address, nbytes):
        self._memory_events.append((time.perf_counter_ns(), address, nbytes,
                                    _ms.current(), threading.get_ident()))

    def _install(self):
        # every op passes dispatch's mode seam; the profiler is a mode that times the call
        from ember.autograd.grad_mode import state
        from ember.autograd import engine
        self._mode = _ProfilerMode(self)
        state.modes = state.modes + (self._mode,)
        original_run = engine._run_node
        prof = self

        def run_node(node, buf, create_graph):
            return prof._span("autograd::engine::evaluate_function: " + node.name(),
                              original_run, (node, buf, create_graph), {})
        self._patches.append((engine, "_run_node", original_run, run_node))
        engine._run_node = run_node

    def _uninstall(self):
        from ember.autograd.grad_mode import state
        # take out this profile's mode only: stop_trace may run from a step() called under
        # another mode pushed after start_trace, which must stay
        state.modes = tuple(m for m in state.modes if m is not self._mode)
        for obj, name, original, ours in reversed(self._patches):
            if getattr(obj, name) is ours:
                setattr(obj, name, original)
        self._patches.clear()

    # ---- results ----
    def _check_prepared(self, what):
        # torch: nothing to report before the schedule first left NONE
        if self.enabled and not self._prepared:
            raise AssertionError(f"Profiler must be initialized before {what}")

    def events(self):
        """The spans of the current (last) cycle, unaggregated."""
        self._check_prepared("accessing events")
        return EventList(self._events, self.profile_memory)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        self._check_prepared("getting key averages")
        out = {}
        for e in self._events:
            key = (e.name, str(e.shapes)) if group_by_input_shape else e.name
            if group_by_stack_n:
                key = (key, tuple(e.stack[:group_by_stack_n]))
            avg = out.get(key)
            if avg is None:
                avg = out[key] = _Average(e.name)
                avg.input_shapes = e.shapes
                avg.stack = e.stack[:group_by_stack_n] if group_by_stack_n else e.stack
            avg.count += 1
            avg.cpu_time_total += e.cpu_time_total
            avg.self_cpu_time_total += e.self_cpu_time_total
            avg.cpu_memory_usage += e.cpu_memory_usage
            avg.self_cpu_memory_usage += e.self_cpu_memory_usage
        return EventList(out.values(), self.profile_memory, group_by_stack_n)

    def export_chrome_trace(self, path, use_python_export=False):
        """Write the spans as Chrome trace events (opens in Perfetto / chrome://tracing);
        gzip-compressed when ``path`` ends in ``.gz``, as torch does."""
        self._check_prepared("exporting chrome trace")
        t0 = min([e.start_ns for e in self._events] + [m[0] for m in self._memory_events],
                 default=0)
        pid = os.getpid()
        events = []
        for e in self._events:
            args = {"Input Dims": e.shapes} if e.shapes is not None else {}
            if self.profile_memory:
                args["CPU Mem"] = e.cpu_memory_usage
                args["Self CPU Mem"] = e.self_cpu_memory_usage
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            events.append({"name": e.trace_name, "ph": "X", "cat": e.cat,
                           "ts": (e.start_ns - t0) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3,
                           "pid": pid, "tid": e.thread, "args": args})
        # torch's memory events: an instant per allocation (Bytes > 0) and free (Bytes < 0)
        for t_ns, address, nbytes, total, tid in self._memory_events:
            events.append({"name": "[memory]", "ph": "i", "s": "t", "cat": "cpu_instant_event",
                           "ts": (t_ns - t0) / 1e3, "pid": pid, "tid": tid,
                           "args": {"Addr": address or 0, "Bytes": nbytes,
                                    "Total Allocated": total, "Total Reserved": total,
                                    "Device Type": 0, "Device Id": -1}})
        trace = {"traceEvents": events, "displayTimeUnit": "ms"}
        if path.endswith(".gz"):
            with gzip.open(path, "wt") as f:
                json.dump(trace, f)
        else:
            with open(path, "w") as f:
                json.dump(trace, f)
        return path


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stack(limit=8):
    """The caller's frames outside ember, innermost first, as torch writes them:
    ``file.py(12): function``."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        fn = f.f_code.co_filename
        if not fn.startswith(_EMBER_DIR):
            out.append(f"{fn}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


class _ProfilerMode:
    """The dispatch mode that wraps each op call in a timed span.

    It only observes (``observing``): a composite op (layer_norm, gelu, attention...) hands
    it the whole call and runs its usual path inside the span (its fast path or fused
    kernel, not the decomposition a tracer needs), so the profile times what runs
    unprofiled."""
    observing = True

    def __init__(self, prof):
        self.prof = prof

    # calls made of many ops (a backward pass, an optimizer step): the profiler stays
    # active inside them so each of their ops gets its own span
    _COMPOUND = ("backward", "optimizer.step", "optimizer.zero_grad")
    _LABELS = {"optimizer.step": "Optimizer.step#{}.step",
               "optimizer.zero_grad": "Optimizer.zero_grad#{}.zero_grad"}

    def call(self, op, fn, args, kwargs):
        name = op if isinstance(op, str) else op.name
        if name in self._COMPOUND:
            from ..autograd.grad_mode import state
            saved = state.modes
            state.modes = saved + (self,)
            try:
                label = self._LABELS.get(name)
                if label is None:
                    return fn(*args, **kwargs)
                # torch labels each optimizer call with its class (hooks included)
                with record_function(label.format(type(args[0]).__name__)):
                    return fn(*args, **kwargs)
            finally:
                state.modes = saved
        return self.prof._span("ember::" + name.strip("_"), fn, args, kwargs)


class record_function:
    """A named span in the active profile (a context manager and a decorator)."""

    def __init__(self, name, args=None):
        self.name = name

    def __enter__(self):
        prof = _active[0]
        self._prof = prof
        if prof is not None:
            self._frame = [0, 0]
            prof._stack().append(self._frame)
            self._mem0 = _ms.current()
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        prof = self._prof
        if prof is None:
            return False
        self._prof = None
        end = time.perf_counter_ns()
        stack = prof._stack()
        stack.pop()
        dur = end - self._start
        used = _ms.current() - self._mem0 if prof.profile_memory else 0
        if stack:
            stack[-1][0] += dur
            stack[-1][1] += used
        if prof._recording:          # a span still open when its cycle stopped is dropped
            prof._events.append(FunctionEvent(
                self.name, self._start, end, dur - self._frame[0], threading.get_ident(),
                len(stack), None, used, used - self._frame[1],
                _user_stack() if prof.with_stack else None, "user_annotation"))
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper
