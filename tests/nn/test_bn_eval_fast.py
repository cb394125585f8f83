"""Eval-mode F.batch_norm (running statistics given) against PyTorch: values, output shape and
strides, and the gradients of input, weight, bias (and running stats) for float32/float64,
2-D to 5-D inputs, contiguous, channels_last, transposed and sliced layouts. This is the
one-pass path of ember/nn/functional_norm.py (_batch_norm_eval) and its autograd fallback."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF

try:
    from ._nn_common import DTYPES, E, close
except ImportError:
    from _nn_common import DTYPES, E, close

SHAPES = [(6, 4), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 4)]
LAYOUTS = ["contig", "channels_last", "T", "step", "perm01", "cl_step"]
# sizes of 1 make a tensor both contiguous and channels_last: torch's output is contiguous
AMBIGUOUS = [(2, 1, 4, 4), (2, 3, 1, 1), (1, 3, 1, 4)]


def _rand(shape, dtype, seed, scale=1.0, shift=0.0):
    a = np.random.default_rng(seed).standard_normal(shape) * scale + shift
    return torch.from_numpy(a).to(dtype)


def _layout(x, layout, lib):
    """The same view (or copy) of `x` in torch or ember (`lib`), by name."""
    if layout == "channels_last":
        fmt = {4: lib.channels_last, 5: lib.channels_last_3d}.get(x.dim())
        return x if fmt is None else x.contiguous(memory_format=fmt)
    if layout == "T":
        return x.permute(*reversed(range(x.dim())))
    if layout == "step":
        return x[..., ::2]
    if layout == "cl_step":      # a slice of a channels_last tensor
        return _layout(x, "channels_last", lib)[..., ::2]
    if layout == "perm01":       # batch and channel swapped in memory
        return x.transpose(0, 1).contiguous().transpose(0, 1)
    return x


def _inputs(shape, layout, tdt, seed=0):
    """(torch input, ember input) of `shape` after `layout`, the same values and strides."""
    base = list(shape)
    if layout == "T":
        base = base[::-1]
    elif layout in ("step", "cl_step"):
        base[-1] *= 2
    t = _rand(tuple(base), tdt, seed, 2.0, 0.5)
    tx, ex = _layout(t, layout, torch), _layout(E(t), layout, ember)
    assert tuple(tx.shape) == tuple(shape) and tuple(ex.shape) == tuple(shape)
    return tx, ex


def _stats(c, tdt, affine=True):
    mean = _rand((c,), tdt, 11, 1.0, 0.3)
    var = _rand((c,), tdt, 12).abs() + 0.2
    w = _rand((c,), tdt, 13, 0.5, 1.0) if affine else None
    b = _rand((c,), tdt, 14) if affine else None
    return mean, var, w, b


def _e(t):
    return None if t is None else E(t)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES + AMBIGUOUS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("affine", [True, False])
def test_bn_eval_values_and_strides(shape, layout, tdt, edt, affine):
    tx, ex = _inputs(shape, layout, tdt)
    ts = _stats(shape[1], tdt, affine)
    es = [_e(t) for t in ts]
    tout = torch.nn.functional.batch_norm(tx, ts[0], ts[1], ts[2], ts[3], False, 0.1, 1e-3)
    eout = EF.batch_norm(ex, es[0], es[1], es[2], es[3], False, 0.1, 1e-3)
    close(eout, tout)
    assert tuple(eout.stride()) == tuple(tout.stride())
    assert eout.dtype is edt and not eout.requires_grad
    # the running statistics are read, never updated, in eval mode
    close(es[0], ts[0], what="running_mean")
    close(es[1], ts[1], what="running_var")


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", ["contig", "channels_last", "T", "cl_step"])
@pytest.mark.parametrize("which", ["all", "input", "weight", "bias", "weight_bias"])
def test_bn_eval_grads(shape, layout, tdt, edt, which):
    tx, ex = _inputs(shape, layout, tdt, seed=3)
    ts = list(_stats(shape[1], tdt))
    es = [E(t) for t in ts]
    wants = {"all": (0, 3, 4), "input": (0,), "weight": (3,), "bias": (4,),
             "weight_bias": (3, 4)}[which]
    targs, eargs = [tx] + ts, [ex] + es
    for i in wants:
        targs[i] = targs[i].detach().requires_grad_(True)
        eargs[i] = eargs[i].detach().requires_grad_(True)
    tout = torch.nn.functional.batch_norm(targs[0], targs[1], targs[2], targs[3], targs[4],
                                          False)
    eout = EF.batch_norm(eargs[0], eargs[1], eargs[2], eargs[3], eargs[4], False)
    close(eout, tout)
    assert tuple(eout.stride()) == tuple(tout.stride())
    g = _rand(tuple(shape), tdt, 21)
    tout.backward(g)
    eout.backward(E(g))
    for i in wants:
        close(eargs[i].grad, targs[i].grad, what=f"grad of argument {i}")


@pytest.mark.parametrize("shape", AMBIGUOUS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_bn_eval_grads_ambiguous_layouts(shape, layout):
    """Gradients for inputs whose size-1 dims make the layout ambiguous. torch 2.13's own
    input gradient is wrong for some of these (a (1, 3, 1, 4) permuted view), so the
    reference gradients are torch's for a contiguous copy of the same values."""
    tx, ex = _inputs(shape, layout, torch.float64, seed=3)
    ts = list(_stats(shape[1], torch.float64))
    es = [E(t) for t in ts]
    tx = tx.contiguous().requires_grad_(True)
    ex.requires_grad_(True)
    tw, tb = ts[2].requires_grad_(True), ts[3].requires_grad_(True)
    ew, eb = es[2].requires_grad_(True), es[3].requires_grad_(True)
    tout = torch.nn.functional.batch_norm(tx, ts[0], ts[1], tw, tb, False)
    eout = EF.batch_norm(ex, es[0], es[1], ew, eb, False)
    close(eout, tout)
    g = _rand(tuple(shape), torch.float64, 21)
    tout.backward(g)
    eout.backward(E(g))
    for e, t, what in ((ex, tx, "input"), (ew, tw, "weight"), (eb, tb, "bias")):
        close(e.grad, t.grad, what=f"grad of {what}")


