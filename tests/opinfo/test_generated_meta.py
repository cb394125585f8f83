"""Meta tensors generated from the op registry: for every registered op with samples
(samples.py), the op on meta inputs (the same shapes, strides and dtypes, made by the same
view ops) gives results with the shapes, dtypes and strides of the op on cpu inputs, on the
meta device, with nothing computed; where the cpu op raises, the meta op raises the same
exception type.

NO_RULE lists the ops that have no meta rule, with the reason: on meta they raise torch's
NotImplementedError. The test checks the list is exact (an op listed here that works on
meta fails the test), so it only changes on purpose.
"""
import zlib

import numpy as np
import pytest

import ember
from ember.ops.registry import OPS, CREATION

try:
    from ._make import L, arrays_in, make_tensor, realize, apply_layout
    from .samples import samples_for
    from .test_generated import run, outcome
except ImportError:  # run from this folder
    from _make import L, arrays_in, make_tensor, realize, apply_layout
    from samples import samples_for
    from test_generated import run, outcome

SAMPLES_PER_OP = 4

DATA_DEPENDENT = "the result's shape depends on the values (torch has no meta kernel either)"
VALUE_RESULT = "the result is a Python value read from the data"
READS_VALUES = "reads its inputs' values in Python (numpy()): TypeError on meta"
NO_TORCH_META = "torch's meta device has no kernel for it either (NotImplementedError)"
NO_RULE = {
    # data-dependent output shapes: torch refuses these on meta too
    **{n: DATA_DEPENDENT for n in ("nonzero", "argwhere", "masked_select", "unique",
                                   "unique_consecutive", "bincount")},
    **{n: VALUE_RESULT for n in ("equal", "allclose")},
    **{n: NO_TORCH_META for n in ("histogram", "histogramdd")},
    # (lstsq's residuals are empty unless every matrix has full rank: a data-dependent shape)
    "linalg_lstsq": NO_TORCH_META,
    **{n: READS_VALUES for n in ("ctc_loss", "max_unpool1d", "max_unpool2d",
                                 "multilabel_margin_loss")},
}

# ops whose meta result differs from the cpu one today (strict xfails: a fix fails them,
# so the table only shrinks), and why
KNOWN = {
}

# samples where meta must refuse though cpu runs (torch's meta refuses them too): the
# exception type, and why
MUST_REFUSE = {
    ("to", 2): (NotImplementedError, "x.to('cpu') of a meta tensor copies data off meta"),
    **{("repeat_interleave", i): (RuntimeError, "meta repeats (counts) without output_size: "
                                  "the result's length is their sum")
       for i in (2, 3)},
}

# ops this test leaves out, and why
SKIP = {
    "manual_seed": "no tensor input", "seed": "no tensor input",
    "initial_seed": "no tensor input", "get_rng_state": "no tensor input",
    "set_rng_state": "writes the generator from a tensor's values",
    "from_numpy": "makes a cpu tensor from a NumPy array (no tensor input)",
    "from_dlpack": "shares a cpu tensor's memory", "tensor": "copies data",
    "as_tensor": "copies data", "new_tensor": "copies data",
}


def _names():
    out = []
    for n in sorted(OPS):
        if n in SKIP or not samples_for(n):
            continue
        if not any(True for _ in _samples(n)):
            continue        # a factory without tensor inputs: tests/core/test_meta.py
        out.append(n)
    return out


def meta_tensor(arr):
    """The sample's tensor on meta: a meta base viewed by the same layout ops as on cpu."""
    dtype = ember.from_numpy(np.empty(0, arr.base.dtype)).dtype
    base = ember.empty(arr.base.shape, dtype=dtype, device="meta")
    x = apply_layout(base, arr.shape, arr.layout)
    if arr.grad and arr.base.dtype.kind == "f":
        x = x.detach().requires_grad_(True)
    return x


