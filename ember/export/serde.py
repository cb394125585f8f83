"""The exported-program file: `save(ep, f)` and `load(f)`.

A zip archive (stored, not compressed) holding
  manifest.json   {"format": "ember.export", "format_version": 1, "ember_version": ...}
  graph.json      the graph: nodes with their op by registered name (``ember.add``,
                  ``Tensor.view``, ``ember.ops.linear``), arguments as tagged JSON, metadata;
                  the signature, input/output structure, size checks and symbols
  tensors/<i>     each parameter, buffer and constant as raw little-endian bytes (dtype and
                  shape in graph.json)
Nothing in the file is executed: ops resolve only to ember's registered ops (`lookup`; a
custom op, ``ember.ops.mylib::myop``, to the op of that name registered in the loading
process, whose schema must match the saved one, else a clear error), names
are checked to be identifiers, symbolic sizes are parsed from a small arithmetic grammar,
and no pickle is involved. So a file loads in a process that imports only ember, without the
model's class. A newer format version is refused; a corrupt or truncated file is an
ExportFormatError.

>>> ember.export.save(ep, "model.ept")
>>> ep2 = ember.export.load("model.ept")
"""
import ast
import json
import keyword
import math
import re
import zipfile

import numpy as np

from ..core import dtype as D
from ..core import tensor as _tensor_mod
from ..core.device import device
from ..dispatch import wrap
from ..nn.parameter import Parameter
from ..compiler.graph import Graph, Node
from ..compiler.dynamic import Sym
from ..compiler.runtime import _Slot
from ..ops.registry import OPS
from ..version import __version__
from ._capture import lookup
from .dims import ValueRange
from .program import ExportedProgram
from .signature import (InputKind, OutputKind, InputSpec, OutputSpec, TensorArgument,
                        ExportGraphSignature)

FORMAT = "ember.export"
FORMAT_VERSION = 1


class ExportFormatError(RuntimeError):
    """The file is not a loadable ember export file (corrupt, truncated, or newer)."""


# ---- values as JSON -----------------------------------------------------------------
def _enc(x, where):
    if type(x) is Node:
        return {"node": x.name}
    if x is None or type(x) in (bool, int, str):
        return x
    if type(x) is float:
        return x if math.isfinite(x) else {"float": repr(x)}
    if type(x) is tuple:
        return {"tuple": [_enc(v, where) for v in x]}
    if type(x) is list:
        return {"list": [_enc(v, where) for v in x]}
    if type(x) is dict:
        return {"dict": [[_enc(k, where), _enc(v, where)] for k, v in x.items()]}
    if type(x) is slice:
        return {"slice": [_enc(x.start, where), _enc(x.stop, where), _enc(x.step, where)]}
    if x is Ellipsis:
        return {"ellipsis": True}
    if isinstance(x, D.dtype):
        return {"dtype": x.name}
    if isinstance(x, device):
        return {"device": str(x)}
    if isinstance(x, _tensor_mod.memory_format):
        return {"memory_format": x.name}
    if type(x) is Sym:
        return {"sym": x.text, "example": x.example}
    if type(x) is _Slot:
        return {"slot": x.i}
    if isinstance(x, tuple):        # named tuples, ember.Size: stored as tuples
        return {"tuple": [_enc(v, where) for v in x]}
    raise ValueError(f"ember.export.save: cannot store a {type(x).__name__} ({where})")


_DTYPES = {d.name: d for d in D.ALL if d is not None}
_SYM_NAME = re.compile(r"s(\d+)$")


def _dec(x, nodes):
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) is not dict or len(x) not in (1, 2):
        raise ExportFormatError(f"malformed value {x!r}")
    (tag, v), = list(x.items())[:1]
    if tag == "node":
        if v not in nodes:
            raise ExportFormatError(f"reference to unknown node {v!r}")
        return nodes[v]
    if tag == "float":
        return float(v)
    if tag == "tuple":
        return tuple(_dec(e, nodes) for e in v)
    if tag == "list":
        return [_dec(e, nodes) for e in v]
    if tag == "dict":
        return {_dec(k, nodes): _dec(e, nodes) for k, e in v}
    if tag == "slice":
        return slice(*(_dec(e, nodes) for e in v))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return _DTYPES[v]
    if tag == "device":
        return device(v)
    if tag == "memory_format":
        mf = getattr(_tensor_mod, v, None)
        if not isinstance(mf, _tensor_mod.memory_format):
            raise ExportFormatError(f"unknown memory format {v!r}")
        return mf
    if tag == "sym":
        return parse_sym(v, x.get("example"))
    if tag == "slot":
        return _Slot(int(v))
    raise ExportFormatError(f"unknown value tag {tag!r}")


