"""Autograd: the define-by-run graph and the engine that walks it backward.

See graph.py (nodes and saved tensors), engine.py (backward/grad), function.py (custom
Functions; function_nested.py the legacy NestedIOFunction), grad_mode.py, anomaly.py,
gradcheck.py, functional.py, overrides.py (the __torch_function__ helpers) and
profiler_types.py (the profiler enums torch.autograd exports).
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
from .grad_mode import enforce_grad_layout_policy  # noqa: F401
from .overrides import has_torch_function, handle_torch_function, is_tensor_like  # noqa: F401
from .profiler_types import ProfilerActivity, ProfilerState, DeviceType  # noqa: F401
# names torch.autograd's namespace carries from its own imports (typing helpers)
from collections.abc import Mapping, Sequence  # noqa: F401,E402
from typing import cast, overload  # noqa: F401,E402
from .function_nested import NestedIOFunction  # noqa: F401,E402
