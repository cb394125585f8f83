"""ONNX mappings of the nn.functional helpers that the tracer records whole but that are not
registry ops (convolution and pooling primitives, interpolate) or whose OpDef is defined in
ember/nn (pad). The mapping of a registry op lives on its OpDef (``onnx=``); these helpers
have no OpDef in ember/ops to carry one, so MAPPINGS keys them by the function (or OpDef)
object itself, never by a name string.

interpolate's coordinate_transformation_mode is the classic trap: PyTorch's "nearest"
reads source index floor(dst * in/out) ("asymmetric" + nearest_mode "floor"), the linear and
cubic modes with align_corners=False use pytorch_half_pixel, with align_corners=True
"align_corners". ONNX's defaults (half_pixel, round_prefer_floor) differ, and a model
exported with them silently shifts every resized pixel.
"""
from ..nn import functional_im2col as _im2col, functional_pool as _pool
from ..nn import functional_resample as _resample
from ..ops.registry import op_for
from ..ops import onnx_rules as _ox
from .builder import UnsupportedForExport


def _pads(pads):
    return [int(p[0]) for p in pads] + [int(p[1]) for p in pads]


def _conv(g, x, w, stride, pads, dil, groups):
    return g.op("Conv", x, w, strides=list(stride), pads=_pads(pads), dilations=list(dil),
                group=int(groups))


def _conv_tr(g, x, w, size, stride, pads, dil, groups):
    ks = w.shape[2:]
    spatial = x.shape[2:]
    if any(s is None for s in spatial):
        raise UnsupportedForExport("a transposed convolution over a dynamic spatial size")
    outpad = [int(size[i]) - (stride[i] * (spatial[i] - 1) + dil[i] * (ks[i] - 1) + 1
                              - pads[i][0] - pads[i][1]) for i in range(len(ks))]
    return g.op("ConvTranspose", x, w, strides=list(stride), pads=_pads(pads),
                dilations=list(dil), group=int(groups),
                output_padding=outpad if any(outpad) else None)


