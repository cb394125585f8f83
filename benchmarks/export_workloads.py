"""export_workloads: ember.export beside torch.export (issue 15's performance rows).

For the examples' GPT (4 layers, 128 wide, context 64; batch 8 of 64 tokens) and ResNet
(CIFAR-sized, batch 8 of 3x32x32), each in eval mode:
- export time (``export(model, (x,))``), and load time of the saved program (ember's
  format; torch.export.save/.pt2 for torch);
- inference: eager, the *loaded* program's ``.module()``, and that module compiled
  (``ember.compile(ep.module())``, C backend), beside the model compiled directly; and, when
  onnxruntime is installed (a test-only dependency: imported only then), onnxruntime running
  the model's ``ember.onnx.export`` file. torch's column is torch eager for the eager, the
  compiled and the onnxruntime rows and ``torch.export``'s loaded module for the exported row
  (torch.compile's build is left out: its time is compile_time's subject).

Run: ``python -m benchmarks export_workloads --threads 1``. Targets (issue 15): GPT export
under 2 s; the exported forward within 10% of eager ember; exported+compiled at compiled speed.
"""
import importlib.util
import io

BATCH = 8


def _is_ember(torch):
    return torch.__name__ == "ember"


def _gpt(torch):
    if _is_ember(torch):
        from ember.examples.gpt import GPT
        m = GPT()
    else:
        m = _torch_model(torch, "gpt")
    x = torch.randint(0, 256, (BATCH, 64))
    return m.eval(), x


def _cnn(torch):
    if _is_ember(torch):
        from ember.examples.cnn import ResNet
        m = ResNet()
    else:
        m = _torch_model(torch, "cnn")
    return m.eval(), torch.randn(BATCH, 3, 32, 32)


def _torch_model(torch, which):
    """The example's model class run with torch: the example files are plain PyTorch code
    under ``import ember as torch``, so they are loaded again with torch in its place (read
    from the file, so that torch's benchmark worker never imports ember)."""
    from .train_workloads import example_module
    mod = example_module(torch, which)
    return mod.GPT() if which == "gpt" else mod.ResNet()


def _export_api(torch):
    return torch.export


def _cases_for(torch, name, build):
    torch.manual_seed(0)
    model, x = build(torch)
    ex = _export_api(torch)
    with torch.no_grad():
        ep = ex.export(model, (x,))
    buf = io.BytesIO()
    ex.save(ep, buf)
    data = buf.getvalue()
    loaded = ex.load(io.BytesIO(data))
    exported = loaded.module()
    ort = None
    if _is_ember(torch):
        compiled = torch.compile(loaded.module())
        compiled_model = torch.compile(model)
        if _HAVE_ORT:
            ort = _ort_runner(torch, model, x)
    else:
        compiled = compiled_model = model   # see the module docstring: torch eager here
        if _HAVE_ORT:
            ort = model

    def export_time():
        with torch.no_grad():
            return ex.export(model, (x,))

    def load_time():
        return ex.load(io.BytesIO(data))

    def run(f):
        def go():
            with torch.no_grad():
                return f(x)
        return go
    run(compiled)()
    run(compiled_model)()
    return {
        f"{name} export": export_time,
        f"{name} load saved program": load_time,
        f"{name} forward eager": run(model),
        f"{name} forward exported": run(exported),
        f"{name} forward exported+compiled": run(compiled),
        f"{name} forward compiled (not exported)": run(compiled_model),
        **({f"{name} forward onnxruntime": run(ort)} if ort is not None else {}),
    }


# onnxruntime and onnx are test-only dependencies: the row is there only when both are
_HAVE_ORT = all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def _ort_runner(ember, model, x):
    """A function running `model`'s ONNX export (ember.onnx.export) in onnxruntime, at
    ember's thread count, on `x` (as NumPy, outputs back as NumPy)."""
    import onnxruntime
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf, input_names=["x"])
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = ember.get_num_threads()
    opts.inter_op_num_threads = 1
    sess = onnxruntime.InferenceSession(buf.getvalue(), opts,
                                        providers=["CPUExecutionProvider"])

    def run(inp):
        return sess.run(None, {"x": inp.numpy()})
    return run


def cases(torch):
    out = _cases_for(torch, "GPT", _gpt)
    out.update(_cases_for(torch, "ResNet", _cnn))
    return out


UNIT = "ms"
SCALE = 1e3
LOWER_IS_BETTER = True
