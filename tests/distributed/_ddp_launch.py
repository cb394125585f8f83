"""One mpiexec launch for test_ddp.py and test_syncbn.py: writes both files' inputs, runs
_ddp_worker.py on 2 ranks, and caches the results for the pytest process (starting MPI
ranks costs seconds; the checks themselves take well under one)."""
from pathlib import Path

import numpy as np
import torch

try:
    from ._mpi import run_ranks
except ImportError:
    from _mpi import run_ranks

WORKER = Path(__file__).with_name("_ddp_worker.py")

# SyncBatchNorm cases, name: (global input shape, rows on rank 0, affine, momentum (-1: None))
SYNC_BN_CASES = {
    "img": ((7, 3, 4, 5), 3, True, 0.1),       # uneven split: counts weigh the statistics
    "seq": ((6, 4, 5), 3, False, 0.3),
    "flat": ((9, 5), 5, True, -1.0),           # momentum=None: cumulative average
}


def torch_cnn():
    """The DDP test CNN in torch (the worker builds the same layers in ember)."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 4 * 4, 10))


def _inputs():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    data = {f"init.{k}": v.numpy() for k, v in torch_cnn().state_dict().items()}
    data.update(X=rng.standard_normal((3, 16, 3, 8, 8)).astype(np.float32),
                Y=rng.integers(0, 10, (3, 16)),
                xb=rng.standard_normal((2, 5, 4)).astype(np.float32))
    for name, (shape, split, affine, momentum) in SYNC_BN_CASES.items():
        key, c = "sbn." + name + ".", shape[1]
        data[key + "x"] = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        data[key + "dy"] = rng.standard_normal(shape).astype(np.float32)
        data[key + "split"] = np.array(split)
        data[key + "affine"] = np.array(affine)
        data[key + "momentum"] = np.array(momentum)
        data[key + "weight"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
        data[key + "bias"] = rng.standard_normal(c).astype(np.float32)
    return data


_CACHE = {}


def results(tmp_path_factory):
    """(inputs, [rank 0's outputs, rank 1's outputs]), launching the ranks on first use."""
    if "results" not in _CACHE:
        folder = tmp_path_factory.mktemp("ddp")
        data = _inputs()
        np.savez(folder / "inputs.npz", **data)
        run_ranks(WORKER.read_text(), nproc=2, args=[str(folder)], timeout=180)
        _CACHE["results"] = data, [dict(np.load(folder / f"rank{r}.npz")) for r in range(2)]
    return _CACHE["results"]
