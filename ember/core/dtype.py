"""Data types and PyTorch's type-promotion rules.

Each ember dtype wraps one NumPy dtype (bfloat16 comes from ml_dtypes). Promotion follows
PyTorch, not NumPy: int + float gives the float, float16 + bfloat16 gives float32, and 0-dim
tensors and Python scalars take part only "weakly" (see `result_type`).
"""
import threading

import numpy as np

try:
    import ml_dtypes
    _np_bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bfloat16 tensors are then unavailable
    ml_dtypes = None
    _np_bfloat16 = None


class dtype:
    """A tensor element type, e.g. ``ember.float32``.

    >>> ember.float32.is_floating_point, ember.float32.itemsize
    (True, 4)
    """
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "_kind", "_rank")

    def __init__(self, name, np_dtype, kind, rank):
        self.name = name
        self.np = np_dtype
        self.itemsize = np_dtype.itemsize if np_dtype is not None else 2
        self._kind = kind          # 0 bool, 1 integral, 2 floating, 3 complex
        self._rank = rank          # complex: the rank of its real part's float type
        self.is_floating_point = kind == 2
        self.is_signed = kind >= 2 or (kind == 1 and name != "uint8")

    @property
    def is_complex(self):
        return self._kind == 3

    def to_real(self):
        """The real dtype of a complex one (complex64 -> float32); other dtypes unchanged."""
        return _TO_REAL.get(self, self)

    def to_complex(self):
        """The complex dtype whose parts are this floating dtype (float64 -> complex128)."""
        if self._kind == 3:
            return self
        c = _TO_COMPLEX.get(self)
        if c is None:
            raise TypeError(f"ember has no complex dtype with {self.name} parts (torch's "
                            "complex32 / chalf is not supported)")
        return c

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return _NAMES[name]


bool_ = dtype("bool", np.dtype(np.bool_), 0, 0)
uint8 = dtype("uint8", np.dtype(np.uint8), 1, 1)
int8 = dtype("int8", np.dtype(np.int8), 1, 1)
int16 = dtype("int16", np.dtype(np.int16), 1, 2)
int32 = dtype("int32", np.dtype(np.int32), 1, 3)
int64 = dtype("int64", np.dtype(np.int64), 1, 4)
float16 = dtype("float16", np.dtype(np.float16), 2, 1)
bfloat16 = dtype("bfloat16", _np_bfloat16, 2, 1)
float32 = dtype("float32", np.dtype(np.float32), 2, 2)
float64 = dtype("float64", np.dtype(np.float64), 2, 3)
complex64 = dtype("complex64", np.dtype(np.complex64), 3, 2)
complex128 = dtype("complex128", np.dtype(np.complex128), 3, 3)
_TO_REAL = {complex64: float32, complex128: float64}
_TO_COMPLEX = {float32: complex64, float64: complex128}

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
       complex64, complex128)
_NAMES = {d.name: d for d in ALL}
_ALIASES = {"half": float16, "float": float32, "double": float64, "long": int64, "int": int32,
            "short": int16, "bool": bool_, "cfloat": complex64, "cdouble": complex128}
_NAMES.update(_ALIASES)

# ---- the names PyTorch's messages give each dtype (the one table; others read it) ----
# TORCH_NAMES: the ScalarType name ("Float"), in most messages. CPP_TYPES: the C++ type as
# c10 spells it ("int64_t"), in overflow messages; the compiler's C code stores the same types.
# CPP_NAMES: the C++ type as the C++ compiler demangles it ("long int"), in kernel dtype checks.
_MESSAGE_NAMES = {  # name: (ScalarType name, c10 C++ type, demangled C++ type)
    "bool": ("Bool", "bool", "bool"),
    "uint8": ("Byte", "uint8_t", "unsigned char"),
    "int8": ("Char", "int8_t", "signed char"),
    "int16": ("Short", "int16_t", "short int"),
    "int32": ("Int", "int32_t", "int"),
    "int64": ("Long", "int64_t", "long int"),
    "float16": ("Half", "c10::Half", "c10::Half"),
    "bfloat16": ("BFloat16", "c10::BFloat16", "c10::BFloat16"),
    "float32": ("Float", "float", "float"),
    "float64": ("Double", "double", "double"),
    "complex64": ("ComplexFloat", "c10::complex<float>", "c10::complex<float>"),
    "complex128": ("ComplexDouble", "c10::complex<double>", "c10::complex<double>"),
}
TORCH_NAMES = {n: v[0] for n, v in _MESSAGE_NAMES.items()}
CPP_TYPES = {n: v[1] for n, v in _MESSAGE_NAMES.items()}
CPP_NAMES = {n: v[2] for n, v in _MESSAGE_NAMES.items()}


