"""A short, runnable tour of what ember does today (``make demo`` runs it).

Each section prints what a PyTorch user would expect to see, written exactly as PyTorch code.
"""
import ember as torch


def section(title):
    print(f"\n=== {title} ===")


def main():
    torch.manual_seed(0)

    section("tensors are strided views of a storage")
    x = torch.arange(12.).view(3, 4)
    t = x.t()
    print(x)
    print("x.t() shares storage:", t.data_ptr() == x.data_ptr(), "strides", t.stride(),
          "contiguous:", t.is_contiguous())
    try:
        t.view(12)
    except RuntimeError as e:
        print("t.view(12) ->", str(e)[:70], "...")
    print("t.reshape(12) copies only because it must:", t.reshape(12).data_ptr() != x.data_ptr())
    x[0, 0] = 100.0
    print("write through x is seen by the view t[0, 0] =", t[0, 0].item())

    section("type promotion follows PyTorch")
    i = torch.tensor([1, 2, 3])
    print("int64 + 2.5 ->", (i + 2.5).dtype, "| float32 + float64 0-dim ->",
          (torch.ones(2) + torch.tensor(1.0, dtype=torch.float64)).dtype)

    section("autograd records a graph as Python runs")
    w = torch.randn(4, 2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    y = (x @ w + b).relu().sum()
    print("y =", y)
    print("y.grad_fn.next_functions =", y.grad_fn.next_functions)
    y.backward()
    print("w.grad =", w.grad)

    section("higher-order gradients")
    z = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = torch.autograd.grad((z ** 3).sum(), z, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), z)
    print("d/dz z^3 =", g.detach(), " d2/dz2 =", h)

    section("a tiny regression trained with plain tensor ops")
    true_w = torch.tensor([[2.0], [-3.0]])
    data = torch.randn(256, 2)
    target = data @ true_w + 0.5 + 0.1 * torch.randn(256, 1)
    w = torch.zeros(2, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for step in range(200):
        loss = ((data @ w + b - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
        if step % 50 == 0 or step == 199:
            print(f"step {step:3d}  loss {loss.item():.6f}")
    print("learned w =", w.detach().view(-1), " b =", b.detach())


if __name__ == "__main__":
    main()
