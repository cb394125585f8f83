"""The composite ops of nn.functional: softmax, log_softmax, gelu and embedding (layer_norm
and rms_norm in nn_norm_ops.py, sdpa in nn_attention_ops.py, cross_entropy and nll_loss in
nn_loss_ops.py).

Each is one OpDef of kind COMPOSITE whose `decomp` is the op written in other ember ops
(autograd, tracing and export come from those), and whose optional `fused` is the eager fast
path: one NumPy computation (or a fused C kernel) that records one node, with the op's own
derivative formulas (`grads`, in ember ops). One choice function per op, the public one,
picks the path on every call:

- a dispatch mode that must see ember ops (a tracer, vmap...) is active: the decomposition;
- an observing mode (the profiler) is on top: it gets the call, and times what runs below;
- otherwise: the fast path where it applies (which tries the fused C kernel first), else
  the decomposition.

Fused C kernels are made by the compiler from compositions declared here as `FusedKernel`
slots; the compiler plugs itself in as their provider when it is imported
(`set_fused_provider`, called by ember/compiler/eager.py), so nothing here names it.
"""
import math

import numpy as np

from . import onnx_rules as _ox  # the ONNX mappings of the OpDefs here
from ..core import dtype as D
from ..core.tensor import Tensor
from ..dispatch import wrap, run_meta
from ..dispatch_args import int_arg, tensor_args, ARG_ERRORS, raise_as_torch
from ..core.meta import MetaData, MetaArray
from ..autograd.grad_mode import state, call_mode, no_grad
from ..autograd import graph
from .registry import OpDef, COMPOSITE, EXTERN, FUNCTIONS, register
from . import batch_rules as _br
from .pointwise_math import _erf_kernel
from .lowp_compute import LOWP, widened, rounded
from .reshaping import one_hot  # noqa: F401  (cross_entropy's backward reads it from here)
from .dtype_support import FLOATING, check_dtype

FLOATS = (D.float32, D.float64)


# ---- the choice under a dispatch mode ---------------------------------------------------
def decomposing():
    """Whether an active dispatch mode must see ember ops (a tracer, vmap...): every mode
    but an observing one (the profiler marks itself ``observing = True``) does."""
    for m in state.modes:
        if not getattr(m, "observing", False):
            return True
    return False


def under_mode(op, fn, args):
    """A call of composite `op` (public function `fn`) while a dispatch mode is active: an
    observing mode on top gets the call and runs `fn` below itself, so it times the path
    that runs unobserved; any other mode sees the decomposition's ember ops."""
    top = state.modes[-1]
    # a mode that batches (vmap) takes the whole call when the op has a batching rule
    if getattr(top, "observing", False) or (op.batch is not None and
                                            getattr(top, "batching", False)):
        return call_mode(op, fn, args, {})
    return op.decomp(*args)


class _Ember:
    """``E.where(...)``: the registry's public function at call time (behind the mode seam),
    for the decompositions, which must be seen op by op."""

    def __getattr__(self, name):
        return FUNCTIONS[name]


E = _Ember()


def composite(name, fn, decomp, **fields):
    """Register `fn`, the choice function, as the COMPOSITE op `name`. It checks the mode
    stack itself, and applies its autocast policy (`amp=`) itself with
    dispatch.autocast_hook / autocast_args, so the registry does not wrap it again."""
    op = OpDef(name, COMPOSITE, decomp=decomp, **fields)
    # the choice function checks its dtypes itself (dtype_support.check_dtype): softmax's
    # dtype= argument decides whether an integer input is refused
    fn._dispatches = fn._autocasts = fn._checks_dtypes = True
    register(op, fn)
    return op


