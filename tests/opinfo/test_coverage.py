"""The generated tests cover the whole registry: every public op (ember.<name> or
Tensor.<name>) has samples, every private registry entry is either sampled or reached through
a public op's samples (checked by recording the ops those samples dispatch), and no sample
table names an op that is not registered (PENDING lists the ops about to be)."""
import numpy as np

import ember
from ember.autograd.grad_mode import state
from ember.ops.registry import OPS

try:
    from . import test_generated as generated
    from ._make import REFERENCE, arrays_in, is_public, make_tensor
    from .samples import COVERED_VIA, PENDING, sampler_names, samples_for
except ImportError:  # run from this folder (pytest's rootdir-less import mode)
    import test_generated as generated
    from _make import REFERENCE, arrays_in, is_public, make_tensor
    from samples import COVERED_VIA, PENDING, sampler_names, samples_for


def test_every_public_op_has_samples():
    missing = sorted(n for n in OPS if is_public(n) and not samples_for(n))
    assert not missing, f"registered public ops without samples (add them to samples.py): {missing}"


def test_every_private_op_is_sampled_or_covered_via_a_public_op():
    missing = sorted(n for n in OPS if not is_public(n) and not samples_for(n)
                     and n not in COVERED_VIA)
    assert not missing, f"private ops neither sampled nor listed in COVERED_VIA: {missing}"


class _Recorder:
    """A dispatch mode that notes every op it sees, nested calls included: it stays active
    while an op runs (call_mode pops it), except when the op's `fn` is the op's own entry
    point calling back into the mode with the same arguments (generated pointwise ops)."""

    def __init__(self):
        self.seen = set()
        self.active = []

    def call(self, op, fn, args, kwargs):
        key = (op if isinstance(op, str) else op.name, tuple(map(id, args)))
        if self.active and self.active[-1] == key:
            return fn(*args, **kwargs)       # the re-entry: run the op itself
        self.seen.add(key[0])
        saved = state.modes
        state.modes = saved + (self,)
        self.active.append(key)
        try:
            return fn(*args, **kwargs)
        finally:
            self.active.pop()
            state.modes = saved


def _ops_reached(name):
    """The op names that running (and differentiating) `name`'s samples dispatches."""
    rec = _Recorder()
    saved = state.modes
    state.modes = saved + (rec,)
    try:
        for i, s in enumerate(samples_for(name)):
            arrs = generated.realized(name, i, s)
            ins = [make_tensor(a, ember, requires_grad=True) for a in arrays_in(arrs)]
            try:
                out = generated.run(name, s, arrs, ember, tensors=ins)
            except Exception:  # noqa: BLE001 - samples that torch rejects raise here too
                continue
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for o in outs:
                if isinstance(o, ember.Tensor) and o.requires_grad:
                    (o.abs() if o.is_complex() else o).sum().backward()   # a real loss
    finally:
        state.modes = saved
    return rec.seen


def test_covered_via_entries_are_reached():
    """A private op listed in COVERED_VIA runs when its public op's samples run (or is the
    public op's own function registered under a second record, like a method form)."""
    not_reached = []
    for private, public in sorted(COVERED_VIA.items()):
        assert public in OPS and samples_for(public), f"{private}: {public} has no samples"
        if OPS[private].fn is OPS[public].fn:
            continue
        if private not in _ops_reached(public):
            not_reached.append(f"{private} (via {public})")
    assert not not_reached, f"COVERED_VIA ops their public op's samples never call: {not_reached}"


def test_no_stale_sample_entries():
    """Every op a sample table names is registered, or PENDING (about to be)."""
    stale = sorted(sampler_names() - set(OPS) - PENDING)
    assert not stale, f"samples for ops that are not registered (remove or add to PENDING): {stale}"


def test_no_stale_test_tables():
    names = ({k[1] for k in generated.KNOWN_FAILURES} | set(generated.COMPILE_SKIPS)
             | set(REFERENCE) | generated.STRIDED)
    stale = sorted(names - set(OPS) - PENDING)
    assert not stale, f"test_generated.py tables name unregistered ops: {stale}"
    for k in generated.KNOWN_FAILURES:
        assert k[0] in ("values", "grad", "compile", "compile_grad"), k
        if len(k) == 3:
            assert k[2] < len(samples_for(k[1])), f"{k}: no such sample"


def test_samples_are_deterministic():
    """The same sample draws the same values each time (seeded by op name and index)."""
    s = samples_for("add")[1]
    a = [x.base for x in arrays_in(generated.realized("add", 1, s))]
    b = [x.base for x in arrays_in(generated.realized("add", 1, s))]
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and a
