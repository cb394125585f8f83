"""C code generation: one Kernel IR (ember/compiler/kernel.py) -> the C source of one function

    void <name>(int64_t R, int64_t N, void **ptrs, const int64_t *strides, int nthreads)

`ptrs` holds the inputs' pointers (element (0, 0) of each), in kernel.inputs order, then the
outputs'; `strides` holds (so_0, sj_0, so_1, sj_1, ...) in elements. Strides an Input promised
to be "zero" or "one" are compile-time constants (so the inner loop is unit-stride and
vectorises); "any" strides are read from `strides`.

Shape of the generated code, per row r (rows are split across OpenMP threads):
    row prelude: row pointers, values that do not depend on j (hoisted out of the j loops)
    for each reduction k: one `#pragma omp simd reduction(...)` loop over j -> row_k
    per-row outputs: written once
    per-element outputs: one `#pragma omp simd` loop over j computing all of them
Within a loop every distinct subexpression is one `const` temporary (expressions are hashable
tuples, so CSE is a dict lookup). A costly element value that several loops of a row need
(layer_norm's gelu(x): the mean loop, the variance loop, the output loop) is computed once,
stored in a per-thread row buffer and loaded by the later loops (plan_row_cache). A kernel
without reductions whose rows are few and long (R < 4 * threads, e.g. R == 1) splits each
row's j loop across threads instead. Small kernels (R*N < PARALLEL_MIN_ELEMENTS) run on the
calling thread.

Semantics follow eager ember/torch: max/min reductions and maximum/minimum propagate NaN,
sign(NaN) = 0, relu keeps NaN, pow with a
constant exponent of 2, 3, 0.5, -0.5, -1, -2 uses torch's fast paths, bool is uint8_t 0/1.
The transcendentals come from cmath.py (vectorisable); sin, cos and general pow are libm's.
"""
import math

import numpy as np

from ..core import dtype as D
from ..ops.registry import op_for
from ..ops.lowering import NO_INT, CContext, template_args
from .cmath import SOURCE as CMATH_SOURCE
from .kernel import STRIDE_ZERO, STRIDE_ONE

CTYPES = {n: D.CPP_TYPES[n] for n in ("float32", "float64", "int32", "int64")}
CTYPES["bool"] = "uint8_t"       # NumPy's one-byte bool
FLOATS = ("float32", "float64")
# below this many elements (R*N) a kernel runs on one thread: a fork/join costs a few us
PARALLEL_MIN_ELEMENTS = 32768

HELPERS = r"""
/* integer power (negative exponents of ints: 1, -1 or 0 like torch) */
static inline int64_t em_ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    int64_t r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
"""

def c_literal(value, dtype):
    """A C literal of `value` as `dtype` (float32 literals are the float32-rounded value,
    printed with enough digits to read back exactly)."""
    if dtype == "bool":
        return "1" if value else "0"
    if dtype in ("int32", "int64"):
        v = int(value)
        if dtype == "int32":
            return f"({v})" if v > -2**31 else "INT32_MIN"
        return f"INT64_C({v})" if v > -2**63 else "INT64_MIN"
    v = float(np.float32(value)) if dtype == "float32" else float(value)
    suffix = "f" if dtype == "float32" else ""
    if math.isnan(v):
        return "NAN" if dtype == "float32" else "(double)NAN"
    if math.isinf(v):
        inf = "INFINITY" if dtype == "float32" else "(double)INFINITY"
        return inf if v > 0 else f"(-{inf})"
    s = ("%.9g" % v) if dtype == "float32" else repr(v)
    if not any(c in s for c in ".en"):
        s += ".0"
    return f"({s}{suffix})" if s.startswith("-") else s + suffix


def expr_dtype(e, kernel):
    """The dtype of expression `e`."""
    tag = e[0]
    if tag == "load":
        return kernel.inputs[e[1]].dtype
    if tag == "row":
        return kernel.reductions[e[1]].dtype
    if tag == "const":
        return e[2]
    return e[1] if tag == "n" else e[2]


class _Loop:
    """CSE state of one scope: `lines` of C, `names` expr -> C variable."""

    def __init__(self, prefix):
        self.prefix, self.lines, self.names = prefix, [], {}


