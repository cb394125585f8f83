"""Conversions between float32 and the 16-bit floats (bfloat16, float16) on the hot path.

Autocast rounds every lower-precision op's result to bfloat16 and widens it again for the
next op's float32 computation, so these conversions run a few hundred times per training
step. `astype(arr, np_dtype)` is ``arr.astype(np_dtype)`` with the same result bit for bit,
taken through a C kernel when one is installed for the pair of dtypes (the compiler installs
them at import: ember/compiler/cast_kernels.py), the array is C-contiguous and big enough to
pay for the call; otherwise ml_dtypes/NumPy convert it. Nothing here depends on the compiler:
without a C compiler the results are the same, only slower.

    from ember.core import lowp_cast
    b = lowp_cast.astype(np.ones(8, np.float32), D.bfloat16.np)   # round to nearest even

The kernels round to nearest even as ml_dtypes and NumPy do, and treat NaN as they do:
float32 -> bfloat16 gives the quiet NaN ``sign | 0x7fc0`` (ml_dtypes; PyTorch's vectorised
CPU kernel writes 0xffff, another NaN), float32 -> float16 keeps the sign and the top payload
bits (NumPy's rule), widening is exact. NumPy's "overflow encountered in cast" warning is
not raised by the kernels (PyTorch raises none either).
"""
import numpy as np

# below this many elements ctypes' call overhead (~2-4 us) outweighs the faster loop
MIN_ELEMENTS = 2048

# {(source np.dtype, target np.dtype): kernel(src, dst, n)}: filled by `install`
_kernels = {}
_pending = []      # a provider of the kernels, called at the first conversion that may use one
stats = {"kernel": 0}   # conversions the C kernels ran (tests check they are used)


def install(kernels):
    """Use `kernels` from now on: {(src np.dtype, dst np.dtype): fn(src_array, dst_array, n)},
    each fn writing the converted contents of the C-contiguous `src_array` into `dst_array`,
    or a function returning such a dict, called at the first conversion big enough to use
    one (so that importing the provider compiles nothing). An empty dict removes them: then
    ml_dtypes/NumPy convert everything."""
    _kernels.clear()
    _pending.clear()
    if callable(kernels):
        _pending.append(kernels)
    else:
        _kernels.update(kernels)


def _resolve():
    provider = _pending.pop()
    _kernels.update(provider())


def installed():
    """The (source, target) NumPy dtype names of the conversions that run as C kernels."""
    if _pending:
        _resolve()
    return sorted((str(a), str(b)) for a, b in _kernels)


def astype(arr, np_dtype):
    """``arr.astype(np_dtype)``, same values, same strides: computed by a C kernel when one
    is installed for the conversion and `arr` is a plain ndarray of >= MIN_ELEMENTS
    elements (a subclass, such as the meta device's MetaArray, keeps its own astype). A C-contiguous
    array converts in place of its buffer; another layout is first made dense in the order
    of its strides (``astype``'s order="K" layout, which the result then has)."""
    if arr.size < MIN_ELEMENTS or type(arr) is not np.ndarray:   # (a meta array: its astype)
        return arr.astype(np_dtype)
    if _pending:
        _resolve()
    k = _kernels.get((arr.dtype, np_dtype))
    if k is None:
        if not _kernels or isinstance(np_dtype, np.dtype):
            return arr.astype(np_dtype)
        np_dtype = np.dtype(np_dtype)       # np.float32 (the type) hashes unlike its dtype
        k = _kernels.get((arr.dtype, np_dtype))
        if k is None:
            return arr.astype(np_dtype)
    if arr.flags.c_contiguous:
        out = np.empty(arr.shape, np_dtype)
        k(arr, out, arr.size)
        stats["kernel"] += 1
        return out
    return _strided(arr, np_dtype, k)


def _strided(arr, np_dtype, k):
    """Convert a non-C-contiguous `arr`: in its strides' order (a transpose, a slice, the
    heads of an attention), made dense by one copy of the 16/32-bit values where needed."""
    st = arr.strides
    # only layouts whose "K" order is unambiguous: positive, distinct strides, no size-1 dim
    if 1 in arr.shape or len(set(st)) != len(st) or min(st) <= 0:
        return arr.astype(np_dtype)
    perm = sorted(range(arr.ndim), key=lambda i: -st[i])
    v = np.ascontiguousarray(arr.transpose(perm))
    out = np.empty(v.shape, np_dtype)
    k(v, out, v.size)
    stats["kernel"] += 1
    inv = [0] * arr.ndim
    for i, p in enumerate(perm):
        inv[p] = i
    return out.transpose(inv)
