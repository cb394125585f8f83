"""Tensor and torch names added for issue 20 (second batch), each against real torch:
storage() / storage_type() (TypedStorage and the legacy classes), share_memory_() /
is_shared(), as_subclass, pin_memory's error, slice_inverse, torch.layout,
torch.classproperty and torch.fft's common_args / factory_common_args."""
import os
import re
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = [torch, ember]
DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
          "float16", "bfloat16", "complex64", "complex128"]


def pair(values, dtype="float32"):
    a = np.asarray(values)
    return (torch.tensor(a.tolist(), dtype=getattr(torch, dtype)),
            ember.tensor(a.tolist(), dtype=getattr(ember, dtype)))


def ember_text(s):
    return s.replace("torch", "ember")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# ---- storage() / storage_type() ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_storage_matches_torch(dtype):
    t, e = pair([[0, 1, 2], [3, 1, 0]], dtype)
    for a, b in ((t, e), (t[1:], e[1:]), (t.t(), e.t()), (t[:, ::2], e[:, ::2])):
        ts, es = a.storage(), b.storage()
        assert es.size() == ts.size() == len(es)
        assert es.tolist() == ts.tolist() and list(es) == list(ts)
        assert str(es.dtype) == ember_text(str(ts.dtype))
        assert es.element_size() == ts.element_size() and es.nbytes() == ts.nbytes()
        assert es[1] == ts[1] and es[-1] == ts[-1] and type(es[1]) is type(ts[1])
        assert (es.data_ptr() == b.data_ptr() - b.storage_offset() * b.element_size()) == \
            (ts.data_ptr() == a.data_ptr() - a.storage_offset() * a.element_size())
        assert str(es) == ember_text(str(ts))
        assert es.is_shared() is ts.is_shared() is False and es.is_cuda is ts.is_cuda
        assert str(es.device) == str(ts.device)
    cls_t, cls_e = t.storage_type(), e.storage_type()
    assert cls_e.__name__ == cls_t.__name__ and str(cls_e.dtype) == ember_text(str(cls_t.dtype))
    assert cls_e is getattr(ember, cls_t.__name__)
    assert isinstance(e.storage(), cls_e) and isinstance(t.storage(), cls_t)
    other = "DoubleStorage" if dtype != "float64" else "FloatStorage"
    assert not isinstance(e.storage(), getattr(ember, other))
    assert not isinstance(t.storage(), getattr(torch, other))
    assert isinstance(e.storage(), ember.TypedStorage)
    assert ember.is_storage(e.storage()) and torch.is_storage(t.storage())
    assert e.storage().type() == ember_text(t.storage().type())


def test_storage_writes_show_in_the_tensor_and_errors_match():
    outs = []
    for lib in LIBS:
        x = lib.arange(6.).reshape(2, 3)
        s = x[1].storage()
        s[0] = 7
        s[-1] = True
        row = [x.tolist(), s.tolist()]
        for bad in (6, -7, 1.5, slice(1, 3)):
            try:
                s[bad]
                row.append("ok")
            except Exception as err:  # noqa: BLE001 (compare whatever both raise)
                row.append((type(err).__name__, re.sub(r"<class '[\w.]+'>", "C", str(err))))
        s.fill_(2)
        row.append(x.tolist())
        outs.append(row)
    assert outs[0] == outs[1]


def test_storage_constructors_and_untyped():
    for cls in ("FloatStorage", "LongStorage", "BoolStorage", "DoubleStorage"):
        ts, es = getattr(torch, cls)(3), getattr(ember, cls)(3)
        assert es.size() == ts.size() == 3    # torch's memory is uninitialised here
        assert str(es.dtype) == ember_text(str(ts.dtype))
        assert type(es).__name__ == type(ts).__name__ == "TypedStorage"
        ts, es = getattr(torch, cls)([1, 0, 2]), getattr(ember, cls)([1, 0, 2])
        assert es.tolist() == ts.tolist()
    ts, es = torch.TypedStorage([1, 2], dtype=torch.int32), ember.TypedStorage([1, 2],
                                                                               dtype=ember.int32)
    assert es.tolist() == ts.tolist() and str(es.dtype) == ember_text(str(ts.dtype))
    assert ember.TypedStorage(2).dtype == ember.get_default_dtype()
    e = ember.arange(4)
    assert e.storage().untyped() is e.untyped_storage()
    assert e.storage().untyped().nbytes() == torch.arange(4).storage().untyped().nbytes()


