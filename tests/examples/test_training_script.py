"""A complete PyTorch training script, run unchanged under `import ember as torch`.

SCRIPT below is plain PyTorch code (it is also run under real torch here, to show that it is):
seeding, device selection, a Dataset + DataLoader with a custom collate_fn, a model moved
`.to(device)`, AdamW, autocast + GradScaler, unscale/clip/step/update, a checkpoint of model,
optimizer, scaler and epoch saved with `torch.save` and resumed with `torch.load` into fresh
objects. The tests check that ember runs it to completion, that the loss decreases, that
resuming from the checkpoint continues exactly like the uninterrupted run, that a seed makes
runs bit-identical, and (from the same initial weights and batch order) that ember's losses
follow torch's.
"""
import importlib.util

import numpy as np
import pytest
import torch

import ember

SCRIPT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Spirals(Dataset):
    """Points on interleaved spirals (a deterministic formula); the label is the arm."""

    def __init__(self, n, arms=3):
        t = torch.arange(n, dtype=torch.float32) / n
        self.labels = torch.arange(n) % arms
        angle = 4.0 * t + self.labels.float() * (2 * 3.141592653589793 / arms)
        self.points = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"x": self.points[i], "y": self.labels[i]}


def collate(samples):
    """Custom collate_fn: a dict of stacked features and targets."""
    return {"x": torch.stack([s["x"] for s in samples]),
            "y": torch.stack([s["y"] for s in samples])}


