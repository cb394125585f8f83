"""The differential fuzzer at its CI seed (tests/fuzz/fuzzer.py): every case that is not an
agreement with torch must be listed in known.py, and every listed divergence must still
happen, so the list can only shrink. A crash (the child process died or hung) always fails.

The full run (all 40,000-odd cases, or another seed) is `make fuzz` (FUZZ_SEED=...).
"""
import pytest

from fuzzer import run_cases, table  # tests/fuzz is on sys.path (conftest.py)
from known import KNOWN

CI_SEED = 0
CI_SHARE = 8      # percent of all cases the CI run takes (stable as ops are added)


@pytest.fixture(scope="module")
def records():
    return run_cases(CI_SEED, share=CI_SHARE)


def _key(r):
    return (r["op"], r["mutation"], r["outcome"])


def test_the_fuzzer_ran_enough_cases(records):
    assert len(records) > 1000, table(records)
    assert table(records)["agree"] > len(records) // 2


def test_no_crash(records):
    crashes = [f"{r['op']}[{r['sample']}] {r['mutation']}: {r['detail']}" for r in records
               if r["outcome"] == "crash"]
    assert not crashes, "the interpreter died or hung on:\n" + "\n".join(crashes)


def test_every_divergence_is_known(records):
    new = sorted({f"{_key(r)}: {r['detail']}" for r in records
                  if r["outcome"] not in ("agree", "crash") and _key(r) not in KNOWN})
    assert not new, (f"{len(new)} new divergences from torch (fix them, or list them in "
                     f"tests/fuzz/known.py with the reason):\n" + "\n".join(new[:40]))


def test_known_divergences_still_happen(records):
    seen = {_key(r) for r in records}
    stale = sorted(k for k in KNOWN if k not in seen)
    assert not stale, ("fixed (remove these entries from tests/fuzz/known.py):\n"
                       + "\n".join(map(str, stale[:40])))



def test_only_what_torch_defines_is_compared():
    """Where the input has equal elements, which index topk reports is the implementation's
    choice: only the values are compared then; a factorisation of NaN/inf input is compared on
    shapes and dtypes only."""
    import torch
    from fuzzer import _defined_part
    tied, distinct = torch.tensor([1.0, 1.0, 0.0]), torch.tensor([2.0, 1.0, 0.0])
    part, values = _defined_part(torch.topk(tied, 1), ((tied,), {}), "int64", True)
    assert part is not None and not isinstance(part, tuple) and values
    r = torch.topk(distinct, 1)
    assert _defined_part(r, ((distinct,), {}), "int64", True) == (r, True)
    qr = torch.linalg.qr(torch.eye(2))
    assert _defined_part(qr, ((torch.eye(2),), {}), "specials", True)[1] is False
    assert _defined_part(qr, ((torch.eye(2),), {}), "int64", True)[1] is True
