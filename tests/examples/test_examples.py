"""The example models of ember/examples/, trained side by side with real PyTorch.

Each model is built from ONE source text for both libraries: the example file is read, its
`import ember...` lines are swapped for `import torch...` and it is exec'd into a fresh
module. The torch model's initial weights are copied into the ember model (through numpy,
since the two libraries' random streams differ), both take the same steps on the same
batches with the same optimizer, and the loss trajectory and the final parameters and
buffers must match torch's.
"""
import importlib.util
import io
import os
import re
import tokenize

import numpy as np
import pytest
import torch

import ember

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "ember", "examples")


@pytest.fixture(autouse=True, scope="module")
def torch_single_thread():
    """torch's intra-op thread pool makes these tiny convolutions ~100x slower on a shared
    2-core machine (threads spin against each other); one thread keeps the oracle fast."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def example_module(name, lib):
    """ember/examples/<name>.py exec'd against `lib` (ember or torch) as a fresh module."""
    path = os.path.join(EXAMPLES, name + ".py")
    with open(path) as f:
        src = f.read()
    if lib is torch:
        # only the import lines differ: `import ember as torch` -> `import torch as torch`, ...
        src, n = re.subn(r"^import ember\b", "import torch", src, flags=re.M)
        assert n >= 1, "example has no `import ember` line to swap"
        # and nothing else: no code names ember (strings such as a --help text may)
        names = {t.string for t in tokenize.generate_tokens(io.StringIO(src).readline)
                 if t.type == tokenize.NAME}
        assert "ember" not in names, "example uses ember outside its import lines"
    spec = importlib.util.spec_from_loader(f"{name}_for_{lib.__name__}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def copy_state(src, dst):
    """Load torch module `src`'s state_dict (parameters and buffers) into ember module `dst`."""
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def assert_state_close(t_model, e_model, rtol, atol, noise=None, noise_atol=None):
    """Same keys, shapes, dtypes and values. (After Adam steps, `atol` must allow for larger
    differences in entries whose gradient is at rounding-noise level: Adam normalises it.)
    `noise` maps a key to the index of entries whose gradient is zero in exact arithmetic
    (attention's key bias: softmax cancels it). Adam turns their rounding noise, which
    differs between BLAS builds and CPUs, into steps of up to the learning rate, so those
    entries are compared with `noise_atol` (the sum of the learning rates used)."""
    t_state, e_state = t_model.state_dict(), e_model.state_dict()
    assert list(t_state) == list(e_state)
    for k, tv in t_state.items():
        ev = e_state[k]
        assert tuple(ev.shape) == tuple(tv.shape), k
        assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], k
        e_np, t_np = ev.detach().numpy().copy(), tv.detach().numpy().copy()
        if noise and k in noise:
            np.testing.assert_allclose(e_np[noise[k]], t_np[noise[k]], rtol=0,
                                       atol=noise_atol, err_msg=k)
            e_np[noise[k]] = t_np[noise[k]]
        np.testing.assert_allclose(e_np, t_np, rtol=rtol, atol=atol, err_msg=k)


