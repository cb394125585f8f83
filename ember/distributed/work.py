"""`Work`: a collective in flight, and the deadline that keeps a dead rank from hanging the
others.

Every collective is posted as a non-blocking MPI call (MPI_Iallreduce, MPI_Ibcast, ...).
`Work.wait()` polls its requests until they complete or the group's timeout passes. Polling
spins, like a blocking MPI call, for the first second (Open MPI moves data forward only
inside those polls: sleeping between them would slow a large collective down), then sleeps
0.2 ms between polls so a long wait does not steal the CPU from ranks still computing.

When the deadline passes, the rank finds out who is missing over the group's control
communicator: it asks every other member "where are you?", keeps polling for a grace period
(0.5 s to 2 s), and ranks that are themselves waiting in a collective answer with its name
and number. Ranks that do not answer are dead, hung, or busy outside ember.distributed (the
classic trap: rank 0 validates while the others wait in barrier). The RuntimeError names
the collective, the group, the missing ranks, and where the answering ranks are. After a
failure the group is unusable (like torch's NCCL watchdog), and the process skips
MPI_Finalize at exit so it cannot hang there.

When MPI itself reports an error during the collective (a broken connection, or under
Open MPI's ULFM, ``mpiexec --with-ft ulfm``, a dead process), the RuntimeError comes at
once, with the failed ranks when MPI can name them.
"""
import time

from . import _mpi

SPIN_S = 1.0       # spin this long before sleeping between polls
NAP_S = 0.0002     # sleep between polls after that
CHECK_EVERY = 256  # polls between looks at the clock and the control channel

_QUERY, _ANSWER, _LEFT = 1, 2, 3   # control-channel tags
LEFT_GRACE_S = 0.5   # after a member left with an error: how long its collective may still finish

# Every live process group (ProcessGroup adds and removes itself), so a waiting rank can
# answer "where are you?" from any of them; and what this process is waiting in now:
# (group name, collective number, collective name), or None.
GROUPS = []
waiting = [None]


def _fmt_timeout(seconds):
    if seconds >= 1 or seconds == 0:
        return f"{seconds:g} s"
    return f"{seconds * 1000:g} ms"


