"""Top-level functions written in other ember ops (COMPOSITE: their gradients, tracing and
vmap come from the ops they are made of): diff, isin, cov, corrcoef, trapezoid / trapz /
cumulative_trapezoid, renorm, block_diag, cartesian_prod, combinations, vander, inner, dist,
addr, rsub, the *_scatter ops, index_reduce, histogram / histogramdd, unravel_index,
nonzero_static, scalar_tensor and a few small glue functions (is_same_size, typename,
get_device, split_with_sizes, chain_matmul, frobenius_norm, nuclear_norm, fill).
"""
import builtins
import itertools

import numpy as np

from ..core import dtype as D
from ..core.strides import wrap_dim
from ..core.tensor import Tensor
from ..dispatch import wrap, torch_name, fill_scalar
from ..dispatch_args import int_arg, tensor_args
from ..return_types import _make
from .registry import OpDef, COMPOSITE, EXTERN, FUNCTIONS as F, METHODS, OPS, register
from ..core.meta import MetaData
from . import meta_rules as M
from .dtype_support import FLOAT32_64

histogram_t = _make("histogram", ("hist", "bin_edges"))
histogramdd_t = _make("histogramdd", ("hist", "bin_edges"))


def _reg(fn, method=True, kind=COMPOSITE, name=None, **fields):
    name = name or fn.__name__
    return register(OpDef(name, kind, decomp=fn if kind == COMPOSITE else None, method=method,
                          **fields), fn)


