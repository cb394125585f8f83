"""DDP's communication hooks (``DistributedDataParallel.register_comm_hook``), kept apart
from distributed.py: DDP without a hook never runs any of this.

With a hook registered (torch's semantics):
- the gradients are copied into their bucket *not* divided by the world size (the hook
  divides, as default_hooks.allreduce_hook does);
- when a bucket is ready (in bucket order, as the built-in all-reduces are launched) the
  hook is called as ``hook(state, GradBucket)`` instead of the all-reduce, and must return
  an ``ember.futures.Future``;
- at the end of backward each bucket's Future is waited for, and its value (one tensor with
  the bucket's number of elements; any dtype, cast on copy) becomes the bucket's content,
  which is written into ``.grad`` as without a hook. A Future completed with an exception
  raises it there (after the other buckets' Futures are waited for); torch raises
  "Unable to cast <exception> to Tensor" instead.
"""
import inspect
import weakref

from ... import distributed as dist
from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ...futures import Future

_ONCE = "{} or {} can only be called once."


def check_comm_hook(hook):
    """torch's checks of register_comm_hook (the same errors, in the same order)."""
    if not callable(hook):
        raise TypeError("Communication hook must be callable.")
    sig = inspect.signature(hook)
    # torch looks the parameter up by name: a hook whose second parameter is not called
    # `bucket` raises KeyError there too
    ann = sig.parameters["bucket"].annotation
    if ann is not inspect.Parameter.empty and ann != dist.GradBucket:
        raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
    ret = sig.return_annotation
    if ret is not inspect.Signature.empty and ret != Future[Tensor]:
        raise ValueError("Communication hook: return annotation should be "
                         "torch.futures.Future[torch.Tensor].")


def register(ddp, hook, state, builtin):
    """Install `hook` on `ddp` (once per DDP, as torch's reducer allows)."""
    if ddp._comm_hook is not None:
        names = ("register_builtin_comm_hook", "register_comm_hook")
        raise RuntimeError(_ONCE.format(*(names if builtin else names[::-1])))
    ddp._comm_hook = (hook, state)
    ddp._comm_hooks.append((hook, state))
    ddp._div = 1            # the buckets are no longer divided by the world size
    # an instance attribute over the method: the default path keeps its code untouched
    # (weakly: DDP holds no cycle through itself, like its parameters' hooks)
    ref = weakref.ref(ddp)
    ddp._launch_ready_buckets = lambda: launch_ready_buckets(ref())


def builtin_hook(comm_hook_type):
    from ...distributed.algorithms.ddp_comm_hooks import default_hooks
    table = {dist.BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
             dist.BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}
    if comm_hook_type not in table:
        raise TypeError(f"_register_builtin_comm_hook(): expected a "
                        f"dist.BuiltinCommHookType, got {comm_hook_type!r}")
    return table[comm_hook_type]


def root_work(fut):
    """The collective (Work) at the start of a chain of then()s, or None: DDP's progress
    thread tests it while backward computes, as it does the built-in all-reduces."""
    seen = 0
    while fut is not None and seen < 64:
        work = getattr(fut, "_work", None)
        if work is not None:
            return work
        fut = getattr(fut._drive, "__self__", None)     # then(): the parent's _settle
        seen += 1
    return None


def _type_name(obj):
    t = type(obj)
    return f"{t.__module__.split('.')[0]}.{t.__qualname__}"


def launch_ready_buckets(ddp):
    """The hook version of DDP._launch_ready_buckets: call the hook on each bucket that is
    ready, in bucket order (so every rank issues its collectives in the same order)."""
    hook, state = ddp._comm_hook
    buckets, params = ddp._buckets, ddp._params
    n = len(buckets)
    while ddp._next_bucket < n and buckets[ddp._next_bucket].pending == 0:
        b = ddp._next_bucket
        bucket = buckets[b]
        grad_bucket = dist.GradBucket(b, bucket.buffer, bucket.views,
                                      [params[i] for i in bucket.indices], b == n - 1)
        with no_grad():
            fut = hook(state, grad_bucket)
        if not isinstance(fut, Future):
            raise RuntimeError("DDP communication hook's callback must return a "
                               f"torch.futures.Future object, but got {_type_name(fut)}")
        bucket.work = fut
        work = root_work(fut)
        if ddp._progress is not None and work is not None and not work._done:
            ddp._progress.add(work)
        ddp._next_bucket += 1
        ddp._launched_during_backward += 1


def wait_for_hooks(ddp, progress_wait_s):
    """End of backward: wait for every launched bucket's Future and make its value the
    bucket's content (no copy when the hook reduced the bucket's own buffer in place)."""
    futs = [(bucket, bucket.work) for bucket in ddp._buckets if bucket.work is not None]
    if ddp._progress is not None:
        works = [w for w in (root_work(f) for _, f in futs) if w is not None]
        if works:
            ddp._progress.wait(works, progress_wait_s)
            ddp._progress.release(works)
    error = None
    for bucket, fut in futs:
        try:
            result = fut.wait()
        except Exception as e:    # wait for the other buckets' collectives, then raise
            error = error or e
            continue
        buffer = bucket.buffer
        if result is buffer:
            continue
        if not isinstance(result, Tensor):
            raise RuntimeError(f"Unable to cast {result!r} to Tensor")
        if result.numel() != buffer.numel():
            raise RuntimeError(
                f"DDP communication hook: the Future of bucket {bucket_index(ddp, bucket)} "
                f"holds a tensor of {result.numel()} elements, but the bucket has "
                f"{buffer.numel()} (it must hold one tensor shaped like bucket.buffer()).")
        with no_grad():
            buffer.copy_(result.reshape(-1))       # casts, e.g. a float16 result
    if error is not None:
        raise error


def bucket_index(ddp, bucket):
    return next(i for i, b in enumerate(ddp._buckets) if b is bucket)