def composition(name, fn, **fields):
    """Register `fn`, a function written in ember ops (a loss, a pooling, a convolution of
    nn.functional), as the COMPOSITE op `name`: it is its own decomposition. An observing mode
    (the profiler) gets the whole call; any other mode (a tracer, vmap) sees its ops one by
    one; its autocast policy (`amp=`) is applied by the registry's wrapper. Returns the
    published function, which the caller binds to the name:
    ``mse_loss = composition("mse_loss", mse_loss, amp=FP32)``."""
    op = OpDef(name, COMPOSITE, decomp=fn, function=False, method=False, **fields)

    def dispatched(*args, **kwargs):
        if state.modes and getattr(state.modes[-1], "observing", False):
            return call_mode(op, fn, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except MetaData:     # a meta input met NumPy in `fn`: the op's meta rule
            return run_meta(op, args, kwargs)
        except ARG_ERRORS as exc:   # (free until something raises) torch's answer instead
            raise_as_torch(op, fn, args, kwargs, exc)
    dispatched.__doc__ = fn.__doc__
    dispatched.__wrapped__ = fn
    dispatched._dispatches = True
    return register(op, dispatched)


def whole_call(name, fn, **fields):
    """Register `fn` (an nn.functional function that reads values in Python or builds arrays
    in NumPy: max_unpool, ctc_loss, reflect padding...) as an EXTERN op that every mode sees
    as one call: a tracer records one node that runs `fn` at replay. Returns the published
    function: ``ctc_loss = whole_call("ctc_loss", ctc_loss, amp=FP32)``."""
    return register(OpDef(name, EXTERN, function=False, method=False, **fields), fn)


# ---- fused C kernels: slots the compiler fills ------------------------------------------
FUSED_KERNELS = []         # every FusedKernel, for the provider
_provider = [None]


def _no_kernel(*args):
    return None


class FusedKernel:
    """The slot of one fused eager kernel: `fn`, a composition in ember ops, which the
    provider (the compiler, once imported) runs as one C kernel. ``slot.run(*args)`` gives
    the kernel's result, or None (no provider, a small or unsuited input): the caller then
    computes the same another way."""

    def __init__(self, fn, name, min_elements=None):
        self.fn, self.name, self.min_elements = fn, name, min_elements
        self.kernel = None
        self.run = _no_kernel
        FUSED_KERNELS.append(self)
        if _provider[0] is not None:
            self._fill(_provider[0])

    def _fill(self, make_kernel):
        self.kernel = None if make_kernel is None else make_kernel(self.fn, self.name,
                                                                    self.min_elements)
        self.run = _no_kernel if self.kernel is None else self.kernel

    def __call__(self, *args):
        return self.run(*args)

    @property
    def calls(self):
        """How many calls ran the kernel."""
        return getattr(self.kernel, "calls", 0)

    @property
    def broken(self):
        """Why the kernel does not run (None when it may)."""
        if self.kernel is None:
            return "no fused-kernel provider"
        return getattr(self.kernel, "broken", None)

    def __repr__(self):
        return f"FusedKernel({self.name!r}, kernel={self.kernel!r})"


def set_fused_provider(make_kernel):
    """Make every fused kernel with ``make_kernel(fn, name, min_elements)``, which returns
    a callable giving a result or None (ember/compiler/eager.py's EagerKernel); None
    removes them."""
    _provider[0] = make_kernel
    for slot in FUSED_KERNELS:
        slot._fill(make_kernel)


# ---- softmax, log_softmax ---------------------------------------------------------------
def _shifted(input, dim, dtype):
    """`input` (cast to `dtype`) minus its max over `dim`: exp() of it cannot overflow. The
    max is detached; softmax does not change under a shift, so the gradient is exact."""
    if dtype is not None:
        input = input.to(dtype)
    if input.numel() == 0:
        return input
    with no_grad():
        m = input.amax(dim, keepdim=True) if input.dim() else input.detach()
    return input - m


def _softmax_decomp(input, dim, dtype=None):
    e = _shifted(input, dim, dtype).exp()
    return e / e.sum(dim, keepdim=True)


def _log_softmax_decomp(input, dim, dtype=None):
    z = _shifted(input, dim, dtype)
    return z - z.exp().sum(dim, keepdim=True).log()


def softmax(input, dim, dtype=None):
    """``exp(x) / sum(exp(x))`` over `dim`, computed stably."""
    try:
        if dtype is None:
            check_dtype(SOFTMAX, input)
        if type(dim) is not int:
            dim = int_arg(dim, "softmax", "dim", 2)
        if state.modes:
            return under_mode(SOFTMAX, softmax, (input, dim, dtype))
        return _softmax_decomp(input, dim, dtype)
    except ARG_ERRORS as exc:    # (a choice function is its own seam: free until it raises)
        raise_as_torch(SOFTMAX, softmax, (input, dim, dtype), {}, exc)


def log_softmax(input, dim, dtype=None):
    """``x - logsumexp(x)`` over `dim`, computed stably."""
    tensor_args("log_softmax", ("input", 1, input))
    if dtype is None:
        check_dtype(LOG_SOFTMAX, input)
    if type(dim) is not int:
        dim = int_arg(dim, "log_softmax", "dim", 2)
    if state.modes:
        return under_mode(LOG_SOFTMAX, log_softmax, (input, dim, dtype))
    return _log_softmax_decomp(input, dim, dtype)


def _softmax_jvp(tan, result, input, dim, dtype=None):
    t = tan(input).to(result.dtype)
    return result * (t - (result * t).sum(dim, keepdim=True))


def _log_softmax_jvp(tan, result, input, dim, dtype=None):
    t = tan(input).to(result.dtype)
    return t - (result.exp() * t).sum(dim, keepdim=True)


SOFTMAX = composite("softmax", softmax, _softmax_decomp, jvp=_softmax_jvp,
                    onnx=_ox.softmax,
    dtypes=FLOATING, dtype_kernel="softmax_lastdim_kernel_impl")
LOG_SOFTMAX = composite("log_softmax", log_softmax, _log_softmax_decomp, jvp=_log_softmax_jvp,
                        onnx=_ox.log_softmax,
    dtypes=FLOATING, dtype_kernel="log_softmax_lastdim_kernel_impl")


# ---- gelu -------------------------------------------------------------------------------
# The fast path: float32/float64 exact gelu records one node whose backward, in ember ops,
# is g * (Phi(x) + x * phi(x)). Big tensors run both directions as fused C kernels made from
# these same compositions; otherwise NumPy computes Phi(x), kept for the backward. While the
# backward itself is recorded (create_graph) it runs in ember ops from x, so double backward
# sees its dependence on x.
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_exact(x):
    return x * 0.5 * (1.0 + (x * _SQRT1_2).erf())


def _gelu_decomp(input, approximate="none"):
    if approximate == "none":
        return _gelu_exact(input)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (1.0 + inner.tanh())
    raise RuntimeError("approximate argument must be either none or tanh.")


def _gelu_grad_of(g, x, cdf):
    """g * (Phi(x) + x * phi(x)), given Phi(x)."""
    return g * (cdf + x * ((x * x * -0.5).exp() * _INV_SQRT_2PI))


def _gelu_backward(g, x):
    return _gelu_grad_of(g, x, (x * _SQRT1_2).erf() * 0.5 + 0.5)


_gelu_kernel = FusedKernel(_gelu_exact, "gelu")
_gelu_backward_kernel = FusedKernel(_gelu_backward, "gelu_backward")


def _gelu_grad(g, self, cdf):
    if cdf is None or state.enabled:
        if not state.enabled:
            if self.dtype in LOWP:    # in float32, rounded once (PyTorch's 16-bit kernel)
                return rounded(_gelu_grad(widened(g), widened(self), None), self.dtype)
            r = _gelu_backward_kernel.run(g, self)
            if r is not None:
                return r
        return _gelu_backward(g, self)
    return _gelu_grad_of(g, self, cdf)


def _gelu_fast(input):
    res = _gelu_kernel.run(input)
    cdf = None
    if res is None:
        a = input._data
        c = _erf_kernel(np, a * a.dtype.type(_SQRT1_2))
        if c.dtype != a.dtype or not c.flags.writeable:
            c = c.astype(a.dtype)
        np.multiply(c, 0.5, out=c)
        np.add(c, 0.5, out=c)
        res = wrap(a * c, input.dtype)
        cdf = wrap(c, input.dtype)
    if state.enabled and input._requires_grad:
        graph.record(GELU, (input,), res, {"cdf": cdf})
    return res


def _gelu_lowp(input):
    """16-bit exact gelu computed in float32 and rounded once, as PyTorch's CPU kernel."""
    res = rounded(_gelu_fast(widened(input)), input.dtype)
    if state.enabled and input._requires_grad:
        graph.record(GELU, (input,), res, {"cdf": None})
    return res


def gelu(input, approximate="none"):
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""
    check_dtype(GELU, input)
    if state.modes:
        return under_mode(GELU, gelu, (input, approximate))
    # (gelu has no autocast policy: under autocast it runs in its input's dtype)
    if approximate == "none" and isinstance(input, Tensor) and input.dtype in FLOATS:
        try:
            return _gelu_fast(input)
        except MetaData:    # a meta input: the decomposition is its meta rule
            pass
    if approximate == "none" and isinstance(input, Tensor) and input.dtype in LOWP and \
            type(input._data) is np.ndarray:
        return _gelu_lowp(input)
    return _gelu_decomp(input, approximate)


GELU = composite("gelu", gelu, _gelu_decomp, fused=_gelu_fast, attrs={"cdf": None},
                 grads={"self": _gelu_grad}, node_name="GeluBackward0", function=False,
                 method=False,
                 onnx=_ox.gelu,
    dtypes=FLOATING, dtype_kernel="GeluKernelImpl")


# ---- embedding --------------------------------------------------------------------------
def _embedding_renorm_(weight, input, max_norm, norm_type):
    with no_grad():
        rows = E.unique(input.reshape(-1))
        w = weight[rows]
        norms = w.norm(norm_type, 1, keepdim=True)
        scale = E.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = w * scale


def _embedding_checks(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq):
    """PyTorch's argument checks, then the max_norm renormalisation: (padding_idx made
    non-negative, the indices as an array)."""
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type()} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    idx = None
    if input.numel() and type(input._data) is not MetaArray:     # (meta: no values)
        # the bounds check reads the indices directly (a compiler trace does not break on
        # it: it only raises); the per-index counts shape the result, so they read via
        # numpy(), which a trace sees as a graph break
        idx = input.detach().numpy() if scale_grad_by_freq else input._data
        if idx.min() < 0 or idx.max() >= n:
            raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return padding_idx, idx


