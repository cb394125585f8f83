"""Anomaly detection against torch: a backward that produces NaN raises the same RuntimeError,
and the forward traceback of the failing node is reported (as a UserWarning, like torch)."""
import math
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])


def nan_sqrt(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt() * 0          # FORWARD-LINE-SQRT
    y.sum().backward()


def nan_div(L):
    x = L.tensor([0.0, 2.0], requires_grad=True)
    z = x / x                 # FORWARD-LINE-DIV
    z.sum().backward()


def run_in_anomaly(L, fn, style):
    """Run fn under anomaly mode; return (error message, the warnings' messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if style == "context":
                with L.autograd.detect_anomaly():
                    fn(L)
            else:
                with L.autograd.set_detect_anomaly(True):
                    fn(L)
        except RuntimeError as e:
            return str(e), [str(w.message) for w in caught]
    raise AssertionError("no error in anomaly mode")


@pytest.mark.parametrize("style", ["context", "set"])
@pytest.mark.parametrize("fn,node,line", [(nan_sqrt, "SqrtBackward0", "FORWARD-LINE-SQRT"),
                                          (nan_div, "DivBackward0", "FORWARD-LINE-DIV")])
def test_nan_in_backward_raises_like_torch(fn, node, line, style):
    (t_err, t_warn), (e_err, e_warn) = (run_in_anomaly(L, fn, style) for L in (torch, ember))
    assert e_err == t_err
    assert f"Function '{node}' returned nan values" in e_err
    for msgs in (t_warn, e_warn):
        trace = [m for m in msgs if m.startswith(f"Error detected in {node}. Traceback of "
                                                 "forward call that caused the error:")]
        assert len(trace) == 1 and line in trace[0] and "test_anomaly.py" in trace[0]
    # ember's traceback shows the user's frames only, the innermost being the forward line
    assert "ember/" not in e_warn[-1].replace("tests/autograd", "")
    assert e_warn[-1].rstrip().splitlines()[-1].strip().endswith("# " + line)


@LIBS
def test_detect_anomaly_warns_on_entry(L):
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with L.autograd.detect_anomaly():
            pass


def nan_grads(L, check_nan):
    x = L.tensor([0.0, 4.0], requires_grad=True)
    with L.autograd.set_detect_anomaly(True, check_nan=check_nan):
        (x.sqrt() * 0).sum().backward()
    return np.asarray(x.grad.tolist())


@pytest.mark.parametrize("check_nan", [False], ids=["check_nan=False"])
def test_nan_allowed_without_check_nan(check_nan):
    t, e = nan_grads(torch, check_nan), nan_grads(ember, check_nan)
    np.testing.assert_array_equal(e, t)
    assert math.isnan(e[0])


def test_anomaly_off_gives_nan_without_error():
    got = []
    for L in (torch, ember):
        x = L.tensor([0.0, 4.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()
        got.append(np.asarray(x.grad.tolist()))
    np.testing.assert_array_equal(got[1], got[0])


@LIBS
def test_flags_and_restoring(L):
    is_on = L.is_anomaly_enabled if L is torch else L.autograd.is_anomaly_enabled
    assert not is_on()
    L.autograd.set_detect_anomaly(True)
    assert is_on()
    L.autograd.set_detect_anomaly(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with L.autograd.detect_anomaly():
            assert is_on()
    assert not is_on()


def failing_function(L):
    class Boom(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = L.ones(2, requires_grad=True)
    Boom.apply(x).sum().backward()   # FORWARD-LINE-BOOM


def test_error_inside_backward_reports_forward_trace():
    for L in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="boom in backward"):
                with L.autograd.detect_anomaly():
                    failing_function(L)
        traces = [str(w.message) for w in caught if "Error detected in BoomBackward" in
                  str(w.message)]
        assert len(traces) == 1 and "FORWARD-LINE-BOOM" in traces[0]
