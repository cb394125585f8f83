"""The profiler's enumerations, with PyTorch's names and values
(``torch.autograd.ProfilerActivity``, ``ProfilerState``, ``DeviceType``).

They live at the autograd layer because ``torch.autograd`` exports them; ember.profiler
re-exports ``ProfilerActivity`` from here. Members compare by identity, convert with
``int()`` and hash like their integer value, as PyTorch's do.
"""
from enum import Enum

__all__ = ["ProfilerActivity", "ProfilerState", "DeviceType"]


class _IntValued(Enum):
    def __int__(self):
        return self.value

    __index__ = __int__

    def __hash__(self):
        return hash(self.value)

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"


class ProfilerActivity(_IntValued):
    """What a profiler records: host-side op spans (CPU) or device kernels (CUDA, ...)."""
    CPU = 0
    XPU = 1
    MTIA = 4
    CUDA = 2
    HPU = 3
    PrivateUse1 = 5


class ProfilerState(_IntValued):
    """The legacy autograd profiler's states."""
    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


class DeviceType(_IntValued):
    """c10's device kinds, with their integer codes."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    MTIA = 19
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    PrivateUse1 = 20

