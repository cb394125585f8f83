"""The main job's own pieces (ember/examples/gpt.py, `make demo`), checked against torch.

The KV cache (`past_key_values`): a forward over new tokens with the cached keys/values of the
earlier ones gives the logits of one forward over the whole sequence, in ember and in torch
(the model is plain PyTorch code, run by both), and cached generation picks the tokens that
uncached generation picks, also past `block_size` where the cache restarts. The budget-tied
learning-rate schedule follows torch's LambdaLR with the same callable. The script itself:
`--vs-torch` prints ember's and torch's tokens/s (or says torch is missing), a second run
resumes the checkpoint and starts a new warmup + cosine cycle.
"""
import sys

import numpy as np
import pytest
import torch

import ember
from tests.examples.test_examples import both, example_module

SMALL = dict(vocab_size=32, block_size=12, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
TINY_ARGS = ["--steps", "2", "--sample-tokens", "8", "--data-bytes", "40000", "--n-layer", "1",
             "--n-embd", "16", "--n-head", "2", "--block-size", "8", "--batch-size", "2",
             "--warmup", "4"]


@pytest.fixture(autouse=True, scope="module")
def torch_single_thread():
    """Tiny ops: torch's thread pool only adds contention on a shared machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def models():
    e_mod, t_mod, e_model, t_model = both("GPT", "gpt", **SMALL)
    return e_model.eval(), t_model.eval()


def stepwise_logits(lib, model, idx, splits):
    """Logits of `idx` fed in chunks (prefill, then the rest), each with the cache so far."""
    outs, past, start = [], None, 0
    with lib.no_grad():
        for stop in [*splits, idx.shape[1]]:
            logits, _, past = model(idx[:, start:stop], past_key_values=past, use_cache=True)
            outs.append(logits)
            start = stop
    return lib.cat(outs, dim=1), past


@pytest.mark.parametrize("splits", [[1], [5], [5, 6, 7], [3, 9]], ids=str)
def test_kv_cache_logits_equal_full_forward(models, splits):
    """Chunks of one token and of several (the several-query mask) both match."""
    e_model, t_model = models
    idx = np.random.default_rng(0).integers(0, 32, (2, SMALL["block_size"]))
    results = []
    for lib, model in ((ember, e_model), (torch, t_model)):
        with lib.no_grad():
            full, _ = model(lib.tensor(idx))
        step, past = stepwise_logits(lib, model, lib.tensor(idx), splits)
        assert len(past) == SMALL["n_layer"]
        head = SMALL["n_embd"] // SMALL["n_head"]
        assert all(tuple(t.shape) == (2, SMALL["n_head"], idx.shape[1], head)
                   for kv in past for t in kv)
        np.testing.assert_allclose(step.numpy(), full.numpy(), rtol=1e-5, atol=1e-5)
        results.append(step.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-5)   # ember ~ torch


def reference_generation(lib, model, prompt, n):
    """Greedy tokens the cached path must produce: each step a full forward over the window
    generate's docstring describes (the cache restarts from the last block_size // 2 tokens
    when it holds block_size positions)."""
    block, idx = model.block_size, prompt
    ctx = min(prompt.shape[1], block)              # positions in the cache
    with lib.no_grad():
        for _ in range(n):
            logits, _ = model(idx[:, -ctx:])
            nxt = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            idx = lib.cat([idx, nxt], dim=1)
            ctx = block // 2 if ctx == block else ctx + 1
    return idx


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_generate_with_cache_equals_without(models, lib):
    model = models[0] if lib is ember else models[1]
    prompt = lib.tensor([[1, 2, 3]])
    inside = SMALL["block_size"] - 3               # never past block_size: the same windows
    plain = model.generate(prompt, inside, greedy=True)
    cached = model.generate(prompt, inside, greedy=True, use_cache=True)
    assert cached.tolist() == plain.tolist()
    # 30 tokens: the cache restarts several times
    cached = model.generate(prompt, 30, greedy=True, use_cache=True)
    assert cached.tolist() == reference_generation(lib, model, prompt, 30).tolist()
    # a prompt longer than block_size keeps its last block_size tokens
    long_prompt = lib.tensor([list(range(20))])
    assert (model.generate(long_prompt, 4, greedy=True, use_cache=True).tolist() ==
            reference_generation(lib, model, long_prompt, 4).tolist())


def test_cached_generation_same_tokens_in_both_libraries(models):
    e_model, t_model = models
    e = e_model.generate(ember.tensor([[4, 5]]), 25, greedy=True, use_cache=True)
    t = t_model.generate(torch.tensor([[4, 5]]), 25, greedy=True, use_cache=True)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_cache_past_block_size_raises(models, lib):
    model = models[0] if lib is ember else models[1]
    idx = lib.tensor(np.zeros((1, SMALL["block_size"]), dtype=np.int64))
    with lib.no_grad():
        _, _, past = model(idx, use_cache=True)
        with pytest.raises(ValueError, match="block_size"):
            model(idx[:, :1], past_key_values=past, use_cache=True)


def test_schedule_with_lambda_lr_like_torch():
    """The same Schedule object class drives LambdaLR in both libraries; progress set by hand
    as the training loop does; its fields travel in the scheduler's state_dict."""
    lrs = []
    for lib in (torch, ember):
        mod = example_module("gpt", lib)
        opt = lib.optim.AdamW([lib.nn.Parameter(lib.zeros(2))], lr=1e-2)
        schedule = mod.Schedule(warmup=3)
        sched = lib.optim.lr_scheduler.LambdaLR(opt, schedule)
        seen = [sched.get_last_lr()[0]]
        for i in range(8):
            opt.step()
            schedule.progress = i / 6                # passes 1.0: stays at min_ratio
            sched.step()
            seen.append(sched.get_last_lr()[0])
        state = sched.state_dict()
        assert state["lr_lambdas"][0] == {"warmup": 3, "min_ratio": 0.1, "start": 0,
                                          "progress": 7 / 6}
        lrs.append(seen)
    assert lrs[1] == pytest.approx(lrs[0], rel=1e-12)
    assert lrs[0][0] == pytest.approx(1e-2 / 3)     # warmup's first step
    assert lrs[0][-1] == pytest.approx(1e-3)        # the end of the cosine: 0.1 x peak


