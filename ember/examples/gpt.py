"""The main job (`make demo`): train a small character-level GPT on Python's own source.

The model and the training loop are plain PyTorch code; the only ember-specific line is the
import. They run unchanged with ``import torch`` (the tests do exactly that to compare).

    python -m ember.examples.gpt --help
    python -m ember.examples.gpt --time 120          # train ~2 minutes, resume next time
    python -m ember.examples.gpt --nproc 2           # data-parallel over 2 processes

Data: the standard library's ``.py`` files, read at run time (never copied into the repo),
as bytes (vocabulary 256). Training: DataLoader over random windows, AdamW with warmup then
cosine decay, gradient clipping, bf16 autocast (``--no-amp`` to turn off), a checkpoint of
model/optimizer/scheduler/scaler that the next run resumes from, and at the end a sample of
generated text and a summary line comparing validation loss with the unigram baseline.

``--nproc N`` trains data-parallel: the script relaunches itself on N processes through the
launcher (``python -m ember.distributed.run``, torchrun's role), each process wraps the
model in DistributedDataParallel and draws its own batches (the global batch is N x
``--batch-size``); rank 0 prints, saves the checkpoint and samples.
"""
import argparse
import math
import os
import subprocess
import sys
import time

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

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


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

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(T)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1).float(), targets.view(B * T))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, greedy=False):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.block_size:])
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


def lr_at(step, warmup, decay_steps, min_ratio=0.1):
    """Linear warmup, then cosine decay to `min_ratio` of the peak, then constant."""
    if step < warmup:
        return (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, decay_steps - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * t))


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
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--decay-steps", type=int, default=3000)
    p.add_argument("--data-bytes", type=int, default=2_000_000)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-amp", action="store_true", help="turn off bf16 autocast")
    p.add_argument("--compile", action="store_true",
                   help="compile the model (forward and backward) with torch.compile")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--checkpoint", default=os.path.join(".ember_demo", "gpt.pt"))
    p.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    p.add_argument("--sample-tokens", type=int, default=300)
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
    decay = [p for n_, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n_, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_at(s, args.warmup, args.decay_steps))
    use_amp = not args.no_amp
    scaler = torch.amp.GradScaler(enabled=False)   # bf16 needs no loss scaling
    step = 0
    if os.path.exists(args.checkpoint) and not args.fresh:
        ckpt = torch.load(args.checkpoint)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        scaler.load_state_dict(ckpt["scaler"])
        step = ckpt["step"]
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
    for x, y in loader:
        loss = train_step(step_model, optimizer, scheduler, scaler, x.long(), y.long(),
                          use_amp)
        step += 1
        tokens += x.numel() * world
        loss_ema = loss if loss_ema is None else 0.9 * loss_ema + 0.1 * loss
        elapsed = time.time() - t0
        progress.update(step, loss_ema, tokens / max(elapsed, 1e-9),
                        scheduler.get_last_lr()[0])
        done = (args.steps is not None and step - start_step >= args.steps) or \
            (args.steps is None and elapsed >= args.time)
        if world > 1:       # every rank must stop at the same step: rank 0's clock decides
            flag = torch.tensor([float(done)])
            torch.distributed.broadcast(flag, src=0)
            done = bool(flag.item())
        if done:
            break
    elapsed = time.time() - t0
    tok_s = tokens / max(elapsed, 1e-9)
    progress.update(step, loss_ema if loss_ema is not None else float("nan"), tok_s,
                    scheduler.get_last_lr()[0], final=True)

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
    out = model.generate(prompt, args.sample_tokens, temperature=0.8)
    text = bytes(out[0].tolist()).decode("utf-8", errors="replace")
    print("---- sample ----\n" + text + "\n----------------")
    verdict = "below" if val_loss < baseline else "NOT below"
    print(f"summary: steps {start_step}->{step}, train loss {train_loss:.4f}, val loss "
          f"{val_loss:.4f} ({verdict} the unigram baseline {baseline:.4f}), "
          f"{tok_s:,.0f} tokens/s over {elapsed:.1f}s")
    return val_loss, baseline


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
