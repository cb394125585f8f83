"""C (and C++) extensions built from source, called with ember tensors (torch.utils.cpp_extension).

    mod = ember.utils.cpp_extension.load_inline(
        "swish_ext", c_sources='''
        #include <math.h>
        void swish_fwd(const float* x, float* y, long n) {
            for (long i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
        }''', functions=["swish_fwd"])
    x = ember.randn(1000); y = ember.empty_like(x)
    mod.swish_fwd(x, y, x.numel())

There is no pybind11: ember reads the C prototype of each listed function and calls it through
ctypes, converting each argument by its C type:

- a pointer to a number type (``float*``, ``const double*``, ``int64_t*``, ``long*``,
  ``int*``, ``uint8_t*``, ``bool*``...) takes a contiguous cpu tensor of the matching dtype
  (its data pointer) or None (NULL); ``void*`` takes a contiguous tensor of any dtype. A wrong
  dtype is a TypeError, a non-contiguous tensor a RuntimeError: nothing reaches C unchecked.
  After the call, the version counter of every tensor passed through a non-const pointer is
  bumped (autograd then refuses to use a stale saved copy of it);
- a descriptor ``ember_tensor_f32`` (``_f64``, ``_i64``, ``_i32``, ``_u8``, ``_bool``, or
  ``ember_tensor`` for any dtype), by value or as ``const ember_tensor_f32*``, takes a tensor of
  any layout: ``{T *data; int64_t ndim; const int64_t *sizes; const int64_t *strides;}`` with
  strides in elements and `data` at the view's first element (the typedefs are declared for
  you; see STRIDED_EXAMPLE);
- integer types (``int``, ``long``, ``int64_t``, ``size_t``, ``unsigned``...) take Python
  ints (OverflowError when out of range), ``float``/``double`` take Python numbers, ``bool``
  takes a bool, ``const char*`` takes a str;
- the return type is ``void`` (None), an integer, floating or bool type.

ember's vectorisable math is declared before your source too (ember/compiler/cmath.py:
``em_expf``/``em_exp``, ``em_logf``, ``em_log1pf``, ``em_expm1f``, ``em_tanhf``,
``em_sigmoidf``/``em_sigmoid``, ``em_erff``...): glibc's expf is a scalar call per element,
while a loop of these under ``#pragma omp simd`` is vectorised by GCC (the fused Swish of
benchmarks/custom_op.py uses them). Sources are built with the compiler's flags
(``-O3 -march=native -fopenmp``...), plus `extra_cflags`.

Supported prototypes are plain top-level declarations or definitions: no variadic functions,
function pointers, structs other than the descriptors, or (in C++) namespaces, templates and
overloads of a listed name. C++ sources are compiled with `g++` when it is installed, and ember
adds the ``extern "C"`` wrappers itself.

Builds go through the compiler's cache (ember/compiler/build.py): the same source and flags
load from ``<cache_dir>/kernels`` without compiling again. Each source is compiled after a
``#line`` directive, so a compiler error names your file (or ``<name>/c_sources``) and line,
and the message shows that source line.
"""
import ctypes
import os
import re
import shutil
import types

from ..compiler import build, cmath, config
from ..core import dtype as D
from ..core.tensor import Tensor

__all__ = ["load_inline", "load", "STRIDED_EXAMPLE"]

# the descriptor typedefs, declared before every source
_DESCRIPTORS = {"ember_tensor": ("void", None), "ember_tensor_f32": ("float", D.float32),
                "ember_tensor_f64": ("double", D.float64), "ember_tensor_i64": ("int64_t", D.int64),
                "ember_tensor_i32": ("int32_t", D.int32), "ember_tensor_u8": ("uint8_t", D.uint8),
                "ember_tensor_bool": ("bool", D.bool_)}
HEADER = cmath.SOURCE + "#include <stddef.h>\n#include <stdbool.h>\n" + "".join(
    f"typedef struct {{ {ct} *data; int64_t ndim; const int64_t *sizes; "
    f"const int64_t *strides; }} {name};\n" for name, (ct, _) in _DESCRIPTORS.items())

STRIDED_EXAMPLE = r"""
/* y = 2 * x for a 2-d float tensor of any strides (e.g. a transposed view) */
void twice_2d(ember_tensor_f32 x, ember_tensor_f32 y) {
    for (int64_t i = 0; i < x.sizes[0]; i++)
        for (int64_t j = 0; j < x.sizes[1]; j++)
            y.data[i * y.strides[0] + j * y.strides[1]] =
                2 * x.data[i * x.strides[0] + j * x.strides[1]];
}
"""