def key_bias_noise(model):
    """`noise` for assert_state_close: the key third of every attention's qkv bias."""
    return {k: slice(v.shape[0] // 3, 2 * v.shape[0] // 3)
            for k, v in model.state_dict().items() if k.endswith("attn.qkv.bias")}


def assert_losses_close(e_losses, t_losses, rtol):
    assert len(e_losses) == len(t_losses)
    for i, (e, t) in enumerate(zip(e_losses, t_losses)):
        # float32 rounding differences compound step by step: allow the tolerance to grow
        assert e == pytest.approx(t, rel=rtol * (i + 1), abs=rtol * (i + 1)), (i, e_losses,
                                                                              t_losses)


def both(cls_name, module_name, *args, **kwargs):
    """The same model class built under both libraries, ember's with torch's weights."""
    e_mod, t_mod = example_module(module_name, ember), example_module(module_name, torch)
    torch.manual_seed(0)
    t_model = getattr(t_mod, cls_name)(*args, **kwargs)
    e_model = getattr(e_mod, cls_name)(*args, **kwargs)
    copy_state(t_model, e_model)
    assert_state_close(t_model, e_model, 0, 0)
    return e_mod, t_mod, e_model, t_model


def tensors(arr):
    return ember.tensor(arr), torch.tensor(arr)


# ---------------------------------------------------------------- CNNs (SGD with momentum)
@pytest.mark.parametrize("name,shape", [("LeNet5", (6, 1, 28, 28)), ("ResNet", (4, 3, 16, 16))])
def test_cnn_trains_like_torch(name, shape):
    e_mod, t_mod, e_model, t_model = both(name, "cnn")
    rng = np.random.default_rng(1)
    ex, tx = tensors(rng.standard_normal(shape).astype(np.float32))
    ey, ty = tensors(rng.integers(0, 10, shape[0]))
    t_losses = t_mod.train(t_model, tx, ty, steps=5, lr=0.05)
    e_losses = e_mod.train(e_model, ex, ey, steps=5, lr=0.05)
    assert t_losses[-1] < t_losses[0]            # the steps do train (guards a no-op run)
    assert_losses_close(e_losses, t_losses, 1e-5)
    # parameters, and for the ResNet BatchNorm's running stats and num_batches_tracked
    assert_state_close(t_model, e_model, rtol=1e-4, atol=1e-5)
    # eval mode uses the running statistics
    t_model.eval(), e_model.eval()
    with torch.no_grad(), ember.no_grad():
        t_out, e_out = t_model(tx), e_model(ex)
    np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-3, atol=1e-4)


def test_resnet_float64_matches_tightly():
    """In float64 the only differences left are summation order: ~1e-10 after 3 steps."""
    e_mod, t_mod, e_model, t_model = both("ResNet", "cnn", layers=(1, 1), widths=(8, 16))
    t_model.double(), e_model.double()
    rng = np.random.default_rng(2)
    ex, tx = tensors(rng.standard_normal((4, 3, 12, 12)))
    ey, ty = tensors(rng.integers(0, 10, 4))
    t_losses = t_mod.train(t_model, tx, ty, steps=3, lr=0.1)
    e_losses = e_mod.train(e_model, ex, ey, steps=3, lr=0.1)
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-10)
    assert_state_close(t_model, e_model, rtol=1e-8, atol=1e-10)


def test_basic_block_downsample_structure():
    e_mod, t_mod = example_module("cnn", ember), example_module("cnn", torch)
    for args in [(8, 8, 1), (8, 16, 2), (8, 16, 1)]:
        e_b, t_b = e_mod.BasicBlock(*args), t_mod.BasicBlock(*args)
        assert [(k, tuple(v.shape)) for k, v in e_b.state_dict().items()] == \
               [(k, tuple(v.shape)) for k, v in t_b.state_dict().items()]
        assert (e_b.downsample is None) == (t_b.downsample is None)


# ---------------------------------------------------------------- LSTM LM (AdamW, clipping)
@pytest.mark.parametrize("tied", [False, True])
def test_lstm_lm_trains_like_torch(tied):
    vocab, size = 40, 24
    e_mod, t_mod, e_model, t_model = both("LSTMLanguageModel", "lstm_lm", vocab, size, size,
                                          num_layers=2, dropout=0.0, tie_weights=tied)
    assert (t_model.decoder.weight is t_model.encoder.weight) == tied
    assert (e_model.decoder.weight is e_model.encoder.weight) == tied
    assert len(list(e_model.parameters())) == len(list(t_model.parameters()))
    rng = np.random.default_rng(3)
    stream = rng.integers(0, vocab, 3 * 6 * 8 + 3)
    e_streams = e_mod.batchify(ember.tensor(stream), 3)
    t_streams = t_mod.batchify(torch.tensor(stream), 3)
    assert tuple(e_streams.shape) == tuple(t_streams.shape)
    # 7 steps of bptt 8 over streams of length 49: wraps around and re-inits the hidden state
    t_losses = t_mod.train_steps(t_model, torch.optim.AdamW(t_model.parameters(), lr=1e-2),
                                 t_streams, bptt=8, steps=7)
    e_losses = e_mod.train_steps(e_model, ember.optim.AdamW(e_model.parameters(), lr=1e-2),
                                 e_streams, bptt=8, steps=7)
    assert t_losses[-1] < t_losses[0]
    assert_losses_close(e_losses, t_losses, 1e-5)
    assert_state_close(t_model, e_model, rtol=1e-4, atol=1e-5)


