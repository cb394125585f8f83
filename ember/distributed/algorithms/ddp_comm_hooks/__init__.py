"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks): the default ones
live in `default_hooks` (allreduce_hook, fp16_compress_hook, bf16_compress_hook and the two
compress wrappers)."""
from . import default_hooks  # noqa: F401
