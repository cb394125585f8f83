"""nn.DataParallel: torch's single-process data parallelism. With no GPU (or one) torch's
DataParallel just calls the wrapped module (after moving it and the inputs to the device);
that is what ember does. Several GPUs in one process are not split here: use
``ember.nn.parallel.DistributedDataParallel`` (one process per device), as torch advises.

    model = nn.DataParallel(net)       # state_dict keys gain the "module." prefix
    out = model(x)
"""
from ... import cuda
from ...core.device import device as _device
from .module import Module


def _to(obj, dev):
    if hasattr(obj, "to") and not isinstance(obj, Module):
        return obj.to(dev)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, dev) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, dev) for k, v in obj.items()}
    return obj


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if len(device_ids) > 1:
            raise RuntimeError("ember's DataParallel runs on one device; for several GPUs use "
                               "DistributedDataParallel (one process per GPU)")
        self.dim = dim
        self.module = module
        self.device_ids = [d.index if isinstance(d, _device) else int(d) for d in device_ids]
        self.output_device = self.device_ids[0] if output_device is None else output_device
        self.src_device_obj = _device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        return self.module(*_to(inputs, self.src_device_obj), **_to(kwargs, self.src_device_obj))