def test_storage_deprecation_warning_matches_torch():
    caught = {}
    for lib, reset in ((torch, torch.storage._reset_warn_typed_storage_removal),
                       (ember, lambda: ember.core.typed_storage._warned.__setitem__(0, False))):
        reset()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            x = lib.ones(2)
            x.storage()
            x.storage_type()
            x.storage()
        caught[lib] = [(c.category, str(c.message)) for c in w]
    assert caught[ember] == caught[torch] and len(caught[ember]) == 1


# ---- share_memory_() / is_shared() ----

def test_share_memory_moves_the_storage_and_its_views():
    outs = []
    for lib in LIBS:
        x = lib.arange(12.).reshape(3, 4)
        v, w = x[1:], x.t()
        p = x.data_ptr()
        before = (x.is_shared(), v.is_shared())
        r = x.share_memory_()
        row = [before, r is x, x.is_shared(), v.is_shared(), w.is_shared(), x.data_ptr() == p,
               v.data_ptr() - x.data_ptr(), w.data_ptr() == x.data_ptr(), x.tolist()]
        v.add_(1)
        w[0, 0] = -5
        row += [x.tolist(), x.share_memory_() is x, x.data_ptr() == v.data_ptr() - 16]
        row.append(lib.empty(0).share_memory_().is_shared())
        row.append(x.storage().is_shared())
        y = lib.ones(3)
        s = y.storage()
        row += [s.share_memory_() is s, y.is_shared()]
        outs.append(row)
    assert outs[0] == outs[1]


def test_share_memory_keeps_autograd_state():
    for lib in LIBS:
        a = lib.ones(3, requires_grad=True)
        assert a.share_memory_().requires_grad
        (a * 2).sum().backward()
        assert a.grad.tolist() == [2., 2., 2.]