class _Emitter:
    """Emits the body of one row: row-invariant values go to the row scope (before the loop
    that first needs them), element values to the current loop's scope."""

    def __init__(self, kernel, cached=None):
        self.k = kernel
        self.row = _Loop("w")
        self.counter = 0
        self.nrows_done = 0          # reductions whose row value exists so far
        self.cached = cached or {}   # expr -> (buffer name, index of the loop that fills it)
        self.loop_index = 0          # which j loop of the row is being emitted
        self._row_level = {}

    def row_level(self, e):
        r = self._row_level.get(e)
        if r is None:
            tag = e[0]
            if tag == "load":
                r = self.k.inputs[e[1]].inner == STRIDE_ZERO
            elif tag == "call":
                r = all(self.row_level(a) for a in e[3:])
            else:
                r = True
            self._row_level[e] = r
        return r

    def value(self, e, loop):
        """C expression (a temporary's name or a literal) for `e`; `loop` is the element scope
        (None when emitting row-level code only)."""
        tag = e[0]
        if tag == "const":
            return c_literal(e[1], e[2])
        if tag == "n":
            return f"(({CTYPES[e[1]]})N)"
        if tag == "row":
            if e[1] >= self.nrows_done:
                raise ValueError(f"expression uses reduction {e[1]} before it is computed")
            return f"row{e[1]}"
        scope = self.row if (loop is None or self.row_level(e)) else loop
        name = scope.names.get(e)
        if name is None:
            buf, filler = self.cached.get(e, (None, None))
            if buf is not None and self.loop_index > filler:
                code = f"{buf}[j]"           # computed by an earlier loop of this row
            else:
                code = self.load(e) if tag == "load" else self.call(e, loop)
            name = f"{scope.prefix}{self.counter}"
            self.counter += 1
            ctype = CTYPES[expr_dtype(e, self.k)]
            scope.lines.append(f"const {ctype} {name} = {code};")
            if buf is not None and self.loop_index == filler:
                scope.lines.append(f"{buf}[j] = {name};")
            scope.names[e] = name
        return name

    def load(self, e):
        i = e[1]
        inner = self.k.inputs[i].inner
        if inner == STRIDE_ZERO:
            return f"in{i}r[0]"
        if inner == STRIDE_ONE:
            return f"in{i}r[j]"
        return f"in{i}r[j * sj{i}]"

    def call(self, e, loop):
        op, dtype, args = e[1], e[2], e[3:]
        a = [self.value(x, loop) for x in args]
        adt = expr_dtype(args[0], self.k) if args else dtype
        return op_to_c(op, dtype, adt, a, args)


def op_to_c(op, dtype, adt, a, args=()):
    """C for IR op `op` (an op's registry name, or "cast") with result dtype `dtype`, argument
    dtype `adt` and argument code `a`: the op's lowering template (OpDef.lower, see
    ember/ops/lowering.py) filled in."""
    T = CTYPES[dtype]
    if op == "cast":
        x = a[0]
        return f"(({T})({x} != 0))" if dtype == "bool" else f"(({T}){x})"
    lower = _lowering(op)
    isf = adt in FLOATS
    code = lower.c if isf or lower.c_int is None else lower.c_int
    if code is NO_INT:
        raise NotImplementedError(f"{op} of {adt}: the fusion pass casts ints to float first")
    f = "f" if adt == "float32" else ""
    if callable(code):
        return code(CContext(dtype, T, adt, f, a, args))
    return code.format(T=T, f=f, **template_args(a))


def _lowering(op):
    opdef = op_for(op)
    lower = opdef.lower if opdef is not None else None
    if lower is None or lower.c is None:
        raise NotImplementedError(f"no C lowering for op {op!r}")
    return lower


# cost of recomputing a node in a later loop rather than storing it in a row buffer: its
# lowering's `cost` (transcendentals and divisions are costly)
CACHE_MIN_COST = 6


