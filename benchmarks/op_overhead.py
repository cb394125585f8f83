"""op_overhead: microseconds per call of small (8, 8) float32 ops, the per-op floor.

Inputs: a, b = ones(8, 8); x, w, c = randn(8, 8) with requires_grad=True. Each case is the
expression its name shows, called in a loop: the elementwise and view rows on a and b, the
three last rows on ``((x @ w).relu() * c).sum()`` (with ``.backward()``; under ``no_grad``;
under ``inference_mode``). Gradients accumulate into x.grad etc. across calls (never zeroed).
"""


def cases(torch):
    a = torch.ones(8, 8)
    b = torch.ones(8, 8)
    x = torch.randn(8, 8, requires_grad=True)
    w = torch.randn(8, 8, requires_grad=True)
    c = torch.randn(8, 8, requires_grad=True)

    def fwd_bwd():
        ((x @ w).relu() * c).sum().backward()

    def fwd_no_grad():
        with torch.no_grad():
            ((x @ w).relu() * c).sum()

    def fwd_inference():
        with torch.inference_mode():
            ((x @ w).relu() * c).sum()

    return {
        "a + b": lambda: a + b,
        "a * b": lambda: a * b,
        "a @ b": lambda: a @ b,
        "relu": lambda: a.relu(),
        "sum": lambda: a.sum(),
        "x[1:3]": lambda: a[1:3],
        "x.t().contiguous()": lambda: a.t().contiguous(),
        "fwd+bwd ((a@b).relu()*c).sum()": fwd_bwd,
        "fwd under no_grad": fwd_no_grad,
        "fwd under inference_mode": fwd_inference,
    }


UNIT = "us/call"
SCALE = 1e6
LOWER_IS_BETTER = True
