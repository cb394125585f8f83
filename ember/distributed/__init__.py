"""ember.distributed: torch.distributed's API over MPI (mpi4py + Open MPI from PyPI).

Launch N processes with ``python -m ember.distributed.run --nproc-per-node N script.py``
(or the venv's ``mpiexec -n N python script.py``); each calls `init_process_group`.

    import ember as torch
    import ember.distributed as dist
    dist.init_process_group("mpi")
    t = torch.ones(4) * dist.get_rank()
    dist.all_reduce(t)                     # t == sum of ranks, on every rank
    dist.destroy_process_group()

A rank that dies, exits, or is busy elsewhere never hangs the others: every collective
waits at most the group's `timeout`, then raises RuntimeError naming the missing ranks
(see work.py). Importing this package does not load MPI; `init_process_group` does.
"""
from .process_group import (ReduceOp, Backend, ProcessGroup, GroupMember, group,  # noqa: F401
                            default_pg_timeout, init_process_group, destroy_process_group,
                            is_available, is_initialized, is_mpi_available, is_gloo_available,
                            is_nccl_available, is_torchelastic_launched, get_rank,
                            get_world_size, get_backend, get_process_group_ranks,
                            get_global_rank, get_group_rank, new_group)
from .work import Work  # noqa: F401
from .grad_bucket import GradBucket, BuiltinCommHookType  # noqa: F401  (DDP comm hooks)
from .collectives import (all_reduce, broadcast, reduce, all_gather,  # noqa: F401
                          all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor,
                          all_to_all, all_to_all_single, gather, scatter, barrier,
                          monitored_barrier)
from .p2p import send, recv, isend, irecv, P2POp, batch_isend_irecv  # noqa: F401
from .objects import (broadcast_object_list, all_gather_object, gather_object,  # noqa: F401
                      scatter_object_list)
from .device_mesh import DeviceMesh, init_device_mesh  # noqa: F401,E402  (tensor parallelism)


RedOpType = ReduceOp.RedOpType


def _world_info():
    return get_world_size(), get_rank()


# the sampler sits in a lower layer: give it the default group's size and rank
from ..utils.data import distributed as _sampler_module  # noqa: E402
_sampler_module.world_info = _world_info

# ember.nn.SyncBatchNorm sits below this package and may not import it: plug the collectives
# into its slot (as the compiler plugs itself in as the fused-kernel provider).
import sys as _sys  # noqa: E402
from ..nn.modules import sync_batchnorm as _sync_batchnorm  # noqa: E402
_sync_batchnorm.set_distributed(_sys.modules[__name__])