class Work:
    """A posted collective (returned by ``async_op=True``): `wait()` blocks until it is done
    (or raises RuntimeError on timeout), `is_completed()` tests without blocking.

        work = dist.all_reduce(t, async_op=True)
        ...                          # compute while the reduction runs
        work.wait()
    """

    def __init__(self, pg, name, requests, finish=None, result=None):
        self._pg = pg
        self._name = name
        self._requests = list(requests)
        self._finish = finish          # runs once, after completion (copy back, divide...)
        self._result = result if result is not None else []
        self._done = False
        self._source = None
        self._future = None
        pg.seq += 1
        self._seq = pg.seq
        if self._requests:
            # MPI writes into the buffers until the operation completes: the group keeps
            # the Work (and through it the buffers) alive even if the caller drops it
            inflight = pg.inflight
            if len(inflight) >= 64:
                for w in list(inflight):       # a completed Work removes itself
                    try:
                        w.is_completed()
                    except RuntimeError:       # reported when that Work is waited for
                        pass
            inflight.append(self)

    def _complete(self):
        self._done = True
        self._requests = []
        inflight = self._pg.inflight
        if inflight and inflight[-1] is self:
            inflight.pop()
        elif self in inflight:
            inflight.remove(self)
        if self._finish is not None:
            f, self._finish = self._finish, None
            f()

    def _test(self):
        MPI = _mpi.mpi()
        try:
            return MPI.Request.Testall(self._requests)
        except MPI.Exception as e:
            raise self._mpi_error(e) from None

    def is_completed(self):
        """True once the collective has finished (tests without blocking)."""
        if self._done:
            return True
        if self._test():
            self._complete()
        return self._done

    def is_success(self):
        return self.is_completed()

    def wait(self, timeout=None):
        """Block until done. `timeout` (a timedelta, or seconds) overrides the group's.
        Returns True; raises RuntimeError if a rank is missing at the deadline."""
        if self._done:
            return True
        pg = self._pg
        if pg.broken is None and self._test():      # done already: no deadline to set up
            self._complete()
            return True
        if pg.broken is not None:
            raise RuntimeError(f"{self._name}: process group {pg.group_name} is unusable "
                               f"after an earlier failure: {pg.broken}")
        limit = pg.timeout if timeout is None else timeout
        limit = limit.total_seconds() if hasattr(limit, "total_seconds") else float(limit)
        outer = waiting[0]
        waiting[0] = (pg.group_name, self._seq, self._name, "waiting")
        try:
            self._poll(limit)
        finally:
            waiting[0] = outer
        self._complete()
        return True

    def _poll(self, limit):
        pg, test = self._pg, self._test
        start = time.monotonic()
        deadline = start + limit
        n = 0
        while not test():
            n += 1
            if n % CHECK_EVERY:
                continue
            now = time.monotonic()
            answer_queries()
            left = [r for r in pg.ranks if r in pg.left]
            if left and now < deadline:       # a member exited with an error: don't wait
                deadline = min(deadline, now + LEFT_GRACE_S)   # the full timeout for it
            if now >= deadline:
                if left:
                    self._fail(self._left_message(left))
                self._diagnose(limit)      # raises, unless the collective finishes
                return
            if now - start > SPIN_S:
                time.sleep(NAP_S)

    def _left_message(self, left):
        pg = self._pg
        who = "; ".join(f"rank {r}: {pg.left[r]}" for r in left)
        return (f"ember.distributed: {self._name} (collective #{self._seq} on process group "
                f"{pg.group_name}) cannot complete on rank {pg.ranks[pg.rank()]}: "
                f"{'a member' if len(left) == 1 else 'members'} left the job with an error "
                f"({who}). This process group is now unusable.")

    def _diagnose(self, limit):
        """The deadline passed: ask the others where they are, give them a grace period,
        then raise (or return if the collective completed meanwhile)."""
        pg = self._pg
        me = pg.rank()
        others = [r for r in range(pg.size()) if r != me]
        for r in others:
            pg.pending.append(pg.ctrl.isend((self._seq, self._name), dest=r, tag=_QUERY))
        answers = {}
        grace = min(2.0, max(0.5, 0.1 * limit))
        end = time.monotonic() + grace
        status = _mpi.mpi().Status()
        while time.monotonic() < end and len(answers) < len(others):
            if self._test():
                return
            answer_queries()
            while pg.ctrl.Iprobe(source=_mpi.mpi().ANY_SOURCE, tag=_ANSWER, status=status):
                src = status.Get_source()
                answers[src] = pg.ctrl.recv(source=src, tag=_ANSWER)
            time.sleep(NAP_S)
        if self._test():
            return
        missing = [pg.ranks[r] for r in others if r not in answers]
        here = (pg.group_name, self._name)
        elsewhere = {pg.ranks[r]: a for r, a in answers.items()
                     if (a[0], a[2]) != here or a[3] != "waiting"}
        msg = (f"ember.distributed: {self._name} (collective #{self._seq} on process group "
               f"{pg.group_name}) timed out after {_fmt_timeout(limit)} on rank "
               f"{pg.ranks[me]}:")
        if missing:
            msg += (f" rank{'s' if len(missing) > 1 else ''} "
                    f"{', '.join(map(str, missing))} did not join it (dead, hung, or busy "
                    "outside ember.distributed, e.g. rank 0 validating while the others "
                    "wait in barrier).")
        for r, (gname, seq, name, state) in sorted(elsewhere.items()):
            where = f"{name} (collective #{seq} on process group {gname})"
            msg += (f" Rank {r} already failed in {where}." if state == "failed" else
                    f" Rank {r} is waiting in {where} instead.")
        if not missing and not elsewhere:
            msg += " every rank is waiting in it; the transport did not complete it."
        msg += (" Raise init_process_group(timeout=...) if a rank is merely slow. This "
                "process group is now unusable.")
        self._fail(msg)

    def _mpi_error(self, exc):
        """An MPI error during the collective (e.g. ULFM's MPI_ERR_PROC_FAILED)."""
        pg = self._pg
        failed = _failed_ranks(pg)
        who = (f" rank{'s' if len(failed) > 1 else ''} {', '.join(map(str, failed))} "
               "failed (the process died)." if failed else "")
        msg = (f"ember.distributed: {self._name} (collective #{self._seq} on process group "
               f"{pg.group_name}) failed on rank {pg.ranks[pg.rank()]}: "
               f"{exc.Get_error_string() if hasattr(exc, 'Get_error_string') else exc}.{who}"
               " This process group is now unusable.")
        self._mark_failed(msg)
        return RuntimeError(msg)

    def _fail(self, msg):
        self._mark_failed(msg)
        raise RuntimeError(msg)

    def _mark_failed(self, msg):
        pg = self._pg
        pg.broken = msg
        pg.failed_in = (pg.group_name, self._seq, self._name, "failed")
        _mpi.mark_broken(msg)

    def result(self):
        """The output tensors of the collective (after waiting for it)."""
        self.wait()
        return self._result

    def exception(self):
        return None

    def get_future(self):
        """An ``ember.futures.Future`` completed with `result()` (the output tensors, a
        list) once the collective is done, as torch's ``Work.get_future()``:

            fut = dist.all_reduce(t, async_op=True).get_future()
            fut.then(lambda f: f.value()[0] / world_size)

        Nothing completes it in the background: its ``wait()`` waits for this Work, and
        ``done()`` / ``value()`` test it (see ember/futures)."""
        if self._future is None:
            from ..futures import Future
            fut = Future()

            def drive(block):
                try:
                    if not (self.wait() if block else self.is_completed()):
                        return
                except Exception as e:       # a timeout or MPI error: the Future holds it
                    fut._complete(exception=e, again_ok=True)
                    return
                fut._complete(value=self._result, again_ok=True)
            fut._drive = drive
            fut._work = self               # DDP drives MPI's progress on it during backward
            self._future = fut
        return self._future

    def _source_rank(self):
        """For irecv from any source: the global rank the message came from."""
        self.wait()
        return self._source

    def __repr__(self):
        state = "completed" if self._done else "pending"
        return f"<Work {self._name} #{self._seq} {state}>"


