"""`--busy`: one other CPU-bound process running beside the measurement (contention).

On a shared machine another program often holds a core. `BusyProcess` starts one such
program, a pure-Python busy loop (one thread, no BLAS, pinned to no core: the OS schedules it
as it would any other job), for the duration of a `with` block, and stops it on exit,
including on errors and Ctrl-C. The loop also exits by itself if its parent dies (it checks
its parent's pid), so a killed benchmark run leaves no process behind.

    >>> with BusyProcess() as load:     # doctest: +SKIP
    ...     measure()                    # load.pid is the busy loop's process id
"""
import os
import subprocess
import sys

# spin in chunks of a few milliseconds; between chunks, exit if the parent is gone
LOOP = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(200000):
        pass
"""


class BusyProcess:
    """A CPU-bound child process, alive between __enter__ and __exit__."""

    def __init__(self):
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", LOOP, str(os.getpid())],
                                     stdin=subprocess.DEVNULL)
        return self

    def stop(self):
        """Kill the loop and reap it (no zombie left)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
