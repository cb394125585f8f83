"""Folding BatchNorm into the convolution before it (ember.jit.optimize_for_inference).

In eval mode ``bn(conv(x))`` is ``conv'(x)`` with
    scale = gamma / sqrt(running_var + eps)
    W' = W * scale (per output channel),   b' = (b - running_mean) * scale + beta.
Which BatchNorm reads which convolution's output is found by running the model once with
forward hooks on a copy; a pair is folded when the BatchNorm's input is exactly that
convolution's output. The copy's BatchNorm becomes an Identity, and the folded copy's
outputs are checked against the original's on the example inputs: if they differ beyond
rounding (the convolution's output had another reader), nothing is folded.
"""
import copy

from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..compiler.runtime import flatten


class _Identity(Module):
    def forward(self, x):
        return x


def _convs_and_bns(mod):
    from ..nn.modules.conv import _Conv
    from ..nn.modules.batchnorm import _BatchNorm
    convs, bns = {}, {}
    for name, m in mod.named_modules():
        if isinstance(m, _Conv):
            convs[name] = m
        elif isinstance(m, _BatchNorm) and getattr(m, "running_mean", None) is not None:
            bns[name] = m
    return convs, bns


def _pairs(mod, args, kwargs):
    """[(conv name, bn name)] where the BatchNorm's input is the convolution's output."""
    convs, bns = _convs_and_bns(mod)
    made, pairs, handles, keep = {}, [], [], []

    def on_conv(name):
        def hook(m, inp, out):
            made[id(out)] = name
            keep.append(out)
        return hook

    def on_bn(name):
        def hook(m, inp):
            src = made.get(id(inp[0]))
            if src is not None:
                pairs.append((src, name))
        return hook
    for n, m in convs.items():
        handles.append(m.register_forward_hook(on_conv(n)))
    for n, m in bns.items():
        handles.append(m.register_forward_pre_hook(on_bn(n)))
    try:
        with no_grad():
            mod(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return list(dict.fromkeys(pairs))


def _set(root, name, value):
    *path, last = name.split(".")
    m = root
    for p in path:
        m = getattr(m, p)
    setattr(m, last, value)


def fold_conv_bn(mod, args, kwargs):
    """(a folded copy of eval-mode `mod`, number of BatchNorms folded)."""
    if mod.training:
        return mod, 0
    pairs = _pairs(mod, args, kwargs)
    if not pairs:
        return mod, 0
    folded = copy.deepcopy(mod)
    mods = dict(folded.named_modules())
    with no_grad():
        for cname, bname in pairs:
            conv, bn = mods[cname], mods[bname]
            scale = (bn.running_var + bn.eps).rsqrt()
            if bn.weight is not None:
                scale = scale * bn.weight
            w = conv.weight * scale.reshape((-1,) + (1,) * (conv.weight.dim() - 1))
            b = conv.bias if conv.bias is not None else bn.running_mean * 0
            b = (b - bn.running_mean) * scale
            if bn.bias is not None:
                b = b + bn.bias
            conv.weight = Parameter(w.detach().clone(), requires_grad=False)
            conv.bias = Parameter(b.detach().clone(), requires_grad=False)
            _set(folded, bname, _Identity())
        ref, out = mod(*args, **kwargs), folded(*args, **kwargs)
    flat_ref, flat_out = flatten(ref, {}), flatten(out, {})
    if len(flat_ref) != len(flat_out):
        return mod, 0
    for (_, a), (_, b) in zip(flat_ref, flat_out):
        tol = 1e-4 * (1 + float(a.abs().max()))
        if a.shape != b.shape or float((a - b).abs().max()) > tol:
            return mod, 0
    return folded, len(pairs)
