"""options={"check": True}: run each call compiled and eagerly, value by value, and name the
first graph node whose compiled value leaves tolerance (with the user's source line).

The compiled run records every value its generated code assigns (the numpy backend: every
op; the C backend: every op outside kernels and every kernel output); the eager run goes
through a fresh tracer, which records each op's result under the same node names. Tensors
the graph writes into (inputs, buffers) are restored between the two runs and the random
generator is rewound, so both see the same state. The call returns the eager result.
"""
import re
import warnings

import numpy as np

from ..core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import random as _random

_ASSIGN = re.compile(r"^    ([A-Za-z_][\w, ]*?),? = ")


def recording(fn):
    """A copy of a generated run function that also stores each value it assigns into the
    dict `fn.values` (cleared by the caller)."""
    lines = []
    for line in fn.source.splitlines():
        lines.append(line)
        m = _ASSIGN.match(line)
        if m and not line.lstrip().startswith("return"):
            for name in (x.strip() for x in m.group(1).split(",") if x.strip()):
                lines.append(f"    _values[{name!r}] = {name}")
    env = dict(fn.env)
    env["_values"] = values = {}
    name = fn.source.split("(")[0].split()[-1]
    exec(compile("\n".join(lines), "<ember checked graph>", "exec"), env)
    out = env[name]
    out.values = values
    return out


class CheckFailure:
    def __init__(self, node, source, diff, detail):
        self.node, self.source, self.diff, self.detail = node, source, diff, detail

    def __str__(self):
        return (f"node '{self.node}' (made at {self.source}) differs from eager: "
                f"{self.detail}")


def _tolerance(dt):
    return (1e-3, 1e-4) if dt in (np.float32, np.float16) else (1e-7, 1e-9)


def _compare(a, b):
    """None when a (compiled) matches b (eager), else a sentence."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        for x, y in zip(a, b):
            r = _compare(x, y)
            if r:
                return r
        return None
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return None
    x, y = np.asarray(a._data), np.asarray(b._data)
    if x.shape != y.shape:
        return f"shape {list(x.shape)} vs eager {list(y.shape)}"
    if x.dtype.kind in "fc":
        rtol, atol = _tolerance(x.dtype.type)
        bad = ~np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
        if bad.any():
            d = float(np.nanmax(np.abs(x.astype(np.float64) - y.astype(np.float64))))
            return f"max abs difference {d:.3g} at {int(bad.sum())} of {x.size} elements"
        return None
    if not np.array_equal(x, y):
        return f"{int((x != y).sum())} of {x.size} elements differ"
    return None


def checked_call(cf, variant, args, kwargs):
    """Run `variant` with value recording, then eagerly; warn on the first differing node."""
    from .tracer import Tracer
    graph = variant.graphs.get("graph") or variant.graphs.get("forward")
    if getattr(variant, "_checked_fn", None) is None:
        variant._checked_fn = recording(variant.check_fn)
    fn = variant._checked_fn
    flat = variant.check_extract(args, kwargs)
    # what the graph may write into: inputs and lifted tensors; keep copies to restore
    keep = [(t, t._data.copy()) for t in list(flat) + [n.target for n in graph.lifted()]
            if isinstance(t, Tensor)]
    rng = _random.get_rng_state()
    fn.values.clear()
    with no_grad():
        fn(flat, variant.check_lifted, variant.check_syms(flat))
    compiled = dict(fn.values)
    for t, data in keep:
        t._data[...] = data
    _random.set_rng_state(rng)
    tracer = Tracer(cf._lifted_names())
    tracer.record_values = {}
    with tracer:
        for path_value in flat:
            if tracer.known(path_value) is None:
                tracer.add_input(path_value, "in")
        result = cf.fn(*args, **kwargs)
    eager = tracer.record_values
    for n in graph.nodes:
        if n.kind not in ("call", "getitem") or n.name not in compiled or n.name not in eager:
            continue
        detail = _compare(compiled[n.name], eager[n.name])
        if detail:
            failure = CheckFailure(n.name, n.source, None, detail)
            cf.check_failures.append(failure)
            warnings.warn(f"ember.compile check: {failure}", stacklevel=3)
            break
    return result
