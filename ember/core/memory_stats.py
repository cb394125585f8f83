"""The memory counters: every block of tensor memory, counted once, from allocation to free.

A block is a backend array that owns memory (NumPy's "base" array: a view's ``.base`` chain
ends at it). A tensor's memory is the block its ``_data`` views, so a view, a transpose or a
storage object adds nothing, and the block is freed when the last array viewing it dies,
whether a tensor, a view or a ``.numpy()`` result held it: that is when the count drops.

Counting is switched on by the first call to a memory API (``ember.memory.memory_allocated``
and friends, ``_record_memory_history``, ``leak_check``, the profiler's
``profile_memory=True``): ``enable()`` installs ``track`` as ``tensor.memory_hook``, the one
test `_init` makes for every new tensor, then takes a census of the tensors alive at that
moment (the garbage collector lists them), so the counts are exact from that call on.
Before it, nothing is counted and the op path pays one global test per new tensor. The cost
of counting, once on, is a weak reference per block (measured in README_memory.md): torch
counts always, ember only when asked, because a fresh small tensor is cheap here and a
weak reference would be a large share of it.

With history recording on (``record(enabled=...)``), each new block also keeps the Python
stack that allocated it, and "all" keeps a bounded trace of alloc/free events.
"""
import gc
import os
import sys
import time
import weakref
from collections import deque

import numpy as np

from . import tensor as _tensor
from .storage import Storage
from .meta import MetaArray

_ndarray = np.ndarray
SMALL_BLOCK = 1 << 20          # torch's small pool holds blocks up to 1 MiB
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Block(weakref.ref):
    """A live block: a weak reference to the owning array plus what the counters need."""
    __slots__ = ("key", "nbytes", "serial", "dtype", "shape", "address", "frames", "t_ns")


# ---- the counters: module globals (the cheapest thing Python updates) ----
# bytes: current, peak, allocated since the last reset of totals; blocks: the count now is
# len(live) and the count allocated is _serial - _serial_base. Freed totals are derived
# (allocated - current + what was current at that reset). The large pool (blocks over
# 1 MiB) keeps its own; the small pool is all minus large, with its own peaks.
_cur = _peak = _alloc = _cur_base = 0
_lcur = _lpeak = _lalloc = _lcur_base = 0
_speak = 0
_cpeak = _lcnt = _lcpeak = _scpeak = _lcnt_alloc = _lcnt_base = 0
_serial_base = _cnt_base = 0
live = {}                      # id(owning array) -> Block
enabled = False
_serial = 0

# history recording: None (off), "state" (stacks of live blocks), "all" (stacks + a trace)
history = None
max_entries = sys.maxsize
trace = deque()
trace_dropped = [0]
# functions called as listener(address, nbytes) on each alloc (nbytes > 0) and free
# (nbytes < 0); the profiler's profile_memory=True adds one while it runs
listeners = []
_slow = False            # history or listeners: track() takes its slow branch


def _update_slow():
    global _slow
    _slow = history is not None or bool(listeners)


def add_listener(fn):
    listeners.append(fn)
    _update_slow()


def remove_listener(fn):
    if fn in listeners:
        listeners.remove(fn)
    _update_slow()
_t0_ns = time.perf_counter_ns()


def owner_of(arr):
    """The array that owns the memory `arr` views (walks ``.base``; NumPy's as_strided puts a
    non-array holder with its own ``.base`` in between; a buffer that is no array ends it)."""
    root, b = arr, arr.base
    while b is not None:
        if type(b) is _ndarray or isinstance(b, _ndarray):
            root = b
        b = getattr(b, "base", None)
    return root


def _freed(block):
    """Weak-reference callback: the owning array died, so its memory went back."""
    global _cur, _lcur, _lcnt
    live.pop(block.key, None)
    n = block.nbytes
    _cur -= n
    if n > SMALL_BLOCK:
        _lcur -= n
        _lcnt -= 1
    if _slow:
        if history == "all":
            _trace("free", block)
        for fn in listeners:
            fn(block.address, -n)


