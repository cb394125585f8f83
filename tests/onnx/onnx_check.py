"""Shared check of tests/onnx: export an ember module, validate the file with
onnx.checker, and compare onnxruntime's outputs with ember eager and torch eager (the same
module built with torch.nn, given the same weights), at the export batch size and at
another size along the dynamic axis."""
import io

import numpy as np
import pytest
import torch

import ember

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def copy_state(t_mod, e_mod):
    """Load torch module `t_mod`'s state_dict into ember module `e_mod`."""
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in t_mod.state_dict().items()}
    e_mod.load_state_dict(state)


def both(make):
    """make(lib) builds a module with lib.nn; returns (ember module, torch module), eval,
    with torch's weights in both."""
    torch.manual_seed(0)
    t_mod = make(torch).eval()
    e_mod = make(ember).eval()
    copy_state(t_mod, e_mod)
    return e_mod, t_mod


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _flat(item)]
    return [] if x is None else [x]


def session(data):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def export_bytes(model, args, **kw):
    f = io.BytesIO()
    ember.onnx.export(model, args, f, **kw)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_model_from_string(data), full_check=True)
    return data


def run_ort(sess, arrays):
    feed = {i.name: a for i, a in zip(sess.get_inputs(), arrays)}
    return sess.run(None, feed)


def check(make, inputs, dynamic=None, other=None, rtol=1e-4, atol=1e-5, opset=None,
          names=None):
    """`inputs`: list of numpy arrays; `dynamic`: {input position: {dim: label}};
    `other`: the inputs at another size along the dynamic dims. Returns the file's bytes."""
    e_mod, t_mod = both(make)
    names = names or [f"in{i}" for i in range(len(inputs))]
    axes = {names[i]: d for i, d in (dynamic or {}).items()}
    data = export_bytes(e_mod, tuple(ember.tensor(a) for a in inputs), input_names=names,
                        dynamic_axes=axes or None, opset_version=opset)
    proto = onnx.load_model_from_string(data)
    assert proto.opset_import[0].version == (opset or 17)
    sess = session(data)
    for arrays in [inputs] + ([other] if other is not None else []):
        got = run_ort(sess, arrays)
        with torch.no_grad():
            want_t = _flat(t_mod(*[torch.tensor(a) for a in arrays]))
        want_e = _flat(e_mod(*[ember.tensor(a) for a in arrays]))
        assert len(got) == len(want_t) == len(want_e)
        for g, t, e in zip(got, want_t, want_e):
            assert g.shape == tuple(t.shape)
            np.testing.assert_allclose(g, t.numpy(), rtol=rtol, atol=atol)
            np.testing.assert_allclose(g, e.detach().numpy(), rtol=rtol, atol=atol)
    return data


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
