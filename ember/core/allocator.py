"""How the memory of big tensors is allocated: keep freed blocks for reuse (glibc only).

NumPy takes array memory from malloc. glibc serves blocks above its mmap threshold
(128 KiB to start) with fresh pages from the kernel and gives them back on free, so every
big temporary of an eager step (a (16, 64, 512) float32 activation is 2 MiB) page-faults
all over again: ~5,000 minor faults, about a third of a small GPT's training step here.
PyTorch avoids this with its own allocator. ember asks glibc, once at import, to serve
blocks up to 256 MiB (32 MiB where glibc allows no more) from its heap and to keep up to
1 GiB of freed heap instead of trimming it, so a step reuses the memory the previous one
freed (3 faults per step).

The cost: memory freed by a big step stays with the process (peak resident memory is
unchanged). `EMBER_MALLOC_TUNING=0` leaves malloc alone, as does any MALLOC_*_ environment
setting of glibc's own (the user's choice wins).
"""
import ctypes
import ctypes.util
import os

# glibc's mallopt parameter numbers (malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD = 256 << 20
TRIM_THRESHOLD = 1 << 30
TOP_PAD = 64 << 20

applied = False


def tune_malloc():
    """Apply the settings above; returns whether they were applied."""
    global applied
    if applied:
        return True
    if os.environ.get("EMBER_MALLOC_TUNING", "1") == "0" or any(
            k.startswith("MALLOC_") and k.endswith("_") for k in os.environ):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):        # not glibc (musl, macOS): nothing to do
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # some glibc versions refuse an mmap threshold above 32 MiB (HEAP_MAX_SIZE / 2)
    mmap_ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) or mallopt(M_MMAP_THRESHOLD, 32 << 20)
    applied = bool(mmap_ok and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
                   and mallopt(M_TOP_PAD, TOP_PAD))
    return applied
