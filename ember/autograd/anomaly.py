"""Anomaly detection: remember where each node was created, and fail loudly on NaN grads."""
import warnings

from .grad_mode import state


class detect_anomaly:
    """Context manager: nodes keep their forward traceback; a backward function that returns
    NaN raises RuntimeError naming the node, after printing that traceback."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly = True
        state.anomaly_check_nan = self.check_nan

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev


class set_detect_anomaly:
    """``set_detect_anomaly(True)`` turns anomaly mode on now (or for a ``with`` block)."""

    def __init__(self, mode, check_nan=True):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly = bool(mode)
        state.anomaly_check_nan = check_nan

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev


def is_anomaly_enabled():
    return state.anomaly


def is_anomaly_check_nan_enabled():
    return state.anomaly_check_nan
