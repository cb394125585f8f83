"""Peak memory of one training step of the examples' GPT, with and without activation
checkpointing of every transformer block (ember.utils.checkpoint).

    PYTHONPATH=. python -m benchmarks.checkpoint_memory [--layers 4 --embd 128 --batch 16]

Counts are ember.memory's (every live tensor block, from allocation to free): the peak of
memory_allocated() over forward + backward, minus what was held before the step (model,
batch). The same counters stand behind ember.cuda.max_memory_allocated on cpu.
"""
import argparse

import ember
from ember import nn
from ember.examples.gpt import GPT
from ember.utils.checkpoint import checkpoint


class Checkpointed(nn.Module):
    """A block whose activations are recomputed in backward instead of kept."""

    def __init__(self, block, use_reentrant):
        super().__init__()
        self.block = block
        self.use_reentrant = use_reentrant

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=self.use_reentrant)


def peak_of_step(model, idx, targets):
    """Bytes above the starting level at the peak of one forward+backward."""
    model.zero_grad(set_to_none=True)
    base = ember.memory.memory_allocated()
    ember.memory.reset_peak_memory_stats()
    _, loss = model(idx, targets)
    loss.backward()
    peak = ember.memory.max_memory_allocated() - base
    grads = [p.grad.clone() for p in model.parameters()]
    return peak, loss.item(), grads


def measure(layers=4, embd=128, heads=4, block=64, batch=16, dropout=0.1, seed=0):
    """{variant: (peak bytes, loss)} for plain / non-reentrant / reentrant checkpointing;
    the losses and gradients of the three must agree (same seed for dropout)."""
    ember.manual_seed(seed)
    model = GPT(block_size=block, n_layer=layers, n_head=heads, n_embd=embd, dropout=dropout)
    idx = ember.randint(0, 256, (batch, block))
    targets = ember.randint(0, 256, (batch, block))
    plain_blocks = list(model.blocks)
    out = {}
    ref = None
    for name, wrap in (("plain", None), ("checkpoint(use_reentrant=False)", False),
                       ("checkpoint(use_reentrant=True)", True)):
        model.blocks = nn.ModuleList(plain_blocks if wrap is None else
                                     [Checkpointed(b, wrap) for b in plain_blocks])
        ember.manual_seed(seed + 1)
        peak, loss, grads = peak_of_step(model, idx, targets)
        if ref is None:
            ref = (loss, grads)
        gdiff = max(float((a - b).abs().max()) for a, b in zip(ref[1], grads))
        out[name] = (peak, loss, gdiff)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=64)
    a = ap.parse_args()
    res = measure(layers=a.layers, embd=a.embd, batch=a.batch, block=a.block)
    plain = res["plain"][0]
    print(f"GPT n_layer={a.layers} n_embd={a.embd} batch={a.batch} block={a.block}, "
          "one forward+backward, dropout 0.1")
    for name, (peak, loss, gdiff) in res.items():
        print(f"  {name:34s} peak {peak / 2**20:8.2f} MiB  ({100 * peak / plain:5.1f} %)  "
              f"loss {loss:.6f}  max |grad - plain grad| {gdiff:.2e}")


if __name__ == "__main__":
    main()
