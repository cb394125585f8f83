"""func_workloads: ember.func beside torch.func (issue 14's performance rows).

- per-sample gradients of the benchmark MLP (784-512-512-10, batch 128) with
  ``vmap(grad(loss), in_dims=(None, 0, 0))``, and the same gradients by a Python loop over
  the samples (one forward/backward each), in each library;
- an ensemble of 8 copies of that MLP: ``vmap(functional_call)`` over ``stack_module_state``,
  and a loop over the 8 models;
- ``jacrev`` and ``jacfwd`` of a 64 -> 64 tanh MLP at one point.

Each case runs the same code with ``torch`` bound to ember or to PyTorch; `__main__` times the
pair. The targets compare rows: vmap(grad) >= 10x faster than the loop (ember), within 1.5x of
torch.func; the vmap ensemble >= 4x faster than the loop; jacrev/jacfwd within 2x of torch.
"""
import copy

BATCH = 128
MODELS = 8


def _mlp(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def per_sample_setup(torch):
    torch.manual_seed(0)
    model = _mlp(torch)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = torch.randn(BATCH, 784)
    y = torch.randint(10, (BATCH,))
    F = torch.nn.functional
    func = torch.func

    def loss(p, xi, yi):
        out = func.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))
    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def vmapped():
        return per_sample(params, x, y)

    plist = list(model.parameters())

    def loop():
        out = []
        for i in range(BATCH):
            lo = F.cross_entropy(model(x[i:i + 1]), y[i:i + 1])
            out.append(torch.autograd.grad(lo, plist))
        return out
    return vmapped, loop


def ensemble_setup(torch):
    torch.manual_seed(0)
    models = [_mlp(torch).eval() for _ in range(MODELS)]
    x = torch.randn(BATCH, 784)
    func = torch.func
    params, buffers = func.stack_module_state(models)
    params = {k: v.detach() for k, v in params.items()}
    base = copy.deepcopy(models[0])      # (torch's tutorial uses a 'meta' copy)
    run = func.vmap(lambda p, b, xx: func.functional_call(base, (p, b), (xx,)),
                    in_dims=(0, 0, None))

    def vmapped():
        with torch.no_grad():
            return run(params, buffers, x)

    def loop():
        with torch.no_grad():
            return [m(x) for m in models]
    return vmapped, loop


def jac_setup(torch):
    torch.manual_seed(0)
    w1, b1 = torch.randn(64, 64) / 8, torch.randn(64)
    w2, b2 = torch.randn(64, 64) / 8, torch.randn(64)
    x = torch.randn(64)

    def f(x):
        return torch.tanh(torch.tanh(x @ w1.T + b1) @ w2.T + b2)
    jr, jf = torch.func.jacrev(f), torch.func.jacfwd(f)
    return (lambda: jr(x)), (lambda: jf(x))


def cases(torch):
    ps_vmap, ps_loop = per_sample_setup(torch)
    ens_vmap, ens_loop = ensemble_setup(torch)
    jr, jf = jac_setup(torch)
    return {
        "per-sample grads vmap(grad) MLP b128": ps_vmap,
        "per-sample grads loop MLP b128": ps_loop,
        "ensemble x8 vmap(functional_call)": ens_vmap,
        "ensemble x8 loop over models": ens_loop,
        "jacrev 64->64 tanh MLP": jr,
        "jacfwd 64->64 tanh MLP": jf,
    }


UNIT = "ms"
SCALE = 1e3
LOWER_IS_BETTER = True