def _embedding_decomp(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
                      scale_grad_by_freq=False, sparse=False):
    padding_idx, idx = _embedding_checks(input, weight, padding_idx, max_norm, norm_type,
                                         scale_grad_by_freq)
    # index_select's backward (index_add into zeros) takes the indices as a tensor, so a
    # compiler trace records a backward that reads each call's indices
    out = weight.index_select(0, input.reshape(-1)).reshape(*input.shape, weight.shape[1]) \
        if weight.dim() == 2 else weight[input]
    if padding_idx is not None:
        # the forward value is the row itself; only its gradient is cut
        out = E.where((input == padding_idx).unsqueeze(-1), weight.detach()[input], out)
    if scale_grad_by_freq and out.requires_grad and input.numel():
        _, inv, counts = np.unique(idx.reshape(-1), return_inverse=True, return_counts=True)
        freq = E.tensor(counts[inv].reshape(*idx.shape, 1), dtype=out.dtype)
        out.register_hook(lambda g: g / freq)
    return out


def _embedding_grad(g, indices, shape):
    d = shape[1]
    return E.zeros(shape, dtype=g.dtype, device=g.device).index_add(0, indices.reshape(-1),
                                                                   g.reshape(-1, d))


def _embedding_fast(input, weight):
    """One NumPy gather and one EmbeddingBackward0 node."""
    out = wrap(np.take(weight._data, input._data, axis=0), weight.dtype)
    if state.enabled and weight._requires_grad:
        graph.record(EMBEDDING, (weight, input), out, {"shape": weight._data.shape})
    return out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the integer tensor `input`; output shape
    ``input.shape + (embedding_dim,)``. Row `padding_idx` gets no gradient; with `max_norm`,
    the looked-up rows of `weight` are first renormalised in place.

    >>> F.embedding(ember.tensor([0, 2]), ember.eye(3))
    """
    tensor_args("embedding", ("weight", 1, weight), ("indices", 2, input))
    if state.modes:
        return under_mode(EMBEDDING, embedding, (input, weight, padding_idx, max_norm,
                                                 norm_type, scale_grad_by_freq, sparse))
    if padding_idx is None and not scale_grad_by_freq and isinstance(weight, Tensor) and \
            weight._data.ndim == 2:
        _embedding_checks(input, weight, None, max_norm, norm_type, False)
        try:
            return _embedding_fast(input, weight)
        except MetaData:    # a meta input: the decomposition is its meta rule
            pass
    return _embedding_decomp(input, weight, padding_idx, max_norm, norm_type,
                             scale_grad_by_freq, sparse)


EMBEDDING = composite("embedding", embedding, _embedding_decomp, fused=_embedding_fast,
                      inputs=("weight", "indices"), attrs={"shape": None},
                      grads={"weight": _embedding_grad}, node_name="EmbeddingBackward0",
                      function=False, method=False,
                      onnx=_ox.embedding)

# vmap batching rules (ember/ops/batch_rules.py): the composites above take their whole
# call under vmap; where a rule declines, vmap batches the decomposition op by op
SOFTMAX.batch = LOG_SOFTMAX.batch = _br.softmax_batch
GELU.batch = _br.direct
EMBEDDING.batch = _br.embedding_batch
