"""Eager work on several cores: big NumPy ufunc calls and C kernels split into chunks.

NumPy's ufuncs run on one thread. For a big enough call (at least `min_elements` elements,
`ember.set_num_threads(n)` with n > 1) this module splits the output along its first axis
into chunks and runs the same ufunc on each chunk, writing into one preallocated result:
each element is computed by the same NumPy loop as in one call, so results are identical
bit for bit (reductions only split along axes they do not reduce). The generated C kernels
(ember/compiler) split the same way, by rows (compiler/threads.py).

    r = parallel.ufunc_call(np.add, a, b)      # a result, or None: call np.add yourself
    parallel.run(fn, n_chunks)                 # fn(0) ... fn(n_chunks - 1), on the team

Why not an OpenMP team: a parallel region ends at a barrier where the caller waits for
every thread of the team, including one whose core another process holds, so on a busy
2-core machine each kernel waits for the scheduler (a 2-thread GPT step went from 73 ms to
~970 ms). Here chunks are *claimed*: the caller works through the chunks itself and waits
only for chunks a helper already took; a helper that wakes late finds none left and sleeps
again. A team never collapses below the speed of one thread, and a forked child (whose
helpers do not exist) simply runs every chunk on its own thread. Helpers sleep on a queue
between jobs (no spinning that would starve BLAS's threads). Teams are sized to the work:
one thread per `min_elements` elements, at most the thread setting; each thread takes
about `CHUNKS_PER_THREAD` chunks, so a slow helper delays the caller by one chunk at most.

EMBER_PARALLEL=0 turns it off (every call runs on the calling thread).
"""
import contextvars
import os
import sys
import threading
from queue import SimpleQueue

import numpy as np

# elements from which a second thread pays for waking it (~20-40 us of queue and GIL
# hand-off): measured with `x + y` (float32, the cheapest loop) on 2 cores, see
# README_threads.md
MIN_ELEMENTS = int(os.environ.get("EMBER_PARALLEL_MIN_ELEMENTS", str(1 << 17)))
CHUNKS_PER_THREAD = 4
enabled = os.environ.get("EMBER_PARALLEL", "1") != "0"

threads = 1                 # ember.set_num_threads's value (compiler/threads.py sets it)
# the one number hot paths compare a size with: huge when only one thread may run
min_elements = sys.maxsize

_workers = []               # [SimpleQueue] of the helper threads, started on first use
_busy = threading.Lock()    # one job at a time; a call from another thread meanwhile runs
                            # on its own thread


def set_threads(n):
    """Record the thread setting (ember.set_num_threads calls it)."""
    global threads, min_elements
    threads = max(1, int(n))
    min_elements = MIN_ELEMENTS if enabled and threads > 1 else sys.maxsize


