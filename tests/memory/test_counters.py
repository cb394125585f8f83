"""ember.memory's counters are exact on scripted allocation patterns: every new block counted
once, views and in-place ops counted as nothing, frees counted when the last view dies.
Expected byte counts come from shapes and torch's element sizes, never typed in."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember import memory as M


def nbytes(shape, dtype="float32"):
    """What torch allocates for a fresh contiguous tensor of this shape and dtype."""
    return torch.empty(shape, dtype=getattr(torch, dtype)).untyped_storage().nbytes()


def used():
    return M.memory_allocated()


@pytest.mark.parametrize("shape,dtype", [((100,), "float32"), ((3, 5), "float64"),
                                         ((7, 2, 3), "int8"), ((4, 4), "bool"),
                                         ((2, 3), "int64"), ((6,), "float16"), ((0, 3), "float32")])
def test_a_fresh_tensor_counts_its_bytes_and_frees_them(quiet_gc, shape, dtype):
    base = used()
    t = ember.empty(shape, dtype=getattr(ember, dtype))
    assert used() - base == nbytes(shape, dtype)
    del t
    assert used() == base


def test_views_and_inplace_ops_add_nothing(quiet_gc):
    base = used()
    a = ember.zeros(10, 20)
    size = nbytes((10, 20))
    views = [a[2:5], a.view(200), a.t(), a.reshape(20, 10), a.unsqueeze(0), a.expand(3, 10, 20),
             a.transpose(0, 1), a[:, ::2], a.detach(), a.narrow(1, 3, 4)]
    a.add_(1)
    a.mul_(2)
    a[0, 0] = 5.0
    a.untyped_storage()
    assert used() - base == size
    del a                       # the views keep the block alive
    assert used() - base == size
    views.pop()
    assert used() - base == size
    del views
    assert used() == base


def test_out_of_place_results_are_new_blocks(quiet_gc):
    a = ember.ones(8, 16)
    base = used()
    b = a + 1
    c = a.t().contiguous()       # non-contiguous: copies
    d = a.contiguous()           # already contiguous: the same block
    assert d is a
    assert used() - base == 2 * nbytes((8, 16))
    e = a.sum(dim=0)
    assert used() - base == 2 * nbytes((8, 16)) + nbytes((16,))
    del b, c, e
    assert used() == base


def test_a_numpy_view_keeps_the_block_counted(quiet_gc):
    base = used()
    t = ember.arange(50, dtype=ember.float64)
    arr = t.numpy()
    del t
    assert used() - base == nbytes((50,), "float64")    # the memory is still there
    del arr
    assert used() == base


def test_from_numpy_counts_the_shared_array_once(quiet_gc):
    base = used()
    arr = np.ones((6, 7), dtype=np.float32)
    t1 = ember.from_numpy(arr)
    t2 = ember.as_tensor(arr)
    t3 = ember.from_numpy(arr[1:, ::2])
    assert used() - base == arr.nbytes
    del t1, t2, t3
    # the block is counted until its owning array dies, whoever holds it (here NumPy)
    assert used() - base == arr.nbytes
    del arr
    assert used() == base


def test_out_argument_resized_is_counted(quiet_gc):
    a = ember.ones(4, 5)
    out = ember.empty(0)
    base = used()
    ember.add(a, a, out=out)
    assert used() - base == nbytes((4, 5))
    ember.zeros(3, 3, out=out)
    assert used() - base == nbytes((3, 3))         # the 4x5 buffer went back
    del out
    assert used() == base


def test_peak_totals_and_reset(quiet_gc):
    M.reset_peak_memory_stats()
    M.reset_accumulated_memory_stats()
    base = used()
    sizes = [(100,), (30, 30), (5, 5, 5)]
    ts = [ember.empty(s) for s in sizes]
    total = sum(nbytes(s) for s in sizes)
    del ts[1]
    peak_expected = base + total
    assert M.max_memory_allocated() == peak_expected
    st = M.memory_stats()
    assert st["allocated_bytes.all.current"] == used() == base + total - nbytes((30, 30))
    assert st["allocated_bytes.all.peak"] == peak_expected
    assert st["allocated_bytes.all.allocated"] == total
    assert st["allocated_bytes.all.freed"] == nbytes((30, 30))
    assert st["allocation.all.allocated"] == 3 and st["allocation.all.freed"] == 1
    assert st["num_alloc_retries"] == 0 and st["num_ooms"] == 0
    assert st["reserved_bytes.all.current"] == st["allocated_bytes.all.current"]
    M.reset_peak_memory_stats()
    assert M.max_memory_allocated() == used()
    assert M.memory_stats()["allocation.all.peak"] == M.memory_stats()["allocation.all.current"]
    del ts


def test_small_and_large_pools_split_at_one_mebibyte(quiet_gc):
    st0 = M.memory_stats()
    big = ember.empty(512, 1024)            # 2 MiB of float32
    small = ember.empty(1000)
    st = M.memory_stats()
    for pool, n in (("large_pool", nbytes((512, 1024))), ("small_pool", nbytes((1000,)))):
        assert st[f"allocated_bytes.{pool}.current"] - st0[f"allocated_bytes.{pool}.current"] == n
        assert st[f"allocation.{pool}.current"] - st0[f"allocation.{pool}.current"] == 1
    del big, small


def test_the_stats_keys_are_torchs():
    """Every key ember reports is a key torch's CUDA allocator reports (keys from torch's
    docs of memory_stats); the values ember cannot know (retries, OOMs) are zero."""
    st = M.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
                "allocation.all.current", "active_bytes.all.current",
                "reserved_bytes.all.peak", "requested_bytes.all.current", "segment.all.current",
                "num_alloc_retries", "num_ooms", "allocated_bytes.large_pool.current",
                "allocated_bytes.small_pool.current", "inactive_split_bytes.all.current"):
        assert key in st
    assert M.memory_reserved() == M.memory_allocated()


def test_autograd_saved_tensors_stay_counted_until_the_graph_goes(quiet_gc):
    x = ember.randn(16, 16, requires_grad=True)
    base = used()
    y = (x * 2).exp()   # x * 2 is a temporary (mul by a number saves nothing); exp saves y
    z = y.sum()
    alive = used() - base
    assert alive == nbytes((16, 16)) + nbytes(())
    del y
    assert used() - base == alive            # exp's node keeps its result's block
    del z                                    # the graph goes, and with it y's block
    assert used() == base


def test_counting_starts_at_the_first_call_with_a_census_of_the_live_tensors():
    """Importing ember and running ops counts nothing (the hook is not installed); the first
    memory call installs it and counts the tensors made before it, exactly."""
    code = ("import ember, gc\n"
            "from ember.core import tensor, memory_stats\n"
            "x = ember.ones(3) + 1\n"
            "print(tensor.memory_hook is None, memory_stats.enabled)\n"
            "a = ember.zeros(100); b = a[10:]; c = ember.ones(7, 3, dtype=ember.float64)\n"
            "d = ember.nn.Linear(5, 2)\n"
            "gc.collect()\n"
            "mine = a.nbytes + c.nbytes + sum(p.nbytes for p in d.parameters())\n"
            "counted = ember.memory.memory_allocated()\n"
            "print(tensor.memory_hook is memory_stats.track, memory_stats.enabled)\n"
            "del a, b, c, d\n"
            "gc.collect()\n"
            "print(counted - ember.memory.memory_allocated() == mine, mine > 0)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ember.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out == ["True", "False", "True", "True", "True", "True"]


def test_a_device_other_than_cpu_is_refused():
    with pytest.raises(RuntimeError, match="cpu"):
        M.memory_allocated("cuda")
    with pytest.raises(RuntimeError):
        M.memory_allocated(0)
    assert M.memory_allocated("cpu") == M.memory_allocated()


def test_vmap_tensors_are_skipped_while_counting(quiet_gc):
    # a BatchedTensor (made inside vmap, here kept after it) has no memory of its own: its
    # physical tensor is counted; counting, and the census when counting starts, skip it
    kept = []

    def f(x):
        kept.append(x)
        return x * 2
    ember.func.vmap(f)(ember.ones(3, 2))
    ember.memory.memory_stats()   # a census over live tensors, the kept one included
    base = used()
    y = ember.func.vmap(f)(ember.ones(3, 2))
    assert used() - base >= nbytes((3, 2)) and y.shape == (3, 2)
