"""ember.save / ember.load against torch.save / torch.load, the safety of loading, atomic
saves, loading real torch checkpoints, and safetensors."""
import collections
import fractions
import io
import os
import pickle
import sys
import zipfile

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from ember import nn
from ember import serialization as S

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def pair(arr, dtype):
    """The same values as an ember and a torch tensor."""
    a = np.array(arr, dtype=np.float64)
    # empty() + copy_ gives contiguous strides (tensor(ndarray) of an empty array may not)
    t = torch.empty(a.shape, dtype=getattr(torch, dtype)).copy_(torch.from_numpy(a))
    e = ember.empty(a.shape, dtype=getattr(ember, dtype)).copy_(ember.from_numpy(a))
    return e, t


def assert_tensor_like(e, t, storage=True):
    assert isinstance(e, ember.Tensor)
    assert e.dtype.name == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert e.requires_grad == t.requires_grad
    assert isinstance(e, nn.Parameter) == isinstance(t, torch.nn.Parameter)
    if storage:
        assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(np.asarray(e.detach().float().tolist()),
                                  np.asarray(t.detach().float().tolist()))


def assert_like(e, t):
    if isinstance(t, torch.Tensor):
        assert_tensor_like(e, t)
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            assert_like(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t)
        for a, b in zip(e, t):
            assert_like(a, b)
    elif isinstance(t, torch.dtype):
        assert e is getattr(ember, str(t).split(".")[-1])
    else:
        assert type(e) is type(t) and e == t


def roundtrip_both(e_obj, t_obj):
    ef, tf = io.BytesIO(), io.BytesIO()
    ember.save(e_obj, ef)
    torch.save(t_obj, tf)
    ef.seek(0)
    tf.seek(0)
    return ember.load(ef), torch.load(tf)


