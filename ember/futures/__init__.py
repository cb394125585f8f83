"""ember.futures: torch.futures' `Future`, `collect_all` and `wait_all`.

    fut = ember.futures.Future()
    fut.set_result(3)
    fut.then(lambda f: f.value() + 1).wait()             # 4
    dist.all_reduce(t, async_op=True).get_future()       # value: [t], once the sum is in

A Future is completed once, with a value (`set_result`) or an exception (`set_exception`);
`wait()` blocks until then and returns the value (or raises the exception), `value()` does
not block. `then(cb)` returns a new Future holding `cb(this_future)`; a callback that raises
completes it with torch's RuntimeError ("Got the following error when running the callback:
...").

Completion is pulled, not pushed, where a collective is behind the Future: ember has no
communication thread that could complete it in the background, so `wait()`, `done()` and
`value()` test the collective (`Work`) themselves, and the callbacks queued by `then` run in
the thread that finds it complete (the one that waits, usually). A plain Future set from
another thread (`set_result` in a worker thread) wakes the threads waiting for it.
"""
import threading
import traceback
from typing import Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")

# one condition for every Future: waiting on a Future that another thread completes is rare
# (DDP's and the collectives' Futures are completed by the waiting thread), and one shared
# condition costs nothing per Future
_CV = threading.Condition()
_PENDING = object()


class Future(Generic[T]):
    """torch.futures.Future: the result of an asynchronous computation (see the module's
    docstring). ``devices`` is accepted for torch's signature (CPU only)."""

    def __init__(self, *, devices=None):
        self._value = _PENDING
        self._exception = None
        self._callbacks = []
        # pull-based completion: _drive(block) completes this Future if its source (a
        # collective, or the Future `then` was called on) is done, waiting for it if block
        self._drive = None

    # ---- completion ----
    def _complete(self, value=None, exception=None, again_ok=False):
        with _CV:
            if self._value is not _PENDING:
                if again_ok:
                    return
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._exception = exception
            self._value = value
            callbacks, self._callbacks = self._callbacks, []
            _CV.notify_all()
        for cb in callbacks:          # outside the lock: a callback may complete others
            cb(self)

    def set_result(self, result):
        """Complete with `result` and run the callbacks (a Future completes only once)."""
        self._complete(value=result)

    def set_exception(self, result):
        """Complete with the exception `result`: wait() and value() raise it."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(value=None, exception=result)

    def _settle(self, block):
        """True once completed; tests (or, when block, waits for) the source first."""
        if self._value is not _PENDING:
            return True
        if self._drive is not None:
            self._drive(block)
        if block:
            with _CV:
                while self._value is _PENDING:
                    _CV.wait()
        return self._value is not _PENDING

    # ---- reading ----
    def done(self):
        """True if the Future has a result or an exception."""
        return self._settle(False)

    def wait(self):
        """Block until completed; return the value, or raise the exception it holds."""
        self._settle(True)
        if self._exception is not None:
            raise self._exception
        return self._value

    def value(self):
        """The value of a completed Future (raises its exception, if it holds one)."""
        if not self._settle(False):
            raise RuntimeError("Future.value() was called on a Future that is not completed "
                               "yet; call wait() first, or read it inside a then() callback.")
        if self._exception is not None:
            raise self._exception
        return self._value

    # ---- callbacks ----
    def add_done_callback(self, callback):
        """Run callback(self) once completed (at once if it is already)."""
        if not callable(callback):
            raise TypeError(f"add_done_callback(): expected a callable, got "
                            f"{type(callback).__name__}")
        with _CV:
            if self._value is _PENDING:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A new Future holding callback(self), run once this one completes."""
        if not callable(callback):
            raise TypeError(f"then(): expected a callable, got {type(callback).__name__}")
        child = Future()
        child._drive = self._settle      # waiting for the child waits for this one

        def run(parent):
            try:
                out = callback(parent)
            except Exception as e:      # torch's wording, with the callback's traceback
                at = "".join(traceback.format_tb(e.__traceback__))
                err = RuntimeError("Got the following error when running the callback: "
                                   f"{type(e).__name__}: {e}\n\nAt:\n{at}")
                err.__cause__ = e
                child._complete(exception=err, again_ok=True)
                return
            child._complete(value=out, again_ok=True)
        self.add_done_callback(run)
        return child

    def __repr__(self):
        state = "pending" if self._value is _PENDING else (
            "failed" if self._exception is not None else "completed")
        return f"<ember.futures.Future {state}>"


def collect_all(futures):
    """A Future completed once every Future in `futures` is; its value is that list."""
    futures = list(futures)
    out = Future()
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out._complete(value=futures, again_ok=True)

    def drive(block):
        for f in futures:
            if not f._settle(block) and not block:
                return
    out._drive = drive
    if not futures:
        out.set_result(futures)
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """Wait for every Future and return their values (raises the first error met)."""
    return [f.wait() for f in collect_all(futures).wait()]
