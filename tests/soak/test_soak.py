"""The soak test (`make soak`; `make test` leaves it out with `-m "not soak"`): 10,000 steps
of the examples' GPT at a small size with DataLoader workers, checkpoints every 1,000 steps
and a SIGKILL in the middle of the third save. It checks that

- the killed run left the previous checkpoint intact (the save is atomic),
- the run resumed from it replays the lost steps with bit-identical losses,
- resident memory is flat after warm-up: growth under 5 % in each process.

tests/soak/soak_gpt.py is the training script; each run is a child process with a hard
timeout, so a hang fails the test instead of stalling CI.
"""
import json
import os
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.soak

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STEPS, EVERY, CRASH_AT = 10_000, 1_000, 3
WARMUP = 1_000


def run(folder, *extra, timeout=1200):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.join(HERE, "soak_gpt.py"), "--dir", str(folder),
           "--steps", str(STEPS), "--ckpt-every", str(EVERY), *extra]
    return subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)


def read_log(folder):
    """Per process (split at each "start" event): {step: loss} and [(step, rss)]."""
    runs = []
    with open(os.path.join(folder, "log.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("event") == "start":
                runs.append({"start": rec["step"], "loss": {}, "rss": [], "done": False})
            elif rec.get("event") == "done":
                runs[-1]["done"] = True
            elif "loss" in rec:
                runs[-1]["loss"][rec["step"]] = rec["loss"]
            elif "rss" in rec:
                runs[-1]["rss"].append((rec["step"], rec["rss"]))
    return runs


def rss_growth(samples, start):
    after = [rss for step, rss in samples if step >= start + WARMUP]
    return max(after) / after[0] - 1.0


def test_soak_gpt_crash_during_save_resumes_identically_with_flat_memory(tmp_path):
    first = run(tmp_path, "--crash-at-save", str(CRASH_AT))
    assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
    second = run(tmp_path, "--resume")
    assert second.returncode == 0, second.stderr[-2000:]

    killed, resumed = read_log(tmp_path)
    crash_step = CRASH_AT * EVERY
    assert not killed["done"] and max(killed["loss"]) == crash_step
    # the checkpoint on disk is the last good one, not the half-written third
    assert resumed["start"] == crash_step - EVERY and resumed["done"]
    assert max(resumed["loss"]) == STEPS
    replayed = range(crash_step - EVERY + 1, crash_step + 1)
    assert [resumed["loss"][s] for s in replayed] == [killed["loss"][s] for s in replayed]
    # training did something: the loss fell well below the uniform 5.5 over 256 bytes
    assert float(resumed["loss"][STEPS]) < float(killed["loss"][1]) - 1.0

    assert rss_growth(resumed["rss"], resumed["start"]) < 0.05
    assert rss_growth(killed["rss"], killed["start"]) < 0.05
