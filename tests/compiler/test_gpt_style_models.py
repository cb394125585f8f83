"""Third-party-style GPT models train under ember.compile exactly as eagerly (issue 21.6).

Two small models written here in the styles of nanoGPT (weight tying, a LayerNorm with an
optional bias, F.scaled_dot_product_attention(is_causal=True), configure_optimizers with
decay/no-decay parameter groups and AdamW, grad clipping) and of minGPT (explicit masked
attention over a registered causal-mask buffer, GELU in its tanh form, a ModuleDict of
blocks), written as their users write them with ``import ember as torch``. Each is trained
5 steps compiled and 5 steps eagerly from the same initial weights: the losses (and the first
step's gradients) agree within float tolerance, on the c and numpy backends.
"""
import inspect
import math

import numpy as np
import pytest

import ember as torch
import ember.nn as nn
from ember.nn import functional as F

VOCAB, BLOCK, EMBD, HEADS, LAYERS = 23, 8, 16, 2, 2


# ---------------------------------------------------------------- nanoGPT style
class LayerNormOptBias(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class FlashSelfAttention(nn.Module):
    def __init__(self, bias):
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD, bias=bias)
        self.c_proj = nn.Linear(EMBD, EMBD, bias=bias)
        self.resid_dropout = nn.Dropout(0.0)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(EMBD, dim=2)
        q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class NanoBlock(nn.Module):
    def __init__(self, bias):
        super().__init__()
        self.ln_1 = LayerNormOptBias(EMBD, bias)
        self.attn = FlashSelfAttention(bias)
        self.ln_2 = LayerNormOptBias(EMBD, bias)
        self.c_fc = nn.Linear(EMBD, 4 * EMBD, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * EMBD, EMBD, bias=bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))


class NanoStyleGPT(nn.Module):
    def __init__(self, bias=False):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, EMBD),
            wpe=nn.Embedding(BLOCK, EMBD),
            drop=nn.Dropout(0.0),
            h=nn.ModuleList([NanoBlock(bias) for _ in range(LAYERS)]),
            ln_f=LayerNormOptBias(EMBD, bias),
        ))
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight      # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * LAYERS))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay = [p for n, p in param_dict.items() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": nodecay, "weight_decay": 0.0}]
        fused = "fused" in inspect.signature(torch.optim.AdamW).parameters
        extra = dict(fused=False) if fused else dict()
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra)


# ---------------------------------------------------------------- minGPT style
class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class MaskedSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD)
        self.c_proj = nn.Linear(EMBD, EMBD)
        self.attn_dropout = nn.Dropout(0.0)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK))
                             .view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(EMBD, dim=2)
        k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MinBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBD)
        self.attn = MaskedSelfAttention()
        self.ln_2 = nn.LayerNorm(EMBD)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(EMBD, 4 * EMBD),
                                      c_proj=nn.Linear(4 * EMBD, EMBD), act=NewGELU()))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


class MinStyleGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, EMBD), wpe=nn.Embedding(BLOCK, EMBD),
            h=nn.ModuleList([MinBlock() for _ in range(LAYERS)]), ln_f=nn.LayerNorm(EMBD)))
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        decay, no_decay = set(), set()
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters(recurse=False):
                fpn = f"{mn}.{pn}" if mn else pn
                if pn.endswith("bias"):
                    no_decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, nn.Linear):
                    decay.add(fpn)
                else:
                    no_decay.add(fpn)
        params = dict(self.named_parameters())
        groups = [{"params": [params[n] for n in sorted(decay)], "weight_decay": weight_decay},
                  {"params": [params[n] for n in sorted(no_decay)], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


# ---------------------------------------------------------------- training
def train(model, compiled, backend, steps=5, clip=True):
    net = torch.compile(model, backend=backend) if compiled else model
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    data = np.random.default_rng(0).integers(0, VOCAB, (3, BLOCK + 1))
    x, y = torch.tensor(data[:, :-1]), torch.tensor(data[:, 1:])   # one batch, learnt
    losses, first_grads = [], None
    for _ in range(steps):
        _, loss = net(x, y)
        loss.backward()
        if first_grads is None:
            first_grads = [p.grad.numpy().copy() for p in model.parameters()]
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses, first_grads, net


@pytest.mark.parametrize("backend", ["c", "numpy"])
@pytest.mark.parametrize("style", ["nanogpt", "mingpt"])
def test_compiled_training_matches_eager(style, backend):
    def build():
        # the same initial weights twice (not deepcopy: minGPT's mlpf lambda would still
        # call the original's layers)
        torch.manual_seed(0)
        return NanoStyleGPT(bias=False) if style == "nanogpt" else MinStyleGPT()
    model, twin = build(), build()
    if style == "nanogpt":
        assert twin.transformer.wte.weight is twin.lm_head.weight      # tied
    eager_losses, eager_grads, _ = train(model, False, backend)
    comp_losses, comp_grads, net = train(twin, True, backend)
    np.testing.assert_allclose(comp_losses, eager_losses, rtol=2e-5, atol=2e-6)
    assert eager_losses[-1] < eager_losses[0]          # it really trained
    # the first step's gradients agree (later weights are compared through the losses: Adam
    # turns the rounding noise of gradients that are zero in exact arithmetic, the key
    # bias's, into steps of the learning rate's size)
    for (n, _), gc, ge in zip(model.named_parameters(), comp_grads, eager_grads):
        np.testing.assert_allclose(gc, ge, rtol=1e-4, atol=1e-6, err_msg=n)
    cf = net._compiled
    compiled = [v for v in cf.variants if not v.eager]
    assert len(compiled) == 1 and cf.breaks == [] and cf.recompiles == []
    assert "backward" in compiled[0].graphs       # the backward was captured too
    # generation (no targets: the other branch, under no_grad) agrees as well
    idx = torch.tensor(np.random.default_rng(5).integers(0, VOCAB, (2, BLOCK)))
    with torch.no_grad():
        np.testing.assert_allclose(net(idx)[0].numpy(), twin(idx)[0].numpy(), rtol=1e-5,
                                   atol=1e-6)
