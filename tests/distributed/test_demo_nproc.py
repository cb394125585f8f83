"""`make demo NPROC=2` / `python -m ember.examples.gpt --nproc 2`: the demo relaunches itself
on 2 processes through the launcher, trains the GPT with DistributedDataParallel, and only
rank 0 prints and saves the checkpoint (which a later run resumes)."""
import sys

import ember

try:
    from ._mpi import env_for_ranks, requires_mpi, run_command
except ImportError:
    from _mpi import env_for_ranks, requires_mpi, run_command

TINY = ["--steps", "2", "--sample-tokens", "4", "--data-bytes", "40000", "--n-layer", "1",
        "--n-embd", "32", "--n-head", "2", "--block-size", "16", "--batch-size", "4",
        "--no-amp"]


@requires_mpi
def test_demo_trains_data_parallel_on_two_processes(tmp_path):
    ckpt = str(tmp_path / "gpt.pt")
    cmd = [sys.executable, "-m", "ember.examples.gpt", "--nproc", "2", "--fresh",
           "--checkpoint", ckpt, *TINY]
    _, out = run_command(cmd, timeout=120, env=env_for_ranks())
    assert "launching 2 processes" in out, out
    assert "2 processes (DistributedDataParallel)" in out, out
    assert out.count("summary:") == 1 and out.count("checkpoint saved") == 1, out
    state = ember.load(ckpt)
    assert state["step"] == 2
    assert not any(k.startswith("module.") for k in state["model"])   # the plain module's
