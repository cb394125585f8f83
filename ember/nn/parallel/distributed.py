"""DistributedDataParallel: data-parallel training over the ranks of a process group.

    import ember as torch
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")                 # under mpiexec -n 2 (or the launcher)
    model = DDP(net)                               # parameters and buffers from rank 0
    loss = loss_fn(model(x_local), y_local)        # each rank: its share of the batch
    loss.backward()                                # gradients averaged over the ranks
    opt.step()

How it works (torch's design, in Python):
- At construction the parameters and buffers are broadcast from rank 0, and the parameters
  are cut into *buckets* (flat buffers of at most `bucket_cap_mb`, the first one 1 MiB by
  default) in reverse registration order, which is roughly the order backward produces
  their gradients; after the first backward they are re-cut in the order the gradients
  really arrived (rank 0's), as torch rebuilds its buckets.
- Each parameter has a post-accumulate-grad hook. When backward has accumulated a
  parameter's gradient, the hook copies it into its bucket; when a bucket is full it is
  divided by the world size and all-reduced *asynchronously* (``async_op=True``), so the
  communication overlaps the rest of backward. Buckets are launched in order, so every rank
  issues the same collectives in the same order.
- A helper thread (`_Progress`) drives MPI's progress on the buckets in flight.
- The first hook of a backward queues a final callback with the autograd engine
  (``ember.autograd.engine.queue_callback``): it waits for the all-reduces (sleeping until
  the helper thread has seen them complete, then ``Work.wait()``) and writes the averaged
  gradients back into ``.grad`` before ``backward()`` returns.
- ``no_sync()``: forwards inside it mark their backward as local; gradients accumulate in
  ``.grad`` and are synchronized by the first synced backward after it.
- ``find_unused_parameters=True``: after forward the autograd graph is walked from the
  outputs; parameters it cannot reach are marked ready (their bucket slot zeroed) so the
  buckets still fill. Without it, a parameter that gets no gradient leaves its bucket
  unlaunched, and the next forward raises torch's "Expected to have finished reduction in
  the prior iteration" error naming the parameters.
- Buffers (BatchNorm's running statistics) are broadcast from rank 0 at the start of each
  forward whose previous forward was a synced one (torch's ``require_forward_param_sync``).
- ``register_comm_hook(state, hook)``: each ready bucket goes to ``hook(state, GradBucket)``
  instead of the all-reduce, undivided; the Future it returns gives the bucket's reduced
  content (_comm_hooks.py; ember.distributed.algorithms.ddp_comm_hooks.default_hooks).
"""
import time
import warnings
import weakref
from contextlib import contextmanager

from ... import distributed as dist
from ...autograd import engine
from ...autograd.graph import AccumulateGrad
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...core.tensor import Tensor
from ...ops.creation import empty, tensor
from ...ops.joining import cat
from ..modules.module import Module
from ..parameter import UninitializedParameter
from . import _comm_hooks
from ._buckets import (_Bucket, _PROGRESS, _GENTLE_WAIT_S, _assign_buckets, _copy,
                       _copy_divided, _progress_thread_usable)

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024      # torch's dist._DEFAULT_FIRST_BUCKET_BYTES

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n")
_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the "
    "following reasons: 1) Use of a module parameter outside the `forward` function. Please "
    "make sure model parameters are not shared across multiple concurrent forward-backward "
    "passes. or try to use _set_static_graph() as a workaround if this module graph does not "
    "change during training loop.2) Reused parameters in multiple reentrant backward passes. "
    "For example, if you use multiple `checkpoint` functions to wrap the same part of your "
    "model, it would result in the same set of parameters been used by different reentrant "
    "backward passes multiple times, and hence marking a variable ready multiple times. DDP "
    "does not support such use cases in default. You can try to use _set_static_graph() as a "
    "workaround if your module graph does not change over iterations.")


def _find_tensors(obj):
    """Every tensor in a forward's output (nested tuples, lists, dicts, dataclasses)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields is not None:
        return [t for f in fields for t in _find_tensors(getattr(obj, f))]
    return []


def _reachable_leaves(outputs):
    """ids of the leaf tensors whose AccumulateGrad the outputs' graph reaches."""
    found, seen = set(), set()
    stack = []
    for t in outputs:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            found.add(id(t))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            found.add(id(node.variable))
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return found


