"""The convolution primitives of ember.nn.functional: im2col windows and the three ops that
close under differentiation.

Convolutions lower to one BLAS matmul over an im2col matrix gathered from a strided window
view of the padded input (`_windows`: no Python loop over batch, channels or pixels); groups
become the batch dimension of that matmul. Three primitive ops:

    conv(x, w)           the forward convolution
    conv_tr(g, w)        its adjoint in x (col2im: one matmul, then a loop over kernel taps)
    conv_wgrad(x, g)     its adjoint in w (one matmul)

the derivative of each is written with the other two, so double (and higher) backward works.
Each is recorded whole by a compiler trace (`with_mode_seam`); what surrounds them (bias,
batching) is recorded op by op. The argument helpers here are shared by functional_conv,
functional_pool and functional_resample.

For float32/float64 NumPy arrays in 1-D and 2-D, im2col, col2im and the NCHW layout pass
(with the bias) are C kernels (conv_kernels.py), and a backward that records no graph takes
both gradients straight from arrays (`_plain_backward`); otherwise the NumPy code here runs,
with the same values. A forward whose im2col matrix no weight gradient will read (eval,
no_grad, a frozen weight) and the plain backward's input gradient run one GEMM per sample
on an (N, C*K, P) im2col layout, which lands in NCHW without a transpose (ungrouped, from
PER_SAMPLE_MIN output positions per sample).
"""
import itertools
import math
import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core.meta import MetaData, MetaArray
from ..ops.meta_rules import out_array
from ..dispatch import wrap, with_mode_seam
from ..ops.matmul import record_fn, kernel_array
from ..autograd.grad_mode import state
from . import conv_kernels as _native


# ---- argument helpers -------------------------------------------------------------------
def _tup(v, n, name="argument", fname=None, pos=None):
    """An int or a list of ints as an n-tuple, as torch's parser takes `tuple of ints`: a
    bare bool, float or None is its TypeError, so is a float element of a list (a bool
    element counts as an int there, as in torch). `fname` and `pos` name the argument."""
    if isinstance(v, (list, tuple)):
        vals = tuple(_int_of(x, name, fname, pos, k) for k, x in enumerate(v))
        if len(vals) == 1:
            return vals * n
        if len(vals) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of "
                               f"{n} values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return vals
    if isinstance(v, bool):
        raise TypeError(f"{_where(name, fname, pos)} must be tuple of ints, not bool")
    return (_int_of(v, name, fname, pos),) * n


def _where(name, fname, pos):
    at = f" (position {pos})" if pos is not None else ""
    return (f"{fname}(): " if fname else "") + f"argument '{name}'{at}"


def _int_of(x, name, fname, pos, k=None):
    try:
        return operator.index(x)     # (an int, a NumPy integer, an integer 1-element tensor)
    except TypeError:
        pass
    where = _where(name, fname, pos)
    if k is None:
        raise TypeError(f"{where} must be tuple of ints, not {type(x).__name__}") from None
    raise TypeError(f"{where} must be tuple of ints, but found element of type "
                    f"{type(x).__name__} at pos {k}") from None


def _arr(t):
    return kernel_array(t)


def _pad_array(a, pads, value=0):
    """`a` with its trailing len(pads) dims padded by (lo, hi) pairs (a copy only if needed)."""
    if not any(lo or hi for lo, hi in pads):
        return a
    if type(a) is MetaArray:    # writing a meta array into a NumPy one would read no data
        raise MetaData("padding a meta tensor")
    lead = a.ndim - len(pads)
    shape = a.shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(a.shape[lead:], pads))
    out = np.full(shape, value, dtype=a.dtype)
    out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(a.shape[lead:], pads))] = a
    return out


def _windows(a, ksize, stride, dil, out):
    """Read-only strided view (N, C, *out, *ksize) of the sliding windows of `a` (N, C, *S)."""
    st = a.strides
    nd = len(ksize)
    return as_strided(a, a.shape[:2] + tuple(out) + tuple(ksize),
                      st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd))
                      + tuple(st[2 + i] * dil[i] for i in range(nd)), writeable=False,
                      subok=True)     # (subok: a meta array's windows stay meta)


def _tap_slices(k, stride, dil, out):
    """The positions (in the padded input) that kernel tap `k` visits, as slices."""
    return tuple(slice(k[i] * dil[i], k[i] * dil[i] + stride[i] * (out[i] - 1) + 1, stride[i])
                 for i in range(len(k)))


