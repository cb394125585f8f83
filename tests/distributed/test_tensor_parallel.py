"""Tensor parallelism (DeviceMesh, DTensor, parallelize_module) over 2 MPI ranks.

One mpiexec launch runs _tp_worker.py, whose checks compare every result with torch on
the whole tensors (see that file): DeviceMesh 1-D and 2-D (sub-meshes, groups, local ranks,
errors); distribute / redistribute / full_tensor / from_local round trips for every
placement pair on a 1-D mesh (even and uneven shards) and on 1x2 and 2x1 meshes; gradients
through redistribute for every pair; DTensor ops (matmul in every placement pairing,
broadcast bias add, relu, linear, embedding with padding_idx, transpose, sum, mean) with
their gradients; errors for unsupported ops; and tensor-parallel training (Colwise fc1 +
Rowwise fc2 MLP, even and uneven hidden size; an Embedding Rowwise/Colwise model; the
examples' GPT Block with its MLP parallelised) matching single-process torch SGD, losses
and full weights after every step.

The layout helpers and the placements' text forms are checked here in-process, against torch.
"""
from pathlib import Path

import torch
from hypothesis import given, settings, strategies as st

from ember.distributed.tensor import Partial, Replicate, Shard
from ember.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel
from ember.distributed.tensor.placements import chunk_range, local_layout

try:
    from ._mpi import requires_mpi, run_ranks
except ImportError:
    from _mpi import requires_mpi, run_ranks

WORKER = Path(__file__).with_name("_tp_worker.py")
CHECKS = ["mesh", "round trips 1-D uneven", "round trips 1-D even", "round trips 2-D 1x2",
          "round trips 2-D 2x1", "grads", "ops", "errors", "mlp", "embedding models",
          "gpt block", "gpt"]


@requires_mpi
def test_tensor_parallel_on_two_ranks():
    out = run_ranks(f"""
        import sys
        sys.path.insert(0, {str(WORKER.parent)!r})
        import _tp_worker
        _tp_worker.main()
    """, nproc=2, timeout=240)
    for check in CHECKS:
        assert out.count(f"OK {check} (") == 2, (check, out)
    assert out.count("DONE") == 2, out


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, 13), n=st.integers(1, 5))
def test_chunk_range_is_torch_chunk(size, n):
    # torch.chunk may give fewer than n pieces; the missing ones are empty, at the end
    lengths = [len(p) for p in torch.arange(size).chunk(n)] if size else []
    lengths += [0] * (n - len(lengths))
    for i in range(n):
        assert chunk_range(size, n, i) == (sum(lengths[:i]), lengths[i])


def test_local_layout_nests_like_torch():
    # Shard(0) on both mesh dims of a 2x2 mesh: mesh dim 1 chunks what mesh dim 0 left
    x = torch.arange(10 * 3).reshape(10, 3)
    for c0 in range(2):
        for c1 in range(2):
            piece = x.chunk(2, 0)[c0].chunk(2, 0)[c1]
            shape, offsets = local_layout((10, 3), (Shard(0), Shard(0)), (c0, c1), (2, 2))
            assert shape == tuple(piece.shape)
            assert offsets[0] == int(piece[0, 0]) // 3


def test_placements_and_styles_print_like_torch():
    from torch.distributed.tensor import (Partial as TPartial, Replicate as TReplicate,
                                          Shard as TShard)
    from torch.distributed.tensor import parallel as tp
    pairs = [(Shard(0), TShard(0)), (Shard(-1), TShard(-1)), (Replicate(), TReplicate()),
             (Partial(), TPartial()), (Partial("avg"), TPartial("avg"))]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert Shard(0) == Shard(0) and Shard(0) != Shard(1) and Partial() == Partial("sum")
    assert Replicate() != Shard(0) and len({Shard(1), Shard(1), Replicate()}) == 2
    assert repr(ColwiseParallel()) == repr(tp.ColwiseParallel())
    assert repr(RowwiseParallel(input_layouts=Replicate(), use_local_output=False)) == \
        repr(tp.RowwiseParallel(input_layouts=TReplicate(), use_local_output=False))