_L = ctypes.c_long
_INTS = {
    "char": ctypes.c_byte, "signed char": ctypes.c_byte, "unsigned char": ctypes.c_ubyte,
    "short": ctypes.c_short, "short int": ctypes.c_short, "signed short": ctypes.c_short,
    "unsigned short": ctypes.c_ushort, "int": ctypes.c_int, "signed": ctypes.c_int,
    "signed int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "long": _L, "long int": _L, "signed long": _L, "unsigned long": ctypes.c_ulong,
    "long long": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong,
    "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64, "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16,
    "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
    "ssize_t": ctypes.c_ssize_t, "ptrdiff_t": ctypes.c_ssize_t,
}
_FLOATS = {"float": ctypes.c_float, "double": ctypes.c_double}
_BOOLS = {"bool": ctypes.c_bool, "_Bool": ctypes.c_bool}
_LONG_DT = D.int64 if ctypes.sizeof(ctypes.c_long) == 8 else D.int32
_POINTEE = {"float": D.float32, "double": D.float64, "int8_t": D.int8, "signed char": D.int8,
            "uint8_t": D.uint8, "unsigned char": D.uint8, "int16_t": D.int16, "short": D.int16,
            "int32_t": D.int32, "int": D.int32, "int64_t": D.int64, "long": _LONG_DT,
            "long long": D.int64, "bool": D.bool_, "_Bool": D.bool_, "void": None}
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__", "struct",
               "register"}
_TYPE_WORDS = ({w for t in list(_INTS) + list(_FLOATS) + list(_BOOLS) for w in t.split()}
               | {"void"} | _QUALIFIERS | set(_DESCRIPTORS))


class _Descriptor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int64),
                ("sizes", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64))]


class Param:
    """One parsed C parameter: its name, C text, and how a Python value is converted."""

    def __init__(self, name, ctext, kind, ctype, dtype=None, const=False):
        self.name, self.ctext, self.kind, self.ctype = name, ctext, kind, ctype
        self.dtype, self.const = dtype, const


class Prototype:
    """A parsed C function prototype: name, return type (C text, ctype) and parameters."""

    def __init__(self, name, ret_text, restype, params):
        self.name, self.ret_text, self.restype, self.params = name, ret_text, restype, params

    def c_text(self, name=None):
        args = ", ".join(p.ctext for p in self.params) or "void"
        return f"{self.ret_text} {name or self.name}({args})"


# ---- reading C ----

def _strip_comments(src):
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', src)          # string literals
    return re.sub(r"^\s*#[^\n]*", "", src, flags=re.M)        # preprocessor lines


def _top_level(src):
    """`src` with every brace-enclosed body emptied (so only top-level text is left)."""
    src = re.sub(r'extern\s*""', "", src)        # extern "C" (its literal already emptied)
    out, depth = [], 0
    for ch in src:
        if ch == "{":
            if depth == 0:
                out.append("{")
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
            if depth == 0:
                out.append("}")
        elif depth == 0:
            out.append(ch)
    return "".join(out)


_DECL = re.compile(r"(?:^|[;}])\s*([A-Za-z_][\w\s\*]*?)\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*(?=[{;])")


def declarations(source):
    """{name: (return type text, parameter text, is static)} of the top-level functions."""
    found = {}
    for m in _DECL.finditer(_top_level(_strip_comments(source))):
        ret, name, params = " ".join(m.group(1).split()), m.group(2), m.group(3)
        words = ret.replace("*", " * ").split()
        if name in ("if", "for", "while", "switch", "return", "sizeof") or not words:
            continue
        static = "static" in words
        ret = " ".join(w for w in words if w not in ("static", "inline", "extern"))
        found.setdefault(name, (ret.replace(" *", "*"), params, static))
    return found


def _type_of(text, where):
    """(kind, ctype, dtype, const, canonical C text) of a C type written as `text`."""
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\[\s*\w*\s*\]", text)
    const = "const" in tokens
    stars = sum(1 for t in tokens if t == "*" or t.startswith("["))
    base = " ".join(t for t in tokens if t not in _QUALIFIERS and t != "*"
                    and not t.startswith("["))
    if base in _DESCRIPTORS and stars <= 1:
        return ("desc_ptr" if stars else "desc", _Descriptor, _DESCRIPTORS[base][1], const)
    if stars == 0:
        if base in _INTS:
            return ("int", _INTS[base], None, const)
        if base in _FLOATS:
            return ("float", _FLOATS[base], None, const)
        if base in _BOOLS:
            return ("bool", ctypes.c_bool, None, const)
        if base == "void":
            return ("void", None, None, const)
    elif stars == 1:
        if base == "char" and const:
            return ("str", ctypes.c_char_p, None, const)
        if base in _POINTEE:
            return ("ptr", ctypes.c_void_p, _POINTEE[base], const)
    raise TypeError(f"cpp_extension: {where}: the C type '{text.strip()}' is not supported "
                    "(see ember.utils.cpp_extension's docstring for the supported types)")


