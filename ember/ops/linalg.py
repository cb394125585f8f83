"""Matrix products beyond the matmul family, and the module that gathers them all: einsum,
tensordot, kron, trace, diag, diag_embed, diagflat, cross, cdist here; matmul, mm, bmm, mv,
dot, outer, addmm & co and linear come from ops/matmul.py and are re-exported.

Every kernel calls BLAS (np.matmul / np.einsum(optimize=True)) on whole batches, never a
Python loop over batch elements. Derivatives are written with ember ops, so they can be
differentiated again.
"""
import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import strides as S
from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name
from ..dispatch_args import int_arg
from . import meta_rules as M
from .registry import (OpDef, EXTERN, COMPOSITE, LOWER_PRECISION, FP32, LINEAR, MULTILINEAR,
                       register, register_each)
from ..autograd.derivative import Derivative
from .registry import OPS
from .dtype_support import ALL, ALL_BUT_BOOL
from . import batch_rules as _br
# the matmul family, re-exported: code imports these names from here
from .matmul import (LOWP, FnNode, record_fn, finish, _out, kernel_array,  # noqa: F401
                     matmul, mm, bmm, mv, dot, vdot, outer, addmm, addmv, addbmm, baddbmm,
                     linear)


# ---- einsum ---------------------------------------------------------------------------------
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _parse_einsum(equation, shapes):
    """Rewrite `equation` with explicit letters for ellipses and an explicit output.

    Returns (list of input subscripts, output subscripts, {letter: size})."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    pos = 0
    for part in terms + ([rhs] if arrow else []):
        for k, c in enumerate(part.replace("...", "")):
            if c not in _LETTERS:
                at = eq.index(c, pos) if c in eq[pos:] else pos
                raise RuntimeError(f"einsum(): invalid subscript given at index {at} in the "
                                   "equation string, subscripts must be in [a-zA-Z]")
    used = set(c for c in eq if c in _LETTERS)
    free = [c for c in _LETTERS if c not in used]
    ell_nd = max([len(sh) - len(t.replace("...", "")) for t, sh in zip(terms, shapes)
                  if "..." in t] or [0])
    ell = "".join(free[:ell_nd])
    subs, sizes = [], {}
    for i, (t, sh) in enumerate(zip(terms, shapes)):
        if "..." in t:
            n = len(sh) - len(t.replace("...", ""))
            if n < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(t) - 3}) is more than the number of dimensions "
                                   f"({len(sh)}) for operand {i}")
            t = t.replace("...", ell[ell_nd - n:])
        elif len(t) != len(sh):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({len(sh)}) for "
                               f"operand {i} and no ellipsis was given")
        for k, (c, s) in enumerate(zip(t, sh)):
            if c in sizes and s != sizes[c] and s != 1 and sizes[c] != 1:
                if c in ell:
                    raise RuntimeError(f"einsum(): dimension {ell.index(c)} covered by ellipsis "
                                       f"in operand {i}has size {s} which does not broadcast "
                                       f"with previously seen ellipsis with size {sizes[c]} "
                                       "for the respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {i} which "
                                   f"does not broadcast with previously seen size {sizes[c]}")
            if c not in sizes or sizes[c] == 1:
                sizes[c] = s
        subs.append(t)
    if arrow:
        seen = set()
        for c in rhs.replace("...", ""):
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            seen.add(c)
        out = rhs.replace("...", ell) if "..." in rhs else rhs
    else:
        counts = {}
        for t in subs:
            for c in t:
                if c not in ell:
                    counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return subs, out, sizes


def einsum(equation, *operands):
    """Einstein summation (``einsum("bij,bjk->bik", a, b)``), with ellipses, broadcasting and
    repeated subscripts (diagonals). Operands come as varargs or as one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) == 2 and operands[0].dtype is not operands[1].dtype and \
            not (operands[0].numel() and operands[1].numel()):
        # (torch's product of an empty pair is zeros of the second operand's dtype: no
        # kernel runs, so no dtype check)
        operands = (operands[0].to(operands[1].dtype), operands[1])
    for t in operands[1:]:
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"expected scalar type {torch_name(operands[0].dtype)} but found "
                               f"{torch_name(t.dtype)}")
    subs, out, sizes = _parse_einsum(equation, [t._data.shape for t in operands])
    return _einsum(subs, out, sizes, operands)