def _col2im(cols, padded, stride, dil):
    """Adjoint of `_windows`: sum cols (N, C, *K, *O) into a zero array (N, C, *padded)."""
    nd = len(padded)
    ks, out = cols.shape[2:2 + nd], cols.shape[2 + nd:]
    buf = np.zeros(cols.shape[:2] + tuple(padded), dtype=cols.dtype)
    for k in itertools.product(*(range(x) for x in ks)):
        buf[(slice(None), slice(None)) + _tap_slices(k, stride, dil, out)] += cols[(slice(None),
                                                                                  slice(None)) + k]
    return buf


def _crop(a, pads, size):
    return a[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for (lo, _), s in
                                                 zip(pads, size))]


def _out_size(size, pads, k, s, d):
    return tuple((size[i] + pads[i][0] + pads[i][1] - d[i] * (k[i] - 1) - 1) // s[i] + 1
                 for i in range(len(size)))


# ---- the three convolution primitives -----------------------------------------------------
def _im2col(a, ks, stride, pads, dil, out, groups):
    """im2col: (G, Cg*prod(K), N*prod(O)) of the input `a` zero-padded by `pads`; one C pass
    (conv_kernels.im2col) where it applies, else a padded copy and a window view."""
    cols = _native.im2col(a, ks, stride, pads, dil, out)
    if cols is not None:
        return cols.reshape(groups, cols.shape[0] // groups, cols.shape[1])
    return _cols(_pad_array(a, pads), ks, stride, dil, out, groups)


def _cols(xp, ks, stride, dil, out, groups):
    """im2col: (G, Cg*prod(K), N*prod(O)) from the padded input (one copy)."""
    nd = len(ks)
    win = _windows(xp, ks, stride, dil, out)
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    n, c = xp.shape[:2]
    return win.transpose(perm).reshape(groups, c // groups * math.prod(ks), n * math.prod(out))


def _gmat(g, groups):
    """(N, G*Og, *O) -> (G, Og, N*prod(O))."""
    n, co = g.shape[:2]
    p = math.prod(g.shape[2:])      # explicit sizes: -1 is ambiguous for empty tensors
    r = _native.swap01(g.reshape(n, co, p))
    if r is not None:
        return r.reshape(groups, co // groups, n * p)
    return g.reshape(n, groups, co // groups, p).transpose(1, 2, 0, 3).reshape(
        groups, co // groups, n * p)


def _bmm(a, b):
    """Batched matmul over groups on BLAS: one 2-D gemm for a single group (NumPy's 2-D
    matmul passes transposed operands to BLAS as flags), else contiguous operands (NumPy's
    batched matmul falls back to a slow loop for transposed ones)."""
    if a.shape[0] == 1:
        return (a[0] @ b[0])[None]
    if type(a) is MetaArray or type(b) is MetaArray:   # (ascontiguousarray would read them)
        raise MetaData("a product of meta tensors")
    return np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))


def _to_nchw(r, co, n, out, bias=None):
    """A GEMM's (G, Og, N*P) result as a contiguous (N, G*Og, *out), plus `bias` (G*Og,)."""
    t = _native.swap01(r.reshape(co, n, math.prod(out)), bias)
    if t is not None:
        return t.reshape((n, co) + tuple(out))
    t = np.ascontiguousarray(r.reshape(co, n, *out).swapaxes(0, 1))
    if bias is not None:
        t += bias.reshape((-1,) + (1,) * len(out))
    return t


# the forward runs per sample (conv_kernels.conv_per_sample) from this many output positions
# per sample on: below it each sample's GEMM is too narrow for BLAS
PER_SAMPLE_MIN = 64
# im2col matrices up to this many elements are kept from the forward for the weight
# gradient (saves one im2col pass per convolution and step; 16 MB in float32)
KEEP_COLS = 1 << 22
_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _plain_backward(g, x, w, cols, needs, stride, pads, dil, groups):
    """The gradients of `_conv` (input, weight, and bias when needs has a third entry)
    straight from arrays, or None: when no graph is recorded (no create_graph), no mode or
    autocast is on and the C kernels apply. The input gradient runs per sample, as the
    forward (one GEMM w.T @ g[n] each, reading g as it is, then col2im of that layout); the
    weight gradient is one GEMM on a transpose of g and the forward's im2col matrix `cols`
    (a grouped input gradient also uses that transpose)."""
    if state.enabled or state.modes or state.autocast_enabled or len(w.shape) > 4 or \
            not (g.dtype is x.dtype is w.dtype) or not _native.usable(g._data, x._data):
        return None
    ga, a, b = g._data, x._data, w._data
    ks = b.shape[2:]
    co, cg = b.shape[:2]
    n, p = ga.shape[0], math.prod(ga.shape[2:])
    dx = dw = None
    if needs[0] and groups == 1 and p >= PER_SAMPLE_MIN:
        c = np.matmul(b.reshape(co, cg * math.prod(ks)).T, ga.reshape(n, co, p))
        dx = _native.col2im(c, a.shape, ks, stride, pads, dil, ga.shape[2:])  # (N, CK, P)
        if dx is None:
            return None
        dx = wrap(dx, g.dtype)
    gm = _gmat(ga, groups) if needs[1] or (needs[0] and dx is None) else None  # (G, Og, N*P)
    if needs[0] and dx is None:
        wt = b.reshape(groups, co // groups, math.prod(b.shape[1:])).transpose(0, 2, 1)
        c = _bmm(wt, gm)
        dx = _native.col2im(c.reshape(groups * c.shape[1], c.shape[2]), a.shape, ks, stride,
                            pads, dil, ga.shape[2:])
        if dx is None:
            return None
        dx = wrap(dx, g.dtype)
    if needs[1]:
        if cols is None:
            cols = _im2col(a, ks, stride, pads, dil, ga.shape[2:], groups)
        if groups == 1:     # (cols @ gm.T).T: ~15% faster in OpenBLAS than gm @ cols.T
            dw = np.ascontiguousarray((cols[0] @ gm[0].T).T).reshape(b.shape)
        else:
            dw = _bmm(gm, cols.transpose(0, 2, 1)).reshape(b.shape)
        dw = wrap(dw, g.dtype)
    if len(needs) == 2:
        return dx, dw
    # the bias: ember's sum, as the unfused addition's backward (and a compiled graph) sum
    return dx, dw, (_bias_grad(g) if needs[2] else None)


def _bias_grad(g):
    return g.sum((0,) + tuple(range(2, g.dim())))


def _conv(x, w, stride, pads, dil, groups, bias=None):
    """Forward convolution; pads: per spatial dim (lo, hi). `bias` is added as the GEMM's
    result is laid out in NCHW (callers pass it only with no mode on: modes see the
    convolution and the bias addition as two ops)."""
    a, b = _arr(x), _arr(w)
    ks = b.shape[2:]
    out = _out_size(a.shape[2:], pads, ks, stride, dil)
    co = b.shape[0]
    kept = [None]       # the im2col matrix, for the weight gradient
    if groups == 1 and math.prod(out) >= PER_SAMPLE_MIN and not (w._requires_grad and
                                                                  state.enabled):
        # no weight gradient to keep the im2col matrix for: the per-sample layout, straight
        # into NCHW (measured slower in training, where the weight gradient would then
        # recompute the im2col matrix)
        r = _native.conv_per_sample(a, b, ks, stride, pads, dil, out,
                                    None if bias is None else _arr(bias))
        if r is not None:
            return record_fn("ConvolutionBackward0", (x, w) if bias is None else (x, w, bias),
                             (wrap(r, x.dtype),), _backward_of(stride, pads, dil, groups, kept),
                             (x, w))[0]
    try:
        cols = _im2col(a, ks, stride, pads, dil, out, groups)
        r = _bmm(b.reshape(groups, co // groups, math.prod(b.shape[1:])), cols)  # (G, Og, N*P)
        r = _to_nchw(r, co, a.shape[0], out, None if bias is None else _arr(bias))
        if w._requires_grad and state.enabled and cols.size <= KEEP_COLS and \
                cols.dtype in _NATIVE_FLOATS:
            kept[0] = cols
    except MetaData:    # meta operands: the result's metadata (ember/ops/meta_rules.py)
        r = out_array((a.shape[0], co) + tuple(out), a.dtype, x, w)
    res = wrap(r, x.dtype)
    inputs = (x, w) if bias is None else (x, w, bias)
    return record_fn("ConvolutionBackward0", inputs, (res,),
                     _backward_of(stride, pads, dil, groups, kept), (x, w))[0]


def _backward_of(stride, pads, dil, groups, kept):
    """The backward of one `_conv` call; kept[0] is its im2col matrix, if it kept one."""
    def backward(grads, needs, x, w):
        g = grads[0]
        cols, kept[0] = kept[0], None      # used once (a second backward recomputes it)
        fast = _plain_backward(g, x, w, cols, needs, stride, pads, dil, groups)
        if fast is not None:
            return fast
        grad = (_conv_tr(g, w, x.shape[2:], stride, pads, dil, groups) if needs[0] else None,
                _conv_wgrad(x, g, w.shape, stride, pads, dil, groups) if needs[1] else None)
        if len(needs) == 2:
            return grad
        return grad + ((_bias_grad(g) if needs[2] else None),)
    return backward


def _conv_batch(v, args, kwargs):
    """vmap's rule (ember/func/batching.py): batched inputs join the conv's own batch; a
    batched weight (one per sample) becomes a grouped convolution over the samples."""
    x, w, stride, pads, dil, groups = args
    if not v.is_batched(w):
        r = _conv(x.reshape((-1,) + tuple(x.shape[2:])), w, stride, pads, dil, groups)
        return r.reshape(tuple(x.shape[:2]) + tuple(r.shape[1:]))
    b = w.shape[0]
    x = v.expand(x)
    n = x.shape[1]
    xs = x.movedim(0, 1).reshape((n, b * x.shape[2]) + tuple(x.shape[3:]))
    r = _conv(xs, w.reshape((b * w.shape[1],) + tuple(w.shape[2:])), stride, pads, dil,
              groups * b)
    return r.reshape((n, b, w.shape[1]) + tuple(r.shape[2:])).movedim(1, 0)


_conv.batch = _conv_batch
_conv = with_mode_seam("F_conv", _conv)  # traced as one call


def _conv_tr(g, w, size, stride, pads, dil, groups):
    """Adjoint of `_conv` in its input: g (N, Cout, *O) -> (N, Cin, *size)."""
    a, b = _arr(g), _arr(w)
    ks = b.shape[2:]
    nd = len(ks)
    co, cg = b.shape[:2]
    n, out = a.shape[0], a.shape[2:]
    wt = b.reshape(groups, co // groups, math.prod(b.shape[1:])).transpose(0, 2, 1)  # (G,CgK,Og)
    try:
        cols = _bmm(wt, _gmat(a, groups))                            # (G, Cg*K, N*P)
        r = _native.col2im(cols.reshape(groups * cols.shape[1], cols.shape[2]),
                           (n, groups * cg) + tuple(size), ks, stride, pads, dil, out)
        if r is None:
            cols = cols.reshape((groups * cg,) + tuple(ks) + (n,) + tuple(out))
            cols = cols.transpose((1 + nd, 0) + tuple(range(1, 1 + nd)) +
                                  tuple(range(2 + nd, 2 + 2 * nd)))
            padded = tuple(size[i] + pads[i][0] + pads[i][1] for i in range(nd))
            r = np.ascontiguousarray(_crop(_col2im(cols, padded, stride, dil), pads, size))
    except MetaData:
        r = out_array((n, groups * cg) + tuple(size), a.dtype, g, w)
    res = wrap(r, g.dtype)

    def backward(grads, needs, g, w):
        gg = grads[0]
        return (_conv(gg, w, stride, pads, dil, groups) if needs[0] else None,
                _conv_wgrad(gg, g, w.shape, stride, pads, dil, groups) if needs[1] else None)
    return record_fn("ConvolutionBackwardInput0", (g, w), (res,), backward, (g, w))[0]


_conv_tr = with_mode_seam("F_conv_tr", _conv_tr)  # traced as one call


def _conv_wgrad(x, g, wshape, stride, pads, dil, groups):
    """Adjoint of `_conv` in its weight: sum over batch and positions of g * windows(x)."""
    a, b = _arr(x), _arr(g)
    ks = tuple(wshape[2:])
    try:
        cols = _im2col(a, ks, stride, pads, dil, b.shape[2:], groups)
        r = _bmm(_gmat(b, groups), cols.transpose(0, 2, 1)).reshape(wshape)
    except MetaData:
        r = out_array(tuple(wshape), a.dtype, x, g)
    res = wrap(r, x.dtype)

    def backward(grads, needs, x, g):
        h = grads[0]
        return (_conv_tr(g, h, x.shape[2:], stride, pads, dil, groups) if needs[0] else None,
                _conv(x, h, stride, pads, dil, groups) if needs[1] else None)
    return record_fn("ConvolutionBackwardWeight0", (x, g), (res,), backward, (x, g))[0]


_conv_wgrad = with_mode_seam("F_conv_wgrad", _conv_wgrad)  # traced as one call