def parse_prototype(name, ret_text, params_text):
    """The Prototype of a function from its return type and parameter list (C text)."""
    kind, restype, _, _ = _type_of(ret_text, f"the return type of {name}")
    if kind not in ("void", "int", "float", "bool"):
        raise TypeError(f"cpp_extension: {name} returns '{ret_text}': only void, integer, "
                        "floating and bool results are supported")
    params = []
    text = params_text.strip()
    if text and text != "void":
        for i, p in enumerate(text.split(",")):
            p = " ".join(p.split())
            if p == "..." or "(" in p:
                raise TypeError(f"cpp_extension: {name}: parameter '{p}' is not supported "
                                "(no variadic or function-pointer parameters)")
            idents = re.findall(r"[A-Za-z_]\w*", p)
            pname = idents[-1] if idents and idents[-1] not in _TYPE_WORDS and len(
                [w for w in idents if w not in _QUALIFIERS]) > 1 else None
            type_text = p if pname is None else p[:p.rindex(pname)] + p[p.rindex(pname) +
                                                                       len(pname):]
            pk, ct, dt, const = _type_of(type_text, f"parameter {i + 1} of {name}")
            if pk == "void":
                raise TypeError(f"cpp_extension: {name}: a parameter cannot be void")
            pname = pname or f"arg{i}"
            ctext = " ".join(type_text.replace("*", " * ").split()).replace(" *", "*")
            ctext = re.sub(r"\[\s*\w*\s*\]", "", ctext).strip()
            if "[" in type_text:
                ctext += "*"
            params.append(Param(pname, f"{ctext} {pname}", pk, ct, dt, const))
    return Prototype(name, " ".join(ret_text.split()), restype, params)


# ---- calling ----

