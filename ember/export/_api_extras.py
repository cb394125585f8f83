"""The smaller names of torch.export's namespace: `draft_export`, `unflatten`,
`default_decompositions`, and the signature records torch defines for module call graphs.

>>> m = ember.export.unflatten(ep)        # a Module with the original submodule tree
"""
from dataclasses import dataclass, field

from ._export import export

DEFAULT_PICKLE_PROTOCOL = 2
Constraint = object     # torch's alias for the old constraint objects; Dim replaces them


def draft_export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False, **kw):
    """`export` (ember has one tracer: there is no looser mode to fall back to)."""
    return export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)


def unflatten(module, flat_args_adapter=None):
    """A Module running the program whose parameters and buffers sit in the original
    submodule tree (`ep.module()` keeps the FQNs as submodules already)."""
    return module.module()


class DecompositionTable(dict):
    """`default_decompositions()`: stands for every composite op's OpDef.decomp (the
    decompositions live on the OpDefs, so the table holds no entries of its own)."""
    every_composite = True


def default_decompositions():
    return DecompositionTable()


@dataclass
class ModuleCallSignature:
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    in_spec: object = None
    out_spec: object = None


@dataclass
class ModuleCallEntry:
    fqn: str
    signature: object = None


@dataclass
class ExportBackwardSignature:
    gradients_to_parameters: dict = field(default_factory=dict)
    gradients_to_user_inputs: dict = field(default_factory=dict)
    loss_output: str = ""
