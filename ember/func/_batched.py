"""BatchedTensor and vmap levels: the values `ember.func.vmap` passes to the function it maps.

A `BatchedTensor` stands for a batch of tensors at one vmap *level*: it holds the physical
tensor (`_value`: a plain tensor, or a BatchedTensor of an outer level when vmaps nest) and
the position of the batch dim in it (`_bdim`). Its metadata (shape, size(), dim(), numel,
stride, is_contiguous) is the *logical* one, the physical tensor's without the batch dim, as
torch's vmap reports it. Its `_data` is a `_Logical` placeholder that carries only that
metadata: an op that bypasses vmap and reaches raw array math fails loudly instead of
computing on the wrong data. Autograd fields (requires_grad, grad_fn) are the physical
tensor's: autograd records the physical ops the batching rules run.

Levels: each running vmap pushes a `Level(level, size)`; `active_levels()` lists them,
outermost first. `to_physical` / `from_physical` move a value between its nested-wrapper
form and one plain tensor with a leading dim per level (the form ember.func.grad and
friends differentiate).

    >>> levels = active_levels()            # [] outside vmap
    >>> p = to_physical(x, levels)          # plain: (B_outer, ..., B_inner, *x.shape)
    >>> y = from_physical(p, levels)        # batched at each of `levels` again
"""
import threading
from collections import namedtuple

from ..core.tensor import Tensor, Size, _new

Level = namedtuple("Level", ("level", "size"))


class _Levels(threading.local):
    stack = ()           # Level entries of the running vmaps, outermost first
    counter = 0          # level ids only grow, so a stale BatchedTensor never matches


LEVELS = _Levels()


def active_levels():
    """The running vmap levels, outermost first: ``[Level(level=1, size=3), ...]``."""
    return list(LEVELS.stack)


def level_sizes(levels):
    """The batch sizes of `levels` (Level entries)."""
    return [lv.size for lv in levels]


class _Logical:
    """The metadata a BatchedTensor shows in place of a backend array (see module doc)."""
    __slots__ = ("shape", "strides", "dtype", "itemsize")

    def __init__(self, shape, strides, dtype, itemsize):
        self.shape, self.strides, self.dtype, self.itemsize = shape, strides, dtype, itemsize

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        return f"<logical metadata of a BatchedTensor, shape {self.shape}>"


class BatchedTensor(Tensor):
    """A batch of tensors at one vmap level (see the module docstring)."""
    __slots__ = ("_value", "_bdim", "_level")

    # autograd state lives on the physical tensor
    @property
    def _requires_grad(self):
        return self._value._requires_grad

    @property
    def requires_grad(self):
        return self._value._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._value.requires_grad = value

    def requires_grad_(self, requires_grad=True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self):
        return self._value.grad_fn is None

    def __repr__(self, *, tensor_contents=None):
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n{self._value!r})"

    __str__ = __repr__

    # values never leave a vmap as Python data
    def item(self):
        raise RuntimeError(_ITEM)

    tolist = item

    def numpy(self, *, force=False):
        raise RuntimeError("vmap: numpy() is not supported on a BatchedTensor")

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("vmap: a BatchedTensor cannot be converted to a NumPy array")

    def __bool__(self):
        raise RuntimeError(_CONTROL_FLOW)

    __float__ = __int__ = __index__ = __complex__ = __bool__

    def __deepcopy__(self, memo):
        raise RuntimeError("vmap: deepcopy of a BatchedTensor is not supported")

    def __reduce_ex__(self, proto):
        raise RuntimeError("vmap: a BatchedTensor cannot be pickled")

    def data_ptr(self):
        raise RuntimeError("vmap: data_ptr() is not supported on a BatchedTensor")

    def untyped_storage(self):
        raise RuntimeError("vmap: storage() is not supported on a BatchedTensor")

    def storage_offset(self):
        raise RuntimeError("vmap: storage_offset() is not supported on a BatchedTensor")


_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
         "calling .item() on a Tensor, please try to rewrite what you're doing with other "
         "operations. If error is occurring somewhere inside PyTorch internals, please file a "
         "bug report.")
_CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                 "control flow. We don't support that yet, please file an issue at "
                 "https://github.com/pytorch/pytorch/issues .")

_FIELDS = (("_storage", None), ("_grad", None), ("_base", None), ("_grad_acc", None),
           ("_hooks", None), ("_retains_grad", False), ("_post_acc_hooks", None),
           ("_output_nr", 0), ("_inference", False))