@pytest.mark.parametrize("tdt,edt", DTYPES)
def test_bn_eval_weight_grad_far_from_mean(tdt, edt):
    """A large running mean next to a small spread: the weight's gradient keeps its digits
    (torch's form, sum(g * (x - mean)) * invstd)."""
    tx = _rand((8, 3, 6, 6), tdt, 5, 0.01, 100.0)
    mean = torch.full((3,), 100.0, dtype=tdt)
    var = torch.full((3,), 1e-4, dtype=tdt)
    tw = torch.ones(3, dtype=tdt, requires_grad=True)
    ew = E(tw)
    g = _rand((8, 3, 6, 6), tdt, 6)
    torch.nn.functional.batch_norm(tx, mean, var, tw, None, False).backward(g)
    EF.batch_norm(E(tx), E(mean), E(var), ew, None, False).backward(E(g))
    close(ew.grad, tw.grad, tol=(1e-4, 1e-4) if tdt is torch.float32 else None)


def test_bn_eval_no_grad_and_inference_mode():
    tx, ex = _inputs((2, 3, 4, 5), "contig", torch.float32)
    ts = _stats(3, torch.float32)
    es = [E(t).requires_grad_(True) for t in ts]
    with ember.no_grad():
        out = EF.batch_norm(ex.requires_grad_(True), *es, False)
    assert not out.requires_grad and out.grad_fn is None
    with ember.inference_mode():
        out2 = EF.batch_norm(ex, *es, False)
    assert out2.is_inference()
    close(out, torch.nn.functional.batch_norm(tx, *ts, False))
    np.testing.assert_array_equal(out.numpy(), out2.numpy())


def test_bn_eval_module_matches_torch_channels_last():
    tm = torch.nn.BatchNorm2d(5).eval()
    with torch.no_grad():
        tm.running_mean.copy_(_rand((5,), torch.float32, 1))
        tm.running_var.copy_(_rand((5,), torch.float32, 2).abs() + 0.5)
        tm.weight.copy_(_rand((5,), torch.float32, 3))
        tm.bias.copy_(_rand((5,), torch.float32, 4))
    em = ember.nn.BatchNorm2d(5).eval()
    em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
    tx, ex = _inputs((3, 5, 4, 4), "channels_last", torch.float32)
    tout, eout = tm(tx), em(ex)
    close(eout, tout)
    assert eout.is_contiguous(memory_format=ember.channels_last)
    assert tuple(eout.stride()) == tuple(tout.stride())
    tout.sum().backward()
    eout.sum().backward()
    close(em.weight.grad, tm.weight.grad)
    close(em.bias.grad, tm.bias.grad)


def test_bn_eval_mixed_dtype_and_bad_sizes_fall_back():
    """What the one-pass path does not take (mixed dtypes, a wrong statistics size) behaves
    as the composition does: a float64 running stat promotes; a wrong size raises."""
    x = ember.randn(2, 3, 4)
    out = EF.batch_norm(x, ember.zeros(3, dtype=ember.float64), ember.ones(3), None, None,
                        False)
    assert out.shape == (2, 3, 4)
    with pytest.raises(Exception):
        EF.batch_norm(x, ember.zeros(4), ember.ones(4), None, None, False)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("shape", [(2048, 4), (64, 8, 16), (4, 16, 16, 16), (2, 8, 4, 8, 8)])
@pytest.mark.parametrize("layout", ["contig", "channels_last", "T"])
def test_bn_eval_big_inputs_c_kernel(shape, layout, tdt, edt, monkeypatch):
    """Inputs big enough for the one-pass C kernel: torch's values and strides, and the
    same bits as the NumPy path (the kernel is built with -ffp-contract=off)."""
    tx, ex = _inputs(shape, layout, tdt, seed=7)
    ts = _stats(shape[1], tdt)
    es = [E(t) for t in ts]
    tout = torch.nn.functional.batch_norm(tx, *ts, False)
    eout = EF.batch_norm(ex, *es, False)
    close(eout, tout)
    assert tuple(eout.stride()) == tuple(tout.stride())
    import ember.ops.native as native
    monkeypatch.setattr(native, "enabled", False)
    np.testing.assert_array_equal(EF.batch_norm(ex, *es, False).numpy(), eout.numpy())
