"""Build generated C into shared libraries, cache them on disk, and call them from Python.

    fn = load_kernel(kernel)                   # memoised per Kernel, then on disk
    fn(R, N, inputs, strides, outputs)         # NumPy arrays; strides in elements

Disk cache: <config.cache_dir>/kernels/<2 hex>/<sha256>.so, keyed by the C source, the flags,
the compiler's version, ember's version and the CPU's feature flags (-march=native code must
never run on a CPU it was not built for). A `.sha256` sidecar holds the library's own hash, so
a truncated or corrupt entry is detected (as is one dlopen refuses), removed and rebuilt. Builds
write to a temporary file in the same folder and `os.replace` it into place while holding an
flock on `<hash>.lock`, so processes compiling the same kernel at once are safe.

`stats` counts compiles, disk hits and memory hits (tests check a second process compiles
nothing). EMBER_LOGS=cache logs hits and misses, EMBER_LOGS=code logs generated source, to
stderr through the "ember.compiler" logger.
"""
import ctypes
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile

from . import config, threads
from .codegen_c import CTYPES, generate, generate_many

# -fno-math-errno / -fno-trapping-math only drop errno and FP-trap assumptions (NaN, inf and
# signed zeros are untouched; no -ffast-math). -fwrapv: integer overflow wraps like NumPy's.
# -ffp-contract=off: a*b+c rounds twice like eager NumPy (cmath uses explicit FMAs).
FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-fno-math-errno",
         "-fno-trapping-math", "-fwrapv", "-ffp-contract=off")
SANITIZE_FLAGS = ("-O1", "-g", "-fopenmp", "-fno-math-errno", "-fwrapv", "-ffp-contract=off",
                  "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                  "-fno-omit-frame-pointer")
# EMBER_SANITIZE=1: every library is built with AddressSanitizer and UBSan instead (the
# sanitizer test runs compiled models so, in a process with libasan preloaded)
if os.environ.get("EMBER_SANITIZE") == "1":
    FLAGS = SANITIZE_FLAGS + ("-shared", "-fPIC")
KERNEL_NAME = "ember_kernel"

log = logging.getLogger("ember.compiler")
stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}
_memory = {}
_versions = {}


class CompilerUnavailable(RuntimeError):
    """No C compiler could be run (the caller falls back to NumPy)."""


class CompileError(RuntimeError):
    """The C compiler rejected generated source (a bug in ember: please report it)."""


def _logging_on(topic):
    if topic not in os.environ.get("EMBER_LOGS", ""):
        return False
    # api.py installs the stderr handler when EMBER_LOGS is set at import; the variable may
    # also be set later. Where logging is configured (an application, pytest) leave it be.
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[ember.compiler] %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)
    return True


def compiler_version(cc=None):
    """First line of `cc --version` (cached); CompilerUnavailable when cc cannot run."""
    cc = cc or config.cc
    if cc not in _versions:
        if shutil.which(cc) is None:
            raise CompilerUnavailable(f"C compiler {cc!r} not found (set $CC or "
                                      "ember.compiler.config.cc)")
        try:
            res = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
        except OSError as exc:
            raise CompilerUnavailable(f"C compiler {cc!r} cannot run: {exc}") from None
        _versions[cc] = (res.stdout.splitlines() or ["?"])[0]
    return _versions[cc]


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.machine() + " " + platform.processor()


_CPU_FLAGS = _cpu_flags()


