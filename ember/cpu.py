"""ember.cpu: torch.cpu's device-agnostic helpers for the CPU, where ember's tensors live.

There is one CPU device, always initialised; work runs synchronously, so a stream is a
placeholder that orders nothing and an event is complete as soon as it is recorded. Code
written for ``torch.get_device_module(device)`` (``ember.get_device_module()`` returns this
module) runs unchanged.
"""
__all__ = ["device_count", "is_available", "is_initialized", "current_device", "set_device",
           "synchronize", "Stream", "Event", "StreamContext", "stream", "current_stream"]


def device_count():
    """The number of CPU devices: 1."""
    return 1


def is_available():
    """The CPU is always available."""
    return True


def is_initialized():
    """The CPU is always initialised."""
    return True


def current_device():
    """The current CPU device's name: ``"cpu"``."""
    return "cpu"


def set_device(device):
    """There is one CPU device: nothing to select."""


def synchronize(device=None):
    """Wait for the CPU's pending work: none, since ember runs its kernels synchronously."""


class Event:
    """A CPU event: recorded work is already done, so it is always complete."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


class Stream:
    """A CPU stream: ember's CPU work is synchronous, so waiting on one orders nothing."""

    def __init__(self, priority=-1):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self, event=None):
        return event if event is not None else Event()

    def wait_event(self, event):
        pass


_current = [Stream()]


def current_stream(device=None):
    """The currently selected Stream (`device` is ignored: there is one CPU)."""
    return _current[0]


class StreamContext:
    """Selects `stream` as the current stream while the block runs (None: no change)."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        if self.stream is not None:
            self._prev, _current[0] = _current[0], self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            _current[0] = self._prev


def stream(stream):
    """``with ember.cpu.stream(s):`` runs the block with `s` as the current stream."""
    return StreamContext(stream)
