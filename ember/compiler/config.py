"""ember.compiler.config: the compiler's settings, read at use (change them any time).

    import ember
    ember.compiler.config.cache_dir = "/tmp/ember-cache"
    ember.compiler.config.cache_size_limit = 4
"""
import logging
import os
import sys

# where built kernels are stored (<cache_dir>/kernels/ab/<hash>.so)
cache_dir = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ember")
# warm starts: store each compiled variant's graphs under cache_dir/graphs and load them in a
# later process instead of tracing (disk_cache.py; PyTorch's fx_graph_cache)
graph_cache = os.environ.get("EMBER_GRAPH_CACHE", "1") != "0"
# where those graphs go (None: <cache_dir>/graphs)
graph_cache_dir = os.environ.get("EMBER_GRAPH_CACHE_DIR") or None
# mode="max-autotune" (autotune.py) tries each candidate on the real inputs and keeps the
# fastest; max_autotune=True does so in every mode (inductor's config.max_autotune).
# autotune_threads: the fused kernels' OpenMP thread counts tried (None: 1, 2, 4, ... up to
# ember.get_num_threads()); autotune_repeats: timed runs per candidate (the median counts)
max_autotune = os.environ.get("EMBER_MAX_AUTOTUNE", "") == "1"
autotune_threads = None
autotune_repeats = 3
# compiled variants kept per function before it runs eagerly (PyTorch's cache_size_limit)
cache_size_limit = 8
# log each recompile with the guard that failed and the user's lines (also
# EMBER_LOGS=recompiles); `verbose_recompiles` is the older name of the same switch
verbose = False
verbose_recompiles = False
# graph breaks split a function into compiled segments with Python between them
# (segments.py); False: a call with a graph break runs eagerly
split_graph_breaks = os.environ.get("EMBER_SPLIT_GRAPH_BREAKS", "1") != "0"
# successors kept per graph break, one per distinct value read there; a new value beyond
# them runs the rest of that call eagerly
break_values = 4
# the C backend splits a trace with graph breaks only when its ops average at least this
# many elements (each op of a split call is checked, and every value written out)
split_min_elements = int(os.environ.get("EMBER_SPLIT_MIN_ELEMENTS", str(1 << 18)))
# the C compiler (None: $CC, else cc)
cc = os.environ.get("CC") or "cc"
# fused groups over fewer elements (as traced) run their ops one by one: a kernel call
# costs ~10 us of Python and ctypes, more than a few small NumPy ops
min_kernel_elements = int(os.environ.get("EMBER_MIN_KERNEL_ELEMENTS", "4096"))
# bytes of dead kernel outputs kept per thread for reuse by later kernels (buffers.py)
pool_bytes = 1 << 30
# check the program's invariants after every compiler stage (program.Program.verify); the
# test suite turns it on, EMBER_VERIFY_STAGES=1 too
verify_stages = os.environ.get("EMBER_VERIFY_STAGES", "") == "1"
# the logs turned on: EMBER_LOGS=stages,graph,guards,recompiles,breaks,fusion,code,cache
logs = set(filter(None, os.environ.get("EMBER_LOGS", "").replace(" ", "").split(",")))

log = logging.getLogger("ember.compiler")
if logs and not log.handlers:
    _h = logging.StreamHandler(sys.stderr)
    _h.setFormatter(logging.Formatter("[ember.compiler] %(message)s"))
    log.addHandler(_h)
    log.setLevel(logging.DEBUG)
    log.propagate = False

_ALIASES = {"breaks": "graph_breaks", "graph_breaks": "breaks"}


def logs_on(kind):
    """Whether log `kind` is on (EMBER_LOGS, or `logs` changed at run time)."""
    return kind in logs or _ALIASES.get(kind) in logs or "all" in logs