def parse_sym(text, example=None):
    """A Sym from its printed form (``s0``, ``s0 * 4``, ``s0 + -1``, ``s0 // 2``,
    ``s0 * s1 * 4``), accepting nothing but that arithmetic."""
    def code(n):
        if isinstance(n, ast.Name) and _SYM_NAME.match(n.id):
            return f"syms[{int(n.id[1:])}]"
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return str(n.value)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return f"(-{code(n.operand)})"
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub, ast.Mult,
                                                       ast.FloorDiv):
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}[type(n.op)]
            return f"({code(n.left)} {op} {code(n.right)})"
        raise ExportFormatError(f"malformed symbolic size {text!r}")
    if not isinstance(text, str) or len(text) > 200:
        raise ExportFormatError(f"malformed symbolic size {text!r}")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ExportFormatError(f"malformed symbolic size {text!r}") from None
    return Sym(code(tree), text, example)


def _meta_enc(meta):
    if meta is None:
        return None
    return {"shape": [_enc(d, "shape") for d in meta[0]], "dtype": meta[1].name if meta[1]
            is not None else None, "requires_grad": bool(meta[3]) if len(meta) > 3 else False}


def _meta_dec(m):
    if m is None:
        return None
    shape = tuple(_dec(d, {}) for d in m["shape"])
    dt = _DTYPES[m["dtype"]] if m["dtype"] is not None else None
    return (shape, dt, None, bool(m["requires_grad"]))


# ---- save -----------------------------------------------------------------------------
def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=None):
    """Write `ep` to `f` (a path or a binary file object).

    >>> ember.export.save(ep, "model.ept")
    """
    g = ep.graph
    nodes = []
    for n in g.nodes:
        where = f"node {n.name} ({n.opname or n.kind})"
        rec = {"kind": n.kind, "name": n.name, "index": n.index, "meta": _meta_enc(n.meta),
               "source": n.source}
        if n.kind == "call":
            rec["op"] = n.opname
            lookup(n.opname)          # only ops load() can find are written
            rec["args"] = _enc(tuple(n.args), where)
            rec["kwargs"] = _enc(dict(n.kwargs), where)
        elif n.kind in ("getitem", "output"):
            rec["args"] = _enc(tuple(n.args), where)
        nodes.append(rec)
    tensors, blobs, ids = {}, [], {}
    for name, t, kind in _state(ep):
        if id(t) not in ids:
            ids[id(t)] = f"tensors/{len(blobs)}"
            host = t if t.device.type == "cpu" else t.detach().cpu()   # loads on cpu
            blobs.append(np.ascontiguousarray(host._data))
        tensors[name] = {"file": ids[id(t)], "dtype": t.dtype.name,
                         "shape": list(t._data.shape), "requires_grad": bool(t.requires_grad),
                         "parameter": isinstance(t, Parameter), "kind": kind}
    sig = ep.graph_signature
    doc = {
        "nodes": nodes,
        "lifted": [[k.name, t] for k, t in ep.lifted],
        "inputs": [[s.kind.name, s.arg.name, s.target, s.persistent] for s in sig.input_specs],
        "outputs": [[s.kind.name, s.arg.name, s.target] for s in sig.output_specs],
        "in_spec": _enc(ep._in_spec, "input structure"),
        "out_spec": _enc(ep._out_spec, "output structure"),
        "input_paths": list(ep._input_paths), "input_names": list(ep._input_names),
        "checks": [[k, d, w, _enc(v, "checks")] for k, d, w, v in ep._checks],
        "syms": [list(s) for s in ep._syms],
        "sym_specs": [[lbl, lo, hi if hi != math.inf else None]
                      for lbl, lo, hi in ep._sym_specs],
        "range_constraints": {k: [v.lower, v.upper if v.upper != math.inf else None]
                              for k, v in ep.range_constraints.items()},
        "aliases": ep._aliases, "tensors": tensors,
        "custom_ops": _custom_schemas(g),
    }
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "ember_version": __version__,
                "files": ["graph.json"] + [f"tensors/{i}" for i in range(len(blobs))]}
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        z.writestr("manifest.json", json.dumps(manifest, indent=1))
        z.writestr("graph.json", json.dumps(doc))
        for i, a in enumerate(blobs):
            z.writestr(f"tensors/{i}", a.astype(a.dtype.newbyteorder("<")).tobytes())
        for k, v in (extra_files or {}).items():
            z.writestr(f"extra/{k}", v)


