"""ember's benchmark suite: each workload runs on ember and on PyTorch, side by side.

`python -m benchmarks [NAME ...] [--threads N ...] [--busy] [--write]` runs workloads (all by
default), each library in its own worker subprocess with its own default settings (torch as
users run it), the two taking turns sample by sample; it prints medians and the ratio
ember/torch, and with --write regenerates BENCHMARKS.md (with each workload's definition).
`--in-process` runs both libraries in one process instead. See README_bench.md.
"""
