"""What runs inside a DataLoader worker process, and `get_worker_info()`.

A worker reads ``(epoch, task_id, indices)`` requests from its own index queue, fetches and
collates the batch, and puts ``(epoch, task_id, worker_id, result)`` on the shared result
queue. `result` is the batch, an `ExceptionWrapper` when fetching raised, or
`_IterableEnd` when an iterable dataset's stream ran out in this worker. ``None`` on the index
queue or the loader's `done_event` asks the worker to exit; so does the parent process going
away. (The event still works when the queues were already torn down, e.g. when the garbage
collector finalizes a loader's queues before the loader itself.)
"""
import os
import queue
import random
import sys
import traceback

import numpy as np

_POLL_S = 0.1          # how often an idle worker checks that its parent is still alive

_worker_info = None


class WorkerInfo:
    """Read-only facts about the current worker: ``id``, ``num_workers``, ``seed`` and the
    worker's copy of the ``dataset``."""
    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, **kw):
        for k, v in kw.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, key, value):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


def get_worker_info():
    """Inside a DataLoader worker process: its `WorkerInfo`; in the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process as its type and the
    formatted worker traceback (the traceback objects themselves cannot be pickled)."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:   # KeyError's str() would repr the whole message
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:   # an exception type whose constructor wants other arguments
            exc = RuntimeError(msg)
        try:
            raise exc
        finally:
            exc = None   # no frame -> exception -> traceback -> frame cycle keeping the loader


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


class _IterableEnd:
    """A worker's iterable-dataset stream is exhausted for this epoch."""


def _seed_everything(seed):
    from ...ops.random import manual_seed
    manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))


def worker_loop(dataset, is_iterable, auto_collation, batch_size, drop_last, collate_fn,
                index_queue, result_queue, done_event, worker_id, num_workers, seed, init_fn,
                parent_pid):
    global _worker_info
    try:
        _seed_everything(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        if init_fn is not None:
            try:
                init_fn(worker_id)
            except Exception:
                init_error = ExceptionWrapper(sys.exc_info(),
                                              f"in DataLoader worker process {worker_id}")
        stream, stream_epoch, exhausted = None, None, False
        while True:
            try:
                req = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                # the loader is shutting down, or the main process died: nobody will read
                if done_event.is_set() or os.getppid() != parent_pid:
                    return
                continue
            if req is None or done_event.is_set():
                return
            epoch, task_id, indices = req
            if init_error is not None:
                result = init_error
            elif is_iterable:
                if stream_epoch != epoch:         # a new pass: restart this worker's stream
                    stream, stream_epoch, exhausted = iter(dataset), epoch, False
                result = _IterableEnd() if exhausted else None
                if result is None:
                    try:
                        result = _next_iterable(stream, auto_collation, batch_size, drop_last,
                                                collate_fn)
                    except Exception:
                        result = ExceptionWrapper(sys.exc_info(),
                                                  f"in DataLoader worker process {worker_id}")
                    exhausted = isinstance(result, _IterableEnd)
            else:
                try:
                    result = fetch_map(dataset, indices, auto_collation, collate_fn)
                except Exception:
                    result = ExceptionWrapper(sys.exc_info(),
                                              f"in DataLoader worker process {worker_id}")
            try:
                result_queue.put((epoch, task_id, worker_id, result))
            except Exception:   # the batch does not pickle: report that instead
                result_queue.put((epoch, task_id, worker_id, ExceptionWrapper(
                    sys.exc_info(), f"in DataLoader worker process {worker_id}")))
            del result
    except KeyboardInterrupt:
        pass
    finally:
        # exiting: do not block on flushing results nobody will read any more
        result_queue.cancel_join_thread()
        result_queue.close()


def fetch_map(dataset, indices, auto_collation, collate_fn):
    """One batch from a map-style dataset (one item when batching is off)."""
    if auto_collation:
        getitems = getattr(dataset, "__getitems__", None)
        data = getitems(indices) if callable(getitems) else [dataset[i] for i in indices]
    else:
        data = dataset[indices]
    return collate_fn(data)


def _next_iterable(stream, auto_collation, batch_size, drop_last, collate_fn):
    """The next batch of an iterable dataset's stream, or `_IterableEnd`."""
    if not auto_collation:
        try:
            return collate_fn(next(stream))
        except StopIteration:
            return _IterableEnd()
    data = []
    for item in stream:
        data.append(item)
        if len(data) == batch_size:
            break
    if not data or (drop_last and len(data) < batch_size):
        return _IterableEnd()
    return collate_fn(data)