# ---- custom ops (ember.library.custom_op): stored by name, resolved at load ----------------
def _custom_of(opname):
    """The CustomOpDef a saved op name (``ember.ops.mylib::myop``) stands for, or None for
    ember's own ops. Only a name with ``::`` is a custom op's."""
    if not isinstance(opname, str) or not opname.startswith("ember.ops.") or \
            "::" not in opname:
        return None
    return getattr(OPS.get(opname[len("ember.ops."):]), "custom", None)


def _custom_schemas(g):
    """{qualified name: schema} of the custom ops the graph calls (checked at load)."""
    return {n.opname[len("ember.ops."):]: _custom_of(n.opname).schema for n in g.nodes
            if n.kind == "call" and _custom_of(n.opname) is not None}


def _lookup(opname, schemas):
    """The callable of a saved op name. A custom op resolves to the op of that name
    registered in this process (the file holds no code, so the op's definition must be
    imported first); a schema other than the one saved is refused."""
    if isinstance(opname, str) and opname.startswith("ember.ops.") and "::" in opname:
        qual = opname[len("ember.ops."):]
        custom = _custom_of(opname)
        if custom is None:
            raise ExportFormatError(
                f"ember.export.load: the program calls the custom op '{qual}', which is not "
                f"registered in this process. Register it first (define it with "
                f"ember.library.custom_op({qual!r}, ...) or import the module that does), "
                f"then load: the file holds only the op's name, never its code")
        saved = schemas.get(qual)
        if saved is not None and saved != custom.schema:
            raise ExportFormatError(
                f"ember.export.load: the custom op '{qual}' registered in this process has "
                f"the schema {custom.schema}, but the program was saved with {saved}")
    return lookup(opname)


def _state(ep):
    for kind, target in ep.lifted:
        src = ep.state_dict if target in ep.state_dict else ep.constants
        yield target, src[target], kind.name


# ---- load -----------------------------------------------------------------------------
_BAD_NAMES = re.compile(r"^(_c\d+|_f_.*|inputs|lifted|syms)$")


def _name(x):
    if not isinstance(x, str) or not x.isidentifier() or keyword.iskeyword(x) or \
            _BAD_NAMES.match(x):
        raise ExportFormatError(f"bad node name {x!r}")
    return x


def load(f, *, extra_files=None, expected_opset_version=None):
    """Read an ExportedProgram written by `save` (a path or a binary file object).

    >>> ep = ember.export.load("model.ept"); y = ep.module()(x)
    """
    label = f if isinstance(f, str) else getattr(f, "name", "the file")
    try:
        with zipfile.ZipFile(f) as z:
            try:
                manifest = json.loads(z.read("manifest.json"))
            except KeyError:
                raise ExportFormatError(f"ember.export.load: {label} has no manifest.json: "
                                        f"not an ember export file") from None
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise ExportFormatError(f"ember.export.load: {label} is not an ember export "
                                        f"file (format {manifest.get('format')!r})")
            version = manifest.get("format_version")
            if type(version) is not int:
                raise ExportFormatError(f"ember.export.load: {label}: bad format version "
                                        f"{version!r}")
            if version > FORMAT_VERSION:
                raise ExportFormatError(
                    f"ember.export.load: {label} was written in export format version "
                    f"{version} (by ember {manifest.get('ember_version')}), newer than this "
                    f"ember {__version__} reads (up to version {FORMAT_VERSION}); upgrade "
                    f"ember to load it")
            doc = json.loads(z.read("graph.json"))
            blobs = {}
            for rec in doc["tensors"].values():
                if rec["file"] not in blobs:
                    blobs[rec["file"]] = z.read(rec["file"])
            if extra_files is not None:
                for k in list(extra_files):
                    extra_files[k] = z.read(f"extra/{k}")
    except ExportFormatError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, ValueError, TypeError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ExportFormatError(f"ember.export.load: {label} is not a valid ember export file "
                                f"(corrupt or truncated: {type(e).__name__}: {e})") from None
    try:
        return _build(doc, blobs)
    except ExportFormatError:
        raise
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        raise ExportFormatError(f"ember.export.load: {label} is malformed "
                                f"({type(e).__name__}: {e})") from None