def run_demo(capsys, tmp_path, *extra):
    """main() in this process (its thread picker may change ember's thread count: restored)."""
    from ember.examples import gpt
    threads = ember.get_num_threads()
    try:
        gpt.main([*TINY_ARGS, "--checkpoint", str(tmp_path / "gpt.pt"), *extra])
    finally:
        ember.set_num_threads(threads)
    return capsys.readouterr().out


def test_thread_picker_keeps_the_faster_count(monkeypatch):
    """Steps at 2 threads take 3 s, at 1 thread 1 s (a loaded machine): after the warm-up
    steps and one probe (2 tries each, in turns) it keeps 1, until the next probe."""
    from ember.examples import gpt
    threads = ember.get_num_threads()
    try:
        picker = gpt.ThreadPicker([2, 1], every=40.0, tries=2, skip=2)
        counts, now = [], 0.0
        for _ in range(10):
            c = picker.before_step(now)
            assert ember.get_num_threads() == c
            counts.append(c)
            now += 3.0 if c == 2 else 1.0
            picker.after_step(3.0 if c == 2 else 1.0, now)
        assert counts[:6] == [2, 2, 2, 1, 2, 1] and counts[6:] == [1] * 4
        assert picker.chosen == 1 and "threads 1" in picker.report()
        picker.before_step(now + 40.0)           # the next probe tries both again
        assert picker.current == 2 and picker.queue == [1, 2, 1]
    finally:
        ember.set_num_threads(threads)


def test_vs_torch_prints_both_figures(capsys, tmp_path):
    out = run_demo(capsys, tmp_path, "--fresh", "--vs-torch")
    summary = [line for line in out.splitlines() if line.startswith("summary:")]
    assert len(summary) == 1, out
    assert "bf16 autocast off" in out                # float32 is the default
    assert "KV cache" in out
    line = summary[0]
    assert "ember " in line and " tokens/s vs torch eager " in line, line
    figures = line.split("same model and batch")[1]
    numbers = [float(w.replace(",", "")) for w in figures.split()
               if w.replace(",", "").replace(".", "").isdigit()]
    assert len(numbers) >= 2 and all(n > 0 for n in numbers[-2:]), line


def test_vs_torch_without_torch_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails
    out = run_demo(capsys, tmp_path, "--fresh", "--vs-torch")
    assert "torch is not installed" in out and "summary:" in out


def test_without_flag_no_torch_figure(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    out = run_demo(capsys, tmp_path, "--fresh")
    assert "torch" not in out.split("summary:")[1]


def test_second_run_resumes_with_a_new_cycle(capsys, tmp_path):
    run_demo(capsys, tmp_path, "--fresh")
    out = run_demo(capsys, tmp_path)
    assert "resumed from" in out and "at step 2" in out
    ckpt = ember.load(str(tmp_path / "gpt.pt"))
    assert ckpt["step"] == 4
    fields = ckpt["scheduler"]["lr_lambdas"][0]
    assert fields["start"] == 2 and fields["progress"] == 1.0
    assert ckpt["scheduler"]["last_epoch"] == 4
