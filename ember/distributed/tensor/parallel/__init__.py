"""Tensor parallelism: ``parallelize_module`` with ``ColwiseParallel`` / ``RowwiseParallel``
for nn.Linear and nn.Embedding (torch.distributed.tensor.parallel's API).

    from ember.distributed.tensor.parallel import (parallelize_module, ColwiseParallel,
                                                   RowwiseParallel)
    parallelize_module(mlp, init_device_mesh("cpu", (2,)),
                       {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
"""
from .api import parallelize_module
from .clip_grad import clip_grad_norm_
from .style import ColwiseParallel, LocalShardParameter, ParallelStyle, RowwiseParallel

__all__ = ["parallelize_module", "ParallelStyle", "ColwiseParallel", "RowwiseParallel",
           "LocalShardParameter", "clip_grad_norm_"]
