"""torch's default DDP communication hooks, for ``DDP.register_comm_hook(state, hook)``:

    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)   # state: a group or None

- `allreduce_hook`: divide the bucket by the group's size, all-reduce it (what DDP does
  without a hook).
- `fp16_compress_hook` / `bf16_compress_hook`: all-reduce a float16 / bfloat16 copy of the
  bucket divided by the group's size, then write the result back into the bucket (half the
  bytes on the wire; the gradients keep 16-bit precision). torch allows bfloat16 only with
  NCCL 2.10+ or XCCL; ember's MPI backend reduces bfloat16 (in float32) on the CPU.
- `fp16_compress_wrapper(hook)` / `bf16_compress_wrapper(hook)`: run another hook on a
  16-bit copy of the bucket and cast its result back.

The state is the process group to reduce over (None: the default group), as in torch.
"""
from ... import all_reduce
from ...process_group import group as _group
from ....core import dtype as _dtypes

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def _group_of(process_group):
    return process_group if process_group is not None else _group.WORLD


def _allreduce_fut(process_group, tensor):
    """Divide `tensor` by the group's size (first: a float16 sum could overflow) and
    all-reduce it in place; the Future holds `tensor`."""
    pg = _group_of(process_group)
    tensor.div_(pg.size())
    return all_reduce(tensor, group=pg, async_op=True).get_future().then(
        lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """The average of the bucket over the group: the same gradients as DDP without a hook."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compressed(buffer, dtype, n):
    """buffer.to(dtype).div_(n), torch's order (cast, then divide: a float16 sum of values
    divided first cannot overflow where the undivided ones did not). The division runs in
    float32 and is rounded once, as 16-bit division itself does (in torch and in NumPy),
    so the bits are the same; NumPy's float16 arithmetic is ~10x slower than the casts."""
    return buffer.to(dtype).float().div_(n).to(dtype)


def _compress_hook(dtype, process_group, bucket):
    pg = _group_of(process_group)
    buffer = bucket.buffer()
    compressed = _compressed(buffer, dtype, pg.size())

    def decompress(fut):
        buffer.copy_(fut.value()[0])      # back into the bucket: no second full buffer
        return buffer
    return all_reduce(compressed, group=pg, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """All-reduce the bucket as float16, divided by the group's size; cast back."""
    return _compress_hook(_dtypes.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """All-reduce the bucket as bfloat16, divided by the group's size; cast back."""
    return _compress_hook(_dtypes.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            out = bucket.buffer()          # the 16-bit buffer; DDP casts it into .grad
            out.copy_(fut.value())
            return out
        return fut.then(decompress)
    return wrapped


def fp16_compress_wrapper(hook):
    """A hook that runs `hook` on a float16 copy of the bucket and casts the result back
    (fp16_compress_wrapper(allreduce_hook) is fp16_compress_hook)."""
    wrapped = _compress_wrapper(_dtypes.float16, hook)
    wrapped.__name__ = wrapped.__qualname__ = "fp16_compress_wrapper_hook"
    return wrapped


def bf16_compress_wrapper(hook):
    """A hook that runs `hook` on a bfloat16 copy of the bucket and casts the result back."""
    wrapped = _compress_wrapper(_dtypes.bfloat16, hook)
    wrapped.__name__ = wrapped.__qualname__ = "bf16_compress_wrapper_hook"
    return wrapped