def _broadcast_coalesced(tensors, src, group):
    """Broadcast `tensors` from `src`, one flat message per dtype (few small collectives
    cost more than one big one)."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with no_grad():
        for ts in by_dtype.values():
            flat = cat([t.detach().reshape(-1) for t in ts])
            dist.broadcast(flat, src, group=group)
            offset = 0
            for t in ts:
                n = t.numel()
                t.copy_(flat[offset:offset + n].view(t.shape))
                offset += n


def _checked_params(module, device_ids, output_device):
    """The parameters DDP synchronizes (those that require grad), after torch's checks."""
    params = [p for p in module.parameters() if p.requires_grad]
    if not params:
        raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                           "any parameter that requires a gradient.")
    if device_ids is not None and len(device_ids) > 1:
        raise ValueError("device_ids can only be None or contain a single element.")
    devices = {p.device for p in params}
    if (device_ids is not None or output_device is not None) and \
            all(d.type == "cpu" for d in devices):
        raise ValueError(
            "DistributedDataParallel device_ids and output_device arguments only work with "
            "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
            f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
    if any(isinstance(p, UninitializedParameter) for p in module.parameters()):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DistributedDataParallel`. Run a dummy forward pass to correctly "
                           "initialize the modules")
    return params


def _buffer_sync(broadcast_buffers, forward_sync_buffers):
    """(sync buffers at each forward, sync them at construction), as torch 2.13 reads its
    two flags (`broadcast_buffers` deprecated; False also skips the construction sync)."""
    if broadcast_buffers is not None:
        warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead."
                      if forward_sync_buffers is None else
                      "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                      "`broadcast_buffers` is deprecated and its value is ignored when "
                      "`forward_sync_buffers` is provided.", FutureWarning, stacklevel=3)
    if forward_sync_buffers is not None:
        return bool(forward_sync_buffers), True
    b = True if broadcast_buffers is None else bool(broadcast_buffers)
    return b, b


class DistributedDataParallel(Module):
    """Data parallelism across the ranks of a process group (torch's DDP, on MPI).

        model = DistributedDataParallel(net)        # after dist.init_process_group()
        model(x).sum().backward()                   # .grad: the average over the ranks
        with model.no_sync():                       # accumulate locally, sync later
            model(x1).sum().backward()

    ``model.module`` is the wrapped module; ``state_dict()`` keys carry the ``module.``
    prefix, as torch's. ``device_ids`` / ``output_device`` must be None (CPU modules).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 forward_sync_buffers=None):
        super().__init__()
        if process_group is None:
            if not dist.is_initialized():
                raise ValueError("Default process group has not been initialized, please "
                                 "make sure to call init_process_group.")
            process_group = dist.group.WORLD
        params = _checked_params(module, device_ids, output_device)
        self.forward_sync_buffers, init_sync_buffers = _buffer_sync(broadcast_buffers,
                                                                    forward_sync_buffers)
        self.broadcast_buffers = self.forward_sync_buffers
        self.module = module
        self.device = next(iter(params)).device
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._world_size = dist.get_world_size(process_group)
        self._div = self._world_size      # what a gradient is divided by in its bucket
        self._comm_hook = None            # (hook, state) once register_comm_hook was called
        self._comm_hooks = []
        self._params = params
        self._param_names = {id(p): n for n, p in module.named_parameters()}
        self._module_buffers = [b for b in module.buffers()]
        if init_sync:
            self._verify_same_model()
            _broadcast_coalesced(params, 0, process_group)
            if init_sync_buffers and self._module_buffers:
                _broadcast_coalesced(self._module_buffers, 0, process_group)
        cap = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * _MB)
        self._first_bucket_bytes = (_DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None
                                    else self.bucket_bytes_cap)
        # reverse registration order until the first backward shows the real one
        self._make_buckets(list(reversed(range(len(params)))))
        self._rebuilt = False
        self._ready_order = []
        # per-backward state (reset by _prepare_for_backward)
        self._expect_hooks = False
        self._require_finalize = False
        self._ready = [False] * len(params)
        self._fresh = [False] * len(params)
        self._unused = ()
        self._next_bucket = 0
        self._callback_queued = False
        # what the last synced backward spent (benchmarks read it)
        self._comm_wait_s = 0.0
        self._launched_during_backward = 0
        self._progress = _PROGRESS if _progress_thread_usable() else None
        ref = weakref.ref(self)
        self._hook_handles = [p.register_post_accumulate_grad_hook(_hook(ref, i))
                              for i, p in enumerate(params)]

    # ---- construction helpers ----
    def _make_buckets(self, order):
        self._buckets = [_Bucket(ix, self._params) for ix in _assign_buckets(
            self._params, order, self.bucket_bytes_cap, self._first_bucket_bytes)]
        self._where = {}        # param index -> (bucket number, slot in the bucket)
        for b, bucket in enumerate(self._buckets):
            for slot, i in enumerate(bucket.indices):
                self._where[i] = (b, slot)

    def _rebuild_buckets(self):
        """After the first synced backward, re-cut the buckets in the order the gradients
        actually arrived (rank 0's order, so that all ranks agree), as torch does: the
        first bucket to fill is then launched first even when the modules were registered
        in another order than they run."""
        seen = set(self._ready_order)
        order = self._ready_order + [i for i in range(len(self._params)) if i not in seen]
        agreed = tensor(order)
        dist.broadcast(agreed, 0, group=self.process_group)
        order = agreed.tolist()
        if order != [i for b in self._buckets for i in b.indices]:
            self._make_buckets(order)

    def _verify_same_model(self):
        """Every rank must hold the same parameters (count and sizes), else broadcasting
        them would mismatch; check with one small all-gather."""
        mine = tensor([len(self._params), sum(p.numel() for p in self._params)])
        every = empty(self._world_size * 2, dtype=mine.dtype)
        dist.all_gather_into_tensor(every, mine, group=self.process_group)
        every = every.reshape(self._world_size, 2).tolist()
        for r, (n, numel) in enumerate(every):
            if (n, numel) != tuple(every[0]):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {r} has {n} params "
                    f"({numel} elements), while rank 0 has inconsistent {every[0][0]} params "
                    f"({every[0][1]} elements).")

    # ---- forward ----
    def forward(self, *inputs, **kwargs):
        if self.require_forward_param_sync and self.forward_sync_buffers and \
                self._module_buffers:
            self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            self._prepare_for_backward(output)
        else:
            self.require_forward_param_sync = False
        return output

    def _sync_buffers(self):
        """Broadcast the module's buffers from rank 0 (buffers may have been reassigned)."""
        self._module_buffers = [b for b in self.module.buffers()]
        _broadcast_coalesced(self._module_buffers, 0, self.process_group)

    def _prepare_for_backward(self, output):
        if self._require_finalize:
            self._raise_unfinished()
        self._require_finalize = True
        self._expect_hooks = True
        self._callback_queued = False
        self._ready = [False] * len(self._params)
        self._ready_order = []
        self._next_bucket = 0
        self._launched_during_backward = 0
        for bucket in self._buckets:
            if bucket.given:
                bucket.renew()
            bucket.pending = len(bucket.indices)
            bucket.work = None
        # which .grad is None now: after this backward those get their bucket slot itself
        self._fresh = [p._grad is None for p in self._params]
        self._unused = ()
        if self.find_unused_parameters:
            reached = _reachable_leaves(_find_tensors(output))
            self._unused = tuple(i for i, p in enumerate(self._params) if id(p) not in reached)

    def _raise_unfinished(self):
        missing = [i for i, r in enumerate(self._ready) if not r]
        self._require_finalize = False
        names = ", ".join(self._param_names.get(id(self._params[i]), "?") for i in missing)
        rank = dist.get_rank(self.process_group)
        raise RuntimeError(_UNFINISHED + f"Parameter indices which did not receive grad for "
                           f"rank {rank}: {' '.join(map(str, missing))}\n Parameters which did "
                           f"not receive grad for rank {rank}: {names}")

    # ---- backward (called from the parameters' hooks) ----
    def _mark_ready(self, i):
        if not self._expect_hooks:
            return      # a backward that did not come from a synced forward of this DDP
        if not self._callback_queued:
            self._callback_queued = True
            engine.queue_callback(self._finalize_backward)
            for j in self._unused:
                self._mark_one(j, unused=True)
        self._mark_one(i, unused=False)

    def _mark_one(self, i, unused):
        if self._ready[i]:
            raise RuntimeError(_TWICE)
        self._ready[i] = True
        if not unused:
            self._ready_order.append(i)
        b, slot = self._where[i]
        bucket = self._buckets[b]
        view = bucket.views[slot]
        p = self._params[i]
        ws = self._div        # the world size; 1 with a comm hook (torch: hooks divide)
        if p._grad is None:
            view._data.fill(0)
            view._bump_version()
        elif p._grad is not view:
            _copy_divided(view, p._grad, ws)
            if self.gradient_as_bucket_view and not unused:
                p._grad = view     # later backwards accumulate straight into the bucket
        elif ws != 1:
            view._data /= ws       # the gradient accumulated in its slot (bucket view)
            view._bump_version()
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready_buckets()

    def _launch_ready_buckets(self):
        # in bucket order, so that every rank issues the same all-reduces in the same order
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].pending == 0:
            bucket = self._buckets[self._next_bucket]     # (divided by the world size)
            bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group,
                                          async_op=True)
            if self._progress is not None:
                self._progress.add(bucket.work)
            self._next_bucket += 1
            self._launched_during_backward += 1

    def _finalize_backward(self):
        """The engine's final callback: wait for the all-reduces, write the averages back."""
        self._expect_hooks = False
        complete = self._next_bucket == len(self._buckets)
        globally_used = None
        if complete and self.find_unused_parameters and self._unused:
            unused = set(self._unused)
            used = tensor([0 if i in unused else 1 for i in range(len(self._params))])
            dist.all_reduce(used, group=self.process_group)
            globally_used = used.tolist()
        t0 = time.perf_counter()
        if self._comm_hook is not None:   # the hooks' Futures give the buckets' content
            _comm_hooks.wait_for_hooks(self, _GENTLE_WAIT_S)
        else:
            if self._progress is not None:
                works = [b.work for b in self._buckets if b.work is not None]
                self._progress.wait(works, _GENTLE_WAIT_S)
                self._progress.release(works)
            for bucket in self._buckets:      # (done by now, normally; errors surface here)
                if bucket.work is not None:
                    bucket.work.wait()
        self._comm_wait_s = time.perf_counter() - t0
        if not complete:
            return          # the next forward raises (torch's behaviour)
        self._require_finalize = False
        fresh = self._fresh
        for bucket in self._buckets:
            for i, view in zip(bucket.indices, bucket.views):
                p = self._params[i]
                if globally_used is not None and globally_used[i] == 0 and p._grad is None:
                    continue        # no rank used it: .grad stays None
                if self.gradient_as_bucket_view:
                    if p._grad is not view:
                        if p._grad is not None:
                            _copy(p._grad, view)
                        else:
                            p._grad = view
                elif p._grad is None or fresh[i]:
                    p._grad = view          # this backward's own .grad: no one else holds it
                    bucket.given = True
                else:
                    _copy(p._grad, view)    # a .grad from before: it keeps its identity
        if not self._rebuilt:
            self._rebuilt = True
            self._rebuild_buckets()

    # ---- user API ----
    @contextmanager
    def no_sync(self):
        """Inside this context, forwards mark their backward local: gradients accumulate in
        ``.grad`` and are averaged by the first synced forward-backward after it.

            with ddp.no_sync():
                ddp(x1).sum().backward()        # local
            ddp(x2).sum().backward()            # .grad = average of (g1 + g2) over ranks
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def will_sync_module_buffers(self):
        return (self.require_forward_param_sync and self.forward_sync_buffers
                and len(self._module_buffers) > 0)

    def register_comm_hook(self, state, hook):
        """Reduce the gradients with `hook` instead of DDP's all-reduce (torch's API):
        ``hook(state, bucket: dist.GradBucket) -> ember.futures.Future[Tensor]`` is called
        for each bucket once its gradients are in (``bucket.buffer()``, the local sums, *not*
        divided by the world size), and the Future's value, a tensor shaped like the
        buffer, is what ``.grad`` gets. Only once per DDP, best before the first backward.

            from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)

            def noop(state, bucket):           # each rank keeps its local gradients
                fut = ember.futures.Future()
                fut.set_result(bucket.buffer())
                return fut
        """
        _comm_hooks.check_comm_hook(hook)
        _comm_hooks.register(self, hook, state, builtin=False)

    def _register_builtin_comm_hook(self, comm_hook_type):
        """torch's built-in hooks by name (``dist.BuiltinCommHookType.ALLREDUCE`` or
        ``FP16_COMPRESS``), over this DDP's process group."""
        hook = _comm_hooks.builtin_hook(comm_hook_type)
        _comm_hooks.register(self, hook, self.process_group, builtin=True)

    def _set_static_graph(self):
        self.static_graph = True


def _hook(ref, i):
    """The post-accumulate-grad hook of parameter `i` (holds the DDP weakly)."""
    def hook(param):
        ddp = ref()
        if ddp is not None:
            ddp._mark_ready(i)
    return hook