def plan_row_cache(kernel):
    """Element values that several j loops of a row need (a reduction's input reused by the
    next reduction or the outputs: layer_norm's gelu(x)) and that are costly to recompute:
    the first loop stores them in a per-thread row buffer, later loops load them.
    Returns {expr: (buffer name, index of the loop that fills it)}."""
    loops = [[r.expr] for r in kernel.reductions]
    loops.append([o.expr for o in kernel.outputs if not o.per_row])
    em = _Emitter(kernel)
    first = {}
    for i, roots in enumerate(loops):
        stack = list(roots)
        while stack:
            e = stack.pop()
            if e[0] == "call" and not em.row_level(e) and e not in first:
                first[e] = i
                stack.extend(e[3:])
    cached = {}

    memo = {}        # id(expr) -> cost; cleared when a buffer is chosen

    def cost(e):     # of computing e in a later loop, given the buffers chosen so far
        c = memo.get(id(e))
        if c is None:
            if e[0] != "call" or e in cached or em.row_level(e):
                c = 0.5 if e[0] in ("load", "call") else 0
            else:
                c = (1 if e[1] == "cast" else _lowering(e[1]).cost) + sum(cost(a) for a in e[3:])
            memo[id(e)] = c
        return c

    seen = set()

    def visit(e, i):
        if e[0] != "call" or (id(e), i) in seen or em.row_level(e) or e in cached:
            return
        seen.add((id(e), i))
        if first[e] < i and cost(e) >= CACHE_MIN_COST:
            cached[e] = (f"cb{len(cached)}", first[e])
            memo.clear()
            return
        for a in e[3:]:
            visit(a, i)

    for i, roots in enumerate(loops):
        for e in roots:
            visit(e, i)
    return cached


def _red_init(op, dtype):
    if op == "sum":
        return "0"
    lo = op == "max"
    if dtype in FLOATS:
        return "-INFINITY" if lo else "INFINITY"
    return {"bool": ("0", "1"), "int32": ("INT32_MIN", "INT32_MAX"),
            "int64": ("INT64_MIN", "INT64_MAX")}[dtype][0 if lo else 1]


def _row_body(kernel, simd_pragma, ind, cached=None):
    """Lines of one row's work (r is defined); `simd_pragma` heads every j loop."""
    em = _Emitter(kernel, cached)
    out = []
    for i, inp in enumerate(kernel.inputs):
        ct = CTYPES[inp.dtype]
        off = "" if inp.outer == STRIDE_ZERO else (" + r" if inp.outer == STRIDE_ONE
                                                   else f" + r * so{i}")
        out.append(f"const {ct} *in{i}r = in{i}{off};")

    def flush_row():
        out.extend(em.row.lines)
        em.row.lines = []

    for k, red in enumerate(kernel.reductions):
        T = CTYPES[red.dtype]
        loop = _Loop("e")
        v = em.value(red.expr, loop)
        flush_row()
        out.append(f"{T} acc{k} = {_red_init(red.op, red.dtype)};")
        body = list(loop.lines)
        if red.op == "sum":
            clause = f"reduction(+:acc{k})"
            body.append(f"acc{k} += ({T}){v};")
        else:
            cmp = ">" if red.op == "max" else "<"
            clause = f"reduction({red.op}:acc{k})"
            body.append(f"acc{k} = ({T}){v} {cmp} acc{k} ? ({T}){v} : acc{k};")
            if red.dtype in FLOATS:   # the max/min lanes skip NaN; a flag remembers it
                out.append(f"int nan{k} = 0;")
                clause += f" reduction(|:nan{k})"
                body.append(f"nan{k} |= ({v} != {v});")
        out.append(f"{simd_pragma} {clause}")
        out.append("for (int64_t j = 0; j < N; j++) {")
        out.extend("    " + s for s in body)
        out.append("}")
        if red.op != "sum" and red.dtype in FLOATS:
            out.append(f"const {T} row{k} = nan{k} ? ({T})NAN : acc{k};")
        else:
            out.append(f"const {T} row{k} = acc{k};")
        em.nrows_done = k + 1
        em.loop_index = k + 1

    for o, outp in enumerate(kernel.outputs):
        if outp.per_row:
            v = em.value(outp.expr, None)
            flush_row()
            out.append(f"out{o}[r] = ({CTYPES[outp.dtype]}){v};")
    elem = [(o, outp) for o, outp in enumerate(kernel.outputs) if not outp.per_row]
    if elem:
        loop = _Loop("e")
        stores = []
        for o, outp in elem:
            v = em.value(outp.expr, loop)
            stores.append(f"out{o}r[j] = ({CTYPES[outp.dtype]}){v};")
        flush_row()
        for o, outp in elem:
            out.append(f"{CTYPES[outp.dtype]} *out{o}r = out{o} + r * N;")
        out.append(simd_pragma)
        out.append("for (int64_t j = 0; j < N; j++) {")
        out.extend("    " + s for s in loop.lines + stores)
        out.append("}")
    return [ind + s for s in out]


