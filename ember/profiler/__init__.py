"""ember.profiler: where the time goes, per op, in PyTorch's profiler API.

    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("step"):
            loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")      # open in Perfetto or chrome://tracing

    # a training loop: record steps 2-3 of each 4, a trace file per cycle for TensorBoard
    sched = ember.profiler.schedule(wait=1, warmup=1, active=2)
    handler = ember.profiler.tensorboard_trace_handler("log")
    with ember.profiler.profile(schedule=sched, on_trace_ready=handler) as p:
        for batch in loader:
            train_step(batch); p.step()

While a profile records, every op call (through dispatch's mode seam) and each backward
node runs inside a timed span; when none records the mode stack is empty.
``register_optimizer_step_post_hook`` is ember.optim's, attached by the top namespace (the
profiler's layer sits below optim's).
"""
from .profiler import (profile, record_function, ProfilerActivity, FunctionEvent,  # noqa: F401
                       EventList)
from .scheduling import (ProfilerAction, schedule, tensorboard_trace_handler,  # noqa: F401
                         supported_activities, KinetoStepTracker, RecordScope)
from ..autograd.profiler_types import DeviceType  # noqa: F401  (the same enum as torch.autograd's)
from ..autograd.variable import kineto_available  # noqa: F401  (False: ember has no Kineto)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function"]
