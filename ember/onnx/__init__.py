"""ember.onnx: export a model to ONNX (torch.onnx.export's signature), and load an ONNX file
back as a runnable ember Module (for inference).

    ember.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    m = ember.onnx.load("model.onnx")          # an nn.Module: m(x) runs the ONNX graph
    y = m(x)

The `onnx` package is needed only when you call export or load (``pip install onnx``, or
the ``ember[onnx]`` extra); `import ember.onnx` works without it. The exporter never needs
onnxruntime. Each op's ONNX mapping is on its OpDef (``onnx=``, read by exporter.py).
"""
import re

from .errors import OnnxExporterError, UnsupportedOperatorError

__all__ = ["export", "load", "OnnxExporterError", "UnsupportedOperatorError",
           "TrainingMode", "is_in_onnx_export", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic"]

_exporting = [False]


class TrainingMode:
    """torch.onnx.TrainingMode: EVAL (the default) exports in eval mode (Dropout removed,
    BatchNorm with its running statistics), TRAINING in train mode, PRESERVE as it is."""
    EVAL, PRESERVE, TRAINING = 0, 1, 2


def is_in_onnx_export():
    """True while ember.onnx.export is tracing the model."""
    return _exporting[0]


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ember.onnx needs the 'onnx' package: pip install onnx "
                          "(or pip install 'ember[onnx]')") from None
    return onnx


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, custom_translation_table=None, report=False, optimize=True,
           verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=TrainingMode.EVAL, operator_export_type=None, do_constant_folding=True,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True):
    """Export `model` (a Module or a function) called on `args` to ONNX file `f` (a path or
    a binary file object; None: not written). Returns the ModelProto.

    opset_version: 17 (default) to 21, written exactly. dynamic_axes: {name: {dim: label}}
    or {name: [dims]} for inputs and outputs; those dims are symbolic in the file, and every
    size computed from them is read with Shape at run time. dynamic_shapes (torch.export
    style: {arg name: {dim: Dim}} or a tuple per argument) is turned into dynamic_axes.
    custom_translation_table: {custom op (or its name): fn(g, *args, **kwargs)}, ONNX
    mappings of ember.library custom ops for this export (see register_custom_op_symbolic);
    custom_opsets: {domain: version} of the custom domains their nodes use (default 1).
    `dynamo`, `external_data`, `report`, `optimize`, `verify`, `profile`, ... are accepted
    for torch's signature; ember has one exporter, and they select nothing.

    >>> m = ember.nn.Linear(4, 2)
    >>> proto = ember.onnx.export(m, (ember.randn(3, 4),), "lin.onnx",
    ...                           dynamic_axes={"input": {0: "batch"}})
    """
    onnx = _onnx()
    from . import exporter
    opset = exporter.DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset not in exporter.OPSETS:
        raise ValueError(f"ember.onnx.export supports opset_version "
                         f"{exporter.OPSETS.start}..{exporter.OPSETS.stop - 1}, got {opset}")
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict) and not kwargs:
        kwargs, args = args[-1], args[:-1]        # torch's (args..., {kwargs}) form
    if dynamic_shapes is not None and dynamic_axes is None:
        dynamic_axes = _axes_from_shapes(model, args, kwargs, dynamic_shapes, input_names)
    restore = None
    if hasattr(model, "train") and training != TrainingMode.PRESERVE:
        restore = model.training
        model.train(training == TrainingMode.TRAINING)
    _exporting[0] = True
    exporter.CUSTOM["table"] = _translation_table(custom_translation_table)
    exporter.CUSTOM["opsets"] = dict(custom_opsets or {})
    try:
        proto = exporter.export_graph(
            model, args, kwargs, helper=onnx.helper, opset=opset, input_names=input_names,
            output_names=output_names, dynamic_axes=dynamic_axes, export_params=export_params,
            keep_initializers_as_inputs=keep_initializers_as_inputs, fold=do_constant_folding)
    finally:
        _exporting[0] = False
        exporter.CUSTOM["table"], exporter.CUSTOM["opsets"] = {}, {}
        if restore is not None:
            model.train(restore)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        big = sum(len(t.raw_data) for t in proto.graph.initializer) > _PROTOBUF_LIMIT
        if hasattr(f, "write"):
            if big:
                raise ValueError("the model is over protobuf's 2 GB limit: export it to a "
                                 "path (external_data=True writes the weights beside it)")
            f.write(proto.SerializeToString())
        else:
            # external_data: weights in a file beside the model, as torch does, when the
            # model would not fit in one protobuf
            onnx.save_model(proto, str(f), save_as_external_data=bool(external_data and big))
    return proto


