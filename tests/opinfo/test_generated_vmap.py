"""vmap generated from the op registry: for every registered op with samples (samples.py)
that has a batching rule (its OpDef's `batch`, or one derived from its kind; composites
batch through their decomposition), vmap over a batch of three drawn samples equals a
Python loop over them, stacked, with the batch dim first and last; it runs without the
loop fallback's performance warning; and where torch.func.vmap accepts the same call, it
equals torch's too.

FALLBACK lists the ops with samples that have no rule (vmap runs them as a loop over the
batch); the test checks the list is exact, so it only changes on purpose.
"""
import warnings
import zlib

import numpy as np
import pytest
import torch

import ember
from ember.func import vmap
from ember.func.batching import rule_for
from ember.ops.registry import OPS, CREATION, RANDOM

try:
    from ._make import arrays_in, make_tensor, realize
    from .samples import samples_for
    from .test_generated import run, outcome, to_torch
except ImportError:  # run from this folder
    from _make import arrays_in, make_tensor, realize
    from samples import samples_for
    from test_generated import run, outcome, to_torch

SAMPLES_PER_OP = 2      # keeps the whole file to a few seconds
BATCH = 3

# ops without a batching rule: vmap loops over the batch (torch's "performance drop" path)
FALLBACK = {
    # data-dependent result shapes (torch refuses these under vmap)
    "argwhere", "masked_select", "nonzero", "unique", "unique_consecutive", "bincount",
    # reductions without dim semantics, or with tensor operands
    "count_nonzero", "histc", "msort", "searchsorted", "bucketize",
    # linear algebra and index ops still to write rules for
    "addbmm", "addmv", "baddbmm", "cholesky", "cross", "det", "diag", "diag_embed",
    "diagflat", "index_add", "index_copy", "index_fill", "index_put", "inverse", "kron",
    "logdet", "masked_scatter", "matrix_power", "pinverse", "put", "qr", "scatter",
    "scatter_add", "scatter_reduce", "slogdet", "svd", "take", "take_along_dim", "trace",
    "vdot", "einsum",
    # views whose arguments are strides or shapes of the whole storage
    "as_strided",
    # torch.linalg's functions and nn.functional's whole-call ops (no rule written yet)
    "linalg_cholesky", "linalg_eig", "linalg_eigh", "linalg_eigvals", "linalg_eigvalsh",
    "linalg_inv", "linalg_lstsq", "linalg_matrix_rank", "linalg_qr", "linalg_solve",
    "linalg_svd", "linalg_svdvals", "linalg_vecdot", "adaptive_max_pool3d", "ctc_loss",
    "grid_sample", "max_unpool1d", "max_unpool2d", "multi_margin_loss",
    "multilabel_margin_loss",
    # top-level functions computed in NumPy as a whole (ops/misc_*.py, linalg_more.py)
    "frexp", "histogram", "histogramdd", "isin", "nonzero_static", "unravel_index",
    "new_empty_strided", "linalg_solve_triangular", "geqrf", "linalg_cholesky_ex",
    "linalg_inv_ex", "linalg_ldl_factor", "linalg_ldl_factor_ex", "linalg_ldl_solve",
    "linalg_lu", "linalg_lu_factor_ex", "linalg_solve_ex", "lu", "matrix_exp",
}


def _np(t):
    """A result's values in double precision (complex ones kept complex)."""
    a = t.detach().resolve_conj().numpy()
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


