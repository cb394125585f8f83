"""Warm starts from disk: a compiled variant's graphs, partition and kernel plan inputs are
saved after its first compile, and a later process that compiles the same function with the
same guards loads them instead of tracing (the role of PyTorch's FX graph cache).

    <config.cache_dir>/graphs/<2 hex>/<key>.json    the graphs, as JSON (first line: sha256)
    <config.cache_dir>/graphs/<2 hex>/<key>.bin     the bytes of constant tensors (folded masks)

The key is cache_key.call_key's sha256 (ember's version and sources, the code, the module
structure, everything the guards check, the compiler settings, the C compiler and the CPU
flags); the file format is graph_codec.py's (JSON, functions as references to ember's own
code, parameters by name; nothing is pickled). Beside the entry, `<key>.capture.json` holds the
trace itself, read only when a later size change needs it to make sizes symbolic.

Only variants that replay as one graph (or a forward/backward pair) are stored: no graph
breaks, no Python side effects, static sizes, every lifted tensor a parameter or buffer of
the compiled module or a constant the passes folded. Others compile as before (EMBER_LOGS=cache
says why). The kernels themselves come from build.py's kernel cache. A corrupt or stale entry
(bad checksum, unreadable, a parameter name the module lacks) is removed, logged in one line,
and rebuilt by compiling. `stats` counts loads, saves and rebuilds; `config.graph_cache`
(EMBER_GRAPH_CACHE=0) turns the whole thing off.
"""
import hashlib
import json
import os
import tempfile

from ..core import dtype as D
from . import config
from .config import log, logs_on
from .cache_key import FORMAT, Uncacheable, call_key
from .graph_codec import (_Codec, _encode_graph, _decode_graph, _tensor_names,
                          _tensors_by_name, _const)

stats = {"loaded": 0, "saved": 0, "rebuilt": 0}


def _note(msg, *args):
    if logs_on("cache"):
        log.warning("graph cache: " + msg, *args)


def _paths(key):
    folder = os.path.join(config.graph_cache_dir or os.path.join(config.cache_dir, "graphs"),
                          key[:2])
    return folder, os.path.join(folder, key + ".json"), os.path.join(folder, key + ".bin")


# ---------------------------------------------------------------- saving
def _why_not(cf, p):
    v = p.variant
    if v is None or v.eager or v.root is not None:
        return "graph breaks"
    if p.effects:
        return "Python side effects"
    if p.unify_with is not None or p.unified or (p.capture is not None and p.capture.syms):
        return "a recompile for new sizes"
    if cf._check:
        return "check mode"
    if not p.graphs:
        return "no graphs"
    return None


def _encode_capture(cf, cap):
    """The trace itself (dynamic.Capture), kept so that a later size change can unify with
    it (stored beside the entry, read only then)."""
    names = _tensor_names(cf.module)
    nodes = _encode_graph(cap.graph, names, None, [], bytearray())
    index = {id(n): i for i, n in enumerate(cap.graph.nodes)}
    joint = cap.joint
    if joint is not None and "failed" not in joint:
        lifted = []
        for t in joint["lifted_diff"]:
            if id(t) not in names:
                raise Uncacheable("a differentiable lifted tensor is not a parameter")
            lifted.append(names[id(t)])
        joint = {"tangent_nodes": [index[id(n)] for n in joint["tangent_nodes"]],
                 "grad_nodes": [index[id(n)] if n is not None else None
                                for n in joint["grad_nodes"]],
                 "diff_positions": list(joint["diff_positions"]), "lifted_diff": lifted}
    return {"format": FORMAT, "nodes": nodes, "struct": _Codec().enc(cap.struct),
            "out_nodes": [index[id(n)] for n in cap.out_nodes],
            "input_paths": list(cap.input_paths),
            "input_shapes": [list(s) for s in cap.input_shapes], "joint": joint}


