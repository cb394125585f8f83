"""ONNX mappings of the view, shape, joining and indexing ops (see onnx_rules.py, which
re-exports them for the OpDefs' ``onnx=`` fields): reshape/view/flatten/permute/transpose,
squeeze/unsqueeze/expand, slicing and indexing (``x[:, 1:3, None, idx]``), split/chunk,
cat/stack, tril/triu, index_select and gather; and the helpers both files use.
"""
import math

INT64_MAX = 2 ** 63 - 1


class Unsupported(RuntimeError):
    """A case this mapping cannot express (the exporter names the op and the user's line)."""


def _unsupported(what):
    raise Unsupported(what)


def _is_v(x):
    return type(x).__name__ == "V"


def _dims(dim, rank):
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % rank if rank else 0 for d in dims]


def _shape_args(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return list(args[0])
    return list(args)


# ---- views and shape ops ------------------------------------------------------------------
def reshape(g, x, *shape, dtype=None):
    shape = _shape_args(shape)
    if dtype is not None or any(type(s) is not int and not hasattr(s, "example") for s in shape):
        _unsupported("view(dtype)")
    zero = any(type(s) is int and s == 0 for s in shape)
    return g.op("Reshape", x, g.ints(shape), allowzero=1 if zero else None)


def reshape_as(g, x, other):
    return g.op("Reshape", x, g.shape_of(other))


def flatten(g, x, start_dim=0, end_dim=-1):
    if x.rank == 0:
        return g.reshape(x, [1])
    s, e = start_dim % x.rank, end_dim % x.rank
    merged = x.shape[s:e + 1]
    mid = [math.prod(merged)] if all(m is not None for m in merged) else [-1]
    return g.reshape(x, [g.size(x, d) for d in range(s)] + mid +
                     [g.size(x, d) for d in range(e + 1, x.rank)])


def unflatten(g, x, dim, sizes):
    d = dim % x.rank
    return g.reshape(x, [g.size(x, i) for i in range(d)] + list(sizes) +
                     [g.size(x, i) for i in range(d + 1, x.rank)])


def permute(g, x, *dims):
    dims = _shape_args(dims)
    return g.op("Transpose", x, perm=[d % x.rank for d in dims])


def transpose(g, x, dim0, dim1):
    if x.rank < 2:
        return x
    perm = list(range(x.rank))
    a, b = dim0 % x.rank, dim1 % x.rank
    perm[a], perm[b] = perm[b], perm[a]
    return g.op("Transpose", x, perm=perm)


def t(g, x):
    return transpose(g, x, 0, 1) if x.rank == 2 else x


def T(g, x):
    return g.op("Transpose", x, perm=list(reversed(range(x.rank)))) if x.rank > 1 else x


def mT(g, x):
    return transpose(g, x, -2, -1)


def movedim(g, x, source, destination):
    src = _dims(source, x.rank)
    dst = _dims(destination, x.rank)
    rest = [d for d in range(x.rank) if d not in src]
    perm = [None] * x.rank
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return g.op("Transpose", x, perm=perm)


def unsqueeze(g, x, dim):
    return g.unsqueeze(x, [dim % (x.rank + 1)])


def squeeze(g, x, dim=None):
    dims = list(range(x.rank)) if dim is None else _dims(dim, x.rank)
    dims = [d for d in dims if x.shape[d] == 1]
    return g.squeeze(x, dims) if dims else x


def expand(g, x, *sizes):
    sizes = _shape_args(sizes)
    lead = len(sizes) - x.rank
    shape = [1 if (type(s) is int and s == -1) else s for s in sizes]
    for i in range(x.rank):
        if type(sizes[lead + i]) is int and sizes[lead + i] == -1:
            shape[lead + i] = 1
    return g.op("Expand", x, g.ints(shape))


def expand_as(g, x, other):
    return g.op("Expand", x, g.shape_of(other))


def _slice(g, x, axes, starts, ends, steps=None):
    args = [x, g.ints(starts), g.ints(ends), g.const(list(axes), "int64")]
    if steps is not None and any(s != 1 for s in steps):
        args.append(g.const(list(steps), "int64"))
    return g.op("Slice", *args)


def narrow(g, x, dim, start, length):
    d = dim % x.rank
    return _slice(g, x, [d], [start], [start + length])


def select(g, x, dim, index):
    return g.op("Gather", x, g.scalar(index, "int64"), axis=dim % x.rank)


def _sections(g, x, d, sizes):
    parts = g.op("Split", x, g.const(list(sizes), "int64"), outputs=len(sizes), axis=d)
    return parts if isinstance(parts, tuple) else (parts,)


def split(g, x, split_size_or_sections, dim=0):
    d = dim % x.rank
    n = x.shape[d]
    if n is None:
        _unsupported("split along a dynamic dim")
    s = split_size_or_sections
    sizes = list(s) if isinstance(s, (list, tuple)) else [s] * (n // s) + ([n % s] if n % s
                                                                        else [])
    return _sections(g, x, d, sizes)


def chunk(g, x, chunks, dim=0):
    d = dim % x.rank
    n = x.shape[d]
    if n is None:
        _unsupported("chunk along a dynamic dim")
    size = -(-n // chunks)
    sizes = [size] * (n // size) + ([n % size] if n % size else [])
    return _sections(g, x, d, sizes)


def unbind(g, x, dim=0):
    d = dim % x.rank
    if x.shape[d] is None:
        _unsupported("unbind along a dynamic dim")
    return tuple(g.squeeze(p, [d]) for p in _sections(g, x, d, [1] * x.shape[d]))


def identity(g, x, *args, **kwargs):
    return x


def getitem(g, x, idx):
    items = list(idx) if isinstance(idx, tuple) else [idx]
    n_real = sum(1 for i in items if i is not None and i is not Ellipsis and
                 not (_is_v(i) and i.dtype == "bool"))
    if any(_is_v(i) and i.dtype == "bool" for i in items):
        _unsupported("indexing with a boolean mask (data-dependent shape)")
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.rank - n_real)
    items += [slice(None)] * (x.rank - sum(1 for i in items if i is not None))
    axes, starts, ends, steps, gathers, news = [], [], [], [], [], []
    tensors = []
    d = out = 0
    for it in items:
        if it is None:
            news.append(out)
            out += 1
            continue
        if isinstance(it, slice):
            if it != slice(None):
                step = 1 if it.step is None else it.step
                start = it.start if it.start is not None else (0 if step > 0 else -1)
                stop = it.stop if it.stop is not None else (INT64_MAX if step > 0
                                                            else -INT64_MAX)
                axes.append(d), starts.append(start), ends.append(stop), steps.append(step)
            d += 1
            out += 1
        elif isinstance(it, (list, tuple)) or _is_v(it):
            tensors.append((d, it))
            d += 1
            out += 1
        else:
            gathers.append(d)
            d += 1
    if axes:
        x = _slice(g, x, axes, starts, ends, steps)
    if tensors:
        if len(tensors) > 1 or gathers:
            _unsupported("indexing with several index tensors")
        dim, index = tensors[0]
        index = g.const(list(index), "int64") if isinstance(index, (list, tuple)) \
            else g.cast(index, "int64")
        x = g.op("Gather", x, index, axis=dim)
        extra = (index.rank or 1) - 1
        news = [p + extra if p > dim else p for p in news]
    ints = [it for it in items if it is not None and not isinstance(it, slice)
            and not isinstance(it, (list, tuple)) and not _is_v(it)]
    for dim, value in sorted(zip(gathers, ints), reverse=True):
        x = g.op("Gather", x, g.scalar(value, "int64"), axis=dim)
    if news:
        x = g.unsqueeze(x, news)
    return x


def repeat(g, x, *sizes):
    sizes = _shape_args(sizes)
    if len(sizes) > x.rank:
        x = g.reshape(x, [1] * (len(sizes) - x.rank) + [g.size(x, d) for d in range(x.rank)])
    return g.op("Tile", x, g.ints(sizes))


def flip(g, x, dims):
    dims = _dims(dims, x.rank)
    return _slice(g, x, dims, [-1] * len(dims), [-INT64_MAX] * len(dims), [-1] * len(dims))


def cat(g, tensors, dim=0):
    dt = g.out_dtype
    ts = [g.cast(t, dt) for t in tensors if not (t.shape == (0,))]
    rank = max(t.rank for t in ts)
    return g.op("Concat", *ts, axis=dim % rank)


def stack(g, tensors, dim=0):
    dt = g.out_dtype
    d = dim % (tensors[0].rank + 1)
    return g.op("Concat", *[g.unsqueeze(g.cast(t, dt), [d]) for t in tensors], axis=d)


def _trilu(upper):
    def fn(g, x, diagonal=0):
        return g.op("Trilu", x, g.scalar(diagonal, "int64"), upper=upper)
    return fn


tril = _trilu(0)
triu = _trilu(1)


# ---- indexing -----------------------------------------------------------------------------
def index_select(g, x, dim, index):
    return g.op("Gather", x, g.cast(index, "int64"), axis=dim % x.rank)


def gather(g, x, dim, index, *, sparse_grad=False):
    return g.op("GatherElements", x, g.cast(index, "int64"), axis=dim % x.rank)