def answer_queries():
    """Answer other ranks' "where are you?" (on any live group) with the collective this
    rank is waiting in, or, on a group that failed here, the collective that failed; and
    note the members that announced they left with an error (see announce_exit)."""
    MPI = _mpi.mpi()
    status = MPI.Status()
    for pg in GROUPS:
        ctrl = pg.ctrl
        while ctrl.Iprobe(source=MPI.ANY_SOURCE, tag=_QUERY, status=status):
            src = status.Get_source()
            ctrl.recv(source=src, tag=_QUERY)
            answer = pg.failed_in or waiting[0]
            pg.pending.append(ctrl.isend(answer, dest=src, tag=_ANSWER))
        while ctrl.Iprobe(source=MPI.ANY_SOURCE, tag=_LEFT, status=status):
            src = status.Get_source()
            pg.left[pg.ranks[src]] = ctrl.recv(source=src, tag=_LEFT)


def announce_exit(reason, wait_s=1.0):
    """Tell every other member of every live group that this process is leaving with an
    error (`reason`), so ranks waiting for it raise within LEFT_GRACE_S instead of at their
    timeout. Waits at most `wait_s` for the small messages to go out."""
    MPI = _mpi.mpi()
    if MPI.Is_finalized():
        return
    reqs = []
    for pg in GROUPS:
        me = pg.rank()
        for r in range(pg.size()):
            if r != me:
                reqs.append(pg.ctrl.isend(reason, dest=r, tag=_LEFT))
    end = time.monotonic() + wait_s
    try:
        while not MPI.Request.Testall(reqs) and time.monotonic() < end:
            time.sleep(NAP_S)
    except MPI.Exception:
        pass


def _failed_ranks(pg):
    """Global ranks that ULFM reports as failed on the group's communicator (or [])."""
    try:
        failed = pg.comm.Get_failed()
        n = failed.Get_size()
        if n == 0:
            return []
        mine = failed.Translate_ranks(list(range(n)), pg.comm.Get_group())
        return sorted(pg.ranks[r] for r in mine if r >= 0)
    except Exception:
        return []


_mpi.leave_hooks.append(announce_exit)
