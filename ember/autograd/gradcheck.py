"""gradcheck / gradgradcheck: compare analytic gradients with central finite differences."""
import numpy as np


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_outputs(func, inputs):
    """The differentiable outputs: floating or complex, and recorded (as torch's gradcheck,
    an output that does not require grad, like an LU pivot or a histogram, is left out)."""
    from ..core.tensor import Tensor
    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and o.dtype._kind >= 2
            and o._requires_grad]


class GradcheckError(RuntimeError):
    pass


def _numerical_jacobian(func, inputs, diff_idx, eps):
    """J[k][p][j] = d out_j / d input_k[p] (p in logical order) by central differences.

    The function runs with grad mode as the caller has it (gradgradcheck's function calls
    autograd.grad itself); each input is perturbed in place through its own strides, so
    non-contiguous inputs work."""
    jac = []
    for k in diff_idx:
        x = inputs[k]._data
        cols = []
        for p in np.ndindex(x.shape):
            orig = x[p].copy()
            x[p] = orig + eps
            plus = [o._data.astype(np.float64) for o in _flat_outputs(func, inputs)]
            x[p] = orig - eps
            minus = [o._data.astype(np.float64) for o in _flat_outputs(func, inputs)]
            x[p] = orig
            cols.append([(a - b).reshape(-1) / (2 * eps) for a, b in zip(plus, minus)])
        jac.append(cols)
    return jac


def _analytic_jacobian(func, inputs, diff_idx):
    from .engine import grad as autograd_grad
    from ..ops.creation import zeros_like
    outs = _flat_outputs(func, inputs)
    jac = []   # jac[j][i] = list over k of gradient arrays
    for o in outs:
        rows = []
        for i in range(o._data.size):
            go = zeros_like(o)
            go._data[np.unravel_index(i, go._data.shape)] = 1   # go may be non-contiguous
            gs = autograd_grad((o,), tuple(inputs[k] for k in diff_idx), (go,),
                               retain_graph=True, allow_unused=True)
            rows.append([np.zeros(inputs[k]._data.size) if g is None else
                         g._data.astype(np.float64).reshape(-1)
                         for g, k in zip(gs, diff_idx)])
        jac.append(rows)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """True if the analytic gradients of `func` at `inputs` match finite differences."""
    from ..core.tensor import Tensor
    inputs = _as_tuple(inputs)
    diff_idx = [k for k, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for k in diff_idx:
        if inputs[k].dtype.name != "float64":
            import warnings
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of "
                          "double precision floating point. ", UserWarning, stacklevel=2)
    num = _numerical_jacobian(func, inputs, diff_idx, eps)
    ana = _analytic_jacobian(func, inputs, diff_idx)
    for kk, k in enumerate(diff_idx):
        for j in range(len(ana)):
            a = np.stack([ana[j][i][kk] for i in range(len(ana[j]))], axis=1) if ana[j] else \
                np.zeros((inputs[k]._data.size, 0))
            n = np.stack([num[kk][p][j] for p in range(len(num[kk]))], axis=0) if num[kk] else \
                np.zeros((0, a.shape[1]))
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                msg = (f"Jacobian mismatch for output {j} with respect to input {k},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **kwargs):
    """gradcheck of the gradient itself (second derivatives)."""
    from ..core.tensor import Tensor
    from .engine import grad as autograd_grad
    from ..ops.random import randn, Generator
    inputs = _as_tuple(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        g = Generator().manual_seed(0)
        grad_outputs = tuple(randn(o.shape, dtype=o.dtype, generator=g).requires_grad_()
                             for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    diff_idx = [k for k, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    n_in = len(inputs)

    def first_grad(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _flat_outputs(func, ins)
        gs = autograd_grad(outs, tuple(ins[k] for k in diff_idx), gos, create_graph=True,
                           allow_unused=True)
        return tuple(g for g in gs if g is not None)
    return gradcheck(first_grad, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
