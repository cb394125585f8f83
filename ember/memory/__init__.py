"""ember.memory: how much memory ember's tensors hold, where it was allocated, who keeps it.

    import ember
    ember.memory.memory_allocated()          # bytes held by live tensors (views counted once)
    ember.memory.max_memory_allocated()      # the peak since the last reset
    print(ember.memory.memory_summary())     # torch's table
    ember.memory._record_memory_history()    # from now on keep each allocation's stack
    ...                                      # train a few steps
    ember.memory._dump_snapshot("snap.json") # JSON; `python -m ember.memory.viz snap.json`
    print(ember.memory.live_tensors())       # live tensors by site, and what holds each
    with ember.memory.leak_check():          # warns about tensors made inside that outlive it
        train_step()

The counters live in ember/core/memory_stats.py, at the bottom of the house. They start at
the first call of any function here; see that file for why ember does not count always.
The API is torch.cuda's memory API for ember's cpu tensors; a ``device`` argument other
than cpu (or None) is refused until the devices issue lands.
"""
from ..core import memory_stats as _ms
from ..core.device import device as _device_cls
from .live import (memory_snapshot, _snapshot, _dump_snapshot, live_tensors,  # noqa: F401
                   leak_check, LiveTensor, LiveTensors, LeakReport)

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated",
           "reset_accumulated_memory_stats", "memory_stats", "memory_summary", "empty_cache",
           "_record_memory_history", "memory_snapshot", "_snapshot", "_dump_snapshot",
           "live_tensors", "leak_check"]


def _check_device(device):
    if device is None:
        return
    if isinstance(device, int) or (isinstance(device, str) and device.startswith("cuda")) \
            or (isinstance(device, _device_cls) and device.type != "cpu"):
        raise RuntimeError(f"ember.memory counts cpu tensors; got device {device!r} (ask "
                           "ember.cuda for a cuda device)")


def memory_allocated(device=None):
    """Bytes held by live ember tensors right now, each block of memory counted once.

    >>> x = ember.zeros(256)               # 1 KiB
    >>> ember.memory.memory_allocated() >= 1024
    True
    """
    _check_device(device)
    _ms.enable()
    return _ms.current()


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since counting started or the last reset."""
    _check_device(device)
    _ms.enable()
    return _ms.peak()


def memory_reserved(device=None):
    """Bytes reserved: ember has no caching allocator, so this equals memory_allocated()."""
    return memory_allocated(device)


def max_memory_reserved(device=None):
    """The peak of memory_reserved() (equal to max_memory_allocated())."""
    return max_memory_allocated(device)


def reset_peak_memory_stats(device=None):
    """Set every peak (bytes and counts) to its current value.

    >>> ember.memory.reset_peak_memory_stats()
    >>> ember.memory.max_memory_allocated() == ember.memory.memory_allocated()
    True
    """
    _check_device(device)
    _ms.enable()
    _ms.reset_peak()


def reset_max_memory_allocated(device=None):
    """torch's older name for reset_peak_memory_stats."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    """Set the totals allocated/freed (bytes and counts) to zero."""
    _check_device(device)
    _ms.enable()
    _ms.reset_accumulated()


def memory_stats(device=None):
    """torch's memory_stats() dictionary (``"allocated_bytes.all.current"``, ``.peak``,
    ``.allocated``, ``.freed``; ``"allocation.all.*"`` counts; ``"num_alloc_retries"``...).
    Pools split blocks at 1 MiB like torch's small/large pools; with no caching allocator,
    reserved, active and requested bytes equal allocated bytes, and retries and OOMs are 0.

    >>> ember.memory.memory_stats()["allocated_bytes.all.current"] >= 0
    True
    """
    _check_device(device)
    _ms.enable()
    return _ms.stats()


def empty_cache():
    """Nothing to release: freed blocks go straight back to malloc (torch's cpu does the same)."""


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def memory_summary(device=None, abbreviated=False):
    """A readable table of memory_stats() (torch's layout), then the largest allocation
    sites of the live blocks when history is being recorded.

    >>> print(ember.memory.memory_summary())        # doctest: +SKIP
    """
    st = memory_stats(device)
    w = 77
    line, dline = "|" + "-" * (w - 2) + "|", "|" + "=" * (w - 2) + "|"
    out = [dline, "|" + "ember memory summary, device cpu".center(w - 2) + "|", line,
           "|" + f"OOMs: {st['num_ooms']}    alloc retries: {st['num_alloc_retries']}"
           .center(w - 2) + "|", dline,
           f"| {'Metric':<21} | {'Cur Usage':>10} | {'Peak Usage':>10} | {'Tot Alloc':>10} "
           f"| {'Tot Freed':>10} |", line]
    rows = [("Allocated memory", "allocated_bytes", True), ("Active memory", "active_bytes", True),
            ("Requested memory", "requested_bytes", True),
            ("Reserved memory", "reserved_bytes", True), ("Allocations", "allocation", False),
            ("Active allocs", "active", False)]
    for title, key, is_bytes in rows:
        pools = [("all", title)] if abbreviated else [
            ("all", title), ("large_pool", "      from large pool"),
            ("small_pool", "      from small pool")]
        for pool, label in pools:
            vals = [st[f"{key}.{pool}.{n}"] for n in ("current", "peak", "allocated", "freed")]
            cells = [_fmt(v) if is_bytes else str(v) for v in vals]
            out.append(f"| {label:<21} | " + " | ".join(f"{c:>10}" for c in cells) + " |")
        out.append(line)
    blocks = _ms.blocks()
    if _ms.history is not None and blocks:
        by_site = {}
        for b in blocks:
            site = _ms.site_of(b.frames)
            n, k = by_site.get(site, (0, 0))
            by_site[site] = (n + b.nbytes, k + 1)
        out.append(f"| {'Live blocks by allocation site':<{w - 4}} |")
        out.append(line)
        for site, (n, k) in sorted(by_site.items(), key=lambda kv: -kv[1][0])[:10]:
            label = f"{site} ({k} block{'s' if k > 1 else ''})"
            out.append(f"| {label[:w - 17]:<{w - 17}} | {_fmt(n):>10} |")
        out.append(line)
    out[-1] = dline
    return "\n".join(out) + "\n"


def _record_memory_history(enabled="all", context="all", stacks="all",
                           max_entries=2 ** 63 - 1, device=None, clear_history=False,
                           compile_context=False, global_record_annotations=False,
                           skip_actions=None):
    """Keep the Python stack of every new block ("state"), and also a trace of allocations
    and frees of at most `max_entries` events ("all", the default); None stops recording.

    >>> ember.memory._record_memory_history(max_entries=100000)
    >>> x = ember.randn(1000)
    >>> ember.memory._dump_snapshot("snapshot.json")
    >>> ember.memory._record_memory_history(enabled=None)
    """
    _check_device(device)
    if stacks not in ("python", "all"):      # "all" would add C++ frames: ember has none
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if max_entries <= 0:
        raise ValueError(f"max_entries must be positive, got {max_entries}")
    if clear_history:
        _ms.trace.clear()
    _ms.record(enabled, max_entries)