def _tensors(r):
    if isinstance(r, ember.Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [t for x in r for t in _tensors(x)]
    return []


def check_same_metadata(m, c, where="result"):
    if isinstance(c, ember.Tensor):
        assert isinstance(m, ember.Tensor), f"{where}: {type(m)}"
        assert m.is_meta, f"{where}: the result is on {m.device}, not meta"
        assert m.dtype is c.dtype, f"{where}: dtype {m.dtype} != {c.dtype}"
        assert tuple(m.shape) == tuple(c.shape), f"{where}: shape {m.shape} != {c.shape}"
        # strides of size-1 dims are arbitrary (torch's contiguity ignores them; NumPy's
        # kernels leave various values there), so only the others are compared
        if c.numel() > 1:
            ms = [s for s, n in zip(m.stride(), m.shape) if n > 1]
            cs = [s for s, n in zip(c.stride(), c.shape) if n > 1]
            assert ms == cs, f"{where}: strides {m.stride()} != {c.stride()}"
    elif isinstance(c, (tuple, list)) and not isinstance(c, ember.Size):
        assert isinstance(m, (tuple, list)) and len(m) == len(c), f"{where}: {m!r} vs {c!r}"
        for k, (x, y) in enumerate(zip(m, c)):
            check_same_metadata(x, y, f"{where}[{k}]")
    else:
        assert m == c or (m != m and c != c), f"{where}: {m!r} != {c!r}"


def _samples(name):
    for i, sample in enumerate(samples_for(name)[:SAMPLES_PER_OP]):
        rng = np.random.default_rng(zlib.crc32(f"{name}/{i}".encode()))
        arrs = realize((sample.args, sample.kwargs), rng)
        if not arrays_in(arrs) or _makes_tensors(arrs):
            continue
        yield i, sample, arrs


def _makes_tensors(obj):
    """Whether the sample builds cpu tensors of its own (an L argument): those would meet
    the meta inputs as a device mismatch."""
    if isinstance(obj, L):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_makes_tensors(x) for x in obj)
    if isinstance(obj, dict):
        return any(_makes_tensors(x) for x in obj.values())
    return False


NAMES = _names()
# what an op without a rule raises on meta: NotImplementedError (torch's type; reading a
# value raises torch's RuntimeError of item()), or the
# TypeError of numpy() where the op reads its inputs' values in Python
NOT_ON_META = (RuntimeError, TypeError)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n])) if n in KNOWN else n
    for n in NAMES if n not in NO_RULE])
def test_meta_matches_cpu(name):
    checked = 0
    for i, sample, arrs in _samples(name):
        st_cpu, cpu = outcome(lambda: run(name, sample, arrs, ember))
        metas = [meta_tensor(a) for a in arrays_in(arrs)]
        st_meta, meta = outcome(lambda: run(name, sample, arrs, ember, tensors=metas))
        if (name, i) in MUST_REFUSE:
            assert st_meta == "raise" and isinstance(meta, MUST_REFUSE[name, i][0]), meta
            continue
        if st_cpu == "raise":
            assert st_meta == "raise", f"sample {i}: cpu raised {cpu!r}, meta gave {meta!r}"
            assert isinstance(meta, type(cpu)) or isinstance(cpu, type(meta)), \
                f"sample {i}: cpu raised {cpu!r}, meta raised {meta!r}"
            continue
        assert st_meta == "ok", f"sample {i}: meta raised {meta!r}"
        check_same_metadata(meta, cpu, f"sample {i}")
        checked += 1
    assert checked or any(True for _ in _samples(name)), name


@pytest.mark.parametrize("name", sorted(n for n in NO_RULE if n in NAMES))
def test_ops_without_meta_rule_refuse(name):
    refused = 0
    for i, sample, arrs in _samples(name):
        st_cpu, cpu = outcome(lambda: run(name, sample, arrs, ember))
        metas = [meta_tensor(a) for a in arrays_in(arrs)]
        st_meta, meta = outcome(lambda: run(name, sample, arrs, ember, tensors=metas))
        if st_cpu != "ok":
            continue
        if st_meta == "ok":
            # only a result metadata decides (equal() of two shapes) may come back
            assert not _tensors(cpu) and meta == cpu, \
                f"sample {i}: {name} has a meta result now: drop it from NO_RULE ({meta!r})"
            continue
        assert isinstance(meta, NOT_ON_META), f"sample {i}: {meta!r}"
        refused += 1
    assert refused, f"{name}: no sample refuses on meta"


def test_tables_list_registered_ops():
    assert set(NO_RULE) <= set(OPS), set(NO_RULE) - set(OPS)
    assert set(KNOWN) <= set(NAMES) and not set(KNOWN) & set(NO_RULE)
    assert {n for n, _ in MUST_REFUSE} <= set(NAMES) - set(NO_RULE)
