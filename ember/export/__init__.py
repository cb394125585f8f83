"""ember.export: capture a module's forward as a self-contained program (torch.export's role)
that runs without the model's source, saves to a versioned file, and loads in a process that
imports only ember.

    ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: Dim("batch", max=64)}})
    print(ep)                               # the graph as Python, signature, ranges
    ember.export.save(ep, "model.ept")
    ep2 = ember.export.load("model.ept")    # no model class needed
    y = ep2.module()(x)

See _capture.py (tracing), _export.py (assembly, dynamic sizes), program.py
(ExportedProgram), serde.py (the file format).
"""
from ._capture import UserError  # noqa: F401
from ._export import export, ConstraintViolationError  # noqa: F401
from .dims import Dim, dims, ValueRange  # noqa: F401
from .program import ExportedProgram  # noqa: F401
from .signature import (ExportGraphSignature, InputKind, OutputKind, InputSpec,  # noqa: F401
                        OutputSpec, TensorArgument, ConstantArgument)
from .serde import save, load, FORMAT_VERSION, ExportFormatError  # noqa: F401

from ._api_extras import (draft_export, unflatten, default_decompositions,  # noqa: F401,E402
                          DEFAULT_PICKLE_PROTOCOL, Constraint, ModuleCallSignature,
                          ModuleCallEntry, ExportBackwardSignature)

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "InputKind", "OutputKind",
           "InputSpec", "OutputSpec", "Dim", "dims", "save", "load", "UserError",
           "ConstraintViolationError"]
