"""clip_grad_norm_ for tensor-parallel models: the norm of the *global* gradients.

``ember.nn.utils.clip_grad_norm_`` sees only this rank's pieces of LocalShardParameters, so
on a tensor-parallel model every rank would compute a different norm (and clip its
replicated parameters differently, so the replicas drift apart). This version adds each
sharded parameter's piece norms over the mesh dims that shard it, counts replicated ones
once, and gives every rank the same total.

    loss.backward()
    total = ember.distributed.tensor.parallel.clip_grad_norm_(model.parameters(), 1.0)
"""
import math

from ...collectives import all_reduce
from ...process_group import ReduceOp
from ....autograd.grad_mode import no_grad
from ....core.tensor import Tensor
from ....nn.utils.clip_grad import clip_grads_with_norm_
from ....ops.creation import tensor
from ..placements import Shard

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Rescale the gradients so that the `norm_type`-norm of the whole (global) gradient is
    at most `max_norm`; returns that norm (a float32 0-d tensor, equal on every rank).
    Collective: every rank calls it with its parameters in the same order.

    >>> total = clip_grad_norm_(tp_model.parameters(), max_norm=1.0)
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = [p for p in parameters if p.grad is not None]
    norm_type = float(norm_type)
    inf = norm_type == math.inf
    total = tensor(0.0)
    with no_grad():
        for p in parameters:
            g = p.grad.float()
            if inf:
                part = g.abs().amax() if g.numel() else tensor(0.0)
            else:
                part = (g.abs() ** norm_type).sum()
            part = part.reshape(1).contiguous()   # a buffer all_reduce can fill in place
            mesh = getattr(p, "device_mesh", None)
            for j, pl in enumerate(getattr(p, "placements", ())):
                if isinstance(pl, Shard) and mesh.size(j) > 1:
                    all_reduce(part, op=ReduceOp.MAX if inf else ReduceOp.SUM,
                               group=mesh.get_group(j))
            total = total.maximum(part[0]) if inf else total + part[0]
        if not inf:
            total = total ** (1.0 / norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total
