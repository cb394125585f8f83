"""The built-in map-style DataPipes (PyTorch's ``torch.utils.data.datapipes.map``) and their
functional forms: ``map``, ``batch``, ``concat``, ``zip``; ``SequenceWrapper`` starts a
pipeline from a Python sequence.

    SequenceWrapper(list(range(10))).map(abs).batch(3)[1]    # [3, 4, 5]
"""
import copy
import math
from collections.abc import Sized

from .datapipe import DataChunk, MapDataPipe, functional_datapipe
from .iter import _len_of

__all__ = ["SequenceWrapper", "Mapper", "Batcher", "Concater", "Zipper", "MapperMapDataPipe",
           "BatcherMapDataPipe", "ConcaterMapDataPipe", "ZipperMapDataPipe"]


class SequenceWrapper(MapDataPipe):
    """A MapDataPipe over a Python sequence (or mapping), deep-copied by default."""

    def __init__(self, sequence, deepcopy=True):
        self.sequence = copy.deepcopy(sequence) if deepcopy else sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """``fn(datapipe[index])``."""

    def __init__(self, datapipe, fn):
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return _len_of(self, self.datapipe)


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """Batch ``index`` holds items ``index * batch_size`` onward (``wrapper_class`` of a
    list); the last, shorter batch is dropped with ``drop_last=True``."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size = datapipe, batch_size
        self.drop_last, self.wrapper_class = drop_last, wrapper_class

    def __getitem__(self, index):
        batch = []
        start = index * self.batch_size
        try:
            for i in range(start, start + self.batch_size):
                batch.append(self.datapipe[i])
        except IndexError as e:
            if self.drop_last or not batch:
                raise IndexError(f"Index {index} is out of bound.") from e
        return self.wrapper_class(batch)

    def __len__(self):
        n = _len_of(self, self.datapipe)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


def _check_map_inputs(datapipes):
    if len(datapipes) == 0:
        raise ValueError("Expected at least one DataPipe, but got nothing")
    if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
        raise TypeError("Expected all inputs to be `MapDataPipe`")
    if not all(isinstance(dp, Sized) for dp in datapipes):
        raise TypeError("Expected all inputs to be `Sized`")


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """The pipes one after another: index ``len(first)`` is the second's first item."""

    def __init__(self, *datapipes):
        _check_map_inputs(datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index):
        offset = 0
        for dp in self.datapipes:
            if index - offset < len(dp):
                return dp[index - offset]
            offset += len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """``(dp0[index], dp1[index], ...)``, as long as the shortest pipe."""

    def __init__(self, *datapipes):
        _check_map_inputs(datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index):
        res = []
        for dp in self.datapipes:
            try:
                res.append(dp[index])
            except IndexError as e:
                raise IndexError(f"Index {index} is out of range for one of the input "
                                 f"MapDataPipes {dp}.") from e
        return tuple(res)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


# PyTorch's short names (torch.utils.data.datapipes.map.Mapper, ...)
Mapper, Batcher = MapperMapDataPipe, BatcherMapDataPipe
Concater, Zipper = ConcaterMapDataPipe, ZipperMapDataPipe
