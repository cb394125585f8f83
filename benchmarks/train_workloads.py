"""Training and inference workloads, written once against the PyTorch API.

Each `cases(torch)` builds its model with the given module (real torch or `ember`) and
returns callables that run one step; `__main__` times them side by side.
"""
import importlib.util
import os


def _gpt_module(torch):
    """The GPT of ember/examples/gpt.py, built from the same source for either library."""
    path = os.path.join(os.path.dirname(__file__), "..", "ember", "examples", "gpt.py")
    src = open(path).read()
    if torch.__name__ == "torch":
        src = src.replace("import ember as torch", "import torch").replace(
            "import ember.nn as nn", "import torch.nn as nn").replace(
            "import ember.nn.functional as F", "import torch.nn.functional as F")
    spec = importlib.util.spec_from_loader(f"gpt_for_{torch.__name__}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def _compile(torch, fn):
    """ember.compile (C backend) or torch.compile (inductor) — the same call for both."""
    return torch.compile(fn)


def mlp_train(torch):
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
    return step


def cnn_train(torch):
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
    return step


def gpt_train(torch, compiled=False):
    gpt = _gpt_module(torch)
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
    if compiled:      # compile outside the timing
        step()
        step()
    return step


def gpt_infer(torch):
    gpt = _gpt_module(torch)
    torch.manual_seed(0)
    model = gpt.GPT(vocab_size=256, block_size=64, n_layer=4, n_head=4, n_embd=128).eval()
    prompt = torch.zeros(1, 1, dtype=torch.long)

    def generate():
        model.generate(prompt, 64, greedy=True)
    return generate


def pointwise(torch):
    F = torch.nn.functional
    torch.manual_seed(0)
    x = torch.randn(4096, 1024)
    w = torch.randn(1024)
    b = torch.randn(1024)

    def fwd():
        with torch.no_grad():
            F.layer_norm(F.gelu(x * w + b), (1024,))
    return fwd


def pointwise_compiled(torch):
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
    return gpt_train(torch, compiled=True)


# name: (builder, units of work per call, unit, work label)
CASES = {
    "mlp_train": (mlp_train, 1, "steps/s"),
    "cnn_train": (cnn_train, 1, "steps/s"),
    "gpt_train": (gpt_train, 16 * 64, "tokens/s"),
    "gpt_infer": (gpt_infer, 64, "tokens/s"),
    "pointwise": (pointwise, None, "ms"),
    "pointwise_compiled": (pointwise_compiled, None, "ms"),
    "gpt_train_compiled": (gpt_train_compiled, 16 * 64, "tokens/s"),
}
