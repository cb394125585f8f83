"""BatchedTensor and vmap levels: the values `ember.func.vmap` passes to the function it maps.

A `BatchedTensor` stands for a batch of tensors at one vmap *level*: it holds the physical
tensor (`_value`: a plain tensor, or a BatchedTensor of an outer level when vmaps nest) and
the position of the batch dim in it (`_bdim`). Its metadata (shape, size(), dim(), numel,
stride, is_contiguous) is the *logical* one, the physical tensor's without the batch dim, as
torch's vmap reports it. Its `_data` is a `_Logical` placeholder that carries only that
metadata: an op that bypasses vmap and reaches raw array math fails loudly instead of
computing on the wrong data. Autograd fields (requires_grad, grad_fn) are the physical
tensor's: autograd records the physical ops the batching rules run.

A BatchedTensor marked `_same` holds one value repeated along its batch dim (a derivative
transform's primal that the vmap does not batch, expanded to the physical form, and what
deterministic ops make from such values): Python reads (``bool()``, ``.item()``) give that
value, as torch gives them on an unbatched tensor; on any other one they raise torch's vmap
errors.

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
    # levels at which an ``out=`` op wrote values that vary across the batch into a target
    # that may be (a view of) a value marked `_same`: no mark there is trusted any more
    # (in-place ops writing such values into a marked value are refused, as torch does)
    broken = frozenset()
    # LEVELS.counter when each running derivative transform (grad, vjp, jvp) started: a
    # vmap level started before one of them sees Python reads through it, and torch then
    # words its refusal differently
    transforms = ()


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
    # `_same`: every sample holds the same value (a primal the derivative transforms expanded
    # to the physical form although the vmap does not batch it, and what deterministic ops
    # make from such values); Python control flow may read it, as torch allows on a value
    # its vmap does not batch
    __slots__ = ("_value", "_bdim", "_level", "_same")

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

    # values never leave a vmap as Python data, except one that is the same in every sample
    def item(self):
        return _one_sample(self, _ITEM).item()

    def tolist(self):
        return _one_sample(self, _NO_STORAGE).tolist()

    def numpy(self, *, force=False):
        raise RuntimeError("vmap: numpy() is not supported on a BatchedTensor")

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("vmap: a BatchedTensor cannot be converted to a NumPy array")

    def __bool__(self):
        return bool(_one_sample(self, _CONTROL_FLOW))

    def __float__(self):
        return float(_one_sample(self, _CONTROL_FLOW))

    def __int__(self):
        return int(_one_sample(self, _CONTROL_FLOW))

    def __index__(self):
        return _one_sample(self, _CONTROL_FLOW).__index__()

    def __complex__(self):
        return complex(_one_sample(self, _CONTROL_FLOW))

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


def _one_sample(t, message):
    """The value of a BatchedTensor marked `_same` (sample 0; it may itself be batched at an
    outer level, where the same test is made again); torch's vmap error for any other."""
    if not (t._same and t._level not in LEVELS.broken):
        if message is not _NO_STORAGE and any(mark >= t._level for mark in LEVELS.transforms):
            message = _THROUGH_TRANSFORM
        raise RuntimeError(message)
    return t._value.select(t._bdim, 0)


class transform_running:
    """Context manager around the function call of a derivative transform (see
    `LEVELS.transforms`)."""
    __slots__ = ("saved",)

    def __enter__(self):
        self.saved = LEVELS.transforms
        LEVELS.transforms = self.saved + (LEVELS.counter,)

    def __exit__(self, *exc):
        LEVELS.transforms = self.saved


def mark_broken(level):
    """An ``out=`` op at `level` wrote values that vary across the batch (see
    `LEVELS.broken`)."""
    LEVELS.broken = LEVELS.broken | {level}


_NO_STORAGE = "Cannot access data pointer of Tensor that doesn't have storage"   # tolist
_THROUGH_TRANSFORM = (
    "vmap: It looks like you're either (1) calling .item() on a Tensor or (2) attempting to "
    "use a Tensor in some data-dependent control flow or (3) encountering this error in "
    "PyTorch internals. For (1): we don't support vmap over calling .item() on a Tensor, "
    "please try to rewrite what you're doing with other operations. For (2): we don't "
    "support data-dependent control flow in vmap yet, please file an issue at "
    "https://github.com/pytorch/pytorch/issues . For (3): please file an issue.")

_FIELDS = (("_storage", None), ("_grad", None), ("_base", None), ("_grad_acc", None),
           ("_hooks", None), ("_retains_grad", False), ("_post_acc_hooks", None),
           ("_output_nr", 0), ("_inference", False))


def wrap(value, bdim, level, same=False):
    """`value` (plain or batched at an outer level) as a BatchedTensor at `level` whose batch
    dim is `bdim` of value's (logical) dims; `same`: every sample along it is equal."""
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
    t._value, t._bdim, t._level, t._same = value, bdim, level, same
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


def from_physical(p, levels, like=None):
    """The inverse of `to_physical`: a value batched at each of `levels` (dims 0, 1, ... of
    plain tensor `p`, outermost first). With `like` (the value `p` was made from by
    `to_physical`), the wrappers at the levels where `like` is not batched are marked
    `_same`: those dims of `p` are expansions (or, for a transform's dual or leaf made
    from them, have expanded primal values)."""
    t = p
    varying = _varying_levels(like) if like is not None else None
    for lv in levels:
        lid = lv.level if isinstance(lv, Level) else lv
        t = wrap(t, 0, lid, varying is not None and lid not in varying)
    return t


def _varying_levels(x):
    """The levels (ids) at which `x` is batched and not marked `_same`."""
    broken = LEVELS.broken
    out = set()
    while type(x) is BatchedTensor:
        if not x._same or x._level in broken:
            out.add(x._level)
        x = x._value
    return out


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
