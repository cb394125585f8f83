"""`GradBucket`, what a DDP communication hook receives, and `BuiltinCommHookType`.

    def hook(state, bucket: dist.GradBucket) -> ember.futures.Future[ember.Tensor]:
        fut = dist.all_reduce(bucket.buffer().div_(dist.get_world_size()), async_op=True)
        return fut.get_future().then(lambda f: f.value()[0])
    ddp.register_comm_hook(None, hook)

torch's methods: `index()`, `buffer()` (the flat gradients, one dtype, *not* divided by the
world size), `gradients()` (the buffer's per-parameter views, shaped like the parameters),
`parameters()`, `is_last()`, `set_buffer(tensor)` (what later `buffer()` calls return; the
wrappers of default_hooks use it). See ember/nn/parallel/distributed.py.
"""
import enum

__all__ = ["GradBucket", "BuiltinCommHookType"]


class GradBucket:
    """One DDP bucket, ready for its reduction (built by DDP for each bucket and backward;
    torch's class has no public constructor either)."""

    __slots__ = ("_index", "_buffer", "_gradients", "_parameters", "_is_last")

    def __init__(self, index, buffer, gradients, parameters, is_last):
        self._index = index
        self._buffer = buffer
        self._gradients = gradients
        self._parameters = parameters
        self._is_last = is_last

    def index(self):
        """The bucket's number (0 is the first to be reduced; after the first backward the
        buckets are re-cut, as torch's are, so the numbering can change once)."""
        return self._index

    def buffer(self):
        """The flat buffer of the bucket's gradients (the local sums, not divided)."""
        return self._buffer

    def gradients(self):
        """The per-parameter views into the buffer, shaped like the parameters."""
        return list(self._gradients)

    def parameters(self):
        """The model parameters whose gradients the bucket holds (in buffer order)."""
        return list(self._parameters)

    def is_last(self):
        """True for the last bucket of the backward (the one reduced last)."""
        return self._is_last

    def set_buffer(self, tensor):
        """Make later buffer() calls return `tensor` (the bucket's storage is unchanged)."""
        self._buffer = tensor

    def __repr__(self):
        return (f"<GradBucket index={self._index} numel={self._buffer.numel()} "
                f"params={len(self._parameters)} last={self._is_last}>")


class BuiltinCommHookType(enum.Enum):
    """The hooks of ``DDP._register_builtin_comm_hook`` (torch: C++ versions; here the
    Python ones of default_hooks)."""
    ALLREDUCE = 0
    FP16_COMPRESS = 1
