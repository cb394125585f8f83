"""Samples of torch.linalg.eig and eigvals (ember/ops/linalg_eig.py).

Eigenvalues come in LAPACK's order and each eigenvector up to a phase e^{i phi}, both of
which may differ between LAPACK builds, so the results are compared through what is
unique (`post`): the eigenvalues sorted, and the moduli of the eigenvectors' entries with
the columns in that order. Errors (non-square, 1-D, integer, half, NaN input) are samples
too: test_values checks that ember raises like torch. tests/linalg checks the gradients
(eig's are only defined for phase-invariant losses, which gradcheck of raw outputs is not).
"""
import numpy as np

try:
    from ._make import Sample, T
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    from _make import Sample, T

TOL = (1e-4, 1e-5)   # float32: torch's sgeev against NumPy's geev in double, then cast


def _lib_of(t):
    import torch
    import ember
    return torch if isinstance(t, torch.Tensor) else ember


def _order(w):
    """Per matrix, the permutation sorting eigenvalues by (real, imag), rounded so that
    rounding differences between libraries do not reorder them."""
    w = np.asarray(w, np.complex128)
    if w.size == 0:
        return np.zeros(w.shape, np.int64)
    key = np.round(w.real, 4) + 0.0, np.round(w.imag, 4) + 0.0
    flat = [np.lexsort((i, r)) for r, i in zip(key[0].reshape(-1, w.shape[-1]),
                                               key[1].reshape(-1, w.shape[-1]))]
    return np.array(flat, dtype=np.int64).reshape(w.shape)


def _np(t):
    return t.detach().resolve_conj().numpy()


def sorted_eigvals(w):
    lib = _lib_of(w)
    a = _np(w)
    return lib.from_numpy(np.ascontiguousarray(np.take_along_axis(a, _order(a), -1)))


def sorted_eig(r):
    """(eigenvalues sorted, |V| with its columns in that order): phase-free, order-free."""
    w, v = r
    lib = _lib_of(w)
    a, vec = _np(w), _np(v)
    idx = _order(a)
    mod = np.abs(vec)
    if vec.size:
        mod = np.take_along_axis(mod, np.broadcast_to(idx[..., None, :], vec.shape), -1)
    return (lib.from_numpy(np.ascontiguousarray(np.take_along_axis(a, idx, -1))),
            lib.from_numpy(np.ascontiguousarray(mod)))


def E(*args, values=True):
    return Sample(args, tol=TOL, post=sorted_eig, values=values)


def V(*args, values=True):
    return Sample(args, tol=TOL, post=sorted_eigvals, values=values)


_NAN = T((3, 3), "float64", values=[[1.0, float("nan"), 0.0], [0.0, 2.0, 1.0],
                                    [1.0, 0.0, 3.0]])
# a real matrix with a complex-conjugate pair of eigenvalues (a rotation block) and one real
_ROT = T((3, 3), "float64", values=[[0.0, -2.0, 0.5], [2.0, 0.0, 0.0], [0.0, 0.0, 1.5]])


def _common(mk):
    return [mk(T((3, 3))), mk(T((2, 3, 3), "float64", "T")), mk(T((3, 3), "complex128")),
            mk(T((2, 2, 2), "complex64", "step")), mk(_ROT), mk(T((1, 1), "float64")),
            mk(T((0, 3, 3))), mk(T((2, 0, 0), "float64")),
            # torch rejects these: ember must raise alike
            mk(T((2, 3))), mk(T((3,))), mk(T((3, 3), "int64"))]


SPECIAL = {
    "linalg_eig": _common(E) + [E(_NAN)],
    # eigvals hands NaN input to LAPACK unchecked (no error); its values are then undefined
    "linalg_eigvals": _common(V) + [V(_NAN, values=False)],
}