def track(arr):
    """Count `arr`'s owning array once (installed as tensor.memory_hook while enabled).
    It runs for every new tensor while counting is on, hence the flat code."""
    global _serial, _cur, _peak, _alloc, _speak, _cpeak, _scpeak
    if type(arr) is not _ndarray and (not isinstance(arr, _ndarray) or type(arr) is MetaArray):
        # no memory of its own: a vmap BatchedTensor's metadata placeholder (its physical
        # tensor is counted), a NumPy scalar some path left as a tensor's data, or a meta
        # tensor's array (ember/core/meta.py)
        return
    root = arr if arr.base is None else owner_of(arr)
    key = id(root)
    if key in live:
        return
    if type(root) is not _ndarray and not isinstance(root, _ndarray):
        return
    b = Block(root, _freed)
    b.key = key
    n = b.nbytes = root.nbytes
    _serial += 1
    b.serial = _serial
    live[key] = b
    _cur += n
    _alloc += n
    if _cur > _peak:
        _peak = _cur
    k = len(live)
    if k > _cpeak:
        _cpeak = k
    if n > SMALL_BLOCK:
        _track_large(n)
    else:
        if _cur - _lcur > _speak:
            _speak = _cur - _lcur
        if k - _lcnt > _scpeak:
            _scpeak = k - _lcnt
    if _slow:
        _track_slow(b, root)
    else:
        b.frames = b.t_ns = b.dtype = b.address = None


def _track_large(n):
    global _lcur, _lpeak, _lalloc, _lcnt, _lcpeak, _lcnt_alloc
    _lcur += n
    _lalloc += n
    _lcnt += 1
    _lcnt_alloc += 1
    if _lcur > _lpeak:
        _lpeak = _lcur
    if _lcnt > _lcpeak:
        _lcpeak = _lcnt


def _track_slow(b, root):
    """History and listeners (the profiler): address, stack, time of the new block."""
    b.address = root.__array_interface__["data"][0]
    if history is not None:
        b.dtype, b.shape = str(root.dtype), root.shape
        b.frames = _stack(3)
        b.t_ns = time.perf_counter_ns() - _t0_ns
        if history == "all":
            _trace("alloc", b)
    else:
        b.frames = b.t_ns = b.dtype = None
    for fn in listeners:
        fn(b.address, b.nbytes)


def current():
    """Bytes of the live blocks now."""
    return _cur


def peak():
    """The most bytes live at once since counting started or the last peak reset."""
    return _peak


def note(arr):
    """Count an array a tensor took outside `_init` (an ``out=`` resized); no-op when off."""
    if enabled:
        track(arr)


def enable():
    """Start counting (idempotent): install the hook, then count every live tensor."""
    global enabled
    if enabled:
        return
    enabled = True
    _tensor.memory_hook = track
    # type(), not isinstance(): isinstance reads __class__, which some objects compute
    for obj in gc.get_objects():
        tp = type(obj)
        if issubclass(tp, _tensor.Tensor):
            track(obj._data)
        elif tp is Storage:
            track(obj.data)


def blocks():
    """The live blocks whose arrays are still alive, oldest first."""
    return sorted((b for b in list(live.values()) if b() is not None), key=lambda b: b.serial)


def serial():
    """The serial number of the newest block (blocks made later have larger ones)."""
    return _serial


# ---- history ----
def record(enabled="all", max_entries_=sys.maxsize):
    """Start ("state"/"all") or stop (None) keeping allocation stacks (and a trace)."""
    global history, max_entries, trace
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    enable()
    history = enabled
    _update_slow()
    max_entries = max_entries_
    if enabled is None:
        trace = deque()
    else:
        trace = deque(trace, maxlen=None if max_entries_ >= sys.maxsize else max_entries_)
    trace_dropped[0] = 0


def _trace(action, b):
    if trace.maxlen is not None and len(trace) == trace.maxlen:
        trace_dropped[0] += 1
    t_ns = time.perf_counter_ns() - _t0_ns
    trace.append((action, b.address, b.nbytes, t_ns, b.frames, b.dtype))


