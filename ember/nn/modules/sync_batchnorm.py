"""SyncBatchNorm: batch norm whose statistics are taken over the global batch of all ranks.

    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)   # every BatchNorm*d -> SyncBatchNorm
    model = nn.parallel.DistributedDataParallel(model)

In training with an initialized process group of more than one rank, the forward pass
all-gathers each rank's per-channel (mean, sum of squared deviations, count) and combines
them (Chan's parallel-variance formula, exact and stable), so every rank normalises with
the statistics of the concatenated batch and updates its running statistics with them. The
backward pass all-reduces the per-channel sums of ``dy`` and ``dy * (x - mean)``: the
input gradient then equals single-process BatchNorm's on the concatenated batch. The weight
and bias gradients stay local (DistributedDataParallel averages them), as in PyTorch.
Otherwise (eval mode, no process group, one rank) it is plain ``F.batch_norm``, as torch's.

Layering: ember.nn sits below ember.distributed and may not import it. The collectives come
through a slot, ``_DIST``, that ember.distributed fills when it is imported
(``set_distributed``); while it is empty no process group can exist, so SyncBatchNorm
behaves like BatchNorm.
"""
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...core import dtype as D
from ...ops.creation import tensor, empty, zeros
from ...ops.joining import cat
from .. import functional as F
from .batchnorm import _BatchNorm

_DIST = [None]       # the ember.distributed module, once it is imported


def set_distributed(module):
    """Called by ember.distributed at import: where SyncBatchNorm finds the collectives
    (``is_initialized``, ``get_world_size``, ``group.WORLD``, ``all_gather_into_tensor``,
    ``all_reduce``)."""
    _DIST[0] = module


def _stats_dtype(dt):
    """Statistics of half-precision inputs are computed in float32 (as torch's kernels)."""
    return D.float32 if dt in (D.float16, D.bfloat16) else dt


class _SyncBatchNormFunction(Function):
    """The forward and backward of synchronized batch norm (one collective each way)."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                process_group, world_size):
        dist = _DIST[0]
        c = input.shape[1]
        dims = (0,) + tuple(range(2, input.dim()))
        shape = (1, -1) + (1,) * (input.dim() - 2)
        x = input.to(_stats_dtype(input.dtype))
        n = input.numel() // c
        if n > 0:
            mean = x.mean(dims)
            m2 = ((x - mean.reshape(shape)) ** 2).sum(dims)
        else:                      # an empty local batch contributes nothing
            mean = zeros(c, dtype=x.dtype)
            m2 = zeros(c, dtype=x.dtype)
        local = cat([mean, m2, tensor([float(n)], dtype=x.dtype)])
        gathered = empty(world_size * (2 * c + 1), dtype=x.dtype)
        dist.all_gather_into_tensor(gathered, local, group=process_group)
        g = gathered.reshape(world_size, 2 * c + 1)
        means, m2s, counts = g[:, :c], g[:, c:2 * c], g[:, 2 * c:]
        total = float(counts.sum().item())
        if total <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        gmean = (means * counts).sum(0) / total
        gm2 = (m2s + counts * (means - gmean) ** 2).sum(0)
        invstd = (gm2 / total + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(gmean.to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = gm2 / (total - 1)
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        out = (x - gmean.reshape(shape)) * invstd.reshape(shape)
        if weight is not None:
            out = out * weight.reshape(shape)
        if bias is not None:
            out = out + bias.reshape(shape)
        ctx.save_for_backward(input, weight, gmean, invstd)
        ctx.total, ctx.group = total, process_group
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, mean, invstd = ctx.saved_tensors
        c = input.shape[1]
        dims = (0,) + tuple(range(2, input.dim()))
        shape = (1, -1) + (1,) * (input.dim() - 2)
        x = input.to(mean.dtype)
        dy = grad_output.to(mean.dtype)
        xmu = x - mean.reshape(shape)
        sum_dy = dy.sum(dims)
        sum_dy_xmu = (dy * xmu).sum(dims)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grad_input = grad_weight = grad_bias = None
        if need_x:
            both = cat([sum_dy, sum_dy_xmu])
            _DIST[0].all_reduce(both, group=ctx.group)
            mean_dy = (both[:c] / ctx.total).reshape(shape)
            mean_dy_xmu = (both[c:] / ctx.total).reshape(shape)
            scale = invstd.reshape(shape)
            if weight is not None:
                scale = scale * weight.to(mean.dtype).reshape(shape)
            grad_input = ((dy - mean_dy - xmu * invstd.reshape(shape) ** 2 * mean_dy_xmu)
                          * scale).to(input.dtype)
        if weight is not None and need_w:
            grad_weight = (sum_dy_xmu * invstd).to(weight.dtype)
        if need_b:
            grad_bias = sum_dy.to(grad_output.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, +) input with statistics over the whole process group.

        bn = nn.SyncBatchNorm(16)              # like BatchNorm2d(16), on any N-D input
        y = bn(x)                              # under mpiexec: global-batch statistics

    `process_group` scopes the synchronization (default: the whole world).
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)
        if affine and not bias:
            self.register_parameter("bias", None)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:      # cumulative moving average
                factor = 1.0 / int(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        running_mean = self.running_mean if track else None
        running_var = self.running_var if track else None
        dist = _DIST[0]
        world_size = 1
        if bn_training and self.training and dist is not None and dist.is_initialized():
            group = self.process_group or dist.group.WORLD
            world_size = dist.get_world_size(group)
        if world_size <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, group, world_size)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every BatchNorm*d in `module` by a SyncBatchNorm sharing its parameters
        and buffers; a BatchNorm module itself is returned converted.

            net = nn.SyncBatchNorm.convert_sync_batchnorm(net)
        """
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group,
                      bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