def team_for(elements):
    """Threads worth using for `elements` elements of work (1 when small or turned off)."""
    if elements < min_elements:
        return 1
    return max(1, min(threads, elements // MIN_ELEMENTS))


class _Job:
    __slots__ = ("fn", "n", "next", "done", "lock", "finished", "error", "context")

    def __init__(self, fn, n):
        self.fn, self.n, self.next, self.done = fn, n, 0, 0
        # the caller's context variables (NumPy's errstate lives in one): helpers run the
        # chunks under a copy, so `np.errstate(all="raise")` holds for every chunk
        self.context = contextvars.copy_context()
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.error = None

    def work(self):
        """Claim and run chunks until none is left."""
        fn, lock = self.fn, self.lock
        while True:
            with lock:
                i = self.next
                if i >= self.n:
                    return
                self.next = i + 1
            try:
                fn(i)
            except BaseException as e:     # re-raised by the caller
                if self.error is None:
                    self.error = e
            with lock:
                self.done += 1
                if self.done == self.n:
                    self.finished.set()


def _helper(queue):
    while True:
        job = queue.get()
        if job is None:
            return
        job.context.copy().run(job.work)


def _helpers(k):
    """The queues of `k` helper threads (started when first needed)."""
    while len(_workers) < k:
        q = SimpleQueue()
        threading.Thread(target=_helper, args=(q,), daemon=True,
                         name=f"ember-parallel-{len(_workers)}").start()
        _workers.append(q)
    return _workers[:k]


def _after_fork():
    # the child has no helper threads: forget their queues (the caller would still finish
    # every chunk itself, but the queues would fill up)
    _workers.clear()
    global _busy
    _busy = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def run(fn, n_chunks, team=None):
    """Call fn(0) ... fn(n_chunks - 1), spread over `team` threads (default: the thread
    setting) of which the caller is one; returns when every call has returned and re-raises
    the first exception one raised. `fn` should release the GIL (a NumPy loop, a ctypes
    call) for the chunks to overlap."""
    team = threads if team is None else min(team, threads)
    if team <= 1 or n_chunks <= 1 or not _busy.acquire(blocking=False):
        for i in range(n_chunks):
            fn(i)
        return
    try:
        job = _Job(fn, n_chunks)
        for q in _helpers(min(team, n_chunks) - 1):
            q.put(job)
        job.work()
        job.finished.wait()
    finally:
        _busy.release()
    if job.error is not None:
        raise job.error


def bounds(n, team):
    """[(lo, hi)] splitting range(n) into about CHUNKS_PER_THREAD chunks per thread."""
    k = max(1, min(n, team * CHUNKS_PER_THREAD))
    step, extra = divmod(n, k)
    out, lo = [], 0
    for i in range(k):
        hi = lo + step + (1 if i < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


_dtypes = {}


def _result_dtype(uf, args):
    key = (uf,) + tuple(a.dtype if isinstance(a, np.ndarray) else type(a) for a in args)
    dt = _dtypes.get(key)
    if dt is None:
        if len(_dtypes) > 1024:
            _dtypes.clear()
        dt = _dtypes[key] = uf.resolve_dtypes(key[1:] + (None,))[-1]
    return dt


def ufunc_call(uf, *args):
    """``uf(*args)`` computed on several threads, or None when this call does not qualify
    (then the caller runs ``uf(*args)`` itself). Qualifies: a one-output ufunc over NumPy
    arrays and Python numbers whose broadcast result has at least `min_elements` elements
    and a first axis to split, where every full-size array operand is C-contiguous (the
    result is C-contiguous, as NumPy's would be)."""
    if uf.nout != 1:
        return None
    shape = None
    full = False
    for a in args:
        if isinstance(a, np.ndarray):
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                try:
                    shape = np.broadcast_shapes(shape, a.shape)
                except ValueError:
                    return None      # the caller's own call raises NumPy's error
        elif type(a) not in (float, int, bool):
            return None
    if shape is None or not shape:
        return None
    size = 1
    for s in shape:
        size *= s
    team = team_for(size)
    if team <= 1 or shape[0] < 2 * team:
        return None
    nd = len(shape)
    for a in args:
        if isinstance(a, np.ndarray) and a.size == size and a.ndim == nd:
            if not a.flags.c_contiguous:
                return None
            full = True
    if not full:
        return None
    try:
        dt = _result_dtype(uf, args)
    except (TypeError, ValueError):   # no loop for these dtypes: NumPy's own error
        return None
    out = np.empty(shape, dt)
    n0 = shape[0]
    # operands that do not run along axis 0 (lower rank, or size 1 there) broadcast as-is
    split = [isinstance(a, np.ndarray) and a.ndim == nd and a.shape[0] == n0 for a in args]
    parts = bounds(n0, team)

    def chunk(i):
        lo, hi = parts[i]
        uf(*[a[lo:hi] if s else a for a, s in zip(args, split)], out=out[lo:hi])

    run(chunk, len(parts), team)
    return out


def reduce_call(uf, a, axis, dtype=None, keepdims=False):
    """``uf.reduce(a, axis=axis, dtype=dtype, keepdims=keepdims)`` on several threads, or
    None when it does not qualify (`axis` a tuple of non-negative reduced axes, at least one
    other axis of `a` long enough to split, `a` C-contiguous and big enough). Each output
    element is reduced by the same NumPy loop over the same elements in the same order."""
    if not isinstance(a, np.ndarray) or a.size < min_elements or not a.flags.c_contiguous:
        return None
    team = team_for(a.size)
    axes = set(axis)
    split_ax = next((d for d in range(a.ndim) if d not in axes and a.shape[d] >= 2 * team),
                    None)
    if team <= 1 or split_ax is None:
        return None
    kshape = tuple(1 if d in axes else s for d, s in enumerate(a.shape))
    try:
        res_dt = uf.reduce(a.reshape(-1)[:1], dtype=dtype).dtype
    except (TypeError, ValueError):
        return None
    out = np.empty(kshape, res_dt)
    parts = bounds(a.shape[split_ax], team)
    pre = (slice(None),) * split_ax

    def chunk(i):
        lo, hi = parts[i]
        idx = pre + (slice(lo, hi),)
        uf.reduce(a[idx], axis=axis, dtype=dtype, keepdims=True, out=out[idx])

    run(chunk, len(parts), team)
    if keepdims:
        return out
    return out.reshape(tuple(s for d, s in enumerate(a.shape) if d not in axes))
