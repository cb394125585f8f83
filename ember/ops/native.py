"""Slots for hand-written C libraries of eager kernels (im2col, col2im, pooling), built by
the compiler.

A few eager kernels are gathers and scatters that NumPy does in several strided passes and C
does in one (the convolutions' im2col/col2im, max pooling). Their C source is declared here
or above as a `NativeLibrary`; the compiler plugs itself in as the builder when it is
imported (`set_native_provider`, called by ember/compiler/eager.py), so nothing below the
compiler names it, just as the `FusedKernel` slots of nn_ops.py. The library is compiled
(and cached on disk by ember/compiler/build.py) at its first use.

    LIB = NativeLibrary("conv", SOURCE, {"im2col2d_f32": (c_void_p, c_void_p, c_int64)})
    fn = LIB.function("im2col2d_f32")   # a ctypes function, or None: compute another way
    fn(src_ptr, dst_ptr, n, LIB.team(work))

`function` gives None when no provider is installed, the C compiler is missing or rejects
the source (the reason is kept in `LIB.broken`), or EMBER_EAGER_KERNELS=0 (or
`native.enabled = False`): the callers then run their NumPy path, which stays tested.
"""
import ctypes
import os
import threading

# EMBER_EAGER_KERNELS=0 turns every eager kernel off (this flag is read at each call)
enabled = os.environ.get("EMBER_EAGER_KERNELS", "1") != "0"
# elements of work per thread below which a kernel runs on fewer threads: a parallel region
# costs ~5-50 us to wake (OMP_WAIT_POLICY=PASSIVE), and under contention a team that waits
# at the barrier for a descheduled member costs far more
GRAIN = 1 << 15

LIBRARIES = []            # every NativeLibrary, for the provider
# a source line that the provider replaces with the compiler's vectorisable math functions
# (em_expf, em_exp, em_erff...: ember/compiler/cmath.py), so a library may call them without
# this layer naming the compiler
VECTOR_MATH = '#include "ember_vector_math.h"'
_provider = [None, None]  # (build(source, name) -> ctypes.CDLL, num_threads() -> int)


def _one_thread():
    return 1


class NativeLibrary:
    """One C source with the ctypes signatures of the functions it exports (each returns
    void); built on first use by the installed provider."""

    def __init__(self, name, source, signatures):
        self.name, self.source, self.signatures = name, source, dict(signatures)
        self._functions = None
        self._lock = threading.Lock()
        self.broken = None            # why it does not run, once a build failed
        LIBRARIES.append(self)

    def _reset(self):
        self._functions, self.broken = None, None

    def _build(self):
        build = _provider[0]
        if build is None:
            return None
        with self._lock:
            if self._functions is None and self.broken is None:
                try:
                    lib = build(self.source, self.name)
                except Exception as exc:     # no compiler, a rejected source: stay on NumPy
                    self.broken = f"{type(exc).__name__}: {exc}"
                    return None
                fns = {}
                for fname, argtypes in self.signatures.items():
                    fn = getattr(lib, fname)
                    fn.argtypes, fn.restype = tuple(argtypes), None
                    fns[fname] = fn
                self._functions = fns
        return self._functions

    def function(self, fname):
        """The ctypes function `fname`, or None (see the module docstring)."""
        if not enabled or self.broken is not None:
            return None
        fns = self._functions
        if fns is None:
            fns = self._build()
            if fns is None:
                return None
        return fns[fname]

    @staticmethod
    def team(work):
        """OpenMP threads for a kernel touching `work` elements: ember.get_num_threads(),
        fewer for small work, one below 2 * GRAIN."""
        n = (_provider[1] or _one_thread)()
        return max(1, min(n, work // GRAIN))

    def __repr__(self):
        state = ("broken: " + self.broken if self.broken else
                 "built" if self._functions else "not built")
        return f"NativeLibrary({self.name!r}, {state})"


def set_native_provider(build, num_threads=None):
    """Install the builder of every NativeLibrary: ``build(source, name)`` returns a loaded
    ctypes.CDLL (raising when it cannot); ``num_threads()`` the thread count kernels may use.
    None removes it (the libraries are then rebuilt by the next provider)."""
    _provider[0], _provider[1] = build, num_threads
    for lib in LIBRARIES:
        lib._reset()


def pointer(a):
    """The address of a NumPy array's first element (for a ctypes c_void_p argument)."""
    return a.__array_interface__["data"][0]


c_int64, c_void_p, c_int = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
