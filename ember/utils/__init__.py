"""ember.utils: data loading (`ember.utils.data`), activation checkpointing
(`ember.utils.checkpoint`) and the gradient doctor (`grad_doctor`).

`import ember.utils.cpp_extension` for C extensions (it sits above, with the compiler).
"""
import importlib

from . import data  # noqa: F401
from . import checkpoint  # noqa: F401


def __getattr__(name):
    # the gradient doctor is imported on first use: `import ember` does not pay for it
    if name == "grad_doctor":
        return importlib.import_module(__name__ + ".grad_doctor")
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
