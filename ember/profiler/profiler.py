"""The profiler: timed spans around ops, self/total times per name, chrome trace export.

`profile.__enter__` pushes a mode onto dispatch's mode stack, so every op call (functions,
Tensor methods and operators) runs inside a timed span, and times the backward engine's
per-node call; `__exit__` pops it. The mode only observes: ops take the same paths as
unprofiled (a composite op is one span around its fast path, see ember/ops/nn_ops.py). Spans nest, so an op's self time excludes the ops it
called. Names are ``ember::<op>`` and ``autograd::engine::evaluate_function: <Node>``.
"""
import json
import os
import threading
import time
from collections import defaultdict
from enum import Enum

_lock = threading.Lock()
_active = [None]


class ProfilerActivity(Enum):
    CPU = "cpu"
    CUDA = "cuda"


class FunctionEvent:
    """One timed span: name, start/end (ns, perf_counter), self time, thread, depth."""
    __slots__ = ("name", "start_ns", "end_ns", "self_ns", "thread", "depth", "shapes")

    def __init__(self, name, start_ns, end_ns, self_ns, thread, depth, shapes=None):
        self.name, self.start_ns, self.end_ns = name, start_ns, end_ns
        self.self_ns, self.thread, self.depth, self.shapes = self_ns, thread, depth, shapes

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


class EventList(list):
    """A list of events or averages, with PyTorch's ``table()``."""

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, **kwargs):
        rows = list(self)
        if sort_by:
            key = sort_by.replace("cpu_time_total", "cpu_time_total")
            rows.sort(key=lambda r: getattr(r, key, 0), reverse=True)
        rows = rows[:row_limit] if row_limit and row_limit > 0 else rows
        self_total = sum(r.self_cpu_time_total for r in self) or 1.0
        name_w = min(max([len(r.key) for r in rows] + [4]), max_name_column_width)
        head = (f"{'Name':<{name_w}}  {'Self CPU %':>10}  {'Self CPU':>11}  {'CPU total %':>11}  "
                f"{'CPU total':>11}  {'CPU time avg':>12}  {'# of Calls':>10}")
        line = "-" * len(head)
        out = [line, head, line]
        for r in rows:
            out.append(f"{r.key[:name_w]:<{name_w}}  "
                       f"{100 * r.self_cpu_time_total / self_total:>9.2f}%  "
                       f"{_fmt_us(r.self_cpu_time_total):>11}  "
                       f"{100 * r.cpu_time_total / self_total:>10.2f}%  "
                       f"{_fmt_us(r.cpu_time_total):>11}  {_fmt_us(r.cpu_time):>12}  "
                       f"{r.count:>10}")
        out.append(line)
        out.append(f"Self CPU time total: {_fmt_us(self_total)}")
        return "\n".join(out)

    def __str__(self):
        return self.table()


class profile:
    """Context manager that records a span per op call (see the module docstring)."""

    def __init__(self, activities=None, *, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False, schedule=None,
                 on_trace_ready=None, use_cuda=None, enabled=True):
        self.record_shapes = record_shapes
        self.enabled = enabled
        self.on_trace_ready = on_trace_ready
        self._events = []
        self._stacks = threading.local()
        self._patches = []

    # ---- recording ----
    def _stack(self):
        st = getattr(self._stacks, "frames", None)
        if st is None:
            st = self._stacks.frames = []
        return st

    def _span(self, name, fn, args, kwargs):
        stack = self._stack()
        frame = [0]                      # time spent in child spans
        stack.append(frame)
        start = time.perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            end = time.perf_counter_ns()
            stack.pop()
            dur = end - start
            if stack:
                stack[-1][0] += dur
            shapes = None
            if self.record_shapes:
                shapes = [list(a.shape) if hasattr(a, "_data") else [] for a in args]
            self._events.append(FunctionEvent(name, start, end, dur - frame[0],
                                              threading.get_ident(), len(stack), shapes))

    # ---- install / uninstall ----
    def __enter__(self):
        if not self.enabled:
            return self
        with _lock:
            if _active[0] is not None:
                raise RuntimeError("Profiler is already enabled on this thread")
            _active[0] = self
            self._install()
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        with _lock:
            for obj, name, original in reversed(self._patches):
                setattr(obj, name, original)
            self._patches.clear()
            _active[0] = None
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
        return False

    def _install(self):
        # every op passes dispatch's mode seam; the profiler is a mode that times the call
        from ember.autograd.grad_mode import state
        from ember.autograd import engine
        state.modes = state.modes + (_ProfilerMode(self),)
        self._patches.append((state, "modes", state.modes[:-1]))
        original_run = engine._run_node
        prof = self

        def run_node(node, buf, create_graph):
            return prof._span("autograd::engine::evaluate_function: " + node.name(),
                              original_run, (node, buf, create_graph), {})
        self._patches.append((engine, "_run_node", original_run))
        engine._run_node = run_node

    # ---- results ----
    def events(self):
        return EventList(self._events)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = defaultdict(lambda: None)
        out = {}
        for e in self._events:
            key = (e.name, str(e.shapes)) if group_by_input_shape else e.name
            avg = out.get(key)
            if avg is None:
                avg = out[key] = _Average(e.name)
                avg.input_shapes = e.shapes
            avg.count += 1
            avg.cpu_time_total += e.cpu_time_total
            avg.self_cpu_time_total += e.self_cpu_time_total
        del groups
        return EventList(out.values())

    def export_chrome_trace(self, path):
        """Write the spans as Chrome trace events (opens in Perfetto / chrome://tracing)."""
        t0 = min((e.start_ns for e in self._events), default=0)
        pid = os.getpid()
        trace = {"traceEvents": [
            {"name": e.name, "ph": "X", "cat": "cpu_op", "ts": (e.start_ns - t0) / 1e3,
             "dur": (e.end_ns - e.start_ns) / 1e3, "pid": pid, "tid": e.thread,
             "args": {"Input Dims": e.shapes} if e.shapes is not None else {}}
            for e in self._events], "displayTimeUnit": "ms"}
        with open(path, "w") as f:
            json.dump(trace, f)
        return path


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

    def call(self, op, fn, args, kwargs):
        name = op if isinstance(op, str) else op.name
        if name in self._COMPOUND:
            from ..autograd.grad_mode import state
            saved = state.modes
            state.modes = saved + (self,)
            try:
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
            self._frame = [0]
            prof._stack().append(self._frame)
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        prof = self._prof
        if prof is None:
            return False
        end = time.perf_counter_ns()
        stack = prof._stack()
        stack.pop()
        dur = end - self._start
        if stack:
            stack[-1][0] += dur
        prof._events.append(FunctionEvent(self.name, self._start, end, dur - self._frame[0],
                                          threading.get_ident(), len(stack)))
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper
