"""The built-in iterable-style DataPipes (PyTorch's ``torch.utils.data.datapipes.iter``) and
their functional forms: ``map``, ``filter``, ``batch``, ``unbatch``, ``collate``, ``concat``,
``zip``; ``IterableWrapper`` starts a pipeline from a Python iterable.

    IterableWrapper(range(10)).map(lambda x: x * x).filter(lambda x: x % 2 == 0).batch(2)
"""
import copy
import math
from collections.abc import Sized

from ..collate import default_collate
from .datapipe import DataChunk, IterDataPipe, functional_datapipe

__all__ = ["IterableWrapper", "Mapper", "Filter", "Batcher", "UnBatcher", "Collator",
           "Concater", "Zipper", "MapperIterDataPipe", "FilterIterDataPipe",
           "BatcherIterDataPipe", "UnBatcherIterDataPipe", "CollatorIterDataPipe",
           "ConcaterIterDataPipe", "ZipperIterDataPipe"]


def _no_len(dp):
    return TypeError(f"{type(dp).__name__} instance doesn't have valid length")


def _len_of(dp, source):
    if isinstance(source, Sized):
        return len(source)
    raise _no_len(dp)


class IterableWrapper(IterDataPipe):
    """An IterDataPipe over a Python iterable; with ``deepcopy=True`` (default) each
    iteration reads a deep copy of it, so in-place changes downstream do not leak back."""

    def __init__(self, iterable, deepcopy=True):
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:   # not copyable (a generator...): read it as it is
                pass
        yield from source

    def __len__(self):
        return _len_of(self, self.iterable)


def _pick(data, input_col):
    """The arguments of a column function: the whole item, one column, or several."""
    if input_col is None:
        return (data,)
    if isinstance(input_col, (list, tuple)):
        return tuple(data[c] for c in input_col)
    return (data[input_col],)


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """``fn`` applied to each item, or to its ``input_col`` column(s); the result replaces
    that column, or goes to ``output_col`` (``-1`` appends it)."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        self.datapipe, self.fn, self.input_col = datapipe, fn, input_col
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.output_col = output_col

    def _apply_fn(self, data):
        res = self.fn(*_pick(data, self.input_col))
        if self.input_col is None:
            return res
        was_tuple = isinstance(data, tuple)
        out = list(data) if was_tuple else data
        if self.output_col is not None:
            if self.output_col == -1:
                out.append(res)
            else:
                out[self.output_col] = res
        elif isinstance(self.input_col, (list, tuple)):
            out[self.input_col[0]] = res
            for c in sorted(self.input_col[1:], reverse=True):
                del out[c]
        else:
            out[self.input_col] = res
        return tuple(out) if was_tuple else out

    def __iter__(self):
        for data in self.datapipe:
            yield self._apply_fn(data)

    def __len__(self):
        return _len_of(self, self.datapipe)


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Each item (a batch) collated: ``collate_fn`` if given, else ``conversion``
    (``default_collate`` by default)."""

    def __init__(self, datapipe, conversion=default_collate, collate_fn=None):
        fn = collate_fn if collate_fn is not None else conversion
        if not callable(fn):
            raise TypeError("CollatorIterDataPipe: conversion must be callable")
        super().__init__(datapipe, fn=fn)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """The items for which ``filter_fn`` (of the item, or of its ``input_col``) is True."""

    def __init__(self, datapipe, filter_fn, input_col=None):
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def __iter__(self):
        for data in self.datapipe:
            keep = self.filter_fn(*_pick(data, self.input_col))
            if not isinstance(keep, bool):
                raise ValueError("Boolean output is required for `filter_fn` of "
                                 "FilterIterDataPipe, got", type(keep))
            if keep:
                yield data


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Consecutive items in batches of ``batch_size`` (a ``wrapper_class``, DataChunk by
    default); the last, shorter one is dropped with ``drop_last=True``."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size = datapipe, batch_size
        self.drop_last, self.wrapper_class = drop_last, wrapper_class

    def __iter__(self):
        batch = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        n = _len_of(self, self.datapipe)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """The items of each batch, ``unbatch_level`` levels deep (``-1``: all the way)."""

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe, self.unbatch_level = datapipe, unbatch_level

    def __iter__(self):
        for element in self.datapipe:
            yield from self._flatten(element, self.unbatch_level)

    def _flatten(self, element, level):
        if level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if level == 0:
            yield element
        elif isinstance(element, list):          # DataChunk is a list
            for item in element:
                yield from self._flatten(item, -1 if level == -1 else level - 1)
        elif level == -1:
            yield element
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             "DataPipe")


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The items of each pipe in turn."""

    def __init__(self, *datapipes):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        if all(isinstance(dp, Sized) for dp in self.datapipes):
            return sum(len(dp) for dp in self.datapipes)
        raise _no_len(self)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one item from each pipe, until the shortest ends."""

    def __init__(self, *datapipes):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for "
                            "`ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        if all(isinstance(dp, Sized) for dp in self.datapipes):
            return min(len(dp) for dp in self.datapipes)
        raise _no_len(self)


# PyTorch's short names (torch.utils.data.datapipes.iter.Mapper, ...)
Mapper, Filter, Batcher, UnBatcher = (MapperIterDataPipe, FilterIterDataPipe, BatcherIterDataPipe,
                                      UnBatcherIterDataPipe)
Collator, Concater, Zipper = CollatorIterDataPipe, ConcaterIterDataPipe, ZipperIterDataPipe
