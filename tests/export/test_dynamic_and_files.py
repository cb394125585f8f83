"""Dynamic shapes (Dim ranges, constraint errors named like torch's) and the file format
(save/load in a fresh process that imports only ember, newer versions refused, corrupt files
a clear error)."""
import io
import subprocess
import sys
import zipfile
import json

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.export as E


class Attn(enn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = enn.Linear(8, 24)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, 2, C // 2).transpose(1, 2)
        k = k.view(B, T, 2, C // 2).transpose(1, 2)
        v = v.view(B, T, 2, C // 2).transpose(1, 2)
        y = enn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


def test_dynamic_dims_run_at_other_sizes_and_check_ranges():
    m = Attn()
    batch, seq = E.Dim("batch", min=2, max=6), E.Dim("seq", max=10)
    ep = E.export(m, (ember.randn(2, 4, 8),), dynamic_shapes={"x": {0: batch, 1: seq}})
    assert {k: (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {
        "s0": (2, 6), "s1": (2, 10)}
    mm = ep.module()
    for shape in [(3, 5, 8), (6, 10, 8), (2, 2, 8)]:
        x = ember.randn(*shape)
        np.testing.assert_allclose(mm(x).detach().numpy(), m(x).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    # torch's message for a size out of range, on the same spec
    tm = torch.nn.Linear(8, 8)
    tep = torch.export.export(tm, (torch.randn(2, 8),),
                              dynamic_shapes={"input": {0: torch.export.Dim("b", max=6)}})
    with pytest.raises(AssertionError, match=r"size\(\)\[0\] <= 6"):
        tep.module()(torch.randn(7, 8))
    with pytest.raises(AssertionError, match=r"x.size\(\)\[0\] <= 6"):
        mm(ember.randn(7, 4, 8))
    with pytest.raises(AssertionError, match=r"x.size\(\)\[2\] == 8"):
        mm(ember.randn(2, 4, 9))


def test_auto_and_tuple_spec():
    m = enn.Linear(4, 3)
    ep = E.export(m, (ember.randn(3, 4),), dynamic_shapes=({0: E.Dim.AUTO},))
    x = ember.randn(7, 4)
    np.testing.assert_allclose(ep.module()(x).detach().numpy(), m(x).detach().numpy(),
                               rtol=1e-6)


def test_specialized_dim_raises_constraint_error_like_torch():
    class S(enn.Module):
        def forward(self, x):
            return x.view(4, -1)          # specializes dim 0

    class TS(torch.nn.Module):
        def forward(self, x):
            return x.view(4, -1)
    tb = torch.export.Dim("batch", max=8)
    with pytest.raises(torch._dynamo.exc.UserError, match=r"Constraints violated \(batch\)"):
        torch.export.export(TS(), (torch.randn(4, 3),), dynamic_shapes=({0: tb},))
    eb = E.Dim("batch", max=8)
    with pytest.raises(E.UserError, match=r"Constraints violated \(batch\)") as ei:
        E.export(S(), (ember.randn(4, 3),), dynamic_shapes=({0: eb},))
    msg = str(ei.value)
    assert "specialized it to be a constant (4)" in msg
    assert "test_dynamic_and_files.py" in msg


def test_auto_dim_the_program_specializes_becomes_static():
    class S(enn.Module):
        def forward(self, x):
            return x.view(4, -1) * 2
    tep = torch.export.export(torch.nn.Flatten(0), (torch.randn(4, 3),),
                              dynamic_shapes=({0: torch.export.Dim.AUTO},))
    assert len(tep.range_constraints) == 1                    # torch keeps what it can
    ep = E.export(S(), (ember.randn(4, 3),), dynamic_shapes=({0: E.Dim.AUTO},))
    assert ep.range_constraints == {}
    with pytest.raises(AssertionError, match=r"x.size\(\)\[0\] == 4"):
        ep.module()(ember.randn(5, 3))
    with pytest.raises(E.ConstraintViolationError):
        E.export(S(), (ember.randn(4, 3),), dynamic_shapes=({0: E.Dim.DYNAMIC},))


def test_size_branch_inside_the_range_is_a_constraint_error():
    class SB(enn.Module):
        def forward(self, x):
            if x.shape[0] > 6:            # the line the error names
                return x * 2
            return x * 3
    with pytest.raises(E.ConstraintViolationError,
                       match=r"(?s)Not all values of batch.*batch = \d+ the.*test_dynamic_and_"):
        E.export(SB(), (ember.randn(4, 3),), dynamic_shapes=({0: E.Dim("batch", max=16)},))
    ep = E.export(SB(), (ember.randn(4, 3),), dynamic_shapes=({0: E.Dim("batch", max=6)},))
    np.testing.assert_allclose(ep.module()(ember.ones(5, 3)).numpy(), 3.0)


def test_broadcast_against_fixed_size_is_a_constraint_error():
    class B(enn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bias", ember.zeros(4, 3))

        def forward(self, x):
            return x + self.bias
    with pytest.raises(E.ConstraintViolationError, match="batch"):
        E.export(B(), (ember.randn(4, 3),), dynamic_shapes={"x": {0: E.Dim("batch")}})


def _roundtrip_program():
    m = enn.Sequential(enn.Conv2d(2, 4, 3, padding=1), enn.BatchNorm2d(4), enn.ReLU(),
                       enn.Flatten(), enn.Linear(4 * 5 * 5, 3)).eval()
    x = ember.randn(2, 2, 5, 5)
    ep = E.export(m, (x,), dynamic_shapes=({0: E.Dim("batch", max=16)},))
    return m, x, ep


def test_save_load_in_fresh_process(tmp_path):
    m, x, ep = _roundtrip_program()
    path = tmp_path / "m.ept"
    E.save(ep, str(path))
    x3 = ember.randn(3, 2, 5, 5)
    np.save(tmp_path / "x.npy", x3.numpy())
    np.save(tmp_path / "ref.npy", m(x3).detach().numpy())
    code = (
        "import sys, numpy as np, ember\n"
        f"ep = ember.export.load({str(path)!r})\n"
        "assert 'torch' not in sys.modules\n"
        f"x = ember.tensor(np.load({str(tmp_path / 'x.npy')!r}))\n"
        "out = ep.module()(x).detach().numpy()\n"
        f"np.testing.assert_allclose(out, np.load({str(tmp_path / 'ref.npy')!r}), rtol=1e-5,"
        " atol=1e-6)\n"
        "print('ok', sorted(ep.range_constraints), ep.graph_signature.parameters[0])\n")
    env = {"PYTHONPATH": ember.__file__.rsplit("/ember/", 1)[0], "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "['s0']", "0.weight"]


def test_load_to_file_object_and_state():
    m, x, ep = _roundtrip_program()
    buf = io.BytesIO()
    E.save(ep, buf)
    buf.seek(0)
    ep2 = E.load(buf)
    assert list(ep2.state_dict) == list(ep.state_dict)
    for k in ep.state_dict:
        np.testing.assert_array_equal(ep2.state_dict[k].detach().numpy(),
                                      ep.state_dict[k].detach().numpy())
    assert str(ep2.graph_signature) == str(ep.graph_signature)
    np.testing.assert_allclose(ep2.module()(x).detach().numpy(), m(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def _rewrite(src, name, fn):
    out = io.BytesIO()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            zout.writestr(item, fn(data) if item == name else data)
    out.seek(0)
    return out


def test_newer_version_refused_and_corrupt_file_clear():
    _, _, ep = _roundtrip_program()
    buf = io.BytesIO()
    E.save(ep, buf)
    raw = buf.getvalue()

    def bump(data):
        d = json.loads(data)
        d["format_version"] = E.FORMAT_VERSION + 1
        return json.dumps(d).encode()
    with pytest.raises(E.ExportFormatError, match="newer"):
        E.load(_rewrite(io.BytesIO(raw), "manifest.json", bump))
    with pytest.raises(E.ExportFormatError, match="corrupt or truncated"):
        E.load(io.BytesIO(raw[: len(raw) // 2]))
    with pytest.raises(E.ExportFormatError, match="not a valid"):
        E.load(io.BytesIO(b"garbage" * 10))
    # an op name that is not an ember op never resolves
    def evil(data):
        return data.replace(b'"ember.ops.linear"', b'"os.system"')
    with pytest.raises(E.ExportFormatError, match="unknown op"):
        E.load(_rewrite(io.BytesIO(raw), "graph.json", evil))
    # a node name that is not an identifier is refused (it would reach generated code)
    def bad_name(data):
        d = json.loads(data)
        d["nodes"][-2]["name"] = "x = __import__('os')"
        return json.dumps(d).encode()
    with pytest.raises(E.ExportFormatError, match="bad node name"):
        E.load(_rewrite(io.BytesIO(raw), "graph.json", bad_name))


def test_loaded_program_compiles():
    m, x, ep = _roundtrip_program()
    buf = io.BytesIO()
    E.save(ep, buf)
    buf.seek(0)
    compiled = ember.compile(E.load(buf).module())
    with ember.no_grad():
        for batch in (2, 2, 5):
            xb = ember.randn(batch, 2, 5, 5)
            np.testing.assert_allclose(compiled(xb).numpy(), m(xb).numpy(), rtol=1e-4,
                                       atol=1e-5)
    assert compiled._compiled.variants and not compiled._compiled.breaks
