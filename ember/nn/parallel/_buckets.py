"""DistributedDataParallel's buckets (flat gradient buffers, how parameters are grouped into
them) and the helper thread that drives MPI's progress on the all-reduces in flight; the
DDP module itself is distributed.py.
"""
import threading
import time

import numpy as np

from ...core.tensor import Tensor
from ...ops.creation import zeros


def _copy(dst, src):
    """dst[...] = src on the backend arrays (NumPy or CuPy) of two same-shape tensors: the
    gradient copies into and out of the buckets are plain memory copies, and going through
    the op dispatcher for each would cost more than the copy on small models."""
    dst._data[...] = src._data
    dst._bump_version()


def _copy_divided(dst, src, world_size):
    """dst = src / world_size (torch divides the gradients by the world size before the
    sum): one pass that copies a gradient into its bucket and divides it, where copying and
    then dividing the whole bucket took two; the same float division, so the same bits."""
    if world_size == 1:
        dst._data[...] = src._data
    else:
        np.divide(src._data, world_size, out=dst._data)
    dst._bump_version()


class _Progress:
    """A helper thread that drives MPI's progress on the buckets in flight while backward
    computes. MPI moves a non-blocking collective's data only inside MPI calls; without
    them an all-reduce launched early would sit idle until the final wait. The thread tests
    the requests every ~50 us; NumPy's kernels release the GIL, so it runs while backward
    does its matmuls. One thread serves every DDP of the process; it sleeps on a condition
    while nothing is in flight (starting a thread per backward costs too much on a loaded
    machine). Used only when MPI runs with MPI_THREAD_MULTIPLE; the main thread still does
    the final `wait()` (errors and timeouts surface there)."""

    NAP_S = 5e-5

    def __init__(self):
        self._cv = threading.Condition()
        self._works = []
        self._busy = False          # the thread is testing a copy of _works
        self._thread = None

    def add(self, work):
        with self._cv:
            self._works.append(work)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="ember-ddp-progress")
                self._thread.start()
            self._cv.notify_all()

    def _run(self):
        while True:
            with self._cv:
                self._works = [w for w in self._works if not w._done]
                while not self._works:
                    self._cv.wait()
                works, self._busy = list(self._works), True
            try:
                for w in works:
                    if not w._done:
                        w.is_completed()
            except Exception:          # the main thread's wait() reports it
                with self._cv:
                    self._works = [w for w in self._works if w not in works]
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()
            time.sleep(self.NAP_S)

    def wait(self, works, limit_s):
        """Sleep until the thread has seen `works` complete, or `limit_s` passed; True when
        they are done. (Sleeping, not spinning: on a machine with more processes than
        cores, a spinning rank takes the CPU its peer needs to finish the exchange.)"""
        deadline = time.monotonic() + limit_s
        with self._cv:
            while not all(w._done for w in works):
                left = deadline - time.monotonic()
                if left <= 0 or all(w not in self._works for w in works if not w._done):
                    return False
                self._cv.wait(left)
        return True

    def release(self, works):
        """Stop testing `works` and return once the thread no longer touches them (the main
        thread then waits for them itself)."""
        with self._cv:
            self._works = [w for w in self._works if all(w is not x for x in works)]
            while self._busy:
                self._cv.wait()


_PROGRESS = _Progress()
_GENTLE_WAIT_S = 1.0     # then Work.wait(), with the process group's timeout and diagnosis


def _progress_thread_usable():
    try:
        from ...distributed import _mpi
        MPI = _mpi.mpi()
        return MPI.Query_thread() == MPI.THREAD_MULTIPLE
    except Exception:
        return False


class _Bucket:
    """A flat buffer holding the gradients of some parameters (one dtype), and the
    all-reduce in flight on it. `views[k]` is parameter `indices[k]`'s slot, shaped like it.

    After a backward the averaged gradients are handed to the parameters as the slots
    themselves where nothing else can hold the old `.grad` (it was None before that
    forward): no copy out of the bucket. The bucket is then `given`, and the next backward
    gets a new buffer (`renew`), so a `.grad` kept by the user never changes under them."""
    __slots__ = ("indices", "buffer", "views", "pending", "work", "given", "_layout")

    def __init__(self, indices, params):
        self.indices = indices
        total = sum(params[i].numel() for i in indices)
        self._layout = [(params[i].numel(), params[i].shape) for i in indices]
        self._fill(zeros(total, dtype=params[indices[0]].dtype))
        self.pending = len(indices)
        self.work = None

    def _fill(self, buffer):
        self.buffer, self.given = buffer, False
        self.views, offset, flat, dtype = [], 0, buffer._data, buffer.dtype
        for n, shape in self._layout:
            # a tensor on a slice of the buffer's array, not a dispatched view: these are
            # made for every backward whose gradients were handed out
            self.views.append(Tensor._make(flat[offset:offset + n].reshape(shape), dtype))
            offset += n

    def renew(self):
        """A new buffer, uninitialised (every slot is written before the bucket is
        reduced); empty_like keeps the array's kind (NumPy or CuPy)."""
        self._fill(Tensor._make(np.empty_like(self.buffer._data), self.buffer.dtype))


def _assign_buckets(params, order, cap_bytes, first_cap_bytes):
    """Group parameter indices, taken in `order` (the order their gradients are expected),
    into buckets: one dtype per bucket, a bucket closed once it holds at least its limit
    (`first_cap_bytes` for the first bucket of each dtype, so the first all-reduce starts
    early; `cap_bytes` after). Buckets come in the order they are expected to fill."""
    by_dtype = {}
    for i in order:
        by_dtype.setdefault(params[i].dtype, []).append(i)
    out = []
    for indices in by_dtype.values():
        cur, size, limit = [], 0, first_cap_bytes
        for i in indices:
            cur.append(i)
            size += params[i].numel() * params[i].element_size()
            if size >= limit:
                out.append(cur)
                cur, size, limit = [], 0, cap_bytes
        if cur:
            out.append(cur)
    position = {i: k for k, i in enumerate(order)}
    out.sort(key=lambda bucket: position[bucket[0]])
    return out
