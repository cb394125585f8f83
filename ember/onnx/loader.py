"""ember.onnx.load: an ONNX graph as an ember nn.Module that runs it with ember ops.

The initializers become buffers (named as in the file, dots kept as underscores where
needed); `forward(*inputs)` walks the nodes in order, each ONNX op type computed by its
function in ONNX_OPS below (ONNX semantics written in ember ops: broadcasting, negative axes,
opset differences such as axes given as an input or an attribute). For inference: the
module has no parameters to train. An op type missing here raises NotImplementedError
naming it and the node.
"""
import math

import numpy as np

from ..autograd.grad_mode import no_grad
from ..core import dtype as _dtypes
from ..nn.modules.module import Module
from ..nn import functional as F
from ..ops.registry import FUNCTIONS, OPS


class _Ember:
    """ember's public functions and dtypes (this module sits above the top namespace's
    layer, so it reads them from the registry)."""

    def __getattr__(self, name):
        fn = FUNCTIONS.get(name)
        return fn if fn is not None else getattr(_dtypes, name)


ember = _Ember()


def _np_dtype(elem_type):
    from onnx import helper
    return helper.tensor_dtype_to_np_dtype(elem_type)


def _ints(t):
    return [int(v) for v in np.asarray(t.numpy() if hasattr(t, "numpy") else t).reshape(-1)]


def _axes(ins, attrs, pos=1):
    if "axes" in attrs:
        return list(attrs["axes"])
    if len(ins) > pos and ins[pos] is not None:
        return _ints(ins[pos])
    return None


def _reduce(fn):
    def run(ins, a):
        x = ins[0]
        axes = _axes(ins, a)
        keep = bool(a.get("keepdims", 1))
        if axes is None or axes == []:
            if a.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.dim()))
        return fn(x, [d % max(x.dim(), 1) for d in axes], keep)
    return run


def _binary(fn):
    return lambda ins, a: fn(ins[0], ins[1])


def _unary(fn):
    return lambda ins, a: fn(ins[0])


def _cast(ins, a):
    return ins[0].to(ember.tensor(np.zeros((), _np_dtype(a["to"]))).dtype)


def _gemm(ins, a):
    x, w = ins[0], ins[1]
    if a.get("transA", 0):
        x = x.t()
    if a.get("transB", 0):
        w = w.t()
    r = (x @ w) * a.get("alpha", 1.0)
    if len(ins) > 2 and ins[2] is not None:
        r = r + ins[2] * a.get("beta", 1.0)
    return r


def _conv_pads(a, nd):
    p = list(a.get("pads", [0] * 2 * nd))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("ember.onnx.load: auto_pad")
    return p[:nd], p[nd:]


def _conv(ins, a):
    x, w = ins[0], ins[1]
    nd = w.dim() - 2
    begin, end = _conv_pads(a, nd)
    if begin != end:
        x = F.pad(x, [v for i in reversed(range(nd)) for v in (begin[i], end[i])])
        begin = [0] * nd
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(x, w, ins[2] if len(ins) > 2 else None, stride=a.get("strides", 1),
              padding=begin, dilation=a.get("dilations", 1), groups=a.get("group", 1))


def _conv_transpose(ins, a):
    x, w = ins[0], ins[1]
    nd = w.dim() - 2
    begin, end = _conv_pads(a, nd)
    if begin != end:
        raise NotImplementedError("ember.onnx.load: ConvTranspose with asymmetric pads")
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    return fn(x, w, ins[2] if len(ins) > 2 else None, stride=a.get("strides", 1),
              padding=begin, output_padding=a.get("output_padding", 0),
              groups=a.get("group", 1), dilation=a.get("dilations", 1))


def _pool(kind):
    def run(ins, a):
        x = ins[0]
        ks = list(a["kernel_shape"])
        nd = len(ks)
        begin, end = _conv_pads(a, nd)
        st = a.get("strides", ks)
        ceil = bool(a.get("ceil_mode", 0))
        if kind == "max":
            if begin != end:
                x = F.pad(x, [v for i in reversed(range(nd)) for v in (begin[i], end[i])],
                          value=-math.inf)
                begin = [0] * nd
            fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
            return fn(x, ks, st, begin, a.get("dilations", 1), ceil_mode=ceil)
        fn = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
        if begin != end:
            raise NotImplementedError("ember.onnx.load: AveragePool with asymmetric pads")
        return fn(x, ks, st, begin, ceil, bool(a.get("count_include_pad", 0)))
    return run


