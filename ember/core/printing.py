"""`repr(tensor)` in PyTorch's format: `tensor([[1., 2.],\n        [3., 4.]])`.

The rules are PyTorch's: one formatter per tensor picks integer mode (`1.`), fixed (`1.5000`)
or scientific (`1.0000e+08`) from the nonzero finite values; long tensors are summarised with
`...` past `threshold` elements; a dtype suffix appears when the dtype is not implied.
"""
import math
from dataclasses import dataclass

import numpy as np


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: object = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print (PyTorch's options: precision, threshold, edgeitems, ...)."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return dict(vars(PRINT_OPTS))


class _Formatter:
    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values.reshape(-1).tolist():
                self.max_width = max(self.max_width, len(_int_str(v)))
        else:
            v = values.reshape(-1).astype(np.float64)
            nz = v[np.isfinite(v) & (v != 0)]
            if nz.size:
                a = np.abs(nz)
                lo, hi = a.min(), a.max()
                vals = nz.tolist()
                if np.any(nz != np.ceil(nz)):
                    self.int_mode = False
                if self.int_mode:
                    self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
                else:
                    self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                if PRINT_OPTS.sci_mode is not None:  # a forced mode also sets the widths
                    self.sci_mode = PRINT_OPTS.sci_mode
                if self.sci_mode:
                    self.max_width = max(len(f"{x:.{p}e}") for x in vals)
                elif self.int_mode:
                    self.max_width = max(len(f"{x:.0f}") + 1 for x in vals)
                else:
                    self.max_width = max(len(f"{x:.{p}f}") for x in vals)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def format(self, value):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = _int_str(value)
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """PyTorch's complex format: the real parts and the imaginary parts each get their own
    formatter (``1.0000e-05+2.j``); a sign always joins them."""

    def __init__(self, values):
        self.re = _Formatter(values.real, True)
        self.im = _Formatter(values.imag, True)
        self.max_width = self.re.max_width + self.im.max_width + 1

    def format(self, value):
        real = self.re.format(value.real)
        imag = (self.im.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _int_str(v):
    return str(bool(v)) if isinstance(v, (bool, np.bool_)) else str(v)


def _summarized(a):
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    if not e:
        return a[:0]
    if a.shape[0] > 2 * e:
        rows = [a[i] for i in range(e)] + [a[i] for i in range(a.shape[0] - e, a.shape[0])]
    else:
        rows = list(a)
    return np.stack([_summarized(r) for r in rows])


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."] +
                [fmt.format(v) for v in a[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        parts = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] +
                 [_tensor_str(a[i], indent + 1, summarize, fmt)
                  for i in range(a.shape[0] - e, a.shape[0])])
    else:
        parts = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _add_suffixes(s, suffixes, indent):
    out = [s]
    last = len(s) - s.rfind("\n") + 1
    for suf in suffixes:
        if last + len(suf) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suf)
            last = indent + len(suf)
        else:
            out.append(", " + suf)
            last += len(suf) + 2
    out.append(")")
    return "".join(out)


def tensor_repr(t, prefix="tensor("):
    from . import dtype as D
    a = t._data
    if t.dtype in (D.float16, D.bfloat16):
        a = a.astype(np.float32)
    indent = len(prefix)
    suffixes = []
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if t.dtype is not D.get_default_dtype():
            suffixes.append("dtype=" + repr(t.dtype))
        body = "[]"
    else:
        if t.dtype not in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool_):
            suffixes.append("dtype=" + repr(t.dtype))
        summarize = a.size > PRINT_OPTS.threshold
        shown = _summarized(a) if summarize else a
        fmt = (_ComplexFormatter(shown) if t.dtype.is_complex else
               _Formatter(shown, t.dtype.is_floating_point))
        body = _tensor_str(a, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