def test_share_memory_on_meta_raises_like_torch():
    errs = []
    for lib in LIBS:
        with pytest.raises(RuntimeError) as info:
            lib.empty(2, device="meta").share_memory_()
        errs.append(str(info.value))
    assert errs[0] == errs[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_shared_memory_is_shared_with_a_forked_child():
    seen = []
    for lib in LIBS:
        shared, private = lib.zeros(4).share_memory_(), lib.zeros(4)
        view = shared[2:]
        pid = os.fork()
        if pid == 0:        # the child writes both, then leaves at once
            try:
                shared[0] = 3
                view[1] = 5
                private[0] = 9
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        seen.append((shared.tolist(), private.tolist()))
    assert seen == [([3., 0., 0., 5.], [0., 0., 0., 0.])] * 2


# ---- as_subclass ----

def test_as_subclass_matches_torch():
    outs = []
    for lib in LIBS:
        class Sub(lib.Tensor):
            pass
        a = lib.arange(3.)
        s = a.as_subclass(Sub)
        s[0] = 9
        row = [type(s) is Sub, a.tolist(), s.data_ptr() == a.data_ptr(), s.requires_grad,
               s._base is a, type(a.as_subclass(lib.Tensor)) is lib.Tensor]
        g = lib.ones(2, requires_grad=True)
        h = g.as_subclass(Sub)
        row += [type(h.grad_fn).__name__, h.requires_grad, h.is_leaf]
        (h * 3).sum().backward()
        row.append(g.grad.tolist())
        p = lib.ones(2).as_subclass(lib.nn.Parameter)
        row += [type(p).__name__, p.requires_grad]
        for bad in (3, int):
            with pytest.raises(TypeError) as info:
                a.as_subclass(bad)
            row.append(str(info.value))
        outs.append(row)
    assert outs[0] == outs[1]


# ---- pin_memory ----

def test_pin_memory_raises_torchs_error_without_an_accelerator():
    got = []
    for lib in LIBS:
        row = []
        for kw in ({}, {"device": "cpu"}):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with pytest.raises(RuntimeError) as info:
                    lib.ones(2).pin_memory(**kw)
            row.append((str(info.value), [c.category for c in w if "pin_memory" in
                                          str(c.message)]))
        row.append(lib.ones(2).is_pinned())
        got.append(row)
    assert got[0] == got[1]


# ---- slice_inverse ----

@pytest.mark.parametrize("shape,index,args", [
    ((10,), (slice(2, 8, 2),), (0, 2, 8, 2)),
    ((4, 6), (slice(None), slice(1, 5)), (1, 1, 5)),
    ((4, 6), (slice(1, 3),), (0, 1, 3)),
    ((3, 4, 5), (slice(None), slice(None), slice(0, 5, 3)), (-1, 0, 5, 3)),
])
def test_slice_inverse_matches_torch(shape, index, args):
    res = []
    for lib in LIBS:
        x = lib.arange(float(np.prod(shape)), dtype=lib.float64).reshape(shape)
        x.requires_grad_()
        base = x * 1
        base.retain_grad()
        v = base[index]
        v.retain_grad()
        r = lib.slice_inverse(v, base, *args)
        m = v.slice_inverse(base, *args)
        g = lib.arange(float(np.prod(shape)), dtype=lib.float64).reshape(shape) + 1
        r.backward(g)
        res.append([r.tolist(), m.tolist(), tuple(r.shape), r.stride(), r.storage_offset(),
                    r.data_ptr() == base.data_ptr(), type(r.grad_fn).__name__,
                    v.grad.tolist(), base.grad.tolist(), x.grad.tolist()])
    assert res[0] == res[1]


def test_slice_inverse_errors_match_torch():
    msgs = []
    for lib in LIBS:
        row = []
        for call in (lambda: lib.slice_inverse(lib.zeros(2), lib.zeros(5), 0, 1, 3),
                     lambda: lib.slice_inverse(lib.zeros(3), lib.zeros(3), 1.5),
                     lambda: lib.slice_inverse(lib.zeros(3), [1, 2, 3], 0)):
            with pytest.raises((RuntimeError, TypeError)) as info:
                call()
            row.append((type(info.value).__name__, str(info.value)))
        msgs.append(row)
    assert msgs[0] == msgs[1]


# ---- torch.layout, torch.classproperty ----

def test_layout_class():
    for lib in LIBS:
        assert isinstance(lib.strided, lib.layout) and isinstance(lib.sparse_coo, lib.layout)
        assert type(lib.strided) is lib.layout and lib.ones(2).layout is lib.strided
    assert repr(ember.strided) == ember_text(repr(torch.strided))


def test_classproperty_matches_torch():
    outs = []
    for lib in LIBS:
        class C:
            base = 3

            @lib.classproperty
            def doubled(cls):
                return cls.base * 2

            @lib.classproperty
            @staticmethod
            def fixed():
                return "s"

            @lib.classproperty
            @classmethod
            def name(cls):
                return cls.__name__

        class D(C):
            base = 5
        outs.append([C.doubled, D.doubled, D().doubled, C.fixed, D.name, C().name])
    assert outs[0] == outs[1]


# ---- torch.fft / torch.special: common_args, factory_common_args, multi_dim_common ----

@pytest.mark.parametrize("ns,name", [("fft", "common_args"), ("fft", "factory_common_args"),
                                     ("special", "common_args"),
                                     ("special", "multi_dim_common")])
def test_doc_fragments_have_torchs_keys(ns, name):
    t, e = getattr(getattr(torch, ns), name), getattr(getattr(ember, ns), name)
    assert type(e) is type(t) is dict
    assert list(e) == list(t)
    assert all(type(v) is str and v for v in e.values())
    # each fragment starts as torch's does (the argument's name, or a newline)
    assert all(v.split(" ", 1)[0] == t[k].split(" ", 1)[0] for k, v in e.items())


def test_fft_docstrings_use_the_fragments():
    for name in ("fft", "rfftn", "ihfft2"):
        doc = getattr(ember.fft, name).__doc__
        assert ember.fft.common_args["input"] in doc and ember.fft.common_args["out"] in doc


# ---- grad_dtype ----

def _outcome(fn):
    try:
        r = fn()
    except Exception as err:  # noqa: BLE001 (compare whatever both raise)
        return (type(err).__name__, str(err))
    if hasattr(r, "dtype") and hasattr(r, "tolist"):
        return ("tensor", str(r.dtype).split(".")[-1], r.tolist())
    return ("value", str(r).split(".")[-1])


def test_grad_dtype_matches_torch():
    outs = []
    for lib in LIBS:
        f64 = lib.float64
        row = []
        a = lib.ones(3, requires_grad=True)
        row.append(_outcome(lambda: a.grad_dtype))
        a.grad_dtype = f64
        row.append(_outcome(lambda: a.grad_dtype))
        (a * 2).sum().backward()
        (a * 3).sum().backward()
        row.append(_outcome(lambda: a.grad))
        b = lib.ones(3, requires_grad=True)
        b.grad_dtype = None
        row.append(_outcome(lambda: b.grad_dtype))
        b.backward(lib.ones(3, dtype=f64))
        row.append(_outcome(lambda: b.grad))
        c = lib.ones(3, requires_grad=True)
        c.backward(lib.ones(3, dtype=f64))
        row.append(_outcome(lambda: c.grad))
        nl = a * 2
        row.append(_outcome(lambda: nl.grad_dtype))
        row.append(_outcome(lambda: setattr(nl, "grad_dtype", f64)))
        x = lib.ones(2)
        row.append(_outcome(lambda: setattr(x, "grad_dtype", 3)))
        x.grad_dtype = lib.float16
        row.append(_outcome(lambda: x.grad_dtype))
        row.append(_outcome(lambda: lib.ones(2, dtype=lib.int64).grad_dtype))
        e = lib.ones(2, requires_grad=True)
        e.grad_dtype = f64
        row.append(_outcome(lambda: setattr(e, "grad", lib.ones(2))))
        e.grad = lib.ones(2, dtype=f64)
        row.append(_outcome(lambda: e.grad))
        f = lib.ones(2, requires_grad=True)
        row.append(_outcome(lambda: setattr(f, "grad", lib.ones(2, dtype=f64))))
        (f * 2).sum().backward()
        row.append(_outcome(lambda: setattr(f, "grad_dtype", f64)))
        f.grad = None
        f.grad_dtype = f64
        row.append(_outcome(lambda: f.grad_dtype))
        k = lib.ones(2, requires_grad=True)
        k.grad_dtype = f64
        seen = []
        k.register_hook(lambda g: seen.append(str(g.dtype).split(".")[-1]))
        row.append(_outcome(lambda: lib.autograd.grad((k * 2).sum(), k)[0]))
        row.append(seen)
        m = lib.ones(2, requires_grad=True)
        row.append(_outcome(lambda: lib.autograd.grad(m, m, lib.ones(2, dtype=f64))[0]))
        outs.append(row)
    assert outs[0] == outs[1]


# ---- torch.get_device_module / torch.cpu ----

def test_get_device_module_matches_torch():
    for dev in ("cpu", "cpu:0", None, "cuda"):
        t = torch.get_device_module(dev if not isinstance(dev, str) else torch.device(dev))
        e = ember.get_device_module(dev if not isinstance(dev, str) else ember.device(dev))
        assert e.__name__ == ember_text(t.__name__)
        assert ember.get_device_module(dev).__name__ == ember_text(
            torch.get_device_module(dev).__name__)
    for bad in ("meta", 3):
        msgs = []
        for lib in LIBS:
            with pytest.raises(RuntimeError) as info:
                lib.get_device_module(bad)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


def test_cpu_module_matches_torch():
    outs = []
    for lib in LIBS:
        m = lib.cpu
        s = m.Stream()
        before = m.current_stream()
        row = [m.device_count(), m.is_available(), m.is_initialized(), m.current_device(),
               m.synchronize(), m.set_device("cpu"), before is m.current_stream()]
        with m.stream(s) as got:
            row += [got, m.current_stream() is s]
        row.append(m.current_stream() is before)
        with m.stream(None):
            row.append(m.current_stream() is before)
        e = m.Event()
        row += [e.query(), e.record(), e.synchronize(), e.wait(), s.wait_stream(before),
                s.wait_event(e)]
        outs.append(row)
    assert outs[0] == outs[1]


# ---- torch.embedding_bag (ATen's form, with its four results) ----

EB_CASES = [
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 0)),
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 1)),
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 2)),
    ("f64", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 0)),
    ("f32T", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 0)),
    ("f32", {"int32": True}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 1)),
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 0, False, None, False, 2)),
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 1, False, None, False, -1)),
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 2, False, None, False, 3)),
    ("f64", {}, [0, 2, 1, 3, 3], [0, 2, 5], (False, 1, False, None, True)),
    ("f32", {}, [0, 2, 1, 3, 3], [0, 2, 5], (False, 2, False, None, True)),
    ("f32", {"psw": True}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 0)),
    ("f64", {"psw": True}, [0, 2, 1, 3, 3], [0, 2, 2], (False, 0)),
    ("f32", {"2d": True}, [0, 2, 1, 3], [0, 1], (False, 0)),
    ("f32", {}, [], [0, 0], (False, 2)),
    ("f32", {}, [2, 2, 1, 0], [0, 1], (True, 1)),
]


