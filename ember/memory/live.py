"""Snapshots of the live blocks, "who holds this" reports, and the leak check.

A snapshot is plain JSON-able data (no pickle), so ``_dump_snapshot``'s file loads with
``json.load`` anywhere, ember or not:

    {"format": "ember-memory-snapshot", "version": 1, "device": "cpu",
     "history": "all" | "state" | null, "time_us": ..., "stats": {memory_stats()},
     "blocks": [{"address", "size", "dtype", "shape", "device", "serial", "time_us",
                 "site", "frames": [{"filename", "line", "name"}, ...],
                 "belongs_to": ["parameter 'fc1.weight' of Net", ...],
                 "tensors": [{"shape", "dtype", "held_by": [...]}]}, ...],
     "trace": [{"action": "alloc" | "free", "address", "size", "dtype", "time_us",
                "site", "frames"}, ...], "trace_dropped": 0}

Blocks are in allocation order; "site" is the innermost frame outside ember ("file:line in
function"), "frames" the whole stack, innermost first (both empty without history).
"""
import gc
import json
import time
import warnings
import weakref

from ..core import memory_stats as _ms
from .holders import Holders

FORMAT = "ember-memory-snapshot"


def _frames_json(frames):
    return [{"filename": f, "line": ln, "name": n} for f, ln, n in (frames or ())]


def _tensors_by_block(census):
    """{id(owning array): [tensor, ...]} over the census's tensors."""
    out = {}
    for t in census.tensors:
        out.setdefault(id(_ms.owner_of(t._data)), []).append(t)
    return out


def _blocks_json(census):
    """The live blocks, oldest first, each with the tensors viewing it and their holders."""
    by_block = _tensors_by_block(census)
    blocks = []
    for b in _ms.blocks():
        arr = b()
        if arr is None:
            continue
        tensors = [{"shape": list(t.shape), "dtype": str(t.dtype), "held_by": census.of(t)}
                   for t in by_block.get(b.key, ())]
        belongs = []
        for t in tensors:
            for h in t["held_by"]:
                if h not in belongs:
                    belongs.append(h)
        if not tensors:
            belongs.append("no tensor: a NumPy array viewing a tensor's memory")
        blocks.append({"address": arr.__array_interface__["data"][0], "size": b.nbytes,
                       "dtype": str(arr.dtype), "shape": list(arr.shape), "device": "cpu",
                       "serial": b.serial,
                       "time_us": None if b.t_ns is None else b.t_ns / 1e3,
                       "site": _ms.site_of(b.frames), "frames": _frames_json(b.frames),
                       "belongs_to": belongs, "tensors": tensors})
    return blocks


def memory_snapshot(mempool_id=None, include_traces=True):
    """The live blocks now (and the alloc/free trace when history is "all"), as a dict.

    >>> snap = ember.memory.memory_snapshot()
    >>> sum(b["size"] for b in snap["blocks"]) == ember.memory.memory_allocated()
    True
    """
    _ms.enable()
    census = Holders()
    try:
        blocks = _blocks_json(census)
    finally:
        census.close()
    trace = []
    if include_traces:
        for action, addr, size, t_ns, frames, dtype in list(_ms.trace):
            trace.append({"action": action, "address": addr, "size": size, "dtype": dtype,
                          "time_us": t_ns / 1e3, "site": _ms.site_of(frames),
                          "frames": _frames_json(frames)})
    return {"format": FORMAT, "version": 1, "device": "cpu", "history": _ms.history,
            "time_us": (time.perf_counter_ns() - _ms._t0_ns) / 1e3, "stats": _ms.stats(),
            "blocks": blocks, "trace": trace, "trace_dropped": _ms.trace_dropped[0]}


def _snapshot(device=None, augment_with_fx_traces=False):
    """torch's private name for the snapshot of one device (the same dict here)."""
    return memory_snapshot()


def _dump_snapshot(filename="dump_snapshot.json", augment_with_fx_traces=False):
    """Write memory_snapshot() to `filename` as JSON (torch writes a pickle; ember's file is
    JSON so it loads without ember). View it with ``python -m ember.memory.viz FILE``."""
    snap = memory_snapshot()
    with open(filename, "w") as f:
        json.dump(snap, f)
    return filename


class LiveTensor:
    """One live tensor in a report: shape, dtype, its block's bytes and site, its holders.
    ``tensor`` is a weak reference (a report never keeps a tensor alive)."""
    __slots__ = ("tensor", "shape", "dtype", "nbytes", "block_bytes", "site", "frames",
                 "held_by", "is_parameter")

    def __init__(self, t, block, held_by):
        self.tensor = weakref.ref(t)
        self.shape, self.dtype = tuple(t.shape), t.dtype
        self.nbytes = t.nbytes
        self.block_bytes = block.nbytes if block is not None else 0
        self.frames = block.frames if block is not None else None
        self.site = _ms.site_of(self.frames)
        self.held_by = held_by
        self.is_parameter = type(t).__name__ == "Parameter"

    def __repr__(self):
        kind = "Parameter" if self.is_parameter else "tensor"
        return (f"{kind}{list(self.shape)} {self.dtype} ({self.nbytes} bytes) held by: "
                + ("; ".join(self.held_by) or "nothing found (a reference from C code?)"))