def _convnd(nd, transposed):
    """conv1d/2d/3d and conv_transpose1d/2d/3d as whole ops (as ember.export records them)."""
    def conv(g, input, weight, bias=None, stride=1, padding=0, *rest):
        if transposed:
            output_padding, groups, dilation = (list(rest) + [0, 1, 1][len(rest):])[:3]
        else:
            dilation, groups = (list(rest) + [1, 1][len(rest):])[:2]
        ks = list(weight.shape[2:])
        st, dil = _tuple(stride, nd), _tuple(dilation, nd)
        if padding == "valid":
            begin = end = [0] * nd
        elif padding == "same":
            total = [d * (k - 1) for d, k in zip(dil, ks)]
            begin = [t // 2 for t in total]
            end = [t - b for t, b in zip(total, begin)]
        else:
            begin = end = _tuple(padding, nd)
        x = input if input.rank == nd + 2 else g.unsqueeze(input, [0])
        attrs = dict(strides=st, pads=list(begin) + list(end), dilations=dil, group=int(groups))
        if transposed:
            op = _tuple(output_padding, nd)
            r = g.op("ConvTranspose", x, weight, bias, output_padding=op if any(op) else None,
                     **attrs)
        else:
            r = g.op("Conv", x, weight, bias, **attrs)
        return r if input.rank == nd + 2 else g.squeeze(r, [0])
    return conv


def _max_pool_select(g, x, ks, st, dil, pads, out):
    # the tap (which window element won) has no ONNX counterpart; the gather that follows
    # in max pooling only forwards the values
    return None, g.op("MaxPool", x, kernel_shape=list(ks), strides=list(st),
                      pads=_pads(pads), dilations=list(dil))


def _tap_gather(g, x, tap, ks, stride, dil, pads, out, values=None):
    if values is None:
        raise UnsupportedForExport("max pooling's gather without its values")
    return values


def _max_pool_nd(nd):
    """max_poolNd recorded whole (max_pool3d is a composition): MaxPool, with PyTorch's
    ceil_mode rule written as explicit right padding (a window must start inside)."""
    def pool(g, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
        if return_indices:
            raise UnsupportedForExport("max pooling with return_indices=True")
        ks = _tuple(kernel_size, nd)
        st = _tuple(stride, nd) if stride not in (None, [], ()) else ks
        pad, dil = _tuple(padding, nd), _tuple(dilation, nd)
        size = input.shape[-nd:]
        if any(s is None for s in size):
            raise UnsupportedForExport("max pooling over a dynamic spatial size")
        right = []
        for i in range(nd):
            span = size[i] + 2 * pad[i] - dil[i] * (ks[i] - 1) - 1
            out = (-(-span // st[i]) if ceil_mode else span // st[i]) + 1
            if ceil_mode and (out - 1) * st[i] >= size[i] + pad[i]:
                out -= 1
            right.append(max(0, (out - 1) * st[i] + dil[i] * (ks[i] - 1) + 1 - size[i]
                             - pad[i]))
        x = input if input.rank == nd + 2 else g.unsqueeze(input, [0])
        r = g.op("MaxPool", x, kernel_shape=ks, strides=st, pads=pad + right, dilations=dil)
        return r if input.rank == nd + 2 else g.squeeze(r, [0])
    return pool


def _adaptive_avg(nd):
    def avg(g, input, output_size):
        size = input.shape[-nd:]
        out = _tuple(output_size, nd)
        out = [s if o is None else o for s, o in zip(size, out)]
        if any(s is None or s % o for s, o in zip(size, out)):
            raise UnsupportedForExport("adaptive average pooling whose output size does not "
                                       "divide the input size")
        ks = [s // o for s, o in zip(size, out)]
        return g.op("AveragePool", input, kernel_shape=ks, strides=ks)
    return avg


def _tuple(v, nd):
    return list(v) if isinstance(v, (tuple, list)) else [int(v)] * nd


def _avg_pool(nd):
    def avg(g, input, kernel_size, stride=None, padding=0, ceil_mode=False,
            count_include_pad=True, divisor_override=None):
        if divisor_override is not None:
            raise UnsupportedForExport("avg_pool with divisor_override")
        ks = _tuple(kernel_size, nd)
        st = _tuple(stride, nd) if stride not in (None, [], ()) else ks
        pad = _tuple(padding, nd)
        x = input if input.rank == nd + 2 else g.unsqueeze(input, [0])
        r = g.op("AveragePool", x, kernel_shape=ks, strides=st, pads=pad + pad,
                 ceil_mode=int(bool(ceil_mode)), count_include_pad=int(bool(count_include_pad)))
        return r if input.rank == nd + 2 else g.squeeze(r, [0])
    return avg


def _adaptive_max(nd):
    def amax(g, input, output_size, return_indices=False):
        if return_indices:
            raise UnsupportedForExport("adaptive max pooling with return_indices=True")
        size = input.shape[-nd:]
        out = _tuple(output_size, nd)
        out = [s if o is None else o for s, o in zip(size, out)]
        if any(s is None or s % o for s, o in zip(size, out)):
            raise UnsupportedForExport("adaptive max pooling whose output size does not "
                                       "divide the input size")
        ks = [s // o for s, o in zip(size, out)]
        return g.op("MaxPool", input, kernel_shape=ks, strides=ks)
    return amax


_MODES = {"nearest": ("nearest", "asymmetric"), "nearest-exact": ("nearest", "half_pixel"),
          "linear": ("linear", None), "bilinear": ("linear", None),
          "trilinear": ("linear", None), "bicubic": ("cubic", None)}


def _area(g, input, out):
    """mode='area' is adaptive average pooling: one AveragePool when the sizes divide."""
    size = input.shape[2:]
    if any(s is None or s % o for s, o in zip(size, out)):
        _unsupported_area()
    ks = [s // o for s, o in zip(size, out)]
    return g.op("AveragePool", input, kernel_shape=ks, strides=ks)


def _unsupported_area():
    raise UnsupportedForExport("interpolate(mode='area') to a size that does not divide the "
                               "input size")


def _interpolate(g, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    if mode == "area" and not antialias:
        return _area(g, input, list(g.out[0][2:]))
    if mode not in _MODES or antialias:
        raise UnsupportedForExport(f"interpolate(mode={mode!r}, antialias={antialias})")
    onnx_mode, ctm = _MODES[mode]
    if ctm is None:
        ctm = "align_corners" if align_corners else "pytorch_half_pixel"
    nd = input.rank - 2
    attrs = dict(mode=onnx_mode, coordinate_transformation_mode=ctm)
    if onnx_mode == "nearest":
        attrs["nearest_mode"] = "floor" if mode == "nearest" else "round_prefer_ceil"
    if onnx_mode == "cubic":
        attrs["cubic_coeff_a"] = -0.75          # PyTorch's A
    if scale_factor is not None and not recompute_scale_factor and ctm != "align_corners":
        sf = scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * nd
        scales = g.const([1.0, 1.0] + [float(s) for s in sf], "float32")
        return g.op("Resize", input, None, scales, **attrs)
    out = list(g.out[0][2:])
    sizes = g.ints([g.size(input, 0), g.size(input, 1)] + out)
    return g.op("Resize", input, None, None, sizes, **attrs)


def _pixel_shuffle(g, input, upscale_factor):
    r = int(upscale_factor)
    if input.rank != 4:
        raise UnsupportedForExport("pixel_shuffle of a tensor that is not 4-D")
    return g.op("DepthToSpace", input, blocksize=r, mode="CRD")


def _pixel_unshuffle(g, input, downscale_factor):
    r = int(downscale_factor)
    if input.rank != 4 or any(s is None for s in input.shape[1:]):
        raise UnsupportedForExport("pixel_unshuffle of a tensor that is not 4-D and static")
    n, (c, h, w) = g.size(input, 0), input.shape[1:]
    x = g.reshape(input, [n, c, h // r, r, w // r, r])
    x = g.op("Transpose", x, perm=[0, 1, 3, 5, 2, 4])
    return g.reshape(x, [n, c * r * r, h // r, w // r])


def _pad(g, input, pad, mode="constant", value=None):
    nd = input.rank
    pad = list(pad)
    begin, end = [0] * nd, [0] * nd
    for i in range(len(pad) // 2):
        begin[nd - 1 - i], end[nd - 1 - i] = pad[2 * i], pad[2 * i + 1]
    pads = g.ints(begin + end)
    if mode == "constant":
        cv = g.const(0.0 if value is None else value, input.dtype)
        return g.op("Pad", input, pads, cv, mode="constant")
    if mode in ("reflect", "replicate"):
        return g.op("Pad", input, pads, mode="reflect" if mode == "reflect" else "edge")
    if mode == "circular":
        if g.opset >= 19:
            return g.op("Pad", input, pads, mode="wrap")
        x = input
        for d in range(nd):      # wrap by concatenating slices of the other end
            if begin[d] or end[d]:
                parts = []
                if begin[d]:
                    parts.append(_slice(g, x, d, -begin[d], 2 ** 62))
                parts.append(x)
                if end[d]:
                    parts.append(_slice(g, x, d, 0, end[d]))
                x = g.op("Concat", *parts, axis=d)
        return x
    raise UnsupportedForExport(f"pad(mode={mode!r})")


def _slice(g, x, d, start, stop):
    return g.op("Slice", x, g.const([start], "int64"), g.const([stop], "int64"),
                g.const([d], "int64"))


MAPPINGS = {
    getattr(_im2col._conv, "__wrapped__", _im2col._conv): _conv,
    getattr(_im2col._conv_tr, "__wrapped__", _im2col._conv_tr): _conv_tr,
    getattr(_pool._max_pool_select, "__wrapped__", _pool._max_pool_select): _max_pool_select,
    getattr(_pool._tap_gather, "__wrapped__", _pool._tap_gather): _tap_gather,
    getattr(_pool.avg_pool1d, "__wrapped__", _pool.avg_pool1d): _avg_pool(1),
    getattr(_pool.avg_pool2d, "__wrapped__", _pool.avg_pool2d): _avg_pool(2),
    getattr(_pool.adaptive_max_pool1d, "__wrapped__", _pool.adaptive_max_pool1d):
        _adaptive_max(1),
    getattr(_pool.adaptive_max_pool2d, "__wrapped__", _pool.adaptive_max_pool2d):
        _adaptive_max(2),
    getattr(_resample.interpolate, "__wrapped__", _resample.interpolate): _interpolate,
    getattr(_resample.upsample, "__wrapped__", _resample.upsample): _interpolate,
    getattr(_resample.upsample_nearest, "__wrapped__", _resample.upsample_nearest):
        _interpolate,
    getattr(_resample.pixel_shuffle, "__wrapped__", _resample.pixel_shuffle): _pixel_shuffle,
    getattr(_resample.pixel_unshuffle, "__wrapped__", _resample.pixel_unshuffle):
        _pixel_unshuffle,
    op_for("pad"): _pad,
    op_for("conv1d"): _convnd(1, False), op_for("conv2d"): _convnd(2, False),
    op_for("conv3d"): _convnd(3, False), op_for("conv_transpose1d"): _convnd(1, True),
    op_for("conv_transpose2d"): _convnd(2, True), op_for("conv_transpose3d"): _convnd(3, True),
    op_for("avg_pool3d"): _avg_pool(3),
    op_for("max_pool3d"): _max_pool_nd(3),
    op_for("adaptive_avg_pool3d"): _adaptive_avg(3),
    op_for("prelu"): _ox.prelu,
    op_for("adaptive_max_pool3d"): _adaptive_max(3),
}
