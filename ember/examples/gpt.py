"""The main job (`make demo`): train a small character-level GPT on Python's own source.

The model and the training loop are plain PyTorch code; the only ember-specific line is the
import. They run unchanged with ``import torch`` (the tests do exactly that to compare).

    python -m ember.examples.gpt --help
    python -m ember.examples.gpt --time 120          # train ~2 minutes, resume next time
    python -m ember.examples.gpt --nproc 2           # data-parallel over 2 processes

Data: the standard library's ``.py`` files, read at run time (never copied into the repo),
as bytes (vocabulary 256). Training: DataLoader over random windows, AdamW with warmup then
a cosine decay that ends when the time budget does, gradient clipping, float32 (``--amp``
for bf16 autocast, ``--compile`` for the compiled model: both measured slower here), a
checkpoint of model/optimizer/scheduler/scaler that the next run resumes from, and at the
end a sample generated with a KV cache and a summary line comparing validation loss with
the unigram baseline (``--vs-torch`` adds torch eager's tokens/s on the same model).

``--nproc N`` trains data-parallel: the script relaunches itself on N processes through the
launcher (``python -m ember.distributed.run``, torchrun's role), each process wraps the
model in DistributedDataParallel and draws its own batches (the global batch is N x
``--batch-size``); rank 0 prints, saves the checkpoint and samples.
"""
import argparse
import importlib
import math
import os
import re
import statistics
import subprocess
import sys
import time
import types

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


# ---------------------------------------------------------------- the model (plain PyTorch)
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.dropout = dropout

    def forward(self, x, layer_past=None, use_cache=False):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        dropout_p = self.dropout if self.training else 0.0
        if layer_past is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
        else:
            # the cached keys/values of the earlier positions come first; each of the T new
            # queries sees all of them and the new keys up to its own position (is_causal
            # would align the mask top-left, wrong when there are fewer queries than keys)
            k = torch.cat([layer_past[0], k], dim=2)
            v = torch.cat([layer_past[1], v], dim=2)
            L = k.size(2)
            mask = None if T == 1 else torch.ones(T, L, dtype=torch.bool).tril(diagonal=L - T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        y = self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return (y, (k, v)) if use_cache else y


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x, layer_past=None, use_cache=False):
        if not use_cache:
            x = x + self.attn(self.ln1(x), layer_past)
            return x + self.mlp(self.ln2(x))
        a, present = self.attn(self.ln1(x), layer_past, use_cache=True)
        x = x + a
        return x + self.mlp(self.ln2(x)), present


class GPT(nn.Module):
    """Decoder-only transformer over bytes, with the output head tied to the embedding."""

    def __init__(self, vocab_size=256, block_size=64, n_layer=4, n_head=4, n_embd=128,
                 dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight          # weight tying
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None, past_key_values=None, use_cache=False):
        """(logits, loss); with ``use_cache=True`` (logits, loss, present) where present holds
        each layer's (keys, values) so far, to pass back as ``past_key_values`` with the next
        tokens (``idx`` then holds only the new tokens)."""
        B, T = idx.shape
        past_len = 0 if past_key_values is None else past_key_values[0][0].size(2)
        if past_len + T > self.block_size:
            raise ValueError(f"{past_len + T} positions exceed block_size {self.block_size}")
        pos = torch.arange(past_len, past_len + T)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        present = []
        for i, block in enumerate(self.blocks):
            layer_past = None if past_key_values is None else past_key_values[i]
            if use_cache:
                x, kv = block(x, layer_past, use_cache=True)
                present.append(kv)
            elif layer_past is None:
                x = block(x)        # a plain training call: wrappers of a block see block(x)
            else:
                x = block(x, layer_past)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1).float(), targets.view(B * T))
        return (logits, loss, tuple(present)) if use_cache else (logits, loss)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, greedy=False, use_cache=False):
        """Append `max_new_tokens` sampled (or with `greedy`, argmax) tokens to `idx`.

        Without a cache each step reruns the model on the last `block_size` tokens. With
        ``use_cache=True`` a step feeds only the newest token, attending to the keys and values
        cached for the earlier ones (``past_key_values``); the logits are the same. Position
        embeddings are absolute, so a full cache cannot slide by one position: when it holds
        `block_size` positions it restarts from the last ``block_size // 2`` tokens (one
        forward over them), and the context then grows again.
        """
        past = None
        for _ in range(max_new_tokens):
            if not use_cache:
                logits, _ = self(idx[:, -self.block_size:])
            elif past is None or past[0][0].size(2) == self.block_size:
                keep = self.block_size if past is None else self.block_size // 2
                logits, _, past = self(idx[:, -keep:], use_cache=True)
            else:
                logits, _, past = self(idx[:, -1:], past_key_values=past, use_cache=True)
            logits = logits[:, -1, :].float() / temperature
            if greedy:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                nxt = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat([idx, nxt], dim=1)
        return idx


