"""Shared by the op-library tests: the same data as ember and torch tensors in a chosen
layout, and a check that ember raises like torch does."""
import numpy as np
import pytest
import torch

import ember


def layout(arr, kind):
    """(base array, view function) realising `kind` ('C', 'T' transposed, 'step' sliced with
    a step) for an array of arr's shape."""
    if kind == "T" and arr.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(arr, -1, -2)), lambda t: t.transpose(-1, -2)
    if kind == "step" and arr.ndim >= 1:
        return np.repeat(arr, 2, axis=-1), lambda t: t[..., ::2]
    return arr, lambda t: t


def both(a, kind="C", grad=True):
    """The same array as an ember and a torch tensor (leaf, then a strided view of it)."""
    base, fn = layout(np.asarray(a), kind)
    rg = grad and base.dtype.kind == "f"
    e = ember.tensor(base.copy(), requires_grad=rg)
    t = torch.tensor(base.copy(), requires_grad=rg)
    return (e, t), (fn(e), fn(t))


def same_error(fe, ft):
    """Both raise; ember's exception has torch's type family and the gist of its message."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    t_exc, e_exc = te.value, ee.value
    for base in (IndexError, TypeError, ValueError, RuntimeError):
        if isinstance(t_exc, base):
            assert isinstance(e_exc, base), (type(e_exc), type(t_exc), str(e_exc))
            break
    gist = str(t_exc).split("\n")[0][:40].replace("torch.", "")
    assert gist in str(e_exc).replace("ember.", ""), (str(e_exc), str(t_exc))