# ---------------------------------------------------------------- round trips vs torch
@st.composite
def views(draw):
    """A base tensor and a few views of it (slices with steps, transposes, expands)."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    ops = draw(st.lists(st.sampled_from(["t", "step", "narrow", "flat", "idx", "expand"]),
                        max_size=3))
    return dtype, shape, ops


def apply_views(x, shape, ops):
    out = [x]
    for op in ops:
        v = out[-1]
        if op == "t" and v.dim() >= 2:
            out.append(v.transpose(0, 1))
        elif op == "step" and v.dim() >= 1:
            out.append(v[::2])
        elif op == "narrow" and v.dim() >= 1 and v.shape[0] > 1:
            out.append(v[1:])
        elif op == "flat" and v.is_contiguous():
            out.append(v.reshape(-1))
        elif op == "idx" and v.dim() >= 1 and v.shape[0] > 0:
            out.append(v[0])
        elif op == "expand":
            out.append(v.unsqueeze(0).expand(2, *v.shape))
    return out


@settings(max_examples=40, deadline=None)
@given(views())
def test_shared_views_roundtrip_like_torch(spec):
    dtype, shape, ops = spec
    arr = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7
    e, t = pair(arr, dtype)
    ev, tv = apply_views(e, shape, ops), apply_views(t, shape, ops)
    el, tl = roundtrip_both({"views": ev}, {"views": tv})
    assert_like(el, tl)
    # memory is shared again: a write through the base shows in every view, as in torch
    if el["views"][0].numel():
        el["views"][0].view(-1)[0] = 1
        tl["views"][0].view(-1)[0] = 1
        assert_like(el, tl)


def test_nested_structure_roundtrip_like_torch():
    e1, t1 = pair(np.arange(6.0).reshape(2, 3), "float32")
    e2, t2 = pair([1, 2, 3], "int64")
    eobj = collections.OrderedDict(
        a=[e1, (e2, 3, 2.5, "s", None, True, False)], b={"x": {"y": e1.t()}},
        p=nn.Parameter(ember.ones(2)), r=ember.zeros(3, requires_grad=True),
        d=[ember.float16, ember.bfloat16, ember.int8], n=-(2 ** 40), bytes=b"\x00\xff",
        c=complex(1, 2), set={1, 2}, empty=ember.zeros(0, 3), s0=ember.tensor(3.5))
    tobj = collections.OrderedDict(
        a=[t1, (t2, 3, 2.5, "s", None, True, False)], b={"x": {"y": t1.t()}},
        p=torch.nn.Parameter(torch.ones(2)), r=torch.zeros(3, requires_grad=True),
        d=[torch.float16, torch.bfloat16, torch.int8], n=-(2 ** 40), bytes=b"\x00\xff",
        c=complex(1, 2), set={1, 2}, empty=torch.zeros(0, 3), s0=torch.tensor(3.5))
    el, tl = roundtrip_both(eobj, tobj)
    assert_like(el, tl)
    assert el["a"][0].untyped_storage() is el["b"]["x"]["y"].untyped_storage()


def test_module_state_dict_roundtrip(tmp_path):
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    path = tmp_path / "m.pt"
    ember.save(m.state_dict(), path)
    sd = ember.load(path)
    m2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m2.load_state_dict(sd)
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and a.tolist() == b.tolist()


# ---------------------------------------------------------------- torch.save -> ember.load
def test_load_real_torch_checkpoint(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3),
                                torch.nn.Flatten(), torch.nn.Linear(12, 2))
    sd = model.state_dict()
    path = tmp_path / "torch_model.pt"
    torch.save(sd, path)
    got = ember.load(path)
    assert type(got) is collections.OrderedDict and list(got) == list(sd)
    for k in sd:
        assert_tensor_like(got[k], sd[k])
    assert got._metadata == sd._metadata
    extra = {"h": torch.arange(5).half(), "bf": torch.randn(3).bfloat16(),
             "i": torch.arange(4, dtype=torch.int32), "b": torch.tensor([True, False]),
             "u": torch.arange(3, dtype=torch.uint8), "w": sd["3.weight"],
             "wt": sd["3.weight"].t(), "p": torch.nn.Parameter(torch.ones(2)),
             "dt": torch.float64, "size": torch.Size([2, 3]), "n": 7}
    f = io.BytesIO()
    torch.save(extra, f)
    f.seek(0)
    got = ember.load(f)
    for k, v in extra.items():
        if isinstance(v, torch.Tensor):
            assert_tensor_like(got[k], v)
    assert got["dt"] is ember.float64 and tuple(got["size"]) == (2, 3) and got["n"] == 7
    assert got["w"].untyped_storage() is got["wt"].untyped_storage()
    assert "torch" in sys.modules   # (the test imported it; ember.load itself never does)


def test_ember_load_does_not_import_torch(tmp_path):
    import subprocess
    path = tmp_path / "t.pt"
    torch.save({"w": torch.ones(2)}, path)
    code = ("import sys, ember; d = ember.load(sys.argv[1]); "
            "assert 'torch' not in sys.modules; print(d['w'].tolist())")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(torch.ones(2).tolist())


# ---------------------------------------------------------------- safety
class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _zip_with_pickle(payload):
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")
    f.seek(0)
    return f


def test_refuses_code_execution_like_torch(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"x": _Evil(marker)}, protocol=2)
    with pytest.raises(pickle.UnpicklingError) as te:
        torch.load(_zip_with_pickle(payload), weights_only=True)
    with pytest.raises(type(te.value), match="weights_only"):
        ember.load(_zip_with_pickle(payload))
    assert not marker.exists()
    # a file ember.save wrote with a non-allowed object inside is refused the same way
    f = io.BytesIO()
    ember.save({"frac": fractions.Fraction(1, 3)}, f)
    f.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="fractions.Fraction"):
        ember.load(f)
    f.seek(0)
    assert ember.load(f, weights_only=False) == {"frac": fractions.Fraction(1, 3)}


def test_out_of_bounds_layout_is_refused():
    # a hand-made archive whose tensor claims more elements than its storage holds
    class Ref:
        def __reduce__(self):
            return (S._rebuild_tensor, (_Stor(), 0, (10,), (1,), False))

    class _Stor:
        pass

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", "float32", "0", "cpu", 4) if isinstance(obj, _Stor) else None
    buf = io.BytesIO()
    P(buf, protocol=4).dump({"t": Ref()})
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as zf:
        zf.writestr("archive/data.pkl", buf.getvalue())
        zf.writestr("archive/data/0", np.zeros(4, np.float32).tobytes())
    f.seek(0)
    with pytest.raises(RuntimeError, match="does not fit"):
        ember.load(f)


@pytest.mark.parametrize("cut", [0, 10, 0.5, -30])
def test_truncated_file_raises_like_torch(tmp_path, cut):
    tpath, epath = tmp_path / "t.pt", tmp_path / "e.pt"
    torch.save({"w": torch.arange(100.0)}, tpath)
    ember.save({"w": ember.arange(100.0)}, epath)
    for path in (tpath, epath):
        data = path.read_bytes()
        n = int(len(data) * cut) if isinstance(cut, float) else cut % len(data)
        path.write_bytes(data[:n])
    with pytest.raises(Exception) as te:
        torch.load(tpath)
    with pytest.raises(type(te.value)):
        ember.load(epath)
    with pytest.raises(type(te.value)):   # and torch's truncated file too
        ember.load(tpath)


# ---------------------------------------------------------------- atomic saves
def _no_temp_files(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def test_failed_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save({"w": ember.arange(4.0)}, path)
    before = path.read_bytes()

    real = S._write_archive

    def crash_midway(obj, fh, protocol):
        real(obj, fh, protocol)
        fh.seek(0)
        fh.write(b"half-written garbage")
        raise OSError("disk full")
    monkeypatch.setattr(S, "_write_archive", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"w": ember.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and _no_temp_files(tmp_path)
    assert ember.load(path)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]

    # an object that cannot be pickled fails before anything is replaced
    with pytest.raises(Exception):
        ember.save({"f": lambda: 0}, path)
    assert path.read_bytes() == before and _no_temp_files(tmp_path)

    # fsync failing also leaves the old file
    def bad_fsync(fd):
        raise OSError("fsync failed")
    monkeypatch.setattr(S.os, "fsync", bad_fsync)
    with pytest.raises(OSError, match="fsync"):
        ember.save({"w": ember.ones(2)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and _no_temp_files(tmp_path)


def test_save_to_file_object_and_torch_compatible_layout():
    f = io.BytesIO()
    ember.save({"w": ember.ones(3)}, f)
    names = zipfile.ZipFile(io.BytesIO(f.getvalue())).namelist()
    assert "archive/data.pkl" in names and "archive/data/0" in names
    f.seek(0)
    assert ember.load(f, map_location="cpu")["w"].tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- safetensors
@pytest.mark.parametrize("dtype", DTYPES)
def test_safetensors_interop_with_torch(tmp_path, dtype):
    pytest.importorskip("safetensors")
    from safetensors.torch import save_file, load_file
    arr = (np.arange(12).reshape(3, 4) % 5)
    e, t = pair(arr, dtype)
    epath, tpath = tmp_path / "e.safetensors", tmp_path / "t.safetensors"
    S.save_safetensors({"a": e, "b": e.t()}, epath)
    save_file({"a": t, "b": t.t().contiguous()}, tpath)
    from_ember = load_file(epath)
    for k in ("a", "b"):
        assert_tensor_like(S.load_safetensors(tpath)[k], from_ember[k])
        assert_tensor_like(S.load_safetensors(epath)[k], from_ember[k])


def test_safetensors_numpy_interop(tmp_path):
    pytest.importorskip("safetensors")
    from safetensors.numpy import save_file, load_file
    path = tmp_path / "n.safetensors"
    save_file({"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, path)
    got = S.load_safetensors(path)["x"]
    assert got.dtype is ember.float32 and got.tolist() == [[0, 1, 2], [3, 4, 5]]
    S.save_safetensors({"y": ember.arange(3)}, path)
    assert load_file(path)["y"].tolist() == [0, 1, 2]


def test_safetensors_missing_package_is_a_clear_import_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        S.save_safetensors({"a": ember.ones(1)}, tmp_path / "x.safetensors")
