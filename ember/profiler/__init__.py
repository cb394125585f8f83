"""ember.profiler: where the time goes, per op, in PyTorch's profiler API.

    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("step"):
            loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")      # open in Perfetto or chrome://tracing

While a profile is active, every op call (through dispatch's mode seam) and each backward
node runs inside a timed span; when no profile is active the mode stack is empty.
"""
from .profiler import (profile, record_function, ProfilerActivity, FunctionEvent,  # noqa: F401
                       EventList)
