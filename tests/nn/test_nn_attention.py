"""scaled_dot_product_attention, MultiheadAttention and the Transformer layers against
PyTorch: outputs, attention weights and all gradients with masks (bool and float, key
padding, causal), batch_first, kdim/vdim, bias_kv, norm_first, activations; train mode with
dropout 0 and eval mode."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.autograd import gradcheck

try:
    from ._nn_common import DTYPES, E, close, pair
except ImportError:
    from _nn_common import DTYPES, E, close, pair

TOLS = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-10)}


def _x(shape, dtype=torch.float64, seed=0, rg=True):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(
        dtype).requires_grad_(rg)


def _both(tfn, efn, targs, tol, check_grads_of=()):
    """Run both; compare all tensor outputs, then backprop a random gradient and compare the
    gradients of the given torch tensors (ember counterparts matched by position)."""
    eargs = [E(a) if isinstance(a, torch.Tensor) else a for a in targs]
    tout, eout = tfn(*targs), efn(*eargs)
    tout = [t for t in (tout if isinstance(tout, tuple) else (tout,)) if t is not None]
    eout = [e for e in (eout if isinstance(eout, tuple) else (eout,)) if e is not None]
    assert len(tout) == len(eout)
    for i, (t, e) in enumerate(zip(tout, eout)):
        close(e, t, tol, f"output {i}")
    rng = np.random.default_rng(3)
    gs = [torch.from_numpy(rng.standard_normal(tuple(t.shape))).to(t.dtype) for t in tout]
    torch.autograd.backward(tout, gs)
    ember.autograd.backward(eout, [E(g) for g in gs])
    for i, (t, e) in enumerate(zip(targs, eargs)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            close(e.grad, t.grad, tol, f"grad arg {i}")
    return eargs


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"},
                                {"mask": "float"}, {"enable_gqa": True}])
def test_sdpa(kw, tdt, edt):
    kw = dict(kw)
    hk = 2 if kw.get("enable_gqa") else 4
    q, k, v = _x((2, 4, 3, 5), tdt), _x((2, hk, 6, 5), tdt, 1), _x((2, hk, 6, 7), tdt, 2)
    mask = kw.pop("mask", None)
    args = [q, k, v]
    if mask == "bool":
        m = torch.from_numpy(np.random.default_rng(5).random((3, 6)) > 0.3)
        m[:, 0] = True                      # every query attends somewhere
        args.append(m)
    elif mask == "float":
        args.append(_x((2, 1, 3, 6), tdt, 6, rg=False))
    _both(lambda *a: TF.scaled_dot_product_attention(*a, **kw),
          lambda *a: EF.scaled_dot_product_attention(*a, **kw), args, TOLS[tdt])


def test_sdpa_gradcheck_and_errors():
    q, k, v = (E(_x((1, 2, 3), seed=s, rg=False), True) for s in range(3))
    assert gradcheck(lambda a, b, c: EF.scaled_dot_product_attention(a, b, c, is_causal=True),
                     (q, k, v))
    with pytest.raises(RuntimeError):
        TF.scaled_dot_product_attention(torch.ones(1, 2, 2), torch.ones(1, 2, 2),
                                        torch.ones(1, 2, 2), torch.ones(2, 2), is_causal=True)
    with pytest.raises(RuntimeError, match="attn_mask"):
        EF.scaled_dot_product_attention(ember.ones(1, 2, 2), ember.ones(1, 2, 2),
                                        ember.ones(1, 2, 2), ember.ones(2, 2), is_causal=True)


def _param_grads(tm, em, tol):
    ep = dict(em.named_parameters())
    assert list(ep) == [n for n, _ in tm.named_parameters()]
    for n, p in tm.named_parameters():
        close(ep[n].grad, p.grad, tol, f"grad {n}")


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("ctor,call", [
    ({}, {}),
    ({"batch_first": True}, {"kpm": True, "attn_mask": "bool"}),
    ({"kdim": 3, "vdim": 2}, {"average_attn_weights": False}),
    ({"add_bias_kv": True, "add_zero_attn": True}, {"kpm": True, "attn_mask": "float"}),
    ({"bias": False}, {"need_weights": False, "attn_mask": "3d"}),
    ({}, {"unbatched": True, "kpm": True}),
])
def test_multihead_attention(ctor, call, tdt, edt):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, dtype=tdt, **ctor)
    em = enn.MultiheadAttention(8, 2, dtype=edt, **ctor)
    pair(tm, em)
    call = dict(call)
    L, S, N = 3, 4, 2
    bf = ctor.get("batch_first", False)
    unb = call.pop("unbatched", False)

    def shp(n, d):
        return (n, d) if unb else ((N, n, d) if bf else (n, N, d))
    q = _x(shp(L, 8), tdt)
    k = _x(shp(S, ctor.get("kdim", 8)), tdt, 1)
    v = _x(shp(S, ctor.get("vdim", 8)), tdt, 2)
    kw = {}
    if call.pop("kpm", False):
        m = np.zeros((S,) if unb else (N, S), dtype=bool)
        m[..., -1] = True
        kw["key_padding_mask"] = torch.from_numpy(m)
    am = call.pop("attn_mask", None)
    if am == "bool":
        kw["attn_mask"] = torch.from_numpy(np.triu(np.ones((L, S), dtype=bool), 2))
    elif am == "float":
        kw["attn_mask"] = _x((L, S), tdt, 7, rg=False)
    elif am == "3d":
        kw["attn_mask"] = _x((N * 2, L, S), tdt, 8, rg=False)
    kw.update(call)
    ekw = {a: E(b) if isinstance(b, torch.Tensor) else b for a, b in kw.items()}
    _both(lambda *a: tm(*a, **kw), lambda *a: em(*a, **ekw), [q, k, v], TOLS[tdt])
    _param_grads(tm, em, TOLS[tdt])


def _layer_case(tm, em, shapes, tdt, kwargs, tol):
    pair(tm, em)
    args = [_x(s, tdt, i) for i, s in enumerate(shapes)]
    ekw = {a: E(b) if isinstance(b, torch.Tensor) else b for a, b in kwargs.items()}
    _both(lambda *a: tm(*a, **kwargs), lambda *a: em(*a, **ekw), args, tol)
    _param_grads(tm, em, tol)


@pytest.mark.parametrize("tdt,edt", DTYPES)
@pytest.mark.parametrize("ctor", [
    {}, {"norm_first": True, "activation": "gelu", "batch_first": True},
    {"activation": "callable", "layer_norm_eps": 1e-3, "bias": False},
])
@pytest.mark.parametrize("train", [True, False])
def test_transformer_layers(ctor, train, tdt, edt):
    ctor = dict(ctor)
    tctor, ector = dict(ctor), dict(ctor)
    if ctor.get("activation") == "callable":
        tctor["activation"], ector["activation"] = torch.tanh, ember.tanh
    common = {"dim_feedforward": 16, "dropout": 0.0}
    torch.manual_seed(0)
    tenc = torch.nn.TransformerEncoderLayer(8, 2, dtype=tdt, **common, **tctor)
    eenc = enn.TransformerEncoderLayer(8, 2, dtype=edt, **common, **ector)
    tdec = torch.nn.TransformerDecoderLayer(8, 2, dtype=tdt, **common, **tctor)
    edec = enn.TransformerDecoderLayer(8, 2, dtype=edt, **common, **ector)
    for m in (tenc, eenc, tdec, edec):
        m.train(train)
    bf = ctor.get("batch_first", False)
    src, tgt = ((2, 5, 8), (2, 3, 8)) if bf else ((5, 2, 8), (3, 2, 8))
    kpm = torch.tensor([[False] * 4 + [True], [False] * 5])
    causal = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=tdt)
    tol = TOLS[tdt]
    _layer_case(tenc, eenc, [src], tdt, {"src_key_padding_mask": kpm} if train else {}, tol)
    _layer_case(tdec, edec, [tgt, src], tdt,
                {"tgt_mask": causal, "memory_key_padding_mask": kpm}, tol)
    if not train:        # inference without autograd (torch may take its fused fast path)
        x = _x(src, tdt, 9, rg=False)
        with torch.no_grad(), ember.no_grad():
            close(eenc(E(x)), tenc(x), tol, "no_grad eval output")


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_stacks(norm_first):
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=16, dropout=0.0, norm_first=norm_first, dtype=None)
    tm = torch.nn.Transformer(**{**kw, "dtype": torch.float64})
    em = enn.Transformer(**{**kw, "dtype": ember.float64})
    assert list(em.state_dict()) == list(tm.state_dict())
    pair(tm, em)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    close(enn.Transformer.generate_square_subsequent_mask(4, dtype=ember.float64), mask)
    _both(lambda s, t: tm(s, t, tgt_mask=mask, tgt_is_causal=True),
          lambda s, t: em(s, t, tgt_mask=E(mask), tgt_is_causal=True),
          [_x((5, 2, 8)), _x((4, 2, 8), seed=1)], TOLS[torch.float64])
    _param_grads(tm, em, TOLS[torch.float64])
    # encoder stack on its own (train mode: no nested-tensor fast path in torch)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, dtype=torch.float64)
    el = enn.TransformerEncoderLayer(8, 2, 16, 0.0, dtype=ember.float64)
    te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8, dtype=torch.float64),
                                     enable_nested_tensor=False)
    ee = enn.TransformerEncoder(el, 2, norm=enn.LayerNorm(8, dtype=ember.float64))
    _layer_case(te, ee, [(5, 2, 8)], torch.float64,
                {"src_key_padding_mask": torch.tensor([[False] * 4 + [True], [False] * 5])},
                TOLS[torch.float64])
    td = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(
        8, 2, 16, 0.0, dtype=torch.float64), 2)
    ed = enn.TransformerDecoder(enn.TransformerDecoderLayer(8, 2, 16, 0.0, dtype=ember.float64),
                                2)
    _layer_case(td, ed, [(3, 2, 8), (5, 2, 8)], torch.float64, {}, TOLS[torch.float64])
