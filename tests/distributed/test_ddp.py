"""DistributedDataParallel over 2 MPI ranks against single-process torch training.

One mpiexec launch (_ddp_worker.py, shared with test_syncbn.py through _ddp_launch.py) runs
every check; this file compares rank 0's and rank 1's results with real torch trained on
the concatenated global batch:
- a CNN with BatchNorm (converted to SyncBatchNorm) trained 3 SGD steps: weights and
  running statistics equal torch's (float32 tolerance), also with gradient_as_bucket_view;
- the same with gradient accumulation over 2 micro-batches, the first under no_sync();
- find_unused_parameters: a parameter used on rank 0 only gets half rank 0's gradient, one
  no rank uses keeps .grad None; without the flag the next forward raises torch's error;
- in the worker: buckets fire during backward, broadcast_buffers, state_dict's prefix,
  constructor errors.
"""
import numpy as np
import pytest
import torch

try:
    from ._ddp_launch import results as launch, torch_cnn
    from ._mpi import requires_mpi
except ImportError:
    from _ddp_launch import results as launch, torch_cnn
    from _mpi import requires_mpi

import ember


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return launch(tmp_path_factory)


def _reference(data, micro_batches):
    """torch, one process: 3 SGD steps on the global batch (accumulating micro-batches)."""
    model = torch_cnn()
    model.load_state_dict({k[5:]: torch.tensor(v) for k, v in data.items()
                           if k.startswith("init.")})
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    X, Y = torch.tensor(data["X"]), torch.tensor(data["Y"])
    size = X.shape[1] // micro_batches
    for s in range(X.shape[0]):
        opt.zero_grad()
        for m in range(micro_batches):
            x, y = X[s, m * size:(m + 1) * size], Y[s, m * size:(m + 1) * size]
            torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return {k: v.numpy() for k, v in model.state_dict().items()}


def _compare(ranks, prefix, expected):
    for r, got in enumerate(ranks):
        for k, want in expected.items():
            np.testing.assert_allclose(got[prefix + k], want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"rank {r}: {k}")


@requires_mpi
def test_ddp_equals_single_process_on_the_global_batch(results):
    data, ranks = results
    _compare(ranks, "ddp.", _reference(data, 1))


@requires_mpi
def test_gradient_as_bucket_view_trains_the_same(results):
    data, ranks = results
    _compare(ranks, "view.", _reference(data, 1))


@requires_mpi
def test_no_sync_accumulation_equals_accumulating_on_the_global_batch(results):
    data, ranks = results
    _compare(ranks, "nosync.", _reference(data, 2))


@requires_mpi
def test_find_unused_parameters(results):
    data, ranks = results
    nn = torch.nn
    flat = torch.tensor(ranks[0]["unused.init"])
    layers = [nn.Linear(4, 3) for _ in range(3)]
    torch.nn.utils.vector_to_parameters(flat, [p for m in layers for p in m.parameters()])
    used, rank0_only, _ = layers
    for r in range(2):
        x = torch.tensor(data["xb"][r])
        out = used(x) + (rank0_only(x) if r == 0 else 0)
        (out.pow(2).sum() / 2).backward()         # DDP averages over the 2 ranks
    for r in range(2):
        np.testing.assert_allclose(ranks[r]["unused.used.weight"], used.weight.grad.numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ranks[r]["unused.rank0_only.weight"],
                                   rank0_only.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- one process ----

def test_ddp_is_reachable_after_import_ember_and_plugs_in_sync_batchnorm():
    from ember.nn.modules import sync_batchnorm
    import ember.distributed
    assert ember.nn.parallel.DistributedDataParallel.__name__ == "DistributedDataParallel"
    assert sync_batchnorm._DIST[0] is ember.distributed


def test_ddp_without_a_process_group_raises_like_torch():
    assert not torch.distributed.is_initialized() and not ember.distributed.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized") as t:
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=str(t.value)):
        ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 2))
