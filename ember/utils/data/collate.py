"""Turning a list of samples into a batch (`default_collate`) and converting NumPy data to
tensors without batching (`default_convert`), following PyTorch's rules:

  tensors -> stacked along a new dim 0      numpy arrays -> tensors, then stacked
  floats -> float64 tensor, ints -> int64 tensor, bools -> bool tensor
  str / bytes -> the list unchanged          dicts -> dict of collated values (type kept)
  namedtuples -> same namedtuple of collated fields
  tuples -> list of collated columns (PyTorch's backward-compatible choice), lists -> list
"""
import collections.abc
import re

import numpy as np

from ...core.tensor import Tensor

_STRING_KIND = re.compile(r"[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _as_tensor(x):
    from ...ops.creation import as_tensor
    return as_tensor(x)


def default_convert(data):
    """NumPy arrays/scalars to tensors, recursively through dicts, namedtuples and sequences;
    everything else is returned unchanged (used when batching is disabled)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if isinstance(data, (np.str_, np.bytes_)) or (
                isinstance(data, np.ndarray) and _STRING_KIND.search(data.dtype.str)):
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {k: default_convert(v) for k, v in data.items()}
        try:
            out = type(data)(data)  # keep the mapping type (OrderedDict, custom dicts)
            out.update(converted)
            return out
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ...ops.joining import stack
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if _STRING_KIND.search(batch[0].dtype.str):
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import tensor
    from ...core import dtype as D
    return tensor(batch, dtype=D.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    (str, bytes): collate_str_fn,
}


def collate(batch, *, collate_fn_map=None):
    """The recursive collation `default_collate` runs; `collate_fn_map` maps element types to
    functions ``fn(batch, *, collate_fn_map)`` that handle them (checked before containers)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for types, fn in collate_fn_map.items():
            if isinstance(elem, types):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        values = {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map)
                  for k in elem}
        try:
            out = elem_type(elem)   # shallow copy keeps the type and any extra attributes
            out.update(values)
            return out
        except TypeError:
            return values
    if _is_namedtuple(elem):
        return elem_type(*(collate(list(s), collate_fn_map=collate_fn_map)
                           for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(list(s), collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            return elem_type(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(elem_type))


def default_collate(batch):
    """Collate a list of samples into a batch (see the module docstring for the rules)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
