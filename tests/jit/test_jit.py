"""ember.jit: trace/script give ScriptModules that match eager (and torch.jit on the same
weights), save/load without the class, freeze, optimize_for_inference's BatchNorm folding."""
import io

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, 4, 3, bias=False), nn.BatchNorm2d(4), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 5))


def _pair():
    em, tm = _cnn(enn).eval(), _cnn(torch.nn).eval()
    for mod in em.modules():
        if isinstance(mod, enn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
    tm.load_state_dict({k: torch.tensor(v.detach().numpy().copy())
                        for k, v in em.state_dict().items()})
    return em, tm


def test_trace_matches_torch_jit_and_other_batch():
    em, tm = _pair()
    x = ember.randn(2, 3, 6, 6)
    traced = ember.jit.trace(em, (x,))
    ttr = torch.jit.trace(tm, (torch.tensor(x.numpy()),))
    np.testing.assert_allclose(traced(x).detach().numpy(),
                               ttr(torch.tensor(x.numpy())).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    x5 = ember.randn(5, 3, 6, 6)       # the batch dim stayed dynamic
    np.testing.assert_allclose(traced(x5).detach().numpy(), em(x5).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert "ember.ops.conv2d(" in traced.code
    assert set(traced.state_dict()) == set(ttr.state_dict())


def test_save_load_without_class(tmp_path):
    em, _ = _pair()
    x = ember.randn(2, 3, 6, 6)
    traced = ember.jit.trace(em, x)
    traced.save(str(tmp_path / "m.pt"))
    loaded = ember.jit.load(str(tmp_path / "m.pt"))
    assert isinstance(loaded, ember.jit.ScriptModule)
    np.testing.assert_allclose(loaded(x).detach().numpy(), em(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_script_captures_on_first_call_and_errors_name_line():
    em, _ = _pair()
    sm = ember.jit.script(em)
    with pytest.raises(RuntimeError, match="call it once"):
        sm.code
    x = ember.randn(2, 3, 6, 6)
    np.testing.assert_allclose(sm(x).detach().numpy(), em(x).detach().numpy(), rtol=1e-5)
    assert sm.graph.output() is not None
    x2 = ember.randn(3, 3, 6, 6)          # another batch: the same capture
    np.testing.assert_allclose(sm(x2).detach().numpy(), em(x2).detach().numpy(), rtol=1e-5)

    class Sum(enn.Module):
        def forward(self, x):
            return x.sum(-1) * 2
    ss = ember.jit.script(Sum())
    for shape in [(2, 5), (3, 7), (4,)]:  # sizes the capture does not cover: captured again
        v = ember.randn(*shape)
        np.testing.assert_allclose(ss(v).numpy(), (v.sum(-1) * 2).numpy(), rtol=1e-6)

    class Bad(enn.Module):
        def forward(self, x):
            return x if float(x.sum()) > 0 else -x      # value-dependent Python
    with pytest.raises(RuntimeError, match=r"test_jit\.py:\d+"):
        ember.jit.script(Bad())(ember.randn(3))

    def f(a, b):
        return (a * b).relu()
    sf = ember.jit.script(f)
    a, b = ember.randn(3), ember.randn(3)
    np.testing.assert_allclose(sf(a, b).numpy(), f(a, b).numpy())
    assert "ember.relu(" in sf.code


def test_freeze_and_optimize_for_inference_fold_batchnorm():
    em, tm = _pair()
    x = ember.randn(2, 3, 6, 6)
    traced = ember.jit.trace(em, (x,))
    with pytest.raises(RuntimeError, match="eval mode"):
        ember.jit.freeze(ember.jit.trace(_cnn(enn).train(), (x,)))
    frozen = ember.jit.freeze(traced)
    assert all(not p.requires_grad for p in frozen.parameters())
    assert all(p.requires_grad for p in em.parameters())      # the model is untouched
    opt = ember.jit.optimize_for_inference(traced)
    assert opt.folded_batch_norms == 2
    assert not any(n.opname == "ember.rsqrt" for n in opt.graph.nodes)
    ref = tm(torch.tensor(x.numpy())).detach().numpy()
    np.testing.assert_allclose(opt(x).detach().numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(opt(x).detach().numpy(), em(x).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    buf = io.BytesIO()
    opt.save(buf)
    buf.seek(0)
    np.testing.assert_allclose(ember.jit.load(buf)(x).detach().numpy(), ref, rtol=1e-4,
                               atol=1e-5)


def test_markers_are_noops_like_torch():
    assert ember.jit.is_scripting() is torch.jit.is_scripting() is False

    @ember.jit.ignore
    def g(x):
        return x + 1

    @ember.jit.unused
    def h(x):
        return x

    @ember.jit.export
    def k(x):
        return x
    assert g(1) == 2 and h(3) == 3 and k(4) == 4
    assert ember.jit.ignore(drop=True)(g) is g


def test_trace_function_and_torch_agree():
    def f(a, b):
        return (a @ b.T).softmax(-1)
    a, b = ember.randn(4, 3), ember.randn(5, 3)
    tf = ember.jit.trace(f, (a, b))
    ref = torch.jit.trace(lambda a, b: (a @ b.T).softmax(-1),
                          (torch.tensor(a.numpy()), torch.tensor(b.numpy())))
    np.testing.assert_allclose(tf(a, b).numpy(),
                               ref(torch.tensor(a.numpy()), torch.tensor(b.numpy())).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert "ember.matmul(" in tf.code or "ember.mm(" in tf.code


def test_jit_helpers():
    fut = ember.jit.fork(lambda a: a * 2, 3)
    assert ember.jit.wait(fut) == 6
    with ember.jit.optimized_execution(True):
        pass
    assert ember.jit.isinstance(3, int)
    m = ember.jit.trace(enn.Linear(2, 2), ember.randn(3, 2))
    assert "ember.ops.linear" in ember.jit.export_opnames(m)
    buf = io.BytesIO()
    ember.jit.save(m, buf)
    buf.seek(0)
    assert isinstance(ember.jit.load(buf), ember.jit.ScriptModule)