def wrap(value, bdim, level):
    """`value` (plain or batched at an outer level) as a BatchedTensor at `level` whose batch
    dim is `bdim` of value's (logical) dims."""
    t = _new(BatchedTensor)
    shape = value.shape
    st = value.stride()
    item = value.dtype.itemsize
    t._data = _Logical(shape[:bdim] + shape[bdim + 1:],
                       tuple(s * item for i, s in enumerate(st) if i != bdim),
                       value.dtype.np, item)
    t.dtype = value.dtype
    for k, v in _FIELDS:
        object.__setattr__(t, k, v)
    t._value, t._bdim, t._level = value, bdim, level
    return t


def level_of(x):
    """The level of a BatchedTensor, -1 for anything else."""
    return x._level if type(x) is BatchedTensor else -1


def batched_levels(x):
    """The levels (ids) at which tensor `x` is batched, outermost first."""
    out = []
    while type(x) is BatchedTensor:
        out.append(x._level)
        x = x._value
    return out[::-1]


def to_physical(x, levels):
    """One plain tensor with a leading dim per entry of `levels` (Level entries or ids with
    their sizes taken from the running levels), outermost first, then `x`'s logical dims.
    Where `x` is not batched at a level, that dim is an expanded (stride-0) one."""
    sizes = _sizes(levels)
    ids = [lv.level if isinstance(lv, Level) else lv for lv in levels]
    # peel the wrappers: each of x's levels becomes a dim of the plain tensor
    have = {}
    t = x
    while type(t) is BatchedTensor:
        have[t._level] = t
        t = t._value
    if not isinstance(t, Tensor):
        raise TypeError(f"to_physical expects a Tensor, got {type(x).__name__}")
    extra = [lv for lv in have if lv not in ids]
    if extra:
        raise ValueError(f"to_physical: the value is batched at vmap level(s) {extra} that "
                         "are not among the levels asked for")
    plain, order = _plain_front(x)        # plain: (B_l for l in order, *logical)
    # put the dims in `ids` order, inserting expanded dims for the missing levels
    nb = len(order)
    perm, missing = [], []
    for i, lid in enumerate(ids):
        if lid in order:
            perm.append(order.index(lid))
    rest = list(range(nb, plain.dim()))
    plain = plain.permute(*(perm + rest)) if perm != list(range(nb)) else plain
    present = [lid for lid in ids if lid in order]
    for i, lid in enumerate(ids):
        if lid not in present:
            plain = plain.unsqueeze(i)
            present.insert(i, lid)
            missing.append(i)
    if missing:
        plain = plain.expand(*[sizes[i] if i in missing else -1 for i in range(len(ids))],
                             *([-1] * (plain.dim() - len(ids))))
    return plain


def _plain_front(x):
    """(plain tensor with x's batch dims in front, innermost level first... outermost last
    reversed), as (plain, [level ids in the order of the leading dims])."""
    if type(x) is not BatchedTensor:
        return x, []
    inner, order = _plain_front(x._value)
    # x._value has logical dims = inner.shape[len(order):]; x's batch dim is x._bdim of them
    nb = len(order)
    d = nb + x._bdim
    if d != nb:
        inner = inner.movedim(d, nb)
    return inner, order + [x._level]


def from_physical(p, levels):
    """The inverse of `to_physical`: a value batched at each of `levels` (dims 0, 1, ... of
    plain tensor `p`, outermost first)."""
    t = p
    for lv in levels:
        t = wrap(t, 0, lv.level if isinstance(lv, Level) else lv)
    return t


def make_batched(x, levels=None):
    """`x` batched (expanded where it is not) at each of `levels` (default: every running
    level): what grad under vmap differentiates, so an unbatched parameter gets one
    gradient per sample."""
    levels = active_levels() if levels is None else levels
    return from_physical(to_physical(x, levels), levels)


def _sizes(levels):
    running = {lv.level: lv.size for lv in LEVELS.stack}
    out = []
    for lv in levels:
        if isinstance(lv, Level):
            out.append(lv.size)
        else:
            out.append(running[lv])
    return out


def logical_shape(x):
    return Size(x._data.shape)


# under vmap a batched tensor is an ordinary tensor to __torch_function__ (as in PyTorch)
from ..autograd.overrides import _PLAIN_TYPES  # noqa: E402
_PLAIN_TYPES.add(BatchedTensor)
