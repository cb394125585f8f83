"""torch.optim.lr_scheduler's module-level names (typing helpers, functools/weakref helpers,
``inf``, ``Tensor``) checked against real torch: the same objects, or objects that behave
the same, and a scheduler that still runs with them."""
import __future__
import math

import pytest
import torch

import ember

T, E = torch.optim.lr_scheduler, ember.optim.lr_scheduler


@pytest.mark.parametrize("name", ["Any", "Literal", "Self", "SupportsFloat", "TypedDict", "cast",
                                  "partial", "ref", "wraps"])
def test_same_objects_as_torch(name):
    assert getattr(E, name) is getattr(T, name)


def test_constants():
    assert E.TYPE_CHECKING is T.TYPE_CHECKING is False
    assert E.inf == T.inf and math.isinf(E.inf) and E.inf > 0
    assert E.annotations is T.annotations is __future__.annotations


def test_tensor_is_the_librarys_tensor():
    assert E.Tensor is ember.Tensor and T.Tensor is torch.Tensor
    assert isinstance(ember.ones(1), E.Tensor) == isinstance(torch.ones(1), T.Tensor)


def test_override_marks_and_returns():
    got = []
    for mod in (T, E):
        class Base:
            def f(self):
                return 1

        class Child(Base):
            @mod.override
            def f(self):
                return 2

        got.append((Child().f(), getattr(Child.f, "__override__", None),
                    mod.override(len) is len))
    assert got[0] == got[1]


def test_supportsfloat_and_cast_in_use():
    """The protocol and cast behave the same on scheduler inputs (a tensor lr, a float)."""
    for lib, mod in ((torch, T), (ember, E)):
        assert isinstance(lib.tensor(0.5), mod.SupportsFloat)
        assert isinstance(0.5, mod.SupportsFloat) and not isinstance("0.5", mod.SupportsFloat)
        assert mod.cast(float, 3) == 3


def test_plateau_uses_inf():
    """ReduceLROnPlateau starts from an infinitely bad best (the module's ``inf``)."""
    vals = []
    for lib, mod in ((torch, T), (ember, E)):
        p = lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.SGD([p], lr=1.0)
        s = mod.ReduceLROnPlateau(opt, mode="max", patience=0, factor=0.5)
        assert s.best == -mod.inf
        for m in [1.0, 0.5, 0.5, 2.0, 1.0]:
            s.step(m)
        vals.append((s.best, s.num_bad_epochs, opt.param_groups[0]["lr"]))
    assert vals[0] == vals[1]
