"""Datasets, samplers and the DataLoader (PyTorch's ``torch.utils.data``).

    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=2)
    for xb, yb in loader:
        ...
"""
from .dataset import (Dataset, IterableDataset, TensorDataset, ConcatDataset, ChainDataset,
                      Subset, StackDataset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,
                      WeightedRandomSampler, BatchSampler)
from .collate import default_collate, default_convert, collate
from ._worker import get_worker_info, WorkerInfo
from .dataloader import DataLoader
from .distributed import DistributedSampler
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe,  # noqa: F401
                        functional_datapipe, guaranteed_datapipes_determinism, non_deterministic,
                        argument_validation, runtime_validation, runtime_validation_disabled)


__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "StackDataset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "default_collate", "default_convert", "collate", "get_worker_info", "WorkerInfo",
           "DataLoader", "DistributedSampler", "DataChunk", "DFIterDataPipe", "IterDataPipe",
           "MapDataPipe", "functional_datapipe", "guaranteed_datapipes_determinism",
           "non_deterministic", "argument_validation", "runtime_validation",
           "runtime_validation_disabled"]
