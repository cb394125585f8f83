"""Strided layouts shared by the differential tests: the same view ops, applied to a torch
and an ember tensor, give both the same strides. A layout is "T" (all dims reversed),
"step" (every other element of the last dim), "expand" (dim 0 broadcast from 1), "offset"
(a slice from the second row); any other name ("C", "contig") is contiguous."""


def base_shape(shape, layout):
    """The shape of the contiguous tensor that `layout`'s view ops turn into `shape`."""
    if not shape:
        return tuple(shape)
    if layout == "T":
        return tuple(reversed(shape))
    if layout == "step":
        return tuple(shape[:-1]) + (2 * shape[-1],)
    if layout == "expand":
        return (1,) + tuple(shape[1:])
    if layout == "offset":
        return (shape[0] + 1,) + tuple(shape[1:])
    return tuple(shape)


def apply_layout(x, shape, layout):
    """The same view ops for torch and ember: `x` (of base_shape) -> a view of `shape`."""
    if not shape:
        return x
    if layout == "T":
        return x.permute(*reversed(range(len(shape))))
    if layout == "step":
        return x[..., ::2]
    if layout == "expand":
        return x.expand(*shape)
    if layout == "offset":
        return x[1:]
    return x
