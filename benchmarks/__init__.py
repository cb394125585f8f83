"""ember's benchmark suite: each workload runs on ember and on PyTorch in one process.

`python -m benchmarks [NAME ...] [--threads N] [--write]` runs workloads (all by default),
prints medians and the ratio ember/torch, and with --write regenerates BENCHMARKS.md.
"""
