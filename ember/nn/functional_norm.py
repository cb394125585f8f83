"""Normalisation functions of nn.functional: batch, layer, group, instance, RMS and local
response norm. Each is a composition of ember ops (autograd gives the derivative); running
statistics are updated in place under no_grad, as PyTorch does.

    y = F.layer_norm(x, (64,), weight, bias)
    y = F.batch_norm(x, running_mean, running_var, training=True, momentum=0.1)
"""
from ..autograd.grad_mode import no_grad
from ..ops.creation import zeros as _zeros
from ..ops.joining import cat
# layer_norm and rms_norm are composite ops, defined once in ember/ops (each an OpDef with its
# decomposition and, for layer_norm, the fast path and its fused kernels)
from ..ops.nn_norm_ops import layer_norm, rms_norm  # noqa: F401
from ..ops.nn_norm_ops import _ln_forward_kernel, _ln_dx_kernel, _ln_dweight_kernel  # noqa: F401

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm"]


def _channel_shape(input):
    """Shape that broadcasts a per-channel (dim 1) vector against `input`."""
    return (1, -1) + (1,) * (input.dim() - 2)


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update_running(running, stat, momentum):
    """``running = (1 - momentum) * running + momentum * stat`` in place, outside autograd."""
    with no_grad():
        running.mul_(1 - momentum).add_(stat.detach().to(running.dtype) * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims.

    Training (or no running stats): use the batch statistics, and fold them into
    `running_mean` / `running_var` (unbiased variance) with `momentum`. Eval: use the running
    statistics.
    """
    if training:
        size = input.numel() // input.shape[1] if input.dim() > 1 else 0
        if size == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
    dims = (0,) + tuple(range(2, input.dim()))
    shape = _channel_shape(input)
    if training or running_mean is None or running_var is None:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if training and running_mean is not None:
            n = input.numel() // input.shape[1]
            _update_running(running_mean, mean.reshape(-1), momentum)
            _update_running(running_var, var.reshape(-1) * (n / max(n - 1, 1)), momentum)
    else:
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels (dim 1) into `num_groups` groups and normalise each group of each
    sample over its channels and spatial dims; then a per-channel affine map."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(2, keepdim=True)
    var = x.var(2, correction=0, keepdim=True)
    out = ((x - mean) * (var + eps).rsqrt()).reshape(input.shape)
    return _affine(out, weight, bias, _channel_shape(input))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims. With running stats and
    `use_input_stats`, the batch-averaged statistics update them; without `use_input_stats`
    the running statistics are used instead."""
    dims = tuple(range(2, input.dim()))
    shape = _channel_shape(input)
    if use_input_stats:
        if input.numel() // (input.shape[0] * input.shape[1]) == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if running_mean is not None:
            n = input.numel() // (input.shape[0] * input.shape[1])
            _update_running(running_mean, mean.reshape(input.shape[:2]).mean(0), momentum)
            _update_running(running_var, (var * (n / max(n - 1, 1))).reshape(
                input.shape[:2]).mean(0), momentum)
    else:
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x**2 over a window of `size` channels) ** beta``; the window
    is zero-padded, size//2 channels before and (size-1)//2 after."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} "
                         "dimensions)")
    if input.numel() == 0:
        return input.clone()
    sq = input * input
    c = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    zeros = _zeros((input.shape[0],) + tuple(input.shape[2:]), dtype=input.dtype)
    pad = cat([zeros.unsqueeze(1)] * before + [sq] + [zeros.unsqueeze(1)] * after, 1)
    acc = pad.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + pad.narrow(1, i, c)
    div = (acc * (alpha / size) + k).pow(beta)
    return input / div