# ---------------------------------------------------------------- data
def stdlib_text(max_bytes):
    """Bytes of the standard library's .py files (sorted, so every machine reads the same)."""
    root = os.path.dirname(os.__file__)
    chunks, total = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "test", "tests",
                                                              "__pycache__", "idlelib"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    data = f.read()
                chunks.append(data)
                total += len(data)
                if total >= max_bytes:
                    return b"".join(chunks)[:max_bytes]
    return b"".join(chunks)


class Windows(torch.utils.data.Dataset):
    """(input, target) windows of `block_size` bytes starting at every position."""

    def __init__(self, data, block_size):
        self.data, self.block_size = data, block_size

    def __len__(self):
        return len(self.data) - self.block_size - 1

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block_size + 1]
        return chunk[:-1], chunk[1:]


def unigram_loss(train, val):
    """Cross-entropy (nats) of `val` under the byte frequencies of `train` (add-one)."""
    counts = torch.bincount(train.long(), minlength=256).double() + 1
    logp = (counts / counts.sum()).log()
    return -logp[val.long()].mean().item()


# ---------------------------------------------------------------- training
class Progress:
    """A one-line progress bar (like tqdm's) that rewrites itself on a terminal."""

    def __init__(self, total_seconds, start_step):
        self.total, self.t0, self.start_step = total_seconds, time.time(), start_step
        self.tty = sys.stdout.isatty()
        self.last_print = 0.0
        self.last_step = None

    def update(self, step, loss, tokens_per_s, lr, final=False):
        elapsed = time.time() - self.t0
        frac = min(1.0, elapsed / self.total) if self.total else 1.0
        bar = "#" * int(frac * 24) + "-" * (24 - int(frac * 24))
        line = (f"[{bar}] step {step:5d} | loss {loss:.4f} | {tokens_per_s:7.0f} tok/s | "
                f"lr {lr:.2e} | {elapsed:5.1f}s")
        if self.tty:
            print("\r" + line, end="\n" if final else "", flush=True)
        elif (final and step != self.last_step) or elapsed - self.last_print >= 10:
            print(line, flush=True)
            self.last_print, self.last_step = elapsed, step


class Schedule:
    """LambdaLR's factor: linear warmup over this run's first `warmup` steps, times a cosine
    decay from 1 to `min_ratio` over the run's budget. The training loop sets `progress`
    (the fraction of the budget spent: seconds of ``--time`` or steps of ``--steps``), so the
    decay ends when the time runs out whatever speed the machine gives. Each run (a resumed
    one too) is one warmup + cosine cycle starting at step `start`. A callable object rather
    than a function, so the scheduler's state_dict (the checkpoint) keeps its fields.

    >>> sched = Schedule(warmup=10)
    >>> sched(0), sched(9)
    (0.1, 1.0)
    """

    def __init__(self, warmup, min_ratio=0.1, start=0):
        self.warmup, self.min_ratio, self.start, self.progress = warmup, min_ratio, start, 0.0

    def __call__(self, step):
        warm = min(1.0, (step - self.start + 1) / max(1, self.warmup))
        t = min(1.0, max(0.0, self.progress))
        return warm * (self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * t)))


