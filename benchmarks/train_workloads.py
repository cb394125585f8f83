"""Training and inference workloads, written once against the PyTorch API.

Each builder takes the library module (real torch or `ember`), builds its model and returns
a callable that runs one step; `__main__` times the two side by side. Each builder's
docstring is its exact definition: BENCHMARKS.md's "Workload definitions" section is generated
from these docstrings and from the objects the builder records on ``step.spec`` (model,
optimizer, inputs), so the two cannot drift apart. Everything is float32 unless noted.
"""
import importlib.util
import os


def example_module(torch, which="gpt"):
    """ember/examples/<which>.py, loaded from its source with `torch` bound to the given
    library. The file is read, not imported: importing it for torch would import ember into
    torch's worker (and ember sets OMP_WAIT_POLICY at import)."""
    path = os.path.join(os.path.dirname(__file__), "..", "ember", "examples", f"{which}.py")
    src = open(path).read()
    if torch.__name__ == "torch":
        src = src.replace("import ember as torch", "import torch").replace(
            "import ember.nn as nn", "import torch.nn as nn").replace(
            "import ember.nn.functional as F", "import torch.nn.functional as F")
    spec = importlib.util.spec_from_loader(f"{which}_for_{torch.__name__}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def _compile(torch, fn):
    """ember.compile (C backend) or torch.compile (inductor) — the same call for both."""
    return torch.compile(fn)


def mlp_train(torch):
    """One SGD training step of an MLP 784-512-512-10 with ReLU: zero_grad, forward,
    cross_entropy (mean), backward, SGD(lr=0.01, momentum=0.9). Batch 128 of randn inputs,
    random integer labels."""
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(128, 784)
    y = torch.randint(10, (128,))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    step.spec = dict(model=model, optimizer=opt, inputs=dict(x=x, y=y))
    return step


def cnn_train(torch):
    """One SGD training step of a small CNN: [Conv2d 3x3 pad 1, ReLU, MaxPool2d(2)] twice
    (3->32->64 channels), Flatten, Linear(4096, 10); cross_entropy (mean), backward,
    SGD(lr=0.01, no momentum). Batch 32 of 3x32x32 randn images (NCHW)."""
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4096, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 32, 32)
    y = torch.randint(10, (32,))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    step.spec = dict(model=model, optimizer=opt, inputs=dict(x=x, y=y))
    return step


def gpt_train(torch, compiled=False):
    """One AdamW training step of the examples' GPT (ember/examples/gpt.py): 4 pre-LayerNorm
    blocks, width 128, 4 heads, context 64, vocabulary 256, head tied to the token embedding,
    dropout 0. Attention is ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` (no
    mask tensor; the causal mask is implied). The MLP's GELU is the exact (erf) form,
    ``nn.GELU()`` (approximate='none'). Loss: cross_entropy over the 16x64 next-token logits
    (mean). Step: forward, zero_grad(set_to_none=True), backward, AdamW(lr=1e-3, defaults
    otherwise). Batch 16 sequences of 64 random tokens; throughput counts 16*64 tokens."""
    gpt = example_module(torch)
    torch.manual_seed(0)
    model = gpt.GPT(vocab_size=256, block_size=64, n_layer=4, n_head=4, n_embd=128)
    run = _compile(torch, model) if compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(256, (16, 64))
    y = torch.randint(256, (16, 64))

    def step():
        _, loss = run(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    step.spec = dict(model=model, optimizer=opt, inputs=dict(x=x, y=y))
    if compiled:      # compile outside the timing
        step()
        step()
    return step


def gpt_infer(torch):
    """Greedy generation of 64 tokens with gpt_train's model in eval mode, from a 1x1 prompt
    of token 0: ``model.generate(prompt, 64, greedy=True)``, under ``torch.no_grad()``, with
    no KV cache (each new token reruns the forward on the whole context so far, at most 64
    tokens); throughput counts the 64 generated tokens."""
    gpt = example_module(torch)
    torch.manual_seed(0)
    model = gpt.GPT(vocab_size=256, block_size=64, n_layer=4, n_head=4, n_embd=128).eval()
    prompt = torch.zeros(1, 1, dtype=torch.long)

    def generate():
        model.generate(prompt, 64, greedy=True)
    generate.spec = dict(model=model, inputs=dict(prompt=prompt))
    return generate


def pointwise(torch):
    """Milliseconds of ``F.layer_norm(F.gelu(x * w + b), (1024,))`` under ``torch.no_grad()``:
    x (4096, 1024), w and b (1024,), randn; exact (erf) GELU; layer_norm without weight or
    bias, eps 1e-5. Eager: one kernel (or more) per op."""
    F = torch.nn.functional
    torch.manual_seed(0)
    x = torch.randn(4096, 1024)
    w = torch.randn(1024)
    b = torch.randn(1024)

    def fwd():
        with torch.no_grad():
            F.layer_norm(F.gelu(x * w + b), (1024,))
    fwd.spec = dict(inputs=dict(x=x, w=w, b=b))
    return fwd


def pointwise_compiled(torch):
    """pointwise's function wrapped in ``torch.compile`` / ``ember.compile`` (each library's
    default backend: inductor, ember's C backend); compiled before the timing starts."""
    F = torch.nn.functional
    torch.manual_seed(0)
    x, w, b = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)
    f = _compile(torch, lambda x, w, b: F.layer_norm(F.gelu(x * w + b), (1024,)))

    def fwd():
        with torch.no_grad():
            f(x, w, b)
    fwd()      # compile outside the timing
    return fwd


def gpt_train_compiled(torch):
    """gpt_train with the model wrapped in ``torch.compile`` / ``ember.compile`` (default
    backends: inductor, ember's C backend); the optimizer step stays eager. Two steps run
    (and compile) before the timing starts."""
    return gpt_train(torch, compiled=True)


# name: (builder, units of work per call (None: the row is a time), unit)
CASES = {
    "mlp_train": (mlp_train, 1, "steps/s"),
    "cnn_train": (cnn_train, 1, "steps/s"),
    "gpt_train": (gpt_train, 16 * 64, "tokens/s"),
    "gpt_infer": (gpt_infer, 64, "tokens/s"),
    "pointwise": (pointwise, None, "ms"),
    "pointwise_compiled": (pointwise_compiled, None, "ms"),
    "gpt_train_compiled": (gpt_train_compiled, 16 * 64, "tokens/s"),
}

# the builder whose step.spec describes a workload, where building it for real would be slow
# (compiling): the compiled workloads run the same model and inputs
SPEC_BUILDER = {"pointwise_compiled": pointwise, "gpt_train_compiled": gpt_train}
