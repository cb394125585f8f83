"""DataLoader: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a real process (the 'fork' start method on Linux)
with its own index queue; all workers share one result queue. The main process keeps up to
``prefetch_factor * num_workers`` batches requested, hands out requests round-robin, and
returns batches in request order (``in_order=False``: as they arrive). While waiting it polls
the queue with short timeouts and checks that every worker is alive, so a worker killed by a
signal or a crash raises RuntimeError instead of hanging the loop.
"""
import itertools
import os
import queue
import sys
import time

import numpy as np

from . import _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_POLL_S = 0.1            # how often the main process checks on its workers while it waits
_JOIN_S = 5.0            # how long shutdown waits for a worker before terminating it


class _InfiniteConstantSampler(Sampler):
    """Iterable datasets have no indices: every request is just 'the next batch'."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over `dataset` in batches: ``for xb, yb in DataLoader(ds, batch_size=32)``.

    Arguments follow PyTorch: `batch_size` (None turns batching off), `shuffle`, `sampler` /
    `batch_sampler` (explicit orders), `num_workers` (worker processes; 0 loads in the main
    process), `collate_fn`, `drop_last`, `timeout` (seconds to wait for a batch from a worker
    before RuntimeError; 0 waits as long as the workers are alive), `worker_init_fn` (called
    with the worker id in each worker), `generator` (the RNG of shuffling and of the worker
    seeds; default: ember's global generator, so ``ember.manual_seed`` fixes both),
    `prefetch_factor` (batches requested ahead per worker), `persistent_workers` (keep the
    workers between epochs), `multiprocessing_context`, `in_order`.

    `pin_memory` (and `pin_memory_device`) are accepted for compatibility and do nothing:
    ember tensors live in ordinary CPU memory and there is no device copy to speed up.

    Each worker gets the seed ``base_seed + worker_id`` (`get_worker_info().seed`), where
    `base_seed` is drawn from `generator` once per pass; the worker seeds ember's default
    generator, `random` and `numpy.random` with it, so augmentations are reproducible.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 1:
            raise ValueError("prefetch_factor option should be positive")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._is_iterable:
            n = len(self.dataset)   # TypeError when the stream has no length, as in PyTorch
            if self.batch_size is not None:
                return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._batch_size = loader.batch_size
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._index_sampler = loader._index_sampler
        self._timeout = loader.timeout
        self._reset(loader)

    def _reset(self, loader):
        from ...ops.random import _rng
        # drawn for every pass, with or without workers, so that the sampler sees the same
        # stream of the generator either way (the same shuffle for num_workers 0 and > 0)
        self._base_seed = int(_rng(loader.generator).integers(0, 2 ** 63, dtype=np.int64))
        self._sampler_iter = iter(self._index_sampler)
        self._yielded = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._stream = iter(self._dataset) if self._is_iterable else None

    def __next__(self):
        if self._is_iterable:
            out = _worker._next_iterable(self._stream, self._auto_collation, self._batch_size,
                                         self._drop_last, self._collate_fn)
            if isinstance(out, _worker._IterableEnd):
                raise StopIteration
            return out
        indices = next(self._sampler_iter)
        return _worker.fetch_map(self._dataset, indices, self._auto_collation,
                                 self._collate_fn)


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader):
        self._workers = []
        self._shutdown = True
        self._epoch = 0
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        super().__init__(loader)       # draws the base seed and starts the first pass
        import multiprocessing   # here, not at module level: `import ember` stays quick
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues = []
        parent = os.getpid()
        for wid in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()  # index requests never need flushing at exit
            w = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                self._dataset, self._is_iterable, self._auto_collation, self._batch_size,
                self._drop_last, self._collate_fn, iq, self._result_queue, self._done_event, wid,
                self._num_workers, self._base_seed + wid, loader.worker_init_fn, parent))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown = False
        self._fill()

    def _reset(self, loader):
        super()._reset(loader)
        self._epoch += 1
        self._send_idx = 0                 # next task id to request
        self._rcvd_idx = 0                 # next task id to return (in order)
        self._task_worker = {}             # task id -> worker id, while outstanding
        self._done = {}                    # task id -> result that arrived early
        self._active = [True] * self._num_workers
        self._next_worker = itertools.cycle(range(self._num_workers))
        self._sampler_done = False
        if self._workers:                  # a persistent iterator starting a new pass
            self._fill()

    def _fill(self):
        """Request batches until `prefetch` are outstanding (or the sampler is done)."""
        while not self._sampler_done and len(self._task_worker) + len(self._done) < \
                self._prefetch:
            if not any(self._active):
                return
            try:
                indices = next(self._sampler_iter)
            except StopIteration:
                self._sampler_done = True
                return
            wid = next(self._next_worker)
            while not self._active[wid]:
                wid = next(self._next_worker)
            self._index_queues[wid].put((self._epoch, self._send_idx, indices))
            self._task_worker[self._send_idx] = wid
            self._send_idx += 1

    def _get(self):
        """One (task_id, worker_id, result) from the result queue, watching the workers."""
        start = time.monotonic()
        while True:
            wait = _POLL_S
            if self._timeout > 0:
                left = self._timeout - (time.monotonic() - start)
                if left <= 0:
                    self._shutdown_workers(join_s=0.5)
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                wait = min(wait, left)
            try:
                epoch, task, wid, result = self._result_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(str(w.exitcode) for w in dead)
                    self._shutdown_workers(join_s=0.5)
                    raise RuntimeError(f"DataLoader worker (pid {pids}) exited unexpectedly "
                                       f"with exit code {codes}") from None
                continue
            if epoch == self._epoch:   # results of an abandoned pass are dropped
                return task, wid, result

    def __next__(self):
        while True:
            if self._shutdown:
                raise StopIteration
            self._fill()
            if self._in_order:
                if self._rcvd_idx in self._done:
                    wid, result = self._done.pop(self._rcvd_idx)
                elif self._rcvd_idx in self._task_worker:
                    task, wid, result = self._get()
                    del self._task_worker[task]
                    if task != self._rcvd_idx:      # early: keep it until its turn
                        self._done[task] = (wid, result)
                        continue
                else:
                    self._end_pass()
                self._rcvd_idx += 1
            else:
                if not self._task_worker:
                    self._end_pass()
                task, wid, result = self._get()
                del self._task_worker[task]
            if isinstance(result, _worker._IterableEnd):
                self._active[wid] = False           # this worker's stream is finished
                continue
            if isinstance(result, _worker.ExceptionWrapper):
                result.reraise()
            return result

    def _end_pass(self):
        if not self._persistent:
            self._shutdown_workers()
        raise StopIteration

    def _shutdown_workers(self, join_s=_JOIN_S):
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for iq in self._index_queues:
            try:
                iq.put(None)
            except Exception:
                pass
        deadline = time.monotonic() + join_s
        for w in self._workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
            if w.is_alive():
                w.terminate()
                w.join(timeout=1.0)
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
