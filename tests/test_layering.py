"""The import layering of the ember package, checked from the source (DESIGN.md, issue 13.4).

Every module of the package is parsed with `ast`; each `import` and `from ... import` is an
edge, wherever it stands (module level, or lazily inside a function: a lazy import is still a
dependency). `from . import x` is an edge to the submodule `x` when there is one, else to the
package; importing a package is importing its `__init__`. The test then fails on

  (a) an import from a lower layer into a higher one (LAYERS below, lowest first), and
  (b) an import cycle between modules (even inside one layer),

unless the edge is in ALLOWLIST with its reason. An allowlisted edge that no longer exists
fails the test too, so the allowlist can only shrink.
"""
import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "ember"

# The layers, lowest first (DESIGN.md "Principles"). A module belongs to the layer of the
# longest prefix that names it or one of its parent packages. `ember` itself (the top
# namespace, ember/__init__.py, which may import anything) is matched exactly, never as a
# prefix. The example programs sit above it: they are user code (`import ember as torch`).
TOP = "ember"
LAYERS = [
    ("core", ("ember.core", "ember.backends", "ember.cuda", "ember.cpu", "ember.version",
              "ember.futures")),
    ("autograd state + recording", ("ember.autograd.grad_mode", "ember.autograd.graph",
                                    "ember.autograd.derivative",
                                    "ember.autograd.graph_dot", "ember.autograd.views",
                                    "ember.autograd.anomaly")),
    ("dispatch", ("ember.dispatch", "ember.dispatch_args")),
    ("ops", ("ember.ops", "ember.linalg", "ember.special", "ember.fft", "ember.random",
             "ember.return_types")),
    ("autograd engine / Function / functional / gradcheck", ("ember.autograd",)),
    ("amp, profiler, func, memory", ("ember.amp", "ember.profiler", "ember.func",
                                     "ember.memory")),
    ("nn, optim, utils", ("ember.nn", "ember.optim", "ember.utils", "ember.library", "ember.sparse",
                          "ember.distributions", "ember.toplevel_forms",
                          "ember.toplevel_misc", "ember.testing")),
    ("compiler, export, onnx, distributed, serialization",
     ("ember.compiler", "ember.export", "ember.jit", "ember.onnx", "ember.distributed",
      "ember.nn.parallel", "ember.serialization", "ember.utils.cpp_extension")),
    ("top namespace", (TOP,)),
    ("example programs", ("ember.examples",)),
]

# (importer, imported): reason. Each entry is a debt; remove it when the edge goes.
ALLOWLIST = {
}


# ---- the checker ----

def module_names(root, package):
    """{dotted module name: path} for every .py file under root (a package's name is its
    __init__.py's)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _known(name, modules):
    """The longest prefix of a dotted name that is a module of the package, else None."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def import_edges(root, package):
    """{(importer, imported): first line number} over the package's own modules."""
    modules = module_names(root, package)
    edges = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [_known(alias.name, modules) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else _known(base, modules))
            for target in targets:
                if target is not None and target != name:
                    edges.setdefault((name, target), node.lineno)
    return edges


def layer_of(module, layers, top):
    """Index into layers of the module's layer, or None (`top` matches only itself)."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            hit = module == p or (p != top and module.startswith(p + "."))
            if hit and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def cycles(edges):
    """The strongly connected components with more than one module, each as a sorted list
    (Tarjan's algorithm, iterative)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _one_cycle(component, edges):
    """A shortest cycle through the component's first module, as a path (for the report)."""
    inside = set(component)
    start = component[0]
    came_from, frontier = {}, [start]
    while frontier:
        nxt = []
        for a in frontier:
            for b in sorted(b for (x, b) in edges if x == a and b in inside):
                if b == start:
                    path = [a]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1] + [start]
                if b not in came_from:
                    came_from[b] = a
                    nxt.append(b)
        frontier = nxt
    return component