def _einsum(subs, out, sizes, operands):
    eq = ",".join(subs) + "->" + out
    dt = operands[0].dtype
    try:
        if dt is D.bool_:
            r = np.einsum(eq, *[t._data.astype(np.int64) for t in operands],
                          optimize=True) != 0
        else:
            arrays = [kernel_array(t) for t in operands]
            r = _einsum_as_matmul(subs, out, arrays) if len(arrays) == 2 else None
            if r is None:
                r = np.einsum(eq, *arrays, optimize=True)
        r = np.asarray(r)
    except M.MetaData:      # meta operands: the (C-contiguous) result's metadata
        r = M.out_array(tuple(sizes[c] for c in out), dt.np, *operands)
    if len(subs) == 1 and dt._kind < 2 and set(subs[0]) - set(out):
        dt = D.int64   # PyTorch reduces a lone integer operand with sum(), which gives int64
    result = wrap(r if r.flags.c_contiguous else r.copy(), dt)
    if dt._kind >= 2:
        record_fn("EinsumBackward0", operands, (result,),
                  lambda grads, needs, *ops: _einsum_grads(grads[0], needs, subs, out, sizes,
                                                           ops),
                  operands)
    return result


def _einsum_as_matmul(subs, out, arrays):
    """A two-operand einsum as one batched BLAS matmul (np.einsum leaves contractions that
    keep a batch letter, like 'bij,bjk->bik', to its own loops). None when the pattern has
    repeated letters or broadcasting, which np.einsum then handles."""
    (sa, sb), (a, b) = subs, arrays
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb) or len(set(out)) != len(out):
        return None
    size = {}
    for sub, arr in ((sa, a), (sb, b)):
        for c, n in zip(sub, arr.shape):
            if size.setdefault(c, n) != n:
                return None
    # letters in one operand only and not in the output are summed away first
    a = a.sum(axis=tuple(i for i, c in enumerate(sa) if c not in sb and c not in out)) \
        if any(c not in sb and c not in out for c in sa) else a
    sa = "".join(c for c in sa if c in sb or c in out)
    b = b.sum(axis=tuple(i for i, c in enumerate(sb) if c not in sa and c not in out)) \
        if any(c not in sa and c not in out for c in sb) else b
    sb = "".join(c for c in sb if c in sa or c in out)
    batch = [c for c in sa if c in sb and c in out]
    contract = [c for c in sa if c in sb and c not in out]
    a_free = [c for c in sa if c not in sb]
    b_free = [c for c in sb if c not in sa]
    if sorted(out) != sorted(batch + a_free + b_free):
        return None

    def prod(letters):
        n = 1
        for c in letters:
            n *= size[c]
        return n
    bshape = [size[c] for c in batch]
    a2 = a.transpose([sa.index(c) for c in batch + a_free + contract]).reshape(
        bshape + [prod(a_free), prod(contract)])
    b2 = b.transpose([sb.index(c) for c in batch + contract + b_free]).reshape(
        bshape + [prod(contract), prod(b_free)])
    r = np.matmul(a2, b2).reshape(bshape + [size[c] for c in a_free + b_free])
    order = batch + a_free + b_free
    return r.transpose([order.index(c) for c in out])


def _einsum_grads(g, needs, subs, out, sizes, ops):
    """d/d operand i: an einsum of the gradient with the other operands, producing the unique
    letters of operand i; letters summed only in operand i are expanded back, and repeated
    letters (diagonals) are put back on their diagonal."""
    res = []
    for i, s in enumerate(subs):
        if not needs[i]:
            res.append(None)
            continue
        others = [subs[j] for j in range(len(subs)) if j != i]
        avail = set(out).union(*others) if others else set(out)
        uniq = "".join(dict.fromkeys(s))
        keep = "".join(c for c in uniq if c in avail)
        gi = _einsum([out] + others, keep, sizes,
                     (g,) + tuple(ops[j] for j in range(len(subs)) if j != i))
        # letters only in operand i: broadcast the gradient along them
        for k, c in enumerate(uniq):
            if c not in avail:
                gi = gi.unsqueeze(k)
        gi = gi.expand(tuple(sizes[c] for c in uniq))
        if len(uniq) != len(s):
            gi = _undiagonal(gi, uniq, s)
        res.append(gi)
    return res