def torch_name(dt):
    """PyTorch's ScalarType name of `dt` ("Float" for float32), as its messages print it."""
    return TORCH_NAMES[dt.name]


# NumPy dtype -> ember dtype; the hot path maps kernel results with one dict lookup.
FROM_NP = {d.np: d for d in ALL if d.np is not None}


def from_numpy_dtype(np_dtype):
    try:
        return FROM_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only "
                        "supported types are: float64, float32, float16, complex64, complex128, "
                        "int64, int32, int16, int8, uint8, and bool.") from None


def to_dtype(obj):
    """Accept an ember dtype, a NumPy dtype, a Python type or a name ('float32')."""
    if isinstance(obj, dtype):
        return obj
    if obj is float:
        return float64
    if obj is int:
        return int64
    if obj is bool:
        return bool_
    if obj is complex:
        return complex128
    if isinstance(obj, str):
        name = obj[6:] if obj.startswith("torch.") else obj
        if name in _NAMES:
            return _NAMES[name]
    try:
        return from_numpy_dtype(obj)
    except TypeError:
        pass
    raise TypeError(f"expected an ember dtype, got {obj!r}")


# ---- the default dtype (thread-safe like torch's global) ----
_default = [float32]


def get_default_dtype():
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return _default[0]


def default_complex_dtype():
    """The dtype of tensors made from Python complex numbers: complex128 when the default
    dtype is float64, else complex64 (as torch's default complex dtype follows it)."""
    return complex128 if _default[0] is float64 else complex64


def set_default_dtype(d):
    """Set the default floating dtype (float32, float64, float16 or bfloat16 only)."""
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


# ---- promotion ----
def promote_types(a, b):
    """The smallest dtype both `a` and `b` convert to safely, by PyTorch's table.

    >>> ember.promote_types(ember.uint8, ember.int8)
    ember.int16
    """
    if a is b:
        return a
    if a._kind != b._kind:
        hi, lo = (a, b) if a._kind > b._kind else (b, a)
        if hi._kind == 3 and lo._kind == 2 and lo._rank > hi._rank:
            return complex128          # complex64 with float64
        return hi
    if a._kind == 3:
        return a if a._rank > b._rank else b
    if a._kind == 0:
        return a
    if a._kind == 2:
        if a._rank == b._rank:            # float16 with bfloat16
            return float32
        return a if a._rank > b._rank else b
    # integral
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a._rank > b._rank else b


def _combine_categories(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._kind == 3:
        return higher
    if lower._kind == 3:
        # a complex 0-dim tensor or scalar keeps a floating tensor's precision
        return higher.to_complex() if higher._kind == 2 else lower
    if higher._kind == 2:
        return higher
    if higher is bool_ or lower._kind == 2:
        return promote_types(higher, lower)
    return higher


# Categories of operands: 0 dim>0 tensor, 1 0-dim tensor, 2 Python scalar ("wrapped number").
_cache = {}


def result_type_of(operands):
    """Promote (dtype, category) pairs the way PyTorch's TensorIterator does."""
    key = tuple(operands) + (_default[0],)
    r = _cache.get(key)
    if r is not None:
        return r
    groups = [None, None, None]
    for d, cat in operands:
        if cat == 2 and d._kind >= 2:
            d = _default[0] if d._kind == 2 else default_complex_dtype()
        g = groups[cat]
        groups[cat] = d if g is None else promote_types(g, d)
    r = _combine_categories(groups[0], _combine_categories(groups[1], groups[2]))
    _cache[key] = r
    return r


def scalar_dtype(x):
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return float64
    if isinstance(x, complex):
        return complex128
    if isinstance(x, np.generic):
        return from_numpy_dtype(x.dtype)
    raise TypeError(f"expected a Tensor or a number, got {type(x).__name__}")


def can_cast(from_, to):
    """PyTorch's same-kind rule: no float -> integral, no non-bool -> bool."""
    if from_._kind > to._kind:
        return False
    return True


# ---- finfo / iinfo ----
class finfo:
    """Machine limits of a floating dtype: ``ember.finfo(ember.float16).max``."""

    def __init__(self, type=None):
        d = to_dtype(type) if type is not None else get_default_dtype()
        d = d.to_real()      # a complex dtype's limits are those of its parts
        if not d.is_floating_point:
            raise TypeError("finfo is only for floating point types")
        info = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -int(info.precision)  # like torch: a power of ten

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integral dtype: ``ember.iinfo(ember.int8).min``."""

    def __init__(self, type):
        d = to_dtype(type)
        if d.is_floating_point or d.is_complex or d is bool_:
            raise TypeError(f"{d!r} is not supported by ember.iinfo")
        info = np.iinfo(d.np)
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
