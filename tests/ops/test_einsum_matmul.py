"""Two-operand einsum patterns that ember runs as one batched BLAS matmul
(ember/ops/linalg.py:_einsum_as_matmul): values and gradients against torch."""
import numpy as np
import pytest
import torch

import ember

CASES = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("i,i->", [(3,), (3,)]),
    ("ij,kl->ijkl", [(2, 3), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ijk,j->ik", [(2, 3, 4), (3,)]),
    ("abc,cd->a", [(2, 3, 4), (4, 5)]),
    ("bij,bjk->bik", [(0, 3, 4), (0, 4, 5)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize("eq,shapes", CASES)
def test_einsum_matmul_path_matches_torch(eq, shapes):
    rng = np.random.default_rng(len(eq))
    xs = [rng.standard_normal(s) for s in shapes]
    es = [ember.tensor(x, requires_grad=True) for x in xs]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    ye, yt = ember.einsum(eq, *es), torch.einsum(eq, *ts)
    assert tuple(ye.shape) == tuple(yt.shape)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = rng.standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for e, t in zip(es, ts):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