def problems(edges, modules, layers, top, allowlist):
    """Every layering violation as a line of text (empty when the package is clean)."""
    out = []
    for m in sorted(modules):
        if layer_of(m, layers, top) is None:
            out.append(f"{m}: no layer (add a prefix rule to LAYERS)")
    for pair in sorted(allowlist):
        if pair not in edges:
            out.append(f"stale allowlist entry {pair[0]} -> {pair[1]}: the import is gone, "
                       f"remove the entry")
    kept = {e: line for e, line in edges.items() if e not in allowlist}
    for (a, b), line in sorted(kept.items()):
        la, lb = layer_of(a, layers, top), layer_of(b, layers, top)
        if la is not None and lb is not None and la < lb:
            out.append(f"upward import {a} (line {line}, layer '{layers[la][0]}') -> {b} "
                       f"(layer '{layers[lb][0]}')")
    for component in cycles(kept):
        path = " -> ".join(_one_cycle(component, kept))
        out.append(f"import cycle between {len(component)} modules {component}; e.g. {path}")
    return out


# ---- the package ----

def test_ember_imports_run_one_way():
    modules = module_names(PACKAGE_ROOT, "ember")
    edges = import_edges(PACKAGE_ROOT, "ember")
    found = problems(edges, modules, LAYERS, TOP, ALLOWLIST)
    assert not found, "\n".join(found)


def test_allowlist_entries_have_reasons():
    for pair, reason in ALLOWLIST.items():
        assert isinstance(pair, tuple) and len(pair) == 2, pair
        assert reason.strip(), f"{pair} needs a one-line reason"


# ---- the checker itself can fail ----

def _tree(tmp_path, files):
    root = tmp_path / "toy"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


TOY_LAYERS = [("low", ("toy.low",)), ("mid", ("toy.mid",)), ("high", ("toy.high",)),
              ("top", ("toy",))]


def test_parser_resolves_relative_lazy_and_package_imports(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from . import low\nfrom .mid import thing\n",
        "low/__init__.py": "",
        "low/a.py": "import os\nfrom . import b\ndef f():\n    from ..high import h\n",
        "low/b.py": "from .. import something\nimport toy.mid.thing\n",
        "mid/__init__.py": "",
        "mid/thing.py": "from ..low.a import f\nfrom ..low import *\n",
        "high.py": "def g():\n    import toy\n",
    })
    assert set(import_edges(root, "toy")) == {
        ("toy", "toy.low"), ("toy", "toy.mid.thing"),
        ("toy.low.a", "toy.low.b"), ("toy.low.a", "toy.high"),     # lazy, inside f
        ("toy.low.b", "toy"), ("toy.low.b", "toy.mid.thing"),     # package = its __init__
        ("toy.mid.thing", "toy.low.a"), ("toy.mid.thing", "toy.low"),
        ("toy.high", "toy"),
    }


def test_checker_finds_upward_imports_cycles_and_stale_allowlist(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from . import high\n",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from .b import x\n",
        "low/b.py": "from .a import f\n",
        "mid.py": "from .low import a\n",
        "high.py": "from . import mid\n",
        "stray.py": "",
    })
    modules = module_names(root, "toy")
    edges = import_edges(root, "toy")
    found = problems(edges, modules, TOY_LAYERS, "toy", {})
    assert any("toy.stray: no layer" in p for p in found)
    assert any(p.startswith("import cycle between 2 modules ['toy.low.a', 'toy.low.b']")
               for p in found)
    assert not any(p.startswith("upward") for p in found)

    (root / "low" / "b.py").write_text("from . import a\nfrom ..mid import y\n")
    edges = import_edges(root, "toy")
    found = problems(edges, modules, TOY_LAYERS, "toy", {})
    assert any(p.startswith("upward import toy.low.b (line 2, layer 'low') -> toy.mid")
               for p in found)
    # low.a -> (lazily) low.b -> mid -> low.a
    assert any(p.startswith("import cycle between 3 modules ['toy.low.a', 'toy.low.b', "
                            "'toy.mid']") for p in found)

    allow = {("toy.low.b", "toy.mid"): "r", ("toy.low.a", "toy.low.b"): "r",
             ("toy.mid", "toy.high"): "r"}
    found = problems(edges, modules, TOY_LAYERS, "toy", allow)
    assert any(p.startswith("stale allowlist entry toy.mid -> toy.high") for p in found)
    assert not any(p.startswith(("upward", "import cycle")) for p in found)
