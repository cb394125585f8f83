"""ember.utils.data against torch.utils.data: datasets, samplers, collation, DataLoader
(single process and worker processes)."""
import collections
import gc
import multiprocessing
import os
import signal

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from hypothesis import given, settings, strategies as st

import ember
import ember.utils.data as edata

Point = collections.namedtuple("Point", "x y")


# ---------------------------------------------------------------- comparison helpers
def assert_same(e, t):
    """`e` (built by ember) has the structure, types, dtypes and values of `t` (torch)."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert e.dtype.name == str(t.dtype).replace("torch.", ""), (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(np.asarray(e.tolist()), np.asarray(t.tolist()))
    elif isinstance(t, collections.abc.Mapping):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            assert_same(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), (type(e), type(t))
        for a, b in zip(e, t):
            assert_same(a, b)
    else:
        assert type(e) is type(t) and e == t


def plain(x):
    """A comparable description of a loader output (ember or torch tensors inside)."""
    if isinstance(x, (ember.Tensor, torch.Tensor)):
        return ("T", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, [(k, plain(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    return x


def assert_equal_outputs(a, b):
    assert plain(a) == plain(b)


class _T:
    """A tensor leaf in a sample template: becomes ember or torch tensor of `arr`."""

    def __init__(self, arr):
        self.arr = arr


def realize(x, lib):
    if isinstance(x, _T):
        return lib.from_numpy(np.array(x.arr))
    if isinstance(x, Point):
        return Point(*(realize(v, lib) for v in x))
    if isinstance(x, dict):
        return type(x)((k, realize(v, lib)) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return type(x)(realize(v, lib) for v in x)
    return x


DTYPES = [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.float16]


@st.composite
def sample_batches(draw):
    """A list of samples of one nested template, with tensors / arrays / numbers / strings."""
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    dt = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["tensor", "array", "npscalar", "float", "int", "bool", "str",
                                 "dict", "tuple", "list", "namedtuple", "nested",
                                 "ordereddict"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))

    def arr():
        return np.array(rng.standard_normal(shape) * 5).astype(dt)

    def one(i):
        if kind == "tensor":
            return _T(arr())
        if kind == "array":
            return arr()
        if kind == "npscalar":
            return dt(i)
        if kind == "float":
            return float(i) / 3
        if kind == "int":
            return i * 7 - 3
        if kind == "bool":
            return bool(i % 2)
        if kind == "str":
            return f"s{i}"
        if kind == "dict":
            return {"a": _T(arr()), "b": i, "c": "x"}
        if kind == "ordereddict":
            return collections.OrderedDict([("z", _T(arr())), ("a", float(i))])
        if kind == "tuple":
            return (_T(arr()), i, arr())
        if kind == "list":
            return [_T(arr()), float(i)]
        if kind == "namedtuple":
            return Point(_T(arr()), i)
        return {"p": Point([_T(arr()), i], {"q": (1.5 * i, f"t{i}")}), "r": [arr()]}
    return [one(i) for i in range(n)]


# ---------------------------------------------------------------- collation
@settings(max_examples=60, deadline=None)
@given(sample_batches())
def test_default_collate_matches_torch(batch):
    assert_same(edata.default_collate(realize(batch, ember)),
                tdata.default_collate(realize(batch, torch)))


@settings(max_examples=40, deadline=None)
@given(sample_batches())
def test_default_convert_matches_torch(batch):
    assert_same(edata.default_convert(realize(batch, ember)),
                tdata.default_convert(realize(batch, torch)))


@pytest.mark.parametrize("batch", [
    [np.array(["a", "b"]), np.array(["c", "d"])],        # string arrays cannot be tensors
    [object(), object()],
])
def test_default_collate_errors_match_torch(batch):
    with pytest.raises(Exception) as te:
        tdata.default_collate(batch)
    with pytest.raises(type(te.value)):
        edata.default_collate(batch)


def test_default_collate_unequal_lists_match_torch():
    batch = [[1, 2], [3]]
    with pytest.raises(RuntimeError, match="equal size"):
        tdata.default_collate(batch)
    with pytest.raises(RuntimeError, match="equal size"):
        edata.default_collate(batch)


# ---------------------------------------------------------------- datasets
def test_tensor_concat_subset_match_torch():
    a = np.arange(12, dtype=np.float32).reshape(6, 2)
    b = np.arange(6)
    eds = edata.TensorDataset(ember.from_numpy(a), ember.from_numpy(b))
    tds = tdata.TensorDataset(torch.from_numpy(a), torch.from_numpy(b))
    assert len(eds) == len(tds)
    for i in range(-6, 6):
        assert_same(list(eds[i]), list(tds[i]))
    ecat = eds + edata.Subset(eds, [5, 0, 3])
    tcat = tds + tdata.Subset(tds, [5, 0, 3])
    assert len(ecat) == len(tcat) and ecat.cumulative_sizes == tcat.cumulative_sizes
    for i in range(-len(tcat), len(tcat)):
        assert_same(list(ecat[i]), list(tcat[i]))
    with pytest.raises(AssertionError):
        edata.TensorDataset(ember.zeros(3), ember.zeros(4))
    with pytest.raises(AssertionError):
        tdata.TensorDataset(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [0.34, 0.33, 0.33],
                                     [1.0], [10]])
def test_random_split_sizes_match_torch(lengths):
    ds = list(range(10))
    es = edata.random_split(ds, lengths, generator=ember.Generator().manual_seed(1))
    ts = tdata.random_split(ds, lengths, generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in es] == [len(s) for s in ts]
    got = sorted(x for s in es for x in s)
    assert got == list(range(10))          # disjoint and covering
    again = edata.random_split(ds, lengths, generator=ember.Generator().manual_seed(1))
    assert [list(s) for s in es] == [list(s) for s in again]


def test_random_split_bad_lengths_match_torch():
    for lengths in ([3, 3], [0.5, 0.6]):
        with pytest.raises(ValueError):
            tdata.random_split(list(range(10)), lengths)
        with pytest.raises(ValueError):
            edata.random_split(list(range(10)), lengths)


def test_random_split_follows_manual_seed():
    ember.manual_seed(3)
    a = [list(s) for s in edata.random_split(range(8), [4, 4])]
    ember.manual_seed(3)
    b = [list(s) for s in edata.random_split(range(8), [4, 4])]
    assert a == b


# ---------------------------------------------------------------- samplers
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 12), st.integers(1, 5), st.booleans())
def test_sequential_and_batch_sampler_match_torch(n, bs, drop_last):
    es = edata.BatchSampler(edata.SequentialSampler(range(n)), bs, drop_last)
    ts = tdata.BatchSampler(tdata.SequentialSampler(range(n)), bs, drop_last)
    assert list(es) == list(ts) and len(es) == len(ts)
    assert list(edata.SequentialSampler(range(n))) == list(tdata.SequentialSampler(range(n)))


@pytest.mark.parametrize("make", [
    lambda m: m.BatchSampler(range(3), 0, False),
    lambda m: m.BatchSampler(range(3), 2, 1),
    lambda m: m.RandomSampler(range(3), num_samples=0),
    lambda m: m.RandomSampler(range(3), replacement=1),
    lambda m: m.WeightedRandomSampler([[1.0, 2.0]], 2),
    lambda m: m.WeightedRandomSampler([1.0, 2.0], 0),
])
def test_sampler_argument_errors_match_torch(make):
    with pytest.raises(Exception) as te:
        make(tdata)
    with pytest.raises(type(te.value)):
        make(edata)


@pytest.mark.parametrize("n,num_samples,replacement", [(7, None, False), (5, 12, False),
                                                       (6, 20, True), (1, None, False)])
def test_random_sampler_reproducible(n, num_samples, replacement):
    def draw(seed):
        s = edata.RandomSampler(range(n), replacement, num_samples,
                                generator=ember.Generator().manual_seed(seed))
        return list(s)
    a = draw(0)
    t = tdata.RandomSampler(range(n), replacement, num_samples)
    assert len(a) == len(t) == len(list(t))
    assert a == draw(0)
    assert all(0 <= i < n for i in a)
    if not replacement:   # every full block of n is a permutation, the tail has no repeats
        for k in range(0, len(a) - len(a) % n, n):
            assert sorted(a[k:k + n]) == list(range(n))
        tail = a[len(a) - len(a) % n:]
        assert len(set(tail)) == len(tail)
    ember.manual_seed(4)
    b = list(edata.RandomSampler(range(n), replacement, num_samples))
    ember.manual_seed(4)
    assert b == list(edata.RandomSampler(range(n), replacement, num_samples))


def test_subset_random_sampler():
    idx = [10, 3, 7, 22, 5]
    a = list(edata.SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(2)))
    b = list(edata.SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(2)))
    assert a == b and sorted(a) == sorted(idx)
    assert len(edata.SubsetRandomSampler(idx)) == len(tdata.SubsetRandomSampler(idx))


def test_weighted_sampler_statistics_match_torch():
    w = [1.0, 2.0, 3.0, 4.0, 0.0]
    n = 20000
    e = np.bincount(list(edata.WeightedRandomSampler(
        w, n, generator=ember.Generator().manual_seed(0))), minlength=5) / n
    t = np.bincount(list(tdata.WeightedRandomSampler(
        w, n, generator=torch.Generator().manual_seed(0))), minlength=5) / n
    np.testing.assert_allclose(e, t, atol=0.03)
    assert e[4] == 0 == t[4]
    no_rep = list(edata.WeightedRandomSampler(w, 4, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3]
    assert len(edata.WeightedRandomSampler(w, 7)) == len(tdata.WeightedRandomSampler(w, 7))


# ---------------------------------------------------------------- DataLoader (main process)
def _pair_datasets(n=9):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n) * 10
    return (edata.TensorDataset(ember.from_numpy(x), ember.from_numpy(y)),
            tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 8), max_size=12), st.integers(1, 4), st.booleans())
def test_loader_with_sampler_matches_torch(indices, bs, drop_last):
    eds, tds = _pair_datasets()
    el = edata.DataLoader(eds, batch_size=bs, sampler=indices, drop_last=drop_last)
    tl = tdata.DataLoader(tds, batch_size=bs, sampler=indices, drop_last=drop_last)
    assert len(el) == len(tl)
    assert_same(list(el), list(tl))


def test_loader_batch_sampler_and_no_batching_match_torch():
    eds, tds = _pair_datasets()
    bsamp = [[0, 3], [8], [1, 2, 4]]
    assert_same(list(edata.DataLoader(eds, batch_sampler=bsamp)),
                list(tdata.DataLoader(tds, batch_sampler=bsamp)))
    assert_same(list(edata.DataLoader(eds, batch_size=None, sampler=[4, 1])),
                list(tdata.DataLoader(tds, batch_size=None, sampler=[4, 1])))
    dicts = [{"a": np.ones(2) * i, "b": i} for i in range(5)]
    assert_same(list(edata.DataLoader(dicts, batch_size=None)),
                list(tdata.DataLoader(dicts, batch_size=None)))
    assert_same(list(edata.DataLoader(dicts, batch_size=2)),
                list(tdata.DataLoader(dicts, batch_size=2)))
    assert_same(list(edata.DataLoader(dicts, batch_size=2, collate_fn=lambda b: len(b))),
                list(tdata.DataLoader(dicts, batch_size=2, collate_fn=lambda b: len(b))))


class _Stream(edata.IterableDataset):
    """range(n), split between workers by their id."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = edata.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


