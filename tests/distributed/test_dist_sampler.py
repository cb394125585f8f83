"""DistributedSampler against torch's: the same index lists for every (length, replicas,
rank, drop_last) without shuffling; with shuffling, torch's padding/partition rules applied
to ember's permutation (ember's generator is PCG64, torch's is a Mersenne Twister, so the
permutations themselves differ for a seed — checked here too, so the docs stay honest)."""
import pytest
import torch
from torch.utils.data.distributed import DistributedSampler as TorchSampler

import ember
from ember.utils.data import DistributedSampler
from ember.utils.data.distributed import DistributedSampler as DS2

CASES = [(n, k, drop) for n in (0, 1, 2, 5, 7, 10, 13) for k in (1, 2, 3, 4, 8)
         for drop in (False, True)]


@pytest.mark.parametrize("n,k,drop_last", CASES)
def test_unshuffled_equals_torch(n, k, drop_last):
    data = list(range(n))
    for rank in range(k):
        ours = DistributedSampler(data, num_replicas=k, rank=rank, shuffle=False,
                                  drop_last=drop_last)
        ref = TorchSampler(data, num_replicas=k, rank=rank, shuffle=False,
                           drop_last=drop_last)
        assert list(ours) == list(ref)
        assert len(ours) == len(ref) and ours.total_size == ref.total_size


@pytest.mark.parametrize("n,k,drop_last", [c for c in CASES if c[0] > 0])
def test_shuffled_partition_rules_match_torch(n, k, drop_last):
    data = list(range(n))
    for epoch in (0, 3):
        perm = ember.randperm(n, generator=ember.Generator().manual_seed(7 + epoch)).tolist()
        for rank in range(k):
            ours = DistributedSampler(data, num_replicas=k, rank=rank, seed=7,
                                      drop_last=drop_last)
            ours.set_epoch(epoch)
            # torch's rule: positions of the unshuffled list, looked up in the permutation
            positions = list(TorchSampler(data, num_replicas=k, rank=rank, shuffle=False,
                                          drop_last=drop_last))
            assert list(ours) == [perm[p] for p in positions]


def test_epochs_and_ranks():
    data = list(range(20))
    a = [DistributedSampler(data, num_replicas=2, rank=r, seed=1) for r in range(2)]
    first = [list(s) for s in a]
    assert sorted(first[0] + first[1]) == data          # a partition of the dataset
    assert first == [list(s) for s in a]                # deterministic
    for s in a:
        s.set_epoch(1)
    assert [list(s) for s in a] != first                # a new order per epoch
    assert DS2 is DistributedSampler


def test_shuffle_is_not_torchs_permutation():
    # documented difference: ember's generator is not torch's Mersenne Twister
    g = torch.Generator().manual_seed(0)
    ours = ember.randperm(50, generator=ember.Generator().manual_seed(0)).tolist()
    assert ours != torch.randperm(50, generator=g).tolist()


def test_errors_like_torch():
    for rank in (-1, 2):
        with pytest.raises(ValueError) as ref:
            TorchSampler(range(4), num_replicas=2, rank=rank)
        with pytest.raises(ValueError) as got:
            DistributedSampler(range(4), num_replicas=2, rank=rank)
        assert str(got.value) == str(ref.value)
    import ember.distributed as dist
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_with_dataloader():
    ds = ember.utils.data.TensorDataset(ember.arange(10.))
    s = DistributedSampler(ds, num_replicas=3, rank=1, shuffle=False)
    loader = ember.utils.data.DataLoader(ds, batch_size=2, sampler=s)
    got = [b[0].tolist() for b in loader]
    ref = list(TorchSampler(range(10), num_replicas=3, rank=1, shuffle=False))
    assert got == [[float(i) for i in ref[j:j + 2]] for j in range(0, len(ref), 2)]
