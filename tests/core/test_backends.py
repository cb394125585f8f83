"""ember.backends against torch.backends: defaults, the bool checks of the cudnn switches,
cuda.matmul.allow_tf32 tied to the float32 matmul precision, and the queries (mps, cpu
capability, cudnn availability)."""
import warnings

import pytest
import torch

import ember


@pytest.fixture(autouse=True)
def _restore():
    saved = [(L, L.get_float32_matmul_precision(),
              {a: getattr(L.backends.cudnn, a) for a in FLAGS}) for L in (ember, torch)]
    yield
    for L, prec, flags in saved:
        L.set_float32_matmul_precision(prec)
        for a, v in flags.items():
            setattr(L.backends.cudnn, a, v)


FLAGS = ("deterministic", "benchmark", "enabled", "allow_tf32")


def outcome(f):
    try:
        return "ok", f()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e).__name__, str(e)


@pytest.mark.parametrize("flag", FLAGS)
def test_cudnn_flags(flag):
    assert getattr(ember.backends.cudnn, flag) == getattr(torch.backends.cudnn, flag)
    for value in (True, False):
        for L in (ember, torch):
            setattr(L.backends.cudnn, flag, value)
        assert getattr(ember.backends.cudnn, flag) is getattr(torch.backends.cudnn, flag)
    for bad in ("yes", 1, None):
        assert outcome(lambda: setattr(ember.backends.cudnn, flag, bad)) == \
            outcome(lambda: setattr(torch.backends.cudnn, flag, bad))


def test_cudnn_flags_context_and_queries():
    for L in (ember, torch):
        with L.backends.cudnn.flags(enabled=False, benchmark=True):
            assert L.backends.cudnn.enabled is False and L.backends.cudnn.benchmark is True
        assert L.backends.cudnn.enabled is True and L.backends.cudnn.benchmark is False
    assert ember.backends.cudnn.is_available() == torch.backends.cudnn.is_available()
    assert ember.backends.cudnn.version() == torch.backends.cudnn.version()


@pytest.mark.parametrize("precision", ["highest", "high", "medium", "low", 3])
def test_float32_matmul_precision(precision):
    results = []
    for L in (ember, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = outcome(lambda: L.set_float32_matmul_precision(precision))
        results.append((r, L.get_float32_matmul_precision(),
                        L.backends.cuda.matmul.allow_tf32, [type(x.message) for x in w]))
    assert results[0] == results[1]


def test_matmul_allow_tf32_moves_the_precision():
    for value in (True, False):
        for L in (ember, torch):
            L.backends.cuda.matmul.allow_tf32 = value
        assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    for name in ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(ember.backends.cuda.matmul, name) == \
            getattr(torch.backends.cuda.matmul, name)
    for L in (ember, torch):
        with pytest.raises(AttributeError, match="Unknown attribute foo"):
            L.backends.cuda.matmul.foo
    assert outcome(lambda: setattr(ember.backends.cuda.matmul, "allow_tf32", "x")) == \
        outcome(lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", "x"))


def test_queries():
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert ember.backends.mps.is_built() is False
    assert ember.backends.cuda.is_built() == torch.backends.cuda.is_built()
    # torch's cpu wheel reads the same cpuid flags
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    import ember.backends.cudnn as cudnn_module      # importable as a module, like torch's
    assert cudnn_module is ember.backends.cudnn