def _tensor(rec, blobs):
    dt = _DTYPES[rec["dtype"]]
    shape = tuple(int(s) for s in rec["shape"])
    raw = blobs[rec["file"]]
    n = math.prod(shape) * dt.np.itemsize
    if len(raw) != n:
        raise ExportFormatError(f"tensor data {rec['file']} has {len(raw)} bytes, expected {n}")
    arr = np.frombuffer(raw, dtype=dt.np.newbyteorder("<")).astype(dt.np).reshape(shape)
    t = wrap(arr.copy(), dt)
    if rec.get("parameter"):
        return Parameter(t, requires_grad=bool(rec["requires_grad"]))
    return t


def _build(doc, blobs):
    by_file, tensors = {}, {}
    for name, rec in doc["tensors"].items():
        if rec["file"] not in by_file:
            by_file[rec["file"]] = _tensor(rec, blobs)
        tensors[name] = by_file[rec["file"]]
    g = Graph()
    nodes = {}
    schemas = doc.get("custom_ops") or {}
    if type(schemas) is not dict:
        raise ExportFormatError("malformed custom_ops table")
    lifted = [(InputKind[k], t) for k, t in doc["lifted"]]
    for rec in doc["nodes"]:
        kind, name = rec["kind"], _name(rec["name"])
        if name in nodes:
            raise ExportFormatError(f"two nodes are named {name!r}")
        meta = _meta_dec(rec["meta"])
        src = rec.get("source")
        src = src if isinstance(src, str) else None
        index = rec.get("index")
        if index is not None and type(index) is not int:
            raise ExportFormatError(f"bad index in node {name!r}")
        if kind == "input":
            n = Node("input", name, index=index, meta=meta)
        elif kind == "lifted":
            n = Node("lifted", name, target=tensors[lifted[index][1]], index=index, meta=meta)
        elif kind == "call":
            fn = _lookup(rec["op"], schemas)
            args, kwargs = _dec(rec["args"], nodes), _dec(rec["kwargs"], nodes)
            if type(args) is not tuple or type(kwargs) is not dict or not all(
                    isinstance(k, str) and k.isidentifier() for k in kwargs):
                raise ExportFormatError(f"bad arguments in node {name!r}")
            n = Node("call", name, target=fn, args=args, kwargs=kwargs, meta=meta,
                     source=src, opname=rec["op"])
        elif kind in ("getitem", "output"):
            args = _dec(rec["args"], nodes)
            if type(args) is not tuple or (kind == "getitem" and (
                    type(index) is not int or type(args[0]) is not Node)):
                raise ExportFormatError(f"bad {kind} node {name!r}")
            n = Node(kind, name, args=args, index=index, meta=meta, source=src)
        else:
            raise ExportFormatError(f"unknown node kind {kind!r}")
        nodes[name] = n
        g.nodes.append(n)
        g._names.add(name)
    try:
        g.verify()
    except AssertionError as e:
        raise ExportFormatError(f"malformed graph: {e}") from None
    state_dict, constants = {}, {}
    for (kind, target), (_, _, _, pers) in zip(lifted, doc["inputs"]):
        if kind is InputKind.PARAMETER or (kind is InputKind.BUFFER and pers is not False):
            state_dict[target] = tensors[target]
        else:
            constants[target] = tensors[target]
    sig = ExportGraphSignature(
        [InputSpec(InputKind[k], TensorArgument(_name(n)), t, p) for k, n, t, p in doc["inputs"]],
        [OutputSpec(OutputKind[k], TensorArgument(_name(n)), t) for k, n, t in doc["outputs"]])
    rc = {str(k): ValueRange(lo, math.inf if hi is None else hi)
          for k, (lo, hi) in doc["range_constraints"].items()}
    checks = [(int(k), None if d is None else int(d), str(w), _dec(v, {}))
              for k, d, w, v in doc["checks"]]
    checks = [(k, d, w, tuple(v) if w == "eq" else v) for k, d, w, v in checks]
    sym_specs = [(lbl, lo, math.inf if hi is None else hi) for lbl, lo, hi in doc["sym_specs"]]
    return ExportedProgram(
        g, sig, state_dict, constants, rc, lifted, _dec(doc["in_spec"], {}),
        _dec(doc["out_spec"], {}), [str(p) for p in doc["input_paths"]],
        [str(p) for p in doc["input_names"]], checks, [tuple(s) for s in doc["syms"]],
        {str(k): str(v) for k, v in doc["aliases"].items()}, example_inputs=None,
        sym_specs=sym_specs)