def _decode_capture(body, module):
    from .dynamic import Capture
    named = _tensors_by_name(module)
    g = _decode_graph(body["nodes"], named, [])
    joint = body["joint"]
    if joint is not None and "failed" not in joint:
        joint = {"tangent_nodes": [g.nodes[i] for i in joint["tangent_nodes"]],
                 "grad_nodes": [g.nodes[i] if i is not None else None
                                for i in joint["grad_nodes"]],
                 "diff_positions": joint["diff_positions"], "diff_ins": None,
                 "lifted_diff": [named[tuple(n)] for n in joint["lifted_diff"]]}
    return Capture(g, _Codec().dec(body["struct"]), [g.nodes[i] for i in body["out_nodes"]],
                   body["input_paths"], [tuple(s) for s in body["input_shapes"]], joint)


def capture_of(v):
    """The trace of variant `v` for unification: a loaded variant reads it from its entry
    the first time it is asked for (None when it has none)."""
    path = getattr(v, "capture_file", None)
    if v.capture is None and path is not None:
        v.capture_file = None
        try:
            v.capture = _decode_capture(_read_checked(path), v.cache_module)
        except FileNotFoundError:
            pass
        except Exception as e:
            log.warning("ember.compile: graph cache entry %s is corrupt or stale (%s: %s); "
                        "rebuilding it", path, type(e).__name__, str(e)[:200])
            stats["rebuilt"] += 1
            _unlink(path)
    return v.capture


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _encode(cf, p):
    names = _tensor_names(cf.module)
    refs = {id(n.target) for n in p.tracer.graph.lifted()} if p.tracer is not None else set()
    consts, blob = [], bytearray()
    graphs = {gname: _encode_graph(g, names, refs, consts, blob)
              for gname, g in p.graphs.items()}
    joint = None
    if p.joint is not None and "failed" not in p.joint and "forward" in p.graphs:
        lifted = []
        for t in p.joint["lifted_diff"]:
            if id(t) not in names:
                raise Uncacheable("a differentiable lifted tensor is not a parameter")
            lifted.append(names[id(t)])
        joint = {"diff_positions": list(p.joint["diff_positions"]), "lifted_diff": lifted}
    out_meta = [[n.meta[1].name if n.meta[1] is not None else None, bool(n.meta[3])]
                if n.meta else None for n in p.out_nodes]
    body = {"format": FORMAT, "name": cf.__name__, "graphs": graphs, "consts": consts,
            "bin_sha256": hashlib.sha256(bytes(blob)).hexdigest(),
            "struct": _Codec().enc(p.capture.struct),
            "input_paths": list(p.capture.input_paths), "joint": joint,
            "out_meta": out_meta, "saved": list(p.saved), "recomputed":
            [str(r) for r in p.recomputed], "pass_stats": dict(p.pass_stats),
            "op_count": p.op_count, "backward_note": p.backward_note}
    return body, bytes(blob)


