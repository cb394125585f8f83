"""The backward engine under vmap: ``vmap(lambda c: autograd.grad(y, x, c))(eye)`` (what
jacrev does) runs every backward formula on batched cotangents; the rows must equal
torch.func.jacrev's Jacobian, op family by op family."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

rng = np.random.default_rng(0)


def f(*s):
    return rng.standard_normal(s).astype(np.float32)


CASES = {
    "cross_entropy": (lambda L, F: lambda x, t: F.cross_entropy(x, t),
                      lambda: (f(4, 5), np.array([1, 0, 3, 2]))),
    "cross_entropy_none": (lambda L, F: lambda x, t: F.cross_entropy(x, t, reduction="none"),
                           lambda: (f(4, 5), np.array([1, 0, 3, 2]))),
    "layer_norm": (lambda L, F: lambda x, w: F.layer_norm(x, (5,), w),
                   lambda: (f(3, 5), f(5))),
    "gelu_softmax": (lambda L, F: lambda x: F.softmax(F.gelu(x), -1), lambda: (f(3, 5),)),
    "embedding": (lambda L, F: lambda i, w: F.embedding(i, w),
                  lambda: (np.array([[1, 2], [0, 1]]), f(4, 3))),
    "conv2d": (lambda L, F: lambda x, w: F.conv2d(x, w), lambda: (f(1, 2, 5, 5), f(3, 2, 3, 3))),
    "max_pool2d": (lambda L, F: lambda x: F.max_pool2d(x, 2), lambda: (f(1, 2, 4, 4),)),
    "linear": (lambda L, F: lambda x, w, b: F.linear(x, w, b), lambda: (f(3, 4), f(2, 4), f(2))),
    "sdpa": (lambda L, F: lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
             lambda: (f(2, 3, 4), f(2, 3, 4), f(2, 3, 4))),
    "indexing": (lambda L, F: lambda x: x[[0, 2]].sum(0) * x[1], lambda: (f(3, 4),)),
    "reductions": (lambda L, F: lambda x: x.var(1) + x.amax(0).sum() + x.max(1).values,
                   lambda: (f(3, 4),)),
    "joining": (lambda L, F: lambda x, y: L.cat([x, y], 1).sum(0) + L.stack([x, y]).prod(0).sum(),
                lambda: (f(3, 4), f(3, 4))),
    "broadcast": (lambda L, F: lambda x, y: (x + y).exp(), lambda: (f(3, 1), f(4))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmapped_vjp_is_the_jacobian(name):
    make, data = CASES[name]
    arrs = data()
    ex = [ember.tensor(a).requires_grad_() if a.dtype.kind == "f" else ember.tensor(a)
          for a in arrs]
    diff = [x for x in ex if x.requires_grad]
    y = make(ember, EF)(*ex)
    n = y.numel()
    got = ember.func.vmap(lambda c: ember.autograd.grad(y, diff, c.reshape(y.shape),
                                                        retain_graph=True))(ember.eye(n))
    nums = tuple(i for i, a in enumerate(arrs) if a.dtype.kind == "f")
    want = torch.func.jacrev(make(torch, TF), argnums=nums)(*[torch.tensor(a) for a in arrs])
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy().reshape(n, -1), t.reshape(n, -1).numpy(),
                                   rtol=1e-4, atol=1e-5)