class LiveTensors(list):
    """A list of LiveTensor, with ``by_site()`` and a readable ``str()``."""

    def by_site(self):
        """{site: [LiveTensor, ...]}, the sites holding the most bytes first (each block's
        bytes counted once per site)."""
        groups, size = {}, {}
        for lt in self:
            groups.setdefault(lt.site, []).append(lt)
        for site, items in groups.items():
            seen = {}
            for lt in items:
                t = lt.tensor()
                key = id(_ms.owner_of(t._data)) if t is not None else id(lt)
                seen[key] = lt.block_bytes
            size[site] = sum(seen.values())
        return dict(sorted(groups.items(), key=lambda kv: -size[kv[0]]))

    def total_bytes(self):
        """Bytes of the distinct blocks these tensors view."""
        seen = {}
        for lt in self:
            t = lt.tensor()
            if t is not None:
                seen[id(_ms.owner_of(t._data))] = lt.block_bytes
        return sum(seen.values())

    def __str__(self):
        if not self:
            return "no live tensors"
        out = []
        for site, items in self.by_site().items():
            out.append(f"{site}: {len(items)} tensor{'s' if len(items) > 1 else ''}")
            for lt in items:
                out.append(f"    {lt!r}")
        return "\n".join(out)


def _report(tensors_filter=None, min_bytes=0, collect=True):
    _ms.enable()
    census = Holders(collect)
    out = LiveTensors()
    try:
        for t in census.tensors:
            if t.nbytes < min_bytes:
                continue
            block = _ms.live.get(id(_ms.owner_of(t._data)))
            if tensors_filter is not None and not tensors_filter(t, block):
                continue
            out.append(LiveTensor(t, block, census.of(t)))
    finally:
        census.close()
    return out


def live_tensors(min_bytes=0):
    """Every live tensor (at least `min_bytes`), grouped by ``by_site()``, each with what
    keeps it alive: a module's parameter or buffer by qualified name, optimizer state, a
    saved tensor of an autograd node, a ``.grad``, or a plain reference (a local variable,
    a global, an item of a list...). Sites are known for blocks allocated while history is
    recorded (``_record_memory_history``).

    >>> losses = [model(x).sum()]                 # keeps the graph: a classic leak
    >>> print(ember.memory.live_tensors())         # doctest: +SKIP
    """
    return _report(min_bytes=min_bytes)


class LeakReport(LiveTensors):
    """The tensors made inside a leak_check block that outlived it."""

    def __str__(self):
        if not self:
            return "leak_check: no tensor made inside the block outlived it"
        return (f"leak_check: {len(self)} tensor(s) made inside the block outlived it "
                f"({self.total_bytes()} bytes):\n" + LiveTensors.__str__(self))


class leak_check:
    """Report tensors created inside the block that are still alive after it (a garbage
    collection runs first). Records allocation stacks while active, so each leak names the
    line that made it, and says what holds it.

    >>> with ember.memory.leak_check() as leaks:    # doctest: +SKIP
    ...     train_step()
    >>> print(leaks)                                 # the report; also warned about
    >>> leaks.leaked                                 # the LeakReport list

    raise_on_leak=True raises RuntimeError instead of warning (not when the block itself
    raised); warn=False stays quiet. Names bound inside the ``with`` outlive it (Python has
    no block scope): run the code under test in a function.
    """

    def __init__(self, *, raise_on_leak=False, warn=True):
        self.raise_on_leak, self.warn = raise_on_leak, warn
        self.leaked = LeakReport()

    def __enter__(self):
        _ms.enable()
        self._prev = (_ms.history, _ms.max_entries)
        if _ms.history is None:
            _ms.record("state")
        gc.collect()
        self._serial = _ms.serial()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._prev[0] is None:
            _ms.record(None)
        gc.collect()
        start = self._serial
        self.leaked = LeakReport(_report(lambda t, b: b is not None and b.serial > start,
                                         collect=False))
        if self.leaked and exc_type is None:
            if self.raise_on_leak:
                raise RuntimeError(str(self.leaked))
            if self.warn:
                warnings.warn(str(self.leaked), stacklevel=2)
        return False

    def __str__(self):
        return str(self.leaked)

    def __iter__(self):
        return iter(self.leaked)

    def __len__(self):
        return len(self.leaked)
