"""``F.grouped_mm``: many small matrix multiplies in one call (Mixture-of-Experts layers),
with PyTorch's operand layouts and checks.

    out = F.grouped_mm(tokens, expert_weights, offs=offs)   # (M, K) x (G, K, N) -> (M, N)

``offs`` (int32, 1-D, cumulative ends) cuts the jagged dimension of a 2-D operand into the
groups; rows past ``offs[-1]`` are zero here (PyTorch leaves them uninitialised). It is a
composition of slicing, ``matmul`` and ``cat``, so autograd differentiates it.
"""
from ..core.dtype import bfloat16, float16, float32, int32, torch_name
from ..core.tensor import Tensor
from ..ops.creation import zeros
from ..ops.joining import cat, stack
from ..ops.matmul import matmul

__all__ = ["grouped_mm"]

_ALLOWED = (float32, bfloat16, float16)
_CNAME = {float32: "float", bfloat16: "c10::BFloat16", float16: "c10::Half"}
_DTNAME = {float32: "Float32", bfloat16: "BFloat16", float16: "Float16"}


def _check_strides(t):
    s0, s1 = t.stride()[-2:]
    size = t.element_size()
    if s1 == 1:
        ok = s0 * size % 16 == 0
    elif s0 == 1:
        ok = s1 * size % 16 == 0
    else:
        raise RuntimeError(f"Invalid strides/sizes, got {list(t.stride())} for strides and "
                           f"{list(t.shape)} for sizes")
    if not ok:
        raise RuntimeError("strides should be multiple of 16 bytes")


def _bounds(offs):
    ends = [int(v) for v in offs.tolist()]
    return list(zip([0] + ends[:-1], ends))


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """A grouped matrix multiply; the groups are given by the operands' shapes and ``offs``:

    - ``(M, K) x (G, K, N)``, ``offs`` cuts M: group ``g``'s rows times ``mat_b[g]`` -> (M, N);
    - ``(G, M, K) x (K, N)``, ``offs`` cuts N: ``mat_a[g]`` times group ``g``'s columns -> (M, N);
    - ``(M, K) x (K, N)``, ``offs`` cuts K: one product per group -> (G, M, N);
    - ``(G, M, K) x (G, K, N)``, no ``offs``: a batched product -> (G, M, N).

    float32, bfloat16 or float16 operands of one dtype; ``out_dtype`` may only repeat it;
    ``bias`` is not supported (as in PyTorch).
    """
    for i, (arg, t) in enumerate((("input", mat_a), ("mat2", mat_b))):
        if not isinstance(t, Tensor):
            raise TypeError(f"_grouped_mm(): argument '{arg}' (position {i + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if t.dtype not in _ALLOWED:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{torch_name(t.dtype)}")
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if t.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    a_3d, b_3d = mat_a.dim() == 3, mat_b.dim() == 3
    if (offs is not None) == (a_3d and b_3d):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None:
        if offs.dim() != 1:
            raise RuntimeError("offs has to be 1D")
        if offs.dtype != int32:
            raise RuntimeError("Offsets have to be int32")
    k_b = mat_b.shape[-2] if b_3d else mat_b.shape[0]
    if mat_a.shape[-1] != k_b:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if a_3d and b_3d:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("batched dimension has to match")
    elif a_3d or b_3d:
        groups = mat_a.shape[0] if a_3d else mat_b.shape[0]
        if offs.shape[0] != groups:
            raise RuntimeError("matrix batch sizes have to match")
    _check_strides(mat_a)
    _check_strides(mat_b)
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{_CNAME[mat_a.dtype]} != {_CNAME[mat_b.dtype]}")

    if a_3d and b_3d:
        return matmul(mat_a, mat_b)
    if not a_3d and b_3d:            # rows of mat_a cut by offs, one weight per group
        parts = [matmul(mat_a[s:e], mat_b[g]) for g, (s, e) in enumerate(_bounds(offs))]
        used = _bounds(offs)[-1][1] if offs.shape[0] else 0
        return _fill(parts, mat_a.shape[0] - used, mat_b.shape[-1], mat_a, 0)
    if a_3d:                         # columns of mat_b cut by offs
        parts = [matmul(mat_a[g], mat_b[:, s:e]) for g, (s, e) in enumerate(_bounds(offs))]
        used = _bounds(offs)[-1][1] if offs.shape[0] else 0
        return _fill(parts, mat_b.shape[1] - used, mat_a.shape[1], mat_a, 1)
    # both 2-D: the contraction dimension is cut; one (M, N) product per group
    return stack([matmul(mat_a[:, s:e], mat_b[s:e]) for s, e in _bounds(offs)])


def _fill(parts, missing, other, like, dim):
    """The group results joined along `dim`, zero-padded by `missing` rows/columns."""
    if missing > 0:
        shape = (missing, other) if dim == 0 else (other, missing)
        parts.append(zeros(shape, dtype=like.dtype, device=like.device))
    if not parts:
        shape = (0, other) if dim == 0 else (other, 0)
        return zeros(shape, dtype=like.dtype, device=like.device)
    return cat(parts, dim)