def _converter(fname, i, p):
    """A function turning the Python value of parameter `p` into its C value (checked), made
    once per parameter: the per-call cost is a few attribute tests."""
    where = f"{fname}(): argument '{p.name}' (position {i + 1}, C type '{p.ctext}')"
    if p.kind in ("ptr", "desc", "desc_ptr"):
        want = p.dtype

        def tensor_check(v):
            if not isinstance(v, Tensor):
                raise TypeError(f"{where} must be a Tensor, not {type(v).__name__}")
            if want is not None and v.dtype is not want:
                raise TypeError(f"{where} needs a tensor of dtype {want}, got {v.dtype}")
            if v.dtype.np is None or v.dtype is D.bfloat16:
                raise TypeError(f"{where}: dtype {v.dtype} cannot be passed to C")
            if v.device.type != "cpu":
                raise RuntimeError(f"{where} must be a cpu tensor, got one on {v.device}")
            return v._data

        if p.kind == "ptr":
            def ptr(v, keep):
                if v is None:
                    return None
                a = tensor_check(v)
                if not a.flags.c_contiguous:
                    raise RuntimeError(f"{where} must be contiguous (it has strides "
                                       f"{tuple(v.stride())}): call .contiguous() first, or "
                                       "take an ember_tensor descriptor in C for strided "
                                       "access")
                return a.__array_interface__["data"][0] if a.size else None
            return ptr

        def desc(v, keep):
            if v is None and p.kind == "desc_ptr":
                return None
            a = tensor_check(v)
            nd = max(1, a.ndim)
            sizes = (ctypes.c_int64 * nd)(*a.shape)
            strides = (ctypes.c_int64 * nd)(*(s // a.itemsize for s in a.strides))
            d = _Descriptor(a.__array_interface__["data"][0] if a.size else None, a.ndim,
                            sizes, strides)
            keep.append((sizes, strides, d))      # alive until the call returns
            return ctypes.pointer(d) if p.kind == "desc_ptr" else d
        return desc
    if p.kind == "int":
        bits = ctypes.sizeof(p.ctype) * 8
        signed = p.ctype(-1).value < 0
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

        def integer(v, keep):
            if type(v) is not int:
                if isinstance(v, (bool, Tensor)) or not hasattr(v, "__index__"):
                    raise TypeError(f"{where} must be an int, not {type(v).__name__}")
                v = v.__index__()
            if not lo <= v <= hi:
                raise OverflowError(f"{where}: {v} does not fit in {bits}-bit "
                                    f"{'signed' if signed else 'unsigned'} integer")
            return v
        return integer
    if p.kind == "float":
        def floating(v, keep):
            if type(v) is float:
                return v
            if isinstance(v, (Tensor, str, bytes)) or not hasattr(v, "__float__"):
                raise TypeError(f"{where} must be a number, not {type(v).__name__}")
            return float(v)
        return floating
    if p.kind == "bool":
        def boolean(v, keep):
            if not isinstance(v, bool):
                raise TypeError(f"{where} must be a bool, not {type(v).__name__}")
            return v
        return boolean
    if p.kind == "str":
        def string(v, keep):
            if isinstance(v, str):
                v = v.encode()
            if not isinstance(v, bytes):
                raise TypeError(f"{where} must be a str, not {type(v).__name__}")
            return v
        return string
    raise AssertionError(p.kind)


def _bind(lib, symbol, proto, doc):
    cfn = getattr(lib, symbol)
    cfn.argtypes = [ctypes.POINTER(_Descriptor) if p.kind == "desc_ptr" else p.ctype
                    for p in proto.params]
    cfn.restype = proto.restype
    params = proto.params
    convert = [_converter(proto.name, i, p) for i, p in enumerate(params)]
    written = [i for i, p in enumerate(params) if p.kind in ("ptr", "desc", "desc_ptr")
               and not p.const]
    n = len(params)

    def call(*args):
        if len(args) != n:
            raise TypeError(f"{proto.name}() takes {n} arguments ({proto.c_text()}), got "
                            f"{len(args)}")
        keep = []
        result = cfn(*[c(v, keep) for c, v in zip(convert, args)])
        for i in written:
            if args[i] is not None:
                args[i]._bump_version()
        return result
    call.__name__ = call.__qualname__ = proto.name
    call.__doc__ = (doc + "\n\n" if doc else "") + proto.c_text() + ";"
    call.prototype = proto
    return call


# ---- building ----

def _as_list(x):
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


def _cxx():
    return shutil.which("g++") or shutil.which("c++")


def _annotate(stderr, chunks):
    """The compiler's messages with the source line under each `label:line:col:` that points
    into inline source (the compiler cannot show it: the file does not exist)."""
    out = []
    for line in stderr.splitlines():
        out.append(line)
        m = re.match(r"^(.*?):(\d+):(?:\d+:)? (?:fatal )?(error|warning)", line)
        if m and m.group(1) in chunks:
            text = chunks[m.group(1)].splitlines()
            n = int(m.group(2))
            if 1 <= n <= len(text):
                out.append(f"  {n:5d} | {text[n - 1]}")
    return "\n".join(out)


def _library(name, chunks, cxx, protos, flags, verbose):
    """Build (through the kernel cache) and load one library of `chunks` ({label: text})."""
    body = "".join(f'#line 1 "{label}"\n{text}\n' for label, text in chunks.items())
    source = HEADER + body
    if cxx:
        source += '#line 1 "<ember: extern C wrappers>"\n' + "".join(
            f'extern "C" {p.c_text("ember_ext_" + p.name)} {{ '
            f'{"" if p.ret_text == "void" else "return "}'
            f'{p.name}({", ".join(a.name for a in p.params)}); }}\n' for p in protos)
    saved_cc = config.cc
    try:
        if cxx:
            config.cc = _cxx()    # the cache key then includes g++'s version
        path, hit = build.build_library(source, tuple(build.FLAGS) + tuple(flags))
        lib = ctypes.CDLL(path)
    except build.CompileError as exc:
        text = str(exc).split(" failed:\n", 1)[-1]
        inline = {k: v for k, v in chunks.items() if not os.path.exists(k)}
        raise RuntimeError(f"Error building extension '{name}':\n"
                           f"{_annotate(text, inline)}") from None
    except build.CompilerUnavailable as exc:
        raise RuntimeError(f"Error building extension '{name}': {exc}") from None
    finally:
        config.cc = saved_cc
    if verbose:
        print(f"extension {name}: {'loaded from cache' if hit else 'compiled'} {path}")
    return lib


def _module(name, c_chunks, cpp_chunks, functions, extra_cflags, extra_ldflags,
            extra_include_paths, verbose):
    docs = dict(functions) if isinstance(functions, dict) else (
        {f: "" for f in _as_list(functions)} if functions is not None else None)
    flags = list(extra_cflags or []) + [f"-I{p}" for p in extra_include_paths or []] + list(
        extra_ldflags or [])
    mod = types.ModuleType(name, f"ember C extension {name!r}")
    mod._libraries = []
    listed = set(docs or ())
    for chunks, cxx in ((c_chunks, False), (cpp_chunks, True)):
        if not chunks:
            continue
        if cxx and _cxx() is None:
            raise RuntimeError(f"Error building extension '{name}': C++ sources need g++, "
                               "which is not installed (Debian: apt-get install g++)")
        found = declarations("\n".join(chunks.values()))
        names = [n for n in (docs if docs is not None else found) if n in found and (
            docs is not None or not found[n][2])]
        protos = []
        for n in names:
            ret, params, static = found[n]
            if static:
                raise TypeError(f"cpp_extension: {n} is static: it cannot be called from "
                                "Python")
            protos.append(parse_prototype(n, ret, params))
        lib = _library(name, chunks, cxx, protos, flags, verbose)
        mod._libraries.append(lib)
        for p in protos:
            setattr(mod, p.name, _bind(lib, ("ember_ext_" if cxx else "") + p.name, p,
                                       (docs or {}).get(p.name, "")))
            listed.discard(p.name)
    if listed:
        raise RuntimeError(f"Error building extension '{name}': no declaration of "
                           f"{', '.join(sorted(listed))} found in the sources")
    return mod


def load_inline(name, cpp_sources=None, cuda_sources=None, sycl_sources=None, functions=None,
                extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
                extra_ldflags=None, extra_include_paths=None, build_directory=None,
                verbose=False, with_cuda=None, with_sycl=None, is_python_module=True,
                with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False,
                no_implicit_headers=False, *, c_sources=None):
    """Build C (`c_sources`) and C++ (`cpp_sources`) source strings into a module exposing
    `functions` (a list of names, or {name: docstring}; default: every non-static top-level
    function). CUDA sources are not supported; `build_directory` and the pybind-related
    arguments are accepted and ignored (the kernel cache is used).

    >>> mod = load_inline("add1", c_sources="void add1(float* x, long n) "
    ...                   "{ for (long i = 0; i < n; i++) x[i] += 1; }", functions=["add1"])
    >>> x = ember.zeros(3); mod.add1(x, 3); x.tolist()
    [1.0, 1.0, 1.0]
    """
    if cuda_sources or sycl_sources or with_cuda:
        raise RuntimeError("ember.utils.cpp_extension: CUDA/SYCL sources are not supported")
    c = _as_list(c_sources)
    cpp = _as_list(cpp_sources)
    if not c and not cpp:
        raise ValueError("load_inline: give c_sources or cpp_sources")
    return _module(name, {f"<{name}>/c_sources" + (f"[{i}]" if len(c) > 1 else ""): s
                          for i, s in enumerate(c)},
                   {f"<{name}>/cpp_sources" + (f"[{i}]" if len(cpp) > 1 else ""): s
                    for i, s in enumerate(cpp)},
                   functions, extra_cflags, extra_ldflags, extra_include_paths, verbose)


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
         extra_ldflags=None, extra_include_paths=None, build_directory=None, verbose=False,
         with_cuda=None, with_sycl=None, is_python_module=True, is_standalone=False,
         keep_intermediates=True, *, functions=None):
    """Build source files (``.c`` as C; ``.cpp``/``.cc``/``.cxx`` as C++) into a module of
    their functions (`functions`, default: every non-static top-level function).

    >>> mod = load("swish", sources=["swish.c"])   # doctest: +SKIP
    """
    c, cpp = {}, {}
    for path in _as_list(sources):
        ext = os.path.splitext(path)[1].lower()
        if ext in (".cu", ".cuh"):
            raise RuntimeError(f"ember.utils.cpp_extension: CUDA source {path} is not "
                               "supported")
        target = c if ext == ".c" else cpp if ext in (".cpp", ".cc", ".cxx", ".c++") else None
        if target is None:
            raise ValueError(f"load: {path}: expected a .c or .cpp source file")
        with open(path) as f:
            target[os.path.abspath(path)] = f.read()
    if not c and not cpp:
        raise ValueError("load: no sources given")
    return _module(name, c, cpp, functions, extra_cflags, extra_ldflags, extra_include_paths,
                   verbose)
