"""The soak run (`make soak`): train the examples' GPT at a small size for many steps and
check that nothing leaks and that a crash during a checkpoint save loses nothing.

One process trains `--steps` steps from `--start` (0, or the step of the checkpoint it
resumes from), with a DataLoader with worker processes, saving model, optimizer, scheduler
and RNG state every `--ckpt-every` steps with `ember.save` (an atomic write: a temporary
file renamed over the old checkpoint). It appends one JSON line per step to `--log`
(step, loss as its exact repr) and one per `--rss-every` steps with the resident set size.

`--crash-at-save K` makes the K-th save kill the process with SIGKILL while the archive is
being written: the object that triggers it sits in the state after the tensors, so the
kill lands mid-archive, as a power cut or an OOM kill would. The test then resumes the run
from the checkpoint on disk and compares the replayed steps' losses with the first run's.

    python tests/soak/soak_gpt.py --dir /tmp/soak --steps 10000 --crash-at-save 3
    python tests/soak/soak_gpt.py --dir /tmp/soak --steps 10000 --resume
"""
import argparse
import json
import os
import signal
import sys

import numpy as np

import ember as torch
from ember.examples.gpt import GPT, stdlib_text


class KillWhilePickled:
    """Pickling this object kills the process (SIGKILL: no cleanup, no flush)."""

    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGKILL)
        return (KillWhilePickled, ())   # not reached


class DeterministicWindows(torch.utils.data.Dataset):
    """Sample i is a window whose start depends only on i, so that any step's batch is the
    same whether the run started at 0 or resumed (the sampler starts at step * batch)."""

    def __init__(self, data, block_size, length):
        self.data, self.block_size, self.length = data, block_size, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        start = (i * 2654435761) % (len(self.data) - self.block_size - 1)
        chunk = self.data[start:start + self.block_size + 1]
        return chunk[:-1], chunk[1:]


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def build(args):
    torch.manual_seed(0)
    model = GPT(vocab_size=256, block_size=args.block_size, n_layer=1, n_head=2,
                n_embd=32, dropout=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps,
                                                           eta_min=3e-4)
    return model, optimizer, scheduler


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, default=10000)
    p.add_argument("--ckpt-every", type=int, default=1000)
    p.add_argument("--rss-every", type=int, default=250)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--crash-at-save", type=int, default=0)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.dir, exist_ok=True)
    ckpt = os.path.join(args.dir, "ckpt.pt")
    log = open(os.path.join(args.dir, "log.jsonl"), "a", buffering=1)

    model, optimizer, scheduler = build(args)
    start, saved = 0, None
    if args.resume:
        saved = torch.load(ckpt)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        start = saved["step"]
    log.write(json.dumps({"event": "start", "step": start, "pid": os.getpid()}) + "\n")

    text = stdlib_text(200_000)        # the demo's data: the standard library's source
    data = torch.from_numpy(np.frombuffer(text, dtype=np.uint8).astype(np.int64))
    dataset = DeterministicWindows(data, args.block_size, args.steps * args.batch_size)
    sampler = range(start * args.batch_size, args.steps * args.batch_size)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size,
                                         sampler=sampler, num_workers=args.workers)
    batches = iter(loader)          # may draw from the RNG: restore the saved state after
    if saved is not None:
        torch.set_rng_state(saved["rng"])

    saves = 0
    model.train()
    for step in range(start + 1, args.steps + 1):
        x, y = next(batches)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        log.write(json.dumps({"step": step, "loss": repr(loss.item())}) + "\n")
        if step % args.rss_every == 0:
            log.write(json.dumps({"step": step, "rss": rss_bytes()}) + "\n")
        if step % args.ckpt_every == 0:
            saves += 1
            state = {"step": step, "model": model.state_dict(),
                     "optimizer": optimizer.state_dict(),
                     "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}
            if saves == args.crash_at_save:
                state["zz_crash"] = KillWhilePickled()
            torch.save(state, ckpt)
    log.write(json.dumps({"event": "done", "step": args.steps}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
