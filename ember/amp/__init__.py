"""ember.amp: automatic mixed precision — ``autocast`` regions and ``GradScaler``."""
from .autocast_mode import (autocast, is_autocast_enabled, is_autocast_cpu_enabled,  # noqa: F401
                            set_autocast_enabled, get_autocast_dtype, get_autocast_cpu_dtype,
                            set_autocast_dtype, is_autocast_cache_enabled,
                            clear_autocast_cache)
from .grad_scaler import GradScaler, OptState  # noqa: F401
from .custom import custom_fwd, custom_bwd, is_autocast_available  # noqa: F401
from . import policy  # noqa: F401

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype", "custom_fwd",
           "custom_bwd", "is_autocast_available"]