# ---- differences and integrals ------------------------------------------------------------
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim` (logical xor for bool tensors), with optional
    values prepended / appended first.

    >>> ember.diff(ember.tensor([1, 3, 6]))
    tensor([2, 3])
    """
    if type(n) is not int or n >= 1 << 63:
        n = int_arg(n, "diff", "n", 2)
    if input.dim() == 0:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, input.dim())
    parts = [t for t in (prepend, input, append) if t is not None]
    x = F["cat"](parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        hi, lo = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = F["logical_xor"](hi, lo) if x.dtype is D.bool_ else hi - lo
    return x


def _trapezoid_spacing(y, x, dx, dim):
    if x is not None:
        if x.dim() == 1:
            shape = [1] * y.dim()
            shape[dim] = x.shape[0]
            x = x.reshape(shape)
        return diff(x, dim=dim)
    return 1.0 if dx is None else dx


def _check_x(x, name):
    if x is not None and not isinstance(x, Tensor):   # torch: a number goes in dx=
        raise TypeError(f"{name}() received an invalid combination of arguments: x must be a "
                        f"Tensor, not {type(x).__name__} (pass a spacing as dx=)")


def _no_bool(y, x, name):
    if y.dtype is D.bool_:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if x is not None and x.dtype is D.bool_:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along `dim`, with sample points `x` or a constant spacing `dx`.

    >>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0]))
    tensor(4.)
    """
    _check_x(x, "trapezoid")
    dim = wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:   # (torch answers before its dtype checks: zeros of y's dtype)
        return (y.sum(dim) * 0).to(y.dtype)
    _no_bool(y, x, "trapezoid")
    yf = y if y.dtype._kind >= 2 else y.to(D.get_default_dtype())
    n = yf.shape[dim]
    mid = (yf.narrow(dim, 1, n - 1) + yf.narrow(dim, 0, n - 1)) / 2
    return (mid * _trapezoid_spacing(yf, x, dx, dim)).sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along `dim` (one element shorter than `y`).

    >>> ember.cumulative_trapezoid(ember.tensor([1.0, 2.0, 3.0]))
    tensor([1.5000, 4.0000])
    """
    _check_x(x, "cumulative_trapezoid")
    dim = wrap_dim(dim, y.dim())
    _no_bool(y, x, "cumulative_trapezoid")
    yf = y if y.dtype._kind >= 2 else y.to(D.get_default_dtype())
    n = yf.shape[dim]
    if n == 0:
        return yf
    mid = (yf.narrow(dim, 1, n - 1) + yf.narrow(dim, 0, n - 1)) / 2
    return (mid * _trapezoid_spacing(yf, x, dx, dim)).cumsum(dim)


# ---- statistics ---------------------------------------------------------------------------
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) of `input` over its columns (observations).

    >>> ember.cov(ember.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if isinstance(input, Tensor) and input.dtype is D.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(D.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        wsum = float(n_obs)
        norm = wsum - correction
    else:
        w = w.to(x.dtype.to_real())       # (weights are real, also for a complex x)
        wsum_t = w.sum()
        avg = (x * w).sum(1) / wsum_t
        if correction == 0:
            norm = wsum_t
        elif aweights is None:
            norm = wsum_t - correction
        else:
            norm = wsum_t - correction * (w * aweights).sum() / wsum_t
    xm = x - avg.unsqueeze(1)
    xw = xm * w if w is not None else xm
    xt = xm.mT.conj() if xm.dtype.is_complex else xm.mT    # (the Hermitian product)
    c = (xw @ xt) / F["clamp"](norm, min=0) if isinstance(norm, Tensor) else \
        (xw @ xt) / builtins.max(norm, 0)
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
    """Pearson correlation coefficients of the rows of `input`, clipped to [-1, 1]."""
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but "
                           f"got an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    diag = c.diagonal()
    d = (diag.real if c.dtype.is_complex else diag).sqrt()
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    if c.dtype.is_complex:     # (real and imaginary parts clipped each, as torch does)
        return F["complex"](F["clamp"](c.real, -1, 1), F["clamp"](c.imag, -1, 1))
    return F["clamp"](c, -1, 1)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` occurs in `test_elements` (either may be a scalar).

    >>> ember.isin(ember.tensor([1, 2, 3]), ember.tensor([2, 5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        f"expected one of: (Tensor, Tensor), (Number, Tensor), (Tensor, Number)")
    for x in (elements, test_elements):
        if not isinstance(x, (Tensor, int, float, np.number)):    # (a list, str or None)
            raise TypeError(f"isin() received an invalid combination of arguments - got "
                            f"({type(elements).__name__}, {type(test_elements).__name__}), "
                            f"but expected one of: (Tensor, Tensor), (Number, Tensor), "
                            f"(Tensor, Number)")
        if isinstance(x, Tensor) and (x.dtype is D.bool_ or x.dtype.is_complex):
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{torch_name(x.dtype)}")
        if isinstance(x, bool):
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    e = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    t = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    try:
        r = np.isin(e, t, invert=invert)
    except MetaData:    # a meta input: np.isin's result is C-contiguous, elements' shape
        ins = [x for x in (elements, test_elements) if isinstance(x, Tensor)]
        r = M.out_array(np.shape(e), np.bool_, *ins)
    return wrap(r, D.bool_)


# ---- construction -------------------------------------------------------------------------
def block_diag(*tensors):
    """The tensors (0-, 1- or 2-d) on the diagonal of one matrix, zeros elsewhere."""
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not mats:
        return wrap(np.zeros((1, 0), D.get_default_dtype().np), D.get_default_dtype())
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = D.promote_types(dt, m.dtype)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows = []
    left = 0
    for m in mats:
        right = cols - left - m.shape[1]
        rows.append(_pad_cols(m.to(dt), left, right))
        left += m.shape[1]
    return F["cat"](rows, 0)


def _pad_cols(m, left, right):
    z = F["zeros"]
    parts = [z(m.shape[0], left, dtype=m.dtype, device=m.device), m,
             z(m.shape[0], right, dtype=m.dtype, device=m.device)]
    return F["cat"](parts, 1)


def cartesian_prod(*tensors):
    """Every combination of one element of each 1-d tensor, as rows (itertools.product)."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = F["meshgrid"](*tensors, indexing="ij")
    return F["stack"]([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-d tensor's elements, as rows."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]      # (an op on input, so autograd and forward AD see it)
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(make(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return input[wrap(idx, D.int64).to(input.device)]     # (a meta input: a meta index)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d tensor: columns x**(N-1), ..., x, 1 (reversed with
    increasing=True)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int_arg(N, "vander", "N", 2)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype.is_floating_point or x.dtype.is_complex else D.int64
    if n == 0:
        return x.to(dt).unsqueeze(1)[:, :0]
    cols = [F["ones_like"](x, dtype=dt)] + [None] * (n - 1)
    xd = x.to(dt)
    for k in range(1, n):   # running products: x**k without pow's integer rules
        cols[k] = cols[k - 1] * xd
    m = F["stack"](cols, 1)
    return m if increasing else m.flip(1)


def linalg_vander(x, *, N=None):
    """torch.linalg.vander: increasing powers along the last dim, batched over the others."""
    tensor_args("linalg_vander", ("x", 1, x))
    if x.dim() < 1:          # torch reads a 0-d x as one value: shape (1, N)
        x = x.reshape(1)
    n = x.shape[-1] if N is None else int_arg(N, "linalg_vander", "N", 2)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype is D.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer "
                           "tensors, but got Bool")
    dt = x.dtype
    cols = [F["ones_like"](x, dtype=dt)]
    xd = x.to(dt)
    for _ in range(1, n):
        cols.append(cols[-1] * xd)
    return F["stack"](cols, -1)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-dim tensor holding `s`, of the default float dtype unless `dtype` says."""
    if not isinstance(s, (bool, int, float, complex, np.generic)) and not (
            isinstance(s, Tensor) and s.dim() == 0):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    if not isinstance(s, (Tensor, np.generic)):    # (a Scalar: torch's overflow checks)
        s = fill_scalar(s, D.to_dtype(dtype or D.get_default_dtype()))
    t = F["tensor"](s, dtype=dtype or D.get_default_dtype(), device=device)
    return t.requires_grad_() if requires_grad else t


def unravel_index(indices, shape):
    """The coordinates of flat `indices` in a tensor of `shape` (a tuple of int64 tensors)."""
    if isinstance(indices, Tensor) and (indices.dtype.is_floating_point or
                                        indices.dtype.is_complex or indices.dtype is D.bool_):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    idx = (indices._data if isinstance(indices, Tensor) else np.asarray(indices)).astype(np.int64)
    coords = []
    try:
        for s in reversed(shape):   # torch checks no range: floor-mod arithmetic, as here
            coords.append(np.mod(idx, s) if s else idx * 0)
            idx = np.floor_divide(idx, s) if s else idx * 0
    except MetaData:    # meta indices: one int64 result per dim, in the indices' dim order
        coords = [M.out_array(idx.shape, np.int64, indices, like=indices) for _ in shape]
    return tuple(wrap(c, D.int64) for c in reversed(coords))


# ---- products and distances ---------------------------------------------------------------
def inner(input, other, *, out=None):
    """Sum of products over the last dims (a scalar times a tensor for 0-dim inputs)."""
    if input.dim() == 0 or other.dim() == 0:
        r = input * other
    else:
        if input.shape[-1] != other.shape[-1]:
            raise RuntimeError(f"inner() the last dimension must match on both input tensors "
                               f"but got shapes {list(input.shape)} and {list(other.shape)}")
        r = F["tensordot"](input, other, ([-1], [-1]))
    return out.copy_(r) if out is not None else r


def dist(input, other, p=2):
    """The p-norm of input - other."""
    if isinstance(p, (str, list, tuple, dict, type(None))):   # (torch's p is a Scalar)
        raise TypeError(f"dist(): argument 'p' (position 3) must be Number, not "
                        f"{type(p).__name__}")
    return F["norm"](input - other, p)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D"
                           if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    outer = F["outer"](vec1, vec2)
    if input.dtype is D.bool_ and outer.dtype is D.bool_:
        r = (input & bool(beta)) | (outer & bool(alpha))
    else:
        prod = outer if alpha == 1 else outer * alpha
        r = prod if beta == 0 else (input + prod if beta == 1 else input * beta + prod)
    return out.copy_(r) if out is not None else r


def rsub(input, other, *, alpha=1):
    """other - alpha * input (torch.rsub)."""
    return F["sub"](other, input, alpha=alpha)


def chain_matmul(*matrices, out=None):
    """The product of the matrices (older name of linalg.multi_dot)."""
    if len(matrices) == 1:
        return matrices[0].clone()
    for i, (a, b) in enumerate(zip(matrices, matrices[1:])):   # (torch: linalg.multi_dot's)
        if a.dim() == 2 and b.dim() == 2 and a.shape[1] != b.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(a.shape)} and {list(b.shape)} cannot be multiplied")
    r = matrices[0]
    for m in matrices[1:]:
        r = r @ m
    return out.copy_(r) if out is not None else r


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The Frobenius norm over `dim` (torch.frobenius_norm)."""
    if isinstance(dim, int) and not isinstance(dim, bool):
        dim = (dim,)
    if not isinstance(dim, (list, tuple)):
        raise TypeError(f"frobenius_norm(): argument 'dim' (position 2) must be tuple of ints, "
                        f"not {type(dim).__name__}")
    return F["norm"](input, "fro", dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of singular values over the last two dims (or the two dims `dim`)."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if isinstance(dim, int):       # torch: an int fills both entries of its int[2]
        dim = (dim, dim)
    if dim is not None and not isinstance(dim, (list, tuple)):
        raise TypeError(f"nuclear_norm(): argument 'dim' must be tuple of ints, not "
                        f"{type(dim).__name__}")
    d0, d1 = (-2, -1) if dim is None else dim
    if input.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if input.dtype in (D.float16, D.bfloat16):   # matrix_norm refuses them before the SVD
        raise RuntimeError("linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{torch_name(input.dtype)}")
    d0, d1 = wrap_dim(d0, input.dim()), wrap_dim(d1, input.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    x = input.movedim((d0, d1), (-2, -1))
    r = OPS["linalg_svdvals"].fn(x).sum(-1)
    if keepdim:
        r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
    return out.copy_(r) if out is not None else r


# ---- histograms ---------------------------------------------------------------------------
def _c_name(dt):
    """A dtype as torch's C++ messages name it (double, float, long int, bool)."""
    return {"Double": "double", "Float": "float", "Long": "long int", "Int": "int",
            "Bool": "bool", "Half": "c10::Half", "BFloat16": "c10::BFloat16"}.get(
                torch_name(dt), torch_name(dt).lower())


def _hist_check(input, name="histogram"):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{torch_name(input.dtype)}'")


def _outer_edges(a, range):
    """The outermost bin edges: `range`, else the data's min and max; equal ones are
    widened by 1/2 each way (numpy's rule, which torch follows)."""
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
    else:
        lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    if lo > hi:
        raise ValueError("max must be larger than min in range parameter.")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """Histogram of the values: (hist, bin_edges), `bins` a count or the edges."""
    _hist_check(input)
    if isinstance(bins, Tensor) and bins.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the "
                           f"same dtype, but got input with dtype {_c_name(input.dtype)} and "
                           f"bins for dimension 0 with dtype {_c_name(bins.dtype)}")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got "
                           f"input({_c_name(input.dtype)}), and weight({_c_name(weight.dtype)})")
    a = input._data.reshape(-1)
    w = None if weight is None else weight._data.reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins._data
    else:
        bins = int_arg(bins, "histogram", "bins", 2)
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                               f"dimension 0")
        lo, hi = _outer_edges(a, range)
        if lo > hi:
            raise RuntimeError("torch.histogram(): min should not exceed max, but got min "
                               f"{lo} max {hi}")
        edges = np.linspace(lo, hi, bins + 1).astype(a.dtype)
    h, _ = np.histogram(a, edges, weights=w, density=density)
    return histogram_t(wrap(h.astype(a.dtype), input.dtype), wrap(edges, input.dtype))


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """The multi-dimensional histogram of N points in D dims (input of shape (N, D))."""
    _hist_check(input)
    a = input._data.reshape(-1, input.shape[-1])
    d = a.shape[1]
    if isinstance(bins, int):
        bins = [bins] * d
    if isinstance(bins, (list, tuple)) and len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should "
                           f"have {2 * d} elements, but got {len(range)}")
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        edges = [b._data for b in bins]
    else:
        rng = None if range is None else [(range[2 * i], range[2 * i + 1]) for i in
                                          builtins.range(d)]
        edges = []
        for i in builtins.range(d):
            lo, hi = _outer_edges(a[:, i], rng[i] if rng else None)
            edges.append(np.linspace(lo, hi, bins[i] + 1).astype(a.dtype))
    w = None if weight is None else weight._data.reshape(-1)
    h, _ = np.histogramdd(a, edges, weights=w, density=density)
    return histogramdd_t(wrap(h.astype(a.dtype), input.dtype),
                         [wrap(np.asarray(e, a.dtype), input.dtype) for e in edges])