class ThreadPicker:
    """Times training steps at each candidate thread count in turns and keeps the fastest.

    On a quiet 2-core machine two threads win (~1.25x a single one), but while other
    processes hold the cores the threads wait for each other at every parallel region and
    one thread is several times faster (measured here at load 14: ~5x). So the choice is
    measured, at the start and again every `every` seconds, as the load changes.

    >>> picker = ThreadPicker([2, 1])
    >>> picker.before_step(now=0.0) in (2, 1)
    True
    """

    def __init__(self, candidates, every=40.0, tries=2, skip=2):
        self.candidates, self.every, self.tries = list(candidates), every, tries
        self.queue = []
        self.times = {}
        self.chosen = self.candidates[0]
        self.next_probe = None            # None: probe after `skip` warm-up steps
        self.skip = skip
        self.current = self.chosen

    def before_step(self, now):
        """The thread count for the coming step (also set in the library)."""
        if self.skip > 0:
            self.skip -= 1
        elif not self.queue and (self.next_probe is None or now >= self.next_probe):
            self.queue = [c for _ in range(self.tries) for c in self.candidates]
            self.times = {c: [] for c in self.candidates}
        self.current = self.queue.pop(0) if self.queue else self.chosen
        torch.set_num_threads(self.current)
        return self.current

    def after_step(self, seconds, now):
        if self.current in self.times and len(self.times[self.current]) < self.tries:
            self.times[self.current].append(seconds)
            if not self.queue and all(len(v) == self.tries for v in self.times.values()):
                self.chosen = min(self.times, key=lambda c: statistics.median(self.times[c]))
                self.next_probe = now + self.every

    def report(self):
        last = ", ".join(f"{c} thread{'s' * (c > 1)} {statistics.median(v) * 1e3:.0f} ms"
                         for c, v in self.times.items() if v)
        return f"threads {self.chosen}" + (f" (last probe, per step: {last})" if last else "")


@torch.no_grad()
def evaluate(model, data, block_size, batches, batch_size, generator):
    model.eval()
    losses = []
    for _ in range(batches):
        ix = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
        x = torch.stack([data[i:i + block_size] for i in ix.tolist()])
        y = torch.stack([data[i + 1:i + block_size + 1] for i in ix.tolist()])
        losses.append(model(x.long(), y.long())[1].item())
    model.train()
    return sum(losses) / len(losses)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.examples.gpt",
                                description="Train a character-level GPT on the Python "
                                            "standard library's source (the make demo job).")
    p.add_argument("--time", type=float, default=120.0,
                   help="seconds of training per run (default 120)")
    p.add_argument("--steps", type=int, default=None,
                   help="train this many steps instead of a time budget")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=50,
                   help="linear warmup steps; then cosine decay to 0.1 x lr over the budget")
    p.add_argument("--data-bytes", type=int, default=2_000_000)
    p.add_argument("--device", default="cpu")
    amp = p.add_mutually_exclusive_group()
    # off by default: measured slower (NumPy has no bf16 arithmetic: autocast adds casts)
    amp.add_argument("--amp", action="store_true", help="train under bf16 autocast")
    amp.add_argument("--no-amp", action="store_false", dest="amp",
                     help="float32 (the default)")
    p.add_argument("--compile", action="store_true",
                   help="compile the model (forward and backward) with torch.compile")
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op threads (default: the library's default, one per core)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--checkpoint", default=os.path.join(".ember_demo", "gpt.pt"))
    p.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    p.add_argument("--sample-tokens", type=int, default=500)
    p.add_argument("--vs-torch", action="store_true",
                   help="also time real PyTorch (eager) on the same model and batch shape "
                        "and print its tokens/s beside ember's (needs torch installed)")
    p.add_argument("--nproc", type=int, default=1,
                   help="train data-parallel on this many processes (DDP over MPI)")
    args = p.parse_args(argv)
    if args.nproc > 1 and args.compile:
        p.error("--compile and --nproc cannot be combined yet")
    return args


def launched_world_size():
    """The number of processes of the job this process belongs to (1 when it was not
    started by the launcher or mpiexec)."""
    return int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))


def relaunch(nproc, argv):
    """Run this script on `nproc` processes through the launcher; returns its exit code.
    The ranks get the same arguments but `--nproc` (they know they are part of a job)."""
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--nproc":
            skip = True
        elif not a.startswith("--nproc="):
            rest.append(a)
    launcher = f"{torch.__name__}.distributed.run"
    cmd = [sys.executable, "-m", launcher, f"--nproc-per-node={nproc}", "-m",
           "ember.examples.gpt", *rest]
    print(f"launching {nproc} processes: {' '.join(cmd[1:])}", flush=True)
    return subprocess.call(cmd)


