"""DistributedSampler: each rank's share of a dataset (torch.utils.data.distributed).

The indices (shuffled with a generator seeded ``seed + epoch``, the same on every rank)
are padded by repeating the first ones until they divide evenly (or, with ``drop_last``,
the tail is dropped), and rank r takes every num_replicas-th index starting at r: torch's
rules exactly. The shuffle comes from ember's generator (PCG64), so a shuffled order
differs from torch's (Mersenne Twister) for the same seed; unshuffled lists are equal.

    sampler = DistributedSampler(dataset)          # world size and rank from the group
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)                   # a new shuffle each epoch
        for batch in loader: ...

This module sits below ember.distributed in the layers, so it does not import it: the
default world size and rank come from `world_info`, which ember.distributed installs
when it is imported.
"""
import math

from .sampler import Sampler

# Set by ember.distributed at import: a function returning (world_size, rank) of the
# default process group (raising torch's error when it is not initialized).
world_info = None


class DistributedSampler(Sampler):
    """Restricts sampling to this rank's share of `dataset` (see the module docstring)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            if world_info is None:
                raise RuntimeError("Requires distributed package to be available")
            size, me = world_info()
            num_replicas = size if num_replicas is None else num_replicas
            rank = me if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # drop the tail so every rank gets the same number of samples
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from ...ops.random import Generator, randperm
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch: with shuffle=True, each epoch gets its own order (same on every
        rank). Call it before iterating each epoch."""
        self.epoch = epoch
