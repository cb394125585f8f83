"""Autograd: the define-by-run graph and the engine that walks it backward.

See graph.py (nodes and saved tensors), engine.py (backward/grad), function.py (custom
Functions), grad_mode.py, anomaly.py, gradcheck.py and functional.py.
"""
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled)
from . import graph  # noqa: F401
from .engine import backward, grad  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .anomaly import detect_anomaly, set_detect_anomaly, is_anomaly_enabled  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
from . import functional  # noqa: F401
from . import forward_ad  # noqa: F401
from .graph import Node  # noqa: F401
from .engine import _is_checkpoint_valid  # noqa: F401
from .variable import (Variable, variable, is_multithreading_enabled,  # noqa: F401
                       set_multithreading_enabled, is_view_replay_enabled, kineto_available)