def _write_atomic(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save(cf, p, key):
    """Store the variant Program `p` compiled under `key`; False (logged with
    EMBER_LOGS=cache) when it cannot be stored."""
    why = _why_not(cf, p)
    try:
        if why is not None:
            raise Uncacheable(why)
        body, blob = _encode(cf, p)
    except Uncacheable as e:
        _note("%s not stored: %s", cf.__name__, e)
        return False
    body["key"] = key
    text = json.dumps(body, separators=(",", ":")).encode()
    folder, jpath, bpath = _paths(key)
    try:
        os.makedirs(folder, exist_ok=True)
        _write_atomic(bpath, blob)
        _write_atomic(jpath, hashlib.sha256(text).hexdigest().encode() + b"\n" + text)
    except OSError as e:
        _note("%s not stored: %s", cf.__name__, e)
        return False
    stats["saved"] += 1
    _note("stored %s (%s)", cf.__name__, jpath)
    try:
        text = json.dumps(_encode_capture(cf, p.capture), separators=(",", ":")).encode()
        _write_atomic(jpath[:-5] + ".capture.json",
                      hashlib.sha256(text).hexdigest().encode() + b"\n" + text)
    except (Uncacheable, OSError) as e:
        _note("%s: its trace is not stored (a size change recompiles twice): %s",
              cf.__name__, e)
    return True


# ---------------------------------------------------------------- loading
def _read_checked(path):
    """The JSON body of a file written as '<sha256 of the rest>\\n<json>'."""
    with open(path, "rb") as f:
        raw = f.read()
    head, _, text = raw.partition(b"\n")
    if hashlib.sha256(text).hexdigest().encode() != head:
        raise ValueError("checksum mismatch")
    body = json.loads(text)
    if body.get("format") != FORMAT:
        raise ValueError("written by another format")
    return body


def _read(key, jpath, bpath):
    body = _read_checked(jpath)
    if body.get("format") != FORMAT or body.get("key") != key:
        raise ValueError("written by another format")
    blob = b""
    if body["consts"]:
        with open(bpath, "rb") as f:
            blob = f.read()
    if hashlib.sha256(blob).hexdigest() != body["bin_sha256"]:
        raise ValueError("the constants' checksum does not match")
    return body, blob


def _variant(cf, args, kwargs, body, blob):
    from types import SimpleNamespace
    from . import pipeline
    from .program import Program
    from .guards import guards_for_call
    named = _tensors_by_name(cf.module)
    consts = [_const(c, blob) for c in body["consts"]]
    graphs = {gname: _decode_graph(nodes, named, consts)
              for gname, nodes in body["graphs"].items()}
    p = Program(cf, args, kwargs)
    p.graphs = graphs
    p.capture = SimpleNamespace(struct=_Codec().dec(body["struct"]), syms=[], sym_equal=[],
                                input_paths=body["input_paths"])
    p.out_nodes = [SimpleNamespace(meta=(None, D._NAMES[m[0]] if m[0] else None, None, m[1])
                                   if m else None) for m in body["out_meta"]]
    if body["joint"] is not None:
        j = body["joint"]
        p.joint = {"diff_positions": j["diff_positions"],
                   "lifted_diff": [named[tuple(n)] for n in j["lifted_diff"]]}
    p.saved, p.recomputed, p.pass_stats = body["saved"], body["recomputed"], body["pass_stats"]
    p.op_count, p.backward_note = body["op_count"], body["backward_note"]
    p.guards = guards_for_call(args, kwargs, cf._arg_name, cf.module, [], None)
    show = logs_on("stages")
    for name, stage in pipeline.STAGES:
        # (codegen only writes the kernels' C for show_code: build generates what it
        # builds, and show_code makes it for a loaded variant when asked)
        if name in ("fusion", "build", "buffer_plan", "autotune", "replay") or (
                name == "codegen" and p.python_replay()):
            p._running = name
            summary = stage(p)
            p.done.append((name, summary))
            if show:
                log.warning("%s: stage %s (from the graph cache): %s", cf.__name__, name,
                            summary.replace("\n", "\n    "))
    v = p.variant
    v.capture = None          # no trace to unify a later size change with
    v.autotune = getattr(p, "autotune", None)
    v.kernel_plans = p.kernel_plans
    return v


def load(cf, args, kwargs, key):
    """The Variant stored under `key` for this call, or None (absent; corrupt or stale:
    removed, logged in one line, and the caller compiles it again)."""
    folder, jpath, bpath = _paths(key)
    if not os.path.exists(jpath):
        _note("miss for %s (%s)", cf.__name__, key[:16])
        return None
    try:
        body, blob = _read(key, jpath, bpath)
        v = _variant(cf, args, kwargs, body, blob)
    except Exception as e:
        log.warning("ember.compile: graph cache entry %s is corrupt or stale (%s: %s); "
                    "rebuilding it", jpath, type(e).__name__, str(e)[:200])
        for path in (jpath, bpath, jpath[:-5] + ".capture.json"):
            _unlink(path)
        stats["rebuilt"] += 1
        return None
    v.from_cache = jpath
    v.capture_file, v.cache_module = jpath[:-5] + ".capture.json", cf.module
    stats["loaded"] += 1
    _note("hit for %s: %s", cf.__name__, jpath)
    return v


def lookup_key(cf, args, kwargs):
    """The key of this call, or None when the graph cache is off or the call cannot be
    cached (logged with EMBER_LOGS=cache)."""
    if not config.graph_cache:
        return None
    try:
        return call_key(cf, args, kwargs)
    except Uncacheable as e:
        _note("%s is not cached: %s", cf.__name__, e)
        return None
