"""Samplers: which dataset indices a DataLoader fetches, and in what order.

Random samplers draw from ember's RNG: with no `generator` each pass takes a fresh seed from
ember's default generator, so ``ember.manual_seed(s)`` fixes every epoch's order; an explicit
``generator=`` makes the order independent of the global stream."""
import numpy as np

from ...core.tensor import Tensor


def _seeded(generator):
    """The generator to draw one pass from: `generator`, or a new one seeded from ember's."""
    from ...ops.random import Generator, _rng
    if generator is not None:
        return generator
    return Generator().manual_seed(int(_rng(None).integers(0, 2 ** 63, dtype=np.int64)))


class Sampler:
    """Base class: subclasses define ``__iter__`` over indices (and ``__len__`` if known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices, or (``replacement=True``) `num_samples` uniform
    draws. Without replacement, ``num_samples > len`` repeats whole permutations."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement="
                            f"{replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = _seeded(self.generator)
        if self.replacement:
            # drawn in chunks, so a huge num_samples (an "endless" sampler) costs no memory
            left = self.num_samples
            while left > 0:
                k = min(left, 4096)
                yield from g._rng.integers(0, n, size=k, dtype=np.int64).tolist()
                left -= k
            return
        full, rest = divmod(self.num_samples, n)
        for _ in range(full):
            yield from g._rng.permutation(n).tolist()
        if rest:
            yield from g._rng.permutation(n)[:rest].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given `indices`, in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        g = _seeded(self.generator)
        for i in g._rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probability proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got replacement="
                             f"{replacement}")
        w = np.asarray(weights._data if isinstance(weights, Tensor) else weights, np.float64)
        if w.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        from ...ops.creation import tensor
        self.weights = tensor(w)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ...ops.random import multinomial
        return iter(multinomial(self.weights, self.num_samples, self.replacement,
                                generator=_seeded(self.generator)).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter unless
    `drop_last`)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got drop_last="
                             f"{drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
