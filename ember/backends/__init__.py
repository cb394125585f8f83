"""ember.backends: torch.backends' switches and queries, for code written against torch.

ember computes on cpu through NumPy, so most switches change nothing in what it computes;
they are accepted with torch's validation and read back as set, which is what seeding and
setup code (``torch.backends.cudnn.deterministic = True``) needs:

- ``cudnn``: ``deterministic``, ``benchmark``, ``enabled``, ``allow_tf32`` (bools, checked as
  torch checks them), ``is_available()`` (False), ``version()`` (None), ``flags(...)``;
- ``cuda.matmul``: ``allow_tf32`` (tied to the float32 matmul precision, as in torch),
  ``allow_fp16_reduced_precision_reduction``, ``allow_bf16_reduced_precision_reduction``;
  ``cuda.is_built()`` (False);
- ``mps.is_available()`` / ``is_built()`` (False); ``cpu.get_cpu_capability()`` (from
  /proc/cpuinfo: "AVX512", "AVX2" or "DEFAULT"); ``mkl``, ``mkldnn``, ``openmp``:
  ``is_available()`` (False: ember links none of them itself);
- ``set_float32_matmul_precision`` / ``get_float32_matmul_precision`` ("highest", "high",
  "medium"), exported as ``ember.set_float32_matmul_precision``.

>>> ember.backends.cudnn.deterministic = True
>>> ember.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
True
"""
import contextlib
import sys
import types
import warnings

_PRECISIONS = ("highest", "high", "medium")
_state = {"precision": "highest"}


def set_float32_matmul_precision(precision):
    """How float32 matrix products may trade precision for speed: "highest" (the default),
    "high" or "medium" (torch: TF32 on GPUs). ember's cpu products are always full float32;
    the setting is kept and read back, and moves ``backends.cuda.matmul.allow_tf32``."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["precision"] = precision


def get_float32_matmul_precision():
    """The float32 matmul precision: "highest" unless set otherwise."""
    return _state["precision"]


def _bool_flag(name, setter_name, default):
    """A module attribute that only takes bools (torch's RuntimeError otherwise)."""
    store = "_" + name

    def get(self):
        return getattr(self, store, default)

    def set_(self, value):
        if not isinstance(value, bool):
            raise RuntimeError(f"{setter_name} expects a bool, but got {type(value).__name__}")
        object.__setattr__(self, store, value)
    return property(get, set_)


class _CudnnModule(types.ModuleType):
    """``ember.backends.cudnn``: cuDNN's switches (there is no cuDNN under ember)."""
    enabled = _bool_flag("enabled", "set_enabled_cudnn", True)
    benchmark = _bool_flag("benchmark", "set_benchmark_cudnn", False)
    deterministic = _bool_flag("deterministic", "set_deterministic_cudnn", False)
    allow_tf32 = _bool_flag("allow_tf32", "set_allow_tf32_cublas", True)

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def version():
        return None

    @contextlib.contextmanager
    def flags(self, enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
              allow_tf32=True, **kwargs):
        """Set the switches for a ``with`` block, restoring them after (torch's flags())."""
        saved = (self.enabled, self.benchmark, self.deterministic, self.allow_tf32)
        self.enabled, self.benchmark = enabled, benchmark
        self.deterministic, self.allow_tf32 = deterministic, allow_tf32
        try:
            yield
        finally:
            self.enabled, self.benchmark, self.deterministic, self.allow_tf32 = saved


class _Matmul:
    """``ember.backends.cuda.matmul``: cuBLAS's switches."""
    _names = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_reduced", {"allow_fp16_reduced_precision_reduction": True,
                                              "allow_bf16_reduced_precision_reduction": True})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _state["precision"] != "highest"
        if name in self._reduced:
            return self._reduced[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            _state["precision"] = "high" if value else "highest"
        elif name in self._reduced:
            if not isinstance(value, (bool, tuple, list)):
                raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got "
                                f"{type(value)}")
            self._reduced[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


def _submodule(name, doc, **attrs):
    m = types.ModuleType(f"{__name__}.{name}", doc)
    for k, v in attrs.items():
        setattr(m, k, v)
    sys.modules[m.__name__] = m
    return m


def _false():
    return False


def get_cpu_capability():
    """The widest SIMD instruction set this cpu has, named as torch names it: "AVX512"
    (avx512f/bw/vl/dq), "AVX2" (avx2 and fma), else "DEFAULT"."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith("flags"):
                    flags.update(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "DEFAULT"
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"


cudnn = _CudnnModule(f"{__name__}.cudnn", _CudnnModule.__doc__)
sys.modules[cudnn.__name__] = cudnn
cuda = _submodule("cuda", "ember.backends.cuda: cuBLAS switches (no CUDA build here).",
                  matmul=_Matmul(), is_built=_false)
mps = _submodule("mps", "ember.backends.mps: Apple's Metal backend (never available).",
                 is_available=_false, is_built=_false)
cpu = _submodule("cpu", "ember.backends.cpu: what the cpu offers.",
                 get_cpu_capability=get_cpu_capability)
mkl = _submodule("mkl", "ember.backends.mkl", is_available=_false)
mkldnn = _submodule("mkldnn", "ember.backends.mkldnn", is_available=_false)
openmp = _submodule("openmp", "ember.backends.openmp", is_available=_false)
