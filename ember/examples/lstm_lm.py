"""An LSTM language model written as plain PyTorch code (the only ember line is the import).

Embedding -> dropout -> multi-layer LSTM (dropout between layers) -> dropout -> Linear,
optionally with the decoder tied to the embedding (Press & Wolf, 2017). Trained with
truncated back-propagation through time: the hidden state is carried across batches and
detached from the graph at each step.

    python -m ember.examples.lstm_lm --steps 50      # bytes of this file as the corpus
"""
import argparse
import math

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab_size, emb_size=64, hidden_size=64, num_layers=2, dropout=0.2,
                 tie_weights=False):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab_size, emb_size)
        self.rnn = nn.LSTM(emb_size, hidden_size, num_layers, dropout=dropout,
                           batch_first=True)
        self.decoder = nn.Linear(hidden_size, vocab_size)
        if tie_weights:
            if hidden_size != emb_size:
                raise ValueError("tie_weights needs hidden_size == emb_size")
            self.decoder.weight = self.encoder.weight
        self.num_layers, self.hidden_size = num_layers, hidden_size
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        if self.decoder.weight is not self.encoder.weight:
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def init_hidden(self, batch_size):
        weight = next(self.parameters())
        return (weight.new_zeros(self.num_layers, batch_size, self.hidden_size),
                weight.new_zeros(self.num_layers, batch_size, self.hidden_size))

    def forward(self, tokens, hidden=None):
        emb = self.drop(self.encoder(tokens))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        return self.decoder(output), hidden


def repackage_hidden(h):
    """Cut the graph at the batch boundary (truncated BPTT)."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def batchify(data, batch_size):
    """Lay a 1-D token stream out as `batch_size` parallel streams: (batch, length)."""
    n = data.size(0) // batch_size
    return data[:n * batch_size].view(batch_size, n)


def train_steps(model, optimizer, streams, bptt, steps, clip=0.25):
    """`steps` steps of truncated BPTT over the (batch, length) `streams`; returns losses."""
    model.train()
    hidden = model.init_hidden(streams.size(0))
    losses = []
    pos = 0
    for _ in range(steps):
        if pos + bptt + 1 > streams.size(1):
            pos, hidden = 0, model.init_hidden(streams.size(0))
        x = streams[:, pos:pos + bptt]
        y = streams[:, pos + 1:pos + 1 + bptt]
        pos += bptt
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        logits, hidden = model(x, hidden)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.examples.lstm_lm")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--bptt", type=int, default=32)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--tied", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)

    with open(__file__, "rb") as f:
        data = torch.tensor(list(f.read()), dtype=torch.long)
    streams = batchify(data, args.batch_size)
    model = LSTMLanguageModel(256, args.size, args.size, num_layers=2, dropout=0.2,
                              tie_weights=args.tied)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses = train_steps(model, optimizer, streams, args.bptt, args.steps)
    k = max(1, len(losses) // 10)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    print(f"LSTM LM: loss {first:.3f} -> {last:.3f} (perplexity {math.exp(first):.1f} -> "
          f"{math.exp(last):.1f}) over {args.steps} steps; uniform would be {math.log(256):.3f}")


if __name__ == "__main__":
    main()
