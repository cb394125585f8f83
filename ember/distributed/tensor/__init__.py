"""Distributed tensors over a DeviceMesh (torch.distributed.tensor's API).

    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import distribute_tensor, DTensor, Shard, Replicate, Partial
    mesh = init_device_mesh("cpu", (2,))
    dt = distribute_tensor(ember.randn(4, 4), mesh, [Shard(0)])
    dt.redistribute(mesh, [Replicate()]).to_local()      # all_gather

What a DTensor supports is listed in ops.py; see also README_dist_tp.md.
"""
from ..device_mesh import DeviceMesh, init_device_mesh
from .placements import Partial, Placement, Replicate, Shard
from .dtensor import DTensor, distribute_tensor
from . import ops as _ops  # noqa: F401  (installs the DTensor operators and methods)

__all__ = ["DTensor", "distribute_tensor", "DeviceMesh", "init_device_mesh", "Placement",
           "Shard", "Replicate", "Partial"]