def _reshape(ins, a):
    shape = _ints(ins[1])
    if not a.get("allowzero", 0):
        shape = [ins[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return ins[0].reshape(shape)


def _slice(ins, a):
    x = ins[0]
    starts, ends = _ints(ins[1]), _ints(ins[2])
    axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
    steps = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax %= x.dim()
        n = x.shape[ax]
        idx = range(n)[slice(max(min(s, n), -n - 1) if st < 0 else s,
                             None if (st < 0 and e < -n) else e, st)]
        x = x.index_select(ax, ember.tensor(list(idx), dtype=ember.int64))
    return x


def _split(ins, a, n_out):
    x, ax = ins[0], a.get("axis", 0)
    if len(ins) > 1 and ins[1] is not None:
        sizes = _ints(ins[1])
    elif "split" in a:
        sizes = list(a["split"])
    else:
        n = x.shape[ax]
        k = -(-n // n_out)
        sizes = [k] * (n // k) + ([n % k] if n % k else [])
    return list(x.split(sizes, ax))


def _resize(ins, a):
    x = ins[0]
    mode = a.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ctm = a.get("coordinate_transformation_mode", b"half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    sizes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None and ins[3].numel() else None
    scales = ins[2].numpy().tolist() if len(ins) > 2 and ins[2] is not None and \
        ins[2].numel() else None
    if mode == "nearest":
        tm = "nearest" if ctm == "asymmetric" else "nearest-exact"
        ac = None
    else:
        tm = {"linear": ("linear", "bilinear", "trilinear")[x.dim() - 3],
              "cubic": "bicubic"}[mode]
        ac = ctm == "align_corners"
    if sizes is not None:
        return F.interpolate(x, size=sizes[2:], mode=tm, align_corners=ac)
    return F.interpolate(x, scale_factor=scales[2:], mode=tm, align_corners=ac)


def _pad(ins, a):
    x = ins[0]
    pads = _ints(ins[1])
    nd = x.dim()
    mode = a.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(nd))
    k = len(axes)
    full = [0] * (2 * nd)
    for i, ax in enumerate(axes):
        full[ax % nd], full[nd + ax % nd] = pads[i], pads[k + i]
    tp = [v for d in reversed(range(nd)) for v in (full[d], full[nd + d])]
    while len(tp) > 2 and tp[-1] == 0 and tp[-2] == 0:
        tp = tp[:-2]
    value = float(ins[2].item()) if len(ins) > 2 and ins[2] is not None and \
        ins[2].numel() else 0.0
    tmode = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
             "wrap": "circular"}[mode]
    return F.pad(x, tp, mode=tmode, value=value if tmode == "constant" else None)


def _bn(ins, a):
    x, scale, bias, mean, var = ins[:5]
    return F.batch_norm(x, mean, var, scale, bias, False, 0.0, a.get("epsilon", 1e-5))


def _layer_norm(ins, a):
    x = ins[0]
    ax = a.get("axis", -1) % x.dim()
    return F.layer_norm(x, tuple(x.shape[ax:]), ins[1], ins[2] if len(ins) > 2 else None,
                        a.get("epsilon", 1e-5))


def _gather(ins, a):
    x, idx = ins[0], ins[1].long()
    ax = a.get("axis", 0) % x.dim()
    idx = ember.where(idx < 0, idx + x.shape[ax], idx)
    flat = x.index_select(ax, idx.reshape(-1))
    return flat.reshape(tuple(x.shape[:ax]) + tuple(idx.shape) + tuple(x.shape[ax + 1:]))


def _constant(ins, a):
    from onnx import numpy_helper
    if "value" in a:
        return ember.tensor(numpy_helper.to_array(a["value"]).copy())
    for k in ("value_float", "value_int"):
        if k in a:
            return ember.tensor(a[k])
    for k in ("value_floats", "value_ints"):
        if k in a:
            return ember.tensor(list(a[k]))
    raise NotImplementedError("ember.onnx.load: Constant form")


def _constant_of_shape(ins, a):
    from onnx import numpy_helper
    v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return ember.full(_ints(ins[0]), v.reshape(-1)[0].item(), dtype=ember.tensor(v).dtype)


def _shape(ins, a):
    shape = list(ins[0].shape)
    start, end = a.get("start", 0), a.get("end", None)
    return ember.tensor(shape[start:end] if end is not None else shape[start:],
                        dtype=ember.int64)


def _clip(ins, a):
    x = ins[0]
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("min")
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else a.get("max")
    return x.clamp(lo.item() if hasattr(lo, "item") else lo,
                   hi.item() if hasattr(hi, "item") else hi)


def _softmax(fn):
    return lambda ins, a: fn(ins[0], a.get("axis", -1))


def _arg(fn):
    def run(ins, a):
        r = fn(ins[0], a.get("axis", 0), bool(a.get("keepdims", 1)))
        return r
    return run


def _expand(ins, a):
    shape = _ints(ins[1])
    x = ins[0]
    rank = max(len(shape), x.dim())
    shape = [1] * (rank - len(shape)) + shape
    xs = [1] * (rank - x.dim()) + list(x.shape)
    return x.reshape(xs).expand([max(s, t) if t != 1 or s == 1 else s
                                 for s, t in zip(shape, xs)])


def _unsq(ins, a):
    x = ins[0]
    axes = sorted(d % (x.dim() + len(_axes(ins, a))) for d in _axes(ins, a))
    for d in axes:
        x = x.unsqueeze(d)
    return x


def _sq(ins, a):
    x = ins[0]
    axes = _axes(ins, a)
    if axes is None:
        return x.squeeze()
    for d in sorted((d % x.dim() for d in axes), reverse=True):
        x = x.squeeze(d)
    return x


def _gelu(ins, a):
    approx = a.get("approximate", b"none")
    return F.gelu(ins[0], approximate=approx.decode() if isinstance(approx, bytes) else approx)


ONNX_OPS = {
    "Identity": _unary(lambda x: x), "Add": _binary(ember.add), "Sub": _binary(ember.sub),
    "Mul": _binary(ember.mul), "Div": lambda ins, a: (ins[0] / ins[1]).to(ins[0].dtype)
    if ins[0].dtype.is_floating_point else ember.div(ins[0], ins[1], rounding_mode="trunc"),
    "Pow": lambda ins, a: ember.pow(ins[0], ins[1]).to(ins[0].dtype),
    "MatMul": _binary(ember.matmul), "Gemm": _gemm, "Neg": _unary(ember.neg),
    "Exp": _unary(ember.exp), "Log": _unary(ember.log), "Sqrt": _unary(ember.sqrt),
    "Reciprocal": _unary(ember.reciprocal), "Abs": _unary(ember.abs),
    "Sigmoid": _unary(ember.sigmoid), "Tanh": _unary(ember.tanh), "Relu": _unary(ember.relu),
    "Erf": _unary(ember.erf), "Sin": _unary(ember.sin), "Cos": _unary(ember.cos),
    "Floor": _unary(ember.floor), "Ceil": _unary(ember.ceil), "Round": _unary(ember.round),
    "Sign": _unary(ember.sign), "Not": _unary(ember.logical_not),
    "IsNaN": _unary(ember.isnan), "Tan": _unary(ember.tan), "Atan": _unary(ember.atan),
    "Equal": _binary(ember.eq), "Less": _binary(ember.lt), "Greater": _binary(ember.gt),
    "LessOrEqual": _binary(ember.le), "GreaterOrEqual": _binary(ember.ge),
    "And": _binary(ember.logical_and), "Or": _binary(ember.logical_or),
    "Xor": _binary(ember.logical_xor),
    "Max": lambda ins, a: _fold(ember.maximum, ins), "Min": lambda ins, a: _fold(
        ember.minimum, ins),
    "Where": lambda ins, a: ember.where(ins[0], ins[1], ins[2]),
    "Clip": _clip, "Cast": _cast, "CastLike": lambda ins, a: ins[0].to(ins[1].dtype),
    "LeakyRelu": lambda ins, a: F.leaky_relu(ins[0], a.get("alpha", 0.01)),
    "Elu": lambda ins, a: F.elu(ins[0], a.get("alpha", 1.0)),
    "PRelu": lambda ins, a: ember.where(ins[0] >= 0, ins[0], ins[0] * ins[1]),
    "Gelu": _gelu, "Softplus": _unary(F.softplus),
    "HardSigmoid": lambda ins, a: (ins[0] * a.get("alpha", 0.2) + a.get("beta", 0.5)).clamp(
        0, 1),
    "Softmax": _softmax(F.softmax), "LogSoftmax": _softmax(F.log_softmax),
    "ReduceSum": _reduce(lambda x, d, k: x.sum(d, keepdim=k)),
    "ReduceMean": _reduce(lambda x, d, k: x.mean(d, keepdim=k)),
    "ReduceMax": _reduce(lambda x, d, k: x.amax(d, keepdim=k)),
    "ReduceMin": _reduce(lambda x, d, k: x.amin(d, keepdim=k)),
    "ReduceProd": _reduce(lambda x, d, k: _prod(x, d, k)),
    "ReduceLogSumExp": _reduce(lambda x, d, k: x.logsumexp(d, keepdim=k)),
    "ArgMax": _arg(ember.argmax), "ArgMin": _arg(ember.argmin),
    "CumSum": lambda ins, a: ins[0].cumsum(_ints(ins[1])[0]),
    "Conv": _conv, "ConvTranspose": _conv_transpose, "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda ins, a: ins[0].mean(tuple(range(2, ins[0].dim())),
                                                     keepdim=True),
    "GlobalMaxPool": lambda ins, a: ins[0].amax(tuple(range(2, ins[0].dim())), keepdim=True),
    "BatchNormalization": _bn, "LayerNormalization": _layer_norm,
    "Reshape": _reshape, "Flatten": lambda ins, a: ins[0].reshape(
        (math.prod(ins[0].shape[:a.get("axis", 1) % max(ins[0].dim(), 1)]), -1)),
    "Transpose": lambda ins, a: ins[0].permute(a.get("perm", list(reversed(range(
        ins[0].dim()))))),
    "Unsqueeze": _unsq, "Squeeze": _sq, "Concat": lambda ins, a: ember.cat(
        [i for i in ins if i is not None], a["axis"]),
    "Slice": _slice, "Gather": _gather,
    "GatherElements": lambda ins, a: ins[0].gather(a.get("axis", 0) % ins[0].dim(),
                                                    ins[1].long()),
    "Expand": _expand, "Tile": lambda ins, a: ins[0].repeat(_ints(ins[1])),
    "Shape": _shape, "Size": lambda ins, a: ember.tensor(ins[0].numel()),
    "Constant": _constant, "ConstantOfShape": _constant_of_shape,
    "Range": lambda ins, a: ember.arange(ins[0].item(), ins[1].item(), ins[2].item(),
                                         dtype=ins[0].dtype),
    "Trilu": lambda ins, a: (ember.triu if a.get("upper", 1) else ember.tril)(
        ins[0], int(ins[1].item()) if len(ins) > 1 and ins[1] is not None else 0),
    "Einsum": lambda ins, a: ember.einsum(a["equation"].decode() if isinstance(
        a["equation"], bytes) else a["equation"], *ins),
    "Resize": _resize, "Pad": _pad, "Dropout": lambda ins, a: ins[0],
}


def _recurrent(kind):
    """ONNX's RNN/GRU/LSTM nodes (layout 0: X is (seq, batch, input)); gate orders are
    ONNX's (LSTM: i, o, f, c; GRU: z, r, h)."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]

    def run(ins, a):
        ins = list(ins) + [None] * (8 - len(ins))
        x, w, r, b, seq_lens, h0, c0 = ins[:7]
        if a.get("layout", 0) or seq_lens is not None and len(set(_ints(seq_lens))) > 1:
            raise NotImplementedError(f"ember.onnx.load: {kind} with layout=1 or ragged "
                                      "sequence_lens")
        hs = int(a["hidden_size"])
        direction = a.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) else direction
        dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        steps, batch = x.shape[0], x.shape[1]
        ys, hn, cn = [], [], []
        for d, way in enumerate(dirs):
            wd, rd = w[d], r[d]
            bw = b[d][:gates * hs] if b is not None else None
            br = b[d][gates * hs:] if b is not None else None
            h = h0[d] if h0 is not None else ember.zeros(batch, hs, dtype=x.dtype)
            c = c0[d] if c0 is not None else ember.zeros(batch, hs, dtype=x.dtype)
            out = [None] * steps
            order = range(steps) if way == "forward" else reversed(range(steps))
            for t in order:
                gx = x[t] @ wd.t() + (bw if bw is not None else 0)
                if kind == "GRU":
                    gh = h @ rd.t()
                    z = (gx[:, :hs] + gh[:, :hs] + (br[:hs] if br is not None else 0)).sigmoid()
                    rr = (gx[:, hs:2 * hs] + gh[:, hs:2 * hs] +
                          (br[hs:2 * hs] if br is not None else 0)).sigmoid()
                    rb = br[2 * hs:] if br is not None else 0
                    if a.get("linear_before_reset", 0):
                        n = (gx[:, 2 * hs:] + rr * (gh[:, 2 * hs:] + rb)).tanh()
                    else:
                        n = (gx[:, 2 * hs:] + (rr * h) @ rd[2 * hs:].t() + rb).tanh()
                    h = (1 - z) * n + z * h
                else:
                    g = gx + h @ rd.t() + (br if br is not None else 0)
                    if kind == "RNN":
                        h = g.tanh()
                    else:
                        i, o, f, cc = g.chunk(4, -1)
                        c = f.sigmoid() * c + i.sigmoid() * cc.tanh()
                        h = o.sigmoid() * c.tanh()
                out[t] = h
            ys.append(ember.stack(out, 0))
            hn.append(h)
            cn.append(c)
        y = ember.stack(ys, 1)
        return [y, ember.stack(hn, 0), ember.stack(cn, 0)]
    return run


ONNX_OPS.update(RNN=_recurrent("RNN"), GRU=_recurrent("GRU"), LSTM=_recurrent("LSTM"))


def _fold(fn, ins):
    r = ins[0]
    for x in ins[1:]:
        r = fn(r, x)
    return r


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):
        x = x.prod(d, keepdim=keep)
    return x


def _attr(v):
    """An attribute value for a custom op's keyword: ONNX strings arrive as bytes."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [_attr(x) for x in v]
    return v


class OnnxModule(Module):
    """An ONNX graph run with ember ops (see the module docstring).

    >>> m = ember.onnx.load("model.onnx"); y = m(x)
    """

    def __init__(self, proto):
        super().__init__()
        from onnx import helper, numpy_helper
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                          None)
        if self.opset is not None and not 7 <= self.opset <= 21:
            raise ValueError(f"ember.onnx.load: opset {self.opset} is not supported (7..21)")
        g = proto.graph
        self._consts = {}
        for i, init in enumerate(g.initializer):
            arr = numpy_helper.to_array(init).copy()
            self.register_buffer(f"init_{i}", ember.tensor(arr))
            self._consts[init.name] = f"init_{i}"
        self.input_names = [i.name for i in g.input if i.name not in self._consts]
        self.output_names = [o.name for o in g.output]
        self._nodes = []
        for n in g.node:
            if n.domain not in ("", "ai.onnx"):
                # a custom domain's node runs the custom op "domain::op_type" registered in
                # this process (ember.library.custom_op), attributes as keyword arguments
                custom = getattr(OPS.get(f"{n.domain}::{n.op_type}"), "custom", None)
                if custom is None:
                    raise NotImplementedError(
                        f"ember.onnx.load: op domain {n.domain!r} ({n.op_type}): no custom op "
                        f"'{n.domain}::{n.op_type}' is registered in this process; define it "
                        f"with ember.library.custom_op (or import its module) before loading")
                attrs = {a.name: _attr(helper.get_attribute_value(a)) for a in n.attribute}
                self._nodes.append((custom, list(n.input), list(n.output), attrs))
                continue
            if n.op_type not in ONNX_OPS and n.op_type != "Split":
                raise NotImplementedError(f"ember.onnx.load: the ONNX op {n.op_type!r} "
                                          f"(node {n.name!r}) is not supported")
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            self._nodes.append((n.op_type, list(n.input), list(n.output), attrs))

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"forward() takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        env = {name: getattr(self, b) for name, b in self._consts.items()}
        env.update(zip(self.input_names, inputs))
        with no_grad():
            for op_type, ins, outs, attrs in self._nodes:
                args = [env[i] if i else None for i in ins]
                if not isinstance(op_type, str):          # a custom op (see __init__)
                    r = op_type(*args, **attrs)
                elif op_type == "Split":
                    r = _split(args, attrs, len(outs))
                else:
                    r = ONNX_OPS[op_type](args, attrs)
                if not isinstance(r, (list, tuple)):
                    r = [r]
                for name, v in zip(outs, r):
                    if name:
                        env[name] = v
        res = [env[o] for o in self.output_names]
        return res[0] if len(res) == 1 else tuple(res)