def _stack(depth, limit=64):
    """(filename, line, function) of the frames from `depth` up, innermost first; frames
    inside ember are kept (they name the op), the user's first frame marks the site."""
    f = sys._getframe(depth)
    while f is not None and f.f_code.co_filename in _PLUMBING:
        f = f.f_back
    out = []
    while f is not None and len(out) < limit:
        co = f.f_code
        out.append((co.co_filename, f.f_lineno, co.co_name))
        f = f.f_back
    return tuple(out)


_PLUMBING = (os.path.abspath(__file__), os.path.abspath(_tensor.__file__))


def is_ember_frame(filename):
    """True for a frame inside the ember package (ember's examples count as user code)."""
    return filename.startswith(_EMBER_DIR) and not filename.startswith(
        os.path.join(_EMBER_DIR, "examples"))


_COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


def site_of(frames):
    """The allocation site: the innermost frame outside ember, as 'file:line in function'."""
    if not frames:
        return "<unknown: history not recorded>"
    for i, (fn, line, name) in enumerate(frames):
        if not is_ember_frame(fn) and not fn.startswith("<frozen"):
            # a comprehension runs as a function of its own before 3.12: name its caller
            if name in _COMPREHENSIONS and i + 1 < len(frames):
                name = frames[i + 1][2]
            return f"{os.path.basename(fn)}:{line} in {name}"
    fn, line, name = frames[0]
    return f"{os.path.basename(fn)}:{line} in {name}"


# ---- torch's stats dictionary ----
def _pools():
    """{pool: ([bytes current, peak, allocated, freed], [blocks ...])}."""
    n_all = len(live)
    cnt_alloc = _serial - _serial_base
    all_b = [_cur, _peak, _alloc, _alloc - _cur + _cur_base]
    large_b = [_lcur, _lpeak, _lalloc, _lalloc - _lcur + _lcur_base]
    small_b = [_cur - _lcur, _speak, _alloc - _lalloc, all_b[3] - large_b[3]]
    all_c = [n_all, _cpeak, cnt_alloc, cnt_alloc - n_all + _cnt_base]
    large_c = [_lcnt, _lcpeak, _lcnt_alloc, _lcnt_alloc - _lcnt + _lcnt_base]
    small_c = [n_all - _lcnt, _scpeak, cnt_alloc - _lcnt_alloc, all_c[3] - large_c[3]]
    return {"all": (all_b, all_c), "large_pool": (large_b, large_c),
            "small_pool": (small_b, small_c)}


def stats():
    """torch.cuda.memory_stats()'s layout for the counted blocks (cpu)."""
    out = {}
    names = ("current", "peak", "allocated", "freed")
    pools = _pools()
    for pool, (by, cnt) in pools.items():
        for i, n in enumerate(names):
            for kind in ("allocation", "active", "segment"):
                out[f"{kind}.{pool}.{n}"] = cnt[i]
            out[f"inactive_split.{pool}.{n}"] = 0
            # no caching allocator: a block is requested, active and reserved alike
            for kind in ("allocated_bytes", "active_bytes", "requested_bytes",
                         "reserved_bytes"):
                out[f"{kind}.{pool}.{n}"] = by[i]
            out[f"inactive_split_bytes.{pool}.{n}"] = 0
    out.update({"num_alloc_retries": 0, "num_ooms": 0, "num_sync_all_streams": 0,
                "num_device_alloc": pools["all"][1][2], "num_device_free": pools["all"][1][3],
                "max_split_size": -1})
    for kind in ("oversize_allocations", "oversize_segments"):
        for n in names:
            out[f"{kind}.{n}"] = 0
    return dict(sorted(out.items()))


def reset_peak():
    global _peak, _lpeak, _speak, _cpeak, _lcpeak, _scpeak
    _peak, _lpeak, _speak = _cur, _lcur, _cur - _lcur
    _cpeak, _lcpeak, _scpeak = len(live), _lcnt, len(live) - _lcnt


def reset_accumulated():
    global _alloc, _cur_base, _lalloc, _lcur_base, _serial_base, _cnt_base, _lcnt_alloc, \
        _lcnt_base
    _alloc, _cur_base, _lalloc, _lcur_base = 0, _cur, 0, _lcur
    _serial_base, _cnt_base, _lcnt_alloc, _lcnt_base = _serial, len(live), 0, _lcnt