def main(argv=None):
    args = parse_args(argv)
    if args.nproc > 1 and launched_world_size() == 1:
        sys.exit(relaunch(args.nproc, sys.argv[1:] if argv is None else list(argv)))
    rank, world = 0, 1
    if launched_world_size() > 1:
        torch.distributed.init_process_group()
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))   # share the cores
    if args.threads:
        torch.set_num_threads(args.threads)
    if rank != 0:                                   # rank 0 speaks for the job
        sys.stdout = open(os.devnull, "w")
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    raw = stdlib_text(args.data_bytes)
    data = torch.tensor(list(raw), dtype=torch.uint8)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    baseline = unigram_loss(train_data, val_data)
    print(f"data: {len(raw):,} bytes of Python stdlib source ({n:,} train / "
          f"{len(data) - n:,} val); unigram baseline loss {baseline:.4f}")

    model = GPT(block_size=args.block_size, n_layer=args.n_layer, n_head=args.n_head,
                n_embd=args.n_embd).to(device)
    optimizer = make_optimizer(model, args.lr)
    schedule = Schedule(args.warmup)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    use_amp = args.amp
    scaler = torch.amp.GradScaler(enabled=False)   # bf16 needs no loss scaling
    step = 0
    if os.path.exists(args.checkpoint) and not args.fresh:
        ckpt = torch.load(args.checkpoint)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        scaler.load_state_dict(ckpt["scaler"])
        step = ckpt["step"]
        # this run is a new warmup + cosine cycle over its own budget
        schedule.start, schedule.progress = step, 0.0
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"] * schedule(step)
        print(f"resumed from {args.checkpoint} at step {step} "
              f"(val loss then {ckpt['val_loss']:.4f})")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters; batch {args.batch_size} x {args.block_size}"
          f"{f' per process, {world} processes (DistributedDataParallel)' if world > 1 else ''}"
          f"; bf16 autocast {'on' if use_amp else 'off'}")

    # each rank draws its own batches (data parallelism); one process: the usual seed
    loader_gen = torch.Generator().manual_seed(args.seed + step + 1_000_003 * rank)
    sampler = torch.utils.data.RandomSampler(Windows(train_data, args.block_size),
                                             replacement=True, num_samples=10 ** 9,
                                             generator=loader_gen)
    loader = torch.utils.data.DataLoader(Windows(train_data, args.block_size),
                                         batch_size=args.batch_size, sampler=sampler)

    step_model = model
    if world > 1:
        # averages the gradients over the processes during backward; `model` stays the
        # plain module (evaluation, sampling and the checkpoint use it)
        step_model = torch.nn.parallel.DistributedDataParallel(model)
    if args.compile:
        # the optimizer, clipping and scheduler stay eager; the model's forward and backward
        # are captured once and replayed (state_dict and checkpoints use `model`)
        step_model = torch.compile(model)

    progress = Progress(args.time if args.steps is None else 0, step)
    start_step, t0 = step, time.time()
    tokens, loss_ema = 0, None
    budget = args.time if args.steps is None else args.steps
    picker = None
    if world == 1 and not args.threads and torch.get_num_threads() > 1:
        picker = ThreadPicker([torch.get_num_threads(), 1])
    for x, y in loader:
        if picker is not None:
            picker.before_step(time.time() - t0)
        t_step = time.time()
        loss = train_step(step_model, optimizer, scheduler, scaler, x.long(), y.long(),
                          use_amp)
        if picker is not None:
            picker.after_step(time.time() - t_step, time.time() - t0)
        step += 1
        tokens += x.numel() * world
        loss_ema = loss if loss_ema is None else 0.9 * loss_ema + 0.1 * loss
        elapsed = time.time() - t0
        progress.update(step, loss_ema, tokens / max(elapsed, 1e-9),
                        scheduler.get_last_lr()[0])
        spent = (elapsed if args.steps is None else step - start_step) / budget
        if world > 1:
            # every rank must stop at the same step and use the same learning rate: rank 0's
            # clock decides both
            flag = torch.tensor([spent])
            torch.distributed.broadcast(flag, src=0)
            spent = flag.item()
        schedule.progress = spent
        if spent >= 1.0:
            break
    elapsed = time.time() - t0
    tok_s = tokens / max(elapsed, 1e-9)
    progress.update(step, loss_ema if loss_ema is not None else float("nan"), tok_s,
                    scheduler.get_last_lr()[0], final=True)

    if picker is not None:
        print(picker.report())
    eval_gen = torch.Generator().manual_seed(0)
    train_loss = evaluate(model, train_data, args.block_size, 8, 32, eval_gen)
    val_loss = evaluate(model, val_data, args.block_size, 8, 32, eval_gen)
    if rank == 0:
        os.makedirs(os.path.dirname(args.checkpoint) or ".", exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                    "step": step, "val_loss": val_loss}, args.checkpoint)
        print(f"checkpoint saved to {args.checkpoint} (step {step}); run again to resume")
    if world > 1:
        torch.distributed.destroy_process_group()
        if rank != 0:
            return val_loss, baseline

    prompt = torch.tensor([list(b"def ")], dtype=torch.long)
    t_gen = time.time()
    out = model.generate(prompt, args.sample_tokens, temperature=0.8, use_cache=True)
    t_gen = time.time() - t_gen
    text = bytes(out[0].tolist()).decode("utf-8", errors="replace")
    print(f"---- sample ({args.sample_tokens} tokens in {t_gen:.2f}s, KV cache) ----\n" + text +
          "\n----------------")
    versus = ""
    if args.vs_torch:
        versus = "; " + versus_torch(args, use_amp)
    verdict = "below" if val_loss < baseline else "NOT below"
    print(f"summary: steps {start_step}->{step}, train loss {train_loss:.4f}, val loss "
          f"{val_loss:.4f} ({verdict} the unigram baseline {baseline:.4f}), "
          f"{tok_s:,.0f} tokens/s over {elapsed:.1f}s{versus}")
    return val_loss, baseline