# ops whose rule declines some samples (vmap then loops, with the warning), and why
DECLINES = {
    "quantile": "a tensor q adds a leading dim the dim-shifting rule does not place",
    "nanquantile": "a tensor q adds a leading dim the dim-shifting rule does not place",
    "istft": "its overlap-add is an index_add, which has no rule yet (it loops)",
    "roll": "dims=None rolls the flattened sample",
    "slice_inverse": "a view of self's storage in src's geometry: no batched form (torch's "
                     "vmap refuses it: no batching rule for a view op)",
    "as_strided_scatter": "it is an index_put, which has no batching rule yet (it loops)",
    "index_reduce": "it is a scatter_reduce, which has no batching rule yet (it loops)",
    "nuclear_norm": "it sums linalg_svdvals, which has no batching rule yet (it loops)",
    **{n: "it is made of linear-algebra ops without a batching rule yet (it loops)"
       for n in ("cholesky_inverse", "cholesky_solve", "linalg_cond", "linalg_lu_factor",
                 "linalg_lu_solve", "linalg_tensorinv", "linalg_tensorsolve", "lu_solve",
                 "triangular_solve")},
    **{n: "the transposed convolution's kernel (F_conv_tr) has no batching rule yet"
       for n in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")},
}


def _fn(op):
    return op.fn


def has_rule(name):
    op = OPS[name]
    return rule_for(op, _fn(op)) is not None


# ops left out: a Python bool result (torch's vmap refuses these too), or no tensor input
NOT_BATCHABLE = {"allclose", "equal", "tril_indices", "triu_indices", "is_same_size",
                 "typename", "get_device", "scalar_tensor"}


def _testable(name):
    op = OPS[name]
    return op.kind not in (CREATION, RANDOM) and samples_for(name) and \
        name not in NOT_BATCHABLE


NAMES = sorted(n for n in OPS if _testable(n) and has_rule(n))
NO_RULE = sorted(n for n in OPS if _testable(n) and not has_rule(n))


def test_fallback_list_is_exact():
    assert set(NO_RULE) == FALLBACK & set(NO_RULE), \
        f"ops without a rule missing from FALLBACK: {sorted(set(NO_RULE) - FALLBACK)}"
    stale = FALLBACK - set(NO_RULE)
    assert not stale, f"FALLBACK lists ops that have a rule now (or no samples): {stale}"


def _stack(lib, ts, dim):
    return lib.stack(ts, dim)


def _results(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def check(name, i, s, bdim):
    """One sample: BATCH draws stacked along `bdim`; False when the sample does not apply."""
    draws = [realize((s.args, s.kwargs), np.random.default_rng(
        zlib.crc32(f"{name}/{i}/{b}".encode()))) for b in range(BATCH)]
    leaves = [arrays_in(d) for d in draws]
    if not leaves[0]:
        return False
    # the loop: ember on each draw (the reference for vmap's result)
    per = []
    for d in draws:
        kind, r = outcome(lambda d=d: run(name, s, d, ember))
        if kind == "raise" or not all(isinstance(x, ember.Tensor) for x in _results(r)):
            return False
        per.append(_results(r))
    if any(len(p) != len(per[0]) or any(tuple(a.shape) != tuple(b.shape)
                                        for a, b in zip(p, per[0])) for p in per):
        return False      # samples of one description whose results differ in shape
    want = [ember.stack([p[k] for p in per]) for k in range(len(per[0]))]

    def stacked(lib):
        return [_stack(lib, [make_tensor(leaves[b][k], lib) for b in range(BATCH)],
                       bdim if bdim >= 0 else len(leaves[0][k].shape))
                for k in range(len(leaves[0]))]

    def f_ember(*ts):
        return run(name, s, draws[0], ember, tensors=list(ts))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _results(vmap(f_ember, in_dims=bdim)(*stacked(ember)))
    slow = [w for w in caught if "performance drop" in str(w.message)]
    where = f"{name} sample {i} {s} (batch dim {bdim})"
    if name not in DECLINES:
        assert not slow, f"{where}: fell back to the loop: {slow[0].message}"
    assert len(got) == len(want), where
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"{where}: result {k} dtype {g.dtype} != {w.dtype}"
        assert tuple(g.shape) == tuple(w.shape), \
            f"{where}: result {k} shape {tuple(g.shape)} != {tuple(w.shape)}"
        if s.values:
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-5, atol=1e-5, err_msg=where)
    # torch.func.vmap on the same batch, where torch batches the call
    kind, tr = outcome(lambda: torch.func.vmap(
        lambda *ts: run(name, s, draws[0], torch, tensors=list(ts)), in_dims=bdim)(
            *stacked(torch)))
    if kind == "ok" and s.values:
        for k, (g, t) in enumerate(zip(got, _results(tr))):
            if isinstance(t, torch.Tensor) and tuple(t.shape) == tuple(g.shape):
                np.testing.assert_allclose(
                    _np(to_torch(g)), _np(t), rtol=1e-4, atol=1e-5,
                    err_msg=f"{where}: against torch.func.vmap, result {k}")
    return True


@pytest.mark.parametrize("name", NAMES)
def test_vmap_equals_loop(name):
    ran = 0
    for i, s in enumerate(samples_for(name)[:SAMPLES_PER_OP + 2]):
        if ran >= SAMPLES_PER_OP:
            break
        if check(name, i, s, 0):
            check(name, i, s, -1)
            ran += 1
    if not ran:
        pytest.skip(f"{name}: no sample of one result shape that ember runs")