def _undiagonal(gi, uniq, s):
    """Spread a gradient over unique letters onto the (generalised) diagonal of subscripts s."""
    shape = [gi.shape[uniq.index(c)] for c in s]
    first = {}
    for k, c in enumerate(s):
        first.setdefault(c, k)
    # place each unique letter's dim at its first occurrence, size-1 dims at repeats
    order = sorted(range(len(uniq)), key=lambda j: first[uniq[j]])
    gi = gi.permute(order)
    view = [shape[k] if first[c] == k else 1 for k, c in enumerate(s)]
    gi = gi.reshape(view).expand(shape)
    mask = np.ones(shape, dtype=bool)
    for k, c in enumerate(s):
        if first[c] != k:
            a = np.arange(shape[k])
            sh1 = [1] * len(s)
            sh1[k] = shape[k]
            sh2 = [1] * len(s)
            sh2[first[c]] = shape[k]
            mask = mask & (a.reshape(sh1) == a.reshape(sh2))
    return gi * wrap(mask.astype(gi.dtype.np), gi.dtype)


# ---- tensordot, kron, trace ------------------------------------------------------------------
def tensordot(a, b, dims=2, out=None):
    """Contract dims of `a` with dims of `b`: ``dims`` is an int n (last n of a with first n of
    b) or a pair of lists. Computed as one matrix product."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {torch_name(a.dtype)} but found {torch_name(b.dtype)}")
    wa = [S.wrap_dim(d, a.dim()) for d in da]
    wb = [S.wrap_dim(d, b.dim()) for d in db]
    for x, y, ox, oy in zip(wa, wb, da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {ox} and second has size {b.shape[y]} "
                               f"in dim {oy}")
    fa = [d for d in range(a.dim()) if d not in wa]
    fb = [d for d in range(b.dim()) if d not in wb]
    ka = int(np.prod([a.shape[d] for d in wa], dtype=np.int64))
    am = a.permute(fa + wa).reshape(-1, ka)
    bm = b.permute(wb + fb).reshape(ka, -1)
    r = matmul(am, bm).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])
    return _out(r, out)


def kron(input, other, *, out=None):
    """Kronecker product: block (i, j) is ``input[i, j] * other``."""
    nd = max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    ai = a.reshape([s for d in a.shape for s in (d, 1)])
    bi = b.reshape([s for d in b.shape for s in (1, d)])
    return _out((ai * bi).reshape([x * y for x, y in zip(a.shape, b.shape)]), out)


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (integer inputs give int64)."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is D.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return input.diagonal().sum()


# ---- diag, diag_embed, diagflat ---------------------------------------------------------------
_DIAG_EMBED = Derivative("diag_embed", attrs={"offset": 0, "dim1": -2, "dim2": -1},
                         grads={"self": lambda g, offset, dim1, dim2: g.diagonal(offset, dim1, dim2)})


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals (over dims dim1, dim2 of the result) hold `input`'s last dim."""
    offset = int_arg(offset, "diag_embed", "offset", 2)
    nd = input.dim() + 1
    d1, d2 = S.wrap_dim(dim1, nd), S.wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    a = input._data if input.dim() else input._data.reshape(1)
    n = a.shape[-1] + abs(offset)
    rest = list(a.shape[:-1])
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    if type(a) is M.MetaArray:      # meta: the result's metadata (np.zeros is C order)
        return finish(_DIAG_EMBED, (input,), M.meta_array(shape, a.dtype), input.dtype,
                      {"offset": offset, "dim1": d1, "dim2": d2})
    r = np.zeros(shape, a.dtype)
    # write through a view of r in which (d1, d2) are the last two dims
    others = [k for k in range(nd) if k not in (d1, d2)]
    v = r.transpose(others + [d1, d2])
    i = np.arange(a.shape[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    v[..., rows, cols] = a
    return finish(_DIAG_EMBED, (input,), r, input.dtype,
                  {"offset": offset, "dim1": d1, "dim2": d2})


def diag(input, diagonal=0, *, out=None):
    """1-D -> a square matrix with `input` on a diagonal; 2-D -> a copy of that diagonal."""
    if input.dim() == 1:
        return _out(diag_embed(input, diagonal, 0, 1), out)
    if input.dim() == 2:
        return _out(input.diagonal(diagonal).clone(), out)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diagflat(input, offset=0):
    offset = int_arg(offset, "diagflat", "offset", 2)
    return diag_embed(input.reshape(-1), offset, 0, 1)


# ---- cross, cdist -----------------------------------------------------------------------------
_CROSS = Derivative("linalg_cross", of="cross", inputs=("self", "other"), attrs={"dim": -1},
                    grads={"self": lambda g, other, dim: _cross(other, g, dim),
                           "other": lambda g, self, dim: _cross(g, self, dim)})


def _cross(a, b, dim):
    """Cross product of broadcast tensors along `dim` (already wrapped, size 3)."""
    shape = S.broadcast_shapes(a._data.shape, b._data.shape)
    x, y = np.broadcast_to(a._data, shape), np.broadcast_to(b._data, shape)
    try:
        r = np.cross(x, y, axis=dim)
    except M.MetaData:      # meta operands: the metadata of NumPy's result
        M.check_meta_devices((a, b), {})
        r = M.meta_array(shape, a.dtype.np, M.cross_layout(a, b, shape, dim))
    return finish(_CROSS, (a, b), r, a.dtype, {"dim": dim})


def linalg_cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along `dim`, broadcasting the other dims."""
    # torch's order: the shapes, then a bool input's kernel, then the dtypes
    if input.dim() != other.dim():
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions.")
    shape = S.broadcast_shapes(input._data.shape, other._data.shape)
    d = S.wrap_dim(dim, len(shape))
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    if input.dtype is D.bool_:      # (torch's kernel has no bool loop)
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {torch_name(input.dtype)} but found "
                           f"{torch_name(other.dtype)}")
    return _out(_cross(input, other, d), out)


def cross(input, other, dim=None, *, out=None):
    """``torch.cross``: like linalg.cross, but dim=None picks the first dim of size 3."""
    if dim is None:
        shape = S.broadcast_shapes(input._data.shape, other._data.shape)
        dim = next((k for k, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim, out=out)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M)."""
    if x1.dim() < 2 or x2.dim() < 2:
        bad, t = ("X1", x1) if x1.dim() < 2 else ("X2", x2)
        raise RuntimeError(f"cdist only supports at least 2D tensors, {bad} got: {t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{torch_name(x1.dtype)}")
    from .norms import vector_norm
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(diff, p, dim=-1)


register_each(globals(), EXTERN, (kron, cross), jvp=MULTILINEAR)
register_each(globals(), EXTERN, (diag, diag_embed, diagflat), jvp=LINEAR)
register(OpDef("ger", EXTERN, jvp=MULTILINEAR), lambda input, vec2: outer(input, vec2),
         names=("ger",))
# torch.tensordot is Python code that reads a.dim() for an int `dims` (a Scalar to its
# parser: uint64)
tensordot = register(OpDef("tensordot", COMPOSITE, method=False, jvp=MULTILINEAR,
                           uint64_scalars={"dims"},
                           torch_python=("dim", (0, 1), lambda a, k: isinstance(
                               k.get("dims", a[2] if len(a) > 2 else 2), int))), tensordot)
# autocast: trace and cdist run in float32; einsum in the lower precision when it contracts
trace = register(OpDef("trace", EXTERN, amp=FP32, jvp=LINEAR), trace)
cdist = register(OpDef("cdist", COMPOSITE, method=False, amp=FP32,
                        dtypes=ALL - {D.float16, D.bfloat16}), cdist)


def einsum_contracts(equation):
    """True when einsum sums a letter shared by two operands (PyTorch computes it with bmm,
    a lower-precision op); elementwise products and one-operand reductions are not cast."""
    lhs, arrow, rhs = equation.replace(" ", "").replace(".", "").partition("->")
    terms = lhs.split(",")
    if not arrow:
        seen = "".join(terms)
        rhs = "".join(c for c in seen if seen.count(c) == 1)
    return any(sum(c in t for t in terms) > 1 and c not in rhs for c in set("".join(terms)))


def _einsum_amp(args, kwargs):
    return LOWER_PRECISION if einsum_contracts(args[0]) else None


einsum = register(OpDef("einsum", COMPOSITE, method=False, amp=_einsum_amp, jvp=MULTILINEAR,
                         dtypes=ALL_BUT_BOOL, dtype_kernel="bmm",
                        onnx=_ox.einsum),
                  einsum)

# vmap batching rules (ember/ops/batch_rules.py)
OPS["cdist"].batch = _br.leading
OPS["einsum"].batch = _br.loop
OPS["ger"].batch = _br.decompose
# meta rules (ember/ops/meta_rules.py)
OPS["cdist"].meta = M.cdist
OPS["cross"].meta = M.cross
