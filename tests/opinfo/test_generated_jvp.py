"""Forward-mode AD generated from the op registry: for every registered op with samples
(samples.py), in float64, the tangent ember's forward AD gives each floating result equals
torch.func.jvp's on the same inputs and tangents. Where torch's op has no forward-mode
formula, the reference is torch.autograd.functional.jvp (reverse mode, the double-backward
trick), so the check is still J t against torch's own derivative.

An op whose results have no floating point tangent in torch (comparisons, argmax) must
give none in ember either. KNOWN lists the ops ember cannot differentiate forward today, as
strict xfails, so the list only shrinks.
"""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import ember
import ember.autograd.forward_ad as efw
from ember.ops.registry import OPS, CREATION, RANDOM

try:
    from ._make import arrays_in, make_tensor
    from .samples import samples_for
    from .test_generated import realized, run, outcome, to_torch
except ImportError:  # run from this folder
    from _make import arrays_in, make_tensor
    from samples import samples_for
    from test_generated import realized, run, outcome, to_torch

SAMPLES_PER_OP = 2      # keeps the whole file to a few seconds

# op -> why ember's forward AD does not match torch today (strict xfail)
KNOWN = {
    "histc": "ember's histc has no autograd node, so forward AD refuses it "
             "(NotImplementedError); torch gives the result no tangent",
    "quantile": "ember's quantile is not differentiable in q (a tensor q is taken as a "
                "constant, in reverse mode too); torch's is",
    "max_pool3d": "its window selection (F_max_pool_select) has no forward rule: "
                  "NotImplementedError",
    **{n: "torch's forward-mode formula disagrees with its own backward here (it assumes a "
          "symmetric or triangular tangent); ember's tangent is J t of the backward"
       for n in ("cholesky_inverse", "linalg_cholesky_ex", "triangular_solve")},
    "binary_cross_entropy": "'Setting a forward grad that itself has a forward gradient' "
                            "inside its decomposition -- autograd/forward_rules.py",
}

NAMES = sorted(n for n in OPS if samples_for(n) and OPS[n].kind not in (CREATION, RANDOM))


def _outputs(r):
    r = r if isinstance(r, (tuple, list)) else (r,)
    return [o for o in r if hasattr(o, "dtype") and hasattr(o, "shape")]


def _torch_jvp(name, s, arrs, leaves, diff, tangents):
    """(torch's tangents of the floating results, whether they came from finite
    differences, whether torch's forward AD refused the op): by forward AD, else by reverse
    mode (the double-backward trick), else (torch has no derivative at all: floor_divide,
    bincount) by central differences."""
    def f(*xs):
        it = iter(xs)
        ins = [next(it) if i in diff else make_tensor(a, torch) for i, a in enumerate(leaves)]
        outs = _outputs(run(name, s, arrs, torch, tensors=ins))
        return tuple(o for o in outs if o.dtype.is_floating_point)
    prim = tuple(make_tensor(leaves[i], torch) for i in diff)
    kind, res = outcome(lambda: torch.func.jvp(f, prim, tangents))
    if kind == "ok":
        return res[1], False, False
    if not isinstance(res, NotImplementedError):
        raise res
    kind, res = outcome(lambda: torch.autograd.functional.jvp(f, prim, tangents)[1])
    if kind == "ok":
        return res, False, True
    # central differences in float64, with torch
    h = 1e-6
    plus = f(*(p + h * t for p, t in zip(prim, tangents)))
    minus = f(*(p - h * t for p, t in zip(prim, tangents)))
    return tuple((a - b) / (2 * h) for a, b in zip(plus, minus)), True, True


def _ember_jvp(name, s, arrs, leaves, diff, tangents):
    with efw.dual_level():
        ins = [efw.make_dual(make_tensor(a, ember), ember.from_numpy(tangents[diff.index(i)]
                                                                     .numpy().copy()))
               if i in diff else make_tensor(a, ember) for i, a in enumerate(leaves)]
        outs = _outputs(run(name, s, arrs, ember, tensors=ins))
        return [efw.unpack_dual(o).tangent for o in outs if o.dtype.is_floating_point], \
            [efw.unpack_dual(o).tangent for o in outs if not o.dtype.is_floating_point]


def check(name):
    checked = 0
    for i, s in enumerate(samples_for(name)):
        if not s.grad or not s.values or s.post is not None:
            continue     # results defined up to sign (svd): torch's signs may differ
        arrs = realized(name, i, s, float64=True, leaf_layouts=False)
        leaves = arrays_in(arrs)
        diff = [k for k, a in enumerate(leaves) if a.grad and a.base.dtype.kind == "f"]
        if not diff:
            continue
        tk, tr = outcome(lambda: run(name, s, arrs, torch,
                                     tensors=[make_tensor(a, torch) for a in leaves]))
        if tk == "raise":
            continue           # torch rejects the sample: test_generated checks the error
        rng = np.random.default_rng(i)
        tangents = tuple(torch.from_numpy(rng.standard_normal(leaves[k].shape))
                         for k in diff)
        where = f"{name} sample {i}: {s}"
        if not any(o.dtype.is_floating_point for o in _outputs(tr)):
            _, rest = _ember_jvp(name, s, arrs, leaves, diff, tangents)
            assert all(t is None for t in rest), f"{where}: a non-floating result has a tangent"
            checked += 1
            continue
        expected, by_differences, torch_refuses = _torch_jvp(name, s, arrs, leaves, diff,
                                                             tangents)
        kind, res = outcome(lambda: _ember_jvp(name, s, arrs, leaves, diff, tangents))
        if torch_refuses and kind == "raise" and isinstance(res, NotImplementedError):
            checked += 1     # both refuse forward AD (ctc_loss), or neither differentiates
            continue         # the op at all (floor_divide, bincount)
        if kind == "raise":
            raise res
        got, rest = res
        tol = (1e-4, 1e-5) if by_differences else (1e-6, 1e-8)
        assert all(t is None for t in rest), f"{where}: a non-floating result has a tangent"
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected)):
            if g is None:
                assert not e.any(), f"{where}: result {k} has no tangent, torch's is not zero"
                continue
            assert tuple(g.shape) == tuple(e.shape), f"{where}: tangent {k} shape"
            torch.testing.assert_close(to_torch(g), e.detach(), rtol=tol[0], atol=tol[1],
                                       equal_nan=True, msg=lambda m: f"{where}: tangent {k}: {m}")
        checked += 1
        if checked == SAMPLES_PER_OP:
            break
    return checked


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n])) if n in KNOWN else n
    for n in NAMES])
def test_jvp_matches_torch(name):
    check(name)