class _TStream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tdata.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


@pytest.mark.parametrize("bs,drop_last", [(None, False), (1, False), (3, False), (3, True)])
def test_iterable_dataset_matches_torch(bs, drop_last):
    el = edata.DataLoader(_Stream(7), batch_size=bs, drop_last=drop_last)
    tl = tdata.DataLoader(_TStream(7), batch_size=bs, drop_last=drop_last)
    assert_same(list(el), list(tl))


@pytest.mark.parametrize("kw", [dict(shuffle=True, sampler=[0, 1]),
                                dict(batch_sampler=[[0]], batch_size=2),
                                dict(batch_sampler=[[0]], drop_last=True),
                                dict(batch_size=None, drop_last=True),
                                dict(num_workers=-1),
                                dict(prefetch_factor=2),
                                dict(timeout=-1),
                                dict(persistent_workers=True)])
def test_loader_argument_errors_match_torch(kw):
    with pytest.raises(Exception) as te:
        tdata.DataLoader(list(range(4)), **kw)
    with pytest.raises(type(te.value)):
        edata.DataLoader(list(range(4)), **kw)


def test_iterable_dataset_rejects_shuffle_like_torch():
    with pytest.raises(ValueError):
        tdata.DataLoader(_TStream(3), shuffle=True)
    with pytest.raises(ValueError):
        edata.DataLoader(_Stream(3), shuffle=True)