def _eb_inputs(lib, kind, opts, idx, off):
    w = lib.arange(12., dtype=lib.float64).reshape(4, 3)
    w = (w * 7 % 5).to(lib.float32 if kind != "f64" else lib.float64)
    if kind == "f32T":
        w = w.t().contiguous().t()
    w.requires_grad_()
    it = lib.int32 if opts.get("int32") else lib.int64
    i = lib.tensor(idx, dtype=it)
    if opts.get("2d"):
        i = i.reshape(2, 2)
    o = lib.tensor(off, dtype=it)
    return w, i, o


@pytest.mark.parametrize("case", range(len(EB_CASES)))
def test_embedding_bag_matches_torch(case):
    kind, opts, idx, off, rest = EB_CASES[case]
    res, grads = [], []
    for lib in LIBS:
        w, i, o = _eb_inputs(lib, kind, opts, idx, off)
        args = list(rest)
        if opts.get("psw"):
            args += [False, lib.arange(1., 6., dtype=w.dtype)]
        outs = lib.embedding_bag(w, i, o, *args)
        row = [(r.tolist(), str(r.dtype).split(".")[-1], tuple(r.shape)) for r in outs]
        row.append(outs[0].requires_grad)
        # (torch's backward fails in index_select for an empty max bag and 2-D indices)
        if idx and not opts.get("2d"):
            (outs[0] * lib.arange(1., 1. + outs[0].numel(), dtype=w.dtype).reshape(
                outs[0].shape)).sum().backward()
            grads.append(np.array(w.grad.tolist()))
        res.append(row)
    assert res[0] == res[1]
    if grads:
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-6)


