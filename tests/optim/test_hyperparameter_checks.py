"""Optimizer constructors check their hyperparameters as torch's do, NaN included: torch writes
its checks as ``not 0.0 <= lr``, which a NaN fails (SGD's ``lr < 0.0`` lets it through)."""
import math

import pytest
import torch

import ember

NAN = math.nan
CASES = [
    ("SGD", "lr"), ("SGD", "momentum"), ("SGD", "weight_decay"),
    ("Adam", "lr"), ("Adam", "eps"), ("Adam", "weight_decay"), ("Adam", "betas"),
    ("AdamW", "lr"), ("AdamW", "eps"), ("AdamW", "betas"),
    ("RMSprop", "lr"), ("RMSprop", "eps"), ("RMSprop", "momentum"), ("RMSprop", "alpha"),
    ("RMSprop", "weight_decay"),
    ("Adagrad", "lr"), ("Adagrad", "lr_decay"), ("Adagrad", "initial_accumulator_value"),
    ("Adagrad", "eps"),
    ("Adadelta", "lr"), ("Adadelta", "rho"), ("Adadelta", "eps"),
    ("Adamax", "lr"), ("Adamax", "betas"), ("NAdam", "lr"), ("NAdam", "momentum_decay"),
    ("RAdam", "lr"), ("RAdam", "eps"), ("LBFGS", "lr"),
]


def _make(lib, cls, key, value):
    params = [lib.zeros(2, requires_grad=True)]
    kwargs = {"lr": 0.1} if key != "lr" else {}
    kwargs[key] = (value, 0.9) if key == "betas" else value
    try:
        getattr(lib.optim, cls)(params, **kwargs)
        return None
    except ValueError as e:
        return str(e)


@pytest.mark.parametrize("cls,key", CASES)
@pytest.mark.parametrize("value", [NAN, -1.0])
def test_bad_hyperparameter_like_torch(cls, key, value):
    expected = _make(torch, cls, key, value)
    assert _make(ember, cls, key, value) == expected
