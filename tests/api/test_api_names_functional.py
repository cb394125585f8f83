"""torch.nn.functional names added for issue 20, checked against real torch: grouped_mm
(values, shapes, dtypes, errors, gradients), the annotation helpers and note dictionaries,
and the typing names. (The __torch_function__ helpers are in test_api_names_autograd.py.)"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

DTYPES = ["float32", "bfloat16", "float16"]
TOL = {"float32": 1e-5, "bfloat16": 2e-2, "float16": 2e-3}


def _pair(shape, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(x).to(getattr(torch, dtype)), ember.tensor(x).to(getattr(ember, dtype))


def _np(t):
    return t.detach().float().numpy() if isinstance(t, torch.Tensor) else \
        np.asarray(t.detach().float())


def _offs(values):
    return (torch.tensor(values, dtype=torch.int32), ember.tensor(values, dtype=ember.int32))


CASES = {
    "2d x 3d": ((6, 8), (3, 8, 8), [2, 4, 6]),
    "2d x 3d uneven": ((10, 16), (4, 16, 8), [1, 5, 5, 10]),
    "3d x 2d": ((3, 4, 8), (8, 24), [8, 16, 24]),
    "2d x 2d": ((8, 16), (16, 8), [4, 12, 16]),
    "3d x 3d": ((3, 4, 8), (3, 8, 16), None),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_grouped_mm_values(case, dtype):
    sa, sb, offs = CASES[case]
    ta, ea = _pair(sa, dtype, 1)
    tb, eb = _pair(sb, dtype, 2)
    kw_t, kw_e = ({}, {}) if offs is None else \
        ({"offs": _offs(offs)[0]}, {"offs": _offs(offs)[1]})
    r_t, r_e = TF.grouped_mm(ta, tb, **kw_t), EF.grouped_mm(ea, eb, **kw_e)
    assert tuple(r_t.shape) == tuple(r_e.shape)
    assert str(r_t.dtype).split(".")[-1] == str(r_e.dtype).split(".")[-1]
    assert r_t.stride() == r_e.stride()
    np.testing.assert_allclose(_np(r_e), _np(r_t), rtol=TOL[dtype], atol=TOL[dtype] * 4)


def test_grouped_mm_bT_layout_and_out_dtype():
    ta, ea = _pair((6, 8), "float32", 3)
    tb, eb = _pair((3, 8, 8), "float32", 4)
    to, eo = _offs([2, 4, 6])
    r_t = TF.grouped_mm(ta, tb.transpose(1, 2), offs=to, out_dtype=torch.float32)
    r_e = EF.grouped_mm(ea, eb.transpose(1, 2), offs=eo, out_dtype=ember.float32)
    np.testing.assert_allclose(_np(r_e), _np(r_t), rtol=1e-5, atol=1e-5)


def test_grouped_mm_gradients():
    """torch's CPU kernel has no working backward; ember's gradients are checked against
    the per-group products differentiated by torch."""
    a = np.random.default_rng(5).standard_normal((6, 8)).astype(np.float32)
    b = np.random.default_rng(6).standard_normal((3, 8, 8)).astype(np.float32)
    g = np.random.default_rng(7).standard_normal((6, 8)).astype(np.float32)
    bounds = [(0, 1), (1, 4), (4, 6)]
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ref = torch.cat([ta[s:e] @ tb[i] for i, (s, e) in enumerate(bounds)])
    ref.backward(torch.tensor(g))
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    out = EF.grouped_mm(ea, eb, offs=ember.tensor([1, 4, 6], dtype=ember.int32))
    out.backward(ember.tensor(g))
    np.testing.assert_allclose(np.asarray(out.detach()), ref.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(np.asarray(ea.grad), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(eb.grad), tb.grad.numpy(), rtol=1e-5, atol=1e-5)


def _grouped_errors(lib, F, case):
    i32 = lib.int32
    o = lib.tensor([2, 4, 6], dtype=i32)
    ones = lib.ones
    return {
        "int a": lambda: F.grouped_mm(ones(6, 8, dtype=i32), ones(3, 8, 8), offs=o),
        "double b": lambda: F.grouped_mm(ones(6, 8), ones(3, 8, 8, dtype=lib.float64), offs=o),
        "1d a": lambda: F.grouped_mm(ones(8), ones(3, 8, 8), offs=o),
        "1d b": lambda: F.grouped_mm(ones(6, 8), ones(8), offs=o),
        "no offs": lambda: F.grouped_mm(ones(6, 8), ones(3, 8, 8)),
        "offs with 3d": lambda: F.grouped_mm(ones(3, 4, 8), ones(3, 8, 8), offs=o),
        "offs 2d": lambda: F.grouped_mm(ones(6, 8), ones(3, 8, 8), offs=o.view(1, 3)),
        "offs int64": lambda: F.grouped_mm(ones(6, 8), ones(3, 8, 8), offs=o.long()),
        "contraction": lambda: F.grouped_mm(ones(3, 4, 4), ones(3, 8, 8)),
        "contraction 3d2d": lambda: F.grouped_mm(ones(3, 4, 8), ones(4, 12), offs=o),
        "batch": lambda: F.grouped_mm(ones(2, 4, 8), ones(3, 8, 8)),
        "groups": lambda: F.grouped_mm(ones(6, 8), ones(2, 8, 8), offs=o),
        "groups 3d2d": lambda: F.grouped_mm(ones(2, 4, 8), ones(8, 12), offs=o),
        "stride 16": lambda: F.grouped_mm(ones(6, 6), ones(3, 6, 8), offs=o),
        "stride 16 b": lambda: F.grouped_mm(ones(6, 8), ones(3, 8, 6), offs=o),
        "stride 16 aT": lambda: F.grouped_mm(ones(8, 6).t(), ones(3, 8, 8), offs=o),
        "no unit stride": lambda: F.grouped_mm(ones(6, 16)[:, ::2], ones(3, 8, 8), offs=o),
        "bias": lambda: F.grouped_mm(ones(3, 4, 8), ones(3, 8, 8), bias=ones(3, 8)),
        "out dtype": lambda: F.grouped_mm(ones(3, 4, 8), ones(3, 8, 8), out_dtype=lib.float64),
        "mixed": lambda: F.grouped_mm(ones(6, 8), ones(3, 8, 8, dtype=lib.bfloat16), offs=o),
        "mixed half": lambda: F.grouped_mm(ones(6, 8, dtype=lib.float16),
                                           ones(3, 8, 8, dtype=lib.bfloat16), offs=o),
        "not a tensor": lambda: F.grouped_mm(3, ones(3, 8, 8)),
        "b not a tensor": lambda: F.grouped_mm(ones(6, 8), [1]),
    }[case]


@pytest.mark.parametrize("case", ["int a", "double b", "1d a", "1d b", "no offs", "offs with 3d",
                                  "offs 2d", "offs int64", "contraction", "contraction 3d2d",
                                  "batch", "groups", "groups 3d2d", "stride 16", "stride 16 b",
                                  "stride 16 aT", "no unit stride", "bias", "out dtype", "mixed",
                                  "mixed half", "not a tensor", "b not a tensor"])
def test_grouped_mm_errors(case):
    got = []
    for lib, F in ((torch, TF), (ember, EF)):
        with pytest.raises(Exception) as e:
            _grouped_errors(lib, F, case)()
        got.append((type(e.value), str(e.value)))
    assert got[0][0] is got[1][0] or got[0][0].__name__ == got[1][0].__name__
    assert got[0][1] == got[1][1]


def test_grouped_mm_signature():
    import inspect
    t, e = inspect.signature(TF.grouped_mm), inspect.signature(EF.grouped_mm)
    assert [(p.name, p.kind, p.default) for p in t.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in e.parameters.values()]


# ---- annotation helpers, notes, typing names ----

def test_broadcasting_lists():
    for F in (TF, EF):
        assert F.BroadcastingList1[int] is None and F.BroadcastingList3[float] is None
        assert F.BroadcastingList2 is F.BroadcastingList1 is F.BroadcastingList3
    assert type(EF.BroadcastingList1).__name__ == type(TF.BroadcastingList1).__name__


def test_notes_dictionaries():
    for name in ("reproducibility_notes", "sparse_support_notes", "tf32_notes"):
        t, e = getattr(TF, name), getattr(EF, name)
        assert type(t) is type(e) is dict and list(t) == list(e)
        assert all(isinstance(v, str) and v for v in e.values())
        # docstrings are formatted with them
        key = next(iter(e))
        assert ("{%s}" % key).format(**e) == e[key]


def test_typing_names():
    assert EF.Callable is TF.Callable and EF.Optional is TF.Optional
    assert EF.TYPE_CHECKING is TF.TYPE_CHECKING is False
    assert EF.DType is TF.DType is int