def test_embedding_bag_errors_match_torch():
    msgs = []
    for lib in LIBS:
        w, i, o = _eb_inputs(lib, "f32", {}, [0, 2, 1, 3, 3], [0, 2, 2])
        row = []
        for call in (lambda: lib.embedding_bag(w, i, o, False, 3),
                     lambda: lib.embedding_bag(w, i, o, False, 1, False, lib.ones(5)),
                     lambda: lib.embedding_bag(w, i.float(), o, False, 0),
                     lambda: lib.embedding_bag(w, lib.tensor([0, 9]), lib.tensor([0]), False, 0),
                     lambda: lib.embedding_bag(w, i, None, False, 0),
                     lambda: lib.embedding_bag(w, i, o, False, 0, False,
                                               lib.ones(5, dtype=lib.float64))):
            with pytest.raises((RuntimeError, TypeError)) as info:
                call()
            row.append((type(info.value).__name__, str(info.value)))
        msgs.append(row)
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("mode,scale", [("max", False), ("sum", True), ("mean", True)])
def test_functional_embedding_bag_ties_and_freq_scaling_match_torch(mode, scale):
    """F.embedding_bag: a max's gradient goes to the first row holding it (ties included);
    scale_grad_by_freq divides each row's gradient by its count in the batch."""
    res = []
    for lib in LIBS:
        w = lib.tensor([[1., 5.], [3., 5.], [3., 0.], [2., 2.]], requires_grad=True)
        # (the largest index is the most frequent: where a larger index is rarer than the
        # one before it, torch's CPU count gives it that one's frequency, a quirk ember
        # does not copy)
        idx, off = ([0, 1, 2, 1, 1], [0, 2, 2]) if mode == "max" else ([3, 3, 1, 0, 3], [0, 1, 4])
        out = lib.nn.functional.embedding_bag(lib.tensor(idx), w, lib.tensor(off), mode=mode,
                                              scale_grad_by_freq=scale)
        (out * lib.tensor([[1., 2.], [3., 4.], [5., 6.]])).sum().backward()
        res.append((out.tolist(), np.array(w.grad.tolist())))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)


def test_module_share_memory_matches_torch():
    outs = []
    for lib in LIBS:
        m = lib.nn.BatchNorm1d(3)
        m(lib.ones(4, 3)).sum().backward()
        before = [t.is_shared() for t in list(m.parameters()) + list(m.buffers())]
        r = m.share_memory()
        after = [t.is_shared() for t in list(m.parameters()) + list(m.buffers())]
        outs.append((before, r is m, after, [p.grad.is_shared() for p in m.parameters()]))
        if hasattr(os, "fork"):
            pid = os.fork()
            if pid == 0:
                try:
                    with lib.no_grad():
                        m.weight.fill_(7)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            assert m.weight.tolist() == [7., 7., 7.]
    assert outs[0] == outs[1]
