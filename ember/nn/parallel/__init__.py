"""ember.nn.parallel: data parallelism over processes (torch.nn.parallel's place).

    from ember.nn.parallel import DistributedDataParallel as DDP

Layering: this package sits in the distributed layer (tests/test_layering.py, LAYERS), above
ember.nn and next to ember.distributed, so it may import the collectives; ember/nn/__init__
does not import it. ``import ember`` does (the top namespace may import anything), so
``ember.nn.parallel`` is reachable as an attribute, as ``torch.nn.parallel`` is.
"""
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
