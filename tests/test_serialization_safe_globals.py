"""torch.serialization's allowlist for weights_only loads (add_safe_globals, safe_globals,
get/clear_safe_globals): a whole pickled Module loads once its classes are allowed, and is
refused before (pytorch/examples' word_language_model saves and loads its model this way).
Each behaviour is checked on torch and on ember."""
import pickle

import numpy as np
import pytest
import torch

import ember


class _Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)


class _TinyE(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 2)


CASES = [(torch, _Tiny), (ember, _TinyE)]


@pytest.mark.parametrize("lib,cls", CASES, ids=["torch", "ember"])
def test_a_whole_module_loads_inside_safe_globals_only(lib, cls, tmp_path):
    m = cls()
    path = tmp_path / "m.pt"
    lib.save(m, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        lib.load(path)
    allowed = [cls, lib.nn.modules.linear.Linear]
    with lib.serialization.safe_globals(allowed):
        got = lib.load(path)
    assert type(got) is cls and type(got.lin) is lib.nn.modules.linear.Linear
    np.testing.assert_array_equal(got.lin.weight.detach().numpy(), m.lin.weight.detach().numpy())
    with pytest.raises(pickle.UnpicklingError):       # the block's allowlist is gone again
        lib.load(path)


@pytest.mark.parametrize("lib,cls", CASES, ids=["torch", "ember"])
def test_add_get_and_clear_safe_globals(lib, cls, tmp_path):
    s = lib.serialization
    before = s.get_safe_globals()
    try:
        path = tmp_path / "m.pt"
        lib.save(cls(), path)
        s.add_safe_globals([cls, (lib.nn.modules.linear.Linear,
                                  f"{lib.__name__}.nn.modules.linear.Linear")])
        assert cls in s.get_safe_globals()
        assert type(lib.load(path)) is cls
        with pytest.raises(TypeError):
            s.add_safe_globals(cls)          # a list is wanted, as in torch
    finally:
        s.clear_safe_globals()
        s.add_safe_globals(before)
    now = s.get_safe_globals()
    assert cls not in now and all(b in now for b in before)   # (torch may add its own)


def test_module_paths_torch_code_names():
    for lib in (torch, ember):
        mods = lib.nn.modules
        assert mods.activation.MultiheadAttention is lib.nn.MultiheadAttention
        assert issubclass(mods.linear.NonDynamicallyQuantizableLinear, lib.nn.Linear)
        assert type(lib.nn.MultiheadAttention(8, 2).out_proj) is \
            mods.linear.NonDynamicallyQuantizableLinear