_PROTOBUF_LIMIT = 2 ** 31 - 2 ** 24      # 2 GB, less room for the graph itself


# ---- custom ops (ember.library.custom_op): their ONNX mappings ----------------------------
_SYMBOLIC_NAME = re.compile(r"^[a-zA-Z0-9-_]+::[a-zA-Z-_]+[a-zA-Z0-9-_]*$")


def _custom_op(symbolic_name, what):
    from ..ops.registry import OPS
    if not isinstance(symbolic_name, str) or not _SYMBOLIC_NAME.match(symbolic_name):
        raise OnnxExporterError(
            f"Failed to {what} operator {symbolic_name}. The symbolic name must match the "
            "format domain::name, and should start with a letter and contain only "
            "alphanumeric characters")
    if symbolic_name.split("::")[0] == "onnx":
        raise ValueError(f"Failed to {what} operator {symbolic_name}. onnx domain cannot be "
                         "modified.")
    custom = getattr(OPS.get(symbolic_name), "custom", None)
    if custom is None:
        raise OnnxExporterError(
            f"Failed to {what} operator {symbolic_name}: no custom op of that name is "
            "registered in this process (define it with ember.library.custom_op first; "
            "ember's built-in ops carry their own mappings)")
    return custom


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Give the custom op `symbolic_name` ("mylib::myop") an ONNX mapping for exports at
    `opset_version` and later (torch.onnx.register_custom_op_symbolic). `symbolic_fn(g,
    *args, **kwargs)` builds nodes with ``g.op(...)`` (ember/onnx/builder.py) from the op's
    arguments, tensors arriving as ONNX values; ``g.op("mylib::myop", x, alpha=0.5)`` writes
    a node of the custom domain (its version from export's ``custom_opsets``, default 1).

    >>> ember.onnx.register_custom_op_symbolic(
    ...     "mylib::twice", lambda g, x: g.op("Add", x, x), 17)
    """
    if not callable(symbolic_fn):
        raise TypeError("register_custom_op_symbolic: symbolic_fn must be callable")
    _custom_op(symbolic_name, "register").register_onnx(symbolic_fn,
                                                        opset_version=opset_version)


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Remove the mapping registered for `symbolic_name` at `opset_version`."""
    _custom_op(symbolic_name, "unregister")._unregister_onnx(opset_version)


def _translation_table(table):
    """custom_translation_table ({custom op or its name: fn(g, *args, **kwargs)}) keyed by
    the ops' OpDefs, for this export only."""
    from ..ops.registry import OPS
    out = {}
    for key, fn in (table or {}).items():
        op = OPS.get(key) if isinstance(key, str) else getattr(key, "_opdef", None)
        if op is None:
            raise TypeError(f"custom_translation_table: {key!r} is not a registered op "
                            "(use the custom op, e.g. ember.ops.mylib.myop.default, or its "
                            "name 'mylib::myop')")
        if not callable(fn):
            raise TypeError(f"custom_translation_table[{key!r}] must be a function "
                            "(g, *args, **kwargs)")
        out[id(op)] = fn
    return out


def _axes_from_shapes(model, args, kwargs, dynamic_shapes, input_names):
    """torch.export's dynamic_shapes as dynamic_axes, by argument name or position."""
    import inspect
    fn = getattr(model, "forward", model)
    params = [p for p in inspect.signature(fn).parameters if p != "self"]
    names = list(input_names or []) + params[len(input_names or []):]
    if isinstance(dynamic_shapes, dict):
        items = dynamic_shapes.items()
    else:
        items = zip(names, dynamic_shapes)
    out = {}
    for name, spec in items:
        if isinstance(spec, dict):
            out[name] = {int(d): getattr(v, "__name__", None) or f"{name}_dim_{d}"
                         for d, v in spec.items() if v is not None}
        elif isinstance(spec, (tuple, list)):
            out[name] = {d: getattr(v, "__name__", None) or f"{name}_dim_{d}"
                         for d, v in enumerate(spec) if v is not None}
    return {k: v for k, v in out.items() if v}


def load(path):
    """Load an ONNX file (a path, bytes or a ModelProto) as an ember nn.Module that runs its
    graph with ember ops (inference; opsets 17..21).

    >>> m = ember.onnx.load("lin.onnx")
    >>> y = m(ember.randn(5, 4))
    """
    onnx = _onnx()
    from .loader import OnnxModule
    if isinstance(path, onnx.ModelProto):
        proto = path
    elif isinstance(path, (bytes, bytearray)):
        proto = onnx.load_model_from_string(bytes(path))
    else:
        proto = onnx.load_model(path)
    return OnnxModule(proto)