# ---- registration: one OpDef each (methods where torch has them) ----------------------------
diff = _reg(diff)
trapezoid = _reg(trapezoid, method=False)
trapz = _reg(trapz, method=False)
cumulative_trapezoid = _reg(cumulative_trapezoid, method=False)
cov = _reg(cov)
corrcoef = _reg(corrcoef)
isin = _reg(isin, method=False, kind=EXTERN)
block_diag = _reg(block_diag, method=False)
cartesian_prod = _reg(cartesian_prod, method=False)
combinations = _reg(combinations, method=False)
vander = _reg(vander, method=False)
linalg_vander = register(OpDef("linalg_vander", COMPOSITE, decomp=linalg_vander,
                               function=False, method=False), linalg_vander)
scalar_tensor = _reg(scalar_tensor, method=False, kind=EXTERN,
                     uint64_scalars={"s"})     # (a Scalar: torch's parser takes uint64)
# torch.unravel_index is Python code that reads indices.is_complex() first
unravel_index = _reg(unravel_index, method=False, kind=EXTERN,
                     torch_python=("is_complex", (0,)))
inner = _reg(inner)
dist = _reg(dist)
addr = _reg(addr)
rsub = _reg(rsub, method=False)
chain_matmul = _reg(chain_matmul, method=False)
frobenius_norm = _reg(frobenius_norm, method=False)
nuclear_norm = _reg(nuclear_norm, method=False, bool_overload=True)   # (x, keepdim: bool)
histogram = _reg(histogram, kind=EXTERN,
    dtypes=FLOAT32_64, dtype_kernel="histogramdd")
histogramdd = _reg(histogramdd, method=False, kind=EXTERN)
METHODS["addr_"] = lambda self, vec1, vec2, *, beta=1, alpha=1: self.copy_(
    addr(self, vec1, vec2, beta=beta, alpha=alpha))