def test_shuffle_follows_manual_seed_and_generator():
    ds = list(range(10))
    ember.manual_seed(7)
    a = [b.tolist() for b in edata.DataLoader(ds, batch_size=3, shuffle=True)]
    ember.manual_seed(7)
    b = [b.tolist() for b in edata.DataLoader(ds, batch_size=3, shuffle=True)]
    assert a == b and sorted(sum(a, [])) == ds
    g = [[b.tolist() for b in edata.DataLoader(
        ds, batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(s))]
        for s in (1, 1)]
    assert g[0] == g[1]


def test_pin_memory_is_accepted():
    eds, tds = _pair_datasets()
    assert_same(list(edata.DataLoader(eds, batch_size=4, pin_memory=True)),
                list(tdata.DataLoader(tds, batch_size=4)))


# ---------------------------------------------------------------- worker processes
def _reap():
    gc.collect()
    return multiprocessing.active_children()


def test_workers_match_single_process_and_torch():
    eds, tds = _pair_datasets(11)
    sampler = [10, 0, 3, 3, 7, 1, 2, 9, 4]
    base = list(edata.DataLoader(eds, batch_size=2, sampler=sampler))
    for nw in (1, 3):
        got = list(edata.DataLoader(eds, batch_size=2, sampler=sampler, num_workers=nw,
                                    prefetch_factor=1))
        assert_equal_outputs(got, base)
    tl = tdata.DataLoader(tds, batch_size=2, sampler=sampler, num_workers=2)
    assert_same(base, list(tl))
    ember.manual_seed(11)
    a = [b[1].tolist() for b in edata.DataLoader(eds, batch_size=4, shuffle=True)]
    ember.manual_seed(11)
    b = [b[1].tolist() for b in edata.DataLoader(eds, batch_size=4, shuffle=True,
                                                  num_workers=2)]
    assert a == b
    assert _reap() == []