def test_lstm_lm_tie_needs_equal_sizes():
    for lib in (ember, torch):
        mod = example_module("lstm_lm", lib)
        with pytest.raises(ValueError, match="tie_weights"):
            mod.LSTMLanguageModel(10, 8, 12, tie_weights=True)


def test_lstm_lm_hidden_state_carried_and_detached():
    e_mod, t_mod, e_model, t_model = both("LSTMLanguageModel", "lstm_lm", 20, 8, 8,
                                          num_layers=2, dropout=0.0)
    x = np.random.default_rng(4).integers(0, 20, (2, 5))
    outs = []
    for lib, mod, model in ((ember, e_mod, e_model), (torch, t_mod, t_model)):
        h = model.init_hidden(2)
        _, h = model(lib.tensor(x), h)
        h = mod.repackage_hidden(h)
        assert all(v.grad_fn is None and not v.requires_grad for v in h)
        logits, h = model(lib.tensor(x), h)      # second chunk starts from the carried state
        outs.append((logits.detach().numpy(), h[0].detach().numpy(), h[1].detach().numpy()))
    for e, t in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- char-level GPT (AdamW)
def test_gpt_trains_like_torch():
    e_mod, t_mod, e_model, t_model = both("GPT", "gpt", vocab_size=32, block_size=16,
                                          n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    assert e_model.head.weight is e_model.tok_emb.weight
    rng = np.random.default_rng(5)
    batches = [rng.integers(0, 32, (2, 4, 12)) for _ in range(5)]
    runs = []
    for lib, model in ((torch, t_model), (ember, e_model)):
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
        opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                               {"params": no_decay, "weight_decay": 0.0}],
                              lr=3e-3, betas=(0.9, 0.95))
        losses = []
        for xy in batches:
            _, loss = model(lib.tensor(xy[0]), lib.tensor(xy[1]))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        runs.append(losses)
    t_losses, e_losses = runs
    assert t_losses[-1] < t_losses[0]
    assert_losses_close(e_losses, t_losses, 1e-5)
    assert_state_close(t_model, e_model, rtol=1e-4, atol=1e-5, noise=key_bias_noise(t_model),
                       noise_atol=3e-3 * len(batches))
    # greedy decoding after training picks the same tokens
    prompt = np.array([[1, 2, 3]])
    t_model.eval(), e_model.eval()
    t_gen = t_model.generate(torch.tensor(prompt), 6, greedy=True)
    e_gen = e_model.generate(ember.tensor(prompt), 6, greedy=True)
    assert e_gen.tolist() == t_gen.tolist()


def test_gpt_train_step_with_scheduler_like_torch():
    """gpt.py's own train_step (autocast off, disabled GradScaler, LambdaLR over its
    Schedule) in both."""
    e_mod, t_mod, e_model, t_model = both("GPT", "gpt", vocab_size=32, block_size=8,
                                          n_layer=1, n_head=2, n_embd=8)
    rng = np.random.default_rng(6)
    batches = [rng.integers(0, 32, (2, 3, 8)) for _ in range(4)]
    runs = []
    for lib, mod, model in ((torch, t_mod, t_model), (ember, e_mod, e_model)):
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
        schedule = mod.Schedule(warmup=2)
        sched = lib.optim.lr_scheduler.LambdaLR(opt, schedule)
        scaler = lib.amp.GradScaler(enabled=False)
        losses = []
        for i, (x, y) in enumerate(batches):
            schedule.progress = (i + 1) / len(batches)    # as the demo's loop sets it
            losses.append(mod.train_step(model, opt, sched, scaler, lib.tensor(x),
                                         lib.tensor(y), False))
        runs.append((losses, sched.get_last_lr()))
    (t_losses, t_lr), (e_losses, e_lr) = runs
    assert_losses_close(e_losses, t_losses, 1e-5)
    assert e_lr == pytest.approx(t_lr, rel=1e-12)
    assert_state_close(t_model, e_model, rtol=1e-4, atol=1e-5, noise=key_bias_noise(t_model),
                       noise_atol=1e-2 * len(batches))
