"""parallelize_module: apply tensor-parallel styles to a module's submodules by name.

    mesh = init_device_mesh("cpu", (2,))
    parallelize_module(mlp, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    parallelize_module(gpt, mesh, {"blocks.*.mlp.0": ColwiseParallel(),
                                   "blocks.*.mlp.2": RowwiseParallel()})

Plan keys are dotted submodule paths; each part may be an ``fnmatch`` pattern (``*``), like
torch. A key that matches nothing warns and is skipped (torch's behaviour).
"""
import warnings
from fnmatch import fnmatch

from ...device_mesh import _current_mesh
from .style import ParallelStyle

__all__ = ["parallelize_module"]


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """Shard `module` (or its submodules named in the plan dict) over the 1-D `device_mesh`
    with the given ParallelStyles, in place; returns `module`. Collective: every rank of the
    mesh calls it with the same plan. Parameter values come from rank `src_data_rank`.

    >>> parallelize_module(mlp, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    """
    device_mesh = device_mesh or _current_mesh()
    if parallelize_plan is None:
        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at "
                      "the moment, so this parallelize_module call will do nothing.",
                      stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, device_mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError("Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for "
                        f"parallelize_plan, {type(parallelize_plan)} found!")
    for path, style in parallelize_plan.items():
        if path == "":
            parallelize_module(module, device_mesh, style, src_data_rank=src_data_rank)
            continue
        token, _, rest = path.partition(".")
        matched = [m for name, m in module.named_children() if fnmatch(name, token)]
        if not matched:
            warnings.warn(f"Parallelize plan key '{path}' could not be resolved: no "
                          f"submodule matching token '{token}' in module {module}, skipping "
                          "this plan entry.", stacklevel=2)
            continue
        for sub in matched:
            parallelize_module(sub, device_mesh, {rest: style} if rest else style,
                               src_data_rank=src_data_rank)
    return module
