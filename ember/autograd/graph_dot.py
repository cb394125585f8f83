"""Draw the backward graph: `to_dot(tensor)` -> Graphviz DOT source (``ember.autograd.graph``).

    loss = model(x).sum()
    dot = ember.autograd.graph.to_dot(loss, params=dict(model.named_parameters()))
    print(dot)                          # DOT source: a str
    dot.render("mlp.svg")               # needs the graphviz package and Graphviz's `dot`

Nodes are the graph's backward functions by their PyTorch names (`MulBackward0`,
`AccumulateGrad`); each `AccumulateGrad` gets a box for its leaf (the parameter's name and
shape when `params` names it); the tensor drawn from gets a box at the bottom. Edges follow
`next_functions`, drawn in the forward direction (inputs above, like torchviz). With
``show_saved=True`` each node's saved tensors appear as orange boxes.

This module sits in the "recording" layer next to graph.py and reads nodes by their public
shape alone (`name()`, `next_functions`, `variable`, saved values), so graph.py can re-export
`to_dot` without an import cycle.
"""
import os
import shutil
import subprocess

from ..core.tensor import Tensor

_STYLE = {
    "op": 'shape=box, style=filled, fillcolor="lightgray"',
    "param": 'shape=box, style=filled, fillcolor="lightblue"',
    "output": 'shape=box, style=filled, fillcolor="darkolivegreen1"',
    "saved": 'shape=box, style=filled, fillcolor="orange"',
}


class DotGraph(str):
    """DOT source (a `str`) with a `render` method; Jupyter shows it as SVG when Graphviz
    is installed."""

    def render(self, path, format=None):
        """Write the drawing to `path` as ``"svg"`` or ``"png"`` (default: the path's suffix,
        else svg) and return `path`. Uses the `graphviz` Python package (``pip install
        ember[viz]``) when importable, else Graphviz's `dot` program directly (Debian:
        ``apt-get install graphviz``).

        >>> ember.autograd.graph.to_dot(y).render("graph.svg")   # doctest: +SKIP
        'graph.svg'
        """
        if format is None:
            ext = os.path.splitext(str(path))[1].lstrip(".").lower()
            format = ext if ext in ("svg", "png", "pdf") else "svg"
        if format not in ("svg", "png", "pdf"):
            raise ValueError(f"render(): format must be 'svg', 'png' or 'pdf', got {format!r}")
        with open(path, "wb") as f:
            f.write(self.pipe(format))
        return path

    def pipe(self, format="svg"):
        """The drawing as bytes in `format`."""
        try:
            import graphviz
        except ImportError:
            graphviz = None
        if graphviz is not None:
            try:
                return graphviz.Source(str(self)).pipe(format=format)
            except graphviz.ExecutableNotFound:
                raise RuntimeError(_NO_DOT) from None
        if shutil.which("dot") is None:
            raise RuntimeError(_NO_DOT)
        res = subprocess.run(["dot", f"-T{format}"], input=str(self).encode(),
                             capture_output=True)
        if res.returncode != 0:
            raise RuntimeError(f"dot failed: {res.stderr.decode(errors='replace')}")
        return res.stdout

    def _repr_svg_(self):
        try:
            return self.pipe("svg").decode()
        except RuntimeError:
            return None


_NO_DOT = ("rendering needs Graphviz's `dot` program (Debian: apt-get install graphviz) and "
           "preferably the graphviz Python package (pip install ember[viz])")


def _shape(t):
    return str(tuple(int(s) for s in t._data.shape))


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _saved_values(node):
    """(name, tensor) for each tensor a node saved: an op node's `_saved` dict, a custom
    Function's list."""
    try:
        saved = object.__getattribute__(node, "_saved")
    except AttributeError:
        return []
    items = saved.items() if isinstance(saved, dict) else (
        (f"saved_{i}", v) for i, v in enumerate(saved))
    out = []
    for name, v in items:
        t = getattr(v, "tensor", v)   # a SavedTensor keeps its tensor in `.tensor`
        if isinstance(t, Tensor):
            out.append((name, t))
    return out


def to_dot(tensor, params=None, show_saved=False):
    """DOT source of the backward graph that ends in `tensor` (or a sequence of tensors).

    `params`: {name: tensor} (``dict(model.named_parameters())``) labels leaves by name;
    `show_saved`: draw the tensors each node saved for backward.

    >>> x = ember.randn(3, requires_grad=True)
    >>> dot = ember.autograd.graph.to_dot((x * 2).sum(), params={"x": x})
    >>> "MulBackward0" in dot and "SumBackward0" in dot
    True
    """
    outputs = list(tensor) if isinstance(tensor, (tuple, list)) else [tensor]
    for t in outputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"to_dot(): expected a Tensor, got {type(t).__name__}")
    names = {id(p): n for n, p in (params or {}).items()}
    lines = ["digraph {", '    graph [rankdir=TB, fontname="monospace"];',
             '    node [fontname="monospace", fontsize=10];']
    ids = {}

    def node_id(node):
        if id(node) not in ids:
            ids[id(node)] = f"n{len(ids)}"
        return ids[id(node)]

    seen, stack, keep = set(), [], []
    for i, t in enumerate(outputs):
        oid = f"out{i}"
        lines.append(f"    {oid} [label={_quote('output ' + _shape(t))}, {_STYLE['output']}];")
        if t.grad_fn is not None:
            lines.append(f"    {node_id(t.grad_fn)} -> {oid};")
            stack.append(t.grad_fn)
        elif t.requires_grad:
            label = names.get(id(t), "leaf")
            lines.append(f"    leaf{i} [label={_quote(label + ' ' + _shape(t))}, "
                         f"{_STYLE['param']}];")
            lines.append(f"    leaf{i} -> {oid};")
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)             # ids stay unique while we walk
        nid = node_id(node)
        label = node.name()
        lines.append(f"    {nid} [label={_quote(label)}, {_STYLE['op']}];")
        var = getattr(node, "variable", None)
        if isinstance(var, Tensor):
            vname = names.get(id(var), "")
            text = (vname + "\n" if vname else "") + _shape(var)
            lines.append(f"    {nid}_var [label={_quote(text)}, {_STYLE['param']}];")
            lines.append(f"    {nid}_var -> {nid};")
        if show_saved:
            for k, (sname, st) in enumerate(_saved_values(node)):
                label = f"{sname}\n{_shape(st)}"
                if id(st) in names:
                    label = f"{sname}: {names[id(st)]}\n{_shape(st)}"
                lines.append(f"    {nid}_s{k} [label={_quote(label)}, {_STYLE['saved']}];")
                lines.append(f"    {nid}_s{k} -> {nid} [style=dashed];")
        for child, _ in getattr(node, "next_functions", ()):
            if child is None:
                continue
            lines.append(f"    {node_id(child)} -> {nid};")
            stack.append(child)
    lines.append("}")
    return DotGraph("\n".join(lines) + "\n")