PRELUDE = "\n".join(["#include <stdint.h>", "#include <stdlib.h>", "#include <math.h>",
                     CMATH_SOURCE, HELPERS])


def generate(kernel, name):
    """The C source (with its math and headers) of `kernel` as function `name`."""
    return PRELUDE + "\n" + generate_function(kernel, name)


def generate_many(kernels, names):
    """One C source defining every kernel (one compiler call builds a whole graph's kernels)."""
    return PRELUDE + "".join("\n" + generate_function(k, n) for k, n in zip(kernels, names))


def generate_function(kernel, name):
    """The C function of `kernel` alone (it needs PRELUDE before it)."""
    lines = []
    lines.append(f"void {name}(int64_t R, int64_t N, void **ptrs, const int64_t *strides, "
                 "int nthreads) {")
    ops = ", ".join(kernel.ops) if kernel.ops else "(not named)"
    lines.append(f"    /* {kernel.describe()}\n       fused ops: {ops} */")
    n_in = len(kernel.inputs)
    for i, inp in enumerate(kernel.inputs):
        ct = CTYPES[inp.dtype]
        lines.append(f"    const {ct} *in{i} = (const {ct} *)ptrs[{i}];")
        if inp.outer not in (STRIDE_ZERO, STRIDE_ONE):
            lines.append(f"    const int64_t so{i} = strides[{2 * i}];")
        if inp.inner not in (STRIDE_ZERO, STRIDE_ONE):
            lines.append(f"    const int64_t sj{i} = strides[{2 * i + 1}];")
    for o, outp in enumerate(kernel.outputs):
        ct = CTYPES[outp.dtype]
        lines.append(f"    {ct} *out{o} = ({ct} *)ptrs[{n_in + o}];")
    lines.append("    const int nt = nthreads > 0 ? nthreads : 1;")
    lines.append("    if (R <= 0) return;")
    if not any(o.per_row for o in kernel.outputs):
        lines.append("    if (N <= 0) return;")
    lines.append(f"    const int par = nt > 1 && R * (N + 1) >= {PARALLEL_MIN_ELEMENTS};")
    split_rows = not kernel.reductions and not any(o.per_row for o in kernel.outputs)
    if split_rows:
        lines.append("    if (par && R < 4 * nt) {   /* few long rows: split each row */")
        lines.append("        #pragma omp parallel num_threads(nt)")
        lines.append("        for (int64_t r = 0; r < R; r++) {")
        lines += _row_body(kernel, "#pragma omp for simd schedule(static)", " " * 12)
        lines.append("        }")
        lines.append("        return;")
        lines.append("    }")
    cached = plan_row_cache(kernel)
    lines.append("    #pragma omp parallel num_threads(nt) if(par)")
    lines.append("    {")
    for e, (buf, _) in cached.items():   # per-thread row buffers (see plan_row_cache)
        ct = CTYPES[expr_dtype(e, kernel)]
        lines.append(f"        {ct} *{buf} = ({ct} *)malloc(sizeof({ct}) * (size_t)(N + 1));")
        lines.append(f"        if (!{buf}) abort();")
    lines.append("        #pragma omp for schedule(static)")
    lines.append("        for (int64_t r = 0; r < R; r++) {")
    lines += _row_body(kernel, "#pragma omp simd", " " * 12, cached)
    lines.append("        }")
    for buf, _ in cached.values():
        lines.append(f"        free({buf});")
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"
