"""Variable-length sequence helpers: PackedSequence and pack/pad conversions.

    packed = pack_padded_sequence(x, lengths, enforce_sorted=False)   # x: (T, B, *)
    out, h = lstm(packed)
    padded, lengths = pad_packed_sequence(out)

A PackedSequence stores the steps of a batch sorted by decreasing length, time-major:
``data`` holds the batch_sizes[0] first elements, then the batch_sizes[1] second elements...
"""
from collections import namedtuple

import numpy as np

from ...core.dtype import float32, float64
from ...core.tensor import Tensor
from ...ops.creation import full, tensor
from ...ops.joining import cat, stack

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """(data, batch_sizes, sorted_indices, unsorted_indices); see the module docstring."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes,
                                                         self.sorted_indices,
                                                         self.unsorted_indices)

    def double(self):
        return self.to(dtype=float64)

    def float(self):
        return self.to(dtype=float32)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _invert(perm):
    inv = np.empty(len(perm), dtype=np.int64)
    inv[perm.numpy()] = np.arange(len(perm))
    return tensor(inv)


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        return lengths.numpy().astype(np.int64).reshape(-1)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) (or (B, T, *) with `batch_first`) batch of sequences with the
    given lengths. With ``enforce_sorted=False`` the batch is sorted by length here and the
    permutation kept in the result."""
    lens = _lengths(lengths)
    if enforce_sorted:
        if (np.diff(lens) > 0).any():
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = tensor(order.astype(np.int64))
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if len(lens) and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    steps = int(lens[0]) if len(lens) else 0
    batch_sizes = np.array([(lens > t).sum() for t in range(steps)], dtype=np.int64)
    data = cat([input[t, :int(b)] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded (T, B, *), lengths (B,) int64), in the
    original batch order."""
    data, bs = sequence.data, sequence.batch_sizes.numpy()
    steps, batch = len(bs), int(bs[0]) if len(bs) else 0
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
    else:
        total_length = steps
    tail = tuple(data.shape[1:])
    rows, off = [], 0
    for b in bs:
        b = int(b)
        step = data[off:off + b]
        if b < batch:
            step = cat([step, full((batch - b,) + tail, padding_value,
                                   dtype=data.dtype)], 0)
        rows.append(step)
        off += b
    rows += [full((batch,) + tail, padding_value, dtype=data.dtype)] * (
        total_length - steps)
    out = stack(rows, 0)
    lengths = np.array([(bs > i).sum() for i in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.numpy()]
    if batch_first:
        out = out.transpose(0, 1)
    return out, tensor(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack (L_i, *) tensors into (T, B, *) (or (B, T, *)), padding with `padding_value`."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        n = longest - s.shape[0]
        if n:
            fill = full((n,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence(pad_sequence(sequences), their lengths)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(_lengths(lengths))]


def unpack_sequence(packed_sequences):
    """The list of sequences of a PackedSequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