def make_optimizer(model, lr):
    """AdamW with weight decay on the matrices and embeddings only (not biases, norms)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95))


def step_timer(mod, args, use_amp, compile_model=False):
    """A function n -> tokens/s of n training steps of `mod`'s GPT with the demo's sizes,
    optimizer and train_step on one fixed random batch (`mod`: this file's code, run by
    ember or by torch)."""
    lib = mod.torch
    lib.manual_seed(0)
    model = mod.GPT(block_size=args.block_size, n_layer=args.n_layer, n_head=args.n_head,
                    n_embd=args.n_embd)
    optimizer = mod.make_optimizer(model, args.lr)
    scheduler = lib.optim.lr_scheduler.LambdaLR(optimizer, mod.Schedule(args.warmup))
    scaler = lib.amp.GradScaler(enabled=False)
    step_model = lib.compile(model) if compile_model else model
    x = lib.randint(0, 256, (args.batch_size, args.block_size))
    y = lib.randint(0, 256, (args.batch_size, args.block_size))

    def tokens_per_s(n):
        t = time.perf_counter()
        for _ in range(n):
            mod.train_step(step_model, optimizer, scheduler, scaler, x, y, use_amp)
        return n * x.numel() / (time.perf_counter() - t)
    return tokens_per_s


def torch_twin():
    """This file's code run by real PyTorch (its `import` lines swapped, nothing else), or
    None when torch is not installed. Only --vs-torch calls this: torch is no dependency."""
    try:
        importlib.import_module("torch")
    except ImportError:
        return None
    with open(__file__) as f:
        src = re.sub(r"^import ember\b", "import torch", f.read(), flags=re.M)
    twin = types.ModuleType("gpt_under_torch")
    twin.__file__ = __file__
    exec(compile(src, __file__, "exec"), twin.__dict__)
    return twin


def versus_torch(args, use_amp, steps=8, rounds=3):
    """ember's and torch eager's training tokens/s on the same model and batch shape,
    measured here in turns (ember, torch, ember, ...), medians of `rounds`; as text."""
    twin = torch_twin()
    if twin is None:
        return "torch is not installed: no torch figure (pip install torch for --vs-torch)"
    runs = {"ember": step_timer(types.SimpleNamespace(**globals()), args, use_amp,
                                args.compile),
            "torch eager": step_timer(twin, args, use_amp)}
    figures = {name: [] for name in runs}
    for name, run in runs.items():
        run(2)                                          # warm-up (and capture if compiled)
    for _ in range(rounds):
        for name, run in runs.items():
            figures[name].append(run(steps))
    e, t = (statistics.median(figures[name]) for name in runs)
    return (f"same model and batch, {rounds}x{steps} steps in turns: ember {e:,.0f} tokens/s"
            f" vs torch eager {t:,.0f} tokens/s ({e / t:.2f}x)")


def train_step(model, optimizer, scheduler, scaler, x, y, use_amp):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
        _, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    return loss.item()


if __name__ == "__main__":
    main()