def test_iterable_workers_shard_like_torch():
    el = edata.DataLoader(_Stream(7), batch_size=2, num_workers=2)
    tl = tdata.DataLoader(_TStream(7), batch_size=2, num_workers=2)
    assert_same(list(el), list(tl))


def test_persistent_workers_and_out_of_order():
    eds, _ = _pair_datasets(6)
    base = list(edata.DataLoader(eds, batch_size=2))
    loader = edata.DataLoader(eds, batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert_equal_outputs(list(loader), base)
    del loader
    unordered = list(edata.DataLoader(eds, batch_size=1, num_workers=2, in_order=False))
    assert sorted(b[1].item() for b in unordered) == [b for b in range(0, 60, 10)]
    assert _reap() == []


class _Failing(edata.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise_from_helper(i)
        return i


def raise_from_helper(i):
    raise ValueError(f"bad item {i}")


class _TFailing(tdata.Dataset):
    __len__ = _Failing.__len__
    __getitem__ = _Failing.__getitem__


def test_worker_exception_propagates_like_torch():
    tit = iter(tdata.DataLoader(_TFailing(), batch_size=2, num_workers=2))
    with pytest.raises(Exception) as te:
        list(tit)
    tit._shutdown_workers()   # torch's own clean-up would otherwise wait at gc time
    with pytest.raises(type(te.value)) as ee:
        list(edata.DataLoader(_Failing(), batch_size=2, num_workers=2))
    msg = str(ee.value)
    assert "Traceback" in msg and "raise_from_helper" in msg and "bad item 3" in msg
    assert "worker process" in msg
    del ee, te
    assert _reap() == []


class _Killing(edata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_killed_worker_raises_runtime_error():
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(edata.DataLoader(_Killing(), batch_size=1, num_workers=2))
    assert _reap() == []


class _Slow(edata.Dataset):
    def __len__(self):
        return 3

    def __getitem__(self, i):
        import time
        time.sleep(1.0)
        return i


def test_timeout_raises_runtime_error():
    with pytest.raises(RuntimeError, match="timed out"):
        list(edata.DataLoader(_Slow(), num_workers=1, timeout=0.2))
    assert _reap() == []


def test_early_break_leaves_no_children():
    for i, b in enumerate(edata.DataLoader(list(range(40)), batch_size=2, num_workers=2)):
        if i == 1:
            break
    del b
    assert _reap() == []


class _Info(edata.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        import random
        info = edata.get_worker_info()
        return (info.id, info.num_workers, info.seed, type(info.dataset).__name__,
                int(ember.randint(0, 2 ** 30, (1,)).item()), random.random(),
                float(np.random.rand()), _INIT_MARK.get("id"))


_INIT_MARK = {}


def _init(wid):
    _INIT_MARK["id"] = wid


def test_worker_info_and_seeds():
    assert edata.get_worker_info() is None

    def run():
        g = ember.Generator().manual_seed(123)
        return [tuple(x) for x in edata.DataLoader(_Info(), batch_size=None, num_workers=2,
                                                      generator=g, worker_init_fn=_init)]
    a, b = run(), run()
    assert a == b                                  # reproducible seeds and random draws
    ids = [r[0] for r in a]
    assert sorted(set(ids)) == [0, 1] and all(r[1] == 2 for r in a)
    assert all(r[3] == "_Info" for r in a) and all(r[7] == r[0] for r in a)
    seeds = {r[0]: r[2] for r in a}
    assert seeds[1] == seeds[0] + 1                # base_seed + worker_id
    first = {}
    for r in a:
        first.setdefault(r[0], r[4:7])
    assert first[0] != first[1]                    # workers draw different streams
    c = [tuple(x) for x in edata.DataLoader(_Info(), batch_size=None, num_workers=2,
                                           generator=ember.Generator().manual_seed(124))]
    assert {r[2] for r in c} != set(seeds.values())
    assert _reap() == []
