"""matmul: BLAS throughput in GFLOP/s (2*M*N*K flops per product), float32 randn inputs.

Cases: ``a @ b`` with a, b (2048, 2048); ``torch.bmm(x, y)`` and
``torch.einsum("bij,bjk->bik", x, y)`` with x, y (64, 256, 256).
"""


def cases(torch):
    a = torch.randn(2048, 2048)
    b = torch.randn(2048, 2048)
    x = torch.randn(64, 256, 256)
    y = torch.randn(64, 256, 256)
    out = {
        "2048^2 matmul": (lambda: a @ b, 2 * 2048 ** 3),
        "bmm (64,256,256)": (lambda: torch.bmm(x, y) if hasattr(torch, "bmm") else x @ y,
                             2 * 64 * 256 ** 3),
    }
    if hasattr(torch, "einsum"):
        out["einsum bij,bjk->bik"] = (lambda: torch.einsum("bij,bjk->bik", x, y),
                                      2 * 64 * 256 ** 3)
    return out


UNIT = "GFLOP/s"
LOWER_IS_BETTER = False
