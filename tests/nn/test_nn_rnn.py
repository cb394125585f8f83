"""RNN / LSTM / GRU (and cells) against PyTorch: parameter names, shapes and init range,
outputs, final states and all gradients for multi-layer, bidirectional, batch_first,
proj_size, given h0/c0, unbatched and packed inputs; the nn.utils.rnn helpers."""
import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import ember
import ember.nn as enn
from ember.nn.utils import rnn as ernn

try:
    from ._nn_common import DTYPES, E, close, pair
except ImportError:
    from _nn_common import DTYPES, E, close, pair

TOLS = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-11)}


def _x(shape, dtype, seed=0, rg=True):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(
        dtype).requires_grad_(rg)


def _flat(out):
    """The tensors of an RNN result ((out, h) or (out, (h, c)); out may be packed)."""
    o, h = out
    o = o.data if isinstance(o, (trnn.PackedSequence, ernn.PackedSequence)) else o
    return [o] + (list(h) if isinstance(h, tuple) else [h])


def _check(tm, em, targs, eargs, tol):
    tout, eout = _flat(tm(*targs)), _flat(em(*eargs))
    for i, (t, e) in enumerate(zip(tout, eout)):
        close(e, t, tol, f"output {i}")
    rng = np.random.default_rng(1)
    gs = [torch.from_numpy(rng.standard_normal(tuple(t.shape))).to(t.dtype) for t in tout]
    torch.autograd.backward(tout, gs)
    ember.autograd.backward(eout, [E(g) for g in gs])
    eparams = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        close(eparams[name].grad, p.grad, tol, f"grad {name}")


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("mode,kw", [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}),
    ("RNN", {"bias": False, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("LSTM", {"num_layers": 3, "batch_first": True, "dropout": 0.0}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
])
@pytest.mark.parametrize("given_h", [False, True])
def test_rnn_matches_torch(mode, kw, given_h, tdt, edt):
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(3, 4, dtype=tdt, **kw)
    em = getattr(enn, mode)(3, 4, dtype=edt, **kw)
    assert [(n, tuple(p.shape)) for n, p in em.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    pair(tm, em)
    bf = kw.get("batch_first", False)
    x = _x((2, 5, 3) if bf else (5, 2, 3), tdt)
    targs, eargs = [x], [E(x)]
    if given_h:
        dirs = 2 if kw.get("bidirectional") else 1
        hs = (kw.get("num_layers", 1) * dirs, 2, kw.get("proj_size", 0) or 4)
        h0 = _x(hs, tdt, seed=2)
        if mode == "LSTM":
            c0 = _x(hs[:2] + (4,), tdt, seed=3)
            targs.append((h0, c0))
            eargs.append((E(h0), E(c0)))
        else:
            targs.append(h0)
            eargs.append(E(h0))
    _check(tm, em, targs, eargs, TOLS[tdt])
    close(eargs[0].grad, x.grad, TOLS[tdt], "grad input")
    if given_h:
        h_t = targs[1][0] if mode == "LSTM" else targs[1]
        h_e = eargs[1][0] if mode == "LSTM" else eargs[1]
        close(h_e.grad, h_t.grad, TOLS[tdt], "grad h0")


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_rnn_unbatched_and_eval_dropout(mode):
    tm = getattr(torch.nn, mode)(3, 4, num_layers=2, dropout=0.5, dtype=torch.float64)
    em = getattr(enn, mode)(3, 4, num_layers=2, dropout=0.5, dtype=ember.float64)
    pair(tm, em)
    tm.eval(), em.eval()
    x = _x((4, 3), torch.float64)
    _check(tm, em, [x], [E(x)], TOLS[torch.float64])


@pytest.mark.parametrize("mode,kw", [
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 3}),
    ("GRU", {"bidirectional": True, "batch_first": True}),
    ("RNN", {"num_layers": 2}),
])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_rnn_packed(mode, kw, enforce_sorted):
    tm = getattr(torch.nn, mode)(3, 5, dtype=torch.float64, **kw)
    em = getattr(enn, mode)(3, 5, dtype=ember.float64, **kw)
    pair(tm, em)
    bf = kw.get("batch_first", False)
    lengths = [6, 5, 3, 1] if enforce_sorted else [3, 6, 1, 5]
    x = _x((4, 6, 3) if bf else (6, 4, 3), torch.float64)
    tp = trnn.pack_padded_sequence(x, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
    ex = E(x)
    ep = ernn.pack_padded_sequence(ex, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
    close(ep.data, tp.data, what="packed data")
    close(ep.batch_sizes, tp.batch_sizes, what="batch_sizes")
    if not enforce_sorted:
        close(ep.sorted_indices, tp.sorted_indices, what="sorted_indices")
        close(ep.unsorted_indices, tp.unsorted_indices, what="unsorted_indices")
    targs, eargs = [tp], [ep]
    if mode == "RNN":          # with an initial state (in the original batch order)
        h0 = _x((2, 4, 5), torch.float64, seed=4)
        targs.append(h0)
        eargs.append(E(h0))
    _check(tm, em, targs, eargs, TOLS[torch.float64])
    close(ex.grad, x.grad, TOLS[torch.float64], "grad input")
    to, tl = trnn.pad_packed_sequence(tm(tp)[0], batch_first=bf, total_length=7)
    eo, el = ernn.pad_packed_sequence(em(ep)[0], batch_first=bf, total_length=7)
    close(eo, to, TOLS[torch.float64], "padded output")
    close(el, tl, what="lengths")


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("cell,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                     ("LSTMCell", {}), ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched", [True, False])
def test_cells(cell, kw, batched, tdt, edt):
    tm = getattr(torch.nn, cell)(3, 4, dtype=tdt, **kw)
    em = getattr(enn, cell)(3, 4, dtype=edt, **kw)
    pair(tm, em)
    x = _x((2, 3) if batched else (3,), tdt)
    hs = (2, 4) if batched else (4,)
    h = _x(hs, tdt, seed=1)
    targs, eargs = [x], [E(x)]
    if cell == "LSTMCell":
        c = _x(hs, tdt, seed=2)
        targs.append((h, c))
        eargs.append((E(h), E(c)))
    else:
        targs.append(h)
        eargs.append(E(h))
    tout, eout = tm(*targs), em(*eargs)
    tout = list(tout) if isinstance(tout, tuple) else [tout]
    eout = list(eout) if isinstance(eout, tuple) else [eout]
    for t, e in zip(tout, eout):
        close(e, t, TOLS[tdt])
    sum(t.sum() for t in tout).backward()
    sum(e.sum() for e in eout).backward()
    close(eargs[0].grad, x.grad, TOLS[tdt], "grad x")
    for name, p in tm.named_parameters():
        close(dict(em.named_parameters())[name].grad, p.grad, TOLS[tdt], name)
    close(em(eargs[0])[0] if cell == "LSTMCell" else em(eargs[0]),
          tm(x)[0] if cell == "LSTMCell" else tm(x), TOLS[tdt], "no hx")


def test_init_range_and_errors():
    m = enn.LSTM(3, 16, num_layers=2, bidirectional=True)
    for p in m.parameters():
        assert float(p.abs().max()) <= 0.25
    assert float(m.weight_ih_l0.std()) > 0.1
    for cls in (torch.nn.GRU, enn.GRU):
        with pytest.raises(ValueError, match="proj_size"):
            cls(3, 4, proj_size=2)
    with pytest.raises(RuntimeError):
        torch.nn.LSTM(3, 4)(torch.randn(2, 1, 5))
    with pytest.raises(RuntimeError, match="input_size"):
        enn.LSTM(3, 4)(ember.randn(2, 1, 5))
    with pytest.raises(RuntimeError):
        torch.nn.GRU(3, 4)(torch.randn(2, 1, 3), torch.randn(2, 1, 4))
    with pytest.raises(RuntimeError, match="hidden size"):
        enn.GRU(3, 4)(ember.randn(2, 1, 3), ember.randn(2, 1, 4))
    with pytest.raises(RuntimeError, match="sorted"):
        ernn.pack_padded_sequence(ember.randn(3, 2, 1), [1, 3])
    with pytest.raises(RuntimeError):
        trnn.pack_padded_sequence(torch.randn(3, 2, 1), [1, 3])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_and_pack_sequence(batch_first, side):
    seqs = [_x((n, 2), torch.float64, seed=n) for n in (3, 5, 1)]
    tp = trnn.pad_sequence(seqs, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    ep = ernn.pad_sequence([E(s) for s in seqs], batch_first=batch_first, padding_value=-1.0,
                           padding_side=side)
    close(ep, tp)
    tk = trnn.pack_sequence(seqs, enforce_sorted=False)
    ek = ernn.pack_sequence([E(s) for s in seqs], enforce_sorted=False)
    close(ek.data, tk.data)
    close(ek.batch_sizes, tk.batch_sizes)
    for e, t in zip(ernn.unpack_sequence(ek), trnn.unpack_sequence(tk)):
        close(e, t)