class Net(nn.Module):
    def __init__(self, hidden=32, classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, hidden), nn.GELU(), nn.LayerNorm(hidden),
                                  nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def train(epochs, checkpoint=None, resume=None, seed=0, amp_dtype=torch.bfloat16,
          use_amp=True, shuffle=True, init_state=None, lr=1e-2):
    torch.manual_seed(seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader_gen = torch.Generator()
    loader = DataLoader(Spirals(192), batch_size=32, shuffle=shuffle, collate_fn=collate,
                        generator=loader_gen)

    model = Net().to(device)
    if init_state is not None:
        model.load_state_dict(init_state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    # loss scaling is needed for float16 only (bfloat16 has float32's range)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and amp_dtype == torch.float16)
    start_epoch = 0
    if resume is not None:
        ckpt = torch.load(resume)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        start_epoch = ckpt["epoch"] + 1

    history = []
    for epoch in range(start_epoch, epochs):
        loader_gen.manual_seed(seed + epoch)      # the shuffle order depends on the epoch only
        model.train()
        for batch in loader:
            x, y = batch["x"].to(device), batch["y"].to(device)
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=use_amp):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            history.append(loss.item())
        if checkpoint is not None:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scaler": scaler.state_dict(), "epoch": epoch}, checkpoint)
    return history, model, scaler
'''

STEPS_PER_EPOCH = 192 // 32


def script(lib):
    """SCRIPT exec'd as a fresh module, with `import torch` meaning `lib`."""
    src = SCRIPT
    if lib is ember:
        src = (src.replace("import torch\n", "import ember as torch\n")
               .replace("import torch.nn as nn", "import ember.nn as nn")
               .replace("import torch.nn.functional as F", "import ember.nn.functional as F")
               .replace("from torch.utils.data", "from ember.utils.data"))
    spec = importlib.util.spec_from_loader(f"train_script_{lib.__name__}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, f"<training script for {lib.__name__}>", "exec"), mod.__dict__)
    return mod


@pytest.fixture(autouse=True, scope="module")
def torch_single_thread():
    """Tiny ops: torch's thread pool only adds contention on a shared machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def ember_script():
    return script(ember)


@pytest.mark.parametrize("amp", ["bfloat16", "float16"])
@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_runs_and_loss_decreases(lib, amp):
    mod = script(lib)
    losses, model, scaler = mod.train(epochs=4, amp_dtype=getattr(lib, amp))
    assert len(losses) == 4 * STEPS_PER_EPOCH
    assert all(np.isfinite(losses))
    first, last = np.mean(losses[:STEPS_PER_EPOCH]), np.mean(losses[-STEPS_PER_EPOCH:])
    assert last < 0.8 * first, (first, last)
    assert scaler.is_enabled() == (amp == "float16")
    # the trained model, run under the script's autocast, does compute in the low precision
    x = lib.tensor(np.array([[0.1, 0.2], [0.3, -0.4]], dtype=np.float32))
    with lib.autocast(device_type="cpu", dtype=getattr(lib, amp)):
        assert model(x).dtype == getattr(lib, amp)
    assert model(x).dtype == lib.float32
    if amp == "float16":
        # with no overflow the scale has stayed at its initial value (growth needs 2000 steps)
        assert scaler.get_scale() == 2.0 ** 16


@pytest.mark.parametrize("amp", ["bfloat16", "float16"])
def test_same_seed_is_bit_identical(ember_script, amp):
    dtype = getattr(ember, amp)
    a, model_a, _ = ember_script.train(epochs=2, seed=3, amp_dtype=dtype)
    b, model_b, _ = ember_script.train(epochs=2, seed=3, amp_dtype=dtype)
    assert a == b                               # exact float equality, step by step
    for (ka, va), (kb, vb) in zip(model_a.state_dict().items(), model_b.state_dict().items()):
        assert ka == kb and np.array_equal(va.numpy(), vb.numpy()), ka
    c, _, _ = ember_script.train(epochs=2, seed=4, amp_dtype=dtype)
    assert c != a                               # the seed does matter (init and order)


@pytest.mark.parametrize("amp", ["bfloat16", "float16"])
@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_resume_from_checkpoint_continues_exactly(lib, amp, tmp_path):
    mod = script(lib)
    dtype = getattr(lib, amp)
    path = str(tmp_path / "ckpt.pt")
    full, full_model, _ = mod.train(epochs=3, seed=1, amp_dtype=dtype)
    first, _, _ = mod.train(epochs=2, checkpoint=path, seed=1, amp_dtype=dtype)
    assert first == full[:2 * STEPS_PER_EPOCH]
    ckpt = lib.load(path)
    assert ckpt["epoch"] == 1 and set(ckpt) == {"model", "optimizer", "scaler", "epoch"}
    # fresh objects, the model starting from other weights: all state comes from the file
    lib.manual_seed(7)
    other = mod.Net().state_dict()
    rest, resumed_model, scaler = mod.train(epochs=3, resume=path, seed=1, amp_dtype=dtype,
                                            init_state=other)
    assert len(rest) == STEPS_PER_EPOCH
    np.testing.assert_allclose(rest, full[2 * STEPS_PER_EPOCH:], rtol=1e-6, atol=0)
    for (k, v), (_, w) in zip(full_model.state_dict().items(),
                              resumed_model.state_dict().items()):
        np.testing.assert_allclose(w.detach().numpy(), v.detach().numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=k)


def test_checkpoint_contents_match_torch(tmp_path):
    """Same keys and structure in ember's and torch's checkpoints (optimizer state, scaler),
    each written by its own library's `torch.save` and read back by its `torch.load`."""
    ckpts = []
    for lib in (torch, ember):
        path = str(tmp_path / f"{lib.__name__}.pt")
        script(lib).train(epochs=1, checkpoint=path, amp_dtype=lib.float16)
        ckpts.append(lib.load(path))
    t, e = ckpts
    assert list(e["model"]) == list(t["model"])
    assert e["optimizer"]["param_groups"][0].keys() == t["optimizer"]["param_groups"][0].keys()
    assert list(e["optimizer"]["state"]) == list(t["optimizer"]["state"])
    assert e["optimizer"]["state"][0].keys() == t["optimizer"]["state"][0].keys()
    assert e["scaler"].keys() == t["scaler"].keys()
    assert e["scaler"]["scale"] == t["scaler"]["scale"]
    assert e["scaler"]["_growth_tracker"] == t["scaler"]["_growth_tracker"]


@pytest.mark.parametrize("amp,rtol", [(None, 1e-5), ("bfloat16", 1e-2), ("float16", 2e-3)])
def test_losses_follow_torch_from_same_weights(amp, rtol):
    """No shuffling (the libraries' random streams differ) and torch's initial weights: the
    script's whole loss trajectory matches torch's (bfloat16 rounds differently inside
    matmuls, so only loosely)."""
    t_mod, e_mod = script(torch), script(ember)
    torch.manual_seed(0)
    init = t_mod.Net().state_dict()
    e_init = {k: ember.tensor(v.numpy().copy()) for k, v in init.items()}
    t_losses, _, _ = t_mod.train(epochs=2, shuffle=False, init_state=init, use_amp=bool(amp),
                                 amp_dtype=getattr(torch, amp or "bfloat16"))
    e_losses, _, _ = e_mod.train(epochs=2, shuffle=False, init_state=e_init, use_amp=bool(amp),
                                 amp_dtype=getattr(ember, amp or "bfloat16"))
    np.testing.assert_allclose(e_losses, t_losses, rtol=rtol)