def cache_key(source, flags=FLAGS):
    from ..version import __version__
    h = hashlib.sha256()
    for part in (source, " ".join(flags), compiler_version(), __version__, _CPU_FLAGS):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def compile_source(source, out_path, flags=FLAGS, extra=()):
    """Compile C `source` into `out_path` with config.cc (raises CompileError)."""
    compiler_version()
    folder = os.path.dirname(out_path) or "."
    fd, c_path = tempfile.mkstemp(suffix=".c", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        cmd = [config.cc, *flags, *extra, "-o", out_path, c_path, "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.unlink(c_path)
    if res.returncode != 0:
        raise CompileError(f"{' '.join(cmd)} failed:\n{res.stderr[-4000:]}")
    stats["compiled"] += 1


def _file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _valid(so_path):
    """The cached library exists and matches its recorded hash."""
    try:
        with open(so_path + ".sha256") as f:
            recorded = f.read().strip()
        return recorded == _file_sha(so_path)
    except OSError:
        return False


def _remove(so_path):
    for p in (so_path, so_path + ".sha256"):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _write_atomic(path, data, mode="w"):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp")
    with os.fdopen(fd, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def build_library(source, flags=FLAGS):
    """Path of the cached shared library of `source`, compiling it when missing or corrupt.
    Returns (path, hit) where hit says whether the disk cache already had it."""
    key = cache_key(source, flags)
    folder = os.path.join(config.cache_dir, "kernels", key[:2])
    so_path = os.path.join(folder, key + ".so")
    if _valid(so_path):
        return so_path, True
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, key + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # released when the file closes
        if _valid(so_path):                  # another process built it while we waited
            return so_path, True
        _remove(so_path)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=folder, prefix=".tmp")
        os.close(fd)
        try:
            compile_source(source, tmp, flags)
            digest = _file_sha(tmp)
            os.replace(tmp, so_path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _write_atomic(so_path + ".sha256", digest)
        _write_atomic(os.path.join(folder, key + ".c"), source)   # for people reading
    return so_path, False


class KernelFn:
    """A loaded kernel. Call as fn(R, N, inputs, strides, outputs): inputs/outputs are NumPy
    arrays whose data pointer is element (0, 0) (views of any stride are fine), strides a
    sequence of 2 * len(inputs) ints (so_i, sj_i) in elements (pass a tuple: its ctypes array
    is cached). fn.call_ptrs(R, N, ptrs, strides) takes the raw addresses instead (inputs then
    outputs), the cheapest path for a runtime that knows its buffers' addresses. Threads:
    ember.set_num_threads's value, read at each call."""

    def __init__(self, kernel, lib, path, name=KERNEL_NAME):
        self.kernel, self.path, self._lib = kernel, path, lib
        self.n_in, self.n_out = len(kernel.inputs), len(kernel.outputs)
        fn = getattr(lib, name)
        fn.argtypes = (ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_int)
        fn.restype = None
        self._fn = fn
        # argument array types, built once; a fresh pointer array per call keeps calls from
        # several Python threads (ctypes releases the GIL) from sharing one buffer; stride
        # arrays are only read by C, so one per distinct strides tuple is shared
        self._Ptrs = ctypes.c_void_p * (self.n_in + self.n_out)
        self._Strides = ctypes.c_int64 * max(1, 2 * self.n_in)
        self._strides = {}

    def __call__(self, R, N, inputs, strides, outputs):
        self.call_ptrs(R, N, [a.__array_interface__["data"][0] for a in inputs]
                       + [a.__array_interface__["data"][0] for a in outputs], strides)

    def call_ptrs(self, R, N, ptrs, strides):
        st = self._strides.get(strides) if type(strides) is tuple else None
        if st is None:
            st = self._Strides(*strides)
            if type(strides) is tuple:
                if len(self._strides) > 256:
                    self._strides.clear()
                self._strides[strides] = st
        # big calls run as row chunks claimed by parallel.py's team (no OpenMP barrier that
        # a thread on a busy core could stall; compiler/threads.py)
        if R * N >= threads.parallel.min_elements and \
                threads.split_call(self._fn, self.kernel, R, N, ptrs, st):
            return
        self._fn(R, N, self._Ptrs(*ptrs), st, threads._num_threads)

    def __repr__(self):
        return f"<KernelFn {self.kernel.describe()} {os.path.basename(self.path)}>"


def load_kernel(kernel):
    """The callable KernelFn of `kernel`: from memory, else the disk cache, else compiled.
    Raises CompilerUnavailable (no compiler) or CompileError."""
    fn = _memory.get(kernel)
    if fn is not None:
        stats["memory_hits"] += 1
        return fn
    source = generate(kernel, KERNEL_NAME)
    if _logging_on("code"):
        log.debug("generated C for %s:\n%s", kernel.describe(), source.split(
            "/* ---- end of ember math ---- */")[-1])
    lib, path = _load_library(source, kernel.describe())
    fn = _memory[kernel] = KernelFn(kernel, lib, path)
    return fn


def _load_library(source, what):
    """(loaded library, path) of `source`, from the disk cache or compiled; counted and
    logged (EMBER_LOGS=cache) under `what`."""
    path, hit = build_library(source)
    lib = _dlopen(path, source)
    if hit:
        stats["disk_hits"] += 1
    if _logging_on("cache"):
        log.debug("kernel cache %s: %s (%s)", "hit" if hit else "miss, compiled", what, path)
    return lib, path


def load_kernels(kernels):
    """KernelFns of several kernels, the missing ones built as one library (one compiler call
    for a whole graph). Same caching as load_kernel."""
    kernels = list(kernels)
    missing = [k for k in dict.fromkeys(kernels) if k not in _memory]
    if missing:
        names = [f"{KERNEL_NAME}_{i}" for i in range(len(missing))]
        source = generate_many(missing, names)
        if _logging_on("code"):
            log.debug("generated C for %d kernels:\n%s", len(missing), source)
        lib, path = _load_library(source, f"{len(missing)} kernels")
        for k, n in zip(missing, names):
            _memory[k] = KernelFn(k, lib, path, n)
    else:
        stats["memory_hits"] += len(kernels)
    return [_memory[k] for k in kernels]


def _dlopen(path, source):
    try:
        return ctypes.CDLL(path)
    except OSError:                     # corrupt beyond the hash check: rebuild once
        _remove(path)
        path, _ = build_library(source)
        try:
            return ctypes.CDLL(path)
        except OSError as exc:
            raise CompileError(f"cannot load {path}: {exc}") from None


def harness_source(kernel, cases, name=KERNEL_NAME):
    """C source of a standalone program calling `kernel` (generated as `name`) on buffers
    malloc'ed to exactly the bytes each (R, N, strides) case touches: built with
    SANITIZE_FLAGS, AddressSanitizer catches any out-of-bounds access. `cases` is a list of
    (R, N, strides, nthreads)."""
    lines = [generate(kernel, name), "#include <stdio.h>", "int main(void) {",
             "    unsigned s = 12345;"]
    n_in, n_out = len(kernel.inputs), len(kernel.outputs)
    for c, (R, N, strides, nthreads) in enumerate(cases):
        lines.append("    {")
        for i, inp in enumerate(kernel.inputs):
            so = 0 if inp.outer == "zero" else strides[2 * i]
            sj = {"zero": 0, "one": 1}.get(inp.inner, strides[2 * i + 1])
            jmax = 0 if inp.inner == "zero" else N - 1
            count = (R - 1) * so + jmax * sj + 1 if R > 0 and jmax >= 0 else 0
            ct = CTYPES[inp.dtype]
            value = ("(s >> 16) & 1" if inp.dtype == "bool"
                     else f"({ct})((int)(s >> 16) % 7 - 3) / ({ct})2")
            lines.append(f"        {ct} *a{i} = malloc(sizeof({ct}) * {count});")
            lines.append(f"        for (long k = 0; k < {count}; k++) {{ s = s * 1103515245u"
                         f" + 12345u; a{i}[k] = {value}; }}")
        for o, outp in enumerate(kernel.outputs):
            ct = CTYPES[outp.dtype]
            count = R if outp.per_row else R * N
            lines.append(f"        {ct} *o{o} = malloc(sizeof({ct}) * {count});")
        ptrs = ", ".join([f"a{i}" for i in range(n_in)] + [f"o{o}" for o in range(n_out)])
        strides_c = ", ".join(str(int(x)) for x in strides) or "0"
        lines.append(f"        void *ptrs[] = {{{ptrs}}};")
        lines.append(f"        const int64_t st[] = {{{strides_c}}};")
        lines.append(f"        {name}({R}, {N}, ptrs, st, {nthreads});")
        for i in range(n_in):
            lines.append(f"        free(a{i});")
        for o in range(n_out):
            lines.append(f"        free(o{o});")
        lines.append("    }")
    lines += ["    puts(\"ok\");", "    return 0;", "}"]
    return "\n".join(lines) + "\n"


def build_executable(source, out_path, flags=SANITIZE_FLAGS):
    """Compile a standalone C program (e.g. harness_source) into `out_path`."""
    compile_source(source, out_path, flags)


def clear_memory():
    """Forget loaded kernels (the disk cache stays); for tests and compiler.reset()."""
    _memory.clear()
